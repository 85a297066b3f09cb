//! A PostgreSQL database given to a service's `--store`: parsed and checked once, shown
//! without its password, for the node's and the aggregator's stores alike.

use std::fmt;
use std::time::Duration;

use crate::db::postgres_tx::PgConnection;
use crate::{Error, Result};

/// A PostgreSQL database given to `--store`: the client's configuration and the URL as it may
/// be shown (without its password).
#[derive(Clone)]
pub struct PgLocation {
    config: Box<postgres::Config>,
    shown: String,
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
        Ok(PgLocation {
            config: Box::new(config),
            shown,
        })
    }

    /// A location made by a test's database helper ([`crate::db::postgres_test_db`]).
    #[cfg(test)]
    pub(crate) fn for_test(config: postgres::Config, shown: String) -> Self {
        PgLocation {
            config: Box::new(config),
            shown,
        }
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

    pub(crate) fn connect(&self) -> Result<PgConnection> {
        PgConnection::open(&self.config, &self.shown)
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
