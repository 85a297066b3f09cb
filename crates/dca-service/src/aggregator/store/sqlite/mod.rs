//! The aggregator's store on SQLite (WAL, `synchronous = FULL`): the default, one file that
//! one aggregator process owns. Every transaction is an immediate one: it holds the file's
//! write lock from its first statement, so a rule's reads are the rows it writes, whoever
//! else opened the file.

mod rows;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, TransactionBehavior};

use super::tx::AggTx;
use crate::db::migrations::{Schema, migrate_sqlite};
use crate::{Error, Result};

pub(crate) struct SqliteAggregatorStore {
    conn: Mutex<Connection>,
}

impl SqliteAggregatorStore {
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate_sqlite(&mut conn, Schema::Aggregator, &path.display().to_string())?;
        // The file is one process's: a lease found in it is an earlier run's, whose holder is
        // gone. The restarted aggregator resumes its rounds and jobs at once instead of after
        // the lease.
        conn.execute("UPDATE agg_release_leases SET expires_ms = 0", [])?;
        conn.execute("UPDATE agg_job_leases SET expires_ms = 0", [])?;
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
