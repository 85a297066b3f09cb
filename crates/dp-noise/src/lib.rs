//! Calibrated differential-privacy noise for dpdist.
//!
//! * [`calibrate`] — noise scales: classic and analytic Gaussian, the distributed per-client
//!   Gaussian of DCA (Heikkilä et al. 2017, Thm 1), Laplace.
//! * [`discrete`] — exact integer samplers (discrete Gaussian and discrete Laplace, Canonne,
//!   Kamath & Steinke 2020) used by DCA clients in fixed-point units, plus the
//!   Kairouz–Liu–Steinke bound for sums of discrete Gaussians.
//! * [`continuous`] — floating-point Gaussian and Laplace noise for the trusted-aggregator path.
//! * [`objective`] — the noise vector of objective perturbation (private logistic regression).
//! * [`accountant`] — a privacy accountant that refuses a round before anything is released.
//! * [`rdp`] — Rényi-DP accounting of the subsampled Gaussian (iterative learning), (ε, δ)
//!   conversion and noise calibration.
//! * [`limits`] — the valid ranges of ε, δ, Δ and σ, checked by every surface (CLIs, C ABI).
//! * [`rng`] — where randomness comes from: the OS CSPRNG, or an explicitly insecure fixed seed.
//!
//! Every fallible function validates its inputs and returns [`Error`]; nothing panics on input.
//!
//! ```
//! use dp_noise::accountant::{Accountant, RoundCost};
//! use dp_noise::{PrivacyLoss, calibrate};
//!
//! // σ of a Gaussian mechanism with L2 sensitivity 1 at (ε, δ) = (1, 1e-5) ...
//! let sigma = calibrate::gaussian_sigma_analytic(1.0, 1e-5, 1.0)?;
//! assert!(sigma > 3.0 && sigma < 4.0);
//! // ... and an accountant that refuses, before release, a round past its budget.
//! let mut accountant = Accountant::new(PrivacyLoss::new(2.0, 1e-5)?)?;
//! accountant.charge(RoundCost::gaussian(1.0, sigma)?)?;
//! assert!(accountant.charge(RoundCost::pure(5.0)?).is_err());
//! # Ok::<(), dp_noise::Error>(())
//! ```

pub mod accountant;
pub mod calibrate;
pub mod continuous;
pub mod discrete;
mod error;
pub mod limits;
pub mod objective;
mod privacy_loss;
pub mod rdp;
pub mod rng;
mod special;
#[cfg(test)]
mod test_stats;

pub use error::Error;
pub use privacy_loss::PrivacyLoss;

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
