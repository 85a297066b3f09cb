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
//! * [`rng`] — where randomness comes from: the OS CSPRNG, or an explicitly insecure fixed seed.
//!
//! Every fallible function validates its inputs and returns [`Error`]; nothing panics on input.

pub mod accountant;
pub mod calibrate;
pub mod continuous;
pub mod discrete;
mod error;
pub mod objective;
mod privacy_loss;
pub mod rng;
mod special;
#[cfg(test)]
mod test_stats;

pub use error::Error;
pub use privacy_loss::PrivacyLoss;

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
