//! The node store's rules, written once over [`NodeTx`] and run inside one transaction each
//! ([`super::NodeStore::run_tx`]), on SQLite and PostgreSQL alike:
//!
//! - a share is stored only while its round is open; a client's share is stored once: the
//!   same bytes again (same SHA-256) are "the same again", other bytes a conflict;
//! - an open round is aborted once: its shares are deleted with it; aborting it again is
//!   done already; a closed round is not aborted;
//! - an open round is closed once, with its agreed set and that set's SHA-256;
//! - a node sum is stored only for a closed round, and only if the bytes are as long as said
//!   and have the SHA-256 the summing thread computed;
//! - on a store shared by replicas, the node sum of a closed round is computed by the one
//!   replica holding its lease, taken only while the sum is not stored, and stored only
//!   while that replica still holds it;
//! - a round's token hashes are stored in rows of [`HASHES_PER_CHUNK`], a statement per
//!   [`CHUNKS_PER_STATEMENT`] rows.

use std::collections::HashMap;

use fixedpoint_shares::ClientSet;

use super::layout::{HASHES_PER_CHUNK, HashingReader, agreed_sha256};
use super::tx::{LeaseTx, NewSum, NodeTx, RowLock};
use super::{PendingShare, RoundState, UploadOutcome};
use crate::{Error, Result, hex};

/// Token rows written per statement: one round trip each on PostgreSQL, not one per row, and
/// at most 512 KiB of hashes held at once.
pub(crate) const CHUNKS_PER_STATEMENT: usize = 1000;

/// Stores an open round: its row, then its `n` token hashes read from `tokens`.
pub(crate) fn create_round(
    tx: &mut dyn NodeTx,
    id: &[u8; 32],
    round: u64,
    spec_json: &[u8],
    tokens: &mut dyn std::io::Read,
    n: usize,
) -> Result<()> {
    tx.insert_round(id, round, spec_json)?;
    write_tokens(tx, id, tokens, n)
}

/// Moves a round stored by an older version (its token hashes kept apart from the token
/// table) to the token table, with its spec without the list.
pub(crate) fn move_tokens(
    tx: &mut dyn NodeTx,
    id: &[u8; 32],
    spec_json: &[u8],
    hashes: &mut dyn std::io::Read,
    n: usize,
) -> Result<()> {
    tx.delete_token_chunks(id)?;
    write_tokens(tx, id, hashes, n)?;
    tx.replace_spec(id, spec_json)
}

fn write_tokens(
    tx: &mut dyn NodeTx,
    id: &[u8; 32],
    tokens: &mut dyn std::io::Read,
    n: usize,
) -> Result<()> {
    let per_statement = HASHES_PER_CHUNK * CHUNKS_PER_STATEMENT;
    let mut buf = vec![0u8; 32 * n.min(per_statement)];
    let mut first = 0;
    while first < n {
        let count = (n - first).min(per_statement);
        let hashes = &mut buf[..32 * count];
        tokens.read_exact(hashes)?;
        let chunks: Vec<&[u8]> = hashes.chunks(32 * HASHES_PER_CHUNK).collect();
        tx.insert_token_chunks(id, (first / HASHES_PER_CHUNK) as u64, &chunks)?;
        first += count;
    }
    Ok(())
}

