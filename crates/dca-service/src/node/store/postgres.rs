//! The PostgreSQL node store (`--store postgres://…`).
//!
//! The blocking `postgres` client runs a small runtime of its own and blocks on it, which
//! tokio refuses on an async worker thread: every call here is made from the store actor's
//! thread, the summing thread or a `spawn_blocking` thread, and a connection dropped on an
//! async thread is closed on a thread of its own ([`PgConnection`]).
//!
//! Every connection here opens itself again on its next use once the server closed it; a
//! transaction cut before its commit is retried on the new connection, one cut during its
//! commit is an error (see [`crate::postgres_tx`]). A read of a few rows is made again on a new
//! connection; a streamed read (shares, attempts, a received set or a node sum being sent) cut
//! mid-way is an error: what it handed on cannot be taken back.
//!
//! Round state is a column of the round's row, checked and changed in the transaction that
//! depends on it: an upload takes a share lock on the round's row and is refused unless the
//! round is open; close and abort are compare-and-swaps from `open`. A transaction that fails
//! with a serialization failure or a deadlock is run again, a bounded number of times.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use fixedpoint_shares::ClientSet;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, IsolationLevel, RowIter, Transaction};
use sha2::{Digest, Sha256};

use super::{HASHES_PER_CHUNK, PendingShare, RoundState, StoredRound, UploadOutcome, check_share};
use crate::postgres_tx::{
    PgConnection, PgMigration, TxError, cause, connection_lost, in_tx, migrate,
};
use crate::{Error, Result, hex};

/// Bytes of a node sum read per query when it is streamed.
const SUM_PIECE: usize = 1 << 20;

/// A PostgreSQL database given to `--store`: the client's configuration and the URL as it may
/// be shown (without its password).
#[derive(Clone)]
pub struct PgLocation {
    config: Box<postgres::Config>,
    shown: String,
}

impl fmt::Debug for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Display for PgLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgLocation {
    /// Parses a `postgres://` or `postgresql://` URL.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the URL (without a password) and what is wrong.
    pub fn parse(url: &str) -> Result<Self> {
        let shown = redact(url);
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(Error::Postgres(format!(
                "--store {shown}: not a PostgreSQL URL (postgres://user@host:port/database); \
                 leave --store out for the SQLite store in --data-dir"
            )));
        }
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| Error::Postgres(format!("--store {shown}: {e}")))?;
        if config.get_dbname().is_none() {
            return Err(Error::Postgres(format!(
                "--store {shown}: the URL names no database (…/database)"
            )));
        }
        if config.get_connect_timeout().is_none() {
            // An unreachable server is an error at start, not a hang.
            config.connect_timeout(Duration::from_secs(10));
        }
        config.application_name("dpdist-node");
        Ok(PgLocation {
            config: Box::new(config),
            shown,
        })
    }

    fn connect(&self) -> Result<PgConnection> {
        PgConnection::open(&self.config, &self.shown)
    }
}

/// `url` with the password, if any, replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

const NODE_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        what: "rounds with their state, token hashes, shares with their attempts, node sums",
        // Shares and sums are random bytes: stored uncompressed (EXTERNAL), which also lets a
        // sum be read in pieces (`substring` reads only the chunks it needs).
        sql: "CREATE TABLE node_rounds (
              id BYTEA PRIMARY KEY CHECK (length(id) = 32),
              round BIGINT NOT NULL UNIQUE,
              spec BYTEA NOT NULL,
              state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'aborted')),
              aborted TEXT,
              agreed BYTEA,
              agreed_sha256 BYTEA
          );
          CREATE TABLE node_round_tokens (
              round_id BYTEA NOT NULL REFERENCES node_rounds (id),
              chunk BIGINT NOT NULL,
              hashes BYTEA NOT NULL,
              PRIMARY KEY (round_id, chunk)
          );
          CREATE TABLE node_shares (
              round_id BYTEA NOT NULL REFERENCES node_rounds (id),
              client BIGINT NOT NULL,
              shard BIGINT NOT NULL,
              digest BYTEA NOT NULL,
              message BYTEA NOT NULL,
              PRIMARY KEY (round_id, client)
          );
          ALTER TABLE node_shares ALTER COLUMN message SET STORAGE EXTERNAL;
          CREATE INDEX node_shares_attempts ON node_shares (round_id, client) INCLUDE (shard);
          CREATE TABLE node_round_sums (
              id BYTEA PRIMARY KEY REFERENCES node_rounds (id),
              sum_sha256 BYTEA NOT NULL,
              sum BYTEA NOT NULL
          );
          ALTER TABLE node_round_sums ALTER COLUMN sum SET STORAGE EXTERNAL;",
    },
    PgMigration {
        version: 2,
        what: "a lease per closed round: the replica that computes and stores its node sum",
        sql: "CREATE TABLE node_sum_leases (
              round_id BYTEA PRIMARY KEY REFERENCES node_rounds (id),
              holder TEXT NOT NULL,
              expires_ms BIGINT NOT NULL
          );",
    },
];

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

