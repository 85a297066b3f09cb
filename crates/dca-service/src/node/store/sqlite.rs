//! The SQLite node store (the embedded default): SQLite (bundled), WAL journal, `synchronous = FULL`, so a
//! committed share survives `kill -9` and power loss alike.
//!
//! The running sum is not stored: it is derived from the stored shares on start-up. The stored
//! share is the opened wire message (full share: ~8d bytes; seed share: a few dozen bytes) plus
//! its SHA-256, which decides "same retry" (200) vs "conflicting duplicate" (409).

use std::path::Path;

use fixedpoint_shares::ClientSet;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::{
    HASHES_PER_CHUNK, HashingWriter, PendingShare, StoredRound, UploadOutcome, check_blob,
    check_share,
};
use crate::Result;
use crate::migrations::{Migration, add_column_if_missing, migrate};

pub(crate) struct SqliteStore {
    conn: Connection,
}

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
    conn: Connection,
}

impl SqliteTokenLookup {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(SqliteTokenLookup {
            conn: open_read_only(path)?,
        })
    }

    /// Client `client`'s token hash in round `id`, if stored.
    pub fn token_hash(&self, id: &[u8; 32], client: u64) -> Result<Option<[u8; 32]>> {
        let (chunk, at) = (
            client / HASHES_PER_CHUNK as u64,
            (client % HASHES_PER_CHUNK as u64) as usize * 32,
        );
        let mut stmt = self
            .conn
            .prepare_cached("SELECT hashes FROM round_tokens WHERE round_id = ?1 AND chunk = ?2")?;
        Ok(stmt
            .query_row(params![&id[..], chunk as i64], |r| {
                Ok(r.get_ref(0)?
                    .as_blob()
                    .ok()
                    .and_then(|b| b.get(at..at + 32))
                    .and_then(|h| <[u8; 32]>::try_from(h).ok()))
            })
            .optional()?
            .flatten())
    }
}

/// A read-only connection that writes a round's received set (`GET /rounds/{id}/received`)
/// from the store's attempts index, in one read transaction (WAL: one consistent snapshot for
/// both lists, and the writer is not held up).
pub(crate) struct SqliteAttemptReader {
    conn: Connection,
}

impl SqliteAttemptReader {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(SqliteAttemptReader {
            conn: open_read_only(path)?,
        })
    }

    /// Writes the round's received set of `n_clients` clients — the pair set of
    /// `fixedpoint_shares::wire` (a bitset, then each client's shard id in ascending client
    /// order) — to `out`, reading the attempts index twice within one read transaction: once
    /// for the bitset, which precedes the ids, once for the ids.
    pub fn write_received(
        &mut self,
        id: &[u8; 32],
        n_clients: usize,
        out: &mut impl std::io::Write,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        let mut clients = fixedpoint_shares::ClientSet::try_empty(n_clients)?;
        for_each_attempt(&tx, id, |client, _| {
            clients.insert(fixedpoint_shares::ClientId(client))?;
            Ok(())
        })?;
        with_attempts_on(&tx, id, |pairs| {
            let pairs = pairs.map(|(c, s)| {
                (
                    fixedpoint_shares::ClientId(c),
                    fixedpoint_shares::ShardId(s),
                )
            });
            fixedpoint_shares::wire::write_pair_set_streamed(&clients, pairs, &mut *out)
        })??;
        tx.finish()?;
        Ok(())
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

    /// Where the round's node sum is stored — (table, rowid, length in bytes) — if it is,
    /// after checking the stored bytes against their SHA-256 (one read of the sum).
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] if the stored sum fails its check.
    pub fn checked_sum_blob(&self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        check_stored_sum(&self.conn, id)?;
        self.sum_blob(id)
    }

    /// Where the round's node sum is stored — (table, rowid, length in bytes) — if it is.
    pub fn sum_blob(&self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        // Stores of older versions kept it in `round_state` or before that in `rounds`; they
        // are read in that order, as [`NodeStore::sum`] does.
        for table in ["round_sums", "round_state", "rounds"] {
            let found = self
                .conn
                .query_row(
                    &format!(
                        "SELECT rowid, length(sum) FROM {table} WHERE id = ?1 AND sum IS NOT NULL"
                    ),
                    params![&id[..]],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
                .optional()?;
            if let Some((rowid, len)) = found {
                let sha256 = if table == "round_sums" {
                    self.conn.query_row(
                        "SELECT sum_sha256 FROM round_sums WHERE rowid = ?1",
                        params![rowid],
                        |r| r.get(0),
                    )?
                } else {
                    None
                };
                return Ok(Some(SumBlob {
                    table,
                    rowid,
                    len: len as u64,
                    sha256,
                }));
            }
        }
        Ok(None)
    }

    /// Copies a stored node sum to `out` in small pieces (SQLite's incremental blob I/O). The
    /// last piece is held back until the bytes read match the stored SHA-256, so a sum that
    /// changed after [`Self::checked_sum_blob`] looked at it never reaches `out` whole.
    pub fn write_sum(&self, at: &SumBlob, out: &mut impl std::io::Write) -> Result<()> {
        use std::io::Read;
        let mut blob = self
            .conn
            .blob_open(rusqlite::MAIN_DB, at.table, "sum", at.rowid, true)?;
        let mut hash = Sha256::new();
        let (mut held, mut next) = (Vec::new(), vec![0u8; 1 << 16]);
        loop {
            let n = blob.read(&mut next)?;
            if n == 0 {
                break;
            }
            out.write_all(&held)?;
            held.clear();
            held.extend_from_slice(&next[..n]);
            hash.update(&next[..n]);
        }
        if let Some(expected) = &at.sha256
            && hash.finalize().as_slice() != expected.as_slice()
        {
            return Err(crate::Error::Integrity(
                "the stored node sum changed while it was sent".into(),
            ));
        }
        out.write_all(&held)?;
        out.flush()?;
        Ok(())
    }
}

