//! The wire format of both message kinds — share messages (client → node, [`ShareMessage`],
//! borrowed as [`ShareView`]) and node sums (node → aggregator, [`NodeSum`]) — as one codec in
//! the style of libprio: [`Encode`] and [`Decode`], where decoding takes the round it expects.
//! Versioned, little-endian, self-describing; any transport (TLS, a queue, MPI, files) can carry
//! it, confidentiality and authenticity between parties are the transport's job.
//!
//! Every message starts with the same header:
//!
//! ```text
//! offset size field
//!      0    4 magic: "DPDS" share message, "DPDN" node sum
//!      4    2 version (u16) = 2
//!      6    1 kind: 1 = full share, 2 = seed share, 3 = node sum
//!      7    1 frac bits (<= 62)
//!      8    2 node index (u16)
//!     10    2 reserved, must be 0
//!     12    8 round id (u64)
//!     20   16 config digest (`RoundConfig::digest`)
//!     36    8 dim (u64, 1..=2^32)
//!     44      body
//! ```
//!
//! Share message body: client id (u64), shard id (u64: the sharding attempt, the same in all M
//! messages of one `Client::shard`), then dim × u64 (full) or the 16-byte seed.
//!
//! Node sum body: N (u64, the round's client count), the agreed client set as ceil(N/64) × u64
//! (bit i of word w = client 64·w + i; bits at or beyond N must be 0), the shard id of each
//! agreed client in increasing client order (one u64 per set bit), then the sum: dim × u64.
//!
//! A set of (client, shard attempt) pairs on its own (a node's received set, the agreed set a
//! node is told to sum: [`ShardSet`](crate::ShardSet)) is the same bitset and shard ids behind
//! a 24-byte header of its own, magic "DPDP", version 1 (layout in [`PairSetReader`]'s module).
//! A round's client token list is 32 bytes per client behind a 16-byte header, magic "DPDT"
//! ([`TokenList`]); a round config travels as its JSON spec and then that list, behind a
//! 16-byte header, magic "DPDC" ([`read_round_spec`]).
//!
//! Decoding takes untrusted bytes and the [`RoundConfig`] the party is in. Every field is
//! checked; sizes come from the config (d, N) and are compared with the bytes before anything
//! is allocated, so nothing larger than the config allows — and nothing larger than the input —
//! is ever allocated; the length must match exactly (trailing bytes are an error); it never
//! panics. Bytes of another round, or of the same round id under another configuration, are
//! refused before the payload is looked at. [`ShareView::inspect`] reads a share message with
//! no config (for routers and logs): it borrows the payload and allocates nothing.

mod node_sum;
mod pair_set;
mod round_config;
mod share;
mod token_list;

pub(crate) use node_sum::write_node_sum_streamed;
pub use pair_set::{
    PAIR_SET_HEADER_LEN, PAIR_SET_MAGIC, PAIR_SET_VERSION, PairSetReader, write_pair_set_streamed,
};
pub use round_config::{
    MAX_ROUND_SPEC_LEN, ROUND_CONFIG_HEADER_LEN, ROUND_CONFIG_MAGIC, ROUND_CONFIG_VERSION,
    encode_round_config, read_round_spec, round_config_header,
};
pub use share::{PayloadView, ShareView};
pub use token_list::{
    TOKEN_HASH_LEN, TOKEN_LIST_HEADER_LEN, TOKEN_LIST_MAGIC, TOKEN_LIST_VERSION, TokenList,
    TokenListReader, token_list_header, write_token_list_streamed,
};

use crate::fixed_point::MAX_EXPLICIT_FRAC_BITS;
use crate::ids::{ConfigDigest, NodeIndex, RoundId};
use crate::round::{MAX_DIM, RoundConfig};
use crate::{Error, Result};

#[cfg(doc)]
use crate::{NodeSum, ShareMessage};

/// First four bytes of a share message.
pub const SHARE_MAGIC: [u8; 4] = *b"DPDS";
/// First four bytes of a node sum.
pub const NODE_SUM_MAGIC: [u8; 4] = *b"DPDN";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 2;
/// Length of the common header in bytes.
pub const HEADER_LEN: usize = 44;

const KIND_FULL: u8 = 1;
const KIND_SEED: u8 = 2;
const KIND_NODE_SUM: u8 = 3;

