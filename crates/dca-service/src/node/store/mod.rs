//! A compute node's durable state, behind one interface with two implementations: SQLite
//! (`sqlite`, the embedded default: a file in the data directory, no server) and PostgreSQL
//! (`postgres`, `--store postgres://…`: the database that node replicas will share).
//!
//! The interface is an enum over the two backends rather than a trait object: its operations
//! take closures and readers generically (`impl FnMut`, `impl Read`) and hand out borrowing
//! readers (`TokenChunks<'_>`), which a `dyn` trait could only offer boxed; with two backends
//! known at compile time a `match` per operation is all the dispatch needed.
//!
//! Every operation that changes a round runs in one transaction. Where that transaction also
//! checks the round's state differs by backend: the SQLite store has one writer, the node's
//! store actor, which checks the round's state in memory between its transactions (no other
//! process writes the file); the PostgreSQL store checks and changes the state in SQL in the
//! same transaction (uploads refused once the round is closed or aborted, close and abort as a
//! compare-and-swap on the round's state), so that it stays right with other writers on the
//! same database.
//!
//! Replicas: several processes for one node index may share one PostgreSQL store. Their
//! memory then caches nothing a decision depends on: a round's state is read back from the
//! store where a request depends on it, the node sum is computed from the stored shares by
//! the one replica holding the round's lease (`node_sum_leases`: holder and expiry, taken over
//! once expired) and stored in a transaction that checks the lease is still its own.
//!
//! The running sum is not stored: it is derived from the stored shares on start-up (SQLite;
//! a shared store keeps none in memory and sums from the store at close). The stored
//! share is the opened wire message (full share: ~8d bytes; seed share: a few dozen bytes) plus
//! its SHA-256, which decides "same retry" (200) vs "conflicting duplicate" (409).

mod postgres;
mod sqlite;

use std::path::PathBuf;

use fixedpoint_shares::ClientSet;
use sha2::{Digest, Sha256};

use crate::Result;

pub use postgres::PgLocation;
pub(crate) use postgres::{PgReader, PgStore};

/// Token hashes per row of `round_tokens`: 16 × 32 = 512 bytes, which with the key fits a
/// WITHOUT ROWID b-tree cell (≤ ~1000 bytes on 4 KiB pages), so a lookup reads one page and
/// no overflow chain.
pub(crate) const HASHES_PER_CHUNK: usize = 16;

/// Where a node keeps its state.
#[derive(Clone, Debug)]
pub enum StoreLocation {
    /// A SQLite file (the default: `node.sqlite` in the data directory).
    Sqlite(PathBuf),
    /// A PostgreSQL database (`--store postgres://…`).
    Postgres(PgLocation),
}

impl StoreLocation {
    /// `url` as given to `--store`: `postgres://…` or `postgresql://…`; `None` for the
    /// default, the SQLite file `node.sqlite` in `data_dir`.
    ///
    /// # Errors
    /// [`crate::Error::Postgres`] for another scheme or a URL the PostgreSQL client cannot
    /// parse (the message names it without its password).
    pub fn parse(url: Option<&str>, data_dir: &std::path::Path) -> Result<Self> {
        match url {
            None => Ok(StoreLocation::Sqlite(data_dir.join("node.sqlite"))),
            Some(url) => Ok(StoreLocation::Postgres(PgLocation::parse(url)?)),
        }
    }

    /// The store as a person reads it (a path, or a URL without its password).
    pub fn describe(&self) -> String {
        match self {
            StoreLocation::Sqlite(p) => p.display().to_string(),
            StoreLocation::Postgres(pg) => pg.to_string(),
        }
    }

    /// Whether other processes (replicas of this node) may write the store too.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, StoreLocation::Postgres(_))
    }

    /// Whether the store's calls block on a runtime of their own (the PostgreSQL client), so
    /// they must not run on an async worker thread (they run on a blocking thread instead).
    pub(crate) fn needs_own_thread(&self) -> bool {
        matches!(self, StoreLocation::Postgres(_))
    }
}

