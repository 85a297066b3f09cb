//! dpdist: differentially private Bayesian learning on distributed data.
//!
//! This umbrella crate only re-exports the workspace crates; see the README for the map.
//!
//! ```
//! // (ε, δ) = (1, 1e-5), L2 sensitivity 1: the σ of the total noise of a DCA release.
//! let sigma = dpdist::dp_noise::calibrate::gaussian_sigma_analytic(1.0, 1e-5, 1.0)?;
//! assert!(sigma > 3.0 && sigma < 4.0);
//! # Ok::<(), dpdist::dp_noise::Error>(())
//! ```

pub use blr;
pub use dca_learning;
pub use dp_noise;
pub use fixedpoint_shares;
pub use plr_stacking;
pub use projection;
