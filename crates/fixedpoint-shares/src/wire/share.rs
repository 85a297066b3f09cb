//! Share messages on the wire, owned ([`ShareMessage`]) or borrowed from the bytes
//! ([`ShareView`], which a node adds into its sum without copying the payload).

use super::{
    Decode, Encode, HEADER_LEN, Header, KIND_FULL, KIND_SEED, Reader, SHARE_MAGIC, WireError,
    write_words,
};
use crate::ids::{ClientId, ConfigDigest, NodeIndex, RoundId, ShardId};
use crate::message::{ShareMessage, SharePayload};
use crate::prg::Seed;
use crate::round::RoundConfig;
use crate::{Error, Result};

/// The payload of a borrowed share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadView<'a> {
    /// A full vector held as words (an in-memory [`ShareMessage`]).
    Words(&'a [u64]),
    /// A full vector still in wire bytes: d little-endian words.
    Bytes(&'a [u8]),
    /// A seed.
    Seed(Seed),
}

impl PayloadView<'_> {
    /// "full" or "seed".
    pub fn kind(&self) -> &'static str {
        match self {
            PayloadView::Words(_) | PayloadView::Bytes(_) => "full",
            PayloadView::Seed(_) => "seed",
        }
    }

    /// Number of ring elements a full payload holds (`None` for a seed).
    pub(crate) fn full_len(&self) -> Option<usize> {
        match self {
            PayloadView::Words(w) => Some(w.len()),
            PayloadView::Bytes(b) => Some(b.len() / 8),
            PayloadView::Seed(_) => None,
        }
    }
}

/// A share message whose payload is borrowed (from a [`ShareMessage`] or from wire bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareView<'a> {
    /// The round.
    pub round: RoundId,
    /// The round's config digest.
    pub config: ConfigDigest,
    /// The sending client.
    pub client: ClientId,
    /// The sharding attempt.
    pub shard: ShardId,
    /// The receiving node.
    pub node: NodeIndex,
    /// Fractional bits of the encoding.
    pub frac_bits: u32,
    /// d.
    pub dim: usize,
    /// The share.
    pub payload: PayloadView<'a>,
}

impl ShareMessage {
    /// This message with its payload borrowed.
    pub fn view(&self) -> ShareView<'_> {
        ShareView {
            round: self.round,
            config: self.config,
            client: self.client,
            shard: self.shard,
            node: self.node,
            frac_bits: self.frac_bits,
            dim: self.dim,
            payload: match &self.payload {
                SharePayload::Full(words) => PayloadView::Words(words),
                SharePayload::Seed(seed) => PayloadView::Seed(seed.clone()),
            },
        }
    }
}

impl<'a> ShareView<'a> {
    /// Parses a share message checking only the format (no round to compare with): for routers
    /// and logs. Allocates nothing; the exact length is still required.
    ///
    /// # Errors
    /// [`Error::Wire`].
    pub fn inspect(bytes: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let header = Header::read(SHARE_MAGIC, &mut r)?;
        let view = read_body(header, &mut r)?;
        r.finish()?;
        Ok(view)
    }

    /// An owned copy (a full payload's words are copied out).
    pub fn to_message(&self) -> ShareMessage {
        let payload = match &self.payload {
            PayloadView::Words(words) => SharePayload::Full(words.to_vec()),
            PayloadView::Bytes(bytes) => {
                let (words, _) = bytes.as_chunks::<8>();
                SharePayload::Full(words.iter().map(|w| u64::from_le_bytes(*w)).collect())
            }
            PayloadView::Seed(seed) => SharePayload::Seed(seed.clone()),
        };
        ShareMessage {
            round: self.round,
            config: self.config,
            client: self.client,
            shard: self.shard,
            node: self.node,
            frac_bits: self.frac_bits,
            dim: self.dim,
            payload,
        }
    }
}

/// Client, shard and payload after a checked header.
fn read_body<'a>(
    header: Header,
    r: &mut Reader<'a>,
) -> std::result::Result<ShareView<'a>, WireError> {
    let client = ClientId(r.u64()?);
    let shard = ShardId(r.u64()?);
    let payload = if header.kind == KIND_FULL {
        // dim <= 2^32, so 8·dim cannot overflow a 64-bit usize; checked for 32-bit targets.
        let len = header
            .dim
            .checked_mul(8)
            .ok_or(WireError::BadDim(header.dim as u64))?;
        PayloadView::Bytes(r.take(len)?)
    } else {
        PayloadView::Seed(Seed::from_bytes(r.array()?))
    };
    Ok(ShareView {
        round: header.round,
        config: header.config,
        client,
        shard,
        node: header.node,
        frac_bits: header.frac_bits,
        dim: header.dim,
        payload,
    })
}