/// The node's read-write store, owned by the store actor.
pub(crate) enum NodeStore {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

/// What became of one upload in a group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UploadOutcome {
    Stored,
    SameAgain,
    Conflict,
    /// Refused: the round is not open in the store (checked in the upload's transaction).
    NotOpen(RoundState),
}

/// A round's state as the store holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoundState {
    Unknown,
    Open,
    Closed,
    Aborted,
}

pub(crate) struct PendingShare<'a> {
    pub round_id: &'a [u8; 32],
    pub client: u64,
    pub shard: u64,
    pub digest: &'a [u8; 32],
    pub message: &'a [u8],
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

macro_rules! each {
    ($value:expr, $s:ident => $body:expr) => {
        match $value {
            NodeStore::Sqlite($s) => $body,
            NodeStore::Postgres($s) => $body,
        }
    };
}

impl NodeStore {
    /// Opens (and migrates) the store. For PostgreSQL, call it off the async threads.
    pub fn open(at: &StoreLocation) -> Result<Self> {
        Ok(match at {
            StoreLocation::Sqlite(path) => NodeStore::Sqlite(sqlite::SqliteStore::open(path)?),
            StoreLocation::Postgres(pg) => NodeStore::Postgres(postgres::PgStore::open(pg)?),
        })
    }

    pub fn rounds(&mut self) -> Result<Vec<StoredRound>> {
        each!(self, s => s.rounds())
    }

    /// The store as one that other processes (node replicas) may share, or `None` for the
    /// SQLite file, which only this process writes.
    pub fn shared(&mut self) -> Option<&mut PgStore> {
        match self {
            NodeStore::Sqlite(_) => None,
            NodeStore::Postgres(s) => Some(s),
        }
    }

    /// The round's agreed set as stored, checked against its SHA-256.
    ///
    /// # Errors
    /// A client id outside the universe or listed twice; [`crate::Error::Integrity`].
    pub fn agreed_set(&mut self, id: &[u8; 32], universe: usize) -> Result<Option<ClientSet>> {
        each!(self, s => s.agreed_set(id, universe))
    }

    /// The id of the round stored under this numeric round id, if any.
    pub fn round_by_number(&mut self, round: u64) -> Result<Option<[u8; 32]>> {
        each!(self, s => s.round_by_number(round))
    }

    /// Stores a round (open): its spec's JSON without the token list, and the `n` token
    /// hashes read from `tokens` (32 raw bytes each, in client order); one transaction.
    pub fn insert_round(
        &mut self,
        id: &[u8; 32],
        round: u64,
        spec_json: &[u8],
        tokens: &mut impl std::io::Read,
        n: usize,
    ) -> Result<()> {
        each!(self, s => s.insert_round(id, round, spec_json, tokens, n))
    }

    /// Moves a round stored by an older SQLite version to the token table (see
    /// [`sqlite::SqliteStore::migrate_tokens`]); a PostgreSQL store never held that layout.
    pub fn migrate_tokens(&mut self, id: &[u8; 32], spec_json: &[u8], hashes: &[u8]) -> Result<()> {
        match self {
            NodeStore::Sqlite(s) => s.migrate_tokens(id, spec_json, hashes),
            NodeStore::Postgres(_) => Err(crate::Error::InvalidSpec(
                "a round in the PostgreSQL store keeps its token hashes in its spec".into(),
            )),
        }
    }

