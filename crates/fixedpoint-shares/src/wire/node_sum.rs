//! Wire format of a node sum (compute node → aggregator).
//!
//! ```text
//! offset size field
//!      0    4 magic "DPDN"
//!      4    2 version (u16) = 1
//!      6    1 reserved, must be 0
//!      7    1 frac bits (<= 62)
//!      8    2 node index (u16)
//!     10    2 reserved, must be 0
//!     12    8 round id (u64)
//!     20    8 N: clients of the round (u64, 1..=2^32)
//!     28    8 dim (u64, 1..=2^32)
//!     36      agreed client set: ceil(N/64) × u64, bit i of word w = client 64·w + i
//!             (bits at or beyond N must be 0), then the sum: dim × u64
//! ```

use super::{HEADER_LEN, Reader, VERSION, WireError};
use crate::client_set::ClientSet;
use crate::fixed_point::MAX_EXPLICIT_FRAC_BITS;
use crate::ids::{NodeIndex, RoundId};
use crate::node::NodeSum;
use crate::round::{MAX_CLIENTS, MAX_DIM};
use crate::{Error, Result};

/// First four bytes of a node sum.
pub const NODE_SUM_MAGIC: [u8; 4] = *b"DPDN";

/// Bytes [`encode_node_sum`] writes for `s`.
pub fn node_sum_encoded_len(s: &NodeSum) -> usize {
    HEADER_LEN + 8 * (s.clients.words().len() + s.sum.len())
}

