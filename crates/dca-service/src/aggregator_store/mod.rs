//! The aggregator's durable state: every round's fate (created → closing → released, or
//! created → aborting → aborted, or closing → failed when a node reports that the release has
//! become impossible), the agreed set it was closed with, every charge to the
//! privacy budget, jobs and their participants' answers. Two implementations: SQLite
//! (`sqlite`, the default: one file, one process) and PostgreSQL (`postgres`, `--store
//! postgres://…`: one database that several aggregator processes may share).
//!
//! Each state change checks the state it leaves in the same transaction, so a round is closed,
//! charged and released at most once whatever crashes in between, and by whichever process.
//! Every charge is checked against the budget with the charges as recorded in that same
//! transaction (not against a copy in memory), so processes sharing the store cannot overspend
//! it between them. Every row carries a SHA-256 of its content, checked whenever it is read: a
//! flipped bit in a recorded release, agreed set or charge must be refused, never served or
//! replayed.
//!
//! A closing round is driven (its recorded close sent to every node, the node sums fetched and
//! added, the release recorded) by the holder of its release lease: a row naming the holder
//! and when its lease expires by the aggregator's clock, taken in one transaction when no lease
//! is live, renewed while the holder works, and checked again when the release is recorded.
//! Lease rows carry no SHA-256: they decide who works, never what is released (the
//! compare-and-swaps above decide that).
//!
//! A live job is driven (its answers closed, its rounds planned and created, its status
//! written) by the holder of its driver lease: a row per job, written with the job, taken when
//! no other holder's lease is live, renewed while the driver runs, and marked ended in the
//! transaction that settles the job. The driver's status writes check the lease in their own
//! transaction: a driver whose lease was taken over, or whose job ended, writes nothing.
//!
//! The interface is an enum over the two backends (as the node's store is): its operations
//! take closures generically, which a `dyn` trait could only offer boxed.

#[cfg(test)]
mod failed_round_tests;
#[cfg(test)]
mod job_lease_tests;
mod postgres;
mod round_state;
mod sqlite;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Error, Result};

pub use postgres::AggregatorPgLocation;
#[cfg(test)]
pub(crate) use postgres::test_db as pg_test_db;
pub use round_state::{RoundPhase, RoundState};

/// What became of an attempt to take a round's release lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseTaken {
    /// The caller holds the lease until the expiry it asked for.
    Taken,
    /// Another holder's lease is live: (holder, expiry in ms since the Unix epoch).
    HeldBy(String, u64),
    /// The round is not closing (not closed yet, released or aborted): nothing to drive.
    NotClosing,
}

/// What became of an attempt to take a job's driver lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobLeaseTaken {
    /// The caller holds the lease until the expiry it asked for.
    Taken,
    /// Another holder's lease is live: (holder, expiry in ms since the Unix epoch).
    HeldBy(String, u64),
    /// The job ended (or does not exist): nothing to drive.
    Ended,
}

/// The driver writing a job's status: its lease holder name and the time by the aggregator's
/// clock. The write is refused if another holder's lease is live or the job's lease is ended.
pub(crate) type JobWriter<'a> = Option<(&'a str, u64)>;

/// What became of a change of a job's status.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JobWrite<T> {
    /// Written (a settled job: what its rounds spent).
    Written(T),
    /// The job's row is no longer the version the change was made from (another writer, maybe
    /// another process, changed it since it was read): nothing written; read it again.
    Changed,
    /// The writer is a driver that may not write the job (see [`JobWriter`]): nothing written.
    Refused,
}

impl<T> JobWrite<T> {
    /// The same outcome with the written value mapped by `f`.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> JobWrite<U> {
        match self {
            JobWrite::Written(t) => JobWrite::Written(f(t)),
            JobWrite::Changed => JobWrite::Changed,
            JobWrite::Refused => JobWrite::Refused,
        }
    }
}

/// A job as recorded: id, spec JSON, status JSON.
pub(crate) type RecordedJob = (String, Vec<u8>, Vec<u8>);

