//! The JSON bodies the node and the aggregator exchange: a round's status, the abort notice,
//! what the aggregator publishes. The agreed and received sets travel as pair sets of
//! `fixedpoint_shares::wire` ([`crate::MEDIA_PAIR_SET`]), not here.

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

/// The aggregator's notice that a round is aborted (`POST /rounds/{id}/abort`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbortRequest {
    /// Why (recorded by the node, shown in its errors).
    pub reason: String,
}

/// The agreed set as aggregators before the binary pair set recorded it (`{"agreed": [ids],
/// "shards": ["<16 hex>", …]}`), read only to resend a close recorded in an older store: the
/// pairs, checked against a round of `n_clients` clients.
///
/// # Errors
/// Not such a body; lists of different lengths, a malformed shard id, a client id ≥ N or
/// listed twice.
pub(crate) fn legacy_close_json(bytes: &[u8], n_clients: usize) -> Result<ShardSet> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Legacy {
        agreed: Vec<u64>,
        shards: Vec<String>,
    }
    let legacy: Legacy = serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidSpec(format!("recorded close request: {e}")))?;
    if legacy.agreed.len() != legacy.shards.len() {
        return Err(Error::InvalidSpec(format!(
            "{} client ids but {} shard ids",
            legacy.agreed.len(),
            legacy.shards.len()
        )));
    }
    let mut pairs = ShardSet::try_empty(n_clients)?;
    for (&c, s) in legacy.agreed.iter().zip(&legacy.shards) {
        let shard = hex::decode_array::<8>(s)
            .map(|b| ShardId(u64::from_be_bytes(b)))
            .ok_or_else(|| Error::InvalidSpec(format!("shard id {s:?}: need 16 hex digits")))?;
        pairs.insert(ClientId(c), shard)?;
    }
    Ok(pairs)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_recorded_as_json_reads_back_as_its_pairs() {
        let body = br#"{"agreed":[7,2],"shards":["00000000000000ff","0102030405060708"]}"#;
        let pairs = legacy_close_json(body, 8).unwrap();
        assert_eq!(
            pairs.iter().collect::<Vec<_>>(),
            [
                (ClientId(2), ShardId(0x0102_0304_0506_0708)),
                (ClientId(7), ShardId(0xff))
            ]
        );
        for bad in [
            &br#"{"agreed":[7],"shards":[]}"#[..],
            br#"{"agreed":[8],"shards":["00000000000000ff"]}"#,
            br#"{"agreed":[1,1],"shards":["00000000000000ff","00000000000000ff"]}"#,
            br#"{"agreed":[1],"shards":["ff"]}"#,
            b"DPDP",
        ] {
            assert!(legacy_close_json(bad, 8).is_err());
        }
    }
}
