//! The `train` and `sum` job kinds: their settings, the public rule each of their rounds is
//! published with, and how the job's noise is planned so that every party can check it.
//!
//! A `train` job is DP-SGD logistic regression (dca-learning's trainer) with the participants
//! as clients: each iteration is one DCA round whose rule carries the current weights; each
//! participant sums its records' clipped gradients at those weights, every record in the batch
//! by its own Poisson coin drawn locally (nodes and aggregator never learn the batch; a
//! participant with no record in the batch still uploads its zero vector with its noise).
//! A `sum` job is one DCA round of the sums of the job's columns over all records.
//!
//! Privacy is accounted as for `blr` jobs, in zCDP per round without amplification by
//! subsampling (the aggregator cannot check the coins): the noise multiplier is the smallest
//! for which `iterations` rounds cost at most the job's ρ. The participants recompute that
//! bound from the round they are shown and refuse a round beyond it.

use dca_learning::{ClientSampling, Privacy, TrainerConfig};
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};
use serde::{Deserialize, Serialize};

use super::noise_plan::{SCALE, smallest_noise};
use crate::protocol::job::JobSpec;
use crate::{Error, Result};

/// A `train` job's progress and result; every field is public (a release or computed from
/// releases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TrainResult {
    /// The weights after the last released iteration, one per feature (of the features mapped
    /// onto ±5): P(y = 1 | x) = σ(Σ_j weights_j·x_j + intercept), see [`predict_proba`].
    pub weights: Vec<f64>,
    /// The intercept b after the last released iteration; absent for a job without intercept
    /// (and in the results of jobs that ran before train jobs had intercepts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept: Option<f64>,
    /// Each iteration's released noisy gradient sum, in order (θ's coordinates: b's last).
    pub sums: Vec<Vec<f64>>,
    /// Records over all participants that took part (the normaliser is q times this).
    pub records: usize,
    /// z: each round's noise has σ_total = z·C.
    pub noise_multiplier: f64,
}

impl TrainResult {
    /// Records the trainer's parameters θ of a job with or without `intercept`: the weights,
    /// and b (θ's last entry) named apart.
    pub fn set_params(&mut self, params: &[f64], intercept: bool) {
        let (weights, b) = match params.split_last() {
            Some((&b, weights)) if intercept => (weights, Some(b)),
            _ => (params, None),
        };
        self.weights = weights.to_vec();
        self.intercept = b;
    }
}

/// P(y = 1 | x) = σ(wᵀx + b) for each row of `table` under a `train` job's `result` (b = 0 for
/// a job without intercept): the job's features read from the table and mapped onto ±5 by their
/// public ranges (values outside clipped), as the participants mapped them.
///
/// # Errors
/// `spec` is not a train job, the result's weights are not one per feature or its intercept
/// disagrees with the job's setting, or the table lacks a feature column.
pub fn predict_proba(
    spec: &JobSpec,
    result: &TrainResult,
    table: &blr::data::Table,
) -> Result<Vec<f64>> {
    let settings = spec
        .train
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("job: not a train job".into()))?;
    let d = spec.features.len();
    if d == 0 || result.weights.len() != d || result.intercept.is_some() != settings.intercept {
        return Err(Error::InvalidSpec(format!(
            "a train result with {} weights and {} intercept for a job of {d} features {}",
            result.weights.len(),
            if result.intercept.is_some() {
                "an"
            } else {
                "no"
            },
            if settings.intercept {
                "with an intercept"
            } else {
                "without intercept"
            }
        )));
    }
    let names: Vec<&str> = spec.features.iter().map(|c| c.name.as_str()).collect();
    let mut x = crate::protocol::job::columns_of(table, &names, "the model reads")?;
    let owned: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    spec.public_bounds()
        .scale(&mut x, &owned, SCALE)
        .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
    let b = result.intercept.unwrap_or(0.0);
    Ok(x.chunks_exact(d)
        .map(|row| {
            let margin: f64 = row.iter().zip(&result.weights).map(|(v, w)| v * w).sum();
            1.0 / (1.0 + (-(margin + b)).exp())
        })
        .collect())
}

/// The trainer's configuration of a `train` job with `n_clients` participants on `n_nodes`
/// nodes: Poisson sampling, logistic regression, and the smallest noise multiplier z for which
/// `iterations` rounds cost at most the job's ρ.
pub fn trainer_config(spec: &JobSpec, n_clients: usize, n_nodes: u16) -> Result<TrainerConfig> {
    let t = spec
        .train
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("job: not a train job".into()))?;
    let c = t.clip_norm;
    let make = |z: f64| {
        Ok(RoundConfig::new(&RoundParams {
            round: RoundId(0),
            n_clients,
            n_nodes,
            max_dropped: spec.max_dropped,
            // θ's coordinates: b's gradient is inside the clipped norm, so the bound and the
            // noise are the same with or without it.
            dim: t.n_params(spec.features.len()),
            bound: c * spec.max_rows as f64,
            mode: ShareMode::Seed,
            noise_sigma_total: Some(z * c),
            frac_bits: None,
        })?)
    };
    let z = smallest_noise(&make, c, spec.rho()?, t.iterations, c)?;
    Ok(TrainerConfig {
        model: t.model(),
        sampling: ClientSampling::Poisson {
            rate: t.sampling_rate,
        },
        clip_norm: c,
        privacy: Privacy::Private {
            budget: dp_noise::PrivacyLoss::new(spec.epsilon, spec.delta)
                .map_err(|e| Error::InvalidSpec(format!("job: {e}")))?,
            noise_multiplier: z,
        },
        optimizer: t.optimizer(),
        n_nodes,
        max_dropped: spec.max_dropped,
    })
}
