//! RFC 9180 Appendix A.2.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305, base
//! mode — the suite this crate uses. Values copied from the RFC's test vectors (CFRG
//! `test-vectors.json`); the code under test never sees them except as inputs and expectations.

use rand_core::{CryptoRng, RngCore};

use crate::seal::{open_raw, seal_raw};
use crate::{NodeKeyPair, NodePublicKey};

const INFO: &str = "4f6465206f6e2061204772656369616e2055726e";
const IKM_E: &str = "909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b";
const PK_EM: &str = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a";
const PK_RM: &str = "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a";
const SK_RM: &str = "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb";
// Encryption sequence number 0 (single-shot seal uses the base nonce).
const PT: &str = "4265617574792069732074727574682c20747275746820626561757479";
const AAD0: &str = "436f756e742d30";
const CT0: &str =
    "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Hands out fixed bytes: the ephemeral key's IKM of the vector. Test-only; HPKE's X25519
/// key generation reads exactly 32 bytes of IKM and runs DeriveKeyPair on them.
struct FixedIkm(Vec<u8>, usize);

impl RngCore for FixedIkm {
    fn next_u32(&mut self) -> u32 {
        unreachable!("HPKE reads IKM with fill_bytes")
    }
    fn next_u64(&mut self) -> u64 {
        unreachable!("HPKE reads IKM with fill_bytes")
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let end = self.1 + dest.len();
        dest.copy_from_slice(&self.0[self.1..end]);
        self.1 = end;
    }
}
impl CryptoRng for FixedIkm {}

#[test]
fn recipient_key_matches_the_rfc() {
    let kp = NodeKeyPair::from_secret_bytes(&hex(SK_RM)).unwrap();
    assert_eq!(kp.public.to_bytes().to_vec(), hex(PK_RM));
}

#[test]
fn seal_reproduces_enc_and_ciphertext() {
    let pk = NodePublicKey::from_bytes(&hex(PK_RM)).unwrap();
    let mut rng = FixedIkm(hex(IKM_E), 0);
    let sealed = seal_raw(&pk, &hex(INFO), &hex(AAD0), &hex(PT), &mut rng).unwrap();
    assert_eq!(&sealed[..32], hex(PK_EM).as_slice(), "enc");
    assert_eq!(&sealed[32..], hex(CT0).as_slice(), "ciphertext");
}

#[test]
fn open_recovers_the_rfc_plaintext() {
    let kp = NodeKeyPair::from_secret_bytes(&hex(SK_RM)).unwrap();
    let mut sealed = hex(PK_EM);
    sealed.extend(hex(CT0));
    assert_eq!(
        open_raw(&kp.secret, &hex(INFO), &hex(AAD0), &sealed).unwrap(),
        hex(PT)
    );
    // Same bytes under the next sequence number's AAD must not open.
    assert!(open_raw(&kp.secret, &hex(INFO), b"Count-1", &sealed).is_err());
}
