//! Differentially private Bayesian linear regression by sufficient-statistics perturbation, trusted or distributed (DCA)
