//! The aggregator's store on PostgreSQL (`--store postgres://…`): one database that several
//! aggregator processes may share.
//!
//! The blocking `postgres` client blocks on a runtime of its own, which tokio refuses (panics)
//! on a thread that runs async tasks, and the aggregator calls its store from async handlers:
//! [`super::AggregatorStore`] runs every call through [`crate::db::blocking::off_async`], and
//! each call takes a connection from the location's pool (`--store-pool-size`), so calls from
//! several handlers run side by side, each in its own transaction.
//!
//! What must happen once across processes is decided by the rules above in one transaction;
//! the locks make their reads the rows they write: `lock_*` reads are `SELECT … FOR UPDATE`,
//! and the budget's lock is the one row of `agg_budget`, so two processes never both spend
//! the last of the budget. A round is locked before its release lease (a lease's first taker
//! has no lease row to lock yet: the round's row makes takers take turns). The acquirers of
//! several processes take expired job leases with `FOR UPDATE SKIP LOCKED`, so they get
//! distinct jobs. A transaction that fails with a serialization failure or a deadlock is run
//! again, a bounded number of times.
//!
//! A pooled connection opens itself again on the next call once the server closed it (a restart,
//! a failover, an idle connection cut); a transaction cut before its commit is run again on
//! the new connection, one cut during its commit is an error that says its outcome is unknown
//! (see [`crate::db::postgres_tx`]). Migrations run once, at open.

mod rows;

use std::fmt;

use postgres::IsolationLevel;

use super::tx::AggTx;
use crate::db::PgLocation;
use crate::db::migrations::{Schema, migrate_postgres};
use crate::db::postgres_tx;
use crate::{Error, Result};

/// A PostgreSQL database given to the aggregator's `--store` (the URL as it may be shown, without
/// its password, is its `Display`).
#[derive(Clone)]
pub struct AggregatorPgLocation(PgLocation);

impl fmt::Debug for AggregatorPgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for AggregatorPgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl AggregatorPgLocation {
    /// Parses a `postgres://` or `postgresql://` URL.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the URL (without a password) and what is wrong.
    pub fn parse(url: &str) -> Result<Self> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            // Whatever the scheme, what precedes the host may be a password.
            let shown = match (url.split_once("://"), url.rsplit_once('@')) {
                (Some((scheme, _)), Some((_, host))) => format!("{scheme}://***@{host}"),
                _ => url.to_string(),
            };
            return Err(Error::Postgres(format!(
                "--store {shown}: not a PostgreSQL URL (postgres://user@host:port/database); \
                 leave --store out and give --db for the SQLite store"
            )));
        }
        PgLocation::parse_as(
            url,
            "dpdist-aggregator",
            "leave --store out and give --db for the SQLite store",
        )
        .map(AggregatorPgLocation)
    }

    /// A location made by a test's database helper ([`crate::db::postgres_test_db`]).
    #[cfg(test)]
    pub(crate) fn for_test(config: postgres::Config, shown: String) -> Self {
        AggregatorPgLocation(PgLocation::for_test(config, shown))
    }

    /// The same database with a pool of at most `size` connections (`--store-pool-size`).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a size under [`crate::db::MIN_STORE_POOL_SIZE`].
    pub fn with_pool_size(self, size: u32) -> Result<Self> {
        self.0.with_pool_size(size).map(AggregatorPgLocation)
    }

    fn shown(&self) -> &str {
        self.0.shown()
    }
}

/// The aggregator's PostgreSQL store: each call takes a connection from the location's pool.
pub(crate) struct PgAggregatorStore {
    at: PgLocation,
}

impl PgAggregatorStore {
    /// Connects once and brings the schema up to date. Blocks: call it off the async threads
    /// ([`crate::db::blocking::off_async`]).
    pub fn open(at: &AggregatorPgLocation) -> Result<Self> {
        migrate_postgres(&mut at.0.connect_alone()?, Schema::Aggregator, at.shown())?;
        Ok(PgAggregatorStore { at: at.0.clone() })
    }

    /// Runs `f` in a READ COMMITTED transaction on a connection from the pool, retried as
    /// [`postgres_tx::in_tx`] does (what must not race takes row locks explicitly): a
    /// statement's failure that PostgreSQL may clear by running the transaction again (a
    /// serialization failure, a deadlock, a connection lost before the commit) reaches the
    /// retry loop as PostgreSQL's error, whatever the rules made of it. Blocks: call it off
    /// the async threads.
    pub fn run_tx<T>(&self, mut f: impl FnMut(&mut dyn AggTx) -> Result<T>) -> Result<T> {
        let mut conn = self.at.connect()?;
        postgres_tx::in_tx(&mut conn, IsolationLevel::ReadCommitted, |tx| {
            let mut rows = rows::PgRows::new(tx);
            let outcome = f(&mut rows);
            outcome.map_err(|e| rows.into_failure(e))
        })
    }

    /// Test hook: runs `sql` as is (to damage a row as a bad disk or a bad hand would).
    #[cfg(test)]
    pub fn execute(&self, sql: &str) -> Result<()> {
        Ok(self.at.connect()?.client()?.batch_execute(sql)?)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::test_db;
