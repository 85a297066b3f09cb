//! RFC 9180 Appendix A test vectors, base mode: the seal and open of A.2.1 on both paths (the
//! `hpke` crate and this crate's own code), and for the own code: A.2.1
//! (DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305 — the suite in use) step by
//! step, and the KEM of A.1.1 (same KEM and KDF, AES-128-GCM, which this crate does not
//! implement: only its key derivation, `Encap` and `Decap` are checked). Values copied from the
//! CFRG `test-vectors.json` of the RFC; the code under test never sees them except as inputs
//! and expectations.

use crate::rfc9180::{
    HPKE_SUITE_ID, decap, derive_key_pair, encap, key_schedule, key_schedule_context,
    labeled_extract,
};
use crate::seal::{Path, open_raw, seal_raw};
use crate::{Error, NodeKeyPair, NodePublicKey};

/// One base-mode vector: setup values and the encryption of sequence number 0.
struct Vector {
    info: &'static str,
    ikm_e: &'static str,
    sk_em: &'static str,
    pk_em: &'static str,
    ikm_r: &'static str,
    sk_rm: &'static str,
    pk_rm: &'static str,
    shared_secret: &'static str,
}

/// A.1.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode.
const A_1_1: Vector = Vector {
    info: "4f6465206f6e2061204772656369616e2055726e",
    ikm_e: "7268600d403fce431561aef583ee1613527cff655c1343f29812e66706df3234",
    sk_em: "52c4a758a802cd8b936eceea314432798d5baf2d7e9235dc084ab1b9cfa2f736",
    pk_em: "37fda3567bdbd628e88668c3c8d7e97d1d1253b6d4ea6d44c150f741f1bf4431",
    ikm_r: "6db9df30aa07dd42ee5e8181afdb977e538f5e1fec8a06223f33f7013e525037",
    sk_rm: "4612c550263fc8ad58375df3f557aac531d26850903e55a9f23f21d8534e8ac8",
    pk_rm: "3948cfe0ad1ddb695d780e59077195da6c56506b027329794ab02bca80815c4d",
    shared_secret: "fe0e18c9f024ce43799ae393c7e8fe8fce9d218875e8227b0187c04e7d2ea1fc",
};

/// A.2.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305, base mode.
const A_2_1: Vector = Vector {
    info: "4f6465206f6e2061204772656369616e2055726e",
    ikm_e: "909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b",
    sk_em: "f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600",
    pk_em: "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a",
    ikm_r: "1ac01f181fdf9f352797655161c58b75c656a6cc2716dcb66372da835542e1df",
    sk_rm: "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb",
    pk_rm: "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a",
    shared_secret: "0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7",
};
// A.2.1, the rest of the key schedule and the encryption of sequence number 0 (a single-shot
// seal uses the base nonce itself).
const A_2_1_KEY_SCHEDULE_CONTEXT: &str = "00431df6cd95e11ff49d7013563baf7f11588c75a6611ee2a4404a49306ae4cfc5b69c5718a60cc5876c358d3f7fc31ddb598503f67be58ea1e798c0bb19eb9796";
const A_2_1_SECRET: &str = "5b9cd775e64b437a2335cf499361b2e0d5e444d5cb41a8a53336d8fe402282c6";
const A_2_1_KEY: &str = "ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91";
const A_2_1_BASE_NONCE: &str = "5c4d98150661b848853b547f";
const PT: &str = "4265617574792069732074727574682c20747275746820626561757479";
const AAD0: &str = "436f756e742d30";
const A_2_1_CT0: &str =
    "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28";

pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn hex32(s: &str) -> [u8; 32] {
    hex(s).try_into().unwrap()
}

