//! The tests' reference: HPKE base mode (RFC 9180) for exactly one suite, written from the RFC
//! on RustCrypto parts: DHKEM(X25519, HKDF-SHA256) (KEM 0x0020, §4.1 and §7.1), HKDF-SHA256
//! (KDF 0x0001, §4 and §7.2), ChaCha20-Poly1305 (AEAD 0x0003, §5.2 and §7.3). Single-shot use
//! only: one message per encapsulation, at sequence number 0, so its nonce is `base_nonce`
//! itself (§5.2: `base_nonce XOR I2OSP(0, Nn)`).
//!
//! Compiled for the tests only. It was the crate's production path (faster than `hpke` 0.13:
//! it kept the node's public key instead of recomputing it in every open, and computed X25519
//! through the Edwards form); against `hpke` 0.15 it saved 19% of a seed node's CPU per upload,
//! under the 20% that own cryptographic code must earn here, so it was retired
//! (`docs/src/results/crates-vs-own.md`). As an independent implementation it cross-checks the
//! `hpke` crate both ways, is checked step by step against the RFC's vectors, and builds the
//! shares an attacker could forge from a known (all-zero) DH output.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use hkdf::{Hkdf, HkdfExtract};
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::{Zeroize, Zeroizing};

use crate::{Error, Result};

/// `suite_id` of the KEM's own labeled KDF calls (§4.1): `"KEM" ‖ I2OSP(kem_id, 2)`.
pub(crate) const KEM_SUITE_ID: &[u8; 5] = b"KEM\x00\x20";
/// `suite_id` of the key schedule (§5.1): `"HPKE" ‖ kem_id ‖ kdf_id ‖ aead_id`.
pub(crate) const HPKE_SUITE_ID: &[u8; 10] = b"HPKE\x00\x20\x00\x01\x00\x03";
/// The version label of every labeled KDF call (§4).
const VERSION_LABEL: &[u8; 7] = b"HPKE-v1";
/// `mode_base` (§5.1).
const MODE_BASE: u8 = 0x00;

/// Nh of HKDF-SHA256; also Nsecret, Nsk, Npk and Nenc of DHKEM(X25519, HKDF-SHA256).
pub(crate) const NH: usize = 32;
/// Nk of ChaCha20-Poly1305.
const NK: usize = 32;
/// Nn of ChaCha20-Poly1305.
const NN: usize = 12;
/// Nt of ChaCha20-Poly1305.
pub(crate) const NT: usize = 16;

/// Length of the key schedule context: `mode ‖ psk_id_hash ‖ info_hash` (§5.1).
pub(crate) const KSC_LEN: usize = 1 + 2 * NH;

/// What every failure inside the KDF calls becomes (they cannot fail for the fixed lengths
/// used here; the caller decides which error to report).
pub(crate) struct KdfLength;

/// `LabeledExtract(salt, label, ikm)` of §4: HKDF-Extract over `"HPKE-v1" ‖ suite_id ‖ label ‖
/// ikm`. Returns the PRK and the HKDF state keyed with it (for `LabeledExpand`).
pub(crate) fn labeled_extract(
    suite_id: &[u8],
    salt: &[u8],
    label: &[u8],
    ikm: &[u8],
) -> (Zeroizing<[u8; NH]>, Hkdf<Sha256>) {
    let mut extract = HkdfExtract::<Sha256>::new(Some(salt));
    extract.input_ikm(VERSION_LABEL);
    extract.input_ikm(suite_id);
    extract.input_ikm(label);
    extract.input_ikm(ikm);
    let (mut prk_array, hkdf) = extract.finalize();
    let mut prk = Zeroizing::new([0u8; NH]);
    prk.copy_from_slice(&prk_array);
    prk_array.as_mut_slice().zeroize();
    (prk, hkdf)
}

/// `LabeledExpand(prk, label, info, L)` of §4: HKDF-Expand with info `I2OSP(L, 2) ‖ "HPKE-v1" ‖
/// suite_id ‖ label ‖ info`, `L = out.len()`.
fn labeled_expand(
    prk: &Hkdf<Sha256>,
    suite_id: &[u8],
    label: &[u8],
    info: &[u8],
    out: &mut [u8],
) -> std::result::Result<(), KdfLength> {
    let len = u16::try_from(out.len()).map_err(|_| KdfLength)?;
    prk.expand_multi_info(
        &[&len.to_be_bytes(), VERSION_LABEL, suite_id, label, info],
        out,
    )
    .map_err(|_| KdfLength)
}

