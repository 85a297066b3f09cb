//! Bindings of `blr` (and the `projection` settings it uses): the private Bayesian linear
//! regression pipeline (DCA paper Alg. 2), sufficient statistics, posterior, prediction and
//! metrics.

pub(crate) mod cavi;
mod clipped_share;
pub(crate) mod config;
mod errors;
pub(crate) mod fit;
pub(crate) mod noise_aware;
pub(crate) mod noise_aware_stats;
pub(crate) mod regression;
pub(crate) mod search;
pub(crate) mod stats;
pub(crate) mod std_source;
