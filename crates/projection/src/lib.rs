//! Clipping, row normalisation, DP marginal std over DCA and threshold search for robust private
//! regression (robust LR paper Methods 4.3; DCA paper Sec. 4.2.1, Alg. 2 steps 1–3).
//!
//! - [`clip`]: per-dimension projection into `[-B_j, B_j]` and L2 row normalisation;
//! - [`auxiliary`]: synthetic data from the BLR model, scaled like the real data;
//! - [`release`]: noisy sums by a trusted aggregator, DCA or input perturbation;
//! - [`marginal_std`]: the DP marginal-std round;
//! - [`search`]: deterministic parallel grid searches for (ω_x, ω_y) and the budget split.

pub mod auxiliary;
pub mod clip;
pub mod error;
pub mod marginal_std;
pub mod release;
pub mod search;

pub use auxiliary::{AuxData, AuxSpec};
pub use clip::{clip, clip_columns, clip_vector, normalize_rows};
pub use error::{Error, Result};
pub use marginal_std::{
    StdBudget, StdEstimate, StdMode, StdRound, dp_marginal_std, std_sensitivity,
};
pub use release::{
    Aggregation, DcaSettings, Noise, NoisySum, ReleaseContext, noisy_sum, zcdp_sigma,
};
pub use search::{
    Aggregate, OmegaGrid, SearchConfig, SplitChoice, SplitObjective, ThresholdChoice,
    ThresholdObjective, budget_split_grid, search_budget_split, search_thresholds,
};
