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

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dp_noise::rng::RngSource;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use crate::job::{Answer, JobRound, JobSpec};
// What a participant works from: its light view of a job joined with the job's spec.
use crate::job_view::{HashedSpec, JoinedView as JobView, ParticipantRound, ParticipantView};
pub use crate::participant_rows::Rows;
use crate::participant_train::{Expected, JobRule};
use crate::secret::SecretString;
use crate::spec::{Round, token_hash};
use crate::{Error, MEDIA_JSON, Result};

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
                spec.epsilon, self.max_epsilon_per_job
            ));
        }
        if committed + spec.epsilon > self.total_epsilon * (1.0 + 1e-12) {
            return Some(format!(
                "budget exhausted: the job's ε = {} would bring this participant's total to {}, \
                 over its total_epsilon = {}",
                spec.epsilon,
                committed + spec.epsilon,
                self.total_epsilon
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

/// The participant's record of what it agreed to and paid, on disk (`ledger.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// By job id.
    pub jobs: BTreeMap<String, LedgerJob>,
}

/// One job in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerJob {
    /// The answer given.
    pub answer: Answer,
    /// The job's ε (committed when accepted).
    pub epsilon: f64,
    /// zCDP ρ the job may spend of this participant's data (from its (ε, δ)).
    pub rho_budget: f64,
    /// Rounds joined, by round id.
    pub rounds: BTreeMap<String, LedgerRound>,
    /// Why this participant stopped taking part, if it did.
    #[serde(default)]
    pub stopped: Option<String>,
    /// The job's δ (absent in ledgers written before it was recorded).
    #[serde(default)]
    pub delta: Option<f64>,
    /// How the job ended ("done", "aborted", "cancelled"), once this participant saw it end.
    #[serde(default)]
    pub ended: Option<String>,
}

/// One round in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRound {
    /// Its charge (zCDP ρ).
    pub rho: f64,
    /// Every node has its share.
    pub uploaded: bool,
}

impl Ledger {
    /// ε committed to accepted jobs.
    ///
    /// A job still under way counts with its whole ε, whatever it has spent so far. A job that
    /// ended (done, aborted, cancelled) counts with what its rounds were charged: ε of their
    /// summed zCDP ρ at the job's δ (ρ + 2 sqrt(ρ ln(1/δ)), Bun–Steinke 2016 Prop. 1.3), never
    /// more than its ε — so a job aborted before its first round gives its ε back. A ledger
    /// written before jobs recorded their δ counts every job at its whole ε.
    pub fn committed(&self) -> f64 {
        self.jobs
            .values()
            .filter(|j| j.answer.accept)
            .map(LedgerJob::committed)
            .sum()
    }
}

impl LedgerJob {
    /// The ε this job holds of the participant's total (see [`Ledger::committed`]).
    pub fn committed(&self) -> f64 {
        let (Some(_), Some(delta)) = (&self.ended, self.delta) else {
            return self.epsilon;
        };
        let rho: f64 = self.rounds.values().map(|r| r.rho).sum();
        if rho <= 0.0 {
            return 0.0;
        }
        dp_noise::accountant::zcdp_to_approx(rho, delta)
            .map_or(self.epsilon, |loss| loss.epsilon.min(self.epsilon))
    }
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
}

/// What became of the job a participant was told to follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The job's final state ("done", "aborted", "cancelled").
    pub state: String,
    /// Its reason, if not done.
    pub reason: Option<String>,
    /// Whether this participant took part.
    pub took_part: bool,
}

