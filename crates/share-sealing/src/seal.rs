//! Seal and open one share, through the `hpke` crate ([`crate::hpke_path`]). The tests run each
//! check on the test-only RFC 9180 reference too (`crate::rfc9180`): both produce and accept
//! the same bytes.

use rand_core::{OsRng, TryRngCore};
use zeroize::Zeroizing;

use crate::context::HPKE_INFO;
use crate::{Error, NodePublicKey, NodeSecretKey, Result, SealContext};

/// Length of the encapsulated key at the front of a sealed share (Nenc of DHKEM(X25519)).
pub const ENC_LEN: usize = 32;
/// Length of the AEAD tag at its end (Nt of ChaCha20-Poly1305).
pub const TAG_LEN: usize = 16;
/// Bytes a sealed share has beyond its plaintext.
pub const SEAL_OVERHEAD: usize = ENC_LEN + TAG_LEN;

/// Length of the sealed form of a `plaintext_len`-byte share.
pub fn sealed_len(plaintext_len: usize) -> usize {
    plaintext_len.saturating_add(SEAL_OVERHEAD)
}

/// Which implementation of RFC 9180 a test runs.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// The `hpke` crate: what `seal` and `open` run.
    Hpke,
    /// The tests' own RFC 9180 reference (`crate::rfc9180`).
    Own,
}

#[cfg(test)]
impl Path {
    /// The path `seal` and `open` take.
    pub(crate) const BUILT: Path = Path::Hpke;
    /// Every path (the tests check each).
    pub(crate) const ALL: [Path; 2] = [Path::Hpke, Path::Own];
}

/// The reference's key schedule context of [`HPKE_INFO`] (it depends on `info` alone): once.
#[cfg(test)]
fn dpdist_key_schedule_context() -> &'static [u8; crate::rfc9180::KSC_LEN] {
    static KSC: std::sync::OnceLock<[u8; crate::rfc9180::KSC_LEN]> = std::sync::OnceLock::new();
    KSC.get_or_init(|| crate::rfc9180::key_schedule_context(HPKE_INFO))
}

/// Seals `share` (opaque bytes, e.g. a wire-encoded share message) to `node_key`, bound to
/// `ctx`. The ephemeral key is derived from 32 bytes of the operating system's CSPRNG.
pub fn seal(node_key: &NodePublicKey, ctx: &SealContext, share: &[u8]) -> Result<Vec<u8>> {
    let ikm_e = ephemeral_ikm()?;
    crate::hpke_path::seal(&node_key.0, HPKE_INFO, &ctx.aad(), share, &ikm_e[..])
}

/// 32 bytes of the OS CSPRNG, from which the sender's ephemeral key is derived.
fn ephemeral_ikm() -> Result<Zeroizing<[u8; 32]>> {
    let mut ikm_e = Zeroizing::new([0u8; 32]);
    OsRng
        .try_fill_bytes(&mut ikm_e[..])
        .map_err(|_| Error::SealFailed)?;
    Ok(ikm_e)
}

/// Opens a sealed share for the node holding `node_secret`, in the slot `ctx`. Any mismatch
/// (key, round, config hash, client, node, one flipped bit, a low-order `enc`) is
/// [`Error::OpenFailed`]; fewer bytes than [`SEAL_OVERHEAD`] is [`Error::Truncated`]. The
/// plaintext is decrypted in place in the returned buffer, which is wiped if the open fails;
/// once returned it is the caller's to wipe (e.g. by moving it into `zeroize::Zeroizing`).
pub fn open(node_secret: &NodeSecretKey, ctx: &SealContext, sealed: &[u8]) -> Result<Vec<u8>> {
    crate::hpke_path::open(&node_secret.secret, HPKE_INFO, &ctx.aad(), sealed)
}

/// [`seal`] on a given path.
#[cfg(test)]
pub(crate) fn seal_on(
    path: Path,
    node_key: &NodePublicKey,
    ctx: &SealContext,
    share: &[u8],
) -> Result<Vec<u8>> {
    let ikm_e = ephemeral_ikm()?;
    match path {
        Path::Hpke => crate::hpke_path::seal(&node_key.0, HPKE_INFO, &ctx.aad(), share, &ikm_e[..]),
        Path::Own => crate::rfc9180::seal(
            &node_key.0,
            dpdist_key_schedule_context(),
            &ctx.aad(),
            share,
            &ikm_e[..],
        ),
    }
}

