//! The aggregator's durable state: every round's fate (created → closing → released, or
//! created → aborting → aborted, or closing → failed when a node reports that the release has
//! become impossible), the agreed set it was closed with, every charge to the
//! privacy budget, jobs and their participants' answers. Two backends: SQLite (`sqlite`, the
//! default: one file, one process) and PostgreSQL (`postgres`, `--store postgres://…`: one
//! database that several aggregator processes may share).
//!
//! Built as Janus's datastore is: the backends implement [`tx::AggTx`], typed reads and
//! writes of rows and nothing else; every operation of [`AggregatorStore`] is one named
//! transaction ([`AggregatorStore::run_tx`]) whose closure holds the rules, written once
//! (`rounds`, `leases`, `jobs`), over those reads and writes. Each named transaction runs in a
//! `tracing` span and is counted and timed by name (`dpdist_store_transactions_total`,
//! `dpdist_store_transaction_seconds`).
//!
//! Each state change checks the state it leaves in the same transaction, the row locked, so a
//! round is closed, charged and released at most once whatever crashes in between, and by
//! whichever process. Every charge is checked against the budget with the charges as recorded
//! in that same transaction, under the budget's lock (not against a copy in memory), so
//! processes sharing the store cannot overspend it between them. Every row carries a SHA-256
//! of its content, checked whenever it is read (see `digests`).
//!
//! A closing round is driven (its recorded close sent to every node, the node sums fetched and
//! added, the release recorded) by the holder of its release lease: a row naming the holder
//! and when its lease expires by the aggregator's clock, taken when no lease is live, renewed
//! while the holder works, and checked again when the release is recorded. Lease rows carry
//! no SHA-256: they decide who works, never what is released (the compare-and-swaps above
//! decide that).
//!
//! A live job is driven (its answers closed, its rounds planned and created, its status
//! written) by the holder of its driver lease: a row per job, written with the job, taken when
//! no other holder's lease is live, renewed while the driver runs, and marked ended in the
//! transaction that settles the job. The driver's status writes check the lease in their own
//! transaction: a driver whose lease was taken over, or whose job ended, writes nothing.

#[cfg(test)]
mod damaged_rows_tests;
mod digests;
#[cfg(test)]
mod job_lease_tests;
mod jobs;
mod leases;
mod postgres;
#[cfg(test)]
mod release_lease_tests;
mod round_state;
#[cfg(test)]
mod round_tests;
mod rounds;
mod sqlite;
#[cfg(test)]
mod sqlite_tests;
mod tx;
#[cfg(test)]
mod upgrade_tests;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::db::blocking::off_async;
use crate::http::metrics::TxMetrics;
use crate::{Error, Result};

pub(crate) use digests::job_sha256;
pub use jobs::JobCharge;
pub use postgres::AggregatorPgLocation;
#[cfg(test)]
pub(crate) use postgres::test_db as pg_test_db;
pub use round_state::{RoundPhase, RoundState};
pub use rounds::Charges;
use tx::AggTx;

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

    /// The same store with a pool of at most `size` PostgreSQL connections
    /// (`--store-pool-size`); a SQLite store has no pool and is returned as it is.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a size under [`crate::db::MIN_STORE_POOL_SIZE`].
    pub fn with_pool_size(self, size: u32) -> Result<Self> {
        match self {
            Self::Postgres(pg) => pg.with_pool_size(size).map(Self::Postgres),
            sqlite => Ok(sqlite),
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

/// The aggregator's store: its backend, and the count and time of its transactions by name.
pub(crate) struct AggregatorStore {
    backend: Backend,
    transactions: TxMetrics,
}

enum Backend {
    Sqlite(sqlite::SqliteAggregatorStore),
    Postgres(postgres::PgAggregatorStore),
}

impl AggregatorStore {
    pub fn open(at: &AggregatorStoreLocation) -> Result<Self> {
        let backend = match at {
            AggregatorStoreLocation::Sqlite(path) => Backend::Sqlite(off_async(false, || {
                sqlite::SqliteAggregatorStore::open(path)
            })?),
            AggregatorStoreLocation::Postgres(pg) => {
                Backend::Postgres(off_async(true, || postgres::PgAggregatorStore::open(pg))?)
            }
        };
        Ok(AggregatorStore {
            backend,
            transactions: TxMetrics::default(),
        })
    }

    /// The count and time of this store's transactions, by name (for `/metrics`).
    pub fn transaction_metrics(&self) -> TxMetrics {
        self.transactions.clone()
    }

    /// Runs `f` in one transaction named `name`: committed if `f` returns `Ok`, rolled back
    /// otherwise. `f` may run more than once (PostgreSQL retries a transaction that lost a
    /// race or its connection before the commit), so it changes nothing outside the
    /// transaction.
    ///
    /// Called from async handlers and tasks, it runs off the async threads
    /// ([`off_async`]): the store's calls block.
    fn run_tx<T: Send + 'static>(
        &self,
        name: &'static str,
        f: impl FnMut(&mut dyn AggTx) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let span = tracing::debug_span!("store_tx", name);
        let own_thread = matches!(self.backend, Backend::Postgres(_));
        off_async(own_thread, || {
            let _entered = span.enter();
            let started = Instant::now();
            let outcome = match &self.backend {
                Backend::Sqlite(s) => s.run_tx(f),
                Backend::Postgres(s) => s.run_tx(f),
            };
            self.transactions.observe(name, outcome.is_ok(), started);
            if let Err(e) = &outcome {
                tracing::debug!("{e}");
            }
            outcome
        })
    }

    /// Test hook: runs `sql` as is (to damage a row as a bad disk or a bad hand would).
    #[cfg(test)]
    pub fn damage(&self, sql: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(s) => s.damage(sql),
            Backend::Postgres(s) => off_async(true, || s.execute(sql)),
        }
    }
}