    /// The token hashes of round `id` (32 raw bytes each, client order), streaming.
    pub fn token_chunks(&mut self, id: &[u8; 32]) -> Result<TokenChunks<'_>> {
        Ok(match self {
            NodeStore::Sqlite(s) => TokenChunks::Sqlite(s.token_chunks(id)),
            NodeStore::Postgres(s) => TokenChunks::Postgres(s.token_chunks(id)?),
        })
    }

    /// One transaction for a batch of uploads (group commit): each is stored, recognised as
    /// the same share again, a conflict, or (PostgreSQL) refused because its round is not open.
    pub fn commit_uploads(&mut self, batch: &[PendingShare<'_>]) -> Result<Vec<UploadOutcome>> {
        each!(self, s => s.commit_uploads(batch))
    }

    /// Calls `f(client, shard, message)` for every stored share of a round, streaming, in
    /// client order, each checked against its stored SHA-256 first.
    pub fn for_each_share(
        &mut self,
        id: &[u8; 32],
        f: impl FnMut(u64, Option<u64>, &[u8]) -> Result<()>,
    ) -> Result<()> {
        each!(self, s => s.for_each_share(id, f))
    }

    /// Records the shard attempts of shares stored without them (one transaction).
    pub fn set_shards(&mut self, id: &[u8; 32], pairs: &[(u64, u64)]) -> Result<()> {
        each!(self, s => s.set_shards(id, pairs))
    }

    /// Calls `f(client, shard)` for every stored share of a round, in client order.
    pub fn for_each_attempt(
        &mut self,
        id: &[u8; 32],
        f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        each!(self, s => s.for_each_attempt(id, f))
    }

    /// Client `client`'s stored share of round `id`, checked against its stored SHA-256.
    pub fn share(&mut self, id: &[u8; 32], client: u64) -> Result<Option<Vec<u8>>> {
        each!(self, s => s.share(id, client))
    }

    /// Records the abort and deletes the round's shares, in one transaction. `Ok(false)` if
    /// the store holds the round closed (PostgreSQL: compare-and-swap open → aborted; an
    /// aborted round stays aborted, `Ok(true)`).
    pub fn abort(&mut self, id: &[u8; 32], reason: &str) -> Result<bool> {
        match self {
            NodeStore::Sqlite(s) => s.abort(id, reason).map(|()| true),
            NodeStore::Postgres(s) => s.abort(id, reason),
        }
    }

    /// Closes the round with its agreed set, in one transaction. `Ok(false)` if the store does
    /// not hold it open (PostgreSQL: compare-and-swap open → closed).
    pub fn set_agreed_set(&mut self, id: &[u8; 32], agreed: &ClientSet) -> Result<bool> {
        match self {
            NodeStore::Sqlite(s) => s.set_agreed_set(id, agreed).map(|()| true),
            NodeStore::Postgres(s) => s.set_agreed_set(id, agreed),
        }
    }

    /// Stores the round's node sum, `len` bytes read from `src`, which must have `sha256`.
    pub fn set_sum_from(
        &mut self,
        id: &[u8; 32],
        src: &mut impl std::io::Read,
        len: u64,
        sha256: &[u8; 32],
    ) -> Result<()> {
        each!(self, s => s.set_sum_from(id, src, len, sha256))
    }

    /// Checks the round's stored node sum against its stored SHA-256; `Ok(false)` if none.
    pub fn check_sum(&mut self, id: &[u8; 32]) -> Result<bool> {
        each!(self, s => s.check_sum(id))
    }
}

/// The token hashes of a stored round, 32 raw bytes each ([`NodeStore::token_chunks`]).
pub(crate) enum TokenChunks<'a> {
    Sqlite(sqlite::TokenChunks<'a>),
    Postgres(postgres::TokenChunks<'a>),
}

impl std::io::Read for TokenChunks<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match self {
            TokenChunks::Sqlite(t) => t.read(out),
            TokenChunks::Postgres(t) => t.read(out),
        }
    }
}

/// A connection for the upload handlers' token lookups.
pub(crate) enum TokenLookup {
    Sqlite(sqlite::SqliteTokenLookup),
    Postgres(postgres::PgReader),
}

impl TokenLookup {
    /// For PostgreSQL, call it off the async threads.
    pub fn open(at: &StoreLocation) -> Result<Self> {
        Ok(match at {
            StoreLocation::Sqlite(path) => {
                TokenLookup::Sqlite(sqlite::SqliteTokenLookup::open(path)?)
            }
            StoreLocation::Postgres(pg) => TokenLookup::Postgres(postgres::PgReader::open(pg)?),
        })
    }

    /// Client `client`'s token hash in round `id`, if stored.
    pub fn token_hash(&mut self, id: &[u8; 32], client: u64) -> Result<Option<[u8; 32]>> {
        match self {
            TokenLookup::Sqlite(l) => l.token_hash(id, client),
            TokenLookup::Postgres(l) => l.token_hash(id, client),
        }
    }
}

