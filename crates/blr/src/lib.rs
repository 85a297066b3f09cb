//! Differentially private Bayesian linear regression by sufficient-statistics perturbation,
//! with a trusted aggregator or distributed over DCA (DCA paper Sec. 4.2.1, Alg. 2; robust LR
//! paper Methods 4.1–4.3).
//!
//! - [`regression`]: the model on real data — intercept, the data's units ([`design`]),
//!   adaptive ridge, intervals, DP R² against the constant;
//! - [`stats`]: packed sufficient statistics (faer XᵀX);
//! - [`sensitivity`]: eq. 18 (Gaussian) and the robust LR Laplace scales, with proofs;
//! - [`ssp`]: projected statistics released by TA, DCA or input perturbation;
//! - [`posterior`](mod@posterior): fixed-precision posterior with the PD repair, predictions;
//! - [`noise_aware`]: the posterior that treats the released statistics as noisy observations;
//! - [`latent`]: the prior of its latent Σxxᵀ (a model of the data's second moments) and draws
//!   (the coupled inverse-Wishart option by a Markov chain, `wishart_prior`);
//! - [`cavi`]: the Gamma-prior variant by closed-form coordinate ascent;
//! - [`threshold`]: the auxiliary-data threshold search with this learner;
//! - [`split`]: the auxiliary-data Laplace budget-split search with this learner;
//! - [`silo`]: a participant's many rows summed in one streaming pass (bounded memory);
//! - [`clipping`]: the DP shares of records the projection clips (what the intervals are about);
//! - [`pipeline`]: Alg. 2 end to end with privacy accounting;
//! - [`metrics`]: MAE, RMSE, Spearman ρ;
//! - [`data`]: strict numeric CSV reader and the protocols' preprocessing.
//!
//! ```
//! use blr::posterior::{Prior, posterior};
//! use blr::stats::SuffStats;
//!
//! // Non-private statistics of y = 2x on three records; λ = λ₀ = 1 gives μ = 28 / (1 + 14).
//! let stats = SuffStats::compute(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], 3, 1)?;
//! let post = posterior(&stats, Prior::default())?;
//! assert!((post.mean[0] - 28.0 / 15.0).abs() < 1e-12);
//! # Ok::<(), blr::Error>(())
//! ```

pub mod block_shares;
pub mod cavi;
pub mod clipping;
pub mod contribution;
pub mod data;
pub mod design;
pub mod error;
mod fit_noise;
pub mod latent;
pub mod metrics;
pub mod narrowing;
pub mod noise_aware;
mod noise_warning;
pub mod pipeline;
pub mod posterior;
pub mod public_bounds;
pub mod regression;
pub mod sensitivity;
pub mod silo;
pub mod split;
pub mod ssp;
pub mod stats;
pub mod threshold;
mod wishart_prior;

pub use block_shares::{BlockNoise, BlockShares};
pub use cavi::{CaviOptions, CaviPosterior, GammaPrior, fit_gamma_prior};
pub use clipping::{
    CLIPPED_COUNTS_L2_SENSITIVITY, ClippedCountsRule, ClippedShare, dp_clipped_share,
    release_clipped_share_held,
};
pub use contribution::Contribution;
pub use design::{Design, DesignRule, PublicRange, groups_by_label};
pub use error::{CsvError, Error, Result};
pub use latent::LatentPrior;
pub use metrics::{mae, rmse, spearman};
pub use narrowing::Narrowing;
pub use noise_aware::{
    AdaptiveDraws, EntryNoise, NoiseAwareOptions, NoiseAwarePosterior, StatsNoise, Summary,
    naive_coefficients, noise_aware_posterior,
};
pub use noise_warning::{NOISE_DOMINANCE_RATIO, noise_dominance_warning};
pub use pipeline::{
    Fit, FitConfig, ProjectionConfig, StdSource, fit, fit_grouped, fit_held, fit_non_private,
    fit_via, stats_round_budget,
};
pub use posterior::{Posterior, Prior, noise_ridge, posterior, posterior_ridged, predict};
pub use regression::{
    Regression, RegressionConfig, fit_regression, fit_regression_held, predict_rows,
    regression_from_stats,
};
pub use sensitivity::{laplace_scales, rho_from_budget, stats_l2_sensitivity};
pub use split::{SplitSearchConfig, search_laplace_split};
pub use ssp::{
    Mechanism, RoundBudget, StatisticsRule, release_stats, release_stats_held, release_stats_via,
};
pub use stats::{SuffStats, packed_index, packed_len};
pub use threshold::{ErrorMeasure, SearchTarget, search_thresholds_for};
