//! Each path of this crate (its own RFC 9180 code and its wrapper of the `hpke` crate) against
//! the `hpke` crate (0.15, same suite) called directly, in both directions, and the inputs an
//! open must refuse on every path: low-order `enc` (all-zero DH, RFC 9180 §7.1.4), a swapped `enc`,
//! tampered associated data or ciphertext.

use hpke::aead::ChaCha20Poly1305;
use hpke::kdf::HkdfSha256;
use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as _, OpModeR, OpModeS, Serializable};
use rand_core::{OsRng, RngCore, TryRngCore};

use crate::seal::{Path, open_on, seal_on};

use crate::context::HPKE_INFO;
use crate::rfc9180::{extract_and_expand, kem_context, key_schedule, key_schedule_context};
use crate::{ENC_LEN, Error, NodeKeyPair, NodePublicKey, NodeSecretKey, SealContext, TAG_LEN};

type Kem = X25519HkdfSha256;

fn ctx(client: u64) -> SealContext {
    SealContext {
        round: 11,
        config_hash: [0x5a; 32],
        client,
        node: 2,
    }
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    OsRng.unwrap_err().fill_bytes(&mut out);
    out
}

const LENGTHS: [usize; 6] = [0, 1, 15, 64, 1000, 8064];

#[test]
fn the_hpke_crate_seals_and_this_crate_opens() {
    for path in Path::ALL {
        the_hpke_crate_seals_and_this_crate_opens_on(path);
    }
}

fn the_hpke_crate_seals_and_this_crate_opens_on(path: Path) {
    let open = |k: &NodeSecretKey, c: &SealContext, s: &[u8]| open_on(path, k, c, s);
    for (i, &len) in LENGTHS.iter().enumerate() {
        let (sk, pk) = Kem::gen_keypair();
        let secret = NodeSecretKey::from_bytes(&sk.to_bytes()).unwrap();
        assert_eq!(
            secret.public_key().to_bytes().to_vec(),
            pk.to_bytes().to_vec()
        );
        let share = random_bytes(len);
        let aad = ctx(i as u64).aad();
        let (enc, ct) = hpke::single_shot_seal::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeS::Base,
            &pk,
            HPKE_INFO,
            &share,
            &aad,
        )
        .unwrap();
        let mut sealed = enc.to_bytes().to_vec();
        sealed.extend_from_slice(&ct);
        assert_eq!(
            open(&secret, &ctx(i as u64), &sealed).unwrap(),
            share,
            "{len}"
        );
        assert_eq!(
            open(&secret, &ctx(i as u64 + 100), &sealed),
            Err(Error::OpenFailed)
        );
    }
}

#[test]
fn this_crate_seals_and_the_hpke_crate_opens() {
    for path in Path::ALL {
        this_crate_seals_and_the_hpke_crate_opens_on(path);
    }
}

fn this_crate_seals_and_the_hpke_crate_opens_on(path: Path) {
    let seal = |k: &NodePublicKey, c: &SealContext, s: &[u8]| seal_on(path, k, c, s);
    for (i, &len) in LENGTHS.iter().enumerate() {
        let kp = NodeKeyPair::generate();
        let sk = <Kem as hpke::Kem>::PrivateKey::from_bytes(&kp.secret.to_bytes()).unwrap();
        let share = random_bytes(len);
        let sealed = seal(&kp.public, &ctx(i as u64), &share).unwrap();
        let (enc, ct) = sealed.split_at(ENC_LEN);
        let enc = <Kem as hpke::Kem>::EncappedKey::from_bytes(enc).unwrap();
        let opened = hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
            &OpModeR::Base,
            &sk,
            &enc,
            HPKE_INFO,
            ct,
            &ctx(i as u64).aad(),
        )
        .unwrap();
        assert_eq!(opened, share, "{len}");
        assert!(
            hpke::single_shot_open::<ChaCha20Poly1305, HkdfSha256, Kem>(
                &OpModeR::Base,
                &sk,
                &enc,
                HPKE_INFO,
                ct,
                &ctx(i as u64 + 1).aad(),
            )
            .is_err()
        );
    }
}

