//! A minimal fixed-width 512-bit unsigned integer for the exact rejection step of the discrete
//! Gaussian. Only what that step needs: products, sums, differences, comparison, a one-word
//! shift. The callers keep every value below 2^512 (the bounds are derived in
//! `gaussian.rs`), so the operations wrap silently instead of checking.

use std::cmp::Ordering;

const LIMBS: usize = 8;

/// An unsigned integer below 2^512, little-endian 64-bit limbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct U512([u64; LIMBS]);

impl U512 {
    pub(crate) fn from_u128(x: u128) -> U512 {
        let mut limbs = [0; LIMBS];
        limbs[0] = x as u64;
        limbs[1] = (x >> 64) as u64;
        U512(limbs)
    }

    /// The product, modulo 2^512.
    pub(crate) fn mul(&self, other: &U512) -> U512 {
        let mut out = [0u64; LIMBS];
        let other_len = other.len();
        for (i, &a) in self.0.iter().enumerate() {
            if a == 0 {
                continue;
            }
            let mut carry: u128 = 0;
            let end = LIMBS.min(i + other_len);
            for (o, &b) in out[i..end].iter_mut().zip(other.0.iter()) {
                let cur = u128::from(*o) + u128::from(a) * u128::from(b) + carry;
                *o = cur as u64;
                carry = cur >> 64;
            }
            if end < LIMBS {
                out[end] = carry as u64;
            }
        }
        U512(out)
    }

    /// Number of limbs up to the highest non-zero one.
    fn len(&self) -> usize {
        self.0.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1)
    }

    /// The product with one word, modulo 2^512.
    pub(crate) fn mul_u64(&self, w: u64) -> U512 {
        let mut out = [0u64; LIMBS];
        let mut carry: u128 = 0;
        for (o, &a) in out.iter_mut().zip(self.0.iter()) {
            let cur = u128::from(a) * u128::from(w) + carry;
            *o = cur as u64;
            carry = cur >> 64;
        }
        U512(out)
    }

    /// The sum, modulo 2^512.
    pub(crate) fn add(&self, other: U512) -> U512 {
        let mut out = [0u64; LIMBS];
        let mut carry = false;
        for (i, o) in out.iter_mut().enumerate() {
            let (s1, c1) = self.0[i].overflowing_add(other.0[i]);
            let (s2, c2) = s1.overflowing_add(u64::from(carry));
            *o = s2;
            carry = c1 || c2;
        }
        U512(out)
    }

    /// The difference, modulo 2^512 (callers ensure self ≥ other).
    pub(crate) fn sub(&self, other: U512) -> U512 {
        let mut out = [0u64; LIMBS];
        let mut borrow = false;
        for (i, o) in out.iter_mut().enumerate() {
            let (d1, b1) = self.0[i].overflowing_sub(other.0[i]);
            let (d2, b2) = d1.overflowing_sub(u64::from(borrow));
            *o = d2;
            borrow = b1 || b2;
        }
        U512(out)
    }

    /// self·2^64, modulo 2^512.
    pub(crate) fn shl_word(&self) -> U512 {
        let mut out = [0u64; LIMBS];
        out[1..].copy_from_slice(&self.0[..LIMBS - 1]);
        U512(out)
    }

    /// Number of significant bits.
    #[cfg(test)]
    pub(crate) fn bits(&self) -> u32 {
        for i in (0..LIMBS).rev() {
            if self.0[i] != 0 {
                return 64 * i as u32 + (64 - self.0[i].leading_zeros());
            }
        }
        0
    }

    /// The little-endian 64-bit limbs.
    pub(crate) fn limbs(&self) -> [u64; LIMBS] {
        self.0
    }
}

impl Ord for U512 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }
}

impl PartialOrd for U512 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;
    use proptest::prelude::*;

    fn big(x: &U512) -> BigUint {
        BigUint::from_slice(
            &x.limbs()
                .iter()
                .flat_map(|w| [*w as u32, (*w >> 32) as u32])
                .collect::<Vec<_>>(),
        )
    }

    fn modulus() -> BigUint {
        BigUint::from(1u8) << 512
    }

    fn arb_u512() -> impl Strategy<Value = U512> {
        (prop::array::uniform8(any::<u64>()), 0usize..=8).prop_map(|(mut limbs, used)| {
            for l in limbs.iter_mut().skip(used) {
                *l = 0;
            }
            U512(limbs)
        })
    }

    proptest! {
        // num-bigint is the independent oracle for the hand-written limb arithmetic.
        #[test]
        fn arithmetic_matches_bigint(a in arb_u512(), b in arb_u512(), w in any::<u64>()) {
            let m = modulus();
            prop_assert_eq!(big(&a.mul(&b)), (big(&a) * big(&b)) % &m);
            prop_assert_eq!(big(&a.mul_u64(w)), (big(&a) * BigUint::from(w)) % &m);
            prop_assert_eq!(big(&a.add(b)), (big(&a) + big(&b)) % &m);
            prop_assert_eq!(big(&a.shl_word()), (big(&a) << 64) % &m);
            prop_assert_eq!(a.cmp(&b), big(&a).cmp(&big(&b)));
            let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
            prop_assert_eq!(big(&hi.sub(lo)), big(&hi) - big(&lo));
            prop_assert_eq!(u64::from(hi.bits()), big(&hi).bits());
        }

        #[test]
        fn from_u128_round_trips(x in any::<u128>()) {
            prop_assert_eq!(big(&U512::from_u128(x)), BigUint::from(x));
        }
    }
}
