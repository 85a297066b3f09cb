//! A data holder as a party (`dpdist participant`): it reads only its own rows, answers the
//! jobs whose roster lists its token according to its own policy, keeps its own accountant on
//! disk, computes its contribution to every round of a job it accepted from the round's public
//! rule, and sends nothing but sealed shares.
//!
//! Durability, so that a crash never makes it send two different contributions to one round or
//! pay twice:
//! - an acceptance is written to the ledger (with the job's ε) before it is sent;
//! - a round's charge is written before its shares are sealed;
//! - the sealed shares are written (all of them, then renamed into place) before the first
//!   upload, and every later attempt re-sends exactly those bytes.
//!
//! Its ledger is append-only and hash-chained, and is checked against the aggregator's record
//! of the jobs its token answered at start and before every answer (`participant_ledger`): a
//! ledger deleted or edited grants no budget. While no job names it, it waits (bounded).

pub mod ledger;
mod rows;
mod rule;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dp_noise::rng::RngSource;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use crate::protocol::job::{Answer, JobRound, JobSpec, JobState, JobStatus};
// What a participant works from: its light view of a job joined with the job's spec.
use crate::participant::ledger::{
    Entry, LedgerFile, Participation, RecordedJob, RecordedRound, people,
};
pub use crate::participant::ledger::{Ledger, LedgerJob, LedgerRound};
pub use crate::participant::rows::Rows;
use crate::participant::rule::{Expected, JobRule};
use crate::protocol::job::view::{
    HashedSpec, JoinedView as JobView, ParticipantRound, ParticipantView,
};
use crate::protocol::spec::{Round, token_hash};
use crate::secret::SecretString;
use crate::{Error, MEDIA_JSON, Result, hex};

/// What a participant agrees to (`--policy FILE`, TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The columns it may contribute (features and target); a job reading another is refused.
    pub columns: Vec<String>,
    /// The largest ε it accepts for one job.
    pub max_epsilon_per_job: f64,
    /// The most ε it spends over all the jobs it ever accepts (ε of accepted jobs add up).
    pub total_epsilon: f64,
}

impl Policy {
    /// Reads and checks a policy file.
    pub fn parse(text: &str) -> Result<Self> {
        let p: Policy =
            toml::from_str(text).map_err(|e| Error::InvalidSpec(format!("policy: {e}")))?;
        for (what, v) in [
            ("max_epsilon_per_job", p.max_epsilon_per_job),
            ("total_epsilon", p.total_epsilon),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidSpec(format!(
                    "policy: {what} = {v} must be finite and > 0"
                )));
            }
        }
        Ok(p)
    }

    /// Why this participant refuses `spec`, holding `rows` rows and having committed
    /// `committed` ε to earlier jobs; `None` if it accepts.
    pub fn refusal(&self, spec: &JobSpec, rows: usize, committed: f64) -> Option<String> {
        if let Some(c) = spec
            .features
            .iter()
            .chain([&spec.target])
            .find(|c| !self.columns.contains(&c.name))
        {
            return Some(format!(
                "the job reads column {:?}, which this participant's policy does not allow",
                c.name
            ));
        }
        if spec.epsilon > self.max_epsilon_per_job {
            return Some(format!(
                "the job's ε = {} is over this participant's max_epsilon_per_job = {}",
                people(spec.epsilon),
                people(self.max_epsilon_per_job)
            ));
        }
        if committed + spec.epsilon > self.total_epsilon * (1.0 + 1e-12) {
            return Some(format!(
                "budget exhausted: the job's ε = {} would bring this participant's total to {}, \
                 over its total_epsilon = {}",
                people(spec.epsilon),
                people(committed + spec.epsilon),
                people(self.total_epsilon)
            ));
        }
        if rows > spec.max_rows {
            return Some(format!(
                "this participant holds {rows} rows, more than the job's max_rows = {}",
                spec.max_rows
            ));
        }
        None
    }
}

/// What a participant answers to `spec`, holding `rows` under `policy`, having committed
/// `committed` ε: its policy first (columns allowed, ε, total, max_rows), then its rows (every
/// column the job reads is in them). A refusal names only what the job asked for — never a
/// column of the participant's rows the job did not ask for.
pub fn decide(policy: &Policy, rows: &Rows, spec: &JobSpec, committed: f64) -> Result<LedgerJob> {
    let refusal = policy.refusal(spec, rows.len(), committed).or_else(|| {
        spec.features
            .iter()
            .chain([&spec.target])
            .find(|c| !rows.columns().contains(&c.name))
            .map(|c| {
                format!(
                    "the job reads column {:?}, which this participant's rows do not have",
                    c.name
                )
            })
    });
    Ok(LedgerJob {
        answer: match refusal {
            None => Answer {
                accept: true,
                rows: rows.len(),
                reason: String::new(),
            },
            Some(reason) => Answer {
                accept: false,
                rows: 0,
                reason,
            },
        },
        epsilon: spec.epsilon,
        rho_budget: spec.rho()?,
        rounds: BTreeMap::new(),
        stopped: None,
        delta: Some(spec.delta),
        ended: None,
    })
}

/// Job specs by id, shared by every participant of this process. Content-addressed (a job's id
/// is its spec's SHA-256), so one participant's fetch serves all. Kept for the process's life:
/// one spec per job on the rosters of this process's participants.
static SPECS: Mutex<BTreeMap<String, HashedSpec>> = Mutex::new(BTreeMap::new());

