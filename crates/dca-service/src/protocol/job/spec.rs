//! A job's spec: what the analyst asks for, all of it public; its SHA-256 is the job's id.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result, hex};

use super::blr_fit;
use super::kind::JobKind;
use super::train_settings::TrainSettings;
use crate::protocol::validity::ValiditySpec;

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
    pub train: Option<TrainSettings>,
    /// A `blr` job's fraction of its budget for a third round releasing the shares of records
    /// its bounds clipped (`blr::ProjectionConfig::clipped_share_budget`), so the analyst can
    /// read the intervals as the clipped records' regression; absent: no such round (and the
    /// ids of jobs without it are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped_share: Option<f64>,
    /// Every round of the job verified (`linf` only: an `l2` bound needs a bound on each
    /// round's data norm, which the job's rounds do not share): each participant proves its
    /// contribution within the round's bound, and the job's noise is planned at the δ left
    /// after its rounds' truncation ([`JobSpec::noise_budget`]). Absent: rounds as before (and
    /// the ids of jobs without it are what they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<ValiditySpec>,
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
            (JobKind::Train, Some(t)) => t.validate(&self.mode)?,
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
        match self.validity {
            Some(ValiditySpec::L2 { .. }) => {
                return bad(
                    "validity \"l2\" needs a bound on each round's data norm, which \
                     a job's rounds do not share: jobs take \"linf\""
                        .into(),
                );
            }
            Some(ValiditySpec::Linf { truncation_delta })
                if !(truncation_delta > 0.0 && truncation_delta < 1.0) =>
            {
                return bad(format!(
                    "validity.truncation_delta = {truncation_delta} must be in (0, 1)"
                ));
            }
            _ => {}
        }
        self.noise_budget()?;
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
            self.noise_budget()
                .expect("a validated job's noise budget is valid"),
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
    /// ρ + 2 sqrt(ρ ln(1/δ′)) ≤ ε at the δ′ of [`JobSpec::noise_budget`], as the pipeline
    /// splits it.
    pub fn rho(&self) -> Result<f64> {
        blr::rho_from_budget(self.noise_budget()?)
            .map_err(|e| Error::InvalidSpec(format!("job: {e}")))
    }

    /// The most DCA rounds the job runs: a `blr` job's std and statistics rounds (and its
    /// clipped-share round), a `regression` job's ranges and statistics rounds, a `sum` job's
    /// one, a `train` job's one per iteration.
    pub fn max_rounds(&self) -> u64 {
        match self.kind {
            JobKind::Blr => 2 + u64::from(self.clipped_share.is_some()),
            JobKind::Regression => 2,
            JobKind::Sum => 1,
            JobKind::Train => self.train.as_ref().map_or(0, |t| t.iterations),
        }
    }

    /// Σ δ_t: what the truncated noise slices of all the job's verified rounds may add to δ
    /// (each round's δ_t, as asked, bounds the probability that any honest slice is
    /// truncated; 0 without a validity mode).
    pub fn truncation_delta(&self) -> f64 {
        match self.validity {
            Some(ValiditySpec::Linf { truncation_delta })
            | Some(ValiditySpec::L2 {
                truncation_delta, ..
            }) => truncation_delta * self.max_rounds() as f64,
            None => 0.0,
        }
    }

    /// The δ a fit that spent `spent` (at the noise's δ′) reports: its δ and what the job's
    /// verified rounds' truncation may add, (1 + e^ε)·Σ δ_t at its ε.
    pub fn spent_delta(&self, spent: dp_noise::PrivacyLoss) -> f64 {
        spent.delta + (1.0 + spent.epsilon.exp()) * self.truncation_delta()
    }

    /// The (ε, δ′) the job's noise is planned for: its own ε, and its δ less what its verified
    /// rounds' truncation may add. Truncated noise equals the untruncated noise except with
    /// probability Σ δ_t, so an (ε, δ′)-DP release of untruncated noise makes the truncated one
    /// (ε, δ′ + (1 + e^ε)·Σ δ_t)-DP (the bound the aggregator's accountant charges verified
    /// rounds with): δ′ = δ − (1 + e^ε)·Σ δ_t. Without a validity mode, (ε, δ) itself.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] if ε, δ are not a Gaussian budget, or if the truncation takes
    /// all of δ.
    pub fn noise_budget(&self) -> Result<dp_noise::PrivacyLoss> {
        let invalid = |m: String| Error::InvalidSpec(format!("job: {m}"));
        let truncation = (1.0 + self.epsilon.exp()) * self.truncation_delta();
        let delta = self.delta - truncation;
        if truncation > 0.0 && (delta <= 0.0 || delta.is_nan()) {
            return Err(invalid(format!(
                "the truncation of {} verified rounds, (1 + e^ε)·Σ δ_t = {truncation:e}, \
                 takes all of δ = {:e}: lower validity.truncation_delta",
                self.max_rounds(),
                self.delta
            )));
        }
        dp_noise::limits::gaussian_budget(self.epsilon, delta).map_err(|e| invalid(e.to_string()))
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
