//! A compute node's durable state, behind one interface with two implementations: SQLite
//! (`sqlite`, the embedded default: a file in the data directory, no server) and PostgreSQL
//! (`postgres`, `--store postgres://…`: the database that node replicas will share).
//!
//! `NodeStore` holds one backend of an enum rather than a trait object: its reads take closures
//! and readers generically (`impl FnMut`, `impl Read`) and hand out borrowing readers
//! (`TokenChunks<'_>`), which a `dyn` trait could only offer boxed; with two backends known at
//! compile time a `match` per read is all the dispatch needed. The transactions' rows are a
//! trait ([`tx::NodeTx`]), used as `&mut dyn NodeTx`: the rules take one type for both.
//!
//! Every operation that changes a round runs as one named transaction
//! ([`NodeStore::run_tx`]): the rules ([`rules`]) are written once over a transaction trait
//! ([`tx::NodeTx`]) whose backends only read and write typed rows, so a round's state is
//! checked and changed in the same transaction on both backends (uploads refused once the
//! round is closed or aborted, close and abort only from open), right also with other writers
//! on the same database. Each named transaction has a `tracing` span and is counted and timed
//! in the node's metrics.
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

mod layout;
mod postgres;
mod readers;
mod rules;
mod sqlite;
mod tx;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fixedpoint_shares::ClientSet;

use crate::Result;
pub use crate::db::PgLocation;
use crate::http::metrics::Metrics;

