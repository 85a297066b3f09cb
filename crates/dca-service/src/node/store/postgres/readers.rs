//! Reads of the PostgreSQL node store apart from the store actor's, each on a connection from
//! the pool: token lookups, the received set, the attempts, the node sum, and the leased node
//! sum's own writes.

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, IsolationLevel, RowIter, Transaction};

use super::super::layout::{check_share, copy_checked_sum};
use super::PgTx;
use crate::db::postgres_tx::{PgConnection, TxError, cause, connection_lost};
use crate::db::{PgLocation, PooledPg};
use crate::{Error, Result, hex};

/// Bytes of a node sum read per query when it is streamed.
pub(super) const SUM_PIECE: usize = 1 << 20;

pub(super) fn attempts<'a>(
    client: &'a mut impl GenericClient,
    id: &[u8; 32],
) -> Result<RowIter<'a>> {
    Ok(client.query_raw(
        "SELECT client, shard FROM node_shares WHERE round_id = $1 ORDER BY client",
        [&&id[..] as &(dyn ToSql + Sync)],
    )?)
}

/// Calls `f` with `rows` of [`attempts`] as (client, shard) pairs, read as `f` pulls them; a
/// read error ends the iterator early and is returned after `f`.
fn with_pairs<T>(
    mut rows: RowIter<'_>,
    f: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>) -> T,
) -> Result<T> {
    let mut failed: Option<Error> = None;
    let mut pairs = std::iter::from_fn(|| {
        if failed.is_some() {
            return None;
        }
        match rows.next() {
            Ok(Some(row)) => Some((row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64)),
            Ok(None) => None,
            Err(e) => {
                failed = Some(e.into());
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

/// A read-only repeatable-read transaction: every read in it sees one snapshot.
fn snapshot(client: &mut Client) -> Result<Transaction<'_>> {
    Ok(client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?)
}

/// Where the round's sum is, if stored, after the server checked it against its SHA-256.
pub(super) fn checked_sum(
    client: &mut Client,
    id: &[u8; 32],
) -> std::result::Result<Option<SumBlob>, TxError> {
    let row = client.query_opt(
        "SELECT length(sum), sum_sha256, sha256(sum) = sum_sha256 FROM node_round_sums
         WHERE id = $1",
        &[&&id[..]],
    )?;
    let Some(row) = row else { return Ok(None) };
    if !row.get::<_, bool>(2) {
        return Err(Error::Integrity(format!(
            "round {}: the stored node sum does not match its SHA-256",
            hex::encode(id)
        ))
        .into());
    }
    Ok(Some(SumBlob {
        id: *id,
        len: row.get::<_, i32>(0) as u64,
        sha256: row.get(1),
    }))
}

/// The token hashes of a stored round, read row by row as they are pulled.
pub(crate) struct TokenChunks<'a> {
    rows: RowIter<'a>,
    next: i64,
    buf: Vec<u8>,
    pos: usize,
}

impl<'a> TokenChunks<'a> {
    /// Over `rows` of (chunk, hashes), in chunk order.
    pub(super) fn new(rows: RowIter<'a>) -> Self {
        TokenChunks {
            rows,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

impl std::io::Read for TokenChunks<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            match self.rows.next().map_err(std::io::Error::other)? {
                // A gap in the chunk numbers ends the hashes, as a missing row does in SQLite.
                Some(row) if row.get::<_, i64>(0) == self.next => {
                    self.buf = row.get(1);
                    self.pos = 0;
                    self.next += 1;
                }
                _ => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Where a node sum is stored ([`PgReader::checked_sum_blob`]).
pub(crate) struct SumBlob {
    id: [u8; 32],
    /// Its length in bytes.
    pub len: u64,
    sha256: Vec<u8>,
}

/// The upload handlers' token lookups: each takes a connection from the pool for one lookup.
pub(crate) struct PgTokenLookup {
    at: PgLocation,
}

impl PgTokenLookup {
    pub fn new(at: &PgLocation) -> Self {
        PgTokenLookup { at: at.clone() }
    }

    pub fn token_chunk<T>(
        &mut self,
        id: &[u8; 32],
        chunk: u64,
        pick: impl Fn(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let mut conn = self.at.connect()?;
        token_chunk(&mut conn, id, chunk, pick)
    }
}

/// Hashes of chunk `chunk` of round `id`'s tokens, as `pick` takes them. A lookup cut by a lost
/// connection is made once more on a new one: it only reads.
fn token_chunk<T>(
    conn: &mut PgConnection,
    id: &[u8; 32],
    chunk: u64,
    pick: impl Fn(&[u8]) -> T,
) -> Result<Option<T>> {
    let once = |conn: &mut PgConnection| -> std::result::Result<Option<T>, TxError> {
        let stmt = conn
            .prepared("SELECT hashes FROM node_round_tokens WHERE round_id = $1 AND chunk = $2")?;
        let row = conn
            .client()?
            .query_opt(&stmt, &[&&id[..], &(chunk as i64)])?;
        Ok(row.map(|r| pick(r.get(0))))
    };
    match once(conn) {
        Ok(hash) => Ok(hash),
        Err(TxError::Pg(e)) if connection_lost(&e) || conn.is_closed() => {
            conn.forget();
            tracing::warn!(
                store = conn.shown(),
                "token lookup: the connection was lost ({}); looking up again",
                cause(&e)
            );
            match once(conn) {
                Ok(hash) => Ok(hash),
                Err(TxError::Pg(e)) => Err(e.into()),
                Err(TxError::Other(e)) => Err(e),
            }
        }
        Err(TxError::Pg(e)) => Err(e.into()),
        Err(TxError::Other(e)) => Err(e),
    }
}

/// A read connection from the pool, held while it reads: the received set, the attempts, the
/// node sum, and the leased node sum's own writes.
pub(crate) struct PgReader {
    conn: PooledPg,
}

impl PgReader {
    /// A pooled connection may have been cut while it waited in the pool, and a streamed read
    /// cut mid-way cannot be made again: the connection is tried first (one round trip,
    /// connected again if it was cut), so a reader starts on a live one as a new connection
    /// would.
    pub fn open(at: &PgLocation) -> Result<Self> {
        let mut conn = at.connect()?;
        conn.read(|c| Ok(c.simple_query("")?))?;
        Ok(PgReader { conn })
    }

    /// Runs `f` in one read-only repeatable-read transaction: every read in it sees one
    /// snapshot. A connection lost on the way ends it with an error (a new one would read
    /// outside the snapshot).
    pub fn in_snapshot<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.conn
            .client()?
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        let generation = self.conn.generation();
        let out = f(self);
        if self.conn.is_closed() || self.conn.generation() != generation {
            return Err(Error::Postgres(format!(
                "{}: the connection was lost during a snapshot read",
                self.conn.shown()
            )));
        }
        self.conn.client()?.batch_execute("COMMIT")?;
        out
    }

    pub fn with_attempts<T>(
        &mut self,
        id: &[u8; 32],
        f: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>) -> T,
    ) -> Result<T> {
        with_pairs(attempts(self.conn.client()?, id)?, f)
    }

    pub fn checked_sum_blob(&mut self, id: &[u8; 32]) -> Result<Option<SumBlob>> {
        self.conn.read(|c| checked_sum(c, id))
    }

    /// Calls `f(client, message)` for every stored share of the round, streaming, in client
    /// order, each checked against its stored SHA-256 first.
    pub fn for_each_share(
        &mut self,
        id: &[u8; 32],
        mut f: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut rows = self.conn.client()?.query_raw(
            "SELECT client, digest, message FROM node_shares WHERE round_id = $1 ORDER BY client",
            [&&id[..] as &(dyn ToSql + Sync)],
        )?;
        while let Some(row) = rows.next()? {
            let client = row.get::<_, i64>(0) as u64;
            let (digest, message): (&[u8], &[u8]) = (row.get(1), row.get(2));
            check_share(id, client, digest, message)?;
            f(client, message)?;
        }
        Ok(())
    }

    /// Moves the lease's expiry to `until_ms` if `holder` still has it; `Ok(false)` if not.
    pub fn renew_sum_lease(&mut self, id: &[u8; 32], holder: &str, until_ms: u64) -> Result<bool> {
        Ok(self.conn.client()?.execute(
            "UPDATE node_sum_leases SET expires_ms = $3 WHERE round_id = $1 AND holder = $2",
            &[&&id[..], &holder, &(until_ms as i64)],
        )? == 1)
    }

    /// Gives the lease up (it expires now) if `holder` has it, so another replica may take it
    /// at once.
    pub fn drop_sum_lease(&mut self, id: &[u8; 32], holder: &str) -> Result<()> {
        self.conn.client()?.execute(
            "UPDATE node_sum_leases SET expires_ms = 0 WHERE round_id = $1 AND holder = $2",
            &[&&id[..], &holder],
        )?;
        Ok(())
    }

    /// Runs `f` in one transaction on this connection ([`super::run_tx`]).
    pub fn run_tx<T>(&mut self, f: impl FnMut(&mut PgTx<'_, '_>) -> Result<T>) -> Result<T> {
        super::run_tx(&mut self.conn, f)
    }

    /// Pieces of [`SUM_PIECE`] bytes from one snapshot; the last is held back until the bytes
    /// read match the stored SHA-256.
    pub fn write_sum(&mut self, at: &SumBlob, out: &mut impl std::io::Write) -> Result<()> {
        let mut tx = snapshot(self.conn.client()?)?;
        let piece = tx.prepare(
            "SELECT substring(sum FROM $2 FOR $3), sum_sha256 FROM node_round_sums WHERE id = $1",
        )?;
        let mut from = 0u64;
        let pieces = || -> Result<Option<Vec<u8>>> {
            if from >= at.len {
                return Ok(None);
            }
            let row = tx
                .query_opt(
                    &piece,
                    &[&&at.id[..], &((from + 1) as i32), &(SUM_PIECE as i32)],
                )?
                .ok_or_else(|| {
                    Error::Integrity("the stored node sum was deleted while it was sent".into())
                })?;
            if row.get::<_, &[u8]>(1) != at.sha256.as_slice() {
                return Err(Error::Integrity(
                    "the stored node sum changed while it was sent".into(),
                ));
            }
            let bytes: Vec<u8> = row.get(0);
            from += bytes.len() as u64;
            Ok((!bytes.is_empty()).then_some(bytes))
        };
        copy_checked_sum(pieces, Some(&at.sha256), out)?;
        tx.commit()?;
        Ok(())
    }
}
