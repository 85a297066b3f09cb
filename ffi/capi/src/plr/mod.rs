//! Bindings of `plr_stacking`: private logistic regression by objective perturbation (PLR)
//! and private stacking (PST-S, PST-F, PST-H), prediction, model export and AUC.

pub(crate) mod data;
mod errors;
pub(crate) mod fit;
pub(crate) mod metrics;
pub(crate) mod model;
