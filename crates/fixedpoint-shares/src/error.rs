//! The crate's error type.

use crate::ids::{ClientId, ConfigDigest, NodeIndex, RoundId, ShardId};
use crate::wire::WireError;

/// Everything that can go wrong in `fixedpoint_shares`. An operation that returns an error has
/// changed nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A value to encode is NaN or ±infinity.
    #[error("value at index {index} is not finite ({value})")]
    NonFinite {
        /// Position in the input slice.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A value to encode exceeds the configured bound in absolute value.
    #[error("value at index {index} is {value}, outside the bound |x| <= {bound}")]
    OutOfBound {
        /// Position in the input slice.
        index: usize,
        /// The value.
        value: f64,
        /// The bound |x| <= bound the codec was sized for.
        bound: f64,
    },
    /// Two slices that must have equal lengths do not.
    #[error("{what} has length {actual}, expected {expected}")]
    LengthMismatch {
        /// Which slice.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A configuration parameter is outside its domain.
    #[error("invalid parameter {name} = {value}: must be {requirement}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value (integers converted to `f64`).
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// No number of fractional bits lets N clients' values and noise sum without wrapping.
    #[error(
        "fixed-point overflow: {n_clients} clients with |x| <= {bound} plus a noise tail of \
         {noise_tail} cannot be summed in a signed 64-bit ring at any precision"
    )]
    Capacity {
        /// N.
        n_clients: usize,
        /// The per-element bound.
        bound: f64,
        /// The noise tail (value units) the sum must also hold.
        noise_tail: f64,
    },
    /// A message or node sum belongs to another round.
    #[error("message is for round {got}, this party is in round {expected}")]
    WrongRound {
        /// This party's round.
        expected: RoundId,
        /// The round in the message.
        got: RoundId,
    },
    /// A message is addressed to another compute node.
    #[error("message is addressed to node {got}, this is node {expected}")]
    WrongNode {
        /// This node.
        expected: NodeIndex,
        /// The node in the message.
        got: NodeIndex,
    },
    /// A node index is not in 0..M.
    #[error("unknown node {node}: the round has nodes 0..{n_nodes}")]
    UnknownNode {
        /// The index.
        node: NodeIndex,
        /// M.
        n_nodes: u16,
    },
    /// A message was encoded with another number of fractional bits.
    #[error("message uses {got} fractional bits, the round uses {expected}")]
    WrongFracBits {
        /// The round's.
        expected: u32,
        /// The message's.
        got: u32,
    },
    /// A message has a full vector where a seed is required or vice versa.
    #[error("node {node} expects a {expected} share, got a {got} share")]
    WrongPayloadKind {
        /// The receiving node.
        node: NodeIndex,
        /// What the round's mode requires for that node.
        expected: &'static str,
        /// What arrived.
        got: &'static str,
    },
    /// A client id is not in 0..N.
    #[error("unknown client {client}: the round has clients 0..{n_clients}")]
    UnknownClient {
        /// The id.
        client: ClientId,
        /// N.
        n_clients: usize,
    },
    /// A second message from the same client for the same node and round.
    #[error("duplicate share from client {client} in this round")]
    DuplicateClient {
        /// The client.
        client: ClientId,
    },
    /// Retracting a client that was never absorbed (or was already retracted).
    #[error("client {client} has no absorbed share to retract")]
    NotAbsorbed {
        /// The client.
        client: ClientId,
    },
    /// The agreed client set contains a client whose share this node never received.
    #[error("agreed client set contains client {client}, whose share node {node} never received")]
    AgreedNotReceived {
        /// The client.
        client: ClientId,
        /// This node.
        node: NodeIndex,
    },
    /// A client outside the agreed set sent this node a full vector that has not been retracted
    /// (see `ComputeNode::retract`).
    #[error(
        "client {client} is outside the agreed set but its full share is still in the sum; \
         retract it first"
    )]
    NeedsRetraction {
        /// The client.
        client: ClientId,
    },
    /// More than T clients are missing: the noise would be too small, so nothing is released.
    #[error(
        "refusing to release: {missing} of {n_clients} clients are missing, more than the \
         tolerated T = {max_dropped} (the noise would be too small)"
    )]
    TooManyDropped {
        /// Clients missing from the agreed set.
        missing: usize,
        /// T.
        max_dropped: usize,
        /// N.
        n_clients: usize,
    },
    /// Node sums were computed over different client sets.
    #[error("node {node} summed a different client set than the other nodes")]
    ClientSetMismatch {
        /// The node whose set differs from the first node sum's.
        node: NodeIndex,
    },
    /// A second node sum from the same node.
    #[error("second sum from node {node}")]
    DuplicateNodeSum {
        /// The node.
        node: NodeIndex,
    },
    /// The aggregator has not received every node's sum.
    #[error("only {have} of {need} node sums received")]
    MissingNodeSums {
        /// Sums received.
        have: usize,
        /// M.
        need: usize,
    },
    /// A message or node sum carries this round's id but another configuration's digest: bytes
    /// of an earlier round that used the same id with other parameters.
    #[error(
        "bytes of round {round} under another configuration (digest {got}, this round's is \
         {expected}): the round id was reused with other parameters"
    )]
    WrongConfig {
        /// The round id both share.
        round: RoundId,
        /// This round's config digest.
        expected: ConfigDigest,
        /// The digest in the bytes.
        got: ConfigDigest,
    },
    /// A round id this party has already seen with another configuration.
    #[error(
        "round id {round} was already used with another configuration (digest {seen}, now \
         {got}); every round needs a fresh id"
    )]
    RoundIdReused {
        /// The round id.
        round: RoundId,
        /// The digest it was first seen with.
        seen: ConfigDigest,
        /// The digest offered now.
        got: ConfigDigest,
    },
    /// The agreed set names another shard attempt of a client than the one this node absorbed
    /// (the client sharded twice and the nodes hold different attempts).
    #[error(
        "client {client} sharded more than once: the agreed set names attempt {agreed}, node \
         {node} absorbed attempt {absorbed}"
    )]
    ShardMismatch {
        /// The client.
        client: ClientId,
        /// This node.
        node: NodeIndex,
        /// The attempt the agreed set names.
        agreed: ShardId,
        /// The attempt this node absorbed.
        absorbed: ShardId,
    },
    /// `retract` was given a share that is not the one absorbed for that client (another shard
    /// attempt, or another seed).
    #[error(
        "refusing to retract client {client}: the share's {what} differs from the one \
         absorbed"
    )]
    RetractMismatch {
        /// The client.
        client: ClientId,
        /// What differs: "shard id" or "seed".
        what: &'static str,
    },
    /// Node sums name different shard attempts of the same client: their masks do not cancel.
    #[error(
        "node {node} summed another shard attempt of client {client} than the other nodes \
         (the client sharded more than once); refusing to release"
    )]
    AttemptMismatch {
        /// The node whose attempt differs from the first node sum's.
        node: NodeIndex,
        /// The client.
        client: ClientId,
    },
    /// Malformed wire bytes.
    #[error("malformed wire bytes: {0}")]
    Wire(#[from] WireError),
    /// The noise layer failed (calibration, sampler, OS randomness).
    #[error("noise: {0}")]
    Noise(#[from] dp_noise::Error),
    /// The allocator refused a buffer whose size comes from the round's parameters (d, N, M).
    #[error(
        "cannot allocate {bytes} bytes for the {what}: the allocator refused (a smaller \
         dimension or client count, or more memory, is needed)"
    )]
    Allocation {
        /// What the buffer is for.
        what: &'static str,
        /// The bytes requested (saturated at `usize::MAX`).
        bytes: usize,
    },
    /// A [`crate::DcaTransport`] other than the in-process one could not complete the round (a
    /// node or the aggregator over the network); the message says what and where.
    #[error("DCA round transport: {0}")]
    Transport(String),
}
