//! Read-only connections to the SQLite node store (WAL: readers never wait for the writer):
//! token lookups, the received set, the attempts, the node sum.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use super::super::layout::{check_blob, copy_checked_sum};
use crate::Result;

/// A connection that can only read the store, with a small page cache (256 KiB): the node
/// keeps several, and their caches are part of its memory.
fn open_read_only(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "query_only", true)?;
    conn.pragma_update(None, "cache_size", -256)?;
    Ok(conn)
}

/// A read-only connection to the node's store for the upload handlers' token lookups (WAL:
/// readers never wait for the writer), with a small page cache.
pub(crate) struct SqliteTokenLookup {
    pub(super) conn: Connection,
}

impl SqliteTokenLookup {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(SqliteTokenLookup {
            conn: open_read_only(path)?,
        })
    }

    /// `pick` applied to token row `chunk` of round `id`, if stored.
    pub fn token_chunk<T>(
        &self,
        id: &[u8; 32],
        chunk: u64,
        pick: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT hashes FROM node_round_tokens WHERE round_id = ?1 AND chunk = ?2",
        )?;
        let mut rows = stmt.query(params![&id[..], chunk as i64])?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let hashes = row.get_ref(0)?.as_blob().map_err(rusqlite::Error::from)?;
        Ok(Some(pick(hashes)))
    }
}

/// A read-only connection that writes a round's received set (`GET /rounds/{id}/received`)
/// from the store's attempts index, in one read transaction (WAL: one consistent snapshot for
/// both lists, and the writer is not held up).
pub(crate) struct SqliteAttemptReader {
    pub(super) conn: Connection,
}

impl SqliteAttemptReader {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(SqliteAttemptReader {
            conn: open_read_only(path)?,
        })
    }

    /// Runs `f` in one read transaction (WAL: one snapshot, and the writer is not held up).
    pub fn in_snapshot<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN")?;
        let out = f(self);
        self.conn.execute_batch("COMMIT")?;
        out
    }

    /// Calls `f` with the round's stored (client, attempt) pairs in client order as an
    /// iterator, each row read as `f` pulls it (nothing collected). A read error ends the
    /// iterator early and is returned once `f` is done.
    pub fn with_attempts<T>(
        &self,
        id: &[u8; 32],
        f: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>) -> T,
    ) -> Result<T> {
        with_attempts_on(&self.conn, id, f)
    }

    /// Where the round's node sum is stored — (rowid, length in bytes) — if it is, after
    /// checking the stored bytes against their SHA-256 (one read of the sum).
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] if the stored sum fails its check.
    pub fn checked_sum_blob(&self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        check_stored_sum(&self.conn, id)?;
        self.sum_blob(id)
    }

    /// Where the round's node sum is stored — (rowid, length in bytes) — if it is.
    pub fn sum_blob(&self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        Ok(self
            .conn
            .query_row(
                "SELECT rowid, length(sum), sum_sha256 FROM node_round_sums WHERE id = ?1",
                params![&id[..]],
                |r| {
                    Ok(SumBlob {
                        rowid: r.get(0)?,
                        len: r.get::<_, i64>(1)? as u64,
                        sha256: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Copies a stored node sum to `out` in small pieces (SQLite's incremental blob I/O). The
    /// last piece is held back until the bytes read match the stored SHA-256, so a sum that
    /// changed after [`Self::checked_sum_blob`] looked at it never reaches `out` whole.
    pub fn write_sum(&self, at: &SumBlob, out: &mut impl std::io::Write) -> Result<()> {
        use std::io::Read;
        let mut blob =
            self.conn
                .blob_open(rusqlite::MAIN_DB, "node_round_sums", "sum", at.rowid, true)?;
        let pieces = || -> Result<Option<Vec<u8>>> {
            let mut piece = vec![0u8; 1 << 16];
            let n = blob.read(&mut piece)?;
            piece.truncate(n);
            Ok((n > 0).then_some(piece))
        };
        copy_checked_sum(pieces, at.sha256.as_deref(), out)
    }
}

/// Where a node sum is stored ([`SqliteAttemptReader::sum_blob`]).
pub(crate) struct SumBlob {
    rowid: i64,
    /// Its length in bytes.
    pub len: u64,
    /// Its SHA-256 as stored with it (`None` for sums stored by versions that kept none).
    sha256: Option<Vec<u8>>,
}

/// Checks the round's node sum in `round_sums` against the SHA-256 stored with it; `Ok(false)`
/// if the round has no sum there.
pub(super) fn check_stored_sum(conn: &Connection, id: &[u8; 32]) -> Result<bool> {
    let row: Option<(i64, Option<Vec<u8>>)> = conn
        .query_row(
            "SELECT rowid, sum_sha256 FROM node_round_sums WHERE id = ?1",
            params![&id[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((rowid, digest)) = row else {
        return Ok(false);
    };
    if let Some(digest) = digest {
        let blob = conn.blob_open(rusqlite::MAIN_DB, "node_round_sums", "sum", rowid, true)?;
        check_blob(blob, &digest, || {
            format!("round {}: the stored node sum", crate::hex::encode(id))
        })?;
    }
    Ok(true)
}

const ATTEMPTS_SQL: &str = "SELECT client, shard FROM node_shares INDEXED BY node_shares_attempts
     WHERE round_id = ?1 ORDER BY client";

/// The (client, attempt) pair of a row of [`ATTEMPTS_SQL`].
fn attempt_of(row: &rusqlite::Row<'_>) -> Result<(u64, u64)> {
    let client: i64 = row.get(0)?;
    let shard: Option<i64> = row.get(1)?;
    let shard = shard.ok_or_else(|| {
        crate::Error::InvalidSpec(format!("stored share of client {client} has no attempt"))
    })?;
    Ok((client as u64, shard as u64))
}

/// [`AttemptReader::with_attempts`] on `conn` (a connection or a transaction on it).
pub(super) fn with_attempts_on<T>(
    conn: &Connection,
    id: &[u8; 32],
    f: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>) -> T,
) -> Result<T> {
    let mut stmt = conn.prepare_cached(ATTEMPTS_SQL)?;
    let mut rows = stmt.query(params![&id[..]])?;
    let mut failed: Option<crate::Error> = None;
    let mut pairs = std::iter::from_fn(|| {
        if failed.is_some() {
            return None;
        }
        let row = match rows.next() {
            Ok(row) => row?,
            Err(e) => {
                failed = Some(e.into());
                return None;
            }
        };
        match attempt_of(row) {
            Ok(pair) => Some(pair),
            Err(e) => {
                failed = Some(e);
                None
            }
        }
    });
    let out = f(&mut pairs);
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A round's (client, shard attempt) pairs, client ids ascending, read from the covering index.
pub(super) fn for_each_attempt(
    conn: &Connection,
    id: &[u8; 32],
    mut f: impl FnMut(u64, u64) -> Result<()>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(ATTEMPTS_SQL)?;
    let mut rows = stmt.query(params![&id[..]])?;
    while let Some(row) = rows.next()? {
        let (client, shard) = attempt_of(row)?;
        f(client, shard)?;
    }
    Ok(())
}
