//! Fixed-point codec over the ring Z_2^64.
//!
//! A value x encodes as round(x·2^f) in two's complement in a `u64`; a ring sum s decodes as
//! `(s as i64) as f64 / 2^f`. Decoding is only meaningful if the true integer sum never left
//! the signed range, so the number of fractional bits f is chosen from the number of clients N,
//! the per-element bound B and the noise tail t (value units, a bound on the absolute sum of all
//! clients' noise in one coordinate):
//!
//! ```text
//!   N·ceil(B·2^f) + ceil(t·2^f) <= 2^63 − 1
//! ```
//!
//! Proof sketch: |round(x·2^f)| <= ceil(B·2^f) for |x| <= B (rounding is monotone and ceil(B·2^f)
//! is an integer >= B·2^f), so the sum of N encodings is at most N·ceil(B·2^f) in absolute value
//! and adding noise of absolute sum <= t·2^f (an integer count of units, hence <= ceil(t·2^f))
//! keeps the true sum inside [−(2^63 − 1), 2^63 − 1]. Wrapping additions in Z_2^64 then agree
//! with integer addition modulo 2^64, and the representative in that range is unique, so
//! `s as i64` recovers the true sum exactly.
//!
//! f is capped at [`FixedPoint::MAX_FRAC_BITS`] = 52: a resolution of 2^-52 ≈ 2.2e-16 already
//! matches the relative precision of an `f64` near 1, more bits only matter for values far
//! below 1, and they would push DP noise in grid units (σ·2^f) further into the range where the
//! exact integer samplers get slow. [`FixedPoint::new`] accepts up to 62 bits when a caller
//! really wants them.

use multiversion::multiversion;

use crate::{Error, Result};

/// Largest f accepted by [`FixedPoint::new`]: keeps 2^f and every encoding inside `i64`.
pub const MAX_EXPLICIT_FRAC_BITS: u32 = 62;

/// The fixed-point codec of a round: fractional bits and the element bound it was sized for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedPoint {
    frac_bits: u32,
    bound: f64,
}

impl FixedPoint {
    /// The largest f that [`FixedPoint::for_sum`] picks (see the module docs for why).
    pub const MAX_FRAC_BITS: u32 = 52;

    /// A codec with an explicit number of fractional bits for values with |x| <= `bound`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `frac_bits > 62`, `bound` is not finite and > 0, or a
    /// single encoded value would not fit in `i64`.
    pub fn new(frac_bits: u32, bound: f64) -> Result<Self> {
        if frac_bits > MAX_EXPLICIT_FRAC_BITS {
            return Err(Error::InvalidParameter {
                name: "frac_bits",
                value: f64::from(frac_bits),
                requirement: "<= 62",
            });
        }
        positive_finite("bound", bound)?;
        if units_bound(bound, frac_bits).is_none() {
            return Err(Error::InvalidParameter {
                name: "bound",
                value: bound,
                requirement: "such that bound·2^frac_bits < 2^63",
            });
        }
        Ok(Self { frac_bits, bound })
    }

