//! Privacy-preserving logistic regression by objective perturbation and privacy-preserving
//! stacking (Yao et al., "Privacy-preserving Stacking with Application to Cross-organizational
//! Diabetes Prediction"):
//!
//! * [`fit_plr`] — PLR (Alg. 1): ε-DP logistic regression by objective perturbation, with an
//!   intercept by default ([`PlrConfig::new`]) and optional public [`FeatureRange`]s that
//!   centre and scale each feature; the fitted [`LogisticModel`] predicts from rows in the
//!   data's units.
//! * [`fit_pst_s`] — PST-S (Alg. 2): stacking over random disjoint row parts.
//! * [`fit_pst_f`] — PST-F (Alg. 3): stacking over feature groups with importance q_k.
//! * [`fit_pst_h`] — PST-H (Alg. 4): PST-F on a target domain, transferred from source models.
//! * [`select_plr_or_stacking`] — PLR or a stacked model, chosen by a DP comparison on
//!   held-out rows: stacking only when its noisy margin clears a data-independent threshold that
//!   holds the chance of recommending a no-better stacked model to α, PLR otherwise.
//! * [`auc`] — Mann–Whitney AUC.
//!
//! Every fit states the guarantee it delivers as a [`PrivacyLoss`] per data set (ε-DP, δ = 0,
//! replace-one neighbours; ε = ∞ for the explicitly requested non-private fit). Feature
//! importance is an input and must come from side information, never from the private data.
//! Randomness comes from a [`RngSource`]: `Os` (CSPRNG) in production,
//! `InsecureFixedSeed` only for tests and reproducible experiments.
//!
//! ```
//! use plr_stacking::{Dataset, PlrConfig, RngSource, fit_plr};
//!
//! // Four rows, one feature, labels ±1; ε = 1 with a fixed seed (tests and examples only:
//! // production passes `RngSource::Os`).
//! let data = Dataset::from_rows(&[0.9, 0.7, -0.8, -0.6], 1, &[1.0, 1.0, -1.0, -1.0])?;
//! let fit = fit_plr(&data, &PlrConfig::new(1.0, 0.1), &RngSource::InsecureFixedSeed(1))?;
//! assert_eq!(fit.privacy.epsilon, 1.0);
//! let p = fit.model.predict_proba(&[0.8])?;
//! assert!((0.0..=1.0).contains(&p[0]));
//! # Ok::<(), plr_stacking::Error>(())
//! ```

pub mod calibration;
pub mod data;
pub mod error;
pub mod metrics;
pub mod model;
pub mod partition;
pub mod plr;
pub mod selection;
mod solver;
pub mod stacking;
#[cfg(test)]
mod test_support;
pub mod transfer;

pub use calibration::{Calibration, GroupNoise};
pub use data::{Dataset, FeatureRange};
pub use dp_noise::PrivacyLoss;
pub use dp_noise::rng::RngSource;
pub use error::{Error, Result};
pub use metrics::auc;
pub use model::LogisticModel;
pub use partition::{FeatureGroups, importance_from_scores};
pub use plr::{PlrConfig, PlrFit, fit_plr};
pub use selection::{
    DEFAULT_FALSE_RECOMMENDATION_RATE, Recommendation, Selection, SelectionConfig,
    select_plr_or_stacking, stacking_threshold,
};
pub use solver::GRADIENT_TOLERANCE;
pub use stacking::{LowLevelModel, StackedFit, StackedModel, StackingConfig, fit_pst_f, fit_pst_s};
pub use transfer::{
    TransferConfig, TransferFit, fit_pst_h, fit_source_models, fit_source_models_with_ranges,
    fit_target_with_source,
};