impl Participant {
    /// Follows job `only` (every job on whose roster it is, when `None`) until it ends; without
    /// `only`, runs until the process is stopped.
    pub async fn run(&self, only: Option<&str>) -> Result<Outcome> {
        std::fs::create_dir_all(&self.state_dir)
            .map_err(|e| io_at(e, "--state-dir", &self.state_dir))?;
        let mut wait = self.poll;
        loop {
            match self.views(only).await {
                Ok(views) => {
                    wait = self.poll;
                    for view in &views {
                        if let Err(e) = self.handle(view).await {
                            tracing::warn!(job = %view.status.id, "{e}");
                        }
                    }
                    if let Some(view) = views.first().filter(|_| only.is_some())
                        && !view.status.is_live()
                    {
                        let ledger = self.ledger()?;
                        let mine = view.you.unwrap_or(usize::MAX);
                        // Took part: accepted, never left, and every round it was a client of
                        // has its shares.
                        let took_part = ledger.jobs.get(&view.status.id).is_some_and(|j| {
                            let mut joined = view
                                .status
                                .rounds
                                .iter()
                                .filter(|r| r.clients.contains(&mine))
                                .peekable();
                            // A job that ran no round with it (aborted while answering) did not
                            // have it take part.
                            j.answer.accept
                                && j.stopped.is_none()
                                && joined.peek().is_some()
                                && joined.all(|r| j.rounds.get(&r.id).is_some_and(|l| l.uploaded))
                        });
                        return Ok(Outcome {
                            state: view.status.state.clone(),
                            reason: view.status.reason.clone(),
                            took_part,
                        });
                    }
                }
                // The aggregator does not know the job or this participant's token: asking
                // again will not change that.
                Err(e @ Error::Job(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!("asking the aggregator for jobs: {e}");
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn views(&self, only: Option<&str>) -> Result<Vec<JobView>> {
        let url = match only {
            Some(id) => format!("{}/jobs/{id}", self.aggregator),
            None => format!("{}/jobs", self.aggregator),
        };
        let polled: Vec<ParticipantView> = if only.is_some() {
            vec![self.get_json(&url, only).await?]
        } else {
            self.get_json(&url, only).await?
        };
        let mut views = Vec::with_capacity(polled.len());
        for view in polled {
            let spec = self.spec_of(&view.id).await?;
            views.push(view.with_spec(&spec)?);
        }
        Ok(views)
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
        let status = r.status();
        if matches!(
            status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
        ) {
            let what = only.map_or("its jobs".to_string(), |id| format!("job {id}"));
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

    async fn handle(&self, view: &JobView) -> Result<()> {
        // The spec's hash was checked against the job's id when it was fetched (`spec_of`).
        let id = &view.status.id;
        let mut ledger = self.ledger()?;
        let entry = match ledger.jobs.get(id) {
            Some(e) => e.clone(),
            None if view.status.state == "answering" => {
                let entry = self.decide(&view.spec, &ledger)?;
                match &entry.answer {
                    a if a.accept => tracing::info!(job = %id, rows = a.rows, "accepting job"),
                    a => tracing::warn!(job = %id, "refusing job: {}", a.reason),
                }
                // Written before it is sent: the commitment is never forgotten.
                ledger.jobs.insert(id.clone(), entry.clone());
                self.save(&ledger)?;
                entry
            }
            None => return Ok(()),
        };
        if view.status.state == "answering" {
            return self.send_answer(id, &entry.answer).await;
        }
        if !view.status.is_live() && entry.ended.is_none() {
            // What the job did not spend of this participant's ε comes back (Ledger::committed).
            if let Some(j) = ledger.jobs.get_mut(id) {
                j.ended = Some(view.status.state.clone());
            }
            self.save(&ledger)?;
            return Ok(());
        }
        if !entry.answer.accept || entry.stopped.is_some() || view.status.state != "running" {
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
                // Anything else (a round that does not match the job, rows the round cannot
                // hold) will not change: this participant leaves the job and says why.
                Err(e) => {
                    tracing::warn!(job = %id, round = %round.id, "leaving the job: {e}");
                    let mut ledger = self.ledger()?;
                    if let Some(j) = ledger.jobs.get_mut(id) {
                        j.stopped = Some(e.to_string());
                    }
                    self.save(&ledger)?;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn decide(&self, spec: &JobSpec, ledger: &Ledger) -> Result<LedgerJob> {
        let missing = spec
            .features
            .iter()
            .chain([&spec.target])
            .find(|c| !self.rows.columns().contains(&c.name));
        let refusal = match missing {
            Some(c) => Some(format!(
                "the job reads column {:?}, which this participant's rows do not have (they \
                 have {})",
                c.name,
                self.rows.columns().join(", ")
            )),
            None => self
                .policy
                .refusal(spec, self.rows.len(), ledger.committed()),
        };
        Ok(LedgerJob {
            answer: match refusal {
                None => Answer {
                    accept: true,
                    rows: self.rows.len(),
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
        let rho = crate::spec::round_rho(&round)?.ok_or_else(|| {
            Error::Job("round has no noise: NON-PRIVATE, this participant does not join".into())
        })?;
        let id = &view.status.id;
        let mut ledger = self.ledger()?;
        let job = ledger
            .jobs
            .get_mut(id)
            .ok_or_else(|| Error::Job(format!("job {id} is not in the ledger")))?;
        if !job.rounds.contains_key(&job_round.id) {
            let used: f64 = job.rounds.values().map(|r| r.rho).sum();
            if used + rho > job.rho_budget * (1.0 + 1e-9) {
                return Err(Error::Job(format!(
                    "round {} would bring the job's spending of this participant's data to \
                     zCDP ρ = {}, over the ρ = {} of the ε = {} it accepted",
                    job_round.id,
                    used + rho,
                    job.rho_budget,
                    job.epsilon
                )));
            }
            // Paid before anything is sealed: a release it cannot stop is always on the books.
            job.rounds.insert(
                job_round.id.clone(),
                LedgerRound {
                    rho,
                    uploaded: false,
                },
            );
            self.save(&ledger)?;
        }
        let sealed = match self.load_attempt(&job_round.id, round.node_keys.len())? {
            Some(sealed) => sealed,
            None => {
                let (rng, sampling) = rule.rngs(self.insecure_seed, job_round.step, client);
                let values = self.contribution(spec, &rule, sampling)?;
                let sealed = crate::client::seal_shares(&round, client, &values, rng)?;
                self.save_attempt(&job_round.id, &sealed)?;
                sealed
            }
        };
        crate::client::upload_shares(
            &self.http,
            &round,
            &view.nodes,
            client,
            self.token.expose(),
            &sealed,
        )
        .await?;
        let mut ledger = self.ledger()?;
        if let Some(r) = ledger
            .jobs
            .get_mut(id)
            .and_then(|j| j.rounds.get_mut(&job_round.id))
        {
            r.uploaded = true;
        }
        self.save(&ledger)?;
        tracing::info!(job = %id, round = %job_round.id, step = job_round.step, "uploaded");
        Ok(())
    }

    /// This participant's vector under `rule`: its rows in chunks (bounded memory for a file),
    /// each mapped from the job's public ranges onto ±5, then summed as `rule` says — for
    /// `blr`, the same numbers as `rule.client_vector` over all its rows at once; for `train`
    /// and `sum`, see `participant_train`.
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
        self.rows.for_each_chunk(&schema, chunk_rows, |x, y| {
            bounds
                .scale(x, &schema.x, 5.0)
                .and_then(|_| bounds.scale(y, target, 5.0))
                .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
            sum.push_rows(x, y)
        })?;
        sum.finish()
    }

    fn ledger_path(&self) -> PathBuf {
        self.state_dir.join("ledger.json")
    }

    /// The ledger on disk (empty if there is none yet).
    pub fn ledger(&self) -> Result<Ledger> {
        let path = self.ledger_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| Error::Integrity(format!("ledger {}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ledger::default()),
            Err(e) => Err(io_at(e, "ledger", &path)),
        }
    }

    fn save(&self, ledger: &Ledger) -> Result<()> {
        let bytes =
            serde_json::to_vec_pretty(ledger).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        write_durably(&self.state_dir, "ledger.json", &bytes)
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
    use crate::job::ColumnBounds;

    fn spec() -> JobSpec {
        JobSpec {
            kind: "blr".into(),
            target: ColumnBounds {
                name: "y".into(),
                lo: 0.0,
                hi: 10.0,
            },
            features: vec![ColumnBounds {
                name: "a".into(),
                lo: -1.0,
                hi: 1.0,
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

    fn ledger_job(epsilon: f64, rounds: &[f64], ended: Option<&str>) -> LedgerJob {
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
            ended: ended.map(str::to_string),
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
        ledger
            .jobs
            .insert("aborted".into(), ledger_job(2.0, &[], Some("aborted")));
        ledger
            .jobs
            .insert("done".into(), ledger_job(2.0, &[0.01, 0.02], Some("done")));
        let done = ledger.jobs["done"].committed();
        assert!((done - 1.205394).abs() < 1e-6, "{done}");
        assert_eq!(ledger.jobs["aborted"].committed(), 0.0);
        assert_eq!(ledger.jobs["live"].committed(), 2.0);
        assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
        // Never more than the job's own ε, and a ledger without δ counts the whole ε.
        let big = ledger_job(1.0, &[0.5], Some("done"));
        assert_eq!(big.committed(), 1.0);
        let old = LedgerJob {
            delta: None,
            ..ledger_job(2.0, &[], Some("aborted"))
        };
        assert_eq!(old.committed(), 2.0);
        // A refused job holds nothing.
        let mut refused = ledger_job(2.0, &[], None);
        refused.answer.accept = false;
        ledger.jobs.insert("refused".into(), refused);
        assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
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