/// Where the aggregator keeps its state.
#[derive(Clone, Debug)]
pub enum AggregatorStoreLocation {
    /// A SQLite file (`--db`, the default).
    Sqlite(PathBuf),
    /// A PostgreSQL database (`--store postgres://…`), which aggregator replicas may share.
    Postgres(AggregatorPgLocation),
}

impl AggregatorStoreLocation {
    /// `--store URL` if given (a PostgreSQL database), else the SQLite file `db`.
    ///
    /// # Errors
    /// [`Error::Postgres`] for a URL that is not a PostgreSQL one or that the client cannot
    /// parse (named without its password); [`Error::InvalidSpec`] when neither is given.
    pub fn parse(store: Option<&str>, db: Option<&Path>) -> Result<Self> {
        match (store, db) {
            (Some(url), _) => Ok(Self::Postgres(AggregatorPgLocation::parse(url)?)),
            (None, Some(db)) => Ok(Self::Sqlite(db.to_path_buf())),
            (None, None) => Err(Error::InvalidSpec(
                "the aggregator needs a store: --db FILE (SQLite) or --store postgres://…".into(),
            )),
        }
    }

    /// The store as a person reads it (a path, or a URL without its password).
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(p) => p.display().to_string(),
            Self::Postgres(pg) => pg.to_string(),
        }
    }
}

pub(crate) enum AggregatorStore {
    Sqlite(sqlite::SqliteAggregatorStore),
    Postgres(postgres::PgAggregatorStore),
}

/// Runs the same call on whichever backend `$store` is.
macro_rules! on_backend {
    ($store:expr, $s:ident => $call:expr) => {
        match $store {
            AggregatorStore::Sqlite($s) => $call,
            AggregatorStore::Postgres($s) => $call,
        }
    };
}

impl AggregatorStore {
    pub fn open(at: &AggregatorStoreLocation) -> Result<Self> {
        Ok(match at {
            AggregatorStoreLocation::Sqlite(path) => {
                Self::Sqlite(sqlite::SqliteAggregatorStore::open(path)?)
            }
            AggregatorStoreLocation::Postgres(pg) => {
                Self::Postgres(postgres::PgAggregatorStore::open(pg)?)
            }
        })
    }

    /// Every recorded charge (zCDP ρ), each checked.
    pub fn charges(&self) -> Result<Vec<f64>> {
        on_backend!(self, s => s.charges())
    }

    /// Records a new round as "created"; nothing changes if it is recorded already.
    pub fn insert_round(&self, id: &str, spec_json: &[u8]) -> Result<()> {
        on_backend!(self, s => s.insert_round(id, spec_json))
    }