/// Where a node sum is stored ([`SqliteAttemptReader::sum_blob`]).
pub(crate) struct SumBlob {
    table: &'static str,
    rowid: i64,
    /// Its length in bytes.
    pub len: u64,
    /// Its SHA-256 as stored with it (`None` for sums stored by versions that kept none).
    sha256: Option<Vec<u8>>,
}

/// Checks the round's node sum in `round_sums` against the SHA-256 stored with it; `Ok(false)`
/// if the round has no sum there.
fn check_stored_sum(conn: &Connection, id: &[u8; 32]) -> Result<bool> {
    let row: Option<(i64, Option<Vec<u8>>)> = conn
        .query_row(
            "SELECT rowid, sum_sha256 FROM round_sums WHERE id = ?1",
            params![&id[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((rowid, digest)) = row else {
        return Ok(false);
    };
    if let Some(digest) = digest {
        let blob = conn.blob_open(rusqlite::MAIN_DB, "round_sums", "sum", rowid, true)?;
        check_blob(blob, &digest, || {
            format!("round {}: the stored node sum", crate::hex::encode(id))
        })?;
    }
    Ok(true)
}

const ATTEMPTS_SQL: &str = "SELECT client, shard FROM shares INDEXED BY shares_attempts
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
fn with_attempts_on<T>(
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
fn for_each_attempt(
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
                    "SELECT hashes FROM round_tokens WHERE round_id = ?1 AND chunk = ?2",
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
        migrate(&mut conn, NODE_MIGRATIONS, &path.display().to_string())?;
        Ok(SqliteStore { conn })
    }

    pub fn rounds(&self) -> Result<Vec<StoredRound>> {
        let mut stmt = self
            .conn
            // A round's agreed set, sum and abort live in `round_state`, apart from the spec
            // (~70 bytes per client): updating a column of the spec's row would make SQLite
            // read and rewrite the whole row, spec included. Stores written before that kept
            // them in `rounds`; those columns are still read. Only the sums' lengths are
            // read (SQLite reads a blob's length without its content).
            .prepare(
                "SELECT r.id, r.spec,
                        COALESCE(length(u.sum), length(s.sum), length(r.sum)) IS NOT NULL,
                        COALESCE(s.aborted, r.aborted), r.tokens
                 FROM rounds r LEFT JOIN round_state s ON s.id = r.id
                 LEFT JOIN round_sums u ON u.id = r.id",
            )?;
        let rows = stmt.query_map([], |r| {
            let id: Vec<u8> = r.get(0)?;
            Ok(StoredRound {
                id: id.try_into().unwrap_or([0; 32]),
                spec_json: r.get(1)?,
                sum_stored: r.get(2)?,
                aborted: r.get(3)?,
                tokens: r.get(4)?,
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
        use std::io::Read;
        // `round_state` first, then where stores of older versions kept it.
        for table in ["round_state", "rounds"] {
            let digest_column = if table == "round_state" {
                "agreed_sha256"
            } else {
                "NULL"
            };
            let row: Option<(i64, Option<Vec<u8>>)> = self
                .conn
                .query_row(
                    &format!(
                        "SELECT rowid, {digest_column} FROM {table}
                         WHERE id = ?1 AND length(agreed) IS NOT NULL"
                    ),
                    params![&id[..]],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((rowid, digest)) = row else {
                continue;
            };
            if let Some(digest) = digest {
                let blob = self
                    .conn
                    .blob_open(rusqlite::MAIN_DB, table, "agreed", rowid, true)?;
                check_blob(blob, &digest, || {
                    format!("round {}: the stored agreed set", crate::hex::encode(id))
                })?;
            }
            let blob = self
                .conn
                .blob_open(rusqlite::MAIN_DB, table, "agreed", rowid, true)?;
            let mut ids = std::io::BufReader::with_capacity(1 << 16, blob);
            let mut set = ClientSet::try_empty(universe)?;
            let mut word = [0u8; 8];
            loop {
                // A trailing piece shorter than an id is ignored, as it always was.
                match ids.read_exact(&mut word) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e.into()),
                }
                let c = fixedpoint_shares::ClientId(u64::from_be_bytes(word));
                if !set.insert(c)? {
                    return Err(fixedpoint_shares::Error::DuplicateClient { client: c }.into());
                }
            }
            return Ok(Some(set));
        }
        Ok(None)
    }

    /// The id of the round stored under this numeric round id, if any.
    pub fn round_by_number(&self, round: u64) -> Result<Option<[u8; 32]>> {
        let id: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT id FROM rounds WHERE round = ?1",
                params![round as i64],
                |r| r.get(0),
            )
            .optional()?;
        Ok(id.map(|v| v.try_into().unwrap_or([0; 32])))
    }

    /// Stores a round: its spec's JSON without the token list, and the `n` token hashes read
    /// from `tokens` (32 raw bytes each, in client order) in rows of [`HASHES_PER_CHUNK`];
    /// one transaction, memory O(1) in `n`.
    pub fn insert_round(
        &mut self,
        id: &[u8; 32],
        round: u64,
        spec_json: &[u8],
        tokens: &mut impl std::io::Read,
        n: usize,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO rounds (id, round, spec) VALUES (?1, ?2, ?3)",
            params![&id[..], round as i64, spec_json],
        )?;
        insert_token_chunks(&tx, id, tokens, n)?;
        tx.commit()?;
        Ok(())
    }

    /// Moves a round stored by an older version (token hashes in `rounds.tokens`, or in the
    /// spec's JSON) to the token table: `hashes` are its token hashes, `spec_json` its spec
    /// without the list. One transaction.
    pub fn migrate_tokens(&mut self, id: &[u8; 32], spec_json: &[u8], hashes: &[u8]) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM round_tokens WHERE round_id = ?1",
            params![&id[..]],
        )?;
        insert_token_chunks(&tx, id, &mut &hashes[..], hashes.len() / 32)?;
        tx.execute(
            "UPDATE rounds SET spec = ?2, tokens = NULL WHERE id = ?1",
            params![&id[..], spec_json],
        )?;
        tx.commit()?;
        Ok(())
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

    /// One transaction for a batch of uploads (group commit): each is stored, recognised as
    /// the same share again, or a conflict; duplicates within the batch are seen too.
    ///
    /// The usual case (a new client) costs one index probe: the insert is tried first and
    /// skipped on a key conflict; only then is the stored digest read.
    pub fn commit_uploads(&mut self, batch: &[PendingShare<'_>]) -> Result<Vec<UploadOutcome>> {
        let tx = self.conn.transaction()?;
        let mut out = Vec::with_capacity(batch.len());
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO shares (round_id, client, shard, digest, message)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (round_id, client) DO NOTHING",
            )?;
            let mut find =
                tx.prepare_cached("SELECT digest FROM shares WHERE round_id = ?1 AND client = ?2")?;
            for p in batch {
                let inserted = insert.execute(params![
                    &p.round_id[..],
                    p.client as i64,
                    p.shard as i64,
                    &p.digest[..],
                    p.message
                ])?;
                if inserted == 1 {
                    out.push(UploadOutcome::Stored);
                    continue;
                }
                let existing: Vec<u8> =
                    find.query_row(params![&p.round_id[..], p.client as i64], |r| r.get(0))?;
                out.push(if existing == p.digest {
                    UploadOutcome::SameAgain
                } else {
                    UploadOutcome::Conflict
                });
            }
        }
        tx.commit()?;
        Ok(out)
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
            "SELECT client, shard, digest, message FROM shares WHERE round_id = ?1 ORDER BY client",
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

    /// Records the shard attempts of shares stored without them (one transaction).
    pub fn set_shards(&mut self, id: &[u8; 32], pairs: &[(u64, u64)]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut update =
                tx.prepare("UPDATE shares SET shard = ?3 WHERE round_id = ?1 AND client = ?2")?;
            for &(client, shard) in pairs {
                update.execute(params![&id[..], client as i64, shard as i64])?;
            }
        }
        tx.commit()?;
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
                "SELECT COALESCE(u.sum, s.sum, r.sum) FROM rounds r
                 LEFT JOIN round_state s ON s.id = r.id LEFT JOIN round_sums u ON u.id = r.id
                 WHERE r.id = ?1",
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
                "SELECT digest, message FROM shares WHERE round_id = ?1 AND client = ?2",
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
            "INSERT INTO round_state (id, agreed) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET agreed = excluded.agreed",
            params![&id[..], agreed],
        )?;
        Ok(())
    }

    /// Records the abort and deletes the round's shares, in one transaction: an aborted round
    /// releases nothing, so its shares are of no further use.
    pub fn abort(&mut self, id: &[u8; 32], reason: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO round_state (id, aborted) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET aborted = excluded.aborted",
            params![&id[..], reason],
        )?;
        tx.execute("DELETE FROM shares WHERE round_id = ?1", params![&id[..]])?;
        tx.commit()?;
        Ok(())
    }

    /// Stores the round's agreed clients (8 bytes each, big-endian, ascending, as before)
    /// written piece by piece into the row (SQLite's incremental blob I/O), not built whole.
    pub fn set_agreed_set(&mut self, id: &[u8; 32], agreed: &ClientSet) -> Result<()> {
        use std::io::Write;
        let tx = self.conn.transaction()?;
        let rowid = insert_agreed_zeroblob(&tx, id, 8 * agreed.len() as u64)?;
        let mut hash = Sha256::new();
        {
            let blob = tx.blob_open(rusqlite::MAIN_DB, "round_state", "agreed", rowid, false)?;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, blob);
            for c in agreed.iter() {
                let word = c.0.to_be_bytes();
                hash.update(word);
                out.write_all(&word)?;
            }
            out.flush()?;
        }
        tx.execute(
            "UPDATE round_state SET agreed_sha256 = ?2 WHERE rowid = ?1",
            params![rowid, hash.finalize().as_slice()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Stores the round's node sum, `len` bytes read from `src` into the row piece by piece.
    ///
    /// The sum has a row of its own in `round_sums`, inserted new (replacing any earlier one)
    /// with the zeroblob as its last column, so SQLite writes the zeros page by page and never
    /// holds the blob. Set on `round_state`'s row, as it was, the insert hit the row of the
    /// agreed set and became an update: SQLite then read the agreed set (8 bytes per client),
    /// expanded the zeroblob (≈ 8 more) and built the new row (≈ 16 more) in memory — ≈ 32
    /// bytes per client at once, most of what a node's peak memory still grew by in N (README).
    ///
    /// `sha256` is the digest of the sum as the summing thread wrote it: the bytes copied must
    /// have it (else the spool file was damaged and nothing is stored), and it is stored with
    /// the sum for the checks of every later read.
    pub fn set_sum_from(
        &mut self,
        id: &[u8; 32],
        src: &mut impl std::io::Read,
        len: u64,
        sha256: &[u8; 32],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO round_sums (id, sum_sha256, sum) VALUES (?1, ?2, zeroblob(?3))",
            params![&id[..], &sha256[..], len as i64],
        )?;
        let rowid = tx.last_insert_rowid();
        {
            let blob = tx.blob_open(rusqlite::MAIN_DB, "round_sums", "sum", rowid, false)?;
            let mut out = HashingWriter::new(blob);
            let copied = std::io::copy(&mut std::io::Read::take(&mut *src, len), &mut out)?;
            if copied != len {
                return Err(crate::Error::Io(std::io::Error::other(format!(
                    "node sum: {copied} bytes, not {len}"
                ))));
            }
            if out.finish().1 != *sha256 {
                return Err(crate::Error::Integrity(format!(
                    "round {}: the node sum's spool file does not match the SHA-256 it was \
                     written with",
                    crate::hex::encode(id)
                )));
            }
        }
        tx.commit()?;
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
        self.conn.execute(
            "INSERT OR REPLACE INTO round_sums (id, sum, sum_sha256) VALUES (?1, ?2, ?3)",
            params![&id[..], sum, Sha256::digest(sum).as_slice()],
        )?;
        Ok(())
    }
}

/// The node store's schema changes (see [`crate::migrations`]).
const NODE_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "rounds, their state, sums, token hashes and shares with their attempts",
        apply: node_layout_v1,
    },
    Migration {
        version: 2,
        what: "SHA-256 of each stored agreed set and node sum",
        apply: |tx| {
            // NULL in rows written before: read unchecked.
            add_column_if_missing(tx, "round_state", "agreed_sha256", "BLOB")?;
            add_column_if_missing(tx, "round_sums", "sum_sha256", "BLOB")
        },
    },
];

