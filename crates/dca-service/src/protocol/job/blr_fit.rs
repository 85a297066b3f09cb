//! The `blr` job kind: Alg. 2 of the DCA paper, its fit configured for DCA; each of its rounds
//! (the DP std round, the statistics round, the clipped records' shares) has the participants
//! compute the learner's [`Contribution`] from their rows mapped onto ±5.

use blr::Contribution;
use dp_noise::rng::RngSource;
use fixedpoint_shares::ShareMode;

use super::kind::{Accumulate, Expected, JobRounds, RoundRule, done, over_participants};
use super::{JobClippedShare, JobResult, JobRound, JobSpec};
use crate::{Error, Result};

/// Alg. 2 with DCA on `n_nodes` compute nodes, T = `max_dropped`, Gaussian noise at (ε, δ),
/// assumed bounds ±7.5 (the prepared data's), projection with the DP std round and the DCA
/// paper's search.
pub fn dca_blr_config(
    d: usize,
    n_nodes: u16,
    max_dropped: usize,
    mode: ShareMode,
    budget: dp_noise::PrivacyLoss,
) -> blr::FitConfig {
    blr::FitConfig {
        aggregation: projection::Aggregation::Distributed(projection::DcaSettings {
            n_nodes,
            max_dropped,
            mode,
        }),
        mechanism: blr::Mechanism::Gaussian,
        budget,
        assumed_x: vec![7.5; d],
        assumed_y: 7.5,
        projection: Some(blr::ProjectionConfig::default()),
        prior: blr::Prior::default(),
        with_yy: false,
    }
}

/// The aggregator's side of a `blr` job: Alg. 2 over the participants (`blr::fit_held` over
/// remote holders), the posterior and what the projection released recorded as its result.
pub(super) fn drive(
    spec: &JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    rounds: &mut dyn JobRounds,
) -> Result<()> {
    let config = spec.fit_config(n_nodes);
    let fit = over_participants(spec, &rows, rounds, |h, rng, t| {
        blr::fit_held(h, &config, rng, t)
    })?;
    let result = JobResult {
        mean: fit.posterior.mean.clone(),
        precision: {
            let p = fit.posterior.precision();
            (0..p.nrows())
                .flat_map(|i| (0..p.ncols()).map(move |j| (i, j)))
                .map(|(i, j)| p[(i, j)])
                .collect()
        },
        stats: fit.stats.to_flat(false),
        records: fit.stats.n,
        std: fit.std.as_ref().map(|s| {
            let mut v = s.x.clone();
            v.push(s.y);
            v
        }),
        thresholds: fit.thresholds.as_ref().map(|t| (t.omega_x, t.omega_y)),
        clipped: fit.clipped.as_ref().map(|c| JobClippedShare {
            y: c.y,
            x: c.x,
            share_sd: c.share_sd,
        }),
        spent_epsilon: fit.spent.epsilon,
        spent_delta: spec.spent_delta(fit.spent),
    };
    done(spec, rounds, |s| s.result = Some(result.clone()))
}

/// The participant's side of a `blr` job: each round's rule is the learner's
/// [`Contribution`], whatever the pipeline asks (the ledger's running total bounds what it
/// spends).
pub(super) fn round_rule(job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
    Ok(Box::new(ContributionRule {
        rule: Contribution::from_json(&job_round.rule)?,
        raw_rows: false,
    }))
}

/// A round whose rule is the learner's [`Contribution`] (a `blr` job's, or a `regression`
/// job's on its design, which reads the rows as they are in the file: `raw_rows`).
pub(super) struct ContributionRule {
    pub(super) rule: Contribution,
    pub(super) raw_rows: bool,
}

impl RoundRule for ContributionRule {
    fn expected(&self, spec: &JobSpec) -> Result<Expected> {
        if self.rule.columns() != spec.features.len() {
            return Err(Error::Job(format!(
                "a round's rule reads {} columns, the job has {}",
                self.rule.columns(),
                spec.features.len()
            )));
        }
        Ok(Expected {
            dim: self.rule.dim(),
            record_bound: self.rule.record_bound(),
            l2_sensitivity: self.rule.l2_sensitivity()?,
        })
    }

    fn accumulator(&self, _: &JobSpec, _: RngSource) -> Result<Box<dyn Accumulate + '_>> {
        Ok(Box::new(self.rule.accumulator()?))
    }

    fn reads_raw_rows(&self) -> bool {
        self.raw_rows
    }
}

impl Accumulate for blr::contribution::RowSum<'_> {
    fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()> {
        Ok(blr::contribution::RowSum::push_rows(self, x, y)?)
    }

    fn finish(self: Box<Self>) -> Result<Vec<f64>> {
        Ok(blr::contribution::RowSum::finish(*self)?)
    }
}
