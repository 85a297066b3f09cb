//! What the aggregator records and publishes about a job: the answers, the rounds, the state
//! and the results.

use serde::{Deserialize, Serialize};

use super::JobSpec;

/// A participant's answer to a job (`POST /jobs/{id}/answer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Takes part or not.
    pub accept: bool,
    /// Rows it contributes (public: the job's record count is their sum). Required to accept.
    #[serde(default)]
    pub rows: usize,
    /// Why it refuses (its policy's reason); shown to the analyst.
    #[serde(default)]
    pub reason: String,
}

/// One of the job's DCA rounds, as published to the participants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRound {
    /// The pipeline's round number (1: DP std round, 2: statistics round): a participant
    /// running with a fixed seed derives its randomness from it, as the in-process pipeline.
    pub step: u64,
    /// Hex round id on the aggregator and nodes.
    pub id: String,
    /// The round's config (canonical JSON object).
    pub spec: crate::protocol::spec::RoundSpec,
    /// What each participant contributes ([`blr::Contribution`] JSON).
    pub rule: String,
    /// Roster index of each client of the round (client id = position in this list).
    pub clients: Vec<usize>,
}

/// What the aggregator publishes about a job (`GET /jobs/{id}`), to the analyst and to the
/// participants on its roster. Everything in it is public: the spec, who answered how, the
/// rounds, and what was released.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct JobStatus {
    /// Hex job id.
    pub id: String,
    /// Where the job stands.
    pub state: JobState,
    /// Why it ended, if it did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Roster indices that accepted, with their row counts.
    pub accepted: Vec<(usize, usize)>,
    /// Roster indices that refused, with their reasons.
    pub refused: Vec<(usize, String)>,
    /// The nodes' public keys (hex, node order), read when the job was created: every round
    /// of the job seals to these.
    pub node_keys: Vec<String>,
    /// The rounds run so far, in order.
    pub rounds: Vec<JobRound>,
    /// A `blr` job's result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JobResult>,
    /// A `train` job's progress (every iteration's release as it comes) and result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_result: Option<super::train::TrainResult>,
    /// A `sum` job's result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_result: Option<super::sum::SumResult>,
    /// A `regression` job's result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression_result: Option<super::regression::RegressionResult>,
    /// zCDP ρ reserved for the job, and spent by its released rounds so far.
    pub rho_reserved: f64,
    /// See `rho_reserved`. Released rounds only: a participant charges its own ledger when it
    /// seals shares for a round, so a round it sealed for that is never released (the job
    /// cancelled or aborted first) is charged in its ledger and not here.
    pub rho_spent: f64,
    /// The answers counted as they come (in the analyst's view only: computed when asked, never
    /// stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<AnswerCounts>,
}

/// How the participants on a job's roster answered so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AnswerCounts {
    /// Accepted.
    pub accepted: usize,
    /// Refused (by their policy).
    pub refused: usize,
    /// Not answered (yet, or before the answer window closed).
    pub silent: usize,
}

impl JobStatus {
    /// Still answering or running (not done, aborted, failed or cancelled).
    pub fn is_live(&self) -> bool {
        self.state.is_live()
    }
}

/// Where a job stands. On the wire, in the stores and in the participants' ledgers it is the
/// lowercase name ("answering", "running", …), as it was when the state was a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Waiting for the participants' answers.
    #[default]
    Answering,
    /// Running its rounds.
    Running,
    /// Finished; its result is released.
    Done,
    /// Stopped before its end (`reason` says why: too few acceptances, a round aborted, …).
    Aborted,
    /// A round's release became impossible (`reason` names the round and the node's cause).
    Failed,
    /// Cancelled by the analyst.
    Cancelled,
}

impl JobState {
    /// The lowercase name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Answering => "answering",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Aborted => "aborted",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Answering or running: the job can still change.
    pub fn is_live(self) -> bool {
        matches!(self, JobState::Answering | JobState::Running)
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A finished `blr` job's released results (all post-processing of the releases).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    /// Posterior mean of the coefficients (of the columns mapped onto ±5).
    pub mean: Vec<f64>,
    /// Posterior precision Λ, row-major d × d.
    pub precision: Vec<f64>,
    /// The released statistics `[xx (packed), xy]`.
    pub stats: Vec<f64>,
    /// Records the statistics were computed over (the accepted participants' rows).
    pub records: usize,
    /// The released standard deviations (x…, y), if the std round ran.
    pub std: Option<Vec<f64>>,
    /// The chosen threshold multipliers (ω_x, ω_y).
    pub thresholds: Option<(f64, f64)>,
    /// The released shares of records the bounds clipped, if the job asked for them
    /// (`clipped_share`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped: Option<JobClippedShare>,
    /// Privacy the job's pipeline charged, as (ε, δ).
    pub spent_epsilon: f64,
    /// See `spent_epsilon`.
    pub spent_delta: f64,
}

/// The shares of a `blr` job's records that its bounds clipped (noisy, clamped to [0, 1]; see
/// `blr::ClippedShare`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobClippedShare {
    /// Share of records whose target was clipped.
    pub y: f64,
    /// Share of records with at least one feature clipped.
    pub x: f64,
    /// Standard deviation of the noise on each share.
    pub share_sd: f64,
}

/// A job as the aggregator shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobView {
    /// What the analyst asked for.
    pub spec: JobSpec,
    /// Where it stands.
    pub status: JobStatus,
    /// The compute nodes' base URLs, in node order (where participants upload).
    pub nodes: Vec<String>,
    /// The caller's place on the roster (participants only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you: Option<usize>,
}
