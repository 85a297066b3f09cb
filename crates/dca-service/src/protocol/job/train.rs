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

use dca_learning::{ClientGradient, ClientSampling, Privacy, TrainerConfig, iteration_rngs};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};
use serde::{Deserialize, Serialize};

use super::kind::{Accumulate, Expected, JobRounds, RoundRule, done, refuse};
use super::noise_plan::{SCALE, smallest_noise};
use super::round_rule::{Rule, TrainRule};
use crate::protocol::job::{JobRound, JobSpec};
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
            budget: spec.noise_budget()?,
            noise_multiplier: z,
        },
        optimizer: t.optimizer(),
        n_nodes,
        max_dropped: spec.max_dropped,
    })
}

/// The aggregator's side of a `train` job: dca-learning's trainer over the participants, one
/// round per iteration, each iteration's release and the weights recorded in the job's status
/// as they come.
pub(super) fn drive(
    spec: &JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    rounds: &mut dyn JobRounds,
) -> Result<()> {
    let settings = spec
        .train
        .clone()
        .ok_or_else(|| Error::InvalidSpec("job: a train job without [train]".into()))?;
    let config = trainer_config(spec, rows.len(), n_nodes)?;
    let z = match config.privacy {
        Privacy::Private {
            noise_multiplier, ..
        } => noise_multiplier,
        Privacy::NonPrivate => 0.0,
    };
    let records: usize = rows.iter().sum();
    // The trainer's own randomness is public here: its clients are remote and draw their
    // coins, masks and noise themselves; it only numbers the rounds.
    let mut trainer = dca_learning::Trainer::with_clients(
        config,
        rows,
        spec.max_rows,
        spec.features.len(),
        RngSource::InsecureFixedSeed(spec.seed()),
    )?;
    for iteration in 0..settings.iterations {
        let rule = Rule::Train(TrainRule {
            iteration,
            weights: trainer.params().to_vec(),
            clip_norm: settings.clip_norm,
            sampling_rate: settings.sampling_rate,
        })
        .to_json();
        let step = trainer.step_at_clients(&rule, &[], &mut *rounds)?;
        let params = trainer.params().to_vec();
        rounds.record(&mut |s| {
            let r = s.train_result.get_or_insert_with(TrainResult::default);
            // A restarted driver goes through the recorded iterations again.
            r.sums.truncate(iteration as usize);
            r.sums.push(step.released_sum.clone());
            r.set_params(&params, settings.intercept);
            r.records = records;
            r.noise_multiplier = z;
            Ok(())
        })?;
    }
    done(spec, rounds, |_| {})
}

/// The participant's side of a `train` job: each round's rule must be the job's iteration, its
/// clipping and sampling, and weights for its features (and its intercept, if it has one).
pub(super) fn round_rule(spec: &JobSpec, job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
    let (Rule::Train(r), Some(t)) = (Rule::from_json(&job_round.rule)?, &spec.train) else {
        return refuse(job_round, "its rule is not one of a \"train\" job".into());
    };
    if r.iteration != job_round.step || r.iteration >= t.iterations {
        return refuse(
            job_round,
            format!(
                "its rule is for iteration {} (round step {}), the job runs {}",
                r.iteration, job_round.step, t.iterations
            ),
        );
    }
    if r.clip_norm != t.clip_norm || r.sampling_rate != t.sampling_rate {
        return refuse(
            job_round,
            format!(
                "its rule clips at {} and samples at {}, the job at {} and {}",
                r.clip_norm, r.sampling_rate, t.clip_norm, t.sampling_rate
            ),
        );
    }
    // θ = (w, b): a rule with b for a job without intercept (or the reverse) would have this
    // participant compute another model than the one it accepted.
    if r.weights.len() != t.n_params(spec.features.len())
        || r.weights.iter().any(|w| !w.is_finite())
    {
        return refuse(
            job_round,
            format!(
                "its rule has {} weights (or one not finite), the job {} features {}",
                r.weights.len(),
                spec.features.len(),
                if t.intercept {
                    "and an intercept"
                } else {
                    "and no intercept"
                }
            ),
        );
    }
    Ok(Box::new(TrainRoundRule(r)))
}

/// A `train` round's rule: Σ over the participant's records in this iteration's batch of the
/// clipped logistic gradient at the published weights ([`ClientGradient`]). Each record's coin
/// is drawn by the participant, from its own randomness, so nobody else learns the batch. The
/// class of a record is the sign of its mapped target (above the middle of the public range:
/// +1).
struct TrainRoundRule(TrainRule);

impl RoundRule for TrainRoundRule {
    fn expected(&self, _: &JobSpec) -> Result<Expected> {
        Ok(Expected {
            dim: self.0.weights.len(),
            record_bound: self.0.clip_norm,
            l2_sensitivity: self.0.clip_norm,
        })
    }

    fn planned_rounds(&self, spec: &JobSpec) -> Option<(u64, f64)> {
        Some((
            spec.train.as_ref().map_or(0, |t| t.iterations),
            self.0.clip_norm,
        ))
    }

    fn accumulator(&self, spec: &JobSpec, sampling: RngSource) -> Result<Box<dyn Accumulate + '_>> {
        let model =
            spec.train.as_ref().map(|t| t.model()).ok_or_else(|| {
                Error::Job("a train round's rule for a job without [train]".into())
            })?;
        Ok(Box::new(ClientGradient::poisson(
            model,
            &self.0.weights,
            spec.features.len(),
            Some(self.0.clip_norm),
            self.0.sampling_rate,
            sampling,
        )?))
    }

    /// The trainer's: a round's randomness and its sampling coins, each per client.
    fn seeded_rngs(&self, seed: RngSource, step: u64, client: u64) -> (RngSource, RngSource) {
        let (round, sampling) = iteration_rngs(&seed, step);
        (round.derive(client), sampling.derive(client))
    }
}

impl Accumulate for ClientGradient {
    fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        Ok(ClientGradient::push_rows(self, x, y)?)
    }

    fn finish(self: Box<Self>) -> Result<Vec<f64>> {
        Ok(ClientGradient::finish(*self))
    }
}
