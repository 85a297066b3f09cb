//! The aggregator: creates rounds on the nodes, decides the agreed client set, collects the M
//! node sums, releases once, and charges its privacy accountant. Its store (SQLite, or a
//! PostgreSQL database that several aggregator processes share) records every round's fate
//! (aborted / released, with the release) and every charge, so that neither a restart nor a
//! second process releases twice or forgets what was spent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition, RoundCost};
use fixedpoint_shares::{
    Aggregator as SumAggregator, Decode, Encode, Release, ShardSet, agree, wire,
};
use reqwest::StatusCode;
use serde::Serialize;

pub use crate::aggregator::store::{AggregatorPgLocation, AggregatorStoreLocation};
use crate::aggregator::store::{AggregatorStore, JobWrite, LeaseTaken};
pub use crate::aggregator::store::{RoundPhase, RoundState};
use crate::clock::{Clock, SystemClock};
use crate::protocol::job::view::{ParticipantView, SharedParticipantView};
use crate::protocol::messages::{AbortRequest, RoundStatus};
use crate::protocol::spec::{Round, RoundSpec, decode_round_config, legacy_json_round_id};
use crate::protocol::sum_codec;
use crate::secret::SecretString;
use crate::{Error, MEDIA_JSON, MEDIA_PAIR_SET, MEDIA_ROUND_CONFIG, Result};

/// Polls of a node sum that answers 202 before giving up.
const SUM_POLLS: u32 = 600;

/// Times a job's status change is tried when another writer changed the job between its read
/// and its write ([`Aggregator::update_job`]).
pub const JOB_CHANGE_ATTEMPTS: u32 = 16;

/// How long a round's release lease lasts between renewals unless set otherwise
/// ([`Aggregator::with_release_lease`], `dpdist aggregator --release-lease-ms`).
pub const DEFAULT_RELEASE_LEASE: Duration = Duration::from_secs(30);

/// How long a job's driver lease lasts between renewals unless set otherwise
/// ([`Aggregator::with_job_lease`], `dpdist aggregator --job-lease-ms`).
pub const DEFAULT_JOB_LEASE: Duration = Duration::from_secs(30);

pub use crate::protocol::messages::PublishedRelease;

pub mod jobs;
mod rounds;
pub mod server;
pub(crate) mod store;
pub use crate::protocol::spec::round_rho;

/// The aggregator of one deployment.
pub struct Aggregator {
    http: reqwest::Client,
    nodes: Vec<String>,
    admin_token: SecretString,
    /// The accountant's state is the charges recorded here: each charge is checked against
    /// them in the transaction that records it, so processes sharing the store charge one at a
    /// time and never overspend between them.
    store: AggregatorStore,
    budget: PrivacyLoss,
    /// Held around a job status's read-change-write.
    job_lock: Mutex<()>,
    /// Each job's participant view, built once per status change and shared by every poll.
    participant_views: Mutex<HashMap<String, CachedView>>,
    clock: Arc<dyn Clock>,
    /// Who this aggregator is when it holds a round's release lease: its process id (so that
    /// an operator can tell which process holds it) and random bytes (so that no other
    /// aggregator, here or in another process, ever has the same name).
    holder: String,
    release_lease: Duration,
    /// The live rounds (created, closing, aborting) as read and checked once: a round's config
    /// never changes under its id (the id is its SHA-256), so a polling pass reads only the
    /// live rounds' ids and states, and a round's 32 bytes per client once per process.
    live_rounds: Mutex<HashMap<String, Arc<Round>>>,
    /// How long this aggregator holds a job's driver lease between renewals.
    job_lease: Duration,
}

impl Aggregator {
    /// Opens (or creates) the aggregator's SQLite database and checks its charges against
    /// `budget`.
    pub fn open(
        db_path: &Path,
        http: reqwest::Client,
        nodes: Vec<String>,
        admin_token: impl Into<SecretString>,
        budget: PrivacyLoss,
    ) -> Result<Self> {
        Self::open_at(
            &AggregatorStoreLocation::Sqlite(db_path.to_path_buf()),
            http,
            nodes,
            admin_token,
            budget,
        )
    }