impl<'a> Decode<'a, RoundConfig> for ShareView<'a> {
    fn decode_from(config: &RoundConfig, r: &mut Reader<'a>) -> Result<Self> {
        let header = Header::read(SHARE_MAGIC, r)?;
        header.check_round(config)?;
        Ok(read_body(header, r)?)
    }
}

impl<'a> Decode<'a, RoundConfig> for ShareMessage {
    fn decode_from(config: &RoundConfig, r: &mut Reader<'a>) -> Result<Self> {
        Ok(ShareView::decode_from(config, r)?.to_message())
    }
}

impl Encode for ShareView<'_> {
    fn encoded_len(&self) -> usize {
        HEADER_LEN
            + 16
            + match &self.payload {
                PayloadView::Words(w) => 8 * w.len(),
                PayloadView::Bytes(b) => b.len(),
                PayloadView::Seed(_) => 16,
            }
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        if let Some(len) = self.payload.full_len() {
            let whole_words = !matches!(self.payload, PayloadView::Bytes(b) if b.len() % 8 != 0);
            if len != self.dim || !whole_words {
                return Err(Error::LengthMismatch {
                    what: "full payload",
                    expected: self.dim,
                    actual: len,
                });
            }
        }
        let header = Header {
            kind: match self.payload {
                PayloadView::Seed(_) => KIND_SEED,
                _ => KIND_FULL,
            },
            frac_bits: self.frac_bits,
            node: self.node,
            round: self.round,
            config: self.config,
            dim: self.dim,
        };
        let start = out.len();
        out.reserve(self.encoded_len());
        if let Err(e) = header.write(SHARE_MAGIC, out) {
            out.truncate(start);
            return Err(e);
        }
        out.extend_from_slice(&self.client.0.to_le_bytes());
        out.extend_from_slice(&self.shard.0.to_le_bytes());
        match &self.payload {
            PayloadView::Words(words) => write_words(words, out),
            PayloadView::Bytes(bytes) => out.extend_from_slice(bytes),
            PayloadView::Seed(seed) => out.extend_from_slice(seed.as_bytes()),
        }
        Ok(())
    }
}

