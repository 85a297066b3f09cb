//! The PostgreSQL node store (`--store postgres://…`).
//!
//! The blocking `postgres` client runs a small runtime of its own and blocks on it, which
//! tokio refuses on an async worker thread: every call here is made from the store actor's
//! thread, the summing thread or a `spawn_blocking` thread, and a connection dropped on an
//! async thread is closed on a thread of its own ([`PgConnection`]).
//!
//! A process's connections come from the pool of its [`PgLocation`]: the store actor holds one
//! for its life; a token lookup, a received set's or a node sum's read, the summing thread and
//! a replica's lease renewals take one for as long as they read and give it back.
//!
//! Every connection here opens itself again on its next use once the server closed it; a
//! transaction cut before its commit is retried on the new connection, one cut during its
//! commit is an error (see [`crate::db::postgres_tx`]). A read of a few rows is made again on a new
//! connection; a streamed read (shares, attempts, a received set or a node sum being sent) cut
//! mid-way is an error: what it handed on cannot be taken back.
//!
//! Round state is a column of the round's row ([`tx`]); the rules that check and change it run
//! in one transaction each ([`PgStore::run_tx`]), run again after a serialization failure or
//! a deadlock, a bounded number of times.

mod readers;
mod tx;

use fixedpoint_shares::ClientSet;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, IsolationLevel};

use super::layout::{agreed_name, check_blob, check_share, read_agreed};
use super::{RoundState, StoredRound};
use crate::Result;
use crate::db::migrations::{Schema, migrate_postgres};
use crate::db::postgres_tx::{PgConnection, TxError, in_tx};
use crate::db::{PgLocation, PooledPg};
pub(crate) use readers::{PgReader, PgTokenLookup, SumBlob, TokenChunks};
use readers::{attempts, checked_sum};
pub(crate) use tx::PgTx;

fn id32(v: &[u8]) -> [u8; 32] {
    v.try_into().unwrap_or([0; 32])
}

fn state_of(s: Option<&str>) -> RoundState {
    match s {
        None => RoundState::Unknown,
        Some("open") => RoundState::Open,
        Some("closed") => RoundState::Closed,
        Some(_) => RoundState::Aborted,
    }
}

/// Runs `f` in one read-committed transaction on `conn` ([`in_tx`]: run again after a
/// serialization failure, a deadlock or a connection lost before the commit) and commits if
/// `f` succeeds.
fn run_tx<T>(
    conn: &mut PgConnection,
    mut f: impl FnMut(&mut PgTx<'_, '_>) -> Result<T>,
) -> Result<T> {
    in_tx(conn, IsolationLevel::ReadCommitted, |tx| {
        let mut rows = PgTx::new(tx);
        f(&mut rows).map_err(|e| match rows.failed.take() {
            Some(pg) => TxError::Pg(pg),
            None => TxError::Other(e),
        })
    })
}

/// The node's read-write connection (the store actor's), taken from the pool for the store's
/// life.
pub(crate) struct PgStore {
    conn: PooledPg,
}

impl PgStore {
    pub fn open(at: &PgLocation) -> Result<Self> {
        migrate_postgres(&mut at.connect_alone()?, Schema::Node, at.shown())?;
        Ok(PgStore {
            conn: at.connect()?,
        })
    }

    /// Runs `f` in one transaction ([`run_tx`]).
    pub fn run_tx<T>(&mut self, f: impl FnMut(&mut PgTx<'_, '_>) -> Result<T>) -> Result<T> {
        run_tx(&mut self.conn, f)
    }

    fn client(&mut self) -> Result<&mut Client> {
        self.conn.client()
    }

    pub fn rounds(&mut self) -> Result<Vec<StoredRound>> {
        let rows = self.conn.read(|c| {
            Ok(c.query(
                "SELECT r.id, r.spec, s.id IS NOT NULL, r.aborted, r.state
                 FROM node_rounds r LEFT JOIN node_round_sums s ON s.id = r.id ORDER BY r.round",
                &[],
            )?)
        })?;
        Ok(rows
            .iter()
            .map(|r| StoredRound {
                id: id32(r.get(0)),
                spec_json: r.get(1),
                sum_stored: r.get(2),
                aborted: (r.get::<_, &str>(4) == "aborted")
                    .then(|| r.get::<_, Option<String>>(3).unwrap_or_default()),
            })
            .collect())
    }