fn lock_specs() -> std::sync::MutexGuard<'static, BTreeMap<String, HashedSpec>> {
    // A panic while the map was held cannot leave it half-changed (single inserts/removes).
    SPECS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Rounds rebuilt from their job's roster and checked against their ids, shared by every
/// participant of this process: a round is named by its config's SHA-256, so one check serves
/// all, and N participants of one process hold one O(N) copy, not N. The latest few are kept.
static ROUNDS: Mutex<VecDeque<(String, Arc<Round>)>> = Mutex::new(VecDeque::new());
const KEPT_ROUNDS: usize = 64;

/// Round `job_round`'s whole config, rebuilt from `spec`'s roster and checked against its id.
fn verified_round(job_round: &JobRound, spec: &JobSpec) -> Result<Arc<Round>> {
    // A panic while the list was held cannot leave it half-changed (single pushes and pops).
    let mut rounds = ROUNDS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, round)) = rounds.iter().find(|(id, _)| *id == job_round.id) {
        return Ok(round.clone());
    }
    // Built under the lock: participants that see a new round at once wait for one check
    // instead of each building its own copy.
    let mut round = ParticipantRound::spec_for(job_round, spec)?.validate()?;
    if round.id() != job_round.id {
        return Err(Error::Job(format!(
            "round {}: its config does not hash to its id",
            job_round.id
        )));
    }
    // `token_hashes` keeps what the checks need.
    round.drop_token_list();
    let round = Arc::new(round);
    if rounds.len() == KEPT_ROUNDS {
        rounds.pop_front();
    }
    rounds.push_back((job_round.id.clone(), round.clone()));
    Ok(round)
}

/// A running participant.
pub struct Participant {
    /// Aggregator base URL.
    pub aggregator: String,
    /// HTTPS client (trusting the deployment's CA).
    pub http: reqwest::Client,
    /// Its bearer token (its hash is what rosters list).
    pub token: SecretString,
    /// Its rows (a CSV file read in chunks whenever a round needs them, or a host's matrix).
    pub rows: Rows,
    /// Its policy.
    pub policy: Policy,
    /// Where the ledger and the sealed attempts live.
    pub state_dir: PathBuf,
    /// Draw noise and masks from a fixed seed (NON-PRIVATE: for reproducible tests only).
    pub insecure_seed: Option<u64>,
    /// How often it looks for work.
    pub poll: Duration,
    /// How long it waits, at most, for a job that names it (its token on no job's roster yet,
    /// or the job it follows not created yet) before it gives up; zero: not at all.
    pub wait_for_job: Duration,
    /// When its ledger is missing or disagrees with the aggregator's record, rebuild it from
    /// that record (charging every round of every job found there that named this
    /// participant) instead of refusing to answer.
    pub rebuild_ledger: bool,
}

/// What became of the job a participant was told to follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The job's final state (done, aborted, failed or cancelled).
    pub state: JobState,
    /// Its reason, if not done.
    pub reason: Option<String>,
    /// Whether this participant took part: it accepted, never left, and its shares are in
    /// every released round that named it — and at least one such round was released.
    pub took_part: bool,
    /// Rounds released with its shares.
    pub released_rounds: usize,
    /// Rounds it was charged for (at sealing) that were never released, and their ρ: they
    /// stay charged (the conservative rule).
    pub unreleased_rounds: usize,
    /// See `unreleased_rounds`.
    pub unreleased_rho: f64,
    /// zCDP ρ its ledger charges the job in all.
    pub rho_charged: f64,
}

impl Outcome {
    /// One line for people: how the job ended and what this participant's part in it was,
    /// releases and charges told apart.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "job {}{}; this participant {}",
            self.state,
            self.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
            if self.took_part {
                format!(
                    "took part (its shares are in {} released round{})",
                    self.released_rounds,
                    if self.released_rounds == 1 { "" } else { "s" }
                )
            } else if self.released_rounds == 0 && self.rho_charged > 0.0 {
                "did not take part: no round with its shares was released".to_string()
            } else {
                "did not take part".to_string()
            }
        );
        if self.unreleased_rounds > 0 {
            out.push_str(&format!(
                "; its ledger keeps ρ = {} charged for {} round{} it sealed shares for that \
                 {} never released (charged at sealing: the conservative rule)",
                people(self.unreleased_rho),
                self.unreleased_rounds,
                if self.unreleased_rounds == 1 { "" } else { "s" },
                if self.unreleased_rounds == 1 {
                    "was"
                } else {
                    "were"
                }
            ));
        }
        out
    }
}

/// A job's outcome for the participant whose ledger holds `entry` (if any), from the
/// aggregator's record of the job (`record`, if it holds the participant's answer).
pub fn outcome_of(
    status: &JobStatus,
    entry: Option<&LedgerJob>,
    record: Option<&RecordedJob>,
) -> Outcome {
    let rounds: &[RecordedRound] = record.map_or(&[], |r| &r.rounds);
    let released_rounds = rounds.iter().filter(|r| r.in_release).count();
    let (mut unreleased_rounds, mut unreleased_rho, mut rho_charged) = (0, 0.0, 0.0);
    if let Some(j) = entry {
        rho_charged = j.rho_charged();
        for (id, charged) in &j.rounds {
            if !rounds.iter().any(|r| r.id == *id && r.released) {
                unreleased_rounds += 1;
                unreleased_rho += charged.rho;
            }
        }
    }
    let took_part = entry.is_some_and(|j| j.answer.accept && j.stopped.is_none())
        && released_rounds > 0
        && rounds.iter().filter(|r| r.released).all(|r| r.in_release);
    Outcome {
        state: status.state,
        reason: status.reason.clone(),
        took_part,
        released_rounds,
        unreleased_rounds,
        unreleased_rho,
        rho_charged,
    }
}