/// Why bytes are not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Shorter than the header.
    #[error("{len} bytes, shorter than the {}-byte header", HEADER_LEN)]
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The first four bytes are not the magic of the expected message kind.
    #[error("bad magic (not a dpdist message of this kind)")]
    BadMagic,
    /// A version this crate does not read.
    #[error("unsupported version {0} (this build reads {version})", version = VERSION)]
    UnsupportedVersion(u16),
    /// A kind byte not valid for this magic.
    #[error("unknown payload kind {0}")]
    UnknownKind(u8),
    /// More than 62 fractional bits.
    #[error("{0} fractional bits (at most 62)")]
    BadFracBits(u8),
    /// The reserved field is not zero.
    #[error("reserved header field is not zero")]
    ReservedNotZero,
    /// dim is 0 or above 2^32.
    #[error("dim {0} outside 1..=2^32")]
    BadDim(u64),
    /// The bytes end before the message does.
    #[error("truncated: {actual} bytes, the message needs {expected}")]
    Truncated {
        /// Total length the header (and round) imply, at least.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// A node sum's client count N is 0 or above 2^32.
    #[error("client count {0} outside 1..=2^32")]
    BadUniverse(u64),
    /// A node sum's client bitset has a bit at or beyond N.
    #[error("client bitset names a client at or beyond N")]
    BadClientSet,
    /// A pair set of a version this crate does not read.
    #[error("unsupported pair set version {0} (this build reads {version})", version = PAIR_SET_VERSION)]
    UnsupportedPairSetVersion(u16),
    /// A pair set's declared count differs from its bitset's.
    #[error("pair set header counts {count} clients, its bitset holds {members}")]
    BadCount {
        /// The header's count.
        count: u64,
        /// Set bits in the bitset.
        members: usize,
    },
    /// A token list of a version this crate does not read.
    #[error("unsupported token list version {0} (this build reads {version})", version = TOKEN_LIST_VERSION)]
    UnsupportedTokenListVersion(u16),
    /// A round config of a version this crate does not read.
    #[error("unsupported round config version {0} (this build reads {version})", version = ROUND_CONFIG_VERSION)]
    UnsupportedRoundConfigVersion(u16),
    /// A round config's spec length is 0 or above [`MAX_ROUND_SPEC_LEN`].
    #[error("round spec length {0} outside 1..={max}", max = MAX_ROUND_SPEC_LEN)]
    SpecTooLong(u64),
    /// Bytes after the message.
    #[error("trailing bytes: {actual} bytes, the message is {expected}")]
    TrailingBytes {
        /// Length of the message.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
}

/// Serialisation.
pub trait Encode {
    /// Bytes [`Encode::encode_into`] appends.
    fn encoded_len(&self) -> usize;

    /// Appends the serialisation to `out` (unchanged on error).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] / [`Error::LengthMismatch`] for a value the format cannot
    /// carry (dim, N or frac bits out of range, a payload not of length dim).
    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()>;

    /// The serialisation as a new vector.
    ///
    /// # Errors
    /// As [`Encode::encode_into`].
    fn get_encoded(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out)?;
        Ok(out)
    }
}

/// Deserialisation bounded by parameters `P` (the round the decoding party is in).
pub trait Decode<'a, P: ?Sized>: Sized {
    /// Reads one value off the front of `r`, checking it against `params`.
    ///
    /// # Errors
    /// [`Error::Wire`] for malformed bytes; [`Error::WrongRound`], [`Error::WrongConfig`],
    /// [`Error::WrongFracBits`], [`Error::LengthMismatch`] for well-formed bytes of another
    /// round.
    fn decode_from(params: &P, r: &mut Reader<'a>) -> Result<Self>;

    /// Decodes exactly `bytes`: anything after the value is [`WireError::TrailingBytes`].
    ///
    /// # Errors
    /// As [`Decode::decode_from`].
    fn get_decoded(params: &P, bytes: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let value = Self::decode_from(params, &mut r)?;
        r.finish()?;
        Ok(value)
    }
}

/// A cursor over untrusted bytes; every read is bounds-checked.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if fewer remain (nothing is consumed).
    pub fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(WireError::Truncated {
                expected: self.pos.saturating_add(n),
                actual: self.bytes.len(),
            })?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    ///
    /// # Errors
    /// As [`Reader::take`].
    pub fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// The next little-endian `u64`.
    ///
    /// # Errors
    /// As [`Reader::take`].
    pub fn u64(&mut self) -> std::result::Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Checks that nothing is left.
    ///
    /// # Errors
    /// [`WireError::TrailingBytes`] otherwise.
    pub fn finish(&self) -> std::result::Result<(), WireError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes {
                expected: self.pos,
                actual: self.bytes.len(),
            })
        }
    }
}

