//! The node store's read connections, apart from the store actor's: the upload handlers'
//! token lookups, and the received set, the attempts and the node sum read while the actor
//! goes on writing. They only read; nothing here decides a round's state.

use fixedpoint_shares::{ClientId, ClientSet, ShardId};

use super::layout::{token_at, token_position};
use super::{StoreLocation, postgres, sqlite};
use crate::Result;

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

/// A connection for the upload handlers' token lookups (on PostgreSQL, one from the pool per
/// lookup).
pub(crate) enum TokenLookup {
    Sqlite(sqlite::SqliteTokenLookup),
    Postgres(postgres::PgTokenLookup),
}

impl TokenLookup {
    pub fn open(at: &StoreLocation) -> Result<Self> {
        Ok(match at {
            StoreLocation::Sqlite(path) => {
                TokenLookup::Sqlite(sqlite::SqliteTokenLookup::open(path)?)
            }
            StoreLocation::Postgres(pg) => TokenLookup::Postgres(postgres::PgTokenLookup::new(pg)),
        })
    }

    /// Client `client`'s token hash in round `id`, if stored.
    pub fn token_hash(&mut self, id: &[u8; 32], client: u64) -> Result<Option<[u8; 32]>> {
        let (chunk, at) = token_position(client);
        let pick = |hashes: &[u8]| token_at(hashes, at);
        Ok(match self {
            TokenLookup::Sqlite(l) => l.token_chunk(id, chunk, pick),
            TokenLookup::Postgres(l) => l.token_chunk(id, chunk, pick),
        }?
        .flatten())
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
        // Read twice: the bitset of clients precedes their shard ids.
        let clients = |pairs: &mut dyn Iterator<Item = (u64, u64)>| -> Result<ClientSet> {
            let mut clients = ClientSet::try_empty(n_clients)?;
            for (client, _) in pairs {
                clients.insert(ClientId(client))?;
            }
            Ok(clients)
        };
        let mut write = |clients: ClientSet, pairs: &mut dyn Iterator<Item = (u64, u64)>| {
            let pairs = pairs.map(|(c, s)| (ClientId(c), ShardId(s)));
            fixedpoint_shares::wire::write_pair_set_streamed(&clients, pairs, &mut *out)?;
            Ok(())
        };
        match self {
            AttemptReader::Sqlite(r) => r.in_snapshot(|r| {
                let clients = r.with_attempts(id, clients)??;
                r.with_attempts(id, |pairs| write(clients, pairs))?
            }),
            AttemptReader::Postgres(r) => r.in_snapshot(|r| {
                let clients = r.with_attempts(id, clients)??;
                r.with_attempts(id, |pairs| write(clients, pairs))?
            }),
        }?;
        out.flush()?;
        Ok(())
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