/// What the aggregator answered a participant's look for work.
enum Looked {
    Jobs(Vec<JobView>),
    /// 403 (its token is on no job's roster) or 404 (the job it follows is not there): no job
    /// names it yet. The aggregator's words.
    NotNamed(String),
}

impl Participant {
    /// Follows job `only` (every job on whose roster it is, when `None`) until it ends; without
    /// `only`, runs until the process is stopped. Its ledger is checked against the
    /// aggregator's record first (and again before each answer); while no job names it, it
    /// waits, at most `wait_for_job`.
    pub async fn run(&self, only: Option<&str>) -> Result<Outcome> {
        std::fs::create_dir_all(&self.state_dir)
            .map_err(|e| io_at(e, "--state-dir", &self.state_dir))?;
        let mut wait = self.poll;
        let mut checked = false;
        let started = tokio::time::Instant::now();
        let mut said_waiting: Option<tokio::time::Instant> = None;
        loop {
            let looked = if checked {
                self.look(only).await
            } else {
                // The ledger is checked against the aggregator's record before anything else.
                match self.checked_ledger().await {
                    Ok(_) => {
                        checked = true;
                        self.look(only).await
                    }
                    Err(e) => Err(e),
                }
            };
            match looked {
                Ok(Looked::Jobs(views)) => {
                    wait = self.poll;
                    said_waiting = None;
                    for view in &views {
                        match self.handle(view).await {
                            Ok(()) => {}
                            // A ledger that cannot be trusted stops the participant: it answers
                            // nothing until the ledger is restored or rebuilt.
                            Err(e @ Error::Ledger(_)) => return Err(e),
                            Err(e) => tracing::warn!(job = %view.status.id, "{e}"),
                        }
                    }
                    if let Some(view) = views.first().filter(|_| only.is_some())
                        && !view.status.is_live()
                    {
                        let file = self.ledger_file()?;
                        let record = self.record().await;
                        let record = match record {
                            Ok(r) => r,
                            Err(e @ (Error::Http(_) | Error::Timeout(_) | Error::Io(_))) => {
                                tracing::warn!("asking the aggregator for its record: {e}");
                                tokio::time::sleep(wait).await;
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        let id = &view.status.id;
                        return Ok(outcome_of(
                            &view.status,
                            file.ledger.jobs.get(id),
                            record.iter().find(|r| r.id == *id),
                        ));
                    }
                }
                Ok(Looked::NotNamed(why)) => {
                    let waited = started.elapsed();
                    let what = match only {
                        Some(id) => {
                            format!("job {id} to be created with this participant on its roster")
                        }
                        None => "a job whose roster lists this participant's token".to_string(),
                    };
                    if waited >= self.wait_for_job {
                        return Err(Error::Job(format!(
                            "no job named this participant within {} s of waiting \
                             (--wait-for-job): the aggregator says {why}; waited for {what}",
                            self.wait_for_job.as_secs()
                        )));
                    }
                    if said_waiting.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                        tracing::info!(
                            token_sha256 = %hex::encode(&token_hash(self.token.expose())),
                            "waiting for {what} at {} ({}; giving up after {} s)",
                            self.aggregator,
                            why,
                            self.wait_for_job.saturating_sub(waited).as_secs()
                        );
                        said_waiting = Some(tokio::time::Instant::now());
                    }
                    wait = self.poll;
                }
                // The aggregator does not know this participant's token, or its ledger cannot
                // be trusted: asking again will not change that.
                Err(e @ (Error::Job(_) | Error::Ledger(_) | Error::Integrity(_))) => {
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!("asking the aggregator for jobs: {e}");
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn look(&self, only: Option<&str>) -> Result<Looked> {
        let url = match only {
            Some(id) => format!("{}/jobs/{id}", self.aggregator),
            None => format!("{}/jobs", self.aggregator),
        };
        let r = self
            .http
            .get(&url)
            .bearer_auth(self.token.expose())
            .send()
            .await?;
        let status = r.status();
        if matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND) {
            return Ok(Looked::NotNamed(format!(
                "{status}: {}",
                r.text().await.unwrap_or_default()
            )));
        }
        let polled: Vec<ParticipantView> = if only.is_some() {
            vec![checked_json(r, &url, only).await?]
        } else {
            checked_json(r, &url, only).await?
        };
        let mut views = Vec::with_capacity(polled.len());
        for view in polled {
            let spec = self.spec_of(&view.id).await?;
            views.push(view.with_spec(&spec)?);
        }
        Ok(Looked::Jobs(views))
    }

    /// Job `id`'s view joined with its spec.
    async fn view_of(&self, id: &str) -> Result<JobView> {
        match self.look(Some(id)).await? {
            Looked::Jobs(mut v) if v.len() == 1 => Ok(v.remove(0)),
            Looked::Jobs(_) => Err(Error::Job(format!("job {id}: not one view"))),
            Looked::NotNamed(why) => Err(Error::Job(format!(
                "the aggregator records this participant's answer to job {id} but does not \
                 show it the job: {why}"
            ))),
        }
    }

    /// Job `id`'s spec: fetched once (`GET /jobs/{id}/spec`) and shared by every participant
    /// of this process; a spec that does not hash to `id` is refused.
    async fn spec_of(&self, id: &str) -> Result<HashedSpec> {
        if let Some(spec) = lock_specs().get(id) {
            return Ok(spec.clone());
        }
        let url = format!("{}/jobs/{id}/spec", self.aggregator);
        let spec = HashedSpec::new(self.get_json(&url, Some(id)).await?);
        if spec.id != id {
            return Err(Error::Integrity(format!(
                "job {id}: the aggregator's spec hashes to {}",
                spec.id
            )));
        }
        lock_specs().insert(id.to_string(), spec.clone());
        Ok(spec)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        only: Option<&str>,
    ) -> Result<T> {
        let r = self
            .http
            .get(url)
            .bearer_auth(self.token.expose())
            .send()
            .await?;
        checked_json(r, url, only).await
    }

    /// The aggregator's record of the jobs this participant's token answered
    /// (`GET /participation`), checked: each job's ε and δ from its spec (whose hash is its
    /// id), each round's ρ from its config (whose hash is its id).
    pub async fn record(&self) -> Result<Vec<RecordedJob>> {
        let url = format!("{}/participation", self.aggregator);
        let recorded: Participation = self.get_json(&url, None).await?;
        let mut out = Vec::with_capacity(recorded.jobs.len());
        for job in recorded.jobs {
            let spec = self.spec_of(&job.id).await?;
            let mut rounds = Vec::with_capacity(job.rounds.len());
            if !job.rounds.is_empty() {
                let view = self.view_of(&job.id).await?;
                for r in &job.rounds {
                    let published = view
                        .status
                        .rounds
                        .iter()
                        .find(|p| p.id == r.id)
                        .ok_or_else(|| {
                            Error::Integrity(format!(
                                "job {}: the aggregator's record names round {}, which the job \
                                 does not list",
                                job.id, r.id
                            ))
                        })?;
                    let round = verified_round(published, &spec.spec)?;
                    rounds.push(RecordedRound {
                        id: r.id.clone(),
                        rho: crate::protocol::spec::round_rho(&round)?.unwrap_or(0.0),
                        released: r.released,
                        in_release: r.in_release,
                    });
                }
            }
            out.push(RecordedJob {
                id: job.id,
                state: job.state,
                answer: job.answer,
                epsilon: spec.spec.epsilon,
                delta: spec.spec.delta,
                rho_budget: spec.spec.rho()?,
                rounds,
            });
        }
        Ok(out)
    }

    fn token_sha256(&self) -> String {
        hex::encode(&token_hash(self.token.expose()))
    }

    /// The ledger, checked from end to end and against the aggregator's record (missing: made
    /// new if the aggregator records no answer of this token). Disagreement is an
    /// [`Error::Ledger`] naming the cause and the ways back, unless `rebuild_ledger` is set:
    /// then the untrusted file is kept beside (`ledger.jsonl.untrusted-<unix ms>`) and the
    /// ledger is rebuilt from the record.
    pub async fn checked_ledger(&self) -> Result<LedgerFile> {
        let record = self.record().await?;
        let me = self.token_sha256();
        let path = LedgerFile::path_in(&self.state_dir);
        let found = match LedgerFile::read(&self.state_dir) {
            Ok(Some(file)) => file.check_owner(&me).map(|_| Some(file)),
            Ok(None) => crate::participant::ledger::import_legacy(&self.state_dir, &me),
            Err(e) => Err(e),
        };
        let cause = match found {
            Ok(Some(file)) => match crate::participant::ledger::reconcile(&file.ledger, &record) {
                Ok(()) => return Ok(file),
                Err(cause) => format!(
                    "{} disagrees with the aggregator's record: {cause}",
                    path.display()
                ),
            },
            Ok(None) if record.is_empty() => return LedgerFile::create(&self.state_dir, &me),
            Ok(None) => format!(
                "{} is missing, but the aggregator records this participant's answers to {} \
                 job{} ({})",
                path.display(),
                record.len(),
                if record.len() == 1 { "" } else { "s" },
                record
                    .iter()
                    .map(|r| format!(
                        "{}: {}",
                        r.id,
                        if r.answer.accept {
                            "accepted"
                        } else {
                            "refused"
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e @ (Error::Http(_) | Error::Timeout(_))) => return Err(e),
            Err(Error::Ledger(cause)) => cause,
            Err(e) => e.to_string(),
        };
        if !self.rebuild_ledger {
            return Err(Error::Ledger(format!(
                "{cause}. This participant answers no job until its ledger can be trusted: \
                 restore {} from a backup, or start it once with \
                 --rebuild-ledger-from-aggregator, which rebuilds the ledger from the \
                 aggregator's record and charges every round of every job found there that \
                 named this participant, released or not",
                path.display()
            )));
        }
        if path.exists() {
            let aside = self.state_dir.join(format!(
                "{}.untrusted-{}",
                crate::participant::ledger::LEDGER_FILE,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            ));
            std::fs::rename(&path, &aside).map_err(|e| io_at(e, "ledger", &path))?;
            tracing::warn!("the untrusted ledger is kept as {}", aside.display());
        }
        let mut file = LedgerFile::create(&self.state_dir, &me)?;
        for entry in crate::participant::ledger::rebuild_entries(&record, &cause) {
            file.append(entry)?;
        }
        tracing::warn!(
            jobs = record.len(),
            committed_epsilon = %people(file.ledger.committed()),
            "rebuilt the ledger from the aggregator's record ({cause})"
        );
        Ok(file)
    }

    /// The ledger on disk, checked from end to end (not against the aggregator): missing is
    /// an error.
    pub fn ledger_file(&self) -> Result<LedgerFile> {
        let file = LedgerFile::read(&self.state_dir)?.ok_or_else(|| {
            Error::Ledger(format!(
                "{} is missing (it was there when this participant started). This participant \
                 answers nothing more until it is restored, or rebuilt from the aggregator's \
                 record with --rebuild-ledger-from-aggregator",
                LedgerFile::path_in(&self.state_dir).display()
            ))
        })?;
        file.check_owner(&self.token_sha256())?;
        Ok(file)
    }

    /// The ledger on disk (see [`Participant::ledger_file`]).
    pub fn ledger(&self) -> Result<Ledger> {
        Ok(self.ledger_file()?.ledger)
    }

    async fn handle(&self, view: &JobView) -> Result<()> {
        // The spec's hash was checked against the job's id when it was fetched (`spec_of`).
        let id = &view.status.id;
        let mut file = self.ledger_file()?;
        let entry = match file.ledger.jobs.get(id) {
            Some(e) => e.clone(),
            None if view.status.state == JobState::Answering => {
                // Before a new answer, the ledger is checked against the aggregator's record
                // again: a ledger deleted or edited since the start grants nothing.
                file = self.checked_ledger().await?;
                let entry = decide(
                    &self.policy,
                    &self.rows,
                    &view.spec,
                    file.ledger.committed(),
                )?;
                match &entry.answer {
                    a if a.accept => tracing::info!(job = %id, rows = a.rows, "accepting job"),
                    a => tracing::warn!(job = %id, "refusing job: {}", a.reason),
                }
                // Written before it is sent: the commitment is never forgotten.
                file.append(Entry::Answer {
                    job: id.clone(),
                    answer: entry.answer.clone(),
                    epsilon: entry.epsilon,
                    delta: entry.delta,
                    rho_budget: entry.rho_budget,
                })?;
                entry
            }
            None => return Ok(()),
        };
        if view.status.state == JobState::Answering {
            return self.send_answer(id, &entry.answer).await;
        }
        if !view.status.is_live() && entry.ended.is_none() {
            // What the job did not spend of this participant's ε comes back (Ledger::committed).
            file.append(Entry::Ended {
                job: id.clone(),
                state: view.status.state,
            })?;
            return Ok(());
        }
        if !entry.answer.accept || entry.stopped.is_some() || view.status.state != JobState::Running
        {
            return Ok(());
        }
        let me = view
            .you
            .ok_or_else(|| Error::Job("the aggregator did not say our roster place".into()))?;
        for round in &view.status.rounds {
            let Some(client) = round.clients.iter().position(|&i| i == me) else {
                continue;
            };
            if entry.rounds.get(&round.id).is_some_and(|r| r.uploaded) {
                continue;
            }
            match self.contribute(view, round, client as u64).await {
                Ok(()) => {}
                // A network or disk hiccup is tried again at the next look, and does not hold
                // up a later round (a round that closed before this participant reached it
                // stays missed: it counts as a dropout there).
                Err(e @ (Error::Http(_) | Error::Timeout(_) | Error::Io(_))) => {
                    tracing::warn!(job = %id, round = %round.id, "will try again: {e}");
                }
                Err(e @ Error::Ledger(_)) => return Err(e),
                // Anything else (a round that does not match the job, rows the round cannot
                // hold) will not change: this participant leaves the job and says why.
                Err(e) => {
                    tracing::warn!(job = %id, round = %round.id, "leaving the job: {e}");
                    self.ledger_file()?.append(Entry::Stopped {
                        job: id.clone(),
                        reason: e.to_string(),
                    })?;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    async fn send_answer(&self, id: &str, answer: &Answer) -> Result<()> {
        let r = self
            .http
            .post(format!("{}/jobs/{id}/answer", self.aggregator))
            .bearer_auth(self.token.expose())
            .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
            .body(serde_json::to_vec(answer).map_err(|e| Error::Io(std::io::Error::other(e)))?)
            .send()
            .await?;
        match r.status() {
            StatusCode::OK => Ok(()),
            // The answering window closed meanwhile: the job goes on without us.
            StatusCode::CONFLICT => Ok(()),
            s => Err(Error::Http(format!(
                "answering job {id}: {s}: {}",
                r.text().await.unwrap_or_default()
            ))),
        }
    }

    /// Checks round `round` against the job this participant accepted, pays for it, seals
    /// (or reloads) its shares and uploads them.
    async fn contribute(&self, view: &JobView, job_round: &JobRound, client: u64) -> Result<()> {
        let spec = &view.spec;
        let round = verified_round(job_round, spec)?;
        let rule = JobRule::parse(spec, job_round)?;
        check_round(
            spec,
            &round,
            &rule.expected(spec)?,
            job_round,
            client,
            &self.token,
            view.nodes.len(),
            &view.status.node_keys,
        )?;
        rule.check_budget(spec, &round)?;
        let rho = crate::protocol::spec::round_rho(&round)?.ok_or_else(|| {
            Error::Job("round has no noise: NON-PRIVATE, this participant does not join".into())
        })?;
        let id = &view.status.id;
        let mut file = self.ledger_file()?;
        let job = file
            .ledger
            .jobs
            .get(id)
            .ok_or_else(|| Error::Job(format!("job {id} is not in the ledger")))?;
        if !job.rounds.contains_key(&job_round.id) {
            let used = job.rho_charged();
            if used + rho > job.rho_budget * (1.0 + 1e-9) {
                return Err(Error::Job(format!(
                    "round {} would bring the job's spending of this participant's data to \
                     zCDP ρ = {}, over the ρ = {} of the ε = {} it accepted",
                    job_round.id,
                    people(used + rho),
                    people(job.rho_budget),
                    people(job.epsilon)
                )));
            }
            // Paid before anything is sealed: a release it cannot stop is always on the books.
            file.append(Entry::Charge {
                job: id.clone(),
                round: job_round.id.clone(),
                rho,
            })?;
        }
        let sealed = match self.load_attempt(&job_round.id, round.node_keys.len())? {
            Some(sealed) => sealed,
            None => {
                let (rng, sampling) = rule.rngs(self.insecure_seed, job_round.step, client);
                let values = self.contribution(spec, &rule, sampling)?;
                let sealed = crate::protocol::upload::seal_shares(&round, client, &values, rng)?;
                self.save_attempt(&job_round.id, &sealed)?;
                sealed
            }
        };
        crate::protocol::upload::upload_shares(
            &self.http,
            &round,
            &view.nodes,
            client,
            self.token.expose(),
            &sealed,
        )
        .await?;
        self.ledger_file()?.append(Entry::Uploaded {
            job: id.clone(),
            round: job_round.id.clone(),
        })?;
        tracing::info!(job = %id, round = %job_round.id, step = job_round.step, "uploaded");
        Ok(())
    }

    /// This participant's vector under `rule`: its rows in chunks (bounded memory for a file),
    /// each mapped from the job's public ranges onto ±5 (a `regression` job's design maps the
    /// rows as they are itself), then summed as `rule` says — for `blr` and `regression`, the
    /// same numbers as `rule.client_vector` over all its rows at once; for `train` and `sum`,
    /// see `participant_train`.
    fn contribution(
        &self,
        spec: &JobSpec,
        rule: &JobRule,
        sampling: RngSource,
    ) -> Result<Vec<f64>> {
        let schema = blr::data::CsvSchema {
            x: spec.features.iter().map(|c| c.name.clone()).collect(),
            y: spec.target.name.clone(),
        };
        let chunk_rows = blr::silo::csv_chunk_rows(schema.x.len());
        let bounds = spec.public_bounds();
        let target = std::slice::from_ref(&spec.target.name);
        let mut sum = rule.accumulator(spec, sampling)?;
        let raw = rule.reads_raw_rows();
        self.rows.for_each_chunk(&schema, chunk_rows, |x, y| {
            if !raw {
                bounds
                    .scale(x, &schema.x, 5.0)
                    .and_then(|_| bounds.scale(y, target, 5.0))
                    .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
            }
            sum.push_rows(x, y)
        })?;
        sum.finish()
    }

    fn attempt_dir(&self, round: &str) -> PathBuf {
        self.state_dir.join("attempts").join(round)
    }

    fn load_attempt(&self, round: &str, nodes: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let dir = self.attempt_dir(round);
        if !dir.exists() {
            return Ok(None);
        }
        (0..nodes)
            .map(|k| {
                let path = dir.join(format!("node-{k}.sealed"));
                std::fs::read(&path).map_err(|e| io_at(e, "sealed share", &path))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// All shares into a temporary directory, synced, then renamed into place: the attempt is
    /// on disk whole or not at all.
    fn save_attempt(&self, round: &str, sealed: &[Vec<u8>]) -> Result<()> {
        let parent = self.state_dir.join("attempts");
        std::fs::create_dir_all(&parent).map_err(|e| io_at(e, "--state-dir", &parent))?;
        let tmp = parent.join(format!("{round}.tmp"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| io_at(e, "--state-dir", &tmp))?;
        for (k, bytes) in sealed.iter().enumerate() {
            write_durably(&tmp, &format!("node-{k}.sealed"), bytes)?;
        }
        let dir = self.attempt_dir(round);
        std::fs::rename(&tmp, &dir).map_err(|e| io_at(e, "--state-dir", &dir))?;
        sync_dir(&parent)
    }
}

/// Checks a participant's data file from end to end (a header naming the columns, a number in
/// every cell of every row) in chunks, before it answers any job; its column names and rows.
pub fn check_data(path: &Path) -> Result<(Vec<String>, usize)> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| io_at(e, "--data", path))?;
    let mut header = String::new();
    std::io::BufReader::new(file)
        .read_line(&mut header)
        .map_err(|e| io_at(e, "--data", path))?;
    let columns: Vec<String> = header
        .trim_end_matches(['\r', '\n'])
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    let (y, x) = columns
        .split_last()
        .ok_or_else(|| Error::InvalidSpec(format!("--data {}: no header", path.display())))?;
    let schema = blr::data::CsvSchema {
        x: x.to_vec(),
        y: y.clone(),
    };
    let mut chunks = blr::data::CsvChunks::open(path, &schema, 1 << 14)?;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    while chunks.next_chunk(&mut xs, &mut ys)? > 0 {}
    if chunks.rows() == 0 {
        return Err(Error::InvalidSpec(format!(
            "--data {}: no data rows",
            path.display()
        )));
    }
    Ok((columns, chunks.rows()))
}

/// Everything a participant checks before it joins a round, beyond its id ([`verified_round`]
/// made `round` from the job's roster and checked it against `job_round`'s id): that it is a
/// round of the job it accepted (its T, its nodes, its share mode, this participant's token in
/// its place), that the rule is one of the learner's with the job's columns, and that the
/// round's noise is calibrated for the rule's sensitivity.
#[allow(clippy::too_many_arguments)]
fn check_round(
    spec: &JobSpec,
    round: &Round,
    rule: &Expected,
    job_round: &JobRound,
    client: u64,
    token: &SecretString,
    nodes: usize,
    node_keys: &[String],
) -> Result<()> {
    let refuse = |m: String| Err(Error::Job(format!("round {}: {m}", job_round.id)));
    let s = &round.spec;
    if s.max_dropped != spec.max_dropped
        || s.mode != spec.mode
        || s.n_clients != job_round.clients.len()
        || s.dim != rule.dim
        || s.node_keys.len() != nodes
        || s.bound < rule.record_bound
    {
        return refuse(
            "its T, share mode, clients, dimension, nodes or bound differ from the job's".into(),
        );
    }
    if s.noise_sigma_total.is_none() || s.l2_sensitivity != Some(rule.l2_sensitivity) {
        return refuse(
            "its noise is not calibrated for the sensitivity of its rule (NON-PRIVATE)".into(),
        );
    }
    if s.node_keys != node_keys {
        return refuse("its node keys are not the job's".into());
    }
    if round.token_hashes.get(client as usize) != Some(&token_hash(token.expose())) {
        return refuse("this participant's token is not in its place".into());
    }
    Ok(())
}

/// The JSON body of a response to a participant's request of `url`; 401, 403 and 404 are the
/// aggregator not showing this participant what it asked for.
async fn checked_json<T: serde::de::DeserializeOwned>(
    r: reqwest::Response,
    url: &str,
    only: Option<&str>,
) -> Result<T> {
    let status = r.status();
    if matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
    ) {
        let what = only.map_or_else(|| url.to_string(), |id| format!("job {id}"));
        return Err(Error::Job(format!(
            "the aggregator refused to show this participant {what}: {status}: {}",
            r.text().await.unwrap_or_default()
        )));
    }
    if !status.is_success() {
        return Err(Error::Http(format!(
            "{status}: {}",
            r.text().await.unwrap_or_default()
        )));
    }
    Ok(r.json().await?)
}

fn io_at(e: std::io::Error, what: &str, path: &Path) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// Writes `dir/name` through a temporary file, fsyncs it, renames it into place and fsyncs
/// the directory.
fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_at(e, "state file", &tmp))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| io_at(e, "state file", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_at(e, "state file", &path))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_at(e, "state directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex;
    use crate::protocol::job::{ColumnBounds, JobKind};

    fn spec() -> JobSpec {
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
            max_rows: 10,
            answer_window_ms: 1000,
            upload_window_ms: 1000,
            created_unix_ms: 1,
            public_seed: None,
            clipped_share: None,
            train: None,
        }
    }

    fn ledger_job(epsilon: f64, rounds: &[f64], ended: Option<JobState>) -> LedgerJob {
        LedgerJob {
            answer: Answer {
                accept: true,
                rows: 1,
                reason: String::new(),
            },
            epsilon,
            rho_budget: 1.0,
            rounds: rounds
                .iter()
                .enumerate()
                .map(|(i, &rho)| {
                    let round = LedgerRound {
                        rho,
                        uploaded: true,
                    };
                    (format!("r{i}"), round)
                })
                .collect(),
            stopped: None,
            delta: Some(1e-5),
            ended,
        }
    }

    /// A job under way holds its whole ε; an ended one what its rounds were charged, as ε at its
    /// δ; one that ended before any round, nothing. Expected values by hand:
    /// ρ = 0.01 + 0.02 = 0.03, δ = 1e-5: ε = 0.03 + 2·sqrt(0.03·ln(1e5)) = 0.03 + 2·sqrt(0.345388)
    /// = 0.03 + 2·0.587697 = 1.205394.
    #[test]
    fn an_ended_job_gives_back_what_it_did_not_spend() {
        let mut ledger = Ledger::default();
        ledger
            .jobs
            .insert("live".into(), ledger_job(2.0, &[0.01], None));
        ledger.jobs.insert(
            "aborted".into(),
            ledger_job(2.0, &[], Some(JobState::Aborted)),
        );
        ledger.jobs.insert(
            "done".into(),
            ledger_job(2.0, &[0.01, 0.02], Some(JobState::Done)),
        );
        let done = ledger.jobs["done"].committed();
        assert!((done - 1.205394).abs() < 1e-6, "{done}");
        assert_eq!(ledger.jobs["aborted"].committed(), 0.0);
        assert_eq!(ledger.jobs["live"].committed(), 2.0);
        assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
        // Never more than the job's own ε, and a ledger without δ counts the whole ε.
        let big = ledger_job(1.0, &[0.5], Some(JobState::Done));
        assert_eq!(big.committed(), 1.0);
        let old = LedgerJob {
            delta: None,
            ..ledger_job(2.0, &[], Some(JobState::Aborted))
        };
        assert_eq!(old.committed(), 2.0);
        // A refused job holds nothing.
        let mut refused = ledger_job(2.0, &[], None);
        refused.answer.accept = false;
        ledger.jobs.insert("refused".into(), refused);
        assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
    }

    /// Issue 41, item 5: the policy is checked before the rows, and a refusal (which the
    /// analyst reads) names only what the job asked for, never the other columns of the rows.
    #[test]
    fn a_refusal_names_only_the_columns_the_job_asked_for() {
        let policy = Policy::parse(
            "columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n",
        )
        .unwrap();
        let names = ["a", "diagnosis_code", "y"].map(String::from).to_vec();
        let rows = Rows::memory(names, vec![0.1, 3.0, 1.0]).unwrap();
        assert!(decide(&policy, &rows, &spec(), 0.0).unwrap().answer.accept);
        let mut asks = spec();
        asks.features[0].name = "b".into();
        let reason = decide(&policy, &rows, &asks, 0.0).unwrap().answer.reason;
        assert!(
            reason.contains("policy does not allow") && reason.contains("\"b\""),
            "{reason}"
        );
        assert!(!reason.contains("diagnosis_code"), "{reason}");
        // Allowed by the policy, but not in the rows: still only the asked column is named.
        let allowing = Policy {
            columns: vec!["a".into(), "b".into(), "y".into()],
            ..policy
        };
        let reason = decide(&allowing, &rows, &asks, 0.0).unwrap().answer.reason;
        assert!(
            reason.contains("rows do not have") && reason.contains("\"b\""),
            "{reason}"
        );
        assert!(!reason.contains("diagnosis_code"), "{reason}");
    }

    /// Issue 41, item 8: the numbers of a refusal are rounded for people.
    #[test]
    fn a_refusal_rounds_its_numbers_for_people() {
        let policy = Policy::parse(
            "columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n",
        )
        .unwrap();
        let why = policy.refusal(&spec(), 1, 8.49999999624691).unwrap();
        assert!(
            why.contains("total to 9.5,") && !why.contains("9.4999"),
            "{why}"
        );
    }

    /// Issue 41, item 6: a job cancelled before the round this participant sealed for was
    /// released: it did not take part, and the round stays charged; a job released with its
    /// shares: it took part.
    #[test]
    fn took_part_means_a_released_round_holds_its_shares() {
        let status = |state: JobState| JobStatus {
            state,
            ..JobStatus::default()
        };
        let entry = ledger_job(1.0, &[0.01], Some(JobState::Cancelled));
        let record = |released: bool| RecordedJob {
            id: "j".into(),
            state: JobState::Cancelled,
            answer: entry.answer.clone(),
            epsilon: 1.0,
            delta: 1e-5,
            rho_budget: 1.0,
            rounds: vec![RecordedRound {
                id: "r0".into(),
                rho: 0.01,
                released,
                in_release: released,
            }],
        };
        let cancelled = outcome_of(
            &status(JobState::Cancelled),
            Some(&entry),
            Some(&record(false)),
        );
        assert!(!cancelled.took_part);
        assert_eq!(
            (cancelled.released_rounds, cancelled.unreleased_rounds),
            (0, 1)
        );
        let said = cancelled.describe();
        assert!(
            said.contains("did not take part") && said.contains("charged at sealing"),
            "{said}"
        );
        let done = outcome_of(&status(JobState::Done), Some(&entry), Some(&record(true)));
        assert!(done.took_part && done.unreleased_rounds == 0, "{done:?}");
        assert!(done.describe().contains("this participant took part"));
    }

    #[test]
    fn the_policy_refuses_columns_epsilon_total_and_rows_beyond_it() {
        let policy = Policy::parse(
            "columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n",
        )
        .unwrap();
        assert_eq!(policy.refusal(&spec(), 10, 0.0), None);
        assert_eq!(policy.refusal(&spec(), 10, 1.5), None);
        let total = policy.refusal(&spec(), 10, 2.0).unwrap();
        assert!(
            total.contains("budget exhausted") && total.contains("3"),
            "{total}"
        );
        let eps = policy
            .refusal(
                &JobSpec {
                    epsilon: 1.5,
                    ..spec()
                },
                1,
                0.0,
            )
            .unwrap();
        assert!(eps.contains("max_epsilon_per_job"), "{eps}");
        let mut other = spec();
        other.features[0].name = "b".into();
        assert!(policy.refusal(&other, 1, 0.0).unwrap().contains("\"b\""));
        assert!(
            policy
                .refusal(&spec(), 11, 0.0)
                .unwrap()
                .contains("max_rows")
        );
        for bad in [
            "columns = []\nmax_epsilon_per_job = 0\ntotal_epsilon = 1\n",
            "columns = []\nmax_epsilon_per_job = 1\n",
            "columns = []\nmax_epsilon_per_job = 1\ntotal_epsilon = 1\nextra = 2\n",
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad}");
        }
    }
}