/// DeriveKeyPair, Encap and Decap of one vector.
fn check_kem(v: &Vector) {
    let (sk_e, pk_e) = derive_key_pair(&hex(v.ikm_e)).unwrap();
    assert_eq!(*sk_e, hex32(v.sk_em), "skEm");
    assert_eq!(pk_e, hex32(v.pk_em), "pkEm");
    let (sk_r, pk_r) = derive_key_pair(&hex(v.ikm_r)).unwrap();
    assert_eq!(*sk_r, hex32(v.sk_rm), "skRm");
    assert_eq!(pk_r, hex32(v.pk_rm), "pkRm");

    let (shared_secret, enc) = encap(&hex32(v.pk_rm), &hex(v.ikm_e)).unwrap();
    assert_eq!(enc, hex32(v.pk_em), "enc");
    assert_eq!(
        *shared_secret,
        hex32(v.shared_secret),
        "Encap shared_secret"
    );

    let kp = NodeKeyPair::from_secret_bytes(&hex(v.sk_rm)).unwrap();
    assert_eq!(kp.public.to_bytes(), hex32(v.pk_rm), "recipient key");
    let decapped = decap(&enc, &kp.secret.secret, &kp.secret.public).unwrap();
    assert_eq!(*decapped, hex32(v.shared_secret), "Decap shared_secret");
    // Decap with another pkRm in the KEM context gives another secret.
    let mut wrong_pk = kp.secret.public;
    wrong_pk[0] ^= 1;
    let other = decap(&enc, &kp.secret.secret, &wrong_pk).unwrap();
    assert_ne!(*other, hex32(v.shared_secret));
}

#[test]
fn a_1_1_kem_matches_the_rfc() {
    check_kem(&A_1_1);
}

#[test]
fn a_2_1_kem_matches_the_rfc() {
    check_kem(&A_2_1);
}

#[test]
fn a_2_1_key_schedule_matches_the_rfc() {
    let ksc = key_schedule_context(&hex(A_2_1.info));
    assert_eq!(
        ksc.to_vec(),
        hex(A_2_1_KEY_SCHEDULE_CONTEXT),
        "key_schedule_context"
    );
    let shared_secret = hex32(A_2_1.shared_secret);
    let (secret, _) = labeled_extract(HPKE_SUITE_ID, &shared_secret, b"secret", b"");
    assert_eq!(*secret, hex32(A_2_1_SECRET), "secret");
    let keys = key_schedule(&shared_secret, &ksc).ok().unwrap();
    assert_eq!(*keys.key, hex32(A_2_1_KEY), "key");
    assert_eq!(
        keys.base_nonce.to_vec(),
        hex(A_2_1_BASE_NONCE),
        "base_nonce"
    );
}

#[test]
fn a_2_1_seal_reproduces_enc_and_ciphertext() {
    let pk = NodePublicKey::from_bytes(&hex(A_2_1.pk_rm)).unwrap();
    for path in Path::ALL {
        let sealed = seal_raw(
            path,
            &pk,
            &hex(A_2_1.info),
            &hex(AAD0),
            &hex(PT),
            &hex(A_2_1.ikm_e),
        )
        .unwrap();
        assert_eq!(&sealed[..32], hex(A_2_1.pk_em).as_slice(), "enc {path:?}");
        assert_eq!(
            &sealed[32..],
            hex(A_2_1_CT0).as_slice(),
            "ciphertext {path:?}"
        );
    }
}

#[test]
fn a_2_1_open_recovers_the_rfc_plaintext() {
    let kp = NodeKeyPair::from_secret_bytes(&hex(A_2_1.sk_rm)).unwrap();
    let mut sealed = hex(A_2_1.pk_em);
    sealed.extend(hex(A_2_1_CT0));
    for path in Path::ALL {
        assert_eq!(
            open_raw(path, &kp.secret, &hex(A_2_1.info), &hex(AAD0), &sealed).unwrap(),
            hex(PT),
            "{path:?}"
        );
        // Same bytes under the next sequence number's AAD, or another info, must not open.
        assert_eq!(
            open_raw(path, &kp.secret, &hex(A_2_1.info), b"Count-1", &sealed),
            Err(Error::OpenFailed)
        );
        assert_eq!(
            open_raw(path, &kp.secret, b"another info", &hex(AAD0), &sealed),
            Err(Error::OpenFailed)
        );
    }
}
