//! Seal and open one share.

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, OpModeR, OpModeS, Serializable};
use rand_core::{CryptoRng, OsRng, RngCore, TryRngCore};

use crate::context::HPKE_INFO;
use crate::{Error, NodePublicKey, NodeSecretKey, Result, SealContext};

type Kem = X25519HkdfSha256;

/// Length of the encapsulated key at the front of a sealed share.
pub const ENC_LEN: usize = 32;
/// Length of the AEAD tag at its end.
pub const TAG_LEN: usize = 16;
/// Bytes a sealed share has beyond its plaintext.
pub const SEAL_OVERHEAD: usize = ENC_LEN + TAG_LEN;

/// Length of the sealed form of a `plaintext_len`-byte share.
pub fn sealed_len(plaintext_len: usize) -> usize {
    plaintext_len.saturating_add(SEAL_OVERHEAD)
}

/// Seals `share` (opaque bytes, e.g. a wire-encoded share message) to `node_key`, bound to
/// `ctx`. The ephemeral key comes from the operating system's CSPRNG.
pub fn seal(node_key: &NodePublicKey, ctx: &SealContext, share: &[u8]) -> Result<Vec<u8>> {
    seal_raw(
        node_key,
        HPKE_INFO,
        &ctx.aad(),
        share,
        &mut OsRng.unwrap_err(),
    )
}

/// Opens a sealed share for the node holding `node_secret`, in the slot `ctx`. Any mismatch
/// (key, round, config hash, client, node, one flipped bit) is [`Error::OpenFailed`].
pub fn open(node_secret: &NodeSecretKey, ctx: &SealContext, sealed: &[u8]) -> Result<Vec<u8>> {
    open_raw(node_secret, HPKE_INFO, &ctx.aad(), sealed)
}

/// HPKE base-mode single-shot seal with explicit info/aad and ephemeral randomness (the
/// known-answer tests drive the ephemeral key through `rng`).
pub(crate) fn seal_raw<R: CryptoRng + RngCore>(
    node_key: &NodePublicKey,
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    rng: &mut R,
) -> Result<Vec<u8>> {
    let (enc, ct) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem, R>(
        &OpModeS::Base,
        &node_key.0,
        info,
        plaintext,
        aad,
        rng,
    )
    .map_err(|_| Error::SealFailed)?;
    let mut out = Vec::with_capacity(ENC_LEN + ct.len());
    out.extend_from_slice(&enc.to_bytes());
    out.extend_from_slice(&ct);
    Ok(out)
}

/// HPKE base-mode single-shot open of `enc ‖ ct`.
pub(crate) fn open_raw(
    node_secret: &NodeSecretKey,
    info: &[u8],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>> {
    if sealed.len() < SEAL_OVERHEAD {
        return Err(Error::Truncated {
            len: sealed.len(),
            min: SEAL_OVERHEAD,
        });
    }
    let (enc_bytes, ct) = sealed.split_at(ENC_LEN);
    let enc =
        <Kem as hpke::Kem>::EncappedKey::from_bytes(enc_bytes).map_err(|_| Error::OpenFailed)?;
    hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeR::Base,
        &node_secret.0,
        &enc,
        info,
        ct,
        aad,
    )
    .map_err(|_| Error::OpenFailed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NodeKeyPair;

    fn ctx() -> SealContext {
        SealContext {
            round: 7,
            config_hash: [3; 32],
            client: 42,
            node: 1,
        }
    }

    #[test]
    fn round_trip_and_overhead() {
        let kp = NodeKeyPair::generate();
        let share = b"opaque share bytes".to_vec();
        let sealed = seal(&kp.public, &ctx(), &share).unwrap();
        assert_eq!(sealed.len(), sealed_len(share.len()));
        assert_eq!(open(&kp.secret, &ctx(), &sealed).unwrap(), share);
    }

    #[test]
    fn two_seals_of_the_same_share_differ() {
        // Fresh ephemeral key each time: equal plaintexts are not linkable.
        let kp = NodeKeyPair::generate();
        let a = seal(&kp.public, &ctx(), b"x").unwrap();
        let b = seal(&kp.public, &ctx(), b"x").unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn every_context_field_is_bound() {
        let kp = NodeKeyPair::generate();
        let sealed = seal(&kp.public, &ctx(), b"share").unwrap();
        let mut others = Vec::new();
        others.push(SealContext { round: 8, ..ctx() });
        let mut h = [3u8; 32];
        h[31] ^= 1;
        others.push(SealContext {
            config_hash: h,
            ..ctx()
        });
        others.push(SealContext {
            client: 43,
            ..ctx()
        });
        others.push(SealContext { node: 0, ..ctx() });
        for other in others {
            assert_eq!(
                open(&kp.secret, &other, &sealed),
                Err(Error::OpenFailed),
                "{other:?}"
            );
        }
    }

    #[test]
    fn wrong_key_tampering_and_truncation_fail_cleanly() {
        let kp = NodeKeyPair::generate();
        let other = NodeKeyPair::generate();
        let sealed = seal(&kp.public, &ctx(), b"share").unwrap();
        assert_eq!(open(&other.secret, &ctx(), &sealed), Err(Error::OpenFailed));
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x80;
            assert!(
                open(&kp.secret, &ctx(), &bad).is_err(),
                "bit flip at {i} opened"
            );
        }
        for len in 0..sealed.len() {
            assert!(
                open(&kp.secret, &ctx(), &sealed[..len]).is_err(),
                "prefix {len} opened"
            );
        }
        assert_eq!(
            open(&kp.secret, &ctx(), &[0u8; 10]),
            Err(Error::Truncated {
                len: 10,
                min: SEAL_OVERHEAD
            })
        );
    }

    #[test]
    fn keys_round_trip_and_bad_lengths_are_refused() {
        let kp = NodeKeyPair::generate();
        let again = NodeKeyPair::from_secret_bytes(&kp.secret.to_bytes()).unwrap();
        assert_eq!(again.public, kp.public);
        assert_eq!(
            NodePublicKey::from_bytes(&kp.public.to_bytes()).unwrap(),
            kp.public
        );
        assert!(matches!(
            NodePublicKey::from_bytes(&[1u8; 31]),
            Err(Error::InvalidKey {
                which: "public",
                len: 31
            })
        ));
        assert!(NodeSecretKey::from_bytes(&[1u8; 33]).is_err());
    }
}