/// [`open`] on a given path.
#[cfg(test)]
pub(crate) fn open_on(
    path: Path,
    node_secret: &NodeSecretKey,
    ctx: &SealContext,
    sealed: &[u8],
) -> Result<Vec<u8>> {
    match path {
        Path::Hpke => crate::hpke_path::open(&node_secret.secret, HPKE_INFO, &ctx.aad(), sealed),
        Path::Own => crate::rfc9180::open(
            &node_secret.secret,
            &node_secret.public,
            dpdist_key_schedule_context(),
            &ctx.aad(),
            sealed,
        ),
    }
}

/// HPKE base-mode single-shot seal with explicit info/aad and ephemeral IKM (the known-answer
/// tests pass the RFC's `ikmE`).
#[cfg(test)]
pub(crate) fn seal_raw(
    path: Path,
    node_key: &NodePublicKey,
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8],
) -> Result<Vec<u8>> {
    match path {
        Path::Hpke => crate::hpke_path::seal(&node_key.0, info, aad, plaintext, ikm_e),
        Path::Own => {
            let ksc = crate::rfc9180::key_schedule_context(info);
            crate::rfc9180::seal(&node_key.0, &ksc, aad, plaintext, ikm_e)
        }
    }
}

/// HPKE base-mode single-shot open of `enc ‖ ct` with explicit info/aad.
#[cfg(test)]
pub(crate) fn open_raw(
    path: Path,
    node_secret: &NodeSecretKey,
    info: &[u8],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>> {
    match path {
        Path::Hpke => crate::hpke_path::open(&node_secret.secret, info, aad, sealed),
        Path::Own => {
            let ksc = crate::rfc9180::key_schedule_context(info);
            crate::rfc9180::open(&node_secret.secret, &node_secret.public, &ksc, aad, sealed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Path, SEAL_OVERHEAD, open_on, seal_on, sealed_len};
    use crate::{Error, NodeKeyPair, NodePublicKey, NodeSecretKey, Result, SealContext};

    // Each test runs once per path; `PATH` is set by `on_every_path`.
    thread_local! {
        static PATH: std::cell::Cell<Path> = const { std::cell::Cell::new(Path::BUILT) };
    }

    fn on_every_path(test: impl Fn()) {
        for path in Path::ALL {
            PATH.with(|p| p.set(path));
            test();
        }
    }

    fn seal(key: &NodePublicKey, ctx: &SealContext, share: &[u8]) -> Result<Vec<u8>> {
        seal_on(PATH.with(|p| p.get()), key, ctx, share)
    }

    fn open(key: &NodeSecretKey, ctx: &SealContext, sealed: &[u8]) -> Result<Vec<u8>> {
        open_on(PATH.with(|p| p.get()), key, ctx, sealed)
    }

    #[test]
    fn every_path_opens_what_every_path_sealed() {
        let kp = NodeKeyPair::generate();
        for len in [0usize, 1, 64, 1000] {
            let share: Vec<u8> = (0..len).map(|i| i as u8).collect();
            for a in Path::ALL {
                let sealed = seal_on(a, &kp.public, &ctx(), &share).unwrap();
                for b in Path::ALL {
                    assert_eq!(
                        open_on(b, &kp.secret, &ctx(), &sealed).unwrap(),
                        share,
                        "sealed on {a:?}, opened on {b:?}, {len} bytes"
                    );
                }
            }
        }
    }

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
        on_every_path(|| {
            let kp = NodeKeyPair::generate();
            let share = b"opaque share bytes".to_vec();
            let sealed = seal(&kp.public, &ctx(), &share).unwrap();
            assert_eq!(sealed.len(), sealed_len(share.len()));
            assert_eq!(open(&kp.secret, &ctx(), &sealed).unwrap(), share);
        });
    }

    #[test]
    fn two_seals_of_the_same_share_differ() {
        on_every_path(|| {
            // Fresh ephemeral key each time: equal plaintexts are not linkable.
            let kp = NodeKeyPair::generate();
            let a = seal(&kp.public, &ctx(), b"x").unwrap();
            let b = seal(&kp.public, &ctx(), b"x").unwrap();
            assert_ne!(a, b);
        });
    }

    #[test]
    fn every_context_field_is_bound() {
        on_every_path(|| {
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
        });
    }

    #[test]
    fn wrong_key_tampering_and_truncation_fail_cleanly() {
        on_every_path(|| {
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
        });
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
