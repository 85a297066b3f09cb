//! Exact discrete Gaussian sampler (Canonne, Kamath & Steinke 2020, Alg. 3).

use rand_core::{CryptoRng, RngCore};

use super::bernoulli::bernoulli_exp_wide;
use super::laplace::sample_discrete_laplace;
use super::wide::U512;
use super::{MAX_SCALE_UNITS, dyadic};
use crate::{Error, Result};

/// Smallest supported discrete Gaussian σ, in units.
pub const MIN_GAUSSIAN_SIGMA_UNITS: f64 = 1.0 / 256.0; // 2^-8

/// The discrete Gaussian N_ℤ(0, σ²) on ℤ: P(y) ∝ exp(−y²/(2σ²)), σ = `sigma_units`.
///
/// σ² is used exactly: σ = m·2^e (an f64 is a dyadic rational) gives σ² = p/q with p = m²·2^max(2e,0)
/// and q = 2^max(−2e,0), both below 2^128 in the supported range 2^−8 ≤ σ ≤ 2^52.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscreteGaussian {
    sigma_units: u64, // bits of the f64, so the type stays Eq
    /// Scale of the discrete Laplace proposal: ⌊σ⌋ + 1.
    t: u64,
    /// σ² = p/q.
    p: u128,
    q: u128,
    /// 2·p·q·t², the denominator of the rejection exponent.
    exponent_den: U512,
}

impl DiscreteGaussian {
    /// A sampler with standard-deviation parameter σ in units.
    /// Errors unless σ is finite and in [2^−8, 2^52].
    pub fn new(sigma_units: f64) -> Result<Self> {
        if !(sigma_units.is_finite()
            && (MIN_GAUSSIAN_SIGMA_UNITS..=MAX_SCALE_UNITS).contains(&sigma_units))
        {
            return Err(Error::InvalidParameter {
                name: "sigma_units",
                value: sigma_units,
                requirement: "finite and in [2^-8, 2^52]",
            });
        }
        let (m, e) = dyadic(sigma_units);
        let m2 = u128::from(m) * u128::from(m); // m < 2^53
        // e ∈ [−61, 52]: for e ≥ 0, p = σ² ≤ 2^104; for e < 0, q = 2^(−2e) ≤ 2^122.
        let (p, q) = if e >= 0 {
            (m2 << (2 * e), 1u128)
        } else {
            (m2, 1u128 << (-2 * e))
        };
        // ⌊σ⌋ of an f64 is exact; t ≤ 2^52 + 1.
        let t = sigma_units.floor() as u64 + 1;
        let two_pq = U512::from_u128(p).mul(&U512::from_u128(q)).mul_u64(2);
        let t2 = U512::from_u128(u128::from(t) * u128::from(t));
        Ok(DiscreteGaussian {
            sigma_units: sigma_units.to_bits(),
            t,
            p,
            q,
            exponent_den: two_pq.mul(&t2),
        })
    }

    /// σ in units.
    pub fn sigma_units(&self) -> f64 {
        f64::from_bits(self.sigma_units)
    }

    /// One draw.
    pub fn sample<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R) -> i64 {
        loop {
            let y = sample_discrete_laplace(rng, self.t, 1);
            if self.accept(rng, y.unsigned_abs()) {
                return y;
            }
        }
    }

    /// Fills `out` with independent draws.
    pub fn fill<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        for x in out.iter_mut() {
            *x = self.sample(rng);
        }
    }

    /// Bernoulli(exp(−(a − σ²/t)²/(2σ²))), the acceptance step of CKS Alg. 3.
    ///
    /// With σ² = p/q the exponent is (a·t·q − p)² / (2·p·q·t²), computed exactly. Bounds (all
    /// in the supported range, a ≤ 2^63, t ≤ 2^52 + 1 < 2^53):
    /// * a·t < 2^116 fits u128;
    /// * |a·t·q − p| < 2^222 (σ ≥ 1: q ≤ m² < 2^106; σ < 1: t = 1, q ≤ 2^122), square < 2^444;
    /// * 2·p·q·t² < 2^319 (σ ≥ 1: p·q < 2^212, t² < 2^106; σ < 1: < 2^229);
    /// * inside [`bernoulli_exp_wide`]: numerators < 2^444 shifted by one word < 2^508, and
    ///   den·K·w < 2^(319+64+64) = 2^447 — all below 2^512, so nothing wraps.
    fn accept<R: RngCore + ?Sized>(&self, rng: &mut R, a: u64) -> bool {
        let at = u128::from(a) * u128::from(self.t);
        let atq = U512::from_u128(at).mul(&U512::from_u128(self.q));
        let p = U512::from_u128(self.p);
        let diff = if atq >= p { atq.sub(p) } else { p.sub(atq) };
        bernoulli_exp_wide(rng, diff.mul(&diff), self.exponent_den)
    }
}
