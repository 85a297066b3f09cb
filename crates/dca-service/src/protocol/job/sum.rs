//! The `sum` job kind: one DCA round of the sums of the job's columns over all records.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{ClientVectors, DcaRound, RoundConfig, RoundId, RoundParams};
use serde::{Deserialize, Serialize};

use super::kind::{Accumulate, Expected, JobRounds, RoundRule, done, refuse};
use super::noise_plan::{SCALE, smallest_noise};
use super::round_rule::{Rule, SumRule};
use super::{ColumnBounds, JobRound};
use crate::protocol::job::JobSpec;
use crate::{Error, Result};

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

/// The aggregator's side of a `sum` job: its one round, then the sums in the columns' units.
pub(super) fn drive(
    spec: &JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    rounds: &mut dyn JobRounds,
) -> Result<()> {
    let config = sum_round_config(spec, rows.len(), n_nodes)?;
    let rule = Rule::Sum(SumRule {
        columns: spec.features.len() + 1,
    })
    .to_json();
    let release = rounds.run_round(&DcaRound {
        config: &config,
        values: ClientVectors::AtClients(&rule),
        dropped: &[],
        l2_sensitivity: sum_sensitivity(spec),
        // Public, unused: the participants draw their own noise and masks.
        rng: dp_noise::rng::RngSource::InsecureFixedSeed(spec.seed()),
    })?;
    let records: usize = rows.iter().sum();
    let result = SumResult {
        sums: sum_in_units(spec, &release.sum, records),
        released: release.sum,
        records,
        noise_sigma: release.noise_sigma_released,
    };
    done(spec, rounds, |s| s.sum_result = Some(result.clone()))
}

/// The participant's side of a `sum` job: its one round's rule must sum every column the job
/// reads.
pub(super) fn round_rule(spec: &JobSpec, job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
    match (Rule::from_json(&job_round.rule)?, &spec.train) {
        (Rule::Sum(r), None) => {
            if r.columns != spec.features.len() + 1 || job_round.step != 0 {
                return refuse(
                    job_round,
                    format!(
                        "its rule sums {} columns in step {}, the job {} in one round",
                        r.columns,
                        job_round.step,
                        spec.features.len() + 1
                    ),
                );
            }
            Ok(Box::new(SumRoundRule(r)))
        }
        _ => refuse(job_round, "its rule is not one of a \"sum\" job".into()),
    }
}

/// A `sum` round's rule: Σ over the participant's records of every column the job reads.
struct SumRoundRule(SumRule);

impl RoundRule for SumRoundRule {
    fn expected(&self, spec: &JobSpec) -> Result<Expected> {
        Ok(Expected {
            dim: self.0.columns,
            record_bound: SCALE,
            l2_sensitivity: sum_sensitivity(spec),
        })
    }

    fn planned_rounds(&self, spec: &JobSpec) -> Option<(u64, f64)> {
        Some((1, sum_sensitivity(spec)))
    }

    fn accumulator(&self, _: &JobSpec, _: RngSource) -> Result<Box<dyn Accumulate + '_>> {
        Ok(Box::new(ColumnSums(vec![0.0; self.0.columns])))
    }
}

/// The features' sums, then the target's.
struct ColumnSums(Vec<f64>);

impl Accumulate for ColumnSums {
    fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        let sum = &mut self.0;
        let d = sum.len() - 1;
        if x.len() != y.len() * d {
            return Err(Error::InvalidSpec(format!(
                "{} values for {} rows of {d} features",
                x.len(),
                y.len()
            )));
        }
        for (row, &target) in x.chunks_exact(d.max(1)).zip(y) {
            for (s, v) in sum.iter_mut().zip(row) {
                *s += v;
            }
            sum[d] += target;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Vec<f64>> {
        Ok(self.0)
    }
}
