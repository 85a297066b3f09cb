//! A job's kind, the tag that picks the module holding both roles' side of it: `blr_fit.rs`,
//! `regression.rs`, `train.rs` and `sum.rs` each hold their kind's settings, its driving
//! (`drive`: the rounds the aggregator asks for, run by the participants, and the result it
//! records) and its rule (`round_rule`: what a participant checks a round against before it
//! takes part, and what it computes from its rows). The aggregator and the participant reach a
//! kind only through [`JobKind::drive`] and [`JobKind::round_rule`]; neither role knows another
//! role's code, and both know the kinds from here.

use dp_noise::rng::RngSource;
use fixedpoint_shares::DcaTransport;
use projection::holders::Holders;
use serde::{Deserialize, Serialize};

use super::noise_plan::rounds_fit;
use super::{JobRound, JobSpec, JobState, JobStatus, blr_fit, regression, sum, train};
use crate::protocol::spec::Round;
use crate::{Error, Result};

/// What a job computes: `kind` in the job file and the spec, as its lowercase name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum JobKind {
    /// DCA paper Alg. 2.
    Blr,
    /// The regression with an intercept in the data's units.
    Regression,
    /// DP-SGD logistic regression.
    Train,
    /// One round of the columns' sums.
    Sum,
}

impl JobKind {
    /// The lowercase name, as in job files and the canonical JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Blr => "blr",
            JobKind::Regression => "regression",
            JobKind::Train => "train",
            JobKind::Sum => "sum",
        }
    }

    /// The aggregator's side: runs job `spec`'s pipeline to its end over the participants who
    /// accepted (party i holds `rows[i]`) on `n_nodes` nodes, its rounds run and its status
    /// recorded through `rounds`; the job is done, with its result, when this returns `Ok`.
    /// Blocking: the aggregator runs it on a thread of its own.
    pub fn drive(
        self,
        spec: &JobSpec,
        rows: Vec<usize>,
        n_nodes: u16,
        rounds: &mut dyn JobRounds,
    ) -> Result<()> {
        match self {
            JobKind::Blr => blr_fit::drive(spec, rows, n_nodes, rounds),
            JobKind::Regression => regression::drive(spec, rows, n_nodes, rounds),
            JobKind::Train => train::drive(spec, rows, n_nodes, rounds),
            JobKind::Sum => sum::drive(spec, rows, n_nodes, rounds),
        }
    }

    /// The participant's side: `job_round`'s published rule, parsed and checked against job
    /// `spec` (the job this participant accepted).
    pub fn round_rule(self, spec: &JobSpec, job_round: &JobRound) -> Result<Box<dyn RoundRule>> {
        match self {
            JobKind::Blr => blr_fit::round_rule(job_round),
            JobKind::Regression => regression::round_rule(spec, job_round),
            JobKind::Train => train::round_rule(spec, job_round),
            JobKind::Sum => sum::round_rule(spec, job_round),
        }
    }
}

impl TryFrom<String> for JobKind {
    type Error = String;