/// u-coordinates whose X25519 output is all zero for every clamped scalar: those of the
/// eight-torsion points of Curve25519 (u = 0, 1 and two of order 8), u = −1 (a point of small
/// order on the quadratic twist), the non-canonical encodings u + p that fit in 255 bits, and
/// each of these with the top bit set (RFC 7748 ignores it).
fn low_order_encodings() -> Vec<[u8; 32]> {
    // p = 2^255 − 19, little-endian.
    let mut p = [0xffu8; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    let mut minus_one = p;
    minus_one[0] = 0xec;
    let mut canonical: Vec<[u8; 32]> = curve25519_dalek::constants::EIGHT_TORSION
        .iter()
        .map(|p| p.to_montgomery().to_bytes())
        .collect();
    canonical.push(minus_one);
    canonical.sort();
    canonical.dedup();
    let mut out = Vec::new();
    for u in canonical {
        out.push(u);
        // u + p, if it stays below 2^255 (true for u = 0 and u = 1 only).
        let mut sum = [0u8; 32];
        let mut carry = 0u16;
        for i in 0..32 {
            let s = u[i] as u16 + p[i] as u16 + carry;
            sum[i] = s as u8;
            carry = s >> 8;
        }
        if carry == 0 && sum[31] & 0x80 == 0 {
            out.push(sum);
        }
    }
    with_top_bits(out)
}

/// `us` followed by each of them with the top bit set (RFC 7748 ignores it).
fn with_top_bits(mut us: Vec<[u8; 32]>) -> Vec<[u8; 32]> {
    let topped: Vec<[u8; 32]> = us
        .iter()
        .map(|u| {
            let mut v = *u;
            v[31] |= 0x80;
            v
        })
        .collect();
    us.extend(topped);
    us
}

/// A sealed share built from a given DH output (the rest of the HPKE steps as the sender takes
/// them). With a low-order `enc` the DH output is all zero whatever the node's key, so an
/// attacker knows the whole key schedule: an open that accepted the zero DH would open this.
pub(crate) fn seal_with_dh(
    dh: &[u8; 32],
    enc: &[u8; 32],
    node: &NodePublicKey,
    aad: &[u8],
    pt: &[u8],
) -> Vec<u8> {
    use chacha20poly1305::aead::{AeadInPlace, KeyInit};
    let shared_secret = extract_and_expand(dh, &kem_context(enc, &node.0))
        .ok()
        .unwrap();
    let keys = key_schedule(&shared_secret, &key_schedule_context(HPKE_INFO))
        .ok()
        .unwrap();
    let cipher = chacha20poly1305::ChaCha20Poly1305::new(keys.key[..].into());
    let mut out = enc.to_vec();
    out.extend_from_slice(pt);
    let tag = cipher
        .encrypt_in_place_detached(keys.base_nonce[..].into(), aad, &mut out[32..])
        .unwrap();
    out.extend_from_slice(&tag);
    out
}

#[test]
fn low_order_enc_is_refused() {
    for path in Path::ALL {
        low_order_enc_is_refused_on(path);
    }
}

fn low_order_enc_is_refused_on(path: Path) {
    let open = |k: &NodeSecretKey, c: &SealContext, s: &[u8]| open_on(path, k, c, s);
    let kp = NodeKeyPair::generate();
    let encodings = low_order_encodings();
    // 5 distinct u (0, 1, the two of order 8, −1), + p for 0 and 1, each also with the top bit.
    assert_eq!(encodings.len(), 14);
    for enc in &encodings {
        // The premise: X25519 of this u is all zero, whatever the scalar.
        let scalar: [u8; 32] = random_bytes(32).try_into().unwrap();
        assert_eq!(x25519_dalek::x25519(scalar, *enc), [0u8; 32], "{enc:02x?}");
        let forged = seal_with_dh(&[0u8; 32], enc, &kp.public, &ctx(1).aad(), b"forged");
        assert_eq!(open(&kp.secret, &ctx(1), &forged), Err(Error::OpenFailed));
    }
    // The construction is sound: with an honest ephemeral key and its DH it opens, so the
    // refusals above come from the zero-DH check, not from a malformed share.
    let ephemeral: [u8; 32] = random_bytes(32).try_into().unwrap();
    let enc = x25519_dalek::x25519(ephemeral, x25519_dalek::X25519_BASEPOINT_BYTES);
    let dh = x25519_dalek::x25519(ephemeral, kp.public.to_bytes());
    let honest = seal_with_dh(&dh, &enc, &kp.public, &ctx(1).aad(), b"honest");
    assert_eq!(open(&kp.secret, &ctx(1), &honest).unwrap(), b"honest");
}

#[test]
fn sealing_to_a_low_order_key_is_an_invalid_key() {
    for (path, enc) in Path::ALL
        .into_iter()
        .flat_map(|p| low_order_encodings().into_iter().map(move |e| (p, e)))
    {
        let pk = NodePublicKey::from_bytes(&enc).unwrap();
        assert_eq!(
            seal_on(path, &pk, &ctx(1), b"share"),
            Err(Error::InvalidKey {
                which: "public",
                len: 32
            })
        );
    }
}

#[test]
fn a_swapped_enc_tampered_aad_or_ciphertext_do_not_open() {
    for path in Path::ALL {
        a_swapped_enc_tampered_aad_or_ciphertext_do_not_open_on(path);
    }
}

fn a_swapped_enc_tampered_aad_or_ciphertext_do_not_open_on(path: Path) {
    let seal = |k: &NodePublicKey, c: &SealContext, s: &[u8]| seal_on(path, k, c, s);
    let open = |k: &NodeSecretKey, c: &SealContext, s: &[u8]| open_on(path, k, c, s);
    let kp = NodeKeyPair::generate();
    let share = random_bytes(200);
    let sealed = seal(&kp.public, &ctx(3), &share).unwrap();
    assert_eq!(open(&kp.secret, &ctx(3), &sealed).unwrap(), share);

    // enc replaced by another valid public key (a point of prime order).
    let mut swapped = sealed.clone();
    swapped[..ENC_LEN].copy_from_slice(&NodeKeyPair::generate().public.to_bytes());
    assert_eq!(open(&kp.secret, &ctx(3), &swapped), Err(Error::OpenFailed));
    // enc of another seal to the same key, ciphertext of this one.
    let other = seal(&kp.public, &ctx(3), &share).unwrap();
    let mut mixed = other[..ENC_LEN].to_vec();
    mixed.extend_from_slice(&sealed[ENC_LEN..]);
    assert_eq!(open(&kp.secret, &ctx(3), &mixed), Err(Error::OpenFailed));
    // The top bit of enc is ignored by X25519 (RFC 7748 §5), but enc enters the KEM context
    // as sent, so a flipped top bit is another shared secret.
    let mut top = sealed.clone();
    top[ENC_LEN - 1] ^= 0x80;
    assert_eq!(open(&kp.secret, &ctx(3), &top), Err(Error::OpenFailed));
    // Ciphertext and tag: every byte, one bit.
    for i in ENC_LEN..sealed.len() {
        let mut bad = sealed.clone();
        bad[i] ^= 0x01;
        assert_eq!(
            open(&kp.secret, &ctx(3), &bad),
            Err(Error::OpenFailed),
            "{i}"
        );
    }
    // Ciphertext cut or extended by a byte (the tag then sits elsewhere).
    assert_eq!(
        open(&kp.secret, &ctx(3), &sealed[..sealed.len() - 1]),
        Err(Error::OpenFailed)
    );
    let mut longer = sealed.clone();
    longer.push(0);
    assert_eq!(open(&kp.secret, &ctx(3), &longer), Err(Error::OpenFailed));
    // enc and tag alone (empty ciphertext) of a non-empty share.
    assert_eq!(
        open(&kp.secret, &ctx(3), &sealed[..ENC_LEN + TAG_LEN]),
        Err(Error::OpenFailed)
    );
}
