//! The transaction trait: what one transaction on the node's store may read and write, as
//! typed rows. Each backend implements it with SQL and row mapping only; the rules that decide
//! what to read and write are written once above it ([`super::rules`]) and run inside
//! [`super::NodeStore::run_tx`], so a read and the change that depends on it share one
//! transaction on both backends.
//!
//! The upload path is hot (one transaction per group commit of many uploads): the rule reads
//! each round's state once per batch, and each upload costs one statement (the insert) unless
//! its client has a share already (then one more, the stored digest). On PostgreSQL those are
//! the statements, and round trips, the backend made before the rules moved here; on SQLite the
//! state read, one per round and batch, is new (the node's memory held the state before).
//!
//! One rule stays in SQL: which replica gets a node sum's lease ([`LeaseTx::claim_sum_lease`]:
//! taken if free, expired or already the caller's). Replicas race for it, and one statement
//! under the lease row's lock decides between them; a read then a write would need a lock on
//! a row that may not exist yet.
//!
//! Locks: on SQLite the transaction is IMMEDIATE (this process's one writer holds the file's
//! write lock from its start), so a state read stays true until the commit. On PostgreSQL
//! [`NodeTx::round_state`] locks the round's row ([`RowLock`]): an upload holds off a close
//! or abort of its round until it commits, and a close or abort waits for uploads under way.

use fixedpoint_shares::ClientSet;

use super::{PendingShare, RoundState};
use crate::Result;

/// How [`NodeTx::round_state`] locks the round's row until the transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowLock {
    /// Others may read it and lock it so too, not change it (uploads).
    Share,
    /// This transaction will change it (close, abort, the node sum).
    Update,
}

/// A node sum to store ([`NodeTx::write_sum`]).
pub(crate) struct NewSum<'a> {
    /// Where its bytes are read from (the caller checks them as they pass).
    pub bytes: &'a mut dyn std::io::Read,
    /// How many bytes it has.
    pub len: u64,
    /// The SHA-256 they should have, stored with them.
    pub sha256: &'a [u8; 32],
}

/// One transaction on the node's store.
pub(crate) trait NodeTx {
    /// The round's state, its row locked as `lock` says; [`RoundState::Unknown`] if no round
    /// has this id.
    fn round_state(&mut self, id: &[u8; 32], lock: RowLock) -> Result<RoundState>;

    /// Inserts a round, open, with its spec's JSON (without the token list).
    fn insert_round(&mut self, id: &[u8; 32], round: u64, spec_json: &[u8]) -> Result<()>;

    /// Replaces the round's spec, dropping a token list older versions kept beside it.
    fn replace_spec(&mut self, id: &[u8; 32], spec_json: &[u8]) -> Result<()>;

    /// Deletes the round's token rows.
    fn delete_token_chunks(&mut self, id: &[u8; 32]) -> Result<()>;

    /// Inserts token rows numbered `first`, `first + 1`, … (see [`super::layout`]).
    fn insert_token_chunks(&mut self, id: &[u8; 32], first: u64, chunks: &[&[u8]]) -> Result<()>;

    /// Inserts the share unless its (round, client) has one: whether it was inserted.
    fn insert_share(&mut self, share: &PendingShare<'_>) -> Result<bool>;

    /// The SHA-256 stored with client `client`'s share of the round.
    ///
    /// # Errors
    /// The store's error if no share of that client is stored.
    fn share_digest(&mut self, id: &[u8; 32], client: u64) -> Result<Vec<u8>>;

    /// Records the shard attempt of a stored share.
    fn set_shard(&mut self, id: &[u8; 32], client: u64, shard: u64) -> Result<()>;

    /// Deletes every share of the round.
    fn delete_shares(&mut self, id: &[u8; 32]) -> Result<()>;

    /// Marks the round aborted, for `reason`.
    fn write_aborted(&mut self, id: &[u8; 32], reason: &str) -> Result<()>;

    /// Marks the round closed with its agreed set ([`super::layout::agreed_words`]) and that
    /// set's SHA-256.
    fn write_agreed(&mut self, id: &[u8; 32], agreed: &ClientSet, sha256: &[u8; 32]) -> Result<()>;

    /// Stores the round's node sum, replacing one stored before.
    fn write_sum(&mut self, id: &[u8; 32], sum: NewSum<'_>) -> Result<()>;
}

/// What a transaction on a store shared by replicas may also read and write: the lease on a
/// closed round's node sum, which one replica holds while it computes and stores the sum.
pub(crate) trait LeaseTx: NodeTx {
    /// Whether the round's node sum is stored.
    fn sum_stored(&mut self, id: &[u8; 32]) -> Result<bool>;

    /// Gives the lease to `holder` until `until_ms` unless another holder has it past
    /// `now_ms`; whether `holder` has it now. One statement, so that replicas racing for it
    /// are decided by the lease row's lock.
    fn claim_sum_lease(
        &mut self,
        id: &[u8; 32],
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool>;

    /// The lease's holder, if a lease row exists, the row locked until the transaction ends.
    fn sum_lease_holder(&mut self, id: &[u8; 32]) -> Result<Option<String>>;

    /// Stores the round's node sum unless one is stored.
    fn insert_sum_once(&mut self, id: &[u8; 32], sha256: &[u8; 32], sum: &[u8]) -> Result<()>;
}