/// `DH(sk, pk)` of DHKEM(X25519): the X25519 function of RFC 7748 (scalar clamped, the
/// u-coordinate's top bit ignored), x25519-dalek's Montgomery ladder. Returns `None` for an
/// all-zero output (a low-order or otherwise non-contributory public value), which RFC 9180
/// §7.1.4 requires DH to reject.
fn dh(secret: &[u8; NH], their_public: &[u8; NH]) -> Option<Zeroizing<[u8; NH]>> {
    let shared = Zeroizing::new(x25519_dalek::x25519(*secret, *their_public));
    // Whether the output is zero is public (the share is refused), so no constant-time compare.
    (shared.iter().fold(0u8, |acc, b| acc | b) != 0).then_some(shared)
}

/// `ExtractAndExpand(dh, kem_context)` of §4.1.
pub(crate) fn extract_and_expand(
    dh: &[u8; NH],
    kem_context: &[u8; 2 * NH],
) -> std::result::Result<Zeroizing<[u8; NH]>, KdfLength> {
    let (_eae_prk, hkdf) = labeled_extract(KEM_SUITE_ID, b"", b"eae_prk", dh);
    let mut shared_secret = Zeroizing::new([0u8; NH]);
    labeled_expand(
        &hkdf,
        KEM_SUITE_ID,
        b"shared_secret",
        kem_context,
        &mut shared_secret[..],
    )?;
    Ok(shared_secret)
}

/// `enc ‖ pkRm`, the KEM context of base-mode `Encap`/`Decap` (§4.1).
pub(crate) fn kem_context(enc: &[u8; NH], pk_r: &[u8; NH]) -> [u8; 2 * NH] {
    let mut out = [0u8; 2 * NH];
    out[..NH].copy_from_slice(enc);
    out[NH..].copy_from_slice(pk_r);
    out
}

/// `DeriveKeyPair(ikm)` for X25519 (§7.1.3): the secret is `LabeledExpand(dkp_prk, "sk", "",
/// Nsk)` (clamped when used), the public key its X25519 multiple of the base point.
pub(crate) fn derive_key_pair(ikm: &[u8]) -> Result<(Zeroizing<[u8; NH]>, [u8; NH])> {
    let (_dkp_prk, hkdf) = labeled_extract(KEM_SUITE_ID, b"", b"dkp_prk", ikm);
    let mut sk = Zeroizing::new([0u8; NH]);
    labeled_expand(&hkdf, KEM_SUITE_ID, b"sk", b"", &mut sk[..]).map_err(|_| Error::SealFailed)?;
    // x25519-dalek's fixed-base table; its `StaticSecret` copy is wiped on drop.
    let public = PublicKey::from(&StaticSecret::from(*sk)).to_bytes();
    Ok((sk, public))
}

/// Base-mode `Encap(pkR)` (§4.1) with the ephemeral key pair derived from `ikm_e`: the shared
/// secret and `enc` (the ephemeral public key). A recipient key whose DH output is all zero (a
/// low-order point) is refused as an invalid public key.
pub(crate) fn encap(pk_r: &[u8; NH], ikm_e: &[u8]) -> Result<(Zeroizing<[u8; NH]>, [u8; NH])> {
    let (sk_e, enc) = derive_key_pair(ikm_e)?;
    let dh = dh(&sk_e, pk_r).ok_or(Error::InvalidKey {
        which: "public",
        len: NH,
    })?;
    let shared_secret =
        extract_and_expand(&dh, &kem_context(&enc, pk_r)).map_err(|_| Error::SealFailed)?;
    Ok((shared_secret, enc))
}

/// Base-mode `Decap(enc, skR)` (§4.1), with `pk_r` the serialized public key of `sk_r` (kept by
/// the caller instead of recomputed). Any `enc` is 32 bytes of a u-coordinate; one whose DH
/// output is all zero is [`Error::OpenFailed`].
pub(crate) fn decap(
    enc: &[u8; NH],
    sk_r: &[u8; NH],
    pk_r: &[u8; NH],
) -> Result<Zeroizing<[u8; NH]>> {
    let dh = dh(sk_r, enc).ok_or(Error::OpenFailed)?;
    extract_and_expand(&dh, &kem_context(enc, pk_r)).map_err(|_| Error::OpenFailed)
}

