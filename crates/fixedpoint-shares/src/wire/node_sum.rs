//! Node sums on the wire (layout in the parent module's docs).

use super::{
    Decode, Encode, HEADER_LEN, Header, KIND_NODE_SUM, NODE_SUM_MAGIC, Reader, WireError,
    read_words, write_words,
};
use crate::client_set::ClientSet;
use crate::ids::ShardId;
use crate::node::NodeSum;
use crate::round::{MAX_CLIENTS, RoundConfig};
use crate::shard_set::ShardSet;
use crate::{Error, Result};

impl Encode for NodeSum {
    fn encoded_len(&self) -> usize {
        HEADER_LEN
            + 8 * (1 + self.agreed.clients().words().len() + self.agreed.len() + self.sum.len())
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let n = self.agreed.universe();
        check_universe(n)?;
        let header = Header {
            kind: KIND_NODE_SUM,
            frac_bits: self.frac_bits,
            node: self.node,
            round: self.round,
            config: self.config,
            dim: self.sum.len(),
        };
        let start = out.len();
        out.reserve(self.encoded_len());
        if let Err(e) = header.write(NODE_SUM_MAGIC, out) {
            out.truncate(start);
            return Err(e);
        }
        out.extend_from_slice(&(n as u64).to_le_bytes());
        write_words(self.agreed.clients().words(), out);
        for (_, shard) in self.agreed.iter() {
            out.extend_from_slice(&shard.0.to_le_bytes());
        }
        write_words(&self.sum, out);
        Ok(())
    }
}

/// The number of registered clients a node sum can carry (its agreed set's universe).
fn check_universe(n: usize) -> Result<()> {
    if n == 0 || n > MAX_CLIENTS {
        return Err(Error::InvalidParameter {
            name: "n_clients",
            value: n as f64,
            requirement: "in 1..=2^32",
        });
    }
    Ok(())
}

/// Writes the bytes [`NodeSum`]'s encoding gives for node `node`'s sum `sum` over `agreed`,
/// with the shard ids taken one by one from `pairs` (every client of `agreed`, in increasing
/// order, nothing else), buffered, never all at once (`RunningSum::write_sum`).
pub(crate) fn write_node_sum_streamed<W: std::io::Write>(
    config: &RoundConfig,
    node: crate::ids::NodeIndex,
    agreed: &ClientSet,
    pairs: impl Iterator<Item = (crate::ids::ClientId, ShardId)>,
    sum: &[u64],
    out: W,
) -> Result<()> {
    use std::io::Write;
    let n = agreed.universe();
    check_universe(n)?;
    let header = Header {
        kind: KIND_NODE_SUM,
        frac_bits: config.codec().frac_bits(),
        node,
        round: config.round(),
        config: config.digest(),
        dim: sum.len(),
    };
    let mut head = Vec::with_capacity(HEADER_LEN + 8);
    header.write(NODE_SUM_MAGIC, &mut head)?;
    head.extend_from_slice(&(n as u64).to_le_bytes());
    let io = |e: std::io::Error| Error::Transport(format!("writing the node sum: {e}"));
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    out.write_all(&head).map_err(io)?;
    super::pair_set::write_members(agreed, pairs, &mut out)?;
    for w in sum {
        out.write_all(&w.to_le_bytes()).map_err(io)?;
    }
    out.flush().map_err(io)
}

