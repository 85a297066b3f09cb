//! Jobs: a learning task the analyst creates on the aggregator and the aggregator drives,
//! round after round, with the data holders as the DCA clients. The analyst states only public
//! things — the kind, the columns with their public bounds, (ε, δ), T, the roster of
//! participants (hashes of their tokens) — and reads only what is released; each participant
//! reads the job, checks it against its own policy, answers, and computes its contribution to
//! every round from its own rows.
//!
//! A job's id is the SHA-256 of its canonical JSON, as a round's is: a participant that accepts
//! job `id` has accepted exactly these parameters.

pub mod blr_fit;
pub mod participation;
pub mod regression;
pub mod train;
pub mod view;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result, hex};

/// A column the job reads, with the public range its values are mapped from (onto ±5, values
/// outside clipped: the DCA paper's UCI protocol, a per-record map that costs no privacy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnBounds {
    /// Column name in the participants' files.
    pub name: String,
    /// Public lower end.
    pub lo: f64,
    /// Public upper end.
    pub hi: f64,
    /// A `regression` job's indicator: the categorical column whose level it codes. The
    /// columns of one group are the levels' indicators (bounds 0 and 1, at most one set per
    /// record; `blr::Design::indicator_groups`). Absent: an ordinary column (and the ids of
    /// jobs without groups are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// Everything that defines a job (`PUT /jobs/{id}`; the id is the SHA-256 of this struct's
/// canonical JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// "blr": DCA paper Alg. 2 (DP std round, threshold search on public auxiliary data,
    /// statistics round, posterior). "train": DP-SGD logistic regression (with an intercept
    /// unless `train.intercept` is false), one DCA round per iteration (settings in `train`).
    /// "sum": one DCA round of the sums of every column the job reads (the features, then the
    /// target). "regression": the regression with an intercept in the data's units
    /// (`blr::regression`): the ranges round, then the statistics of the narrowed design the
    /// columns' public ranges make ([`JobSpec::design`]).
    pub kind: JobKind,
    /// The target column.
    pub target: ColumnBounds,
    /// The input columns, in model order.
    pub features: Vec<ColumnBounds>,
    /// Total ε of the job (the aggregator reserves it whole when the job is created).
    pub epsilon: f64,
    /// Total δ.
    pub delta: f64,
    /// T: participants that may refuse or drop out; the noise is scaled for N − T − 1 honest.
    pub max_dropped: usize,
    /// "seed" or "full".
    pub mode: String,
    /// Hex SHA-256 of each participant's bearer token, in client order.
    pub roster: Vec<String>,
    /// The most rows one participant may contribute (public: it sizes the fixed-point grid).
    pub max_rows: usize,
    /// Time the participants have to accept or refuse, from the job's creation (ms).
    pub answer_window_ms: u64,
    /// Time the participants have to upload to each round, from its creation (ms).
    pub upload_window_ms: u64,
    /// Unix time (ms) the job was created at (makes two otherwise equal jobs distinct).
    pub created_unix_ms: u64,
    /// Seed of the aggregator's own randomness in the job, which only draws the threshold
    /// search's synthetic auxiliary data (public). The participants' noise never comes from it.
    /// Absent: the first 8 bytes of the job's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_seed: Option<u64>,
    /// A `train` job's DP-SGD settings (absent for the other kinds, so that their ids are
    /// what they were before train jobs existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<crate::protocol::job::train::TrainSettings>,
    /// A `blr` job's fraction of its budget for a third round releasing the shares of records
    /// its bounds clipped (`blr::ProjectionConfig::clipped_share_budget`), so the analyst can
    /// read the intervals as the clipped records' regression; absent: no such round (and the
    /// ids of jobs without it are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped_share: Option<f64>,
}

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

/// Most participants in one job.
pub const MAX_ROSTER: usize = 1 << 20;