    /// The codec with the most fractional bits (at most [`Self::MAX_FRAC_BITS`]) such that
    /// `n_clients` values with |x| <= `bound` plus noise whose absolute sum per coordinate is at
    /// most `noise_tail` (value units; 0 for no noise) sum without leaving the signed range.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `n_clients == 0`, a non-finite or non-positive `bound`,
    /// or a non-finite or negative `noise_tail`; [`Error::Capacity`] if even f = 0 overflows.
    pub fn for_sum(n_clients: usize, bound: f64, noise_tail: f64) -> Result<Self> {
        if n_clients == 0 {
            return Err(Error::InvalidParameter {
                name: "n_clients",
                value: 0.0,
                requirement: ">= 1",
            });
        }
        positive_finite("bound", bound)?;
        if !(noise_tail.is_finite() && noise_tail >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "noise_tail",
                value: noise_tail,
                requirement: "finite and >= 0",
            });
        }
        (0..=Self::MAX_FRAC_BITS)
            .rev()
            .find(|&f| fits(n_clients, bound, noise_tail, f))
            .map(|frac_bits| Self { frac_bits, bound })
            .ok_or(Error::Capacity {
                n_clients,
                bound,
                noise_tail,
            })
    }

    /// True if `n_clients` values of this codec plus a noise tail of `noise_tail` (value units)
    /// sum without leaving the signed range.
    pub fn holds_sum(&self, n_clients: usize, noise_tail: f64) -> bool {
        noise_tail.is_finite()
            && noise_tail >= 0.0
            && fits(n_clients, self.bound, noise_tail, self.frac_bits)
    }

    /// Number of fractional bits f.
    pub fn frac_bits(&self) -> u32 {
        self.frac_bits
    }

    /// The bound |x| <= bound this codec accepts.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// 2^f: value units per one in the encoding.
    pub fn scale(&self) -> f64 {
        pow2(self.frac_bits)
    }

    /// Encodes one value as a signed count of grid units.
    ///
    /// # Errors
    /// [`Error::NonFinite`] or [`Error::OutOfBound`] (with index 0).
    pub fn encode_value(&self, x: f64) -> Result<i64> {
        self.check(0, x)?;
        Ok(self.units(x))
    }

    /// Encodes `values` into `out` (same length). All-or-nothing: every value is checked before
    /// anything is written.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`]; [`Error::NonFinite`] or [`Error::OutOfBound`] naming the first
    /// bad index. `out` is untouched on error.
    pub fn encode(&self, values: &[f64], out: &mut [u64]) -> Result<()> {
        if values.len() != out.len() {
            return Err(Error::LengthMismatch {
                what: "encode output",
                expected: values.len(),
                actual: out.len(),
            });
        }
        if !all_within(values, self.bound) {
            // Only to name the first bad value.
            for (index, &x) in values.iter().enumerate() {
                self.check(index, x)?;
            }
        }
        encode_units(values, self.scale(), out);
        Ok(())
    }

    /// Decodes ring sums into `out` (same length): `(s as i64) as f64 / 2^f`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] (`out` untouched).
    pub fn decode(&self, sums: &[u64], out: &mut [f64]) -> Result<()> {
        if sums.len() != out.len() {
            return Err(Error::LengthMismatch {
                what: "decode output",
                expected: sums.len(),
                actual: out.len(),
            });
        }
        for (o, &s) in out.iter_mut().zip(sums) {
            *o = self.decode_value(s);
        }
        Ok(())
    }

    /// Decodes one ring element.
    pub fn decode_value(&self, s: u64) -> f64 {
        (s as i64) as f64 / self.scale()
    }

    fn check(&self, index: usize, x: f64) -> Result<()> {
        if !x.is_finite() {
            Err(Error::NonFinite { index, value: x })
        } else if x.abs() > self.bound {
            Err(Error::OutOfBound {
                index,
                value: x,
                bound: self.bound,
            })
        } else {
            Ok(())
        }
    }

    /// round(x·2^f). Exact: scaling by a power of two is exact in `f64`, and |x·2^f| <=
    /// bound·2^f < 2^63 (checked at construction), the range of [`round_half_away`].
    fn units(&self, x: f64) -> i64 {
        round_half_away(x * self.scale())
    }
}

/// `y.round() as i64` (nearest integer, ties away from zero) for finite |y| < 2^63, from the
/// bits of y alone: no libm call, no saturating cast, no branch — so that [`encode_units`]
/// vectorises (per-lane variable shifts: AVX2 `vpsllvq` / `vpsrlvq`).
///
/// Exact: |y| = m·2^k with the 53-bit significand m (implicit bit set) and k = exponent − 52.
/// For k >= 0, y is an integer and |round(y)| = m·2^k < 2^63 is a left shift. For k < 0 with
/// s = −k, round-half-away(m/2^s) = floor((m + 2^(s−1))/2^s), a right shift of an integer below
/// 2^54; for s >= 54 (|y| < 1/2, subnormals and zero included) that is 0, which the shift gives
/// for s <= 63 and the select gives beyond. The sign is applied last in two's complement.
#[inline(always)]
pub(crate) fn round_half_away(y: f64) -> i64 {
    const SIGNIFICAND: u64 = (1 << 52) - 1;
    let bits = y.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let m = (bits & SIGNIFICAND) | (1 << 52);
    let k = biased - 1075;
    let s = k.unsigned_abs();
    let magnitude = if k >= 0 {
        m.wrapping_shl(s as u32)
    } else if s < 64 {
        (m + (1u64 << (s - 1))) >> s
    } else {
        0
    };
    let negative = 0u64.wrapping_sub(bits >> 63); // all ones for a negative y
    ((magnitude ^ negative).wrapping_sub(negative)) as i64
}

/// `out[i] = round(values[i]·scale)` in two's complement, for finite |values[i]·scale| < 2^63
/// (checked by the caller), compiled for AVX-512F, AVX2 and the baseline and dispatched at run
/// time like the summation kernels.
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn encode_units(values: &[f64], scale: f64, out: &mut [u64]) {
    for (o, &x) in out.iter_mut().zip(values) {
        *o = round_half_away(x * scale) as u64;
    }
}