impl<'a> Decode<'a, RoundConfig> for NodeSum {
    /// Sizes come from the round: N must be the round's, d the round's, and the bytes for the
    /// bitset, one shard id per set bit and the sum must be present before each is allocated.
    fn decode_from(config: &RoundConfig, r: &mut Reader<'a>) -> Result<Self> {
        let header = Header::read(NODE_SUM_MAGIC, r)?;
        header.check_round(config)?;
        let n = r.u64()?;
        if n == 0 || n > MAX_CLIENTS as u64 {
            return Err(WireError::BadUniverse(n).into());
        }
        if n != config.n_clients() as u64 {
            return Err(Error::LengthMismatch {
                what: "node sum client universe",
                expected: config.n_clients(),
                actual: usize::try_from(n).unwrap_or(usize::MAX),
            });
        }
        let n = config.n_clients();
        let words = read_words(r, n.div_ceil(64))?;
        let clients = ClientSet::from_words(n, words).ok_or(WireError::BadClientSet)?;
        let shard_ids = read_words(r, clients.len())?;
        let mut agreed = ShardSet::try_empty(n)?;
        for (client, shard) in clients.iter().zip(shard_ids) {
            // Ids come from a bitset over 0..N, each once; cannot fail.
            agreed.insert(client, ShardId(shard))?;
        }
        let sum = read_words(r, header.dim)?;
        Ok(NodeSum {
            round: header.round,
            config: header.config,
            node: header.node,
            frac_bits: header.frac_bits,
            agreed,
            sum,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::ids::{ClientId, NodeIndex, RoundId};
    use crate::{RoundParams, ShareMessage, ShareMode};

    fn config() -> RoundConfig {
        RoundConfig::new(&RoundParams {
            round: RoundId(9),
            n_clients: 70,
            n_nodes: 3,
            max_dropped: 66,
            dim: 3,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: None,
            frac_bits: Some(44),
        })
        .unwrap()
    }

    fn sample() -> NodeSum {
        let mut agreed = ShardSet::empty(70);
        for c in [0u64, 5, 64, 69] {
            agreed.insert(ClientId(c), ShardId(1000 + c)).unwrap();
        }
        NodeSum {
            round: RoundId(9),
            config: config().digest(),
            node: NodeIndex(2),
            frac_bits: 44,
            agreed,
            sum: vec![1, u64::MAX, 1 << 63],
        }
    }

    #[test]
    fn round_trips_with_the_documented_layout() {
        let s = sample();
        let bytes = s.get_encoded().unwrap();
        assert_eq!(bytes.len(), s.encoded_len());
        assert_eq!(bytes.len(), 44 + 8 * (1 + 2 + 4 + 3));
        assert_eq!(&bytes[..4], b"DPDN");
        assert_eq!(bytes[6], 3);
        assert_eq!(bytes[7], 44);
        assert_eq!(bytes[44..52], 70u64.to_le_bytes());
        assert_eq!(bytes[52..60], (1u64 | 1 << 5).to_le_bytes());
        assert_eq!(bytes[60..68], (1u64 | 1 << 5).to_le_bytes());
        assert_eq!(bytes[68..76], 1000u64.to_le_bytes());
        assert_eq!(bytes[92..100], 1069u64.to_le_bytes());
        assert_eq!(bytes[100..108], 1u64.to_le_bytes());
        assert_eq!(NodeSum::get_decoded(&config(), &bytes).unwrap(), s);
        // A share message is not a node sum and vice versa.
        assert!(matches!(
            ShareMessage::get_decoded(&config(), &bytes),
            Err(Error::Wire(WireError::BadMagic))
        ));
    }

    #[test]
    fn malformed_node_sums_are_errors() {
        let c = config();
        let good = sample().get_encoded().unwrap();
        for cut in 0..good.len() {
            assert!(NodeSum::get_decoded(&c, &good[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(matches!(
            NodeSum::get_decoded(&c, &longer),
            Err(Error::Wire(WireError::TrailingBytes { .. }))
        ));
        let with = |at: usize, patch: &[u8]| {
            let mut b = good.clone();
            b[at..at + patch.len()].copy_from_slice(patch);
            NodeSum::get_decoded(&c, &b).unwrap_err()
        };
        assert_eq!(
            with(4, &[9, 0]),
            Error::Wire(WireError::UnsupportedVersion(9))
        );
        assert_eq!(with(6, &[1]), Error::Wire(WireError::UnknownKind(1)));
        assert_eq!(with(10, &[1]), Error::Wire(WireError::ReservedNotZero));
        assert_eq!(with(7, &[70]), Error::Wire(WireError::BadFracBits(70)));
        assert!(matches!(with(12, &[8]), Error::WrongRound { .. }));
        assert!(matches!(
            with(20, &[good[20] ^ 1]),
            Error::WrongConfig { .. }
        ));
        assert_eq!(
            with(44, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadUniverse(0))
        );
        // N = 2^32 (2^26 set words) is a valid format but not this round's N: refused before
        // anything of that size is allocated.
        assert!(matches!(
            with(44, &(1u64 << 32).to_le_bytes()),
            Error::LengthMismatch { .. }
        ));
        assert!(matches!(
            with(36, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadDim(0))
        ));
        // Client 70 of 70 (bit 6 of the second word) does not exist.
        assert_eq!(
            with(60, &(1u64 << 6 | 1 << 5).to_le_bytes()),
            Error::Wire(WireError::BadClientSet)
        );
        // One more client in the bitset: its shard id eats a sum word, so the bytes run short.
        assert!(matches!(
            with(52, &(1u64 | 1 << 5 | 1 << 9).to_le_bytes()),
            Error::Wire(WireError::Truncated { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn random_bytes_never_panic(
            keep in 0usize..=HEADER_LEN + 8,
            tail in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let mut bytes = sample().get_encoded().unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            let _ = NodeSum::get_decoded(&config(), &bytes);
            let _ = NodeSum::get_decoded(&config(), &tail);
        }
    }
}
