//! The aggregator's store on PostgreSQL (`--store postgres://…`): one database that several
//! aggregator processes may share.
//!
//! The blocking `postgres` client blocks on a runtime of its own, which tokio refuses (panics)
//! on a thread that runs async tasks, and the aggregator calls its store from async handlers.
//! So the connection lives on a thread of its own and every call is shipped to it as a closure
//! and answered over a channel: the aggregator's code stays the same synchronous calls as on
//! SQLite, and waiting on a channel is no worse for the async thread than SQLite's mutex.
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
//! The connection opens itself again on the next call once the server closed it (a restart,
//! a failover, an idle connection cut); a transaction cut before its commit is run again on
//! the new connection, one cut during its commit is an error that says its outcome is unknown
//! (see [`crate::db::postgres_tx`]). Migrations run once, at open.

mod rows;

use std::fmt;
use std::sync::mpsc;

use postgres::IsolationLevel;

use super::tx::AggTx;
use crate::db::PgLocation;
use crate::db::migrations::{Schema, migrate_postgres};
use crate::db::postgres_tx::{self, PgConnection};
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

    fn shown(&self) -> &str {
        self.0.shown()
    }

    fn connect(&self) -> Result<PgConnection> {
        self.0.connect()
    }
}

type Call = Box<dyn FnOnce(&mut PgConnection) + Send>;

pub(crate) struct PgAggregatorStore {
    calls: mpsc::Sender<Call>,
    shown: String,
}

impl PgAggregatorStore {
    /// Connects (on the store's own thread) and brings the schema up to date.
    pub fn open(at: &AggregatorPgLocation) -> Result<Self> {
        let (calls, inbox) = mpsc::channel::<Call>();
        let (ready, opened) = mpsc::sync_channel(1);
        let location = at.clone();
        std::thread::Builder::new()
            .name("dpdist-aggregator-pg".into())
            .spawn(move || {
                let connected = location.connect().and_then(|mut conn| {
                    migrate_postgres(&mut conn, Schema::Aggregator, location.shown())?;
                    Ok(conn)
                });
                let mut conn = match connected {
                    Ok(conn) => conn,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                let _ = ready.send(Ok(()));
                // Ends when the store (the only sender) is dropped.
                for call in inbox {
                    call(&mut conn);
                }
            })?;
        opened
            .recv()
            .map_err(|_| Error::Postgres(format!("{}: the store thread stopped", at.shown())))??;
        Ok(PgAggregatorStore {
            calls,
            shown: at.shown().to_string(),
        })
    }

    /// Runs `f` on the store's thread and waits for its answer.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PgConnection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (reply, answer) = mpsc::sync_channel(1);
        let gone = || Error::Postgres(format!("{}: the store thread stopped", self.shown));
        self.calls
            .send(Box::new(move |client| {
                let _ = reply.send(f(client));
            }))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }

    /// Runs `f` in a READ COMMITTED transaction on the store's thread, retried as
    /// [`postgres_tx::in_tx`] does (what must not race takes row locks explicitly): a
    /// statement's failure that PostgreSQL may clear by running the transaction again (a
    /// serialization failure, a deadlock, a connection lost before the commit) reaches the
    /// retry loop as PostgreSQL's error, whatever the rules made of it.
    pub fn run_tx<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&mut dyn AggTx) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let span = tracing::Span::current();
        self.call(move |conn| {
            let _entered = span.enter();
            postgres_tx::in_tx(conn, IsolationLevel::ReadCommitted, |tx| {
                let mut rows = rows::PgRows::new(tx);
                let outcome = f(&mut rows);
                outcome.map_err(|e| rows.into_failure(e))
            })
        })
    }

    /// Test hook: runs `sql` as is (to damage a row as a bad disk or a bad hand would).
    #[cfg(test)]
    pub fn execute(&self, sql: &str) -> Result<()> {
        let sql = sql.to_string();
        self.call(move |conn| Ok(conn.client()?.batch_execute(&sql)?))
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) use tests::test_db;