/// A batch of uploads (a group commit): each stored, the same again, a conflict, or refused
/// because its round is not open. Each round's state is read once per batch; its row lock
/// keeps it open until the commit.
pub(crate) fn commit_uploads(
    tx: &mut dyn NodeTx,
    batch: &[PendingShare<'_>],
) -> Result<Vec<UploadOutcome>> {
    let mut states: HashMap<[u8; 32], RoundState> = HashMap::new();
    let mut out = Vec::with_capacity(batch.len());
    for p in batch {
        let state = match states.get(p.round_id) {
            Some(s) => *s,
            None => {
                let s = tx.round_state(p.round_id, RowLock::Share)?;
                states.insert(*p.round_id, s);
                s
            }
        };
        out.push(if state != RoundState::Open {
            UploadOutcome::NotOpen(state)
        } else if tx.insert_share(p)? {
            UploadOutcome::Stored
        } else if tx.share_digest(p.round_id, p.client)? == p.digest {
            UploadOutcome::SameAgain
        } else {
            UploadOutcome::Conflict
        });
    }
    Ok(out)
}

/// Open → aborted, its shares deleted: `Ok(true)`, also if it was aborted already; `Ok(false)`
/// if it is closed or unknown.
pub(crate) fn abort(tx: &mut dyn NodeTx, id: &[u8; 32], reason: &str) -> Result<bool> {
    match tx.round_state(id, RowLock::Update)? {
        RoundState::Open => {
            tx.write_aborted(id, reason)?;
            tx.delete_shares(id)?;
            Ok(true)
        }
        RoundState::Aborted => Ok(true),
        RoundState::Closed | RoundState::Unknown => Ok(false),
    }
}

/// Open → closed with the agreed set; `Ok(false)` if the round is not open.
pub(crate) fn close(tx: &mut dyn NodeTx, id: &[u8; 32], agreed: &ClientSet) -> Result<bool> {
    if tx.round_state(id, RowLock::Update)? != RoundState::Open {
        return Ok(false);
    }
    tx.write_agreed(id, agreed, &agreed_sha256(agreed))?;
    Ok(true)
}

/// Stores the node sum of a closed round: `len` bytes from `sum`, which must have `sha256`
/// (else the spool file was damaged, and nothing is stored).
pub(crate) fn store_sum(
    tx: &mut dyn NodeTx,
    id: &[u8; 32],
    sum: &mut dyn std::io::Read,
    len: u64,
    sha256: &[u8; 32],
) -> Result<()> {
    refuse_unless_closed(tx, id)?;
    let mut checked = HashingReader::new(std::io::Read::take(sum, len));
    tx.write_sum(
        id,
        NewSum {
            bytes: &mut checked,
            len,
            sha256,
        },
    )?;
    let (copied, digest) = checked.finish();
    if copied != len {
        return Err(Error::Io(std::io::Error::other(format!(
            "node sum: {copied} bytes, not {len}"
        ))));
    }
    if digest != *sha256 {
        return Err(Error::Integrity(format!(
            "round {}: the node sum's spool file does not match the SHA-256 it was written with",
            hex::encode(id)
        )));
    }
    Ok(())
}

/// Records the shard attempts of shares stored without them.
pub(crate) fn set_shards(tx: &mut dyn NodeTx, id: &[u8; 32], pairs: &[(u64, u64)]) -> Result<()> {
    for &(client, shard) in pairs {
        tx.set_shard(id, client, shard)?;
    }
    Ok(())
}

fn refuse_unless_closed(tx: &mut dyn NodeTx, id: &[u8; 32]) -> Result<()> {
    if tx.round_state(id, RowLock::Update)? == RoundState::Closed {
        return Ok(());
    }
    Err(Error::InvalidSpec(format!(
        "round {} is not closed; its node sum is not stored",
        hex::encode(id)
    )))
}

/// Takes the lease of a closed round whose node sum is not stored, for `holder` until
/// `until_ms`: `Ok(true)` if no one held it, it expired by `now_ms` or `holder` has it already.
pub(crate) fn take_sum_lease(
    tx: &mut dyn LeaseTx,
    id: &[u8; 32],
    holder: &str,
    now_ms: u64,
    until_ms: u64,
) -> Result<bool> {
    if tx.round_state(id, RowLock::Share)? != RoundState::Closed || tx.sum_stored(id)? {
        return Ok(false);
    }
    tx.claim_sum_lease(id, holder, now_ms, until_ms)
}

/// Stores the node sum (`sum`, whose SHA-256 is `sha256`) of a closed round if `holder` still
/// has the round's lease: a replica whose lease expired (and was maybe taken over) stores
/// nothing. `Ok(false)` if it lost it.
pub(crate) fn store_sum_under_lease(
    tx: &mut dyn LeaseTx,
    id: &[u8; 32],
    holder: &str,
    sum: &[u8],
    sha256: &[u8; 32],
) -> Result<bool> {
    if tx.sum_lease_holder(id)?.as_deref() != Some(holder) {
        return Ok(false);
    }
    refuse_unless_closed(tx, id)?;
    tx.insert_sum_once(id, sha256, sum)?;
    Ok(true)
}
