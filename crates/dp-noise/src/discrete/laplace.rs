//! Exact discrete Laplace sampler (Canonne, Kamath & Steinke 2020, Alg. 2).

use rand_core::{CryptoRng, RngCore};

use super::bernoulli::{bernoulli_exp_minus_one, bernoulli_exp_ratio, uniform_below_u64};
use super::{MAX_SCALE_UNITS, dyadic};
use crate::{Error, Result};

/// Smallest supported discrete Laplace scale, in units.
pub const MIN_LAPLACE_SCALE_UNITS: f64 = 1.0 / 4_294_967_296.0; // 2^-32

/// The discrete Laplace distribution on ℤ with P(y) ∝ exp(−|y|/b), b = `scale_units`.
///
/// The f64 scale is converted exactly: b = m·2^e is the rational t/s with t = m·2^max(e,0),
/// s = 2^max(−e,0). Supported: 2^−32 ≤ b ≤ 2^52.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteLaplace {
    scale_units: u64, // bits of the f64, so the type stays Eq
    t: u64,
    s: u128,
}

impl DiscreteLaplace {
    /// A sampler with scale b in units. Errors unless b is finite and in [2^−32, 2^52].
    pub fn new(scale_units: f64) -> Result<Self> {
        if !(scale_units.is_finite()
            && (MIN_LAPLACE_SCALE_UNITS..=MAX_SCALE_UNITS).contains(&scale_units))
        {
            return Err(Error::InvalidParameter {
                name: "scale_units",
                value: scale_units,
                requirement: "finite and in [2^-32, 2^52]",
            });
        }
        let (m, e) = dyadic(scale_units);
        // In range, e ∈ [−84, 52 − 0] and m < 2^53, so t < 2^53 and s ≤ 2^84.
        let (t, s) = if e >= 0 {
            (m << e, 1u128)
        } else {
            (m, 1u128 << (-e))
        };
        Ok(DiscreteLaplace {
            scale_units: scale_units.to_bits(),
            t,
            s,
        })
    }

    /// The scale b in units.
    pub fn scale_units(&self) -> f64 {
        f64::from_bits(self.scale_units)
    }

    /// One draw.
    pub fn sample<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R) -> i64 {
        sample_discrete_laplace(rng, self.t, self.s)
    }

    /// Fills `out` with independent draws.
    pub fn fill<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        for x in out.iter_mut() {
            *x = self.sample(rng);
        }
    }
}

/// CKS Alg. 2: a draw from Lap_ℤ(t/s), P(y) ∝ exp(−|y|·s/t), for t ≥ 1, s ≥ 1, t < 2^63.
///
/// X = U + t·V with U uniform on {0..t−1} accepted with probability exp(−U/t) and
/// V ~ Geometric(1 − e^{−1}) has P(X = x) ∝ exp(−x/t); Y = ⌊X/s⌋ then has P(Y = y) ∝
/// exp(−y·s/t). A random sign, rejecting "−0" so that 0 is not counted twice, makes it
/// two-sided. A |Y| above i64::MAX (probability below exp(−2^63·s/t)) is rejected as well,
/// which conditions the output on being representable — the only departure from Lap_ℤ.
pub(crate) fn sample_discrete_laplace<R: RngCore + ?Sized>(rng: &mut R, t: u64, s: u128) -> i64 {
    let t = t.max(1);
    let s = s.max(1);
    loop {
        let u = uniform_below_u64(rng, t);
        if !bernoulli_exp_ratio(rng, u128::from(u), t) {
            continue;
        }
        let mut v: u64 = 0;
        while bernoulli_exp_minus_one(rng) {
            v = v.saturating_add(1);
        }
        // t < 2^63 and v < 2^64: the product is below 2^127, so the sum cannot overflow.
        let x = u128::from(t) * u128::from(v) + u128::from(u);
        // The discrete Gaussian always has s = 1: skip the 128-bit division.
        let magnitude = if s == 1 { x } else { x / s };
        let negative = rng.next_u32() & 1 == 1;
        if negative && magnitude == 0 {
            continue;
        }
        let Ok(magnitude) = i64::try_from(magnitude) else {
            continue;
        };
        return if negative { -magnitude } else { magnitude };
    }
}