/// The node's read-write connection (the store actor's).
pub(crate) struct PgStore {
    conn: PgConnection,
    shown: String,
}

impl PgStore {
    pub fn open(at: &PgLocation) -> Result<Self> {
        let mut conn = at.connect()?;
        migrate(&mut conn, "node", &at.shown, NODE_MIGRATIONS)?;
        Ok(PgStore {
            conn,
            shown: at.shown.clone(),
        })
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
                tokens: None,
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
        super::check_blob(agreed, digest.unwrap_or_default(), || {
            format!("round {}: the stored agreed set", hex::encode(id))
        })?;
        let mut set = ClientSet::try_empty(universe)?;
        for word in agreed.chunks_exact(8) {
            let c = fixedpoint_shares::ClientId(u64::from_be_bytes(
                word.try_into().unwrap_or_default(),
            ));
            if !set.insert(c)? {
                return Err(fixedpoint_shares::Error::DuplicateClient { client: c }.into());
            }
        }
        Ok(Some(set))
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

    /// The token hashes are read whole first (32 bytes per client): a transaction that is
    /// tried again must write them again, and the reader cannot be rewound.
    pub fn insert_round(
        &mut self,
        id: &[u8; 32],
        round: u64,
        spec_json: &[u8],
        tokens: &mut impl std::io::Read,
        n: usize,
    ) -> Result<()> {
        let mut hashes = vec![0u8; 32 * n];
        tokens.read_exact(&mut hashes)?;
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            tx.execute(
                "INSERT INTO node_rounds (id, round, spec) VALUES ($1, $2, $3)",
                &[&&id[..], &(round as i64), &spec_json],
            )?;
            let insert = tx.prepare(
                "INSERT INTO node_round_tokens (round_id, chunk, hashes)
                 SELECT $1, c, h FROM unnest($2::BIGINT[], $3::BYTEA[]) AS t (c, h)",
            )?;
            let chunks: Vec<&[u8]> = hashes.chunks(32 * HASHES_PER_CHUNK).collect();
            // A thousand rows per statement: one round trip each, not one per row.
            for (k, batch) in chunks.chunks(1000).enumerate() {
                let numbers: Vec<i64> = (0..batch.len()).map(|i| (k * 1000 + i) as i64).collect();
                tx.execute(&insert, &[&&id[..], &numbers, &batch])?;
            }
            Ok(())
        })
    }

    pub fn token_chunks(&mut self, id: &[u8; 32]) -> Result<TokenChunks<'_>> {
        let rows = self.client()?.query_raw(
            "SELECT chunk, hashes FROM node_round_tokens WHERE round_id = $1 ORDER BY chunk",
            [&&id[..] as &(dyn ToSql + Sync)],
        )?;
        Ok(TokenChunks {
            rows,
            next: 0,
            buf: Vec::new(),
            pos: 0,
        })
    }

    pub fn commit_uploads(&mut self, batch: &[PendingShare<'_>]) -> Result<Vec<UploadOutcome>> {
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            // The share lock on the round's row holds off a close or abort (which update it)
            // until this transaction ends, and waits for one that is under way.
            let state = tx.prepare("SELECT state FROM node_rounds WHERE id = $1 FOR SHARE")?;
            let insert = tx.prepare(
                "INSERT INTO node_shares (round_id, client, shard, digest, message)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (round_id, client) DO NOTHING",
            )?;
            let find =
                tx.prepare("SELECT digest FROM node_shares WHERE round_id = $1 AND client = $2")?;
            let mut states: HashMap<[u8; 32], RoundState> = HashMap::new();
            let mut out = Vec::with_capacity(batch.len());
            for p in batch {
                let round_state = match states.get(p.round_id) {
                    Some(s) => *s,
                    None => {
                        let row = tx.query_opt(&state, &[&&p.round_id[..]])?;
                        let s = state_of(row.as_ref().map(|r| r.get(0)));
                        states.insert(*p.round_id, s);
                        s
                    }
                };
                if round_state != RoundState::Open {
                    out.push(UploadOutcome::NotOpen(round_state));
                    continue;
                }
                let inserted = tx.execute(
                    &insert,
                    &[
                        &&p.round_id[..],
                        &(p.client as i64),
                        &(p.shard as i64),
                        &&p.digest[..],
                        &p.message,
                    ],
                )?;
                if inserted == 1 {
                    out.push(UploadOutcome::Stored);
                    continue;
                }
                let existing: Vec<u8> = tx
                    .query_one(&find, &[&&p.round_id[..], &(p.client as i64)])?
                    .get(0);
                out.push(if existing == p.digest {
                    UploadOutcome::SameAgain
                } else {
                    UploadOutcome::Conflict
                });
            }
            Ok(out)
        })
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

    /// Every share here has its attempt (the column is NOT NULL); kept for the interface.
    pub fn set_shards(&mut self, id: &[u8; 32], pairs: &[(u64, u64)]) -> Result<()> {
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            for &(client, shard) in pairs {
                tx.execute(
                    "UPDATE node_shares SET shard = $3 WHERE round_id = $1 AND client = $2",
                    &[&&id[..], &(client as i64), &(shard as i64)],
                )?;
            }
            Ok(())
        })
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

    /// Open → aborted, and the round's shares deleted, in one transaction; `Ok(true)` also if
    /// it was aborted already, `Ok(false)` if it is closed or unknown.
    pub fn abort(&mut self, id: &[u8; 32], reason: &str) -> Result<bool> {
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            let changed = tx.execute(
                "UPDATE node_rounds SET state = 'aborted', aborted = $2
                 WHERE id = $1 AND state = 'open'",
                &[&&id[..], &reason],
            )?;
            if changed == 1 {
                tx.execute("DELETE FROM node_shares WHERE round_id = $1", &[&&id[..]])?;
                return Ok(true);
            }
            let row = tx.query_opt("SELECT state FROM node_rounds WHERE id = $1", &[&&id[..]])?;
            Ok(state_of(row.as_ref().map(|r| r.get(0))) == RoundState::Aborted)
        })
    }

    /// Open → closed with the agreed set (8 bytes per client, big-endian, ascending) and its
    /// SHA-256, as a compare-and-swap: `Ok(false)` if the round is not open.
    pub fn set_agreed_set(&mut self, id: &[u8; 32], agreed: &ClientSet) -> Result<bool> {
        let bytes: Vec<u8> = agreed.iter().flat_map(|c| c.0.to_be_bytes()).collect();
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            Ok(tx.execute(
                "UPDATE node_rounds SET state = 'closed', agreed = $2, agreed_sha256 = $3
                 WHERE id = $1 AND state = 'open'",
                &[&&id[..], &bytes, &&digest[..]],
            )? == 1)
        })
    }

    /// Stores the node sum of a closed round (read whole from `src`: a statement sends it in
    /// one piece).
    pub fn set_sum_from(
        &mut self,
        id: &[u8; 32],
        src: &mut impl std::io::Read,
        len: u64,
        sha256: &[u8; 32],
    ) -> Result<()> {
        let mut sum = Vec::new();
        let copied =
            std::io::Read::read_to_end(&mut std::io::Read::take(&mut *src, len), &mut sum)?;
        if copied as u64 != len {
            return Err(Error::Io(std::io::Error::other(format!(
                "node sum: {copied} bytes, not {len}"
            ))));
        }
        if Sha256::digest(&sum).as_slice() != sha256 {
            return Err(Error::Integrity(format!(
                "round {}: the node sum's spool file does not match the SHA-256 it was \
                 written with",
                hex::encode(id)
            )));
        }
        let shown = self.shown.clone();
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            let row = tx.query_opt(
                "SELECT state FROM node_rounds WHERE id = $1 FOR UPDATE",
                &[&&id[..]],
            )?;
            if state_of(row.as_ref().map(|r| r.get(0))) != RoundState::Closed {
                return Err(Error::InvalidSpec(format!(
                    "{shown}: round {} is not closed; its node sum is not stored",
                    hex::encode(id)
                ))
                .into());
            }
            tx.execute(
                "INSERT INTO node_round_sums (id, sum_sha256, sum) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET sum_sha256 = EXCLUDED.sum_sha256,
                     sum = EXCLUDED.sum",
                &[&&id[..], &&sha256[..], &sum],
            )?;
            Ok(())
        })
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
            tokens: None,
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

    /// Takes the lease of a closed round whose node sum is not stored, for `holder` until
    /// `until_ms`: `Ok(true)` if no lease row exists, it expired by `now_ms` or `holder` has it
    /// already. One statement decides between replicas racing for it (the row's lock).
    pub fn take_sum_lease(
        &mut self,
        id: &[u8; 32],
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool> {
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            let row = tx.query_opt(
                "SELECT r.state, s.id IS NOT NULL FROM node_rounds r
                 LEFT JOIN node_round_sums s ON s.id = r.id WHERE r.id = $1 FOR SHARE OF r",
                &[&&id[..]],
            )?;
            let closed_unsummed = row.is_some_and(|r| {
                state_of(Some(r.get(0))) == RoundState::Closed && !r.get::<_, bool>(1)
            });
            if !closed_unsummed {
                return Ok(false);
            }
            Ok(tx.execute(
                "INSERT INTO node_sum_leases (round_id, holder, expires_ms) VALUES ($1, $2, $4)
                 ON CONFLICT (round_id) DO UPDATE
                     SET holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms
                     WHERE node_sum_leases.expires_ms <= $3 OR node_sum_leases.holder = $2",
                &[&&id[..], &holder, &(now_ms as i64), &(until_ms as i64)],
            )? == 1)
        })
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

