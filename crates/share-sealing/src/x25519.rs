//! The X25519 function of RFC 7748 §5, computed through the Edwards form of Curve25519.
//!
//! x25519-dalek evaluates X25519 with curve25519-dalek's Montgomery ladder, which runs on the
//! serial 64-bit field code. curve25519-dalek's variable-base Edwards multiplication has an AVX2
//! backend (chosen at run time when the CPU has AVX2, serial otherwise). X25519 only needs the
//! u-coordinate of `[clamp(k)]P` for a point `P` with that u-coordinate, and the birational map
//! between Curve25519 and edwards25519 sends `[s]P` to `[s]` of the image of `P`; the two points
//! with a given u (±) have multiples with the same u. So: u → an Edwards point (either sign) →
//! `mul_clamped(k)` (the same clamping as X25519) → back to u. A u that is not the coordinate
//! of a point of the curve itself lies on its quadratic twist, where the Edwards map has no
//! point; those (never an honest `enc`: every public key is on the curve) go to the ladder. Which
//! path is taken depends on the public u alone, not on the scalar, and both are constant-time in
//! the scalar.

use curve25519_dalek::montgomery::MontgomeryPoint;

/// `X25519(k, u)` (RFC 7748 §5): `k` clamped, the top bit of `u` ignored, the result the
/// u-coordinate of `[k]P`, encoded little-endian (all zero for a low-order `P`).
pub(crate) fn x25519(k: &[u8; 32], u: &[u8; 32]) -> [u8; 32] {
    let point = MontgomeryPoint(*u);
    match point.to_edwards(0) {
        Some(edwards) => edwards.mul_clamped(*k).to_montgomery().to_bytes(),
        None => point.mul_clamped(*k).to_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::x25519;
    use crate::interop_tests::with_top_bits;
    use crate::rfc9180_vectors::hex32;
    use rand_core::{OsRng, RngCore, TryRngCore};

    fn random32() -> [u8; 32] {
        let mut out = [0u8; 32];
        OsRng.unwrap_err().fill_bytes(&mut out);
        out
    }

    /// The Montgomery ladder (x25519-dalek), the reference.
    fn ladder(k: [u8; 32], u: [u8; 32]) -> [u8; 32] {
        x25519_dalek::x25519(k, u)
    }

    #[test]
    fn rfc7748_section_5_2_vectors() {
        let cases = [
            (
                "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
                "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
                "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552",
            ),
            // u with its top bit set (ignored).
            (
                "4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
                "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
                "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957",
            ),
        ];
        for (k, u, out) in cases {
            assert_eq!(x25519(&hex32(k), &hex32(u)), hex32(out));
        }
    }

    #[test]
    fn rfc7748_section_5_2_iterated_1_and_1000() {
        let mut k = [0u8; 32];
        k[0] = 9;
        let mut u = k;
        for i in 1..=1000 {
            let next = x25519(&k, &u);
            u = k;
            k = next;
            if i == 1 {
                assert_eq!(
                    k,
                    hex32("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079")
                );
            }
        }
        assert_eq!(
            k,
            hex32("684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
        );
    }

    #[test]
    fn rfc7748_section_6_1_diffie_hellman() {
        let alice = hex32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let bob = hex32("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
        let alice_pub = hex32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        let bob_pub = hex32("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
        let shared = hex32("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
        let mut nine = [0u8; 32];
        nine[0] = 9;
        assert_eq!(x25519(&alice, &nine), alice_pub);
        assert_eq!(x25519(&bob, &nine), bob_pub);
        assert_eq!(x25519(&alice, &bob_pub), shared);
        assert_eq!(x25519(&bob, &alice_pub), shared);
    }

    /// Random scalars (unclamped bytes: the clamping is the function's) and random u: about
    /// half of random u lie on the twist (ladder path), half on the curve (Edwards path); both
    /// must equal the ladder, with and without u's top bit.
    #[test]
    fn random_inputs_equal_the_ladder() {
        let (mut curve, mut twist) = (0, 0);
        for _ in 0..3000 {
            let k = random32();
            let mut u = random32();
            if curve25519_dalek::montgomery::MontgomeryPoint(u)
                .to_edwards(0)
                .is_some()
            {
                curve += 1;
            } else {
                twist += 1;
            }
            assert_eq!(x25519(&k, &u), ladder(k, u), "k {k:02x?} u {u:02x?}");
            u[31] ^= 0x80;
            assert_eq!(x25519(&k, &u), ladder(k, u), "k {k:02x?} u {u:02x?}");
        }
        assert!(
            curve > 1000 && twist > 1000,
            "{curve} on the curve, {twist} on the twist"
        );
    }

    /// Points of the curve (public keys, as every honest `enc` is) and their images under
    /// scalars that differ only in the bits clamping sets or clears.
    #[test]
    fn public_keys_and_clamping_equal_the_ladder() {
        let mut nine = [0u8; 32];
        nine[0] = 9;
        for _ in 0..500 {
            let u = ladder(random32(), nine);
            let mut k = random32();
            let expected = ladder(k, u);
            assert_eq!(x25519(&k, &u), expected);
            // Clamping clears bits 0–2 and 255 and sets bit 254: these bytes give the same.
            k[0] ^= 0x07;
            k[31] ^= 0xc0;
            assert_eq!(x25519(&k, &u), expected);
            assert_eq!(ladder(k, u), expected);
        }
    }

    /// Edge values of u: 0, 1, −1, the non-canonical encodings p … 2^255 − 1, the order-8
    /// points, and each with the top bit.
    #[test]
    fn edge_u_equal_the_ladder() {
        let mut us: Vec<[u8; 32]> = Vec::new();
        for small in 0u8..=20 {
            let mut u = [0u8; 32];
            u[0] = small;
            us.push(u);
        }
        for offset in 0u8..=20 {
            // p − 1 − offset … and p + offset (p = 2^255 − 19).
            let mut below = [0xffu8; 32];
            below[31] = 0x7f;
            below[0] = 0xec - offset;
            us.push(below);
            if offset <= 18 {
                let mut above = [0xffu8; 32];
                above[31] = 0x7f;
                above[0] = 0xed + offset;
                us.push(above);
            }
        }
        for p in curve25519_dalek::constants::EIGHT_TORSION.iter() {
            us.push(p.to_montgomery().to_bytes());
        }
        for u in with_top_bits(us) {
            for _ in 0..4 {
                let k = random32();
                assert_eq!(x25519(&k, &u), ladder(k, u), "u {u:02x?}");
            }
        }
    }
}