    pub fn agreed_set(&mut self, id: &[u8; 32], universe: usize) -> Result<Option<ClientSet>> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT agreed, agreed_sha256 FROM node_rounds WHERE id = $1 AND agreed IS NOT NULL",
                &[&&id[..]],
            )?)
        })?;
        let Some(row) = row else { return Ok(None) };
        let (agreed, digest): (&[u8], Option<&[u8]>) = (row.get(0), row.get(1));
        check_blob(agreed, digest.unwrap_or_default(), || agreed_name(id))?;
        read_agreed(agreed, universe).map(Some)
    }

    pub fn round_by_number(&mut self, round: u64) -> Result<Option<[u8; 32]>> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT id FROM node_rounds WHERE round = $1",
                &[&(round as i64)],
            )?)
        })?;
        Ok(row.map(|r| id32(r.get(0))))
    }

    pub fn token_chunks(&mut self, id: &[u8; 32]) -> Result<TokenChunks<'_>> {
        let rows = self.client()?.query_raw(
            "SELECT chunk, hashes FROM node_round_tokens WHERE round_id = $1 ORDER BY chunk",
            [&&id[..] as &(dyn ToSql + Sync)],
        )?;
        Ok(TokenChunks::new(rows))
    }

    pub fn for_each_share(
        &mut self,
        id: &[u8; 32],
        mut f: impl FnMut(u64, Option<u64>, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut rows = self.client()?.query_raw(
            "SELECT client, shard, digest, message FROM node_shares WHERE round_id = $1
             ORDER BY client",
            [&&id[..] as &(dyn ToSql + Sync)],
        )?;
        while let Some(row) = rows.next()? {
            let (client, shard): (i64, i64) = (row.get(0), row.get(1));
            let (digest, message): (&[u8], &[u8]) = (row.get(2), row.get(3));
            check_share(id, client as u64, digest, message)?;
            f(client as u64, Some(shard as u64), message)?;
        }
        Ok(())
    }

    pub fn for_each_attempt(
        &mut self,
        id: &[u8; 32],
        mut f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        let mut rows = attempts(self.client()?, id)?;
        while let Some(row) = rows.next()? {
            f(row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64)?;
        }
        Ok(())
    }

    pub fn share(&mut self, id: &[u8; 32], client: u64) -> Result<Option<Vec<u8>>> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT digest, message FROM node_shares WHERE round_id = $1 AND client = $2",
                &[&&id[..], &(client as i64)],
            )?)
        })?;
        row.map(|r| {
            let (digest, message): (&[u8], Vec<u8>) = (r.get(0), r.get(1));
            check_share(id, client, digest, &message)?;
            Ok(message)
        })
        .transpose()
    }

    /// The digest is computed by the server: the sum does not cross the connection.
    pub fn check_sum(&mut self, id: &[u8; 32]) -> Result<bool> {
        self.conn.read(|c| checked_sum(c, id)).map(|s| s.is_some())
    }

    /// Round `id` as stored, if it is (a replica loads a round another replica created).
    pub fn round(&mut self, id: &[u8; 32]) -> Result<Option<StoredRound>> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT r.id, r.spec, s.id IS NOT NULL, r.aborted, r.state
                 FROM node_rounds r LEFT JOIN node_round_sums s ON s.id = r.id WHERE r.id = $1",
                &[&&id[..]],
            )?)
        })?;
        Ok(row.map(|r| StoredRound {
            id: id32(r.get(0)),
            spec_json: r.get(1),
            sum_stored: r.get(2),
            aborted: (r.get::<_, &str>(4) == "aborted")
                .then(|| r.get::<_, Option<String>>(3).unwrap_or_default()),
        }))
    }

    /// The round's state, why it was aborted (if it was) and whether its node sum is stored,
    /// from one statement.
    pub fn round_state(&mut self, id: &[u8; 32]) -> Result<StoredState> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT r.state, r.aborted, s.id IS NOT NULL
                 FROM node_rounds r LEFT JOIN node_round_sums s ON s.id = r.id WHERE r.id = $1",
                &[&&id[..]],
            )?)
        })?;
        Ok(match row {
            None => StoredState {
                state: RoundState::Unknown,
                aborted: None,
                sum_stored: false,
            },
            Some(r) => StoredState {
                state: state_of(Some(r.get(0))),
                aborted: r.get(1),
                sum_stored: r.get(2),
            },
        })
    }

    /// The number of shares stored for the round.
    pub fn count_shares(&mut self, id: &[u8; 32]) -> Result<usize> {
        let row = self.conn.read(|c| {
            Ok(c.query_one(
                "SELECT count(*) FROM node_shares WHERE round_id = $1",
                &[&&id[..]],
            )?)
        })?;
        Ok(row.get::<_, i64>(0) as usize)
    }

    /// The lease's holder and expiry, if a lease row exists.
    #[cfg(test)]
    pub fn sum_lease(&mut self, id: &[u8; 32]) -> Result<Option<(String, u64)>> {
        let row = self.conn.read(|c| {
            Ok(c.query_opt(
                "SELECT holder, expires_ms FROM node_sum_leases WHERE round_id = $1",
                &[&&id[..]],
            )?)
        })?;
        Ok(row.map(|r| (r.get(0), r.get::<_, i64>(1) as u64)))
    }
}

/// A round's state as one replica reads it from the shared store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredState {
    pub state: RoundState,
    pub aborted: Option<String>,
    pub sum_stored: bool,
}

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod tests;