fn attempts<'a>(client: &'a mut impl GenericClient, id: &[u8; 32]) -> Result<RowIter<'a>> {
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
fn checked_sum(
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

/// A read connection: token lookups of the upload handlers, the received set, the node sum.
pub(crate) struct PgReader {
    conn: PgConnection,
    /// The token lookup's statement, prepared on first use on the connection of that
    /// generation ([`PgConnection::generation`]).
    token_stmt: Option<(u64, postgres::Statement)>,
}

impl PgReader {
    pub fn open(at: &PgLocation) -> Result<Self> {
        Ok(PgReader {
            conn: at.connect()?,
            token_stmt: None,
        })
    }

    /// A lookup cut by a lost connection is made once more on a new one: it only reads.
    pub fn token_hash(&mut self, id: &[u8; 32], client: u64) -> Result<Option<[u8; 32]>> {
        match self.token_hash_once(id, client) {
            Ok(hash) => Ok(hash),
            Err(TxError::Pg(e)) if connection_lost(&e) || self.conn.is_closed() => {
                self.conn.forget();
                tracing::warn!(
                    store = self.conn.shown(),
                    "token lookup: the connection was lost ({}); looking up again",
                    cause(&e)
                );
                match self.token_hash_once(id, client) {
                    Ok(hash) => Ok(hash),
                    Err(TxError::Pg(e)) => Err(e.into()),
                    Err(TxError::Other(e)) => Err(e),
                }
            }
            Err(TxError::Pg(e)) => Err(e.into()),
            Err(TxError::Other(e)) => Err(e),
        }
    }

    fn token_hash_once(
        &mut self,
        id: &[u8; 32],
        client: u64,
    ) -> std::result::Result<Option<[u8; 32]>, TxError> {
        let (chunk, at) = (
            client / HASHES_PER_CHUNK as u64,
            (client % HASHES_PER_CHUNK as u64) as usize * 32,
        );
        // Connected (again) first: a statement prepared on an earlier connection is gone.
        self.conn.client()?;
        let generation = self.conn.generation();
        let stmt = match &self.token_stmt {
            Some((g, s)) if *g == generation => s.clone(),
            _ => {
                let s = self.conn.client()?.prepare(
                    "SELECT hashes FROM node_round_tokens WHERE round_id = $1 AND chunk = $2",
                )?;
                self.token_stmt = Some((generation, s.clone()));
                s
            }
        };
        let row = self
            .conn
            .client()?
            .query_opt(&stmt, &[&&id[..], &(chunk as i64)])?;
        Ok(row.and_then(|r| {
            r.get::<_, &[u8]>(0)
                .get(at..at + 32)
                .and_then(|h| <[u8; 32]>::try_from(h).ok())
        }))
    }

    /// The received pair set from one snapshot (a repeatable-read transaction), reading the
    /// round's attempts twice: once for the bitset, which precedes the ids, once for the ids.
    pub fn write_received(
        &mut self,
        id: &[u8; 32],
        n_clients: usize,
        out: &mut impl std::io::Write,
    ) -> Result<()> {
        let mut tx = snapshot(self.conn.client()?)?;
        let mut clients = fixedpoint_shares::ClientSet::try_empty(n_clients)?;
        with_pairs(attempts(&mut tx, id)?, |pairs| {
            for (client, _) in pairs {
                clients.insert(fixedpoint_shares::ClientId(client))?;
            }
            Ok::<_, Error>(())
        })??;
        with_pairs(attempts(&mut tx, id)?, |pairs| {
            let pairs = pairs.map(|(c, s)| {
                (
                    fixedpoint_shares::ClientId(c),
                    fixedpoint_shares::ShardId(s),
                )
            });
            fixedpoint_shares::wire::write_pair_set_streamed(&clients, pairs, &mut *out)
        })??;
        out.flush()?;
        tx.commit()?;
        Ok(())
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

    /// Stores the node sum (`sum`, whose SHA-256 is `sha256`) of a closed round, in one
    /// transaction that also checks that `holder` still has the round's lease: a replica whose
    /// lease expired (and was maybe taken over) stores nothing. `Ok(false)` if it lost it.
    pub fn store_sum_under_lease(
        &mut self,
        id: &[u8; 32],
        holder: &str,
        sum: &[u8],
        sha256: &[u8; 32],
    ) -> Result<bool> {
        in_tx(&mut self.conn, IsolationLevel::ReadCommitted, |tx| {
            let row = tx.query_opt(
                "SELECT l.holder, r.state FROM node_sum_leases l
                 JOIN node_rounds r ON r.id = l.round_id WHERE l.round_id = $1
                 FOR UPDATE OF l",
                &[&&id[..]],
            )?;
            let Some(row) = row else { return Ok(false) };
            if row.get::<_, &str>(0) != holder {
                return Ok(false);
            }
            if state_of(Some(row.get(1))) != RoundState::Closed {
                return Err(Error::InvalidSpec(format!(
                    "round {} is not closed; its node sum is not stored",
                    hex::encode(id)
                ))
                .into());
            }
            tx.execute(
                "INSERT INTO node_round_sums (id, sum_sha256, sum) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO NOTHING",
                &[&&id[..], &&sha256[..], &sum],
            )?;
            Ok(true)
        })
    }

    /// Pieces of [`SUM_PIECE`] bytes from one snapshot; the last is held back until the bytes
    /// read match the stored SHA-256.
    pub fn write_sum(&mut self, at: &SumBlob, out: &mut impl std::io::Write) -> Result<()> {
        let mut tx = snapshot(self.conn.client()?)?;
        let piece = tx.prepare(
            "SELECT substring(sum FROM $2 FOR $3), sum_sha256 FROM node_round_sums WHERE id = $1",
        )?;
        let mut hash = Sha256::new();
        let mut held: Vec<u8> = Vec::new();
        let mut from = 0u64;
        while from < at.len {
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
            let bytes: &[u8] = row.get(0);
            if bytes.is_empty() {
                break;
            }
            out.write_all(&held)?;
            held.clear();
            held.extend_from_slice(bytes);
            hash.update(bytes);
            from += bytes.len() as u64;
        }
        if hash.finalize().as_slice() != at.sha256.as_slice() {
            return Err(Error::Integrity(
                "the stored node sum changed while it was sent".into(),
            ));
        }
        out.write_all(&held)?;
        out.flush()?;
        tx.commit()?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "postgres_tests.rs"]
mod tests;
