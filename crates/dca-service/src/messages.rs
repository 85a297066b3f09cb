//! The JSON bodies the node and the aggregator exchange: a round's status, the close request
//! with the agreed set, the abort notice, the received set.

use fixedpoint_shares::{ClientId, ShardId, ShardSet};
use serde::{Deserialize, Serialize};

use crate::{Error, Result, hex};

/// A round's state as `GET /rounds/{id}` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundStatus {
    /// Hex config hash.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// "open", "closed", "aborted", or "damaged" (stored state failed its integrity check:
    /// the node refuses to finalize or serve the round).
    pub state: String,
    /// Clients whose share this node holds.
    pub received: usize,
    /// "none", "computing", "ready" or "failed".
    pub sum: String,
}

/// The agreed set the aggregator sends (`POST /rounds/{id}/close`): (client, shard attempt)
/// pairs, as parallel lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CloseRequest {
    /// Client ids, any order, no duplicates.
    pub agreed: Vec<u64>,
    /// The shard id of each agreed client's attempt (16 hex digits), in the same order.
    pub shards: Vec<String>,
}

impl CloseRequest {
    /// The request that sends `agreed`.
    pub fn new(agreed: &ShardSet) -> Self {
        let (agreed, shards) = pairs_to_wire(agreed);
        CloseRequest { agreed, shards }
    }
}

/// The aggregator's notice that a round is aborted (`POST /rounds/{id}/abort`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbortRequest {
    /// Why (recorded by the node, shown in its errors).
    pub reason: String,
}

/// A node's received set (`GET /rounds/{id}/received`): the (client, shard attempt) pairs it
/// holds, as parallel lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReceivedSet {
    /// Client ids, ascending.
    pub clients: Vec<u64>,
    /// The shard id of each client's stored share (16 hex digits), in the same order.
    pub shards: Vec<String>,
}

impl ReceivedSet {
    /// The pairs, checked against a round of `n_clients` clients.
    ///
    /// # Errors
    /// Lists of different lengths, a malformed shard id, a client id ≥ N or listed twice.
    pub fn pairs(&self, n_clients: usize) -> Result<ShardSet> {
        pairs_from_wire(n_clients, &self.clients, &self.shards)
    }
}

/// A set of (client, shard) pairs as the JSON bodies carry it: client ids and, in the same order,
/// shard ids as 16 hex digits (a JSON number cannot hold every u64 exactly).
fn pairs_to_wire(pairs: &ShardSet) -> (Vec<u64>, Vec<String>) {
    pairs
        .iter()
        .map(|(c, s)| (c.0, hex::encode(&s.0.to_be_bytes())))
        .unzip()
}

fn pairs_from_wire(n_clients: usize, clients: &[u64], shards: &[String]) -> Result<ShardSet> {
    if clients.len() != shards.len() {
        return Err(Error::InvalidSpec(format!(
            "{} client ids but {} shard ids",
            clients.len(),
            shards.len()
        )));
    }
    let pairs = clients
        .iter()
        .zip(shards)
        .map(|(&c, s)| {
            hex::decode_array::<8>(s)
                .map(|b| (ClientId(c), ShardId(u64::from_be_bytes(b))))
                .ok_or_else(|| Error::InvalidSpec(format!("shard id {s:?}: need 16 hex digits")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ShardSet::from_pairs(n_clients, &pairs)?)
}

/// What the aggregator publishes for a released round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublishedRelease {
    /// Hex round id.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// The decoded sum (value units).
    pub sum: Vec<f64>,
    /// The same, exactly, in grid units.
    pub sum_units: Vec<i64>,
    /// Fixed-point fractional bits.
    pub frac_bits: u32,
    /// The agreed client set.
    pub clients: Vec<u64>,
    /// σ of the noise in `sum` (0 without noise).
    pub noise_sigma_released: f64,
    /// Privacy spent by the aggregator's accountant after this round.
    pub spent_epsilon: f64,
    /// δ part of the same.
    pub spent_delta: f64,
    /// "NON-PRIVATE: exact sum, no noise" for a round without noise; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<String>,
}

/// The node list the analyst builds a round from (`GET /nodes`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeList {
    /// Base URLs, in node order (where clients upload).
    pub nodes: Vec<String>,
    /// Hex X25519 public keys, in node order (what the round's `node_keys` must list).
    pub node_keys: Vec<String>,
}