    /// Opens (or creates) the aggregator's store at `at` and checks its charges against
    /// `budget`.
    pub fn open_at(
        at: &AggregatorStoreLocation,
        http: reqwest::Client,
        nodes: Vec<String>,
        admin_token: impl Into<SecretString>,
        budget: PrivacyLoss,
    ) -> Result<Self> {
        let store = AggregatorStore::open(at)?;
        replay(budget, &store.charges()?)?;
        Ok(Aggregator {
            budget,
            job_lock: Mutex::new(()),
            participant_views: Mutex::new(HashMap::new()),
            live_rounds: Mutex::new(HashMap::new()),
            http,
            nodes,
            admin_token: admin_token.into(),
            store,
            clock: Arc::new(SystemClock),
            holder: lease_holder(),
            release_lease: DEFAULT_RELEASE_LEASE,
            job_lease: DEFAULT_JOB_LEASE,
        })
    }

    /// The count and time of the store's transactions, by name (for `/metrics`).
    pub(crate) fn store_transactions(&self) -> crate::http::metrics::TxMetrics {
        self.store.transaction_metrics()
    }

    /// The same aggregator deciding deadlines and lease expiries by `clock`.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Aggregator { clock, ..self }
    }

    /// The same aggregator holding a round's release lease for `lease` between renewals: if
    /// it dies while it releases a round, another aggregator on the same store takes the
    /// round over that long after its last renewal.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a lease under 300 ms (renewed every third of it, it would
    /// expire between renewals on a busy machine).
    pub fn with_release_lease(self, lease: Duration) -> Result<Self> {
        if lease < Duration::from_millis(300) {
            return Err(Error::InvalidSpec(format!(
                "release lease of {} ms: it must be at least 300 ms",
                lease.as_millis()
            )));
        }
        Ok(Aggregator {
            release_lease: lease,
            ..self
        })
    }

    /// The node base URLs, in node order.
    pub fn node_urls(&self) -> &[String] {
        &self.nodes
    }

    /// Privacy spent so far, as recorded (by every process sharing the store); all of it if
    /// the charges cannot be read.
    pub fn spent(&self) -> PrivacyLoss {
        self.store
            .charges()
            .and_then(|charges| replay(self.budget, &charges))
            .map_or(
                PrivacyLoss {
                    epsilon: f64::INFINITY,
                    delta: 1.0,
                },
                |a| a.spent(),
            )
    }

    /// Records job `spec` and reserves its whole budget (zCDP ρ from its (ε, δ)) at once: a
    /// job the budget cannot pay for in full is refused before any of its rounds runs. This
    /// aggregator holds the new job's driver lease from the start. The job's id and whether it
    /// is new (creating it again changes nothing).
    pub fn create_job(
        &self,
        spec: &crate::protocol::job::JobSpec,
        status: &[u8],
    ) -> Result<(String, bool)> {
        spec.validate()?;
        let id = spec.id();
        if let Some((stored, _)) = self.store.job(&id)? {
            if stored != spec.canonical_json() {
                return Err(Error::Integrity(format!("job {id}'s recorded spec")));
            }
            return Ok((id, false));
        }
        let rho = spec.rho()?;
        let cost = RoundCost::zcdp(rho).map_err(Error::Budget)?;
        let created = self.store.insert_job(
            &id,
            &spec.canonical_json(),
            status,
            rho,
            (&self.holder, self.job_lease_until()),
            fits(self.budget, cost),
        )?;
        Ok((id, created))
    }

    /// Job `id`'s spec and status (JSON).
    pub fn job(
        &self,
        id: &str,
    ) -> Result<
        Option<(
            crate::protocol::job::JobSpec,
            crate::protocol::job::JobStatus,
        )>,
    > {
        self.store
            .job(id)?
            .map(|(spec, status)| decode_job(id, &spec, &status))
            .transpose()
    }

    /// Every job, oldest first.
    pub fn jobs(
        &self,
    ) -> Result<
        Vec<(
            crate::protocol::job::JobSpec,
            crate::protocol::job::JobStatus,
        )>,
    > {
        self.store
            .jobs()?
            .iter()
            .map(|(id, spec, status)| decode_job(id, spec, status))
            .collect()
    }

    /// Job `id` as the participant whose token hashes to `token_sha256` (hex) sees it; `None`
    /// for a job that does not exist or whose roster does not list the token. The view is built
    /// once per status change (one parse of the O(N) status) and shared by every poll.
    pub fn participant_view(
        &self,
        id: &str,
        token_sha256: &str,
    ) -> Result<Option<ParticipantView>> {
        // Another process sharing the store may have changed the job: the cached view stands
        // only while the job's row is the one it was built from.
        let Some(version) = self.store.job_version(id)? else {
            return Ok(None);
        };
        let mut views = self
            .participant_views
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("participant views lock poisoned")))?;
        let shared = match views.get(id) {
            Some((built_from, shared)) if *built_from == version => shared.clone(),
            _ => {
                let Some((spec, status)) = self.job(id)? else {
                    return Ok(None);
                };
                let shared = Arc::new(SharedParticipantView::build(&spec, &status, &self.nodes)?);
                views.insert(id.to_string(), (version, shared.clone()));
                shared
            }
        };
        drop(views);
        Ok(shared.for_token(token_sha256))
    }

    /// Every job whose roster lists the token hashing to `token_sha256` (hex), as that
    /// participant sees it, oldest first: from the shared views (built once per status change),
    /// so N participants asking cost O(N) views, not N reads of every job.
    pub fn participant_jobs(&self, token_sha256: &str) -> Result<Vec<ParticipantView>> {
        let mut out = Vec::new();
        for id in self.store.job_ids()? {
            if let Some(view) = self.participant_view(&id, token_sha256)? {
                out.push(view);
            }
        }
        Ok(out)
    }

    /// Changes job `id`'s status with `change`: the status is read, changed and written back
    /// as one compare-and-swap on the job's row (its SHA-256, which every status write
    /// changes), so that no writer — this process's driver, an analyst's cancel, or another
    /// aggregator sharing the store — ever overwrites a change made between the read and the
    /// write. A write that finds the row changed reads it again and runs `change` again on
    /// what it finds (at most [`JOB_CHANGE_ATTEMPTS`] times). A status that leaves
    /// "answering"/"running" for good settles the job: the part of its reservation its rounds
    /// did not spend comes back to the budget. A change that changes nothing writes nothing.
    pub fn update_job(
        &self,
        id: &str,
        change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        self.change_job(id, false, change)
    }

    /// As [`Aggregator::update_job`], by the job's driver: refused with
    /// [`Error::JobLeaseLost`] (nothing written) unless this aggregator holds the job's driver
    /// lease (or no other's is live) and the job has not ended, checked in the transaction
    /// that writes the status.
    pub fn update_job_as_driver(
        &self,
        id: &str,
        change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        self.change_job(id, true, change)
    }

    fn change_job(
        &self,
        id: &str,
        as_driver: bool,
        mut change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        // Writers in this process take turns (fewer retries); across processes the
        // compare-and-swap below decides.
        let _one_at_a_time = self
            .job_lock
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("job lock poisoned")))?;
        // Whatever happens below, the shared participant view is rebuilt from the store.
        let _stale = ForgetView(self, id);
        for attempt in 1..=JOB_CHANGE_ATTEMPTS {
            let (spec_bytes, status_bytes) = self
                .store
                .job(id)?
                .ok_or_else(|| Error::Job(format!("no job {id}")))?;
            let version = crate::aggregator::store::job_sha256(id, &spec_bytes, &status_bytes);
            let (_, mut status) = decode_job(id, &spec_bytes, &status_bytes)?;
            let before = status.clone();
            change(&mut status)?;
            if status == before {
                return Ok(status);
            }
            let driver = as_driver.then(|| (self.holder.as_str(), self.clock.now_ms()));
            let written = if before.is_live() && !status.is_live() {
                let ended = status.clone();
                self.store
                    .settle_job(id, Some(&version), driver, move |spent| {
                        to_json(&crate::protocol::job::JobStatus {
                            rho_spent: spent,
                            ..ended.clone()
                        })
                    })?
                    .map(|spent| status.rho_spent = spent)
            } else {
                self.store
                    .set_job_status(id, Some(&version), &to_json(&status)?, driver)?
            };
            match written {
                JobWrite::Written(()) => return Ok(status),
                JobWrite::Refused => {
                    return Err(Error::JobLeaseLost(format!(
                        "job {id}: another aggregator took its driver lease over, or the job \
                         ended; this one stops driving it"
                    )));
                }
                JobWrite::Changed => {
                    tracing::debug!(job = %id, attempt, "the job changed under a status change; reading it again");
                }
            }
        }
        Err(Error::Job(format!(
            "job {id}: its status changed under this change {JOB_CHANGE_ATTEMPTS} times in a \
             row; nothing written, try again"
        )))
    }

    /// Records participant `index`'s answer to job `job` (the first answer stands); the
    /// answer recorded.
    pub fn answer(
        &self,
        job: &str,
        index: usize,
        answer: &crate::protocol::job::Answer,
    ) -> Result<crate::protocol::job::Answer> {
        let stored = self.store.record_answer(job, index, &to_json(answer)?)?;
        serde_json::from_slice(&stored).map_err(|e| {
            Error::Integrity(format!("participant {index}'s answer to job {job}: {e}"))
        })
    }

    /// Participant `index`'s answer to job `job`, if it gave one.
    pub fn answer_of(
        &self,
        job: &str,
        index: usize,
    ) -> Result<Option<crate::protocol::job::Answer>> {
        self.store
            .answer_of(job, index)?
            .map(|a| {
                serde_json::from_slice(&a).map_err(|e| {
                    Error::Integrity(format!("participant {index}'s answer to job {job}: {e}"))
                })
            })
            .transpose()
    }

    /// Every answer to job `job`, by roster index.
    pub fn answers(&self, job: &str) -> Result<Vec<(usize, crate::protocol::job::Answer)>> {
        self.store
            .answers(job)?
            .into_iter()
            .map(|(i, a)| {
                serde_json::from_slice(&a).map(|a| (i, a)).map_err(|e| {
                    Error::Integrity(format!("participant {i}'s answer to job {job}: {e}"))
                })
            })
            .collect()
    }

    /// Records that round `round` belongs to job `job`: its cost will be paid from the job's
    /// reservation. Done before the round is created anywhere.
    pub fn link_job_round(&self, round: &str, job: &str) -> Result<()> {
        self.store.link_round(round, job)
    }

    /// The clock the aggregator decides deadlines by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The public keys of the nodes, in order (`GET /key` of each).
    pub async fn node_keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        for (k, url) in self.nodes.iter().enumerate() {
            let v: serde_json::Value = self
                .http
                .get(format!("{url}/key"))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            if v["node"].as_u64() != Some(k as u64) {
                return Err(Error::Http(format!("{url} is not node {k}")));
            }
            keys.push(v["public_key"].as_str().unwrap_or_default().to_string());
        }
        Ok(keys)
    }

    /// Creates the round on every node (idempotent: creating it again changes nothing).
    pub async fn create_round(&self, spec: RoundSpec) -> Result<Round> {
        let round = spec.validate()?;
        if round.node_keys.len() != self.nodes.len() {
            return Err(Error::InvalidSpec(format!(
                "{} nodes configured, round has {}",
                self.nodes.len(),
                round.node_keys.len()
            )));
        }
        let id = round.id();
        self.refuse_reused_round_number(&round)?;
        let config = round.config_bytes()?;
        self.store.insert_round(&id, &config)?;
        for url in &self.nodes {
            let r = self
                .http
                .put(format!("{url}/rounds/{id}"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_ROUND_CONFIG)
                .body(config.clone())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::CREATED) {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused the round: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
        }
        Ok(round)
    }

    /// A numeric round id names one configuration for good: the rounds this aggregator ever
    /// created (persisted in its database) are the ledger of seen (round id, config) pairs.
    fn refuse_reused_round_number(&self, round: &Round) -> Result<()> {
        for (id, spec) in self.store.specs_in(&RoundPhase::ALL)? {
            let seen = recorded_spec(&spec)
                .map_err(|e| Error::InvalidSpec(format!("stored spec: {e}")))?;
            if seen.round == round.spec.round && id != round.id() {
                return Err(Error::InvalidSpec(format!(
                    "round number {} was already used with another configuration (round {id})",
                    round.spec.round
                )));
            }
        }
        Ok(())
    }

    /// Each node's status of the round.
    pub async fn statuses(&self, round: &Round) -> Result<Vec<RoundStatus>> {
        let mut out = Vec::new();
        for url in &self.nodes {
            out.push(
                self.http
                    .get(format!("{url}/rounds/{}", round.id()))
                    .bearer_auth(self.admin_token.expose())
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?,
            );
        }
        Ok(out)
    }

    /// Each node's received (client, shard attempt) pairs.
    pub async fn received_sets(&self, round: &Round) -> Result<Vec<ShardSet>> {
        let n = round.config.n_clients();
        let mut out = Vec::new();
        for url in &self.nodes {
            let bytes = self
                .http
                .get(format!("{url}/rounds/{}/received", round.id()))
                .bearer_auth(self.admin_token.expose())
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
            out.push(
                ShardSet::get_decoded(&n, &bytes)
                    .map_err(|e| Error::Http(format!("{url}: received set: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Waits (polling every `poll`) until every node holds all N clients or the round's
    /// deadline has passed.
    pub async fn wait_for_uploads(&self, round: &Round, poll: Duration) -> Result<()> {
        while !self.due(round).await? {
            tokio::time::sleep(poll).await;
        }
        Ok(())
    }

    /// Rounds created by this aggregator and neither released nor aborted yet (collecting,
    /// or closing: the agreed set recorded, not every node told or not every sum fetched).
    pub fn open_rounds(&self) -> Result<Vec<Arc<Round>>> {
        self.live_rounds_in(&[RoundPhase::Created, RoundPhase::Closing])
    }

    /// The live rounds in one of `states`, oldest first: each read from the store and checked
    /// the first time it is seen, then kept until it is no longer live.
    fn live_rounds_in(&self, states: &[RoundPhase]) -> Result<Vec<Arc<Round>>> {
        let live = self.store.ids_in(&RoundPhase::LIVE)?;
        let mut cached = self.live_rounds.lock().expect("live rounds lock");
        cached.retain(|id, _| live.iter().any(|(live_id, _)| live_id == id));
        let mut out = Vec::new();
        for (id, state) in live {
            if !states.contains(&state) {
                continue;
            }
            let round = match cached.get(&id) {
                Some(round) => round.clone(),
                None => {
                    // Gone since the ids were read (released, or aborted): not live any more.
                    let Some((spec, _)) = self.store.round(&id)? else {
                        continue;
                    };
                    let round = Arc::new(recorded_round(&id, &spec)?);
                    cached.insert(id, round.clone());
                    round
                }
            };
            out.push(round);
        }
        Ok(out)
    }

    /// How many recorded rounds are in each state.
    pub fn rounds_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        self.store.count_by_state()
    }

    /// The round with hex id `id`, if this aggregator created it.
    pub fn round(&self, id: &str) -> Result<Option<Round>> {
        self.store
            .round(id)?
            .map(|(json, _)| recorded_round(id, &json))
            .transpose()
    }

    /// The round's state as recorded, with the abort reason, the release (JSON) or the
    /// failure's cause.
    pub fn recorded_state(&self, round: &Round) -> Result<Option<RoundState>> {
        self.state(&round.id())
    }

    /// True when every node holds all N clients or the round's deadline has passed: the moment
    /// to close it.
    pub async fn due(&self, round: &Round) -> Result<bool> {
        if self.clock.now_ms() >= round.spec.deadline_unix_ms
            || matches!(self.state(&round.id())?, Some(RoundState::Closing))
        {
            return Ok(true);
        }
        // The nodes' counts (their status), not their received sets: O(1) per node per poll.
        Ok(self
            .statuses(round)
            .await?
            .iter()
            .all(|s| s.received == round.config.n_clients()))
    }

    /// Tells every node that the round is aborted (idempotent on the nodes), then records it
    /// as "aborted". A node that cannot be reached leaves the round "aborting";
    /// [`Aggregator::notify_pending_aborts`] tries again.
    async fn notify_abort(&self, round: &Round, reason: &str) -> Result<()> {
        let id = round.id();
        let body = serde_json::to_vec(&AbortRequest {
            reason: reason.to_string(),
        })
        .unwrap_or_default();
        for url in &self.nodes {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/abort"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(body.clone())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::ACCEPTED) {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused the abort: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
        }
        self.store.finish_abort(&id)
    }

    /// Aborts an open round: recorded first (whatever happens to the notices, it is never
    /// released), then every node is told; a node that misses the notice is told again by
    /// [`Aggregator::notify_pending_aborts`]. A released round is not aborted.
    pub async fn abort(&self, round: &Round, reason: &str) -> Result<()> {
        if !self.store.begin_abort(&round.id(), reason)? {
            return match self.state(&round.id())? {
                Some(RoundState::Released(_)) => Err(Error::AlreadyReleased),
                Some(RoundState::Closing) => Err(Error::InvalidSpec(
                    "the round is closing with a recorded agreed set; it cannot be aborted".into(),
                )),
                Some(RoundState::Failed(cause)) => Err(Error::RoundFailed(cause)),
                Some(_) => Ok(()),
                None => Err(Error::InvalidSpec(
                    "round not created by this aggregator".into(),
                )),
            };
        }
        // The abort stands even if a notice fails; it is retried later.
        let _ = self.notify_abort(round, reason).await;
        Ok(())
    }

    /// Re-sends the abort of every round recorded as aborted whose nodes were not all told.
    pub async fn notify_pending_aborts(&self) -> Result<()> {
        for round in self.live_rounds_in(&[RoundPhase::Aborting])? {
            let reason = match self.state(&round.id())? {
                Some(RoundState::Aborting(reason)) => reason,
                _ => String::new(),
            };
            self.notify_abort(&round, &reason).await?;
        }
        Ok(())
    }

    fn state(&self, id: &str) -> Result<Option<RoundState>> {
        Ok(self.store.round(id)?.map(|(_, state)| state))
    }

    /// The release of a round already released, if any.
    pub fn published(&self, round: &Round) -> Result<Option<PublishedRelease>> {
        self.recorded_release(&round.id())
    }

    /// The recorded release of round `id`, if it is released.
    pub fn recorded_release(&self, id: &str) -> Result<Option<PublishedRelease>> {
        match self.state(id)? {
            Some(RoundState::Released(release)) => Ok(Some(
                serde_json::from_str(&release).map_err(|e| Error::Http(e.to_string()))?,
            )),
            _ => Ok(None),
        }
    }

    /// Closes the round and releases its sum. The first call decides the agreed set — the
    /// intersection of the nodes' received sets; more than T missing → the abort is recorded
    /// and nothing is released — checks the budget, and records the set and the charge in one
    /// transaction before any node is told. Every node is then sent that same recorded set,
    /// on this call and on every retry after a failure, so a client that reaches more nodes
    /// later cannot make the nodes disagree. Then the M node sums are added and the release is
    /// recorded. A second call after the release → [`Error::AlreadyReleased`].
    ///
    /// From the recorded close on, the round is driven by the holder of its release lease
    /// only: a call that finds another aggregator's lease live returns
    /// [`Error::ReleaseInProgress`] without contacting any node, and an aggregator that dies
    /// holding it is taken over once the lease expires. Calls of one aggregator share its
    /// lease (its own pass and an analyst's request may both drive a round; one records it,
    /// and the other, if still polling the node sums, stops and returns that release).
    pub async fn release(&self, round: &Round) -> Result<PublishedRelease> {
        let id = round.id();
        let state = match self.state(&id)? {
            Some(RoundState::Released(_)) => return Err(Error::AlreadyReleased),
            Some(RoundState::Aborted(reason) | RoundState::Aborting(reason)) => {
                return Err(Error::RoundAborted(reason));
            }
            Some(RoundState::Failed(cause)) => return Err(Error::RoundFailed(cause)),
            Some(state) => state,
            None => {
                return Err(Error::InvalidSpec(
                    "round not created by this aggregator".into(),
                ));
            }
        };
        // A closing round's lease first: a process refused it (every pass of every process but
        // the holder's) does not read the recorded close, 8 bytes per client.
        let recorded = if state == RoundState::Closing {
            self.take_release_lease(&id)?;
            self.store.close_body(&id)?
        } else {
            None
        };
        let close_body = match recorded {
            Some(body) => body,
            None => {
                let body = self.begin_close(round).await?;
                self.take_release_lease(&id)?;
                body
            }
        };
        let outcome = self.drive_under_lease(round, close_body).await;
        if outcome.is_err() {
            // Another process may take the round over at once instead of after the lease.
            let _ = self.store.drop_release_lease(&id, &self.holder);
        }
        outcome
    }

    /// Decides the agreed set of a round that is still collecting, checks and charges the
    /// budget, and records both (created → closing); the close request's body.
    async fn begin_close(&self, round: &Round) -> Result<Vec<u8>> {
        let id = round.id();
        // The pairs every node holds: a client that sharded twice and whose nodes hold different
        // attempts is left out (it counts as missing), never summed.
        let sets = self.received_sets(round).await?;
        let agreed_pairs = if sets.is_empty() {
            ShardSet::empty(round.config.n_clients())
        } else {
            agree(&sets.iter().collect::<Vec<_>>())?
        };
        let max_dropped = round.config.max_dropped();
        let missing = agreed_pairs.clients().missing();
        if missing > max_dropped {
            self.abort(
                round,
                &format!("{missing} clients missing, more than T = {max_dropped}"),
            )
            .await?;
            return Err(Error::Aborted {
                missing,
                max_dropped,
            });
        }
        let cost = round_rho(round)?
            .map(|rho| RoundCost::zcdp(rho).map(|cost| (cost, rho)))
            .transpose()
            .map_err(Error::Budget)?;
        let body = agreed_pairs.get_encoded()?;
        // A job's round is paid from the job's reservation, charged when the job was created.
        // Either way the budget is checked against the charges as recorded, in the
        // transaction that records the close.
        let recorded = match (self.store.job_of_round(&id)?, cost) {
            (Some(job), cost) => {
                let rho = cost.map_or(0.0, |(_, rho)| rho);
                self.store.begin_close_job_round(&id, &body, &job, rho)?
            }
            (None, Some((cost, rho))) => {
                self.store
                    .begin_close(&id, &body, Some(rho), fits(self.budget, cost))?
            }
            (None, None) => self.store.begin_close(&id, &body, None, |_| Ok(()))?,
        };
        if !recorded {
            // Another caller recorded a close (or an abort) first: use what it recorded.
            return match self.store.close_body(&id)? {
                Some(body) => Ok(body),
                None => Err(Error::RoundAborted(
                    self.state(&id)?
                        .as_ref()
                        .and_then(RoundState::ended_unreleased)
                        .unwrap_or_default()
                        .to_string(),
                )),
            };
        }
        Ok(body)
    }
}

/// A release lease holder's name: this process's id and 64 random bits.
fn lease_holder() -> String {
    use rand_core::TryRngCore;
    let mut random = [0u8; 8];
    if rand_core::OsRng.try_fill_bytes(&mut random).is_err() {
        // Distinct enough without the OS's randomness: the time to the nanosecond.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        random = nanos.to_le_bytes();
    }
    format!("pid {} {}", std::process::id(), crate::hex::encode(&random))
}

/// An accountant with `budget` that has paid `charges` (the recorded ones: rounds, and jobs'
/// reservations as they stand).
fn replay(budget: PrivacyLoss, charges: &[f64]) -> Result<Accountant> {
    // A DCA release carries a sum of discrete Gaussians, not a continuous Gaussian: the exact
    // μ-GDP curve is proven only for the latter, while zCDP holds for the sum too
    // (Kairouz–Liu–Steinke 2021, Thm 1; see `round_rho`). So rounds compose in zCDP here, as
    // in the in-process BLR pipeline.
    let mut accountant =
        Accountant::with_composition(budget, GaussianComposition::Zcdp).map_err(Error::Budget)?;
    for &rho in charges {
        if rho > 0.0 {
            let cost = RoundCost::zcdp(rho).map_err(Error::Budget)?;
            accountant.charge(cost).map_err(Error::Budget)?;
        }
    }
    Ok(accountant)
}

/// Whether `cost` fits `budget` on top of the recorded charges it is given.
fn fits(budget: PrivacyLoss, cost: RoundCost) -> impl Fn(&[f64]) -> Result<()> + Send + 'static {
    move |charges| {
        replay(budget, charges)?
            .check(cost)
            .map(drop)
            .map_err(Error::Budget)
    }
}

fn to_json(value: &impl Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Io(std::io::Error::other(e)))
}

fn decode_job(
    id: &str,
    spec: &[u8],
    status: &[u8],
) -> Result<(
    crate::protocol::job::JobSpec,
    crate::protocol::job::JobStatus,
)> {
    let spec: crate::protocol::job::JobSpec = serde_json::from_slice(spec)
        .map_err(|e| Error::Integrity(format!("job {id}'s recorded spec: {e}")))?;
    if spec.id() != id {
        return Err(Error::Integrity(format!(
            "job {id}'s recorded spec hashes to {}",
            spec.id()
        )));
    }
    let status = serde_json::from_slice(status)
        .map_err(|e| Error::Integrity(format!("job {id}'s recorded status: {e}")))?;
    Ok((spec, status))
}

/// A recorded round config as a round, checked to hash to the id it is recorded under.
fn recorded_round(id: &str, bytes: &[u8]) -> Result<Round> {
    let integrity = |e: String| Error::Integrity(format!("the recorded spec of round {id}: {e}"));
    if !bytes.starts_with(&wire::ROUND_CONFIG_MAGIC) {
        return recorded_json_round(id, bytes);
    }
    let round = decode_round_config(bytes)
        .map_err(|e| integrity(e.to_string()))?
        .validate()?;
    if round.id() != id {
        return Err(integrity(format!("hashes to {}", round.id())));
    }
    Ok(round)
}

/// A round recorded before round configs carried their token list in binary: its JSON with
/// the list inline, whose SHA-256 was the round's id.
fn recorded_json_round(id: &str, json: &[u8]) -> Result<Round> {
    let integrity = |e: String| Error::Integrity(format!("the recorded spec of round {id}: {e}"));
    let mut round = serde_json::from_slice::<RoundSpec>(json)
        .map_err(|e| integrity(e.to_string()))?
        .validate()?;
    let legacy = legacy_json_round_id(&round.spec, round.token_hashes.iter().copied().map(Ok))?;
    if crate::hex::encode(&legacy) != id {
        return Err(integrity(format!(
            "hashes to {}",
            crate::hex::encode(&legacy)
        )));
    }
    round.hash = legacy;
    Ok(round)
}

/// The spec of a recorded round config (or of the JSON older versions recorded).
fn recorded_spec(bytes: &[u8]) -> Result<RoundSpec> {
    if bytes.starts_with(&wire::ROUND_CONFIG_MAGIC) {
        let mut source = bytes;
        RoundSpec::from_config_json(&wire::read_round_spec(&mut source)?)
    } else {
        serde_json::from_slice(bytes).map_err(|e| Error::InvalidSpec(e.to_string()))
    }
}

/// A job's shared participant view and the version of the job's row it was built from.
type CachedView = (Vec<u8>, Arc<SharedParticipantView>);

/// Drops a job's shared participant view when a status change is done (or failed), so that the
/// next poll rebuilds it from the store.
struct ForgetView<'a>(&'a Aggregator, &'a str);

impl Drop for ForgetView<'_> {
    fn drop(&mut self) {
        if let Ok(mut views) = self.0.participant_views.lock() {
            views.remove(self.1);
        }
    }
}

/// The agreed set as aggregators before the binary pair set recorded it (`{"agreed": [ids],
/// "shards": ["<16 hex>", …]}`), read only to resend a close recorded in an older store: the
/// pairs, checked against a round of `n_clients` clients.
///
/// # Errors
/// Not such a body; lists of different lengths, a malformed shard id, a client id ≥ N or
/// listed twice.
fn legacy_close_json(bytes: &[u8], n_clients: usize) -> Result<ShardSet> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Legacy {
        agreed: Vec<u64>,
        shards: Vec<String>,
    }
    let legacy: Legacy = serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidSpec(format!("recorded close request: {e}")))?;
    if legacy.agreed.len() != legacy.shards.len() {
        return Err(Error::InvalidSpec(format!(
            "{} client ids but {} shard ids",
            legacy.agreed.len(),
            legacy.shards.len()
        )));
    }
    let mut pairs = ShardSet::try_empty(n_clients)?;
    for (&c, s) in legacy.agreed.iter().zip(&legacy.shards) {
        let shard = crate::hex::decode_array::<8>(s)
            .map(|b| fixedpoint_shares::ShardId(u64::from_be_bytes(b)))
            .ok_or_else(|| Error::InvalidSpec(format!("shard id {s:?}: need 16 hex digits")))?;
        pairs.insert(fixedpoint_shares::ClientId(c), shard)?;
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests;
