//! [`NodeTx`] on SQLite: the rows of one IMMEDIATE transaction.
//!
//! A round's state is not a column here: it is closed once its agreed set is stored and
//! aborted once a reason is, in `node_round_state`.

use fixedpoint_shares::ClientSet;
use rusqlite::{Connection, OptionalExtension, params};

use super::super::layout::agreed_words;
use super::super::tx::{NewSum, NodeTx, RowLock};
use super::super::{PendingShare, RoundState};
use crate::Result;

pub(crate) struct SqliteTx<'a> {
    pub(super) conn: &'a Connection,
}

impl NodeTx for SqliteTx<'_> {
    /// The transaction holds the file's write lock already: `lock` asks for nothing more.
    fn round_state(&mut self, id: &[u8; 32], _lock: RowLock) -> Result<RoundState> {
        let row: Option<(bool, bool)> = self
            .conn
            .prepare_cached(
                "SELECT s.aborted IS NOT NULL, length(s.agreed) IS NOT NULL
                 FROM node_rounds r LEFT JOIN node_round_state s ON s.id = r.id WHERE r.id = ?1",
            )?
            .query_row(params![&id[..]], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(match row {
            None => RoundState::Unknown,
            Some((true, _)) => RoundState::Aborted,
            Some((false, true)) => RoundState::Closed,
            Some((false, false)) => RoundState::Open,
        })
    }

    fn insert_round(&mut self, id: &[u8; 32], round: u64, spec_json: &[u8]) -> Result<()> {
        self.conn.execute(
            "INSERT INTO node_rounds (id, round, spec) VALUES (?1, ?2, ?3)",
            params![&id[..], round as i64, spec_json],
        )?;
        Ok(())
    }

    fn replace_spec(&mut self, id: &[u8; 32], spec_json: &[u8]) -> Result<()> {
        self.conn.execute(
            "UPDATE node_rounds SET spec = ?2 WHERE id = ?1",
            params![&id[..], spec_json],
        )?;
        Ok(())
    }

    fn delete_token_chunks(&mut self, id: &[u8; 32]) -> Result<()> {
        self.conn.execute(
            "DELETE FROM node_round_tokens WHERE round_id = ?1",
            params![&id[..]],
        )?;
        Ok(())
    }

    fn insert_token_chunks(&mut self, id: &[u8; 32], first: u64, chunks: &[&[u8]]) -> Result<()> {
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO node_round_tokens (round_id, chunk, hashes) VALUES (?1, ?2, ?3)",
        )?;
        for (k, hashes) in (first..).zip(chunks) {
            insert.execute(params![&id[..], k as i64, hashes])?;
        }
        Ok(())
    }

    /// The usual case (a new client) costs one index probe: the insert is tried first and
    /// skipped on a key conflict.
    fn insert_share(&mut self, p: &PendingShare<'_>) -> Result<bool> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO node_shares (round_id, client, shard, digest, message)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (round_id, client) DO NOTHING",
            )?
            .execute(params![
                &p.round_id[..],
                p.client as i64,
                p.shard as i64,
                &p.digest[..],
                p.message
            ])?;
        Ok(inserted == 1)
    }

    fn share_digest(&mut self, id: &[u8; 32], client: u64) -> Result<Vec<u8>> {
        Ok(self
            .conn
            .prepare_cached("SELECT digest FROM node_shares WHERE round_id = ?1 AND client = ?2")?
            .query_row(params![&id[..], client as i64], |r| r.get(0))?)
    }

    fn set_shard(&mut self, id: &[u8; 32], client: u64, shard: u64) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE node_shares SET shard = ?3 WHERE round_id = ?1 AND client = ?2",
            )?
            .execute(params![&id[..], client as i64, shard as i64])?;
        Ok(())
    }

    fn delete_shares(&mut self, id: &[u8; 32]) -> Result<()> {
        self.conn.execute(
            "DELETE FROM node_shares WHERE round_id = ?1",
            params![&id[..]],
        )?;
        Ok(())
    }

    fn write_aborted(&mut self, id: &[u8; 32], reason: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO node_round_state (id, aborted) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET aborted = excluded.aborted",
            params![&id[..], reason],
        )?;
        Ok(())
    }

    /// Written piece by piece into the row (SQLite's incremental blob I/O), not built whole.
    /// The row is made if missing (at close it is not there yet, so nothing is read back).
    fn write_agreed(&mut self, id: &[u8; 32], agreed: &ClientSet, sha256: &[u8; 32]) -> Result<()> {
        use std::io::Write;
        self.conn.execute(
            "INSERT INTO node_round_state (id, agreed, agreed_sha256) VALUES (?1, zeroblob(?2), ?3)
             ON CONFLICT (id) DO UPDATE
                 SET agreed = excluded.agreed, agreed_sha256 = excluded.agreed_sha256",
            params![&id[..], 8 * agreed.len() as i64, &sha256[..]],
        )?;
        let rowid: i64 = self.conn.query_row(
            "SELECT rowid FROM node_round_state WHERE id = ?1",
            params![&id[..]],
            |r| r.get(0),
        )?;
        let blob = self.conn.blob_open(
            rusqlite::MAIN_DB,
            "node_round_state",
            "agreed",
            rowid,
            false,
        )?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, blob);
        for word in agreed_words(agreed) {
            out.write_all(&word)?;
        }
        out.flush()?;
        Ok(())
    }

    /// The sum has a row of its own in `node_round_sums`, inserted new (replacing any earlier one)
    /// with the zeroblob as its last column, so SQLite writes the zeros page by page and never
    /// holds the blob. Set on `node_round_state`'s row, as it was, the insert hit the row of the
    /// agreed set and became an update: SQLite then read the agreed set (8 bytes per client),
    /// expanded the zeroblob (≈ 8 more) and built the new row (≈ 16 more) in memory — ≈ 32
    /// bytes per client at once, most of what a node's peak memory still grew by in N (README).
    fn write_sum(&mut self, id: &[u8; 32], sum: NewSum<'_>) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO node_round_sums (id, sum_sha256, sum) VALUES (?1, ?2, zeroblob(?3))",
            params![&id[..], &sum.sha256[..], sum.len as i64],
        )?;
        let rowid = self.conn.last_insert_rowid();
        let mut blob =
            self.conn
                .blob_open(rusqlite::MAIN_DB, "node_round_sums", "sum", rowid, false)?;
        std::io::copy(sum.bytes, &mut blob)?;
        Ok(())
    }
}