impl JobSpec {
    /// The canonical JSON (what is hashed).
    pub fn canonical_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a job spec always serialises")
    }

    /// Hex SHA-256 of the canonical JSON: the job's id.
    pub fn id(&self) -> String {
        hex::encode(&Sha256::digest(self.canonical_json()))
    }

    /// Checks every field; the error names the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidSpec(format!("job: {m}")));
        match (self.kind, &self.train) {
            (JobKind::Train, Some(t)) => t.validate(self)?,
            (JobKind::Train, None) => {
                return bad("a \"train\" job needs its [train] settings (iterations, \
                     clip_norm, sampling_rate, learning_rate)"
                    .into());
            }
            (kind, Some(_)) => {
                return bad(format!(
                    "[train] settings are for \"train\" jobs, not for a {:?} job",
                    kind.as_str()
                ));
            }
            (_, None) => {}
        }
        if self.features.is_empty() {
            return bad("at least one feature column is needed".into());
        }
        let mut names: Vec<&str> = self.features.iter().map(|c| c.name.as_str()).collect();
        names.push(&self.target.name);
        for c in self.features.iter().chain([&self.target]) {
            if c.name.is_empty() || !(c.lo.is_finite() && c.hi.is_finite() && c.lo < c.hi) {
                return bad(format!(
                    "column {:?} needs a name and finite bounds lo < hi (got {} and {})",
                    c.name, c.lo, c.hi
                ));
            }
        }
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("column {:?} is listed twice", w[0]));
        }
        dp_noise::limits::gaussian_budget(self.epsilon, self.delta)
            .map_err(|e| Error::InvalidSpec(format!("job: {e}")))?;
        if !matches!(self.mode.as_str(), "seed" | "full") {
            return bad(format!("mode {:?} must be \"seed\" or \"full\"", self.mode));
        }
        let n = self.roster.len();
        if n > MAX_ROSTER || n < self.max_dropped + 2 {
            return bad(format!(
                "{n} participants for T = {}: DCA needs N − T − 1 ≥ 1 honest participants \
                 (and at most {MAX_ROSTER})",
                self.max_dropped
            ));
        }
        for (i, h) in self.roster.iter().enumerate() {
            if h.len() != 64
                || hex::decode_array::<32>(h).is_none()
                || h.bytes().any(|b| b.is_ascii_uppercase())
            {
                return bad(format!("roster[{i}] must be 64 lower-case hex digits"));
            }
        }
        let mut sorted = self.roster.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return bad("a token hash is listed twice in the roster".into());
        }
        if self.max_rows == 0 {
            return bad("max_rows must be at least 1".into());
        }
        for c in self
            .features
            .iter()
            .chain([&self.target])
            .filter(|c| c.group.is_some())
        {
            if self.kind != JobKind::Regression || c.name == self.target.name {
                return bad(format!(
                    "column {:?} names an indicator group: groups are for the features of \
                     \"regression\" jobs",
                    c.name
                ));
            }
            if c.lo != 0.0 || c.hi != 1.0 {
                return bad(format!(
                    "column {:?} is an indicator of group {:?}: its bounds must be lo = 0, hi = 1",
                    c.name,
                    c.group.as_deref().unwrap_or_default()
                ));
            }
        }
        if let Some(share) = self.clipped_share {
            let limit = 1.0 - blr::ProjectionConfig::default().std_share;
            if self.kind != JobKind::Blr {
                return bad(format!(
                    "clipped_share is for \"blr\" jobs, not for a {:?} job",
                    self.kind.as_str()
                ));
            }
            if !(share > 0.0 && share < limit) {
                return bad(format!(
                    "clipped_share = {share} must be in (0, {limit}): the fraction of the \
                     budget for the clipped-share round, beside the std round's {}",
                    1.0 - limit
                ));
            }
        }
        for (what, ms) in [
            ("answer_window_ms", self.answer_window_ms),
            ("upload_window_ms", self.upload_window_ms),
        ] {
            if !(100..=7 * 24 * 3_600_000).contains(&ms) {
                return bad(format!("{what} = {ms} must be from 100 ms to a week"));
            }
        }
        Ok(())
    }

    /// The public bounds of every column, as the participants' preprocessing reads them.
    pub fn public_bounds(&self) -> blr::public_bounds::PublicBounds {
        blr::public_bounds::PublicBounds {
            bounds: self
                .features
                .iter()
                .chain([&self.target])
                .map(|c| (c.name.clone(), c.lo, c.hi))
                .collect(),
            groups: self
                .features
                .iter()
                .filter_map(|c| Some((c.name.clone(), c.group.clone()?)))
                .collect(),
        }
    }

    /// The design of a `regression` job: each feature's and the target's public range, an
    /// intercept, the library's default shares of the budget among the statistics' blocks, and
    /// the features' indicator groups (in order of first appearance).
    pub fn design(&self) -> Result<blr::Design> {
        let range = |c: &ColumnBounds| {
            blr::PublicRange::new(c.lo, c.hi)
                .map_err(|e| Error::InvalidSpec(format!("job: column {:?}: {e}", c.name)))
        };
        let mut design = blr::Design::new(
            self.features.iter().map(range).collect::<Result<_>>()?,
            range(&self.target)?,
        )?;
        let (groups, names) =
            blr::groups_by_label(self.features.iter().map(|c| c.group.as_deref()));
        design.indicator_groups = groups;
        design.validate().map_err(|e| {
            Error::InvalidSpec(format!(
                "job: indicator groups {names:?} (in this order): {e}"
            ))
        })?;
        Ok(design)
    }

    /// A participant's rows for this job from its table, as they are in the file: the feature
    /// columns in the job's order (x row-major, rows × d) and the target.
    pub fn raw_rows_of(&self, table: &blr::data::Table) -> Result<(Vec<f64>, Vec<f64>)> {
        let names: Vec<&str> = self.features.iter().map(|c| c.name.as_str()).collect();
        let x = columns_of(table, &names, "the job reads")?;
        let y = columns_of(table, &[&self.target.name], "the job reads")?;
        Ok((x, y))
    }

    /// A participant's rows for this job from its table: the feature columns in the job's
    /// order and the target, each mapped from its public range onto ±5 (values outside
    /// clipped). Returns (x row-major rows × d, y, values clipped). The in-process reference
    /// of a networked job prepares rows with this same function.
    pub fn rows_of(&self, table: &blr::data::Table) -> Result<(Vec<f64>, Vec<f64>, usize)> {
        let (mut x, mut y) = self.raw_rows_of(table)?;
        let bounds = self.public_bounds();
        let names: Vec<String> = self.features.iter().map(|c| c.name.clone()).collect();
        let clipped = bounds
            .scale(&mut x, &names, 5.0)
            .and_then(|c| {
                Ok(c + bounds.scale(&mut y, std::slice::from_ref(&self.target.name), 5.0)?)
            })
            .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
        Ok((x, y, clipped))
    }

    /// The pipeline's settings: Alg. 2 with DCA on `n_nodes` nodes, Gaussian noise at the
    /// job's (ε, δ), assumed bounds ±7.5 around the ±5 the columns are mapped onto, projection
    /// with the DP std round and the DCA paper's search.
    pub fn fit_config(&self, n_nodes: u16) -> blr::FitConfig {
        let mut config = blr_fit::dca_blr_config(
            self.features.len(),
            n_nodes,
            self.max_dropped,
            self.share_mode(),
            dp_noise::PrivacyLoss {
                epsilon: self.epsilon,
                delta: self.delta,
            },
        );
        if let (Some(share), Some(projection)) = (self.clipped_share, config.projection.as_mut()) {
            projection.clipped_share_budget = share;
        }
        config
    }

    /// The seed of the job's public randomness (see `public_seed`).
    pub fn seed(&self) -> u64 {
        self.public_seed.unwrap_or_else(|| {
            let id = Sha256::digest(self.canonical_json());
            u64::from_le_bytes(id[..8].try_into().expect("8 bytes"))
        })
    }

    /// The numeric id of the job's round for pipeline step `step`: 56 bits of the job's id and
    /// the step, so that rounds of different jobs never share a number.
    pub fn round_number(&self, step: u64) -> u64 {
        let id = Sha256::digest(self.canonical_json());
        let id = u64::from_le_bytes(id[..8].try_into().expect("8 bytes"));
        // A blr job has two or three steps; a train job one per iteration (at most 2^24,
        // checked).
        if self.kind == JobKind::Blr {
            (id << 8) | (step & 0xff)
        } else {
            (id << 24) | (step & 0xff_ffff)
        }
    }

    /// The share mode.
    pub fn share_mode(&self) -> fixedpoint_shares::ShareMode {
        if self.mode == "full" {
            fixedpoint_shares::ShareMode::Full
        } else {
            fixedpoint_shares::ShareMode::Seed
        }
    }

    /// The zCDP ρ the job may spend (what the aggregator reserves): the largest ρ with
    /// ρ + 2 sqrt(ρ ln(1/δ)) ≤ ε, as the pipeline splits it.
    pub fn rho(&self) -> Result<f64> {
        blr::rho_from_budget(dp_noise::PrivacyLoss {
            epsilon: self.epsilon,
            delta: self.delta,
        })
        .map_err(|e| Error::InvalidSpec(format!("job: {e}")))
    }
}

