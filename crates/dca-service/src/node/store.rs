//! A compute node's durable state: SQLite (bundled), WAL journal, `synchronous = FULL`, so a
//! committed share survives `kill -9` and power loss alike.
//!
//! The running sum is not stored: it is derived from the stored shares on start-up. The stored
//! share is the opened wire message (full share: ~8d bytes; seed share: a few dozen bytes) plus
//! its SHA-256, which decides "same retry" (200) vs "conflicting duplicate" (409).

use std::path::Path;

use fixedpoint_shares::ClientSet;
use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::Result;
use crate::migrations::{Migration, add_column_if_missing, migrate};

/// Token hashes per row of `round_tokens`: 16 × 32 = 512 bytes, which with the key fits a
/// WITHOUT ROWID b-tree cell (≤ ~1000 bytes on 4 KiB pages), so a lookup reads one page and
/// no overflow chain.
pub(crate) const HASHES_PER_CHUNK: usize = 16;

pub(crate) struct NodeStore {
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
pub(crate) struct TokenLookup {
    conn: Connection,
}

impl TokenLookup {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(TokenLookup {
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
pub(crate) struct AttemptReader {
    conn: Connection,
}

impl AttemptReader {
    pub fn open(path: &Path) -> Result<Self> {
        Ok(AttemptReader {
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

/// Where a node sum is stored ([`AttemptReader::sum_blob`]).
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

/// Reads `blob` through and compares its SHA-256 with `digest`; `what` names it in the error.
fn check_blob(
    mut blob: impl std::io::Read,
    digest: &[u8],
    what: impl FnOnce() -> String,
) -> Result<()> {
    let mut hash = HashingWriter::new(std::io::sink());
    std::io::copy(&mut blob, &mut hash)?;
    if hash.finish().1.as_slice() == digest {
        Ok(())
    } else {
        Err(crate::Error::Integrity(format!(
            "{} does not match its SHA-256",
            what()
        )))
    }
}

/// A writer that passes bytes on and hashes them.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hash: Sha256,
}

impl<W: std::io::Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hash: Sha256::new(),
        }
    }

    /// The writer and the SHA-256 of everything written through it.
    pub fn finish(self) -> (W, [u8; 32]) {
        (self.inner, self.hash.finalize().into())
    }
}

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(data)?;
        self.hash.update(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
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

/// A round as stored.
pub(crate) struct StoredRound {
    pub id: [u8; 32],
    pub spec_json: Vec<u8>,
    /// The clients' token hashes, 32 bytes each, if stored by an older version as one blob
    /// apart from `spec_json` (now they are in `round_tokens`, and this is `None`).
    pub tokens: Option<Vec<u8>>,
    /// Whether its node sum is stored (the sum itself is not read: it is streamed when
    /// asked for; the agreed set is read by [`NodeStore::agreed_set`]).
    pub sum_stored: bool,
    /// Why the aggregator aborted the round, if it did.
    pub aborted: Option<String>,
}

/// What became of one upload in a group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UploadOutcome {
    Stored,
    SameAgain,
    Conflict,
}

pub(crate) struct PendingShare<'a> {
    pub round_id: &'a [u8; 32],
    pub client: u64,
    pub shard: u64,
    pub digest: &'a [u8; 32],
    pub message: &'a [u8],
}

impl NodeStore {
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate(&mut conn, NODE_MIGRATIONS, &path.display().to_string())?;
        Ok(NodeStore { conn })
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

/// Checks a stored share against the SHA-256 stored beside it. The store's pages have no
/// checksum of their own, so a flipped bit in a share would otherwise reach the node sum and
/// the release unnoticed.
fn check_share(id: &[u8; 32], client: u64, digest: &[u8], message: &[u8]) -> Result<()> {
    if Sha256::digest(message).as_slice() == digest {
        return Ok(());
    }
    Err(crate::Error::Integrity(format!(
        "round {}: the stored share of client {client} does not match its SHA-256",
        crate::hex::encode(id)
    )))
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
mod tests {
    use super::*;

    fn temp_db(name: &str) -> std::path::PathBuf {
        crate::scratch_dir(&format!("store-{name}")).join("node.sqlite")
    }

    /// The agreed set and the node sum written piece by piece (blob I/O) are the bytes the
    /// whole-blob writes stored (ids big-endian, ascending); the sum goes to a row of its own
    /// and leaves the agreed set's row as it was; it streams back from a read-only connection,
    /// also a sum kept by an older store in `round_state` or `rounds`, also after a second
    /// write; a source shorter than declared stores nothing; the attempts come back as an
    /// iterator in client order.
    #[test]
    fn agreed_set_and_sum_are_written_and_read_in_pieces() {
        let path = temp_db("blobs");
        let mut store = NodeStore::open(&path).unwrap();
        let (a, b) = ([5u8; 32], [6u8; 32]);
        store.insert_round(&a, 1, b"{}", &mut &[][..], 0).unwrap();
        store.insert_round(&b, 2, b"{}", &mut &[][..], 0).unwrap();
        let ids = [0u64, 3, 64, 65, 199_999];
        let set = ClientSet::from_ids(200_000, &ids.map(fixedpoint_shares::ClientId)).unwrap();
        store.set_agreed_set(&a, &set).unwrap();
        let want: Vec<u8> = ids.iter().flat_map(|c| c.to_be_bytes()).collect();
        let stored_agreed = |store: &NodeStore| -> Vec<u8> {
            store
                .conn
                .query_row(
                    "SELECT agreed FROM round_state WHERE id = ?1",
                    params![&a[..]],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert_eq!(stored_agreed(&store), want);
        assert_eq!(store.agreed_set(&a, 200_000).unwrap().as_ref(), Some(&set));
        assert_eq!(store.agreed_set(&b, 200_000).unwrap(), None);
        let stored = store.rounds().unwrap();
        assert!(!stored.iter().any(|r| r.sum_stored));
        let sum: Vec<u8> = (0..200_003u32).map(|i| (i * 31 % 256) as u8).collect();
        let state_row = |store: &NodeStore| -> (i64, Option<usize>) {
            store
                .conn
                .query_row(
                    "SELECT rowid, length(sum) FROM round_state WHERE id = ?1",
                    params![&a[..]],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap()
        };
        let before = state_row(&store);
        // A first sum, then the one kept: a second write replaces the first.
        let sha = |b: &[u8]| -> [u8; 32] { Sha256::digest(b).into() };
        store
            .set_sum_from(&a, &mut &sum[1..], sum.len() as u64 - 1, &sha(&sum[1..]))
            .unwrap();
        // Bytes that are not what the summing thread hashed are refused, nothing stored.
        assert!(matches!(
            store.set_sum_from(&a, &mut &sum[..], sum.len() as u64, &sha(&sum[1..])),
            Err(crate::Error::Integrity(_))
        ));
        assert_eq!(store.sum(&a).unwrap().as_deref(), Some(&sum[1..]));
        store
            .set_sum_from(&a, &mut &sum[..], sum.len() as u64, &sha(&sum))
            .unwrap();
        assert!(store.check_sum(&a).unwrap());
        assert_eq!(store.sum(&a).unwrap().as_deref(), Some(&sum[..]));
        // The agreed set's row untouched by the sum's write (not rewritten: same rowid, no sum).
        assert_eq!(state_row(&store), before);
        assert_eq!(before.1, None);
        assert_eq!(stored_agreed(&store), want);
        let stored = store.rounds().unwrap();
        assert!(stored.iter().find(|r| r.id == a).unwrap().sum_stored);
        assert!(!stored.iter().find(|r| r.id == b).unwrap().sum_stored);
        assert!(
            store
                .set_sum_from(&b, &mut &sum[..10], 11, &sha(&sum[..10]))
                .is_err()
        );
        assert_eq!(store.sum(&b).unwrap(), None);
        // Older stores' sums: in `rounds`, and in `round_state` (read first).
        let c = [7u8; 32];
        store.insert_round(&c, 3, b"{}", &mut &[][..], 0).unwrap();
        store
            .conn
            .execute_batch(&format!(
                "UPDATE rounds SET sum = X'0102' WHERE id = X'{b}';
                 UPDATE rounds SET sum = X'0a' WHERE id = X'{c}';
                 INSERT INTO round_state (id, sum) VALUES (X'{c}', X'0b0c0d');",
                b = crate::hex::encode(&b),
                c = crate::hex::encode(&c),
            ))
            .unwrap();
        let reader = AttemptReader::open(&path).unwrap();
        for (id, want) in [(a, &sum[..]), (b, &[1u8, 2][..]), (c, &[11u8, 12, 13][..])] {
            assert_eq!(store.sum(&id).unwrap().as_deref(), Some(want));
            let at = reader.sum_blob(&id).unwrap().unwrap();
            assert_eq!(at.len, want.len() as u64);
            let mut got = Vec::new();
            reader.write_sum(&at, &mut got).unwrap();
            assert_eq!(got, want);
        }
        assert!(reader.sum_blob(&[8u8; 32]).unwrap().is_none());
        let digest = [1u8; 32];
        let batch: Vec<PendingShare<'_>> = [9u64, 2, 5]
            .iter()
            .map(|&c| PendingShare {
                shard: c * 10,
                ..share(&a, c, &digest, b"m")
            })
            .collect();
        store.commit_uploads(&batch).unwrap();
        let pairs = reader.with_attempts(&a, |p| p.collect::<Vec<_>>()).unwrap();
        assert_eq!(pairs, vec![(2, 20), (5, 50), (9, 90)]);
        let first = reader.with_attempts(&a, |p| p.next()).unwrap();
        assert_eq!(first, Some((2, 20)));
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn round_state_is_kept_apart_from_the_spec_and_tokens_come_back_raw() {
        use std::io::Read;
        let path = temp_db("state");
        let mut store = NodeStore::open(&path).unwrap();
        let (a, b) = ([1u8; 32], [2u8; 32]);
        // Several chunk rows, the last one partly filled.
        let n = 5 * HASHES_PER_CHUNK + 3;
        let tokens: Vec<u8> = (0..n * 32).map(|i| (i * 7 % 251) as u8).collect();
        store
            .insert_round(&a, 1, b"{\"a\":1}", &mut &tokens[..], n)
            .unwrap();
        store
            .insert_round(&b, 2, b"{\"b\":2}", &mut &[][..], 0)
            .unwrap();
        // A refused insert (round number taken) leaves nothing behind; so does a short source.
        assert!(
            store
                .insert_round(&[3u8; 32], 1, b"{}", &mut &tokens[..], n)
                .is_err()
        );
        assert!(
            store
                .insert_round(&[4u8; 32], 4, b"{}", &mut &tokens[..64], 3)
                .is_err()
        );
        store.set_agreed(&a, &3u64.to_be_bytes()).unwrap();
        store.set_sum(&a, &[9]).unwrap();
        store.abort(&b, "why").unwrap();
        // The spec rows are as inserted: closing and aborting wrote elsewhere.
        let untouched: i64 = store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM rounds WHERE agreed IS NULL AND sum IS NULL AND aborted IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(untouched, 2);
        let chunks: i64 = store
            .conn
            .query_row("SELECT COUNT(*) FROM round_tokens", [], |r| r.get(0))
            .unwrap();
        assert_eq!(chunks, 6);
        drop(store);
        let store = NodeStore::open(&path).unwrap();
        let mut rounds = store.rounds().unwrap();
        rounds.sort_by_key(|r| r.id);
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].spec_json, b"{\"a\":1}");
        assert_eq!(rounds[0].tokens, None);
        let mut back = Vec::new();
        store.token_chunks(&a).read_to_end(&mut back).unwrap();
        assert_eq!(back, tokens);
        back.clear();
        store.token_chunks(&b).read_to_end(&mut back).unwrap();
        assert!(back.is_empty());
        // Point lookups through a read-only connection.
        let lookup = TokenLookup::open(&path).unwrap();
        for c in [0, 1, 15, 16, n - 1] {
            assert_eq!(
                lookup.token_hash(&a, c as u64).unwrap().unwrap()[..],
                tokens[32 * c..32 * c + 32]
            );
        }
        assert_eq!(lookup.token_hash(&a, n as u64).unwrap(), None);
        assert_eq!(lookup.token_hash(&b, 0).unwrap(), None);
        assert!(lookup.conn.execute("DELETE FROM round_tokens", []).is_err());
        assert!(rounds[0].sum_stored);
        assert_eq!(store.sum(&a).unwrap().as_deref(), Some(&[9u8][..]));
        assert_eq!(rounds[0].aborted, None);
        assert_eq!(rounds[1].aborted.as_deref(), Some("why"));
        assert!(!rounds[1].sum_stored);
        assert_eq!(store.agreed_set(&b, 4).unwrap(), None);
        let three = ClientSet::from_ids(4, &[fixedpoint_shares::ClientId(3)]).unwrap();
        assert_eq!(store.agreed_set(&a, 4).unwrap(), Some(three));
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    fn share<'a>(
        id: &'a [u8; 32],
        client: u64,
        digest: &'a [u8; 32],
        message: &'a [u8],
    ) -> PendingShare<'a> {
        PendingShare {
            round_id: id,
            client,
            shard: 1,
            digest,
            message,
        }
    }

    /// Stored, the same again (also within one batch), a conflict: nothing but the first
    /// share of each client is kept.
    fn check_upload_outcomes(store: &mut NodeStore) {
        use UploadOutcome::{Conflict, SameAgain, Stored};
        let (id, other_round) = ([5u8; 32], [6u8; 32]);
        let big = vec![7u8; 20_000]; // overflows its page, as a full share does
        let sha = |m: &[u8]| -> [u8; 32] { Sha256::digest(m).into() };
        let (big_d, seed_d, other_d, x_d) = (sha(&big), sha(b"seed"), sha(b"other"), sha(b"x"));
        let out = store
            .commit_uploads(&[
                share(&id, 0, &big_d, &big),
                share(&id, 1, &seed_d, b"seed"),
                share(&id, 1, &seed_d, b"seed"),
                share(&id, 1, &other_d, b"other"),
                share(&other_round, 1, &other_d, b"other"),
            ])
            .unwrap();
        assert_eq!(out, [Stored, Stored, SameAgain, Conflict, Stored]);
        let out = store
            .commit_uploads(&[share(&id, 0, &big_d, &big), share(&id, 0, &x_d, b"x")])
            .unwrap();
        assert_eq!(out, [SameAgain, Conflict]);
        assert_eq!(store.share(&id, 0).unwrap().as_deref(), Some(&big[..]));
        assert_eq!(store.share(&id, 1).unwrap().as_deref(), Some(&b"seed"[..]));
        assert_eq!(
            store.share(&other_round, 1).unwrap().as_deref(),
            Some(&b"other"[..])
        );
        let mut seen = Vec::new();
        store
            .for_each_share(&id, |c, shard, m| {
                assert_eq!(shard, Some(1));
                seen.push((c, m.len()));
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, [(0, big.len()), (1, 4)]);
    }

    #[test]
    fn uploads_are_stored_once_in_a_new_store_and_in_one_from_before() {
        let path = temp_db("uploads-new");
        let mut store = NodeStore::open(&path).unwrap();
        let sql: String = store
            .conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'shares'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(!sql.contains("WITHOUT ROWID"), "{sql}");
        check_upload_outcomes(&mut store);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();

        // A store made before kept the shares in a WITHOUT ROWID table keyed by the pair.
        let path = temp_db("uploads-old");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE shares (round_id BLOB NOT NULL, client INTEGER NOT NULL,
                     digest BLOB NOT NULL, message BLOB NOT NULL,
                     PRIMARY KEY (round_id, client)) WITHOUT ROWID;",
            )
            .unwrap();
        }
        let mut store = NodeStore::open(&path).unwrap();
        check_upload_outcomes(&mut store);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    /// The received set's JSON, written from the index while another round's shares sit
    /// beside it, is exactly what serde writes for the same lists (clients ascending), also for
    /// an empty round and with shard ids that need all 16 hex digits.
    #[test]
    fn the_received_set_is_written_from_the_attempts_index() {
        let path = temp_db("received-json");
        let mut store = NodeStore::open(&path).unwrap();
        let (id, other, empty) = ([8u8; 32], [9u8; 32], [10u8; 32]);
        let digest = [3u8; 32];
        let clients: Vec<u64> = (0..5000u64).rev().filter(|c| c % 7 != 3).collect();
        let shard_of = |c: u64| c.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let batch: Vec<PendingShare<'_>> = clients
            .iter()
            .flat_map(|&c| {
                [
                    PendingShare {
                        shard: shard_of(c),
                        ..share(&id, c, &digest, b"s")
                    },
                    share(&other, c + 1, &digest, b"o"),
                ]
            })
            .collect();
        store.commit_uploads(&batch).unwrap();
        let mut reader = AttemptReader::open(&path).unwrap();
        let mut got = Vec::new();
        reader.write_received(&id, 5000, &mut got).unwrap();
        let mut sorted = clients.clone();
        sorted.sort_unstable();
        // The documented layout, written out here: header, bitset, shard ids ascending.
        let mut want = b"DPDP\x01\0\0\0".to_vec();
        want.extend_from_slice(&5000u64.to_le_bytes());
        want.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
        let mut words = vec![0u64; 5000usize.div_ceil(64)];
        for &c in &sorted {
            words[c as usize / 64] |= 1 << (c % 64);
        }
        want.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        want.extend(sorted.iter().flat_map(|&c| shard_of(c).to_le_bytes()));
        assert_eq!(got, want);
        let mut got = Vec::new();
        reader.write_received(&empty, 3, &mut got).unwrap();
        let mut want = b"DPDP\x01\0\0\0".to_vec();
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(&[0; 16]);
        assert_eq!(got, want);
        // A stored client beyond the round's N is an error, not a wrong set.
        assert!(reader.write_received(&id, 4000, &mut Vec::new()).is_err());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_store_from_before_round_state_and_tokens_still_loads() {
        let path = temp_db("old");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE rounds (id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE,
                     spec BLOB NOT NULL, agreed BLOB, sum BLOB);
                 INSERT INTO rounds VALUES (x'0303030303030303030303030303030303030303030303030303030303030303', 3, x'7b7d', x'0000000000000002000000000000000101', x'09');",
            )
            .unwrap();
        }
        let store = NodeStore::open(&path).unwrap();
        let rounds = store.rounds().unwrap();
        assert_eq!(rounds.len(), 1);
        let r = &rounds[0];
        assert_eq!(
            (r.spec_json.as_slice(), r.tokens.as_deref()),
            (&b"{}"[..], None)
        );
        assert!(r.sum_stored);
        assert_eq!(store.sum(&r.id).unwrap().as_deref(), Some(&[9u8][..]));
        assert_eq!(r.aborted, None);
        // Ids 2 and 1, big-endian; a trailing piece shorter than an id is ignored.
        let ids = [1u64, 2].map(fixedpoint_shares::ClientId);
        assert_eq!(
            store.agreed_set(&r.id, 3).unwrap(),
            Some(ClientSet::from_ids(3, &ids).unwrap())
        );
        // An id outside the round, or one listed twice, is an error.
        assert!(store.agreed_set(&r.id, 2).is_err());
        store
            .conn
            .execute(
                "UPDATE rounds SET agreed = x'00000000000000010000000000000001'",
                [],
            )
            .unwrap();
        assert!(store.agreed_set(&r.id, 3).is_err());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