    /// The (id, spec JSON) of every recorded round in one of `states`, oldest first, checked.
    pub fn specs_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, Vec<u8>)>> {
        on_backend!(self, s => s.specs_in(states))
    }

    /// The (id, state) of every recorded round in one of `states`, oldest first: the rows'
    /// specs are not read (nor checked), so a polling pass costs a few bytes per round rather
    /// than 32 per client.
    pub fn ids_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        on_backend!(self, s => s.ids_in(states))
    }

    /// How many rounds are recorded in each state (every state listed, zeros included).
    pub fn count_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        on_backend!(self, s => s.count_by_state())
    }

    /// The recorded spec (JSON) of round `id` and its state, checked.
    pub fn round(&self, id: &str) -> Result<Option<(Vec<u8>, RoundState)>> {
        on_backend!(self, s => s.round(id))
    }

    /// created → aborting (with the reason); false if the round was not "created".
    pub fn begin_abort(&self, id: &str, reason: &str) -> Result<bool> {
        on_backend!(self, s => s.begin_abort(id, reason))
    }

    /// aborting → aborted, once every node was told.
    pub fn finish_abort(&self, id: &str) -> Result<()> {
        on_backend!(self, s => s.finish_abort(id))
    }

    /// created → closing: records the close request every node will be sent (unchanged until
    /// all have it) and the round's charge (`rho`, if it has noise), in one transaction that
    /// first asks `fits` whether the charge fits the budget given every charge recorded (an
    /// error from `fits` changes nothing). From here on the budget is spent whether or not
    /// the release comes out, and the agreed set never changes. False if the round was not
    /// "created" (another caller, maybe another process, closed or aborted it first).
    pub fn begin_close(
        &self,
        id: &str,
        close_body: &[u8],
        rho: Option<f64>,
        fits: impl Fn(&[f64]) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        on_backend!(self, s => s.begin_close(id, close_body, rho, fits))
    }

    /// created → closing for a round of a job: as [`Self::begin_close`], but the round's cost
    /// is recorded against the job's reservation (already charged) instead of charged again,
    /// refused with [`Error::JobBudget`] (nothing changed) if the job's rounds as recorded
    /// would then spend more than it reserved.
    pub fn begin_close_job_round(
        &self,
        id: &str,
        close_body: &[u8],
        job: &str,
        rho: f64,
    ) -> Result<bool> {
        on_backend!(self, s => s.begin_close_job_round(id, close_body, job, rho))
    }

    /// The close request recorded for round `id`, checked.
    pub fn close_body(&self, id: &str) -> Result<Option<Vec<u8>>> {
        on_backend!(self, s => s.close_body(id))
    }

    /// closing → released, with the release's JSON, if `holder` holds the round's release
    /// lease or no other holder's lease is live at `now_ms`; false (nothing changed) if the
    /// round was not "closing" or another holder's lease is live.
    pub fn mark_released(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        release_json: &str,
    ) -> Result<bool> {
        on_backend!(self, s => s.mark_released(id, holder, now_ms, release_json))
    }

    /// closing → failed, with the cause (the node's answer that made the release impossible),
    /// under the same lease rule as [`Self::mark_released`]; false (nothing changed) if the
    /// round was not "closing" or another holder's lease is live. A failed round is never
    /// released; its charge, recorded when it was closed, stays.
    pub fn mark_failed(&self, id: &str, holder: &str, now_ms: u64, cause: &str) -> Result<bool> {
        on_backend!(self, s => s.mark_failed(id, holder, now_ms, cause))
    }

    /// Takes the release lease of closing round `id` for `holder` until `until_ms`, if no
    /// lease exists, the last one expired by `now_ms`, or `holder` has it already.
    pub fn take_release_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<LeaseTaken> {
        on_backend!(self, s => s.take_release_lease(id, holder, now_ms, until_ms))
    }

    /// Moves the expiry of round `id`'s release lease to `until_ms` if `holder` still has it;
    /// false if another holder took it over.
    pub fn renew_release_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        on_backend!(self, s => s.renew_release_lease(id, holder, until_ms))
    }

    /// Gives up `holder`'s release lease of round `id` (it expires now), so that another
    /// process may take it at once.
    pub fn drop_release_lease(&self, id: &str, holder: &str) -> Result<()> {
        on_backend!(self, s => s.drop_release_lease(id, holder))
    }

    /// The holder and expiry of round `id`'s release lease, if a lease row exists.
    #[cfg(test)]
    pub fn release_lease(&self, id: &str) -> Result<Option<(String, u64)>> {
        on_backend!(self, s => s.release_lease(id))
    }

    /// Records a new job with its status and its driver lease (`lease`: holder and expiry, so
    /// that the process creating the job drives it, no other taking it in between) and
    /// reserves its whole budget (`rho`, a charge named `job:{id}`) in one transaction that
    /// first asks `fits` whether the reservation fits the budget given every charge recorded.
    /// False (nothing changed) if the job exists already.
    pub fn insert_job(
        &self,
        id: &str,
        spec: &[u8],
        status: &[u8],
        rho: f64,
        lease: (&str, u64),
        fits: impl Fn(&[f64]) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        on_backend!(self, s => s.insert_job(id, spec, status, rho, lease, fits))
    }

    /// Job `id`'s spec and status (JSON), checked.
    pub fn job(&self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        on_backend!(self, s => s.job(id))
    }

    /// Every job's id, oldest first.
    pub fn job_ids(&self) -> Result<Vec<String>> {
        on_backend!(self, s => s.job_ids())
    }

    /// Every job's id, spec and status, oldest first, checked.
    pub fn jobs(&self) -> Result<Vec<RecordedJob>> {
        on_backend!(self, s => s.jobs())
    }

    /// Replaces job `id`'s status, in one transaction that first checks that its row is still
    /// version `expected` (the SHA-256 [`job_sha256`] of the row the change was made from; `None`
    /// skips the check) and that `driver`, if given, is the job's driver (see [`JobWriter`]):
    /// [`JobWrite::Changed`] or [`JobWrite::Refused`] (nothing written) if not. A
    /// read-change-write is this compare-and-swap, so processes sharing the store never
    /// overwrite each other's change.
    pub fn set_job_status(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        status: &[u8],
        driver: JobWriter<'_>,
    ) -> Result<JobWrite<()>> {
        on_backend!(self, s => s.set_job_status(id, expected, status, driver))
    }

    /// Ends job `id`: its status becomes `status(spent)` and its reservation shrinks to what
    /// its released rounds spent (`spent`), in one transaction (the rest of the budget comes
    /// back) that also marks its driver lease ended. The status is written once, already
    /// holding what was spent: a reader never sees the job ended with nothing spent. Checked
    /// first as [`Self::set_job_status`] is (nothing changed unless
    /// [`JobWrite::Written`]`(spent)`).
    pub fn settle_job(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        driver: JobWriter<'_>,
        status: impl Fn(f64) -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<JobWrite<f64>> {
        on_backend!(self, s => s.settle_job(id, expected, driver, status))
    }

    /// The SHA-256 of job `id`'s row as recorded (it changes with every status write): what a
    /// cached view of the job is checked against, without reading the status.
    pub fn job_version(&self, id: &str) -> Result<Option<Vec<u8>>> {
        on_backend!(self, s => s.job_version(id))
    }

    /// Takes job `id`'s driver lease for `holder` until `until_ms`, if no other holder's lease
    /// is live at `now_ms` and the job has not ended.
    pub fn take_job_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<JobLeaseTaken> {
        on_backend!(self, s => s.take_job_lease(id, holder, now_ms, until_ms))
    }

    /// Takes, for `holder` until `until_ms`, the driver leases of at most `limit` jobs that
    /// have not ended and whose lease expired by `now_ms` (oldest job first); their ids.
    /// Processes acquiring at once get distinct jobs.
    pub fn acquire_job_leases(
        &self,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
        limit: usize,
    ) -> Result<Vec<String>> {
        on_backend!(self, s => s.acquire_job_leases(holder, now_ms, until_ms, limit))
    }

    /// Moves the expiry of job `id`'s driver lease to `until_ms` if `holder` still has it;
    /// false if another holder took it over.
    pub fn renew_job_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        on_backend!(self, s => s.renew_job_lease(id, holder, until_ms))
    }

    /// Gives up `holder`'s driver lease of job `id` (it expires now), marking it ended if
    /// `ended` (the job is over: no process takes it again).
    pub fn drop_job_lease(&self, id: &str, holder: &str, ended: bool) -> Result<()> {
        on_backend!(self, s => s.drop_job_lease(id, holder, ended))
    }

    /// Job `id`'s driver lease: (holder, expiry, ended), if a lease row exists.
    #[cfg(test)]
    pub fn job_lease(&self, id: &str) -> Result<Option<(String, u64, bool)>> {
        on_backend!(self, s => s.job_lease(id))
    }

    /// Records participant `index`'s answer to job `job`; the answer already recorded if
    /// there is one (an answer is given once).
    pub fn record_answer(&self, job: &str, index: usize, answer: &[u8]) -> Result<Vec<u8>> {
        on_backend!(self, s => s.record_answer(job, index, answer))
    }

    /// Participant `index`'s answer to job `job` (JSON), checked; `None` if it gave none.
    pub fn answer_of(&self, job: &str, index: usize) -> Result<Option<Vec<u8>>> {
        on_backend!(self, s => s.answer_of(job, index))
    }

    /// Every answer to job `job` (roster index, answer JSON), checked.
    pub fn answers(&self, job: &str) -> Result<Vec<(usize, Vec<u8>)>> {
        on_backend!(self, s => s.answers(job))
    }

    /// Records that round `round` belongs to job `job` (before the round is created anywhere).
    pub fn link_round(&self, round: &str, job: &str) -> Result<()> {
        on_backend!(self, s => s.link_round(round, job))
    }

    /// Whether round `round` belongs to a job (the job's id).
    pub fn job_of_round(&self, round: &str) -> Result<Option<String>> {
        on_backend!(self, s => s.job_of_round(round))
    }
}

