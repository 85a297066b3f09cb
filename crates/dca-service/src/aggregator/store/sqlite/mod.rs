//! The aggregator's store on SQLite (WAL, `synchronous = FULL`): the default, one file that
//! one aggregator process owns. Every transaction is an immediate one: it holds the file's
//! write lock from its first statement, so a rule's reads are the rows it writes, whoever
//! else opened the file.

mod rows;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, TransactionBehavior};

use super::tx::AggTx;
use crate::db::migrations::{Migration, add_column_if_missing, migrate};
use crate::{Error, Result};

pub(crate) struct SqliteAggregatorStore {
    conn: Mutex<Connection>,
}

impl SqliteAggregatorStore {
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate(
            &mut conn,
            AGGREGATOR_MIGRATIONS,
            &path.display().to_string(),
        )?;
        // The file is one process's: a lease found in it is an earlier run's, whose holder is
        // gone. The restarted aggregator resumes its rounds and jobs at once instead of after
        // the lease.
        conn.execute("UPDATE release_leases SET expires_ms = 0", [])?;
        conn.execute("UPDATE job_leases SET expires_ms = 0", [])?;
        Ok(SqliteAggregatorStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("aggregator database lock poisoned")))
    }

    /// Runs `f` in an immediate transaction, committed if it returns `Ok`.
    pub fn run_tx<T>(&self, mut f: impl FnMut(&mut dyn AggTx) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&mut rows::SqliteRows(&tx))?;
        tx.commit()?;
        Ok(value)
    }

    /// Test hook: runs `sql` as is (to damage a row as a bad disk would).
    #[cfg(test)]
    pub fn damage(&self, sql: &str) -> Result<()> {
        self.conn()?.execute_batch(sql)?;
        Ok(())
    }
}

/// The aggregator store's schema changes (see [`crate::db::migrations`]).
const AGGREGATOR_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "rounds with their state and release, charges",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS rounds (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT);
                 CREATE TABLE IF NOT EXISTS charges (id TEXT PRIMARY KEY, rho REAL NOT NULL);",
            )
        },
    },
    Migration {
        version: 2,
        what: "recorded agreed sets; SHA-256 of every row",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS closes (
                     id TEXT PRIMARY KEY, body BLOB NOT NULL, sha256 BLOB NOT NULL);",
            )?;
            // Rows written before have NULL here and are read unchecked.
            add_column_if_missing(tx, "rounds", "sha256", "BLOB")?;
            add_column_if_missing(tx, "charges", "sha256", "BLOB")
        },
    },
    Migration {
        version: 3,
        what: "jobs, their participants' answers and their rounds",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS jobs (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, status BLOB NOT NULL,
                     sha256 BLOB NOT NULL);
                 CREATE TABLE IF NOT EXISTS answers (
                     job TEXT NOT NULL, participant INTEGER NOT NULL, answer BLOB NOT NULL,
                     sha256 BLOB NOT NULL, PRIMARY KEY (job, participant));
                 CREATE TABLE IF NOT EXISTS job_rounds (
                     round TEXT PRIMARY KEY, job TEXT NOT NULL, rho REAL,
                     sha256 BLOB NOT NULL);",
            )
        },
    },
    Migration {
        version: 4,
        what: "a release lease per closing round: the caller that drives its release",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS release_leases (
                     round_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                     expires_ms INTEGER NOT NULL);",
            )
        },
    },
    Migration {
        version: 5,
        what: "a driver lease per job: the caller that drives it",
        // Jobs recorded before get a lease held by nobody: the first driver to take one finds
        // out whether the job is still live, and marks it ended if not.
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS job_leases (
                     job_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                     expires_ms INTEGER NOT NULL, ended INTEGER NOT NULL DEFAULT 0);
                 INSERT OR IGNORE INTO job_leases (job_id, holder, expires_ms)
                     SELECT id, '', 0 FROM jobs ORDER BY rowid;",
            )
        },
    },
    Migration {
        version: 6,
        what: "a round whose release became impossible ends as 'failed', with the cause",
        // The state column is free text here (PostgreSQL's has a CHECK, changed by its own
        // migration 4): no table changes. The version number is what matters: a store that
        // may hold failed rounds is refused by the versions that do not know the state, which
        // would take such a round for a live one and retry it forever.
        apply: |_| Ok(()),
    },
];