/// The header every message starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: u8,
    pub frac_bits: u32,
    pub node: NodeIndex,
    pub round: RoundId,
    pub config: ConfigDigest,
    pub dim: usize,
}

impl Header {
    /// Appends the header after checking every field fits the format.
    pub(crate) fn write(&self, magic: [u8; 4], out: &mut Vec<u8>) -> Result<()> {
        if self.dim == 0 || self.dim > MAX_DIM {
            return Err(Error::InvalidParameter {
                name: "dim",
                value: self.dim as f64,
                requirement: "in 1..=2^32",
            });
        }
        let frac_bits = u8::try_from(self.frac_bits)
            .ok()
            .filter(|&b| u32::from(b) <= MAX_EXPLICIT_FRAC_BITS)
            .ok_or(Error::InvalidParameter {
                name: "frac_bits",
                value: f64::from(self.frac_bits),
                requirement: "<= 62",
            })?;
        out.extend_from_slice(&magic);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.push(self.kind);
        out.push(frac_bits);
        out.extend_from_slice(&self.node.0.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&self.round.0.to_le_bytes());
        out.extend_from_slice(&self.config.0);
        out.extend_from_slice(&(self.dim as u64).to_le_bytes());
        Ok(())
    }

    /// Reads and checks the header's own fields (format limits only).
    pub(crate) fn read(magic: [u8; 4], r: &mut Reader<'_>) -> std::result::Result<Self, WireError> {
        if r.remaining() < HEADER_LEN {
            return Err(WireError::TooShort { len: r.remaining() });
        }
        if r.array::<4>()? != magic {
            return Err(WireError::BadMagic);
        }
        let version = u16::from_le_bytes(r.array()?);
        if version != VERSION {
            return Err(WireError::UnsupportedVersion(version));
        }
        let [kind, frac_bits] = r.array()?;
        let node = u16::from_le_bytes(r.array()?);
        let reserved = u16::from_le_bytes(r.array()?);
        let round = r.u64()?;
        let config = ConfigDigest(r.array()?);
        let dim = r.u64()?;
        let kind_ok = if magic == NODE_SUM_MAGIC {
            kind == KIND_NODE_SUM
        } else {
            kind == KIND_FULL || kind == KIND_SEED
        };
        if !kind_ok {
            return Err(WireError::UnknownKind(kind));
        }
        if u32::from(frac_bits) > MAX_EXPLICIT_FRAC_BITS {
            return Err(WireError::BadFracBits(frac_bits));
        }
        if reserved != 0 {
            return Err(WireError::ReservedNotZero);
        }
        let dim = usize::try_from(dim)
            .ok()
            .filter(|&d| (1..=MAX_DIM).contains(&d))
            .ok_or(WireError::BadDim(dim))?;
        Ok(Self {
            kind,
            frac_bits: u32::from(frac_bits),
            node: NodeIndex(node),
            round: RoundId(round),
            config,
            dim,
        })
    }

    /// Refuses a header of another round: other id, other configuration under the same id,
    /// other precision, other d. Runs before any payload is read.
    pub(crate) fn check_round(&self, config: &RoundConfig) -> Result<()> {
        if self.round != config.round() {
            return Err(Error::WrongRound {
                expected: config.round(),
                got: self.round,
            });
        }
        if self.config != config.digest() {
            return Err(Error::WrongConfig {
                round: self.round,
                expected: config.digest(),
                got: self.config,
            });
        }
        if self.frac_bits != config.codec().frac_bits() {
            return Err(Error::WrongFracBits {
                expected: config.codec().frac_bits(),
                got: self.frac_bits,
            });
        }
        if self.dim != config.dim() {
            return Err(Error::LengthMismatch {
                what: "share",
                expected: config.dim(),
                actual: self.dim,
            });
        }
        Ok(())
    }
}

/// `n` little-endian words off the front of `r`, into a vector allocated only after the bytes
/// are known to be there.
pub(crate) fn read_words(r: &mut Reader<'_>, n: usize) -> std::result::Result<Vec<u64>, WireError> {
    let bytes = r.take(n.checked_mul(8).ok_or(WireError::Truncated {
        expected: usize::MAX,
        actual: r.bytes.len(),
    })?)?;
    let (words, _) = bytes.as_chunks::<8>();
    Ok(words.iter().map(|w| u64::from_le_bytes(*w)).collect())
}

/// Appends words little-endian.
pub(crate) fn write_words(words: &[u64], out: &mut Vec<u8>) {
    for w in words {
        out.extend_from_slice(&w.to_le_bytes());
    }
}