impl Encode for ShareMessage {
    fn encoded_len(&self) -> usize {
        self.view().encoded_len()
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        self.view().encode_into(out)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{RoundParams, ShareMode};

    fn config(dim: usize) -> RoundConfig {
        RoundConfig::new(&RoundParams {
            round: RoundId(0x0102_0304_0506_0708),
            n_clients: 50,
            n_nodes: 4,
            max_dropped: 1,
            dim,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: None,
            frac_bits: Some(40),
        })
        .unwrap()
    }

    fn full(dim: usize) -> ShareMessage {
        ShareMessage {
            round: RoundId(0x0102_0304_0506_0708),
            config: config(dim).digest(),
            client: ClientId(42),
            shard: ShardId(0xa1a2_a3a4_a5a6_a7a8),
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
            config: config(1000).digest(),
            payload: SharePayload::Seed(Seed::from_bytes(*b"fedcba9876543210")),
            ..full(1)
        }
    }

    #[test]
    fn layout_is_as_documented() {
        let msg = seed();
        let bytes = msg.get_encoded().unwrap();
        assert_eq!(bytes.len(), HEADER_LEN + 16 + 16);
        assert_eq!(&bytes[..4], b"DPDS");
        assert_eq!(bytes[4..6], [2, 0]); // version 2, LE
        assert_eq!(bytes[6], 2); // seed
        assert_eq!(bytes[7], 40);
        assert_eq!(bytes[8..10], [3, 0]);
        assert_eq!(bytes[10..12], [0, 0]);
        assert_eq!(bytes[12..20], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(bytes[20..36], msg.config.0);
        assert_eq!(bytes[36..44], 1000u64.to_le_bytes());
        assert_eq!(bytes[44..52], [42, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            bytes[52..60],
            [0xa8, 0xa7, 0xa6, 0xa5, 0xa4, 0xa3, 0xa2, 0xa1]
        );
        assert_eq!(&bytes[60..], b"fedcba9876543210");
        let f = full(2).get_encoded().unwrap();
        assert_eq!(f[6], 1);
        assert_eq!(f[60..68], 0u64.to_le_bytes());
        assert_eq!(f[68..76], (u64::MAX / 7).to_le_bytes());
    }

    #[test]
    fn round_trips_owned_and_borrowed() {
        for (msg, c) in [
            (full(1), config(1)),
            (full(257), config(257)),
            (seed(), config(1000)),
        ] {
            let bytes = msg.get_encoded().unwrap();
            assert_eq!(bytes.len(), msg.encoded_len());
            assert_eq!(ShareMessage::get_decoded(&c, &bytes).unwrap(), msg);
            let view = ShareView::get_decoded(&c, &bytes).unwrap();
            assert_eq!(view.to_message(), msg);
            assert_eq!(view.get_encoded().unwrap(), bytes);
            assert_eq!(ShareView::inspect(&bytes).unwrap(), view);
        }
    }

    #[test]
    fn every_truncation_and_any_extra_byte_is_an_error() {
        for (msg, c) in [(full(5), config(5)), (seed(), config(1000))] {
            let bytes = msg.get_encoded().unwrap();
            for cut in 0..bytes.len() {
                for err in [
                    ShareMessage::get_decoded(&c, &bytes[..cut]).unwrap_err(),
                    ShareView::inspect(&bytes[..cut]).unwrap_err(),
                ] {
                    assert!(
                        matches!(
                            err,
                            Error::Wire(WireError::TooShort { .. } | WireError::Truncated { .. })
                        ),
                        "cut {cut}: {err}"
                    );
                }
            }
            let mut longer = bytes.clone();
            longer.push(0);
            for err in [
                ShareMessage::get_decoded(&c, &longer).unwrap_err(),
                ShareView::inspect(&longer).unwrap_err(),
            ] {
                assert!(matches!(err, Error::Wire(WireError::TrailingBytes { .. })));
            }
        }
    }

    #[test]
    fn each_bad_header_field_is_named() {
        let c = config(3);
        let good = full(3).get_encoded().unwrap();
        let with = |at: usize, patch: &[u8]| {
            let mut b = good.clone();
            b[at..at + patch.len()].copy_from_slice(patch);
            ShareMessage::get_decoded(&c, &b).unwrap_err()
        };
        assert_eq!(with(0, b"DPDX"), Error::Wire(WireError::BadMagic));
        assert_eq!(with(0, b"DPDN"), Error::Wire(WireError::BadMagic));
        assert_eq!(
            with(4, &[1, 0]),
            Error::Wire(WireError::UnsupportedVersion(1))
        );
        assert_eq!(with(6, &[0]), Error::Wire(WireError::UnknownKind(0)));
        assert_eq!(with(6, &[3]), Error::Wire(WireError::UnknownKind(3)));
        assert_eq!(with(7, &[63]), Error::Wire(WireError::BadFracBits(63)));
        assert_eq!(with(10, &[0, 1]), Error::Wire(WireError::ReservedNotZero));
        assert_eq!(
            with(36, &0u64.to_le_bytes()),
            Error::Wire(WireError::BadDim(0))
        );
        let huge = (1u64 << 32) + 1;
        assert_eq!(
            with(36, &huge.to_le_bytes()),
            Error::Wire(WireError::BadDim(huge))
        );
        // Another round, the same id under another config, other precision, other d: refused
        // before the payload is looked at (so a huge declared d allocates nothing).
        assert!(matches!(with(12, &[9]), Error::WrongRound { .. }));
        assert!(matches!(
            with(20, &[good[20] ^ 0xff]),
            Error::WrongConfig { .. }
        ));
        assert!(matches!(with(7, &[41]), Error::WrongFracBits { .. }));
        assert!(matches!(
            with(36, &(1u64 << 32).to_le_bytes()),
            Error::LengthMismatch { .. }
        ));
        // Inspection has no round: a huge d is only a truncation, nothing allocated.
        let mut huge_dim = good.clone();
        huge_dim[36..44].copy_from_slice(&(1u64 << 32).to_le_bytes());
        assert!(matches!(
            ShareView::inspect(&huge_dim),
            Err(Error::Wire(WireError::Truncated { .. }))
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
        assert!(matches!(m.get_encoded(), Err(Error::LengthMismatch { .. })));
        let mut m = seed();
        m.frac_bits = 63;
        assert!(m.get_encoded().is_err());
        m.frac_bits = 300;
        assert!(m.get_encoded().is_err());
        let mut m = seed();
        m.dim = 0;
        assert!(m.get_encoded().is_err());
        let mut out = vec![7u8];
        assert!(m.encode_into(&mut out).is_err());
        assert_eq!(out, [7]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = ShareMessage::get_decoded(&config(4), &bytes);
            let _ = ShareView::inspect(&bytes);
        }

        #[test]
        fn random_bytes_behind_a_valid_prefix_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..120),
            keep in 0usize..HEADER_LEN + 16,
        ) {
            let mut bytes = full(4).get_encoded().unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            let _ = ShareMessage::get_decoded(&config(4), &bytes);
            let _ = ShareView::inspect(&bytes);
        }

        #[test]
        fn single_byte_corruption_never_panics_and_never_misparses_silently(
            at in 0usize..(HEADER_LEN + 16 + 32),
            xor in 1u8..=255,
        ) {
            let msg = full(4);
            let mut bytes = msg.get_encoded().unwrap();
            bytes[at] ^= xor;
            // A corrupted payload word still parses (the format has no checksum; transports
            // authenticate), but it can never parse back to the original message.
            if let Ok(parsed) = ShareMessage::get_decoded(&config(4), &bytes) {
                prop_assert_ne!(parsed, msg);
            }
        }
    }
}
