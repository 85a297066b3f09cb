//! A PostgreSQL database given to a service's `--store`: parsed and checked once, shown
//! without its password, for the node's and the aggregator's stores alike; and the pool its
//! connections are taken from.
//!
//! The pool is r2d2's over [`PgConnection`]s (not r2d2_postgres's bare clients): a pooled
//! connection that the server closed opens itself again on its next use and its transactions
//! keep the rules of [`crate::db::postgres_tx`] (bounded retries, a commit of unknown outcome
//! never retried). So the pool checks nothing on checkout (a round trip per use) and never
//! discards a connection as broken.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::db::postgres_tx::PgConnection;
use crate::{Error, Result};

/// Connections to its PostgreSQL store that one process keeps open at most, unless
/// `--store-pool-size` says otherwise.
pub const DEFAULT_STORE_POOL_SIZE: u32 = 10;

/// The fewest `--store-pool-size` allows: a node's store actor holds one connection for its
/// life, and an upload's token lookup and a received set's read need one each beside it.
pub const MIN_STORE_POOL_SIZE: u32 = 3;

/// How long a call waits for a free connection (or for a new one to be opened) before failing.
const POOL_WAIT: Duration = Duration::from_secs(10);

/// A connection taken from a location's pool; it goes back when dropped.
pub(crate) type PooledPg = r2d2::PooledConnection<Manager>;

/// A PostgreSQL database given to `--store`: the client's configuration, the URL as it may be
/// shown (without its password) and the pool of connections to it. Clones share the pool: the
/// stores and readers one process opens on one location draw from it.
#[derive(Clone)]
pub struct PgLocation {
    config: Box<postgres::Config>,
    shown: String,
    pool_size: u32,
    pool: Arc<OnceLock<r2d2::Pool<Manager>>>,
}

impl fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Display for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgLocation {
    /// Parses a `postgres://` or `postgresql://` URL for a node's store.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the URL (without a password) and what is wrong.
    pub fn parse(url: &str) -> Result<Self> {
        Self::parse_as(
            url,
            "dpdist-node",
            "leave --store out for the SQLite store in --data-dir",
        )
    }

    /// Parses `url` for the service named `application_name` (as the server's
    /// `pg_stat_activity` shows it); `instead` tells a user who gave another scheme what to
    /// do.
    pub(crate) fn parse_as(url: &str, application_name: &str, instead: &str) -> Result<Self> {
        let shown = redact(url);
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::Postgres(format!(
                "--store {shown}: not a PostgreSQL URL (postgres://user@host:port/database); \
                 {instead}"
            )));
        }
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| Error::Postgres(format!("--store {shown}: {e}")))?;
        if config.get_dbname().is_none() {
            return Err(Error::Postgres(format!(
                "--store {shown}: the URL names no database (…/database)"
            )));
        }
        if config.get_connect_timeout().is_none() {
            // An unreachable server is an error at start, not a hang.
            config.connect_timeout(Duration::from_secs(10));
        }
        config.application_name(application_name);
        Ok(Self::new(config, shown))
    }

    fn new(config: postgres::Config, shown: String) -> Self {
        PgLocation {
            config: Box::new(config),
            shown,
            pool_size: DEFAULT_STORE_POOL_SIZE,
            pool: Arc::default(),
        }
    }

    /// A location made by a test's database helper ([`crate::db::postgres_test_db`]).
    #[cfg(test)]
    pub(crate) fn for_test(config: postgres::Config, shown: String) -> Self {
        Self::new(config, shown)
    }

    /// The same database with a pool of at most `size` connections (`--store-pool-size`), not
    /// shared with this location's clones made before.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a size under [`MIN_STORE_POOL_SIZE`].
    pub fn with_pool_size(self, size: u32) -> Result<Self> {
        if size < MIN_STORE_POOL_SIZE {
            return Err(Error::InvalidSpec(format!(
                "--store-pool-size {size}: at least {MIN_STORE_POOL_SIZE} connections are needed"
            )));
        }
        Ok(PgLocation {
            pool_size: size,
            pool: Arc::default(),
            ..self
        })
    }

    /// The most connections the pool keeps open.
    pub fn pool_size(&self) -> u32 {
        self.pool_size
    }

    /// The client's configuration, for tests that connect around the store.
    #[cfg(test)]
    pub(crate) fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// The database as it may be shown (no password).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// A connection of its own, outside the pool: a store connects once this way at open
    /// (an unreachable database is an error at start, named, rather than a wait for the pool)
    /// and migrates its schema on it.
    pub(crate) fn connect_alone(&self) -> Result<PgConnection> {
        PgConnection::open(&self.config, &self.shown)
    }

    /// A connection from the pool (opened if none is free and the pool is not full), waiting
    /// up to 10 s for one.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the database and the last error in opening a connection,
    /// if any.
    pub(crate) fn connect(&self) -> Result<PooledPg> {
        let pool = self.pool.get_or_init(|| {
            r2d2::Pool::builder()
                .max_size(self.pool_size)
                // Opened as needed, not all at start; idle ones are closed after r2d2's 10 min.
                .min_idle(Some(0))
                .test_on_check_out(false)
                .connection_timeout(POOL_WAIT)
                .error_handler(Box::new(LogErrors))
                .build_unchecked(Manager {
                    config: self.config.clone(),
                    shown: self.shown.clone(),
                })
        });
        pool.get().map_err(|e| {
            Error::Postgres(format!(
                "{}: no free connection in the pool of {} within {} s{}",
                self.shown,
                self.pool_size,
                POOL_WAIT.as_secs(),
                e.to_string()
                    .strip_prefix("timed out waiting for connection")
                    .unwrap_or_default()
            ))
        })
    }
}

/// Opens a location's pooled connections.
pub(crate) struct Manager {
    config: Box<postgres::Config>,
    shown: String,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConnection;
    type Error = Error;

    fn connect(&self) -> Result<PgConnection> {
        PgConnection::open(&self.config, &self.shown)
    }

    fn is_valid(&self, _: &mut PgConnection) -> Result<()> {
        Ok(())
    }

    fn has_broken(&self, _: &mut PgConnection) -> bool {
        false
    }
}

/// The pool's failures to open a connection, in the service's log (r2d2 logs through `log`,
/// which the services do not collect).
#[derive(Debug)]
struct LogErrors;

impl r2d2::HandleError<Error> for LogErrors {
    fn handle_error(&self, error: Error) {
        tracing::warn!("PostgreSQL pool: {error}");
    }
}

/// `url` with the password, if any, replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool's size is the default unless set, never under the minimum, and shown nowhere
    /// with the password.
    #[test]
    fn the_pool_size_is_checked() {
        let at = PgLocation::parse("postgres://u:hunter2@127.0.0.1:5432/db").unwrap();
        assert_eq!(at.pool_size(), DEFAULT_STORE_POOL_SIZE);
        assert_eq!(at.clone().with_pool_size(3).unwrap().pool_size(), 3);
        match at.with_pool_size(MIN_STORE_POOL_SIZE - 1) {
            Err(Error::InvalidSpec(m)) => assert!(m.contains("--store-pool-size"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