/// Serialises a node sum.
///
/// # Errors
/// [`Error::InvalidParameter`] for a dim, N or frac bits the format cannot carry.
pub fn encode_node_sum(s: &NodeSum) -> Result<Vec<u8>> {
    let dim = s.sum.len();
    let n = s.clients.universe();
    if dim == 0 || dim > MAX_DIM {
        return Err(Error::InvalidParameter {
            name: "dim",
            value: dim as f64,
            requirement: "in 1..=2^32",
        });
    }
    if n == 0 || n > MAX_CLIENTS {
        return Err(Error::InvalidParameter {
            name: "n_clients",
            value: n as f64,
            requirement: "in 1..=2^32",
        });
    }
    let frac_bits = u8::try_from(s.frac_bits)
        .ok()
        .filter(|&b| u32::from(b) <= MAX_EXPLICIT_FRAC_BITS)
        .ok_or(Error::InvalidParameter {
            name: "frac_bits",
            value: f64::from(s.frac_bits),
            requirement: "<= 62",
        })?;
    let mut out = Vec::with_capacity(node_sum_encoded_len(s));
    out.extend_from_slice(&NODE_SUM_MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(0);
    out.push(frac_bits);
    out.extend_from_slice(&s.node.0.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&s.round.0.to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.extend_from_slice(&(dim as u64).to_le_bytes());
    for w in s.clients.words().iter().chain(&s.sum) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    Ok(out)
}

/// Parses untrusted bytes into a node sum. Never panics; allocates at most the input's size.
///
/// # Errors
/// [`Error::Wire`] naming what is wrong.
pub fn decode_node_sum(bytes: &[u8]) -> Result<NodeSum> {
    Ok(parse(bytes)?)
}

fn parse(bytes: &[u8]) -> std::result::Result<NodeSum, WireError> {
    let (header, body) = bytes
        .split_first_chunk::<HEADER_LEN>()
        .ok_or(WireError::TooShort { len: bytes.len() })?;
    let mut r = Reader(header);
    if r.take::<4>() != NODE_SUM_MAGIC {
        return Err(WireError::BadMagic);
    }
    let version = u16::from_le_bytes(r.take());
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let [reserved_a] = r.take();
    let [frac_bits] = r.take();
    let node = u16::from_le_bytes(r.take());
    let reserved_b = u16::from_le_bytes(r.take());
    let round = u64::from_le_bytes(r.take());
    let n = u64::from_le_bytes(r.take());
    let dim = u64::from_le_bytes(r.take());
    if reserved_a != 0 || reserved_b != 0 {
        return Err(WireError::ReservedNotZero);
    }
    if u32::from(frac_bits) > MAX_EXPLICIT_FRAC_BITS {
        return Err(WireError::BadFracBits(frac_bits));
    }
    let n_usize = usize::try_from(n)
        .ok()
        .filter(|&v| (1..=MAX_CLIENTS).contains(&v))
        .ok_or(WireError::BadUniverse(n))?;
    let dim_usize = usize::try_from(dim)
        .ok()
        .filter(|&v| (1..=MAX_DIM).contains(&v))
        .ok_or(WireError::BadDim(dim))?;
    let set_words = n_usize.div_ceil(64);
    let expected = HEADER_LEN + 8 * (set_words + dim_usize);
    if bytes.len() < expected {
        return Err(WireError::Truncated {
            expected,
            actual: bytes.len(),
        });
    }
    if bytes.len() > expected {
        return Err(WireError::TrailingBytes {
            expected,
            actual: bytes.len(),
        });
    }
    let (words, _) = body.as_chunks::<8>();
    let (set, sum) = words.split_at(set_words.min(words.len()));
    let clients = ClientSet::from_words(
        n_usize,
        set.iter().map(|w| u64::from_le_bytes(*w)).collect(),
    )
    .ok_or(WireError::BadClientSet)?;
    Ok(NodeSum {
        round: RoundId(round),
        node: NodeIndex(node),
        frac_bits: u32::from(frac_bits),
        clients,
        sum: sum.iter().map(|w| u64::from_le_bytes(*w)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::ids::ClientId;

    fn sample() -> NodeSum {
        let mut clients = ClientSet::empty(70);
        for c in [0u64, 5, 64, 69] {
            clients.insert(ClientId(c)).unwrap();
        }
        NodeSum {
            round: RoundId(9),
            node: NodeIndex(2),
            frac_bits: 44,
            clients,
            sum: vec![1, u64::MAX, 1 << 63],
        }
    }

    #[test]
    fn round_trips_with_the_documented_layout() {
        let s = sample();
        let bytes = encode_node_sum(&s).unwrap();
        assert_eq!(bytes.len(), node_sum_encoded_len(&s));
        assert_eq!(bytes.len(), 36 + 8 * (2 + 3));
        assert_eq!(&bytes[..4], b"DPDN");
        assert_eq!(bytes[7], 44);
        assert_eq!(bytes[20..28], 70u64.to_le_bytes());
        assert_eq!(bytes[36..44], (1u64 | 1 << 5).to_le_bytes());
        assert_eq!(bytes[44..52], (1u64 | 1 << 5).to_le_bytes());
        assert_eq!(decode_node_sum(&bytes).unwrap(), s);
        // A share message is not a node sum and vice versa.
        assert!(matches!(
            super::super::decode(&bytes),
            Err(Error::Wire(WireError::BadMagic))
        ));
    }

    #[test]
    fn malformed_node_sums_are_errors() {
        let good = encode_node_sum(&sample()).unwrap();
        for cut in 0..good.len() {
            assert!(decode_node_sum(&good[..cut]).is_err(), "cut {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(matches!(
            decode_node_sum(&longer),
            Err(Error::Wire(WireError::TrailingBytes { .. }))
        ));
        let with = |at: usize, patch: &[u8]| {
            let mut b = good.clone();
            b[at..at + patch.len()].copy_from_slice(patch);
            decode_node_sum(&b).unwrap_err()
        };
        assert_eq!(
            with(4, &[9, 0]),
            Error::Wire(WireError::UnsupportedVersion(9))
        );
        assert_eq!(with(6, &[1]), Error::Wire(WireError::ReservedNotZero));
        assert_eq!(with(7, &[70]), Error::Wire(WireError::BadFracBits(70)));
        assert_eq!(
            with(20, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadUniverse(0))
        );
        assert_eq!(
            with(28, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadDim(0))
        );
        // Client 70 of 70 (bit 6 of the second word) does not exist.
        assert_eq!(
            with(44, &(1u64 << 6).to_le_bytes()),
            Error::Wire(WireError::BadClientSet)
        );
        // N = 2^32 claims 2^26 set words: truncated, nothing of that size allocated.
        assert!(matches!(
            with(20, &(1u64 << 32).to_le_bytes()),
            Error::Wire(WireError::Truncated { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn random_bytes_never_panic(
            keep in 0usize..=36,
            tail in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let mut bytes = encode_node_sum(&sample()).unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            let _ = decode_node_sum(&bytes);
            let _ = decode_node_sum(&tail);
        }
    }
}