/// The layout every store had before schema versions were stored, reached from any of the
/// layouts earlier versions wrote (each added its tables and columns as it went).
fn node_layout_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS rounds (
                 id BLOB PRIMARY KEY,
                 round INTEGER NOT NULL UNIQUE,
                 spec BLOB NOT NULL,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             );
             CREATE TABLE IF NOT EXISTS round_state (
                 id BLOB PRIMARY KEY,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             );
             CREATE TABLE IF NOT EXISTS round_sums (
                 id BLOB PRIMARY KEY,
                 sum BLOB NOT NULL
             );
             CREATE TABLE IF NOT EXISTS round_tokens (
                 round_id BLOB NOT NULL,
                 chunk INTEGER NOT NULL,
                 hashes BLOB NOT NULL,
                 PRIMARY KEY (round_id, chunk)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS shares (
                 round_id BLOB NOT NULL,
                 client INTEGER NOT NULL,
                 shard INTEGER,
                 digest BLOB NOT NULL,
                 message BLOB NOT NULL,
                 UNIQUE (round_id, client)
             );",
    )?;
    // `shares` is a rowid table with a unique index on (round_id, client): a full share's
    // row (~8d bytes) overflows its page, and in a WITHOUT ROWID table (as stores made
    // before kept it, which still work with the same statements) every key comparison on
    // the way down the B-tree read the whole row from its overflow pages. Now the key
    // lookups walk the small index and the rows are appended in rowid order.
    // Stores created before rounds could be aborted lack the column; nor did they keep
    // the token hashes apart from the spec.
    add_column_if_missing(tx, "rounds", "aborted", "TEXT")?;
    add_column_if_missing(tx, "rounds", "tokens", "BLOB")?;
    // The shard attempt, before the message so that reading it never touches a full
    // share's overflow pages; older stores get it appended (filled in on load).
    add_column_if_missing(tx, "shares", "shard", "INTEGER")?;
    // The (client, attempt) pairs of a round, read at close and for the received set, from
    // a covering index: scanning the table itself would read every leaf page of node 0's
    // full shares (a few rows per 4 KiB page).
    tx.execute_batch(
        "CREATE INDEX IF NOT EXISTS shares_attempts ON shares (round_id, client, shard);",
    )?;
    Ok(())
}

