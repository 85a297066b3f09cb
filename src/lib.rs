//! dpdist: differentially private Bayesian learning on distributed data.
//!
//! This umbrella crate only re-exports the workspace crates; see the README for the map.

pub use blr;
pub use dp_noise;
pub use fixedpoint_shares;
pub use plr_stacking;
pub use projection;
