//! The default path: RFC 9180 base mode through the `hpke` crate (rust-hpke), suite
//! DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305, on x25519-dalek.
//!
//! Sealing and opening work in place on one buffer (`enc ‖ ciphertext ‖ tag`), so the
//! plaintext exists in a single allocation: on a failed open that buffer (held in
//! `Zeroizing`) is wiped before it is freed. The ephemeral key's 32 bytes of input keying
//! material come from the caller ([`crate::seal`] draws them from the OS CSPRNG and can report
//! a failure as [`Error::SealFailed`]; the known-answer tests pass the RFC's `ikmE`): `hpke`
//! derives the ephemeral key pair as `DeriveKeyPair(ikm)` of exactly these bytes, which is
//! what RFC 9180 §7.1.3 and its test vectors do.

use std::convert::Infallible;

use hpke::aead::{AeadTag, ChaCha20Poly1305};
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::rand_core::{TryCryptoRng, TryRng};
use hpke::{Deserializable, HpkeError, Kem as _, OpModeR, OpModeS, Serializable};
use zeroize::Zeroizing;

use crate::{Error, Result};

type Kem = X25519HkdfSha256;
type PrivateKey = <Kem as hpke::Kem>::PrivateKey;
type PublicKey = <Kem as hpke::Kem>::PublicKey;
type EncappedKey = <Kem as hpke::Kem>::EncappedKey;

/// Nenc of the KEM.
const NENC: usize = 32;
/// Nt of the AEAD.
const NT: usize = 16;

/// The serialized public key of a 32-byte secret (clamped, RFC 7748).
pub(crate) fn public_key(secret: &[u8; 32]) -> [u8; 32] {
    let sk = private_key(secret);
    let mut out = [0u8; 32];
    Kem::sk_to_pk(&sk).write_exact(&mut out);
    out
}

/// `hpke`'s private key of 32 bytes (it clamps them; its key type wipes itself on drop).
fn private_key(secret: &[u8; 32]) -> PrivateKey {
    PrivateKey::from_bytes(secret).expect("an X25519 secret key is any 32 bytes")
}

/// A random source that hands `hpke` the ephemeral key's input keying material drawn
/// beforehand. `hpke` asks for exactly `Nsk` = 32 bytes per seal; should it ever ask for more,
/// the rest comes from the OS CSPRNG.
struct DrawnIkm<'a> {
    ikm: &'a [u8],
}

impl TryRng for DrawnIkm<'_> {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> std::result::Result<u32, Infallible> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> std::result::Result<u64, Infallible> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Infallible> {
        let n = dst.len().min(self.ikm.len());
        dst[..n].copy_from_slice(&self.ikm[..n]);
        self.ikm = &self.ikm[n..];
        if n < dst.len() {
            use rand_core::{OsRng, RngCore, TryRngCore};
            OsRng.unwrap_err().fill_bytes(&mut dst[n..]);
        }
        Ok(())
    }
}

impl TryCryptoRng for DrawnIkm<'_> {}

/// Single-shot base-mode seal: `enc ‖ ciphertext ‖ tag`, the ephemeral key pair derived from
/// `ikm_e` (32 bytes).
pub(crate) fn seal(
    pk_r: &[u8; 32],
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8],
) -> Result<Vec<u8>> {
    let pk = PublicKey::from_bytes(pk_r).map_err(|_| Error::InvalidKey {
        which: "public",
        len: pk_r.len(),
    })?;
    let mut out = Zeroizing::new(vec![0u8; NENC + plaintext.len() + NT]);
    let body = NENC..NENC + plaintext.len();
    out[body.clone()].copy_from_slice(plaintext);
    let (enc, tag) =
        hpke::single_shot_seal_inout_detached_with_rng::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeS::Base,
            &pk,
            info,
            (&mut out[body.clone()]).into(),
            aad,
            &mut DrawnIkm { ikm: ikm_e },
        )
        .map_err(|e| match e {
            // An all-zero DH output: a low-order recipient key (RFC 9180 §7.1.4).
            HpkeError::EncapError => Error::InvalidKey {
                which: "public",
                len: NENC,
            },
            _ => Error::SealFailed,
        })?;
    enc.write_exact(&mut out[..NENC]);
    tag.write_exact(&mut out[body.end..]);
    // The sealed bytes are not secret: hand the buffer out without wiping it.
    Ok(std::mem::take(&mut *out))
}

/// Single-shot base-mode open of `enc ‖ ciphertext ‖ tag` by the holder of `sk_r`.
pub(crate) fn open(sk_r: &[u8; 32], info: &[u8], aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>> {
    let min = NENC + NT;
    if sealed.len() < min {
        return Err(Error::Truncated {
            len: sealed.len(),
            min,
        });
    }
    let (enc, rest) = sealed.split_at(NENC);
    let (ciphertext, tag) = rest.split_at(rest.len() - NT);
    let enc = EncappedKey::from_bytes(enc).map_err(|_| Error::OpenFailed)?;
    let tag = AeadTag::<ChaCha20Poly1305>::from_bytes(tag).map_err(|_| Error::OpenFailed)?;
    let sk = private_key(sk_r);
    // Decrypted in place; wiped if anything fails after this point.
    let mut plaintext = Zeroizing::new(ciphertext.to_vec());
    hpke::single_shot_open_inout_detached::<ChaCha20Poly1305, HkdfSha256, Kem>(
        &OpModeR::Base,
        &sk,
        &enc,
        info,
        plaintext.as_mut_slice().into(),
        aad,
        &tag,
    )
    .map_err(|_| Error::OpenFailed)?;
    Ok(std::mem::take(&mut *plaintext))
}
