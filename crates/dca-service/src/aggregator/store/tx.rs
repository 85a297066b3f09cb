//! The one interface between the aggregator store's rules and its backends: typed reads and
//! writes of rows, inside one transaction that [`super::AggregatorStore::run_tx`] opens.
//!
//! A backend decides nothing here. It maps rows to these types and back; the rules (which
//! state may follow which, who may write, what the budget allows, whether a row's SHA-256
//! matches) are the callers'. What makes a read-decide-write safe against other processes is
//! the locks: every `lock_*` read holds the row until the transaction ends (PostgreSQL: `SELECT
//! … FOR UPDATE`; SQLite: the immediate transaction already holds the whole file), so the row a
//! rule decided on is the row it writes.

use super::RoundPhase;
use crate::Result;

/// A round's row. `sha256` is `None` on rows written before digests were kept.
#[derive(Clone, Debug)]
pub(crate) struct RoundRow {
    pub id: String,
    pub spec: Vec<u8>,
    pub state: RoundPhase,
    /// What the state carries: the abort's reason, the release, the failure's cause.
    pub detail: Option<String>,
    pub sha256: Option<Vec<u8>>,
}

/// A charge to the privacy budget: a round's, or a job's reservation (`job:{id}`).
#[derive(Clone, Debug)]
pub(crate) struct ChargeRow {
    pub id: String,
    pub rho: f64,
    /// δ_t of a verified round's truncated noise (0 for every other charge).
    pub truncation_delta: f64,
    pub sha256: Option<Vec<u8>>,
}

/// A job's row: spec and status (JSON).
#[derive(Clone, Debug)]
pub(crate) struct JobRow {
    pub id: String,
    pub spec: Vec<u8>,
    pub status: Vec<u8>,
    pub sha256: Vec<u8>,
}

/// A participant's answer to a job.
#[derive(Clone, Debug)]
pub(crate) struct AnswerRow {
    pub job: String,
    pub index: usize,
    pub answer: Vec<u8>,
    pub sha256: Vec<u8>,
}

/// A round of a job, with its cost once it was closed.
#[derive(Clone, Debug)]
pub(crate) struct JobRoundRow {
    pub round: String,
    pub job: String,
    pub rho: Option<f64>,
    pub sha256: Vec<u8>,
}

/// A lease: who holds it and until when (ms since the Unix epoch, by the aggregator's clock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lease {
    pub holder: String,
    pub expires_ms: u64,
}

/// A job's driver lease; `ended` once the job is over (nobody takes it again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobLease {
    pub lease: Lease,
    pub ended: bool,
}

/// Typed reads and writes of the aggregator's rows within one transaction. Lists come oldest
/// first (the order the rows were written in).
pub(crate) trait AggTx {
    /// Holds the budget until the transaction ends: every transaction that decides a charge
    /// from the charges recorded, or changes one, takes it first, so they run one at a time.
    fn lock_budget(&mut self) -> Result<()>;
    fn charges(&mut self) -> Result<Vec<ChargeRow>>;
    fn charge(&mut self, id: &str) -> Result<Option<ChargeRow>>;
    fn insert_charge(&mut self, row: &ChargeRow) -> Result<()>;
    fn update_charge(&mut self, row: &ChargeRow) -> Result<()>;

    /// Inserts the round unless a round with its id exists; whether it did.
    fn insert_round(&mut self, row: &RoundRow) -> Result<bool>;
    fn round_row(&mut self, id: &str) -> Result<Option<RoundRow>>;
    fn lock_round(&mut self, id: &str) -> Result<Option<RoundRow>>;
    fn rounds_in(&mut self, states: &[RoundPhase]) -> Result<Vec<RoundRow>>;
    /// The id and state of every round in `states`, its spec not read.
    fn round_states_in(&mut self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>>;
    /// How many rounds each recorded state has (states without rounds left out).
    fn count_rounds(&mut self) -> Result<Vec<(RoundPhase, usize)>>;
    fn put_round_state(&mut self, row: &RoundRow) -> Result<()>;
    /// The close request recorded for the round and its SHA-256.
    fn close_row(&mut self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
    fn insert_close(&mut self, id: &str, body: &[u8], sha256: &[u8]) -> Result<()>;

    fn lock_release_lease(&mut self, round: &str) -> Result<Option<Lease>>;
    /// Writes the round's release lease, inserted if it has none.
    fn put_release_lease(&mut self, round: &str, lease: &Lease) -> Result<()>;

    /// Inserts the job unless a job with its id exists; whether it did.
    fn insert_job(&mut self, row: &JobRow) -> Result<bool>;
    fn job_row(&mut self, id: &str) -> Result<Option<JobRow>>;
    fn lock_job(&mut self, id: &str) -> Result<Option<JobRow>>;
    fn job_rows(&mut self) -> Result<Vec<JobRow>>;
    fn job_ids(&mut self) -> Result<Vec<String>>;
    /// The job row's SHA-256 alone.
    fn job_sha256(&mut self, id: &str) -> Result<Option<Vec<u8>>>;
    fn put_job_status(&mut self, row: &JobRow) -> Result<()>;

    fn insert_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()>;
    fn lock_job_lease(&mut self, job: &str) -> Result<Option<JobLease>>;
    fn put_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()>;
    /// Gives the lease `to` (a holder and an expiry) to at most `limit` jobs that have not ended and
    /// whose lease expired by `now_ms`, oldest job first; their ids, oldest first. One
    /// statement, whose rule is the one [`super::AggregatorStore::take_job_lease`] decides
    /// from a locked row; jobs locked by another transaction are skipped, so acquirers in
    /// several processes get distinct jobs.
    fn acquire_job_leases(&mut self, to: &Lease, now_ms: u64, limit: usize) -> Result<Vec<String>>;

    /// Inserts the answer unless the participant gave one already.
    fn insert_answer(&mut self, row: &AnswerRow) -> Result<()>;
    fn answer_row(&mut self, job: &str, index: usize) -> Result<Option<AnswerRow>>;
    fn answer_rows(&mut self, job: &str) -> Result<Vec<AnswerRow>>;

    /// Inserts the link unless the round has one already.
    fn insert_job_round(&mut self, row: &JobRoundRow) -> Result<()>;
    fn job_round_row(&mut self, round: &str) -> Result<Option<JobRoundRow>>;
    fn job_round_rows(&mut self, job: &str) -> Result<Vec<JobRoundRow>>;
    /// Rewrites the cost of the round `row.round` of job `row.job` (nothing if not linked).
    fn put_job_round(&mut self, row: &JobRoundRow) -> Result<()>;
}
