//! Privacy-preserving logistic regression by objective perturbation and privacy-preserving stacking (PST-S/F/H)
