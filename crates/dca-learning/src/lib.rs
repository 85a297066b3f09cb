//! Iterative private learning over DCA (Heikkilä et al. 2017, Sec. 4.2): "an arbitrary party
//! keeps track of the current (public) model parameters and the privacy budget, and asks for
//! updates from the clients."
//!
//! Each iteration of a [`Trainer`]:
//! 1. builds the round's public configuration and asks the RDP accountant
//!    (`dp_noise::rdp`) whether one more round fits the budget — if not, it stops with
//!    [`Error::BudgetExceeded`] before anything is computed or released;
//! 2. runs one DCA round — in this process ([`Trainer::step`]) or on any
//!    `fixedpoint_shares::DcaTransport`, e.g. dca-service's compute nodes and aggregator over
//!    HTTPS ([`Trainer::step_via`]) — in which every client takes part: a client in the batch ([`ClientSampling`]) sends its per-record gradient
//!    clipped to ℓ2 norm C, the others a zero vector, and each adds its share
//!    σ_total/√(N − T − 1) of distributed discrete Gaussian noise, σ_total = z·C;
//! 3. divides the released sum by the public batch normaliser, adds the gradient of the public
//!    regulariser/prior, and updates θ with SGD or Adam ([`Optimizer`]).
//!
//! Models ([`Model`]): logistic regression (with an intercept inside the clipped gradient), and Bayesian linear regression by DP variational
//! inference (mean-field Gaussian posterior, clipped gradients of the expected log-likelihood).
//! Logistic regression takes optional public feature ranges
//! ([`Trainer::with_feature_ranges`]): each x_j clamped into [lo_j, hi_j] and mapped onto
//! [−1, 1] before its gradient is clipped, and raw rows mapped alike by [`Trainer::predict`].
//!
//! The privacy guarantee is per record, for the release of every iterate. A client holds one
//! record ([`Trainer::new`]) or many ([`Trainer::with_clients`]: it sends the sum of its sampled
//! records' clipped gradients, [`ClientGradient`]); a remote client computes that sum itself
//! from a published rule ([`Trainer::step_at_clients`]) with the streams of
//! [`iteration_rngs`], so a fixed seed reproduces the in-process run.
//!
//! ```
//! use dca_learning::{
//!     ClientSampling, Model, Optimizer, Privacy, PrivacyLoss, Records, RngSource, Trainer,
//!     TrainerConfig, logistic_intercept_predict_proba,
//! };
//!
//! // 200 clients with one record each: y = +1 exactly when x > 0.3 — an offset that only the
//! // intercept (on in `Model::logistic`) can express, since every x is positive.
//! let n = 200;
//! let x: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64 * 0.6).collect();
//! let y: Vec<f64> = x.iter().map(|&v| if v > 0.3 { 1.0 } else { -1.0 }).collect();
//! let records = Records::new(x, 1, y)?;
//!
//! let config = TrainerConfig {
//!     model: Model::logistic(1e-3),
//!     sampling: ClientSampling::Poisson { rate: 0.5 },
//!     clip_norm: 1.0,
//!     privacy: Privacy::Private {
//!         budget: PrivacyLoss::new(4.0, 1e-5)?,
//!         noise_multiplier: 2.0,
//!     },
//!     optimizer: Optimizer::adam(0.1),
//!     n_nodes: 3,
//!     max_dropped: 2,
//! };
//! // A fixed seed only for a reproducible doc example; production uses RngSource::Os.
//! let mut trainer = Trainer::new(config, n, 1, RngSource::InsecureFixedSeed(7))?;
//! trainer.fit(&records, 20)?;
//! let spent = trainer.spent().expect("a private trainer has an accountant");
//! assert!(spent.epsilon > 0.0 && spent.epsilon <= 4.0);
//! // θ = (w, b): the learned model ranks a high x above a low one.
//! assert_eq!(trainer.params().len(), 2);
//! let p = logistic_intercept_predict_proba(trainer.params(), &[0.55, 0.05])?;
//! assert!(p[0] > p[1]);
//! # Ok::<(), dca_learning::Error>(())
//! ```

mod client_gradient;
mod clip;
mod data;
mod error;
mod model;
mod optimizer;
mod range;
mod sampling;
mod trainer;

#[cfg(test)]
mod tests;

pub use client_gradient::{ClientGradient, iteration_rngs};
pub use clip::clip_to_norm;
pub use data::Records;
pub use dp_noise::PrivacyLoss;
pub use dp_noise::rng::RngSource;
pub use error::Error;
pub use model::{Model, logistic_intercept_predict_proba, logistic_predict_proba, vi_predict_mean};
pub use optimizer::Optimizer;
pub use range::FeatureRange;
pub use sampling::{ClientSampling, fixed_size_batch, poisson_coin};
pub use trainer::{Privacy, StepReport, Trainer, TrainerConfig, calibrate_noise_multiplier};

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
