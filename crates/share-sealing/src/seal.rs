//! Seal and open one share.

use std::sync::OnceLock;

use rand_core::{OsRng, TryRngCore};
use zeroize::Zeroizing;

use crate::context::HPKE_INFO;
use crate::rfc9180::{self, KSC_LEN, NH, NT};
use crate::{Error, NodePublicKey, NodeSecretKey, Result, SealContext};

/// Length of the encapsulated key at the front of a sealed share.
pub const ENC_LEN: usize = NH;
/// Length of the AEAD tag at its end.
pub const TAG_LEN: usize = NT;
/// Bytes a sealed share has beyond its plaintext.
pub const SEAL_OVERHEAD: usize = ENC_LEN + TAG_LEN;

/// Length of the sealed form of a `plaintext_len`-byte share.
pub fn sealed_len(plaintext_len: usize) -> usize {
    plaintext_len.saturating_add(SEAL_OVERHEAD)
}

/// The key schedule context of [`HPKE_INFO`] (it depends on `info` alone): computed once.
fn dpdist_key_schedule_context() -> &'static [u8; KSC_LEN] {
    static KSC: OnceLock<[u8; KSC_LEN]> = OnceLock::new();
    KSC.get_or_init(|| rfc9180::key_schedule_context(HPKE_INFO))
}

/// Seals `share` (opaque bytes, e.g. a wire-encoded share message) to `node_key`, bound to
/// `ctx`. The ephemeral key is derived from 32 bytes of the operating system's CSPRNG.
pub fn seal(node_key: &NodePublicKey, ctx: &SealContext, share: &[u8]) -> Result<Vec<u8>> {
    let mut ikm_e = Zeroizing::new([0u8; NH]);
    OsRng
        .try_fill_bytes(&mut ikm_e[..])
        .map_err(|_| Error::SealFailed)?;
    rfc9180::seal(
        &node_key.0,
        dpdist_key_schedule_context(),
        &ctx.aad(),
        share,
        &ikm_e[..],
    )
}

/// Opens a sealed share for the node holding `node_secret`, in the slot `ctx`. Any mismatch
/// (key, round, config hash, client, node, one flipped bit, a low-order `enc`) is
/// [`Error::OpenFailed`]; fewer bytes than [`SEAL_OVERHEAD`] is [`Error::Truncated`]. One X25519
/// multiplication (the DH): the node's public key is kept in `node_secret`.
pub fn open(node_secret: &NodeSecretKey, ctx: &SealContext, sealed: &[u8]) -> Result<Vec<u8>> {
    rfc9180::open(
        &node_secret.secret,
        &node_secret.public,
        dpdist_key_schedule_context(),
        &ctx.aad(),
        sealed,
    )
}

/// HPKE base-mode single-shot seal with explicit info/aad and ephemeral IKM (the known-answer
/// tests pass the RFC's `ikmE`).
#[cfg(test)]
pub(crate) fn seal_raw(
    node_key: &NodePublicKey,
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8],
) -> Result<Vec<u8>> {
    let ksc = rfc9180::key_schedule_context(info);
    rfc9180::seal(&node_key.0, &ksc, aad, plaintext, ikm_e)
}

/// HPKE base-mode single-shot open of `enc ‖ ct` with explicit info/aad.
#[cfg(test)]
pub(crate) fn open_raw(
    node_secret: &NodeSecretKey,
    info: &[u8],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>> {
    let ksc = rfc9180::key_schedule_context(info);
    rfc9180::open(&node_secret.secret, &node_secret.public, &ksc, aad, sealed)
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
