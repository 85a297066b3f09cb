//! Bindings of `blr` (and the `projection` settings it uses): the private Bayesian linear
//! regression pipeline (DCA paper Alg. 2), sufficient statistics, posterior, prediction and
//! metrics.

mod cavi;
pub(crate) mod config;
mod errors;
pub(crate) mod fit;
mod search;
mod stats;