/// Whether `driver` may write the status of a job whose lease row is `lease` (holder, expiry,
/// ended): no driver given (the analyst's cancel), or the job not ended and its lease the
/// driver's or no other holder's live one.
pub(super) fn may_write_job(driver: JobWriter<'_>, lease: Option<(String, u64, bool)>) -> bool {
    match (driver, lease) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some((holder, now_ms)), Some((other, expires, ended))) => {
            !ended && (other == holder || expires <= now_ms)
        }
    }
}

/// The refusal of a job round whose cost would take its job past its reservation.
pub(super) fn check_job_budget(job: &str, reserved: f64, used: f64, rho: f64) -> Result<()> {
    if used + rho > reserved * (1.0 + 1e-9) {
        return Err(Error::JobBudget {
            job: job.to_string(),
            would_spend: used + rho,
            reserved,
        });
    }
    Ok(())
}

pub(super) fn row_sha256(id: &str, spec: &[u8], state: &str, detail: Option<&str>) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [id.as_bytes(), spec, state.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    match detail {
        Some(d) => {
            h.update([1]);
            h.update(d.as_bytes());
        }
        None => h.update([0]),
    }
    h.finalize().into()
}

/// The charge that holds job `job`'s reservation.
pub(super) fn reservation_id(job: &str) -> String {
    format!("job:{job}")
}

