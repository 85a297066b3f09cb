//! The SQLite node store (the embedded default): SQLite (bundled), WAL journal, `synchronous =
//! FULL`, so a committed share survives `kill -9` and power loss alike. One connection writes
//! (the store actor's); read-only connections ([`readers`]) read beside it.

mod readers;
mod tx;

use std::path::Path;

use fixedpoint_shares::ClientSet;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::StoredRound;
use super::layout::{agreed_name, check_blob, check_share, read_agreed};
use crate::Result;
use crate::db::migrations::{Schema, migrate_sqlite};
pub(crate) use readers::{SqliteAttemptReader, SqliteTokenLookup, SumBlob};
use readers::{check_stored_sum, for_each_attempt};
pub(crate) use tx::SqliteTx;

pub(crate) struct SqliteStore {
    conn: Connection,
}

/// The token hashes of a stored round, 32 raw bytes each, read chunk by chunk.
pub(crate) struct TokenChunks<'a> {
    conn: &'a Connection,
    id: [u8; 32],
    next: i64,
    buf: Vec<u8>,
    pos: usize,
}

impl std::io::Read for TokenChunks<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            let chunk: Option<Vec<u8>> = self
                .conn
                .prepare_cached(
                    "SELECT hashes FROM node_round_tokens WHERE round_id = ?1 AND chunk = ?2",
                )
                .and_then(|mut s| {
                    s.query_row(params![&self.id[..], self.next], |r| r.get(0))
                        .optional()
                })
                .map_err(std::io::Error::other)?;
            match chunk {
                None => return Ok(0),
                Some(c) => {
                    self.buf = c;
                    self.pos = 0;
                    self.next += 1;
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl SqliteStore {
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate_sqlite(&mut conn, Schema::Node, &path.display().to_string())?;
        Ok(SqliteStore { conn })
    }

    /// Runs `f` in an IMMEDIATE transaction (the write lock taken at its start, so what it
    /// reads stays true until it commits) and commits if `f` succeeds.
    pub fn run_tx<T>(&mut self, f: impl FnOnce(&mut SqliteTx<'_>) -> Result<T>) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&mut SqliteTx { conn: &tx })?;
        tx.commit()?;
        Ok(value)
    }

    pub fn rounds(&self) -> Result<Vec<StoredRound>> {
        // Only the sums' lengths are read (SQLite reads a blob's length without its content).
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.spec, length(u.sum) IS NOT NULL, s.aborted
             FROM node_rounds r LEFT JOIN node_round_state s ON s.id = r.id
             LEFT JOIN node_round_sums u ON u.id = r.id ORDER BY r.rowid",
        )?;
        let rows = stmt.query_map([], |r| {
            let id: Vec<u8> = r.get(0)?;
            Ok(StoredRound {
                id: id.try_into().unwrap_or([0; 32]),
                spec_json: r.get(1)?,
                sum_stored: r.get(2)?,
                aborted: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
    }

    /// The round's agreed set as stored (8 bytes per client, big-endian), read into a set of
    /// `universe` bits piece by piece (SQLite's incremental blob I/O), not held as bytes.
    ///
    /// # Errors
    /// A client id outside the universe or listed twice.
    pub fn agreed_set(&self, id: &[u8; 32], universe: usize) -> Result<Option<ClientSet>> {
        let row: Option<(i64, Option<Vec<u8>>)> = self
            .conn
            .query_row(
                "SELECT rowid, agreed_sha256 FROM node_round_state
                 WHERE id = ?1 AND length(agreed) IS NOT NULL",
                params![&id[..]],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((rowid, digest)) = row else {
            return Ok(None);
        };
        let open = || {
            self.conn
                .blob_open(rusqlite::MAIN_DB, "node_round_state", "agreed", rowid, true)
        };
        if let Some(digest) = digest {
            check_blob(open()?, &digest, || agreed_name(id))?;
        }
        let ids = std::io::BufReader::with_capacity(1 << 16, open()?);
        read_agreed(ids, universe).map(Some)
    }

    /// The id of the round stored under this numeric round id, if any.
    pub fn round_by_number(&self, round: u64) -> Result<Option<[u8; 32]>> {
        let id: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT id FROM node_rounds WHERE round = ?1",
                params![round as i64],
                |r| r.get(0),
            )
            .optional()?;
        Ok(id.map(|v| v.try_into().unwrap_or([0; 32])))
    }

    /// The token hashes of round `id`, streaming.
    pub fn token_chunks(&self, id: &[u8; 32]) -> TokenChunks<'_> {
        TokenChunks {
            conn: &self.conn,
            id: *id,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Calls `f(client, shard, message)` for every stored share of a round, streaming, in
    /// client order; `shard` is `None` for a share stored by a version that did not record it.
    ///
    /// Each message is checked against the SHA-256 stored with it before `f` sees it.
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] naming the first client whose stored share fails its check
    /// (the shares before it were passed to `f`).
    pub fn for_each_share(
        &self,
        id: &[u8; 32],
        mut f: impl FnMut(u64, Option<u64>, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT client, shard, digest, message FROM node_shares WHERE round_id = ?1 ORDER BY client",
        )?;
        let mut rows = stmt.query(params![&id[..]])?;
        while let Some(row) = rows.next()? {
            let client: i64 = row.get(0)?;
            let shard: Option<i64> = row.get(1)?;
            let digest = row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?;
            let message = row.get_ref(3)?.as_blob().map_err(rusqlite::Error::from)?;
            check_share(id, client as u64, digest, message)?;
            f(client as u64, shard.map(|s| s as u64), message)?;
        }
        Ok(())
    }

    /// Calls `f(client, shard)` for every stored share of a round, in client order, without
    /// reading the messages.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSpec`] for a share stored without its attempt (filled in on load).
    pub fn for_each_attempt(
        &self,
        id: &[u8; 32],
        f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        for_each_attempt(&self.conn, id, f)
    }

    /// The stored node sum of a round, if any.
    #[cfg(test)]
    pub fn sum(&self, id: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .conn
            .query_row(
                "SELECT sum FROM node_round_sums WHERE id = ?1",
                params![&id[..]],
                |r| r.get(0),
            )
            .optional()?
            .flatten())
    }

    /// Client `client`'s stored share of round `id`, checked against its stored SHA-256.
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] if the share fails its check.
    pub fn share(&self, id: &[u8; 32], client: u64) -> Result<Option<Vec<u8>>> {
        let row: Option<(Vec<u8>, Vec<u8>)> = self
            .conn
            .query_row(
                "SELECT digest, message FROM node_shares WHERE round_id = ?1 AND client = ?2",
                params![&id[..], client as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        row.map(|(digest, message)| {
            check_share(id, client, &digest, &message)?;
            Ok(message)
        })
        .transpose()
    }

    #[cfg(test)]
    pub fn set_agreed(&self, id: &[u8; 32], agreed: &[u8]) -> Result<()> {
        self.conn.execute(
            "INSERT INTO node_round_state (id, agreed) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET agreed = excluded.agreed",
            params![&id[..], agreed],
        )?;
        Ok(())
    }

    /// Checks the round's stored node sum against its stored SHA-256 (one read of the sum).
    /// `Ok(false)` if no sum is stored.
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] if the sum fails its check.
    pub fn check_sum(&self, id: &[u8; 32]) -> Result<bool> {
        check_stored_sum(&self.conn, id)
    }

    #[cfg(test)]
    pub fn set_sum(&self, id: &[u8; 32], sum: &[u8]) -> Result<()> {
        use sha2::Digest;
        self.conn.execute(
            "INSERT OR REPLACE INTO node_round_sums (id, sum, sum_sha256) VALUES (?1, ?2, ?3)",
            params![&id[..], sum, sha2::Sha256::digest(sum).as_slice()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
