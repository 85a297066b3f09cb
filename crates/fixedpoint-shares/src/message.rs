//! What a client sends a compute node.

use zeroize::Zeroize;

use crate::ids::{ClientId, ConfigDigest, NodeIndex, RoundId, ShardId};
use crate::prg::Seed;

/// The share itself. A full vector is a mask (or the masked value) and is wiped when dropped;
/// a seed wipes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharePayload {
    /// A full vector of d ring elements (always for node 0; for every node in full mode).
    Full(Vec<u64>),
    /// A seed the node expands into its mask (nodes 1..M in seed mode).
    Seed(Seed),
}

impl SharePayload {
    /// "full" or "seed", for messages and the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            SharePayload::Full(_) => "full",
            SharePayload::Seed(_) => "seed",
        }
    }
}

impl Drop for SharePayload {
    fn drop(&mut self) {
        if let SharePayload::Full(words) = self {
            words.zeroize();
        }
    }
}

/// One client's share for one compute node in one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareMessage {
    /// The round.
    pub round: RoundId,
    /// The digest of the round's configuration (must match the receiving node's).
    pub config: ConfigDigest,
    /// The sending client.
    pub client: ClientId,
    /// The sharding attempt: the same in all M messages of one `Client::shard` call.
    pub shard: ShardId,
    /// The receiving node.
    pub node: NodeIndex,
    /// Fractional bits of the encoding (must match the round's).
    pub frac_bits: u32,
    /// d: the vector length (for a seed, the length of its expansion).
    pub dim: usize,
    /// The share.
    pub payload: SharePayload,
}