pub(super) fn parts_sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

pub(crate) fn job_sha256(id: &str, spec: &[u8], status: &[u8]) -> [u8; 32] {
    parts_sha256(&[b"job", id.as_bytes(), spec, status])
}

pub(super) fn answer_sha256(job: &str, index: usize, answer: &[u8]) -> [u8; 32] {
    parts_sha256(&[
        b"answer",
        job.as_bytes(),
        &(index as u64).to_le_bytes(),
        answer,
    ])
}

pub(super) fn job_round_sha256(round: &str, job: &str, rho: Option<f64>) -> [u8; 32] {
    let rho = rho.map_or([0xff; 8], |r| r.to_bits().to_le_bytes());
    parts_sha256(&[b"job round", round.as_bytes(), job.as_bytes(), &rho])
}

pub(super) fn charge_sha256(id: &str, rho: f64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(id.as_bytes());
    h.update(rho.to_bits().to_le_bytes());
    h.finalize().into()
}

pub(super) fn check_round(
    id: &str,
    spec: &[u8],
    state: &str,
    detail: Option<&str>,
    sha256: Option<Vec<u8>>,
) -> Result<()> {
    check(
        sha256.as_deref(),
        &row_sha256(id, spec, state, detail),
        || format!("the recorded state of round {id}"),
    )
}

/// Counts of rounds by state, every state listed (zeros included), from (name, count) rows.
pub(super) fn counts_by_phase(
    rows: impl IntoIterator<Item = (String, usize)>,
) -> Result<Vec<(RoundPhase, usize)>> {
    let mut out: Vec<(RoundPhase, usize)> = RoundPhase::ALL.iter().map(|&p| (p, 0)).collect();
    for (name, n) in rows {
        let phase = RoundPhase::parse(&name)?;
        if let Some(slot) = out.iter_mut().find(|(p, _)| *p == phase) {
            slot.1 = n;
        }
    }
    Ok(out)
}

pub(super) fn check(
    stored: Option<&[u8]>,
    computed: &[u8; 32],
    what: impl FnOnce() -> String,
) -> Result<()> {
    match stored {
        Some(s) if s != computed.as_slice() => Err(Error::Integrity(format!(
            "{} does not match its SHA-256",
            what()
        ))),
        _ => Ok(()),
    }
}