/// The columns `names` of `table`, row-major (rows × names); a column the table does not have
/// is an error that says who reads it (`who`, e.g. "the job reads") and which columns there are.
pub fn columns_of(table: &blr::data::Table, names: &[&str], who: &str) -> Result<Vec<f64>> {
    let at = names
        .iter()
        .map(|name| {
            table.names.iter().position(|n| n == name).ok_or_else(|| {
                Error::InvalidSpec(format!(
                    "{who} column {name:?}, which the data file does not have (it has {})",
                    table.names.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let width = table.names.len();
    let mut out = Vec::with_capacity(table.rows * at.len());
    for row in table.values.chunks_exact(width) {
        out.extend(at.iter().map(|&j| row[j]));
    }
    Ok(out)
}

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
    pub train_result: Option<crate::protocol::job::train::TrainResult>,
    /// A `sum` job's result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sum_result: Option<crate::protocol::job::train::SumResult>,
    /// A `regression` job's result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression_result: Option<crate::protocol::job::regression::RegressionResult>,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The wire and stored form is the lowercase name a job's state had as a string: a status
    /// written before the state was typed reads back, and one written now reads the same.
    #[test]
    fn job_states_keep_their_names_on_the_wire_and_in_stores() {
        let names = [
            (JobState::Answering, "answering"),
            (JobState::Running, "running"),
            (JobState::Done, "done"),
            (JobState::Aborted, "aborted"),
            (JobState::Failed, "failed"),
            (JobState::Cancelled, "cancelled"),
        ];
        for (state, name) in names {
            assert_eq!(
                serde_json::to_string(&state).unwrap(),
                format!("\"{name}\"")
            );
            assert_eq!(state.to_string(), name);
            assert_eq!(state.is_live(), matches!(name, "answering" | "running"));
        }
        let stored = br#"{"id":"ab","state":"failed","reason":"round r: node 1 lost it","accepted":[[0,3]],"refused":[],"node_keys":[],"rounds":[],"rho_reserved":0.5,"rho_spent":0.0}"#;
        let status: JobStatus = serde_json::from_slice(stored).unwrap();
        assert_eq!(status.state, JobState::Failed);
        assert_eq!(serde_json::to_vec(&status).unwrap(), stored.to_vec());
        let unknown = br#"{"id":"ab","state":"paused","accepted":[],"refused":[],"node_keys":[],"rounds":[],"rho_reserved":0.5,"rho_spent":0.0}"#;
        let e = serde_json::from_slice::<JobStatus>(unknown)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `paused`"), "{e}");
    }

    /// A valid blr job with a roster of 4 (tokens 00…, 01…, 02…, 03…).
    pub(crate) fn spec() -> JobSpec {
        JobSpec {
            kind: JobKind::Blr,
            target: ColumnBounds {
                name: "y".into(),
                lo: 0.0,
                hi: 10.0,
                group: None,
            },
            features: vec![ColumnBounds {
                name: "a".into(),
                lo: -1.0,
                hi: 1.0,
                group: None,
            }],
            epsilon: 1.0,
            delta: 1e-5,
            max_dropped: 1,
            mode: "seed".into(),
            roster: (0..4u8).map(|i| hex::encode(&[i; 32])).collect(),
            max_rows: 1,
            answer_window_ms: 1000,
            upload_window_ms: 1000,
            created_unix_ms: 1,
            public_seed: None,
            clipped_share: None,
            train: None,
        }
    }

    /// An unknown kind is refused where the spec is read (job file, `PUT /jobs/{id}` body),
    /// naming the kind and the supported ones; the known ones keep their names in the id.
    #[test]
    fn an_unknown_kind_is_refused_when_read() {
        let mut json: serde_json::Value = serde_json::to_value(spec()).unwrap();
        assert_eq!(json["kind"], "blr");
        for bad in ["fit", "sums", "BLR", ""] {
            json["kind"] = bad.into();
            let e = serde_json::from_value::<JobSpec>(json.clone())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("job kind {bad:?} is not supported"))
                    && e.contains("\"regression\", \"train\" or \"sum\""),
                "{e}"
            );
        }
        for kind in [
            JobKind::Blr,
            JobKind::Regression,
            JobKind::Train,
            JobKind::Sum,
        ] {
            json["kind"] = kind.as_str().into();
            let read: JobKind = serde_json::from_value(json["kind"].clone()).unwrap();
            assert_eq!(
                (read, serde_json::to_value(kind).unwrap()),
                (kind, json["kind"].clone())
            );
        }
    }

    #[test]
    fn a_valid_spec_passes_and_each_bad_field_is_named() {
        spec().validate().unwrap();
        type Change = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(&str, Change)> = vec![
            ("[train] settings", Box::new(|s| s.kind = JobKind::Train)),
            ("feature", Box::new(|s| s.features.clear())),
            ("bounds", Box::new(|s| s.features[0].hi = -2.0)),
            ("twice", Box::new(|s| s.target.name = "a".into())),
            ("epsilon", Box::new(|s| s.epsilon = 0.0)),
            ("delta", Box::new(|s| s.delta = 0.5)),
            ("mode", Box::new(|s| s.mode = "fast".into())),
            ("honest", Box::new(|s| s.max_dropped = 3)),
            ("roster[1]", Box::new(|s| s.roster[1] = "AB".repeat(32))),
            (
                "listed twice",
                Box::new(|s| s.roster[1] = s.roster[0].clone()),
            ),
            ("max_rows", Box::new(|s| s.max_rows = 0)),
            ("upload_window_ms", Box::new(|s| s.upload_window_ms = 5)),
            (
                "clipped_share = 0",
                Box::new(|s| s.clipped_share = Some(0.0)),
            ),
            (
                "clipped_share = 0.9",
                Box::new(|s| s.clipped_share = Some(0.9)),
            ),
            (
                "clipped_share = NaN",
                Box::new(|s| s.clipped_share = Some(f64::NAN)),
            ),
            (
                "not for a \"sum\" job",
                Box::new(|s| {
                    s.kind = JobKind::Sum;
                    s.clipped_share = Some(0.05);
                }),
            ),
            (
                "not for a \"regression\" job",
                Box::new(|s| {
                    s.kind = JobKind::Regression;
                    s.clipped_share = Some(0.05);
                }),
            ),
            (
                "column \"a\" needs a name and finite bounds",
                Box::new(|s| {
                    s.kind = JobKind::Regression;
                    s.features[0].lo = f64::INFINITY;
                }),
            ),
        ];
        for (word, change) in cases {
            let mut s = spec();
            change(&mut s);
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{word}: {e}");
        }
    }

    #[test]
    fn a_regression_jobs_indicator_groups_make_the_designs_and_bad_ones_are_named() {
        let level = |name: &str, group: &str| ColumnBounds {
            name: name.into(),
            lo: 0.0,
            hi: 1.0,
            group: Some(group.into()),
        };
        let mut s = JobSpec {
            kind: JobKind::Regression,
            ..spec()
        };
        let id_without = s.id();
        s.features.extend([
            level("red", "colour"),
            level("m", "size"),
            level("blue", "colour"),
        ]);
        s.validate().unwrap();
        assert_eq!(
            s.design().unwrap().indicator_groups,
            vec![vec![1, 3], vec![2]]
        );
        assert_ne!(s.id(), id_without);
        let without = JobSpec {
            features: s.features[..1].to_vec(),
            ..s.clone()
        };
        // No group: the JSON (and so the id) of a job is what it was before groups existed.
        assert_eq!(without.id(), id_without);
        assert!(
            !String::from_utf8(without.canonical_json())
                .unwrap()
                .contains("group")
        );
        type Change = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "groups are for the features of \"regression\" jobs",
                Box::new(|s| s.kind = JobKind::Blr),
            ),
            (
                "\"y\" names an indicator group",
                Box::new(|s| s.target.group = Some("g".into())),
            ),
            (
                "its bounds must be lo = 0, hi = 1",
                Box::new(|s| s.features[2].hi = 2.0),
            ),
        ];
        for (needle, change) in cases {
            let mut bad = s.clone();
            change(&mut bad);
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn the_id_binds_every_field() {
        let a = spec();
        let b = JobSpec {
            epsilon: 1.5,
            ..spec()
        };
        assert_eq!(a.id(), spec().id());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.id().len(), 64);
        // The clipped-share round is part of what participants accept.
        let c = JobSpec {
            clipped_share: Some(0.05),
            ..spec()
        };
        assert_ne!(a.id(), c.id());
        assert!(
            !String::from_utf8(a.canonical_json())
                .unwrap()
                .contains("clipped_share")
        );
    }

    #[test]
    fn clipped_share_goes_to_the_fit_config() {
        let with = JobSpec {
            clipped_share: Some(0.05),
            ..spec()
        };
        let share = |s: &JobSpec| s.fit_config(3).projection.unwrap().clipped_share_budget;
        assert_eq!(share(&with), 0.05);
        assert_eq!(share(&spec()), 0.0);
        with.validate().unwrap();
    }
}