    fn try_from(name: String) -> std::result::Result<Self, String> {
        [
            JobKind::Blr,
            JobKind::Regression,
            JobKind::Train,
            JobKind::Sum,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
        .ok_or_else(|| {
            format!(
                "job kind {name:?} is not supported (\"blr\", \"regression\", \"train\" or \
                     \"sum\")"
            )
        })
    }
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the aggregator's driver gives a kind's pipeline: the job's DCA rounds, run by its
/// participants (a round's values are the rule it is published with), and the job's status,
/// changed as its driver (refused once another aggregator holds the job's driver lease).
pub trait JobRounds: DcaTransport + Send {
    /// Changes the job's status under the driver's lease.
    fn record(&mut self, change: &mut dyn FnMut(&mut JobStatus) -> Result<()>) -> Result<()>;
}

/// A round's rule as a participant reads it, checked against the job it accepted.
pub trait RoundRule: Send {
    /// What the round must look like for this rule.
    fn expected(&self, spec: &JobSpec) -> Result<Expected>;

    /// The job's rounds of this rule and the ℓ2 sensitivity of each, when the job's noise is
    /// planned so that all of them fit the job's ε, δ; `None` when the ledger's running
    /// total alone checks the spending (a `blr` job's rounds split its budget unevenly).
    fn planned_rounds(&self, _spec: &JobSpec) -> Option<(u64, f64)> {
        None
    }

    /// An empty sum for this rule; `sampling` draws a `train` round's coins.
    fn accumulator(&self, spec: &JobSpec, sampling: RngSource) -> Result<Box<dyn Accumulate + '_>>;

    /// Whether the rule reads rows as they are in the file (a design maps them itself) rather
    /// than mapped onto ±5 by the job's public bounds.
    fn reads_raw_rows(&self) -> bool {
        false
    }

    /// The randomness of the shares and noise, and of the sampling coins, under a fixed
    /// `seed`, derived as the in-process pipeline derives its own.
    fn seeded_rngs(&self, seed: RngSource, step: u64, client: u64) -> (RngSource, RngSource) {
        let round = seed.derive(step).derive(client);
        (round, round)
    }

    /// The job-level privacy check: the round's noise lets all the job's rounds fit in the
    /// ε, δ this participant accepted.
    fn check_budget(&self, spec: &JobSpec, round: &Round) -> Result<()> {
        let Some((rounds, l2)) = self.planned_rounds(spec) else {
            return Ok(());
        };
        if !rounds_fit(&round.config, l2, rounds, spec.rho()?)? {
            return Err(Error::Job(format!(
                "round {}: {rounds} rounds with its noise would cost more than the job's \
                 ε = {}, δ = {} (NON-PRIVATE for this participant)",
                round.id(),
                spec.epsilon,
                spec.delta
            )));
        }
        Ok(())
    }

    /// The randomness of this participant's shares and noise, and of its sampling coins, in
    /// the round of step `step` where it is client `client`: the OS's, or under a fixed seed
    /// (NON-PRIVATE).
    fn rngs(&self, insecure_seed: Option<u64>, step: u64, client: u64) -> (RngSource, RngSource) {
        match insecure_seed {
            None => (RngSource::Os, RngSource::Os),
            Some(seed) => self.seeded_rngs(RngSource::InsecureFixedSeed(seed), step, client),
        }
    }
}

/// What the round must look like for a rule: its dimension, the least per-coordinate bound
/// one record needs, and the ℓ2 sensitivity its noise must be calibrated for.
pub struct Expected {
    /// d.
    pub dim: usize,
    /// The least per-coordinate bound one record's contribution needs.
    pub record_bound: f64,
    /// Δ₂ of one record's contribution.
    pub l2_sensitivity: f64,
}

/// A participant's running sum for one round.
pub trait Accumulate {
    /// Adds rows: `x` row-major (rows × features), `y` the target.
    fn push_rows(&mut self, x: &[f64], y: &[f64]) -> Result<()>;
    /// The vector this participant contributes.
    fn finish(self: Box<Self>) -> Result<Vec<f64>>;
}

/// The refusal of round `job_round`, saying why (`what`).
pub(super) fn refuse<T>(job_round: &JobRound, what: String) -> Result<T> {
    Err(Error::Job(format!("round {}: {what}", job_round.id)))
}

/// Runs a `blr` learner (`fit`) over the participants who accepted (party i holds `rows[i]`),
/// its DCA rounds run by them through `rounds`, with the job's public randomness (which draws
/// none of the participants' noise or masks: they draw their own).
pub(super) fn over_participants<T>(
    spec: &JobSpec,
    rows: &[usize],
    rounds: &mut dyn JobRounds,
    fit: impl FnOnce(&Holders<'_>, RngSource, &mut dyn DcaTransport) -> blr::Result<T>,
) -> Result<T> {
    let holders = Holders::Remote {
        rows,
        max_rows: spec.max_rows,
    };
    Ok(fit(
        &holders,
        RngSource::InsecureFixedSeed(spec.seed()),
        rounds,
    )?)
}

/// Marks the live job done, with `result` recorded.
pub(super) fn done(
    spec: &JobSpec,
    rounds: &mut dyn JobRounds,
    mut result: impl FnMut(&mut JobStatus),
) -> Result<()> {
    rounds.record(&mut |s| {
        if s.is_live() {
            s.state = JobState::Done;
            result(s);
        }
        Ok(())
    })?;
    tracing::info!(job = %spec.id(), "job done");
    Ok(())
}
