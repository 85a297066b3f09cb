//! Bindings of `plr_stacking`: private logistic regression by objective perturbation (PLR)
//! and private stacking (PST-S, PST-F, PST-H), prediction, model export and AUC.

mod data;
mod errors;
mod fit;
mod metrics;
mod model;