/// Sets the agreed set of the round's `round_state` row (made if missing; at close it is
/// not there yet, so nothing is read back) to `len` zero bytes; the rowid, to write them with
/// blob I/O.
fn insert_agreed_zeroblob(conn: &Connection, id: &[u8; 32], len: u64) -> Result<i64> {
    conn.execute(
        "INSERT INTO round_state (id, agreed) VALUES (?1, zeroblob(?2))
         ON CONFLICT (id) DO UPDATE SET agreed = excluded.agreed",
        params![&id[..], len as i64],
    )?;
    Ok(conn.query_row(
        "SELECT rowid FROM round_state WHERE id = ?1",
        params![&id[..]],
        |r| r.get(0),
    )?)
}

/// Writes `n` token hashes read from `tokens` as rows of [`HASHES_PER_CHUNK`].
fn insert_token_chunks(
    conn: &Connection,
    id: &[u8; 32],
    tokens: &mut impl std::io::Read,
    n: usize,
) -> Result<()> {
    let mut insert = conn
        .prepare_cached("INSERT INTO round_tokens (round_id, chunk, hashes) VALUES (?1, ?2, ?3)")?;
    let mut buf = [0u8; 32 * HASHES_PER_CHUNK];
    for (k, first) in (0..n).step_by(HASHES_PER_CHUNK).enumerate() {
        let len = 32 * (n - first).min(HASHES_PER_CHUNK);
        tokens.read_exact(&mut buf[..len])?;
        insert.execute(params![&id[..], k as i64, &buf[..len]])?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
