//! Differentially private Bayesian linear regression by sufficient-statistics perturbation,
//! with a trusted aggregator or distributed over DCA (DCA paper Sec. 4.2.1, Alg. 2; robust LR
//! paper Methods 4.1–4.3).
//!
//! - [`stats`]: packed sufficient statistics (faer XᵀX);
//! - [`posterior`]: fixed-precision posterior with the PD repair, predictions;
//! - [`cavi`]: the Gamma-prior variant by closed-form coordinate ascent;
//! - [`metrics`]: MAE, RMSE, Spearman ρ;
//! - [`data`]: strict numeric CSV reader and the protocols' preprocessing.

pub mod cavi;
pub mod data;
pub mod error;
pub mod metrics;
pub mod posterior;
pub mod stats;

pub use cavi::{CaviOptions, CaviPosterior, GammaPrior, fit_gamma_prior};
pub use error::{Error, Result};
pub use metrics::{mae, rmse, spearman};
pub use posterior::{Posterior, Prior, posterior, predict};
pub use stats::{SuffStats, packed_index, packed_len};
