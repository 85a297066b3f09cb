//! Bytes of a node sum (`application/dpdist-node-sum`): the node-sum wire format of
//! `fixedpoint_shares::wire` (versioned, little-endian, the agreed (client, shard) pairs and the
//! config digest included). Decoding is bounded by the round: N and d come from its config and
//! are checked against the bytes before anything is allocated.

use fixedpoint_shares::{Decode, Encode, NodeSum, RoundConfig};

use crate::{Error, Result};

/// Encodes a node sum.
pub fn encode(s: &NodeSum) -> Vec<u8> {
    // A node sum finalized by this round's node always fits the format (N, d and frac bits
    // were validated with the round).
    s.get_encoded().unwrap_or_default()
}

/// Decodes a node sum of `config`'s round.
pub fn decode(bytes: &[u8], config: &RoundConfig) -> Result<NodeSum> {
    NodeSum::get_decoded(config, bytes).map_err(|e| Error::Http(format!("malformed node sum: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixedpoint_shares::{
        ClientId, NodeIndex, RoundId, RoundParams, ShardId, ShardSet, ShareMode,
    };

    #[test]
    fn round_trip_and_truncations_fail() {
        let config = RoundConfig::new(&RoundParams {
            round: RoundId(3),
            n_clients: 5,
            n_nodes: 2,
            max_dropped: 1,
            dim: 2,
            bound: 1.0,
            mode: ShareMode::Full,
            noise_sigma_total: None,
            frac_bits: None,
        })
        .unwrap();
        let s = NodeSum {
            round: RoundId(3),
            config: config.digest(),
            node: NodeIndex(1),
            frac_bits: config.codec().frac_bits(),
            agreed: ShardSet::from_pairs(5, &[0, 2, 4].map(|c| (ClientId(c), ShardId(100 + c))))
                .unwrap(),
            sum: vec![u64::MAX, 7],
        };
        let bytes = encode(&s);
        assert_eq!(decode(&bytes, &config).unwrap(), s);
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len], &config).is_err());
        }
        let mut huge = bytes.clone();
        // N = 2^32 declared where the round has 5: refused before anything is allocated.
        huge[44..52].copy_from_slice(&(1u64 << 32).to_le_bytes());
        assert!(decode(&huge, &config).is_err());
    }
}
