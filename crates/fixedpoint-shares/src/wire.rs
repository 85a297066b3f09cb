//! The wire formats: share messages (client → node, below) and node sums (node → aggregator,
//! [`encode_node_sum`]). Both versioned, little-endian, self-describing.
//!
//! Share message:
//!
//! ```text
//! offset size field
//!      0    4 magic "DPDS"
//!      4    2 version (u16) = 1
//!      6    1 kind: 1 = full vector, 2 = seed
//!      7    1 frac bits (<= 62)
//!      8    2 node index (u16)
//!     10    2 reserved, must be 0
//!     12    8 round id (u64)
//!     20    8 client id (u64)
//!     28    8 dim (u64, <= 2^32)
//!     36      payload: dim × u64 (full) or 16 bytes (seed)
//! ```
//!
//! Any transport can carry it (TLS, a queue, MPI, files); confidentiality between client and
//! node is the transport's job. [`decode`] takes untrusted bytes: every field is checked, the
//! length must match exactly, and it never panics or allocates more than the input's size.

use std::fmt;

mod node_sum;
pub use node_sum::{NODE_SUM_MAGIC, decode_node_sum, encode_node_sum, node_sum_encoded_len};

use crate::fixed_point::MAX_EXPLICIT_FRAC_BITS;
use crate::ids::{ClientId, NodeIndex, RoundId};
use crate::message::{ShareMessage, SharePayload};
use crate::prg::Seed;
use crate::round::MAX_DIM;
use crate::{Error, Result};

/// First four bytes of every message.
pub const MAGIC: [u8; 4] = *b"DPDS";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Header length in bytes.
pub const HEADER_LEN: usize = 36;

const KIND_FULL: u8 = 1;
const KIND_SEED: u8 = 2;

/// Why bytes are not a valid share message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// Shorter than the header.
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The first four bytes are not [`MAGIC`].
    BadMagic,
    /// A version this crate does not read.
    UnsupportedVersion(u16),
    /// A kind byte other than 1 (full) or 2 (seed).
    UnknownKind(u8),
    /// More than 62 fractional bits.
    BadFracBits(u8),
    /// The reserved field is not zero.
    ReservedNotZero,
    /// dim is 0 or above 2^32.
    BadDim(u64),
    /// The payload is shorter than the header says.
    Truncated {
        /// Total length the header implies.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// A node sum's client count N is 0 or above 2^32.
    BadUniverse(u64),
    /// A node sum's client bitset has a bit at or beyond N.
    BadClientSet,
    /// Bytes after the payload.
    TrailingBytes {
        /// Total length the header implies.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::TooShort { len } => {
                write!(f, "{len} bytes, shorter than the {HEADER_LEN}-byte header")
            }
            WireError::BadMagic => write!(f, "bad magic (not a dpdist share message)"),
            WireError::UnsupportedVersion(v) => {
                write!(f, "unsupported version {v} (this build reads {VERSION})")
            }
            WireError::UnknownKind(k) => write!(f, "unknown payload kind {k}"),
            WireError::BadFracBits(b) => write!(f, "{b} fractional bits (at most 62)"),
            WireError::ReservedNotZero => write!(f, "reserved header field is not zero"),
            WireError::BadDim(d) => write!(f, "dim {d} outside 1..=2^32"),
            WireError::Truncated { expected, actual } => {
                write!(
                    f,
                    "truncated: {actual} bytes, the header implies {expected}"
                )
            }
            WireError::BadUniverse(n) => write!(f, "client count {n} outside 1..=2^32"),
            WireError::BadClientSet => write!(f, "client bitset names a client at or beyond N"),
            WireError::TrailingBytes { expected, actual } => write!(
                f,
                "trailing bytes: {actual} bytes, the header implies {expected}"
            ),
        }
    }
}

impl std::error::Error for WireError {}

/// Bytes [`encode`] writes for `msg`.
pub fn encoded_len(msg: &ShareMessage) -> usize {
    HEADER_LEN
        + match &msg.payload {
            SharePayload::Full(v) => v.len() * 8,
            SharePayload::Seed(_) => 16,
        }
}

/// Serialises `msg`.
///
/// # Errors
/// [`Error::LengthMismatch`] if a full payload's length is not `msg.dim`;
/// [`Error::InvalidParameter`] for dim or frac bits the format cannot carry.
pub fn encode(msg: &ShareMessage) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(encoded_len(msg));
    encode_into(msg, &mut out)?;
    Ok(out)
}