/// `key_schedule_context = mode ‖ psk_id_hash ‖ info_hash` of base mode (§5.1; `psk_id` is
/// empty). Depends on `info` only, so callers with a fixed `info` may compute it once.
pub(crate) fn key_schedule_context(info: &[u8]) -> [u8; KSC_LEN] {
    let (psk_id_hash, _) = labeled_extract(HPKE_SUITE_ID, b"", b"psk_id_hash", b"");
    let (info_hash, _) = labeled_extract(HPKE_SUITE_ID, b"", b"info_hash", info);
    let mut out = [0u8; KSC_LEN];
    out[0] = MODE_BASE;
    out[1..1 + NH].copy_from_slice(&psk_id_hash[..]);
    out[1 + NH..].copy_from_slice(&info_hash[..]);
    out
}

/// The AEAD key and base nonce of a context.
pub(crate) struct Keys {
    pub(crate) key: Zeroizing<[u8; NK]>,
    pub(crate) base_nonce: Zeroizing<[u8; NN]>,
}

/// `KeySchedule` of §5.1 for base mode: `secret = LabeledExtract(shared_secret, "secret", psk)`
/// with an empty psk, then `key` and `base_nonce` expanded from it with the context.
pub(crate) fn key_schedule(
    shared_secret: &[u8; NH],
    ksc: &[u8; KSC_LEN],
) -> std::result::Result<Keys, KdfLength> {
    let (_secret, hkdf) = labeled_extract(HPKE_SUITE_ID, shared_secret, b"secret", b"");
    let mut keys = Keys {
        key: Zeroizing::new([0u8; NK]),
        base_nonce: Zeroizing::new([0u8; NN]),
    };
    labeled_expand(&hkdf, HPKE_SUITE_ID, b"key", ksc, &mut keys.key[..])?;
    labeled_expand(
        &hkdf,
        HPKE_SUITE_ID,
        b"base_nonce",
        ksc,
        &mut keys.base_nonce[..],
    )?;
    Ok(keys)
}

/// Single-shot base-mode seal (§6.1 `SealBase`): `enc ‖ ciphertext ‖ tag`, the ephemeral key
/// pair derived from `ikm_e` (32 bytes from the OS CSPRNG in production, the RFC's `ikmE` in
/// the known-answer tests).
pub(crate) fn seal(
    pk_r: &[u8; NH],
    ksc: &[u8; KSC_LEN],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8],
) -> Result<Vec<u8>> {
    let (shared_secret, enc) = encap(pk_r, ikm_e)?;
    let keys = key_schedule(&shared_secret, ksc).map_err(|_| Error::SealFailed)?;
    let mut out = Vec::with_capacity(NH + plaintext.len() + NT);
    out.extend_from_slice(&enc);
    out.extend_from_slice(plaintext);
    let cipher = ChaCha20Poly1305::new(Key::from_slice(&keys.key[..]));
    let tag = cipher
        .encrypt_in_place_detached(Nonce::from_slice(&keys.base_nonce[..]), aad, &mut out[NH..])
        .map_err(|_| Error::SealFailed)?;
    out.extend_from_slice(&tag);
    Ok(out)
}

/// Single-shot base-mode open (§6.1 `OpenBase`) of `enc ‖ ciphertext ‖ tag` by the holder of
/// `sk_r`, whose serialized public key is `pk_r`.
pub(crate) fn open(
    sk_r: &[u8; NH],
    pk_r: &[u8; NH],
    ksc: &[u8; KSC_LEN],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>> {
    let min = NH + NT;
    if sealed.len() < min {
        return Err(Error::Truncated {
            len: sealed.len(),
            min,
        });
    }
    let (enc, rest) = sealed.split_at(NH);
    let enc: &[u8; NH] = enc.try_into().map_err(|_| Error::OpenFailed)?;
    let (ciphertext, tag) = rest.split_at(rest.len() - NT);
    let shared_secret = decap(enc, sk_r, pk_r)?;
    let keys = key_schedule(&shared_secret, ksc).map_err(|_| Error::OpenFailed)?;
    let cipher = ChaCha20Poly1305::new(Key::from_slice(&keys.key[..]));
    // Decrypted in place; wiped if anything fails after this point.
    let mut plaintext = Zeroizing::new(ciphertext.to_vec());
    cipher
        .decrypt_in_place_detached(
            Nonce::from_slice(&keys.base_nonce[..]),
            aad,
            &mut plaintext,
            Tag::from_slice(tag),
        )
        .map_err(|_| Error::OpenFailed)?;
    Ok(std::mem::take(&mut *plaintext))
}
