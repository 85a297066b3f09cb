//! Transactions and schema migrations on PostgreSQL, shared by the node's and the aggregator's
//! stores: a transaction retried a bounded number of times on a serialization failure or a
//! deadlock, and numbered migrations recorded per component in `dpdist_schema`.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, IsolationLevel, Transaction};

use crate::{Error, Result};

/// Times a transaction is tried when PostgreSQL reports a serialization failure (40001) or a
/// deadlock (40P01) before the error is returned.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// A PostgreSQL error with its SQLSTATE and the server's detail, for logs (never for HTTP
/// answers: handlers answer "internal error" and log this).
pub(crate) fn cause(e: &postgres::Error) -> String {
    let mut s = crate::tls::cause_chain(e);
    if let Some(code) = e.code() {
        s.push_str(&format!(" (SQLSTATE {})", code.code()));
    }
    s
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        Error::Postgres(cause(&e))
    }
}

/// The error of one try of a transaction: PostgreSQL's (maybe retried) or ours (never).
pub(crate) enum TxError {
    Pg(postgres::Error),
    Other(Error),
}

impl From<postgres::Error> for TxError {
    fn from(e: postgres::Error) -> Self {
        TxError::Pg(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Other(e)
    }
}

impl From<std::io::Error> for TxError {
    fn from(e: std::io::Error) -> Self {
        TxError::Other(e.into())
    }
}

fn retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// Runs `f` in a transaction at `isolation` and commits; runs it again (at most
/// [`MAX_ATTEMPTS`] times in all, after a short pause) when PostgreSQL reports a serialization
/// failure or a deadlock, in `f` or at commit.
pub(crate) fn in_tx<T>(
    client: &mut Client,
    isolation: IsolationLevel,
    mut f: impl FnMut(&mut Transaction<'_>) -> std::result::Result<T, TxError>,
) -> Result<T> {
    let mut attempt = 1;
    loop {
        let outcome = (|| {
            let mut tx = client
                .build_transaction()
                .isolation_level(isolation)
                .start()?;
            let value = f(&mut tx)?;
            tx.commit()?;
            Ok(value)
        })();
        match outcome {
            Ok(value) => return Ok(value),
            Err(TxError::Pg(e)) if retryable(&e) && attempt < MAX_ATTEMPTS => {
                tracing::warn!(
                    attempt,
                    "PostgreSQL: {}; trying the transaction again",
                    cause(&e)
                );
                std::thread::sleep(Duration::from_millis(10 << attempt));
                attempt += 1;
            }
            Err(TxError::Pg(e)) => return Err(e.into()),
            Err(TxError::Other(e)) => return Err(e),
        }
    }
}

/// One schema change of a component's tables.
pub(crate) struct PgMigration {
    pub(crate) version: i32,
    pub(crate) what: &'static str,
    pub(crate) sql: &'static str,
}

/// Applies the changes of `migrations` that the database lacks, all in one transaction with
/// the new version number in `dpdist_schema` (PostgreSQL's DDL is transactional: a crash
/// leaves the old version or the new one). An advisory lock makes processes starting at once
/// on one database take turns. A version newer than this code knows is refused.
pub(crate) fn migrate(
    client: &mut Client,
    component: &str,
    shown: &str,
    migrations: &[PgMigration],
) -> Result<()> {
    let latest = migrations.last().map_or(0, |m| m.version);
    let applied = in_tx(client, IsolationLevel::ReadCommitted, |tx| {
        tx.execute("SELECT pg_advisory_xact_lock(7243012877761)", &[])?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS dpdist_schema (
                 component TEXT PRIMARY KEY,
                 version INTEGER NOT NULL
             )",
        )?;
        let current: i32 = tx
            .query_opt(
                "SELECT version FROM dpdist_schema WHERE component = $1",
                &[&component],
            )?
            .map_or(0, |r| r.get(0));
        if current > latest {
            return Err(Error::Schema(format!(
                "{shown}: the {component} tables have schema version {current}, written by a \
                 newer dpdist; this version knows versions up to {latest} and does not open them"
            ))
            .into());
        }
        let mut applied = Vec::new();
        for m in migrations.iter().filter(|m| m.version > current) {
            tx.batch_execute(m.sql)?;
            applied.push((m.version, m.what));
        }
        tx.execute(
            "INSERT INTO dpdist_schema (component, version) VALUES ($1, $2)
             ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
            &[&component, &current.max(latest)],
        )?;
        Ok(applied)
    })?;
    for (version, what) in applied {
        tracing::info!(store = shown, version, "schema: {what}");
    }
    Ok(())
}
