//! Identifiers of rounds, clients, compute nodes, shard attempts and round configurations.

use std::fmt;

/// A summation round. Every message and node sum carries it; parties reject other rounds'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RoundId(pub u64);

/// A client of a round: ids are dense, `0..N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u64);

/// A compute node of a round, `0..M`. Node 0 (the paper's Compute 1) receives the balancing
/// share, which carries the client's value; nodes `1..M` receive masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeIndex(pub u16);

/// One sharding of one client's value: a random id from the client's CSPRNG that every one of
/// the M messages of that sharding carries. A client that shards twice (a retry) produces two
/// attempts with different ids; nodes report (client, shard id) pairs, so shares of different
/// attempts are never summed together (their masks would not cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShardId(pub u64);

/// A digest of a round's whole configuration (SHA-256, first 16 bytes; see
/// [`crate::RoundConfig::digest`]). Every message and node sum carries it, so bytes from an
/// earlier round that reused the same round id with other parameters are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigDigest(pub [u8; 16]);

impl fmt::Display for RoundId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for NodeIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Display for ConfigDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}
