//! The `sum` job kind: one DCA round of the sums of the job's columns over all records.

use fixedpoint_shares::{RoundConfig, RoundId, RoundParams};
use serde::{Deserialize, Serialize};

use super::ColumnBounds;
use super::noise_plan::{SCALE, smallest_noise};
use crate::Result;
use crate::protocol::job::JobSpec;

/// A `sum` job's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SumResult {
    /// The released noisy sums in the units of the columns (features, then target):
    /// n·lo + (s + 5n)(hi − lo)/10 of the released sum s of the values mapped onto ±5.
    pub sums: Vec<f64>,
    /// The released sums of the mapped values (what the DCA round released).
    pub released: Vec<f64>,
    /// n: the records summed (the accepted participants' rows, public).
    pub records: usize,
    /// σ of the Gaussian noise in each released (mapped) sum, if no participant dropped out.
    pub noise_sigma: f64,
}

/// Columns a `sum` job sums: the features, then the target.
pub fn sum_columns(spec: &JobSpec) -> Vec<&ColumnBounds> {
    spec.features.iter().chain([&spec.target]).collect()
}

/// The ℓ2 sensitivity of a `sum` round: one record moves each of its d + 1 mapped columns by
/// at most 5.
pub fn sum_sensitivity(spec: &JobSpec) -> f64 {
    SCALE * ((spec.features.len() + 1) as f64).sqrt()
}

/// The round configuration of a `sum` job with `n_clients` participants on `n_nodes` nodes:
/// the smallest noise whose round costs at most the job's ρ.
pub fn sum_round_config(spec: &JobSpec, n_clients: usize, n_nodes: u16) -> Result<RoundConfig> {
    let l2 = sum_sensitivity(spec);
    let make = |sigma: f64| {
        Ok(RoundConfig::new(&RoundParams {
            round: RoundId(0),
            n_clients,
            n_nodes,
            max_dropped: spec.max_dropped,
            dim: spec.features.len() + 1,
            bound: SCALE * spec.max_rows as f64,
            mode: spec.share_mode(),
            noise_sigma_total: Some(sigma),
            frac_bits: None,
        })?)
    };
    let sigma = smallest_noise(&make, l2, spec.rho()?, 1, 1.0)?;
    make(sigma)
}

/// Maps a `sum` job's released sums back to the columns' units: the map onto ±5 is affine,
/// and n is public.
pub fn sum_in_units(spec: &JobSpec, released: &[f64], records: usize) -> Vec<f64> {
    let n = records as f64;
    sum_columns(spec)
        .iter()
        .zip(released)
        .map(|(c, s)| n * c.lo + (s + SCALE * n) * (c.hi - c.lo) / (2.0 * SCALE))
        .collect()
}
