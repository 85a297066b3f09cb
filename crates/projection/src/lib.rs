//! Clipping, row normalisation, DP marginal std over DCA and threshold search for robust private
//! regression (robust LR paper Methods 4.3; DCA paper Sec. 4.2.1, Alg. 2 steps 1–3).
//!
//! - [`clip`](mod@clip): per-dimension projection into `[-B_j, B_j]` and L2 row normalisation;
//! - [`auxiliary`]: synthetic data from the BLR model, scaled like the real data;
//! - [`release`]: noisy sums by a trusted aggregator, DCA or input perturbation;
//! - [`marginal_std`]: the DP marginal-std round;
//! - [`search`]: deterministic parallel grid searches for (ω_x, ω_y) and the budget split.
//!
//! ```
//! // Each client projects its own record into the public box, then the rows are normalised.
//! let mut x = vec![3.0, -0.5, 0.2, 4.0]; // 2 records, d = 2, row-major
//! projection::clip::clip_columns(&mut x, 2, 2, &[1.0, 2.0])?;
//! assert_eq!(x, vec![1.0, -0.5, 0.2, 2.0]);
//! projection::clip::normalize_rows(&mut x, 2, 2)?;
//! assert!((x[0] * x[0] + x[1] * x[1] - 1.0).abs() < 1e-12);
//! # Ok::<(), projection::error::Error>(())
//! ```

pub mod auxiliary;
pub mod clip;
pub mod error;
pub mod holders;
pub mod marginal_std;
pub mod release;
pub mod search;

pub use auxiliary::{AuxData, AuxSpec};
pub use clip::{clip, clip_columns, clip_vector, normalize_rows};
pub use error::{Error, Result};
pub use holders::{ClientRule, Grouping, Holders};
pub use marginal_std::{
    SquaresRule, StdBudget, StdEstimate, StdMode, StdRound, dp_marginal_std, dp_marginal_std_held,
    dp_marginal_std_via, std_sensitivity,
};
pub use release::{
    Aggregation, DcaRound, DcaSettings, DcaTransport, InProcess, Noise, Release, ReleaseContext,
    release_held, release_sum, release_sum_via, zcdp_sigma,
};
pub use search::{
    Aggregate, OmegaGrid, SearchConfig, SplitChoice, SplitObjective, ThresholdChoice,
    ThresholdObjective, budget_split_grid, search_budget_split, search_thresholds,
};