pub(crate) use layout::HashingWriter;
pub(crate) use postgres::{PgReader, PgStore};
pub(crate) use readers::{AttemptReader, TokenChunks, TokenLookup};
use tx::NodeTx;

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

    /// The same store with a pool of at most `size` PostgreSQL connections
    /// (`--store-pool-size`); the SQLite file has no pool and is returned as it is.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSpec`] for a size under [`crate::db::MIN_STORE_POOL_SIZE`].
    pub fn with_pool_size(self, size: u32) -> Result<Self> {
        match self {
            StoreLocation::Postgres(pg) => pg.with_pool_size(size).map(StoreLocation::Postgres),
            sqlite => Ok(sqlite),
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
}

/// The node's read-write store, owned by the store actor.
pub(crate) struct NodeStore {
    backend: Backend,
    metrics: Arc<Metrics>,
}

enum Backend {
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
    /// Whether its node sum is stored (the sum itself is not read: it is streamed when
    /// asked for; the agreed set is read by [`NodeStore::agreed_set`]).
    pub sum_stored: bool,
    /// Why the aggregator aborted the round, if it did.
    pub aborted: Option<String>,
}

/// Runs one named transaction (`run`) inside a `tracing` span, counted and timed in `metrics`.
fn observed<T>(
    name: &'static str,
    metrics: &Metrics,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let _span = tracing::info_span!("node_store_tx", tx = name).entered();
    let started = Instant::now();
    let outcome = run();
    metrics.store_tx(name, outcome.is_ok(), started);
    outcome
}

/// Stores the node sum computed under `holder`'s lease, on the summing replica's own
/// connection ([`rules::store_sum_under_lease`]): `Ok(false)` if the lease was lost.
pub(crate) fn store_sum_under_lease(
    reader: &mut PgReader,
    metrics: &Metrics,
    id: &[u8; 32],
    holder: &str,
    sum: &[u8],
    sha256: &[u8; 32],
) -> Result<bool> {
    observed("store_sum_under_lease", metrics, || {
        reader.run_tx(|tx| rules::store_sum_under_lease(tx, id, holder, sum, sha256))
    })
}

macro_rules! each {
    ($value:expr, $s:ident => $body:expr) => {
        match $value {
            Backend::Sqlite($s) => $body,
            Backend::Postgres($s) => $body,
        }
    };
}

impl NodeStore {
    /// Opens (and migrates) the store. For PostgreSQL, call it off the async threads.
    pub fn open(at: &StoreLocation) -> Result<Self> {
        let backend = match at {
            StoreLocation::Sqlite(path) => Backend::Sqlite(sqlite::SqliteStore::open(path)?),
            StoreLocation::Postgres(pg) => Backend::Postgres(postgres::PgStore::open(pg)?),
        };
        Ok(NodeStore {
            backend,
            metrics: Metrics::new(),
        })
    }

    /// The store with its transactions counted and timed in `metrics` (the node's).
    pub fn counted_in(self, metrics: Arc<Metrics>) -> Self {
        NodeStore { metrics, ..self }
    }

    /// Runs `f` in one transaction named `name` and commits it if `f` succeeds (else rolls
    /// back). On PostgreSQL `f` runs again after a serialization failure, a deadlock or a
    /// connection lost before the commit, so it must not keep effects outside the
    /// transaction.
    pub fn run_tx<T>(
        &mut self,
        name: &'static str,
        mut f: impl FnMut(&mut dyn NodeTx) -> Result<T>,
    ) -> Result<T> {
        let metrics = self.metrics.clone();
        observed(
            name,
            &metrics,
            || each!(&mut self.backend, s => s.run_tx(|tx| f(tx))),
        )
    }

    /// Takes the lease of a closed round whose node sum is not stored, for `holder` until
    /// `until_ms` ([`rules::take_sum_lease`]); only a store shared by replicas has leases.
    pub fn take_sum_lease(
        &mut self,
        id: &[u8; 32],
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool> {
        let metrics = self.metrics.clone();
        let Backend::Postgres(s) = &mut self.backend else {
            return Err(crate::Error::InvalidSpec(
                "node sum leases are kept in a shared (PostgreSQL) store only".into(),
            ));
        };
        observed("take_sum_lease", &metrics, || {
            s.run_tx(|tx| rules::take_sum_lease(tx, id, holder, now_ms, until_ms))
        })
    }

    /// [`Self::run_tx`] for a transaction that reads `len` bytes from `src`. A transaction
    /// PostgreSQL may run again must read them again, and `src` cannot be rewound: there they
    /// are read whole first.
    fn run_tx_reading<T>(
        &mut self,
        name: &'static str,
        src: &mut dyn std::io::Read,
        len: u64,
        mut f: impl FnMut(&mut dyn NodeTx, &mut dyn std::io::Read) -> Result<T>,
    ) -> Result<T> {
        if let Backend::Postgres(_) = self.backend {
            let mut whole = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(src, len), &mut whole)?;
            return self.run_tx(name, |tx| f(tx, &mut &whole[..]));
        }
        self.run_tx(name, |tx| f(tx, &mut *src))
    }

    pub fn rounds(&mut self) -> Result<Vec<StoredRound>> {
        each!(&mut self.backend, s => s.rounds())
    }

    /// The store as one that other processes (node replicas) may share, or `None` for the
    /// SQLite file, which only this process writes.
    pub fn shared(&mut self) -> Option<&mut PgStore> {
        match &mut self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(s) => Some(s),
        }
    }

    /// The round's agreed set as stored, checked against its SHA-256.
    ///
    /// # Errors
    /// A client id outside the universe or listed twice; [`crate::Error::Integrity`].
    pub fn agreed_set(&mut self, id: &[u8; 32], universe: usize) -> Result<Option<ClientSet>> {
        each!(&mut self.backend, s => s.agreed_set(id, universe))
    }

    /// The id of the round stored under this numeric round id, if any.
    pub fn round_by_number(&mut self, round: u64) -> Result<Option<[u8; 32]>> {
        each!(&mut self.backend, s => s.round_by_number(round))
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
        self.run_tx_reading("create_round", tokens, 32 * n as u64, |tx, tokens| {
            rules::create_round(tx, id, round, spec_json, tokens, n)
        })
    }

    /// Moves a round stored by an older version (token hashes in a blob of their own, or in
    /// the spec's JSON) to the token table: `hashes` are its token hashes, `spec_json` its
    /// spec without the list. One transaction.
    pub fn migrate_tokens(&mut self, id: &[u8; 32], spec_json: &[u8], hashes: &[u8]) -> Result<()> {
        self.run_tx("move_tokens", |tx| {
            rules::move_tokens(tx, id, spec_json, &mut &hashes[..], hashes.len() / 32)
        })
    }

    /// The token hashes of round `id` (32 raw bytes each, client order), streaming.
    pub fn token_chunks(&mut self, id: &[u8; 32]) -> Result<TokenChunks<'_>> {
        Ok(match &mut self.backend {
            Backend::Sqlite(s) => TokenChunks::Sqlite(s.token_chunks(id)),
            Backend::Postgres(s) => TokenChunks::Postgres(s.token_chunks(id)?),
        })
    }

    /// One transaction for a batch of uploads (group commit): each is stored, recognised as
    /// the same share again, a conflict, or refused because its round is not open.
    pub fn commit_uploads(&mut self, batch: &[PendingShare<'_>]) -> Result<Vec<UploadOutcome>> {
        self.run_tx("commit_uploads", |tx| rules::commit_uploads(tx, batch))
    }

    /// Calls `f(client, shard, message)` for every stored share of a round, streaming, in
    /// client order, each checked against its stored SHA-256 first.
    pub fn for_each_share(
        &mut self,
        id: &[u8; 32],
        f: impl FnMut(u64, Option<u64>, &[u8]) -> Result<()>,
    ) -> Result<()> {
        each!(&mut self.backend, s => s.for_each_share(id, f))
    }

    /// Records the shard attempts of shares stored without them (one transaction).
    pub fn set_shards(&mut self, id: &[u8; 32], pairs: &[(u64, u64)]) -> Result<()> {
        self.run_tx("set_shards", |tx| rules::set_shards(tx, id, pairs))
    }

    /// Calls `f(client, shard)` for every stored share of a round, in client order.
    pub fn for_each_attempt(
        &mut self,
        id: &[u8; 32],
        f: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        each!(&mut self.backend, s => s.for_each_attempt(id, f))
    }

    /// Client `client`'s stored share of round `id`, checked against its stored SHA-256.
    pub fn share(&mut self, id: &[u8; 32], client: u64) -> Result<Option<Vec<u8>>> {
        each!(&mut self.backend, s => s.share(id, client))
    }

    /// Records the abort and deletes the round's shares, in one transaction: `Ok(true)` if
    /// the round is aborted now or was already, `Ok(false)` if it is closed or unknown.
    pub fn abort(&mut self, id: &[u8; 32], reason: &str) -> Result<bool> {
        self.run_tx("abort", |tx| rules::abort(tx, id, reason))
    }

    /// Closes the round with its agreed set, in one transaction. `Ok(false)` if the store does
    /// not hold it open.
    pub fn set_agreed_set(&mut self, id: &[u8; 32], agreed: &ClientSet) -> Result<bool> {
        self.run_tx("close", |tx| rules::close(tx, id, agreed))
    }

    /// Stores the node sum of a closed round, `len` bytes read from `src`, which must have
    /// `sha256`.
    pub fn set_sum_from(
        &mut self,
        id: &[u8; 32],
        src: &mut impl std::io::Read,
        len: u64,
        sha256: &[u8; 32],
    ) -> Result<()> {
        self.run_tx_reading("store_sum", src, len, |tx, sum| {
            rules::store_sum(tx, id, sum, len, sha256)
        })
    }

    /// Checks the round's stored node sum against its stored SHA-256; `Ok(false)` if none.
    pub fn check_sum(&mut self, id: &[u8; 32]) -> Result<bool> {
        each!(&mut self.backend, s => s.check_sum(id))
    }

    /// The SQLite backend, for tests that look at its rows.
    #[cfg(test)]
    fn sqlite(&self) -> &sqlite::SqliteStore {
        match &self.backend {
            Backend::Sqlite(s) => s,
            Backend::Postgres(_) => panic!("not a SQLite store"),
        }
    }
}

#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod upgrade_tests;