/// Appends the serialisation of `msg` to `out` (unchanged on error).
///
/// # Errors
/// As [`encode`].
pub fn encode_into(msg: &ShareMessage, out: &mut Vec<u8>) -> Result<()> {
    if msg.dim == 0 || msg.dim > MAX_DIM {
        return Err(Error::InvalidParameter {
            name: "dim",
            value: msg.dim as f64,
            requirement: "in 1..=2^32",
        });
    }
    let frac_bits = u8::try_from(msg.frac_bits)
        .ok()
        .filter(|&b| u32::from(b) <= MAX_EXPLICIT_FRAC_BITS)
        .ok_or(Error::InvalidParameter {
            name: "frac_bits",
            value: f64::from(msg.frac_bits),
            requirement: "<= 62",
        })?;
    let kind = match &msg.payload {
        SharePayload::Full(v) if v.len() != msg.dim => {
            return Err(Error::LengthMismatch {
                what: "full payload",
                expected: msg.dim,
                actual: v.len(),
            });
        }
        SharePayload::Full(_) => KIND_FULL,
        SharePayload::Seed(_) => KIND_SEED,
    };
    out.reserve(encoded_len(msg));
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.push(kind);
    out.push(frac_bits);
    out.extend_from_slice(&msg.node.0.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&msg.round.0.to_le_bytes());
    out.extend_from_slice(&msg.client.0.to_le_bytes());
    out.extend_from_slice(&(msg.dim as u64).to_le_bytes());
    match &msg.payload {
        SharePayload::Full(v) => {
            for w in v {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        SharePayload::Seed(seed) => out.extend_from_slice(seed.as_bytes()),
    }
    Ok(())
}

/// Parses untrusted bytes into a message. Never panics.
///
/// # Errors
/// [`Error::Wire`] naming what is wrong.
pub fn decode(bytes: &[u8]) -> Result<ShareMessage> {
    Ok(parse(bytes)?)
}

fn parse(bytes: &[u8]) -> std::result::Result<ShareMessage, WireError> {
    let (header, payload) = bytes
        .split_first_chunk::<HEADER_LEN>()
        .ok_or(WireError::TooShort { len: bytes.len() })?;
    let mut r = Reader(header);
    if r.take::<4>() != MAGIC {
        return Err(WireError::BadMagic);
    }
    let version = u16::from_le_bytes(r.take());
    if version != VERSION {
        return Err(WireError::UnsupportedVersion(version));
    }
    let [kind] = r.take();
    let [frac_bits] = r.take();
    let node = u16::from_le_bytes(r.take());
    let reserved = u16::from_le_bytes(r.take());
    let round = u64::from_le_bytes(r.take());
    let client = u64::from_le_bytes(r.take());
    let dim = u64::from_le_bytes(r.take());
    if kind != KIND_FULL && kind != KIND_SEED {
        return Err(WireError::UnknownKind(kind));
    }
    if u32::from(frac_bits) > MAX_EXPLICIT_FRAC_BITS {
        return Err(WireError::BadFracBits(frac_bits));
    }
    if reserved != 0 {
        return Err(WireError::ReservedNotZero);
    }
    let dim_usize = usize::try_from(dim)
        .ok()
        .filter(|&d| (1..=MAX_DIM).contains(&d))
        .ok_or(WireError::BadDim(dim))?;
    let payload_len = if kind == KIND_FULL { dim_usize * 8 } else { 16 };
    let expected = HEADER_LEN + payload_len;
    if payload.len() < payload_len {
        return Err(WireError::Truncated {
            expected,
            actual: bytes.len(),
        });
    }
    if payload.len() > payload_len {
        return Err(WireError::TrailingBytes {
            expected,
            actual: bytes.len(),
        });
    }
    let payload = if kind == KIND_FULL {
        let (words, _) = payload.as_chunks::<8>();
        SharePayload::Full(words.iter().map(|w| u64::from_le_bytes(*w)).collect())
    } else {
        let seed = <[u8; 16]>::try_from(payload).map_err(|_| WireError::Truncated {
            expected,
            actual: bytes.len(),
        })?;
        SharePayload::Seed(Seed::from_bytes(seed))
    };
    Ok(ShareMessage {
        round: RoundId(round),
        client: ClientId(client),
        node: NodeIndex(node),
        frac_bits: u32::from(frac_bits),
        dim: dim_usize,
        payload,
    })
}

/// Reads fixed-size fields off the front of a header (callers take exactly the header's length).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        match self.0.split_first_chunk::<N>() {
            Some((field, rest)) => {
                self.0 = rest;
                *field
            }
            None => [0; N],
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn full(dim: usize) -> ShareMessage {
        ShareMessage {
            round: RoundId(0x0102_0304_0506_0708),
            client: ClientId(42),
            node: NodeIndex(0),
            frac_bits: 40,
            dim,
            payload: SharePayload::Full(
                (0..dim as u64)
                    .map(|i| i.wrapping_mul(u64::MAX / 7))
                    .collect(),
            ),
        }
    }

    fn seed() -> ShareMessage {
        ShareMessage {
            node: NodeIndex(3),
            dim: 1000,
            payload: SharePayload::Seed(Seed::from_bytes(*b"fedcba9876543210")),
            ..full(1)
        }
    }

    #[test]
    fn layout_is_as_documented() {
        let bytes = encode(&seed()).unwrap();
        assert_eq!(bytes.len(), HEADER_LEN + 16);
        assert_eq!(&bytes[..4], b"DPDS");
        assert_eq!(bytes[4..6], [1, 0]); // version 1, LE
        assert_eq!(bytes[6], 2); // seed
        assert_eq!(bytes[7], 40);
        assert_eq!(bytes[8..10], [3, 0]);
        assert_eq!(bytes[10..12], [0, 0]);
        assert_eq!(bytes[12..20], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(bytes[20..28], [42, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[28..36], 1000u64.to_le_bytes());
        assert_eq!(&bytes[36..], b"fedcba9876543210");
        let f = encode(&full(2)).unwrap();
        assert_eq!(f[6], 1);
        assert_eq!(f[36..44], 0u64.to_le_bytes());
        assert_eq!(f[44..52], (u64::MAX / 7).to_le_bytes());
    }

    #[test]
    fn round_trips() {
        for msg in [full(1), full(257), seed()] {
            let bytes = encode(&msg).unwrap();
            assert_eq!(bytes.len(), encoded_len(&msg));
            assert_eq!(decode(&bytes).unwrap(), msg);
        }
    }

    #[test]
    fn every_truncation_and_any_extra_byte_is_an_error() {
        for msg in [full(5), seed()] {
            let bytes = encode(&msg).unwrap();
            for cut in 0..bytes.len() {
                let err = decode(&bytes[..cut]).unwrap_err();
                assert!(
                    matches!(
                        err,
                        Error::Wire(WireError::TooShort { .. } | WireError::Truncated { .. })
                    ),
                    "cut {cut}: {err}"
                );
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(matches!(
                decode(&longer),
                Err(Error::Wire(WireError::TrailingBytes { .. }))
            ));
        }
    }

    #[test]
    fn each_bad_header_field_is_named() {
        let good = encode(&full(3)).unwrap();
        let with = |at: usize, patch: &[u8]| {
            let mut b = good.clone();
            b[at..at + patch.len()].copy_from_slice(patch);
            decode(&b).unwrap_err()
        };
        assert_eq!(with(0, b"DPDX"), Error::Wire(WireError::BadMagic));
        assert_eq!(
            with(4, &[2, 0]),
            Error::Wire(WireError::UnsupportedVersion(2))
        );
        assert_eq!(with(6, &[0]), Error::Wire(WireError::UnknownKind(0)));
        assert_eq!(with(6, &[3]), Error::Wire(WireError::UnknownKind(3)));
        assert_eq!(with(7, &[63]), Error::Wire(WireError::BadFracBits(63)));
        assert_eq!(with(10, &[0, 1]), Error::Wire(WireError::ReservedNotZero));
        assert_eq!(
            with(28, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadDim(0))
        );
        let huge = (1u64 << 32) + 1;
        assert_eq!(
            with(28, &huge.to_le_bytes()),
            Error::Wire(WireError::BadDim(huge))
        );
        assert_eq!(
            with(28, &u64::MAX.to_le_bytes()),
            Error::Wire(WireError::BadDim(u64::MAX))
        );
        // A dim larger than the buffer holds: truncated, and nothing of that size allocated.
        assert!(matches!(
            with(28, &(1u64 << 32).to_le_bytes()),
            Error::Wire(WireError::Truncated { .. })
        ));
        // Kind says seed but a full payload follows: trailing bytes.
        assert!(matches!(
            with(6, &[2]),
            Error::Wire(WireError::TrailingBytes { .. })
        ));
    }

    #[test]
    fn inconsistent_messages_are_not_encoded() {
        let mut m = full(3);
        m.dim = 4;
        assert!(matches!(encode(&m), Err(Error::LengthMismatch { .. })));
        let mut m = seed();
        m.frac_bits = 63;
        assert!(encode(&m).is_err());
        m.frac_bits = 300;
        assert!(encode(&m).is_err());
        let mut m = seed();
        m.dim = 0;
        assert!(encode(&m).is_err());
        let mut out = vec![7u8];
        assert!(encode_into(&m, &mut out).is_err());
        assert_eq!(out, [7]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn random_bytes_behind_a_valid_prefix_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..120),
            keep in 0usize..36,
        ) {
            let mut bytes = encode(&full(4)).unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            let _ = decode(&bytes);
        }

        #[test]
        fn single_byte_corruption_never_panics_and_never_misparses_silently(
            at in 0usize..(HEADER_LEN + 32),
            xor in 1u8..=255,
        ) {
            let msg = full(4);
            let mut bytes = encode(&msg).unwrap();
            bytes[at] ^= xor;
            // A corrupted payload word still parses (the format has no checksum; transports
            // authenticate), but it can never parse back to the original message.
            if let Ok(parsed) = decode(&bytes) {
                prop_assert_ne!(parsed, msg);
            }
        }
    }
}