/// A read connection for the received set, the node sum and the summing thread's attempts.
pub(crate) enum AttemptReader {
    Sqlite(sqlite::SqliteAttemptReader),
    Postgres(postgres::PgReader),
}

/// Where a node sum is stored ([`AttemptReader::checked_sum_blob`]).
pub(crate) enum SumBlob {
    Sqlite(sqlite::SumBlob),
    Postgres(postgres::SumBlob),
}

impl SumBlob {
    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            SumBlob::Sqlite(b) => b.len,
            SumBlob::Postgres(b) => b.len,
        }
    }
}

impl AttemptReader {
    /// For PostgreSQL, call it off the async threads.
    pub fn open(at: &StoreLocation) -> Result<Self> {
        Ok(match at {
            StoreLocation::Sqlite(path) => {
                AttemptReader::Sqlite(sqlite::SqliteAttemptReader::open(path)?)
            }
            StoreLocation::Postgres(pg) => AttemptReader::Postgres(postgres::PgReader::open(pg)?),
        })
    }

    /// Writes the round's received set of `n_clients` clients as a pair set of
    /// `fixedpoint_shares::wire` (bitset, then each client's shard id in ascending client
    /// order), from one snapshot; a stored client at or beyond `n_clients` is an error.
    pub fn write_received(
        &mut self,
        id: &[u8; 32],
        n_clients: usize,
        out: &mut impl std::io::Write,
    ) -> Result<()> {
        match self {
            AttemptReader::Sqlite(r) => r.write_received(id, n_clients, out),
            AttemptReader::Postgres(r) => r.write_received(id, n_clients, out),
        }
    }

    /// Calls `f` with the round's stored (client, attempt) pairs in client order as an
    /// iterator, read as `f` pulls them; a read error ends it early and is returned after.
    pub fn with_attempts<T>(
        &mut self,
        id: &[u8; 32],
        f: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>) -> T,
    ) -> Result<T> {
        match self {
            AttemptReader::Sqlite(r) => r.with_attempts(id, f),
            AttemptReader::Postgres(r) => r.with_attempts(id, f),
        }
    }

    /// Where the round's node sum is stored, if it is, after checking it against its SHA-256.
    ///
    /// # Errors
    /// [`crate::Error::Integrity`] if the stored sum fails its check.
    pub fn checked_sum_blob(&mut self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        Ok(match self {
            AttemptReader::Sqlite(r) => r.checked_sum_blob(id)?.map(SumBlob::Sqlite),
            AttemptReader::Postgres(r) => r.checked_sum_blob(id)?.map(SumBlob::Postgres),
        })
    }

    /// Copies a stored node sum to `out` in pieces; the last piece is held back until the
    /// bytes read match the stored SHA-256.
    pub fn write_sum(&mut self, at: &SumBlob, out: &mut impl std::io::Write) -> Result<()> {
        match (self, at) {
            (AttemptReader::Sqlite(r), SumBlob::Sqlite(at)) => r.write_sum(at, out),
            (AttemptReader::Postgres(r), SumBlob::Postgres(at)) => r.write_sum(at, out),
            _ => Err(crate::Error::InvalidSpec(
                "a node sum located in one store is read from another".into(),
            )),
        }
    }
}

/// Reads `blob` through and compares its SHA-256 with `digest`; `what` names it in the error.
pub(super) fn check_blob(
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

/// Checks a stored share against the SHA-256 stored beside it. The store's pages have no
/// checksum of their own, so a flipped bit in a share would otherwise reach the node sum and
/// the release unnoticed.
pub(super) fn check_share(id: &[u8; 32], client: u64, digest: &[u8], message: &[u8]) -> Result<()> {
    if Sha256::digest(message).as_slice() == digest {
        return Ok(());
    }
    Err(crate::Error::Integrity(format!(
        "round {}: the stored share of client {client} does not match its SHA-256",
        crate::hex::encode(id)
    )))
}