/// True if every |x| <= bound (false for NaN and ±inf): one branch-free pass that vectorises,
/// where checking value by value with an early return does not.
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn all_within(values: &[f64], bound: f64) -> bool {
    values.iter().fold(true, |ok, &x| ok & (x.abs() <= bound))
}

fn positive_finite(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            requirement: "finite and > 0",
        })
    }
}

fn pow2(f: u32) -> f64 {
    // f <= 62, so the shift and the conversion are exact.
    (1u64 << f) as f64
}

/// ceil(x·2^f) as an integer if it is below 2^63.
fn units_bound(x: f64, f: u32) -> Option<u128> {
    let scaled = (x * pow2(f)).ceil();
    (scaled < 9_223_372_036_854_775_808.0).then_some(scaled as u128)
}

/// The capacity condition N·ceil(B·2^f) + ceil(t·2^f) <= 2^63 − 1, evaluated exactly in u128.
fn fits(n_clients: usize, bound: f64, noise_tail: f64, f: u32) -> bool {
    let (Some(per_client), Some(tail)) = (units_bound(bound, f), units_bound(noise_tail, f)) else {
        return false;
    };
    (n_clients as u128)
        .checked_mul(per_client)
        .and_then(|v| v.checked_add(tail))
        .is_some_and(|total| total <= i64::MAX as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_sum_picks_the_largest_safe_frac_bits() {
        // N = 1000, B = 1: need 1000·2^f <= 2^63 − 1, i.e. 2^f <= 2^63/1000 ≈ 2^53.03,
        // so f = 53 would fit but the cap is 52.
        assert_eq!(FixedPoint::for_sum(1000, 1.0, 0.0).unwrap().frac_bits(), 52);
        // N = 2^20, B = 4 = 2^2: need 2^20·2^2·2^f <= 2^63 − 1 ⇒ f <= 40 (f = 41 gives exactly 2^63).
        assert_eq!(
            FixedPoint::for_sum(1 << 20, 4.0, 0.0).unwrap().frac_bits(),
            40
        );
        // Same with a noise tail of 1: 2^22·2^40 + 2^40 = 2^62 + 2^40 fits, f = 41 does not.
        assert_eq!(
            FixedPoint::for_sum(1 << 20, 4.0, 1.0).unwrap().frac_bits(),
            40
        );
        // N = 2^20, B = 4, tail 2^62 (value units): f = 0 gives 2^22 + 2^62 ... fits;
        // tail 2^63 never fits.
        assert_eq!(
            FixedPoint::for_sum(1 << 20, 4.0, 2f64.powi(62))
                .unwrap()
                .frac_bits(),
            0
        );
        assert!(matches!(
            FixedPoint::for_sum(1 << 20, 4.0, 2f64.powi(63)),
            Err(Error::Capacity { .. })
        ));
        // 2^40 clients with |x| <= 2^23: 2^63 at f = 0 — overflow, no precision helps.
        assert!(matches!(
            FixedPoint::for_sum(1 << 40, 2f64.powi(23), 0.0),
            Err(Error::Capacity { .. })
        ));
    }

    #[test]
    fn for_sum_rejects_bad_parameters() {
        assert!(FixedPoint::for_sum(0, 1.0, 0.0).is_err());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(FixedPoint::for_sum(10, bad, 0.0).is_err());
        }
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(FixedPoint::for_sum(10, 1.0, bad).is_err());
        }
        assert!(FixedPoint::new(63, 1.0).is_err());
        assert!(FixedPoint::new(62, 2.0).is_err()); // 2·2^62 = 2^63 does not fit
        assert!(FixedPoint::new(62, 1.5).is_ok());
    }

    #[test]
    fn worst_case_sum_decodes_exactly_at_the_chosen_precision() {
        // N clients all at +bound (and all at −bound): the integer sum is N·round(B·2^f) and
        // must come back exactly.
        for &(n, bound) in &[(1usize, 1.0), (7, 3.5), (1000, 1e6), (1 << 20, 4.0)] {
            let fp = FixedPoint::for_sum(n, bound, 0.0).unwrap();
            for sign in [1.0, -1.0] {
                let unit = fp.encode_value(sign * bound).unwrap();
                let mut acc = 0u64;
                for _ in 0..n {
                    acc = acc.wrapping_add(unit as u64);
                }
                assert_eq!(acc as i64 as i128, unit as i128 * n as i128);
                let expect = (unit as i128 * n as i128) as f64 / fp.scale();
                assert_eq!(fp.decode_value(acc), expect);
            }
        }
    }

    #[test]
    fn encode_rounds_to_nearest_grid_point() {
        let fp = FixedPoint::new(4, 10.0).unwrap(); // grid 1/16
        assert_eq!(fp.encode_value(1.0).unwrap(), 16);
        assert_eq!(fp.encode_value(-1.0).unwrap(), -16);
        assert_eq!(fp.encode_value(0.03).unwrap(), 0); // 0.48 units
        assert_eq!(fp.encode_value(0.04).unwrap(), 1); // 0.64 units
        assert_eq!(fp.encode_value(-0.04).unwrap(), -1);
        assert_eq!(fp.decode_value((-16i64) as u64), -1.0);
    }

    #[test]
    fn encode_rejects_nan_inf_and_out_of_bound_naming_the_index_and_writes_nothing() {
        let fp = FixedPoint::new(8, 2.0).unwrap();
        let mut out = [7u64; 4];
        type IsExpected = fn(&Error) -> bool;
        let cases: [(f64, IsExpected); 4] = [
            (f64::NAN, |e| matches!(e, Error::NonFinite { index: 2, .. })),
            (f64::INFINITY, |e| {
                matches!(e, Error::NonFinite { index: 2, .. })
            }),
            (f64::NEG_INFINITY, |e| {
                matches!(e, Error::NonFinite { index: 2, .. })
            }),
            (2.0001, |e| matches!(e, Error::OutOfBound { index: 2, .. })),
        ];
        for (bad, is_expected) in cases {
            let err = fp.encode(&[0.5, -2.0, bad, 1.0], &mut out).unwrap_err();
            assert!(is_expected(&err), "{err}");
            assert_eq!(out, [7; 4], "partial write on error");
        }
        assert!(matches!(
            fp.encode(&[0.5], &mut out),
            Err(Error::LengthMismatch { .. })
        ));
        assert_eq!(out, [7; 4]);
        // The bound itself is accepted.
        fp.encode(&[2.0, -2.0, 0.0, 1.0], &mut out).unwrap();
        assert_eq!(out, [512, (-512i64) as u64, 0, 256]);
    }

    #[test]
    fn dispatched_encode_matches_f64_round_on_every_lane() {
        // Lengths that leave every possible tail after 8-, 4- and 2-lane vectors; values over the
        // whole range of each codec, exact halves and the bound itself.
        let mut state = 0x0dd5_eed5_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for (frac_bits, bound) in [(0, 1e6), (20, 3.0), (46, 1.0), (52, 1.0), (62, 1.5)] {
            let fp = FixedPoint::new(frac_bits, bound).unwrap();
            let scale = 2f64.powi(frac_bits as i32);
            for len in [1, 7, 8, 9, 31, 1000] {
                let values: Vec<f64> = (0..len)
                    .map(|i| match i % 5 {
                        0 => (2.0 * next() - 1.0) * bound,
                        1 => ((next() * bound * scale).trunc() + 0.5) / scale,
                        2 => -bound,
                        3 => (2.0 * next() - 1.0) * bound * next().powi(40),
                        _ => -0.0,
                    })
                    .collect();
                let mut out = vec![0u64; len];
                fp.encode(&values, &mut out).unwrap();
                for (&x, &o) in values.iter().zip(&out) {
                    assert_eq!(
                        o as i64,
                        (x * scale).round() as i64,
                        "x = {x:e}, f = {frac_bits}"
                    );
                }
            }
        }
    }

    #[test]
    fn round_half_away_matches_f64_round() {
        let two = |e: i32| 2f64.powi(e);
        let mut cases = vec![
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994, // largest f64 below 1/2: rounds to 0
            f64::from_bits(0.5f64.to_bits() + 1),
            1.0 - f64::EPSILON / 2.0,
            f64::MIN_POSITIVE,
            5e-324,
            two(52) - 0.5,
            two(52) - 1.5,
            two(51) + 0.5,
            two(52),
            two(52) + 1.0,
            two(53) - 1.0,
            two(62),
            two(63) - 1024.0, // largest f64 below 2^63
        ];
        // Pseudo-random values over every binary exponent up to 62 (SplitMix64 bits).
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let exponent = (z % 64) as i32 - 2; // 2^-2 .. 2^61 scale of the significand
            let significand = f64::from_bits((1023u64 << 52) | (z >> 12)); // in [1, 2)
            cases.push(significand * two(exponent));
            // Exact halves at this magnitude (where representable).
            cases.push((significand * two(exponent)).trunc() + 0.5);
        }
        for y in cases {
            for y in [y, -y] {
                assert_eq!(round_half_away(y), y.round() as i64, "y = {y:e}");
            }
        }
    }

    #[test]
    fn decode_checks_length() {
        let fp = FixedPoint::new(8, 1.0).unwrap();
        let mut out = [0.0; 2];
        assert!(fp.decode(&[1, 2, 3], &mut out).is_err());
        assert_eq!(out, [0.0; 2]);
    }
}
