//! Exact discrete Gaussian sampler (Canonne, Kamath & Steinke 2020, Alg. 3).

use rand_core::{CryptoRng, RngCore};

use super::aes_rng::AesCtrRng;
use super::bernoulli::uniform_below_u64;
use super::lazy_exp::{Enclosure, FastPath, bernoulli_exp, bernoulli_exp_enclosed};
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
    /// σ²/t and 1/(2σ²) as f64 (bits, so the type stays Eq), for the one-word decisions.
    sigma_sq_over_t: u64,
    half_inv_sigma_sq: u64,
    /// The enclosure of exp(−1), for the geometric part of the proposal.
    exp_minus_one: Enclosure,
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
        let exponent_den = two_pq.mul(&t2);
        Ok(DiscreteGaussian {
            sigma_units: sigma_units.to_bits(),
            t,
            p,
            q,
            exponent_den,
            sigma_sq_over_t: (sigma_units * sigma_units / t as f64).to_bits(),
            half_inv_sigma_sq: (0.5 / (sigma_units * sigma_units)).to_bits(),
            exp_minus_one: Enclosure::of(1.0),
        })
    }

    /// σ in units.
    pub fn sigma_units(&self) -> f64 {
        f64::from_bits(self.sigma_units)
    }

    /// One draw.
    pub fn sample<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R) -> i64 {
        self.sample_with(rng, FastPath::On)
    }

    /// Fills `out` with independent draws. The random words come from an AES-128-CTR
    /// keystream keyed with 16 bytes of `rng` (see `aes_rng.rs`): `rng` is read once per call.
    pub fn fill<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        let mut bulk = AesCtrRng::from_rng(rng);
        for x in out.iter_mut() {
            *x = self.sample_with(&mut bulk, FastPath::On);
        }
    }

    /// CKS Alg. 3 with every Bernoulli(exp(−γ)) decided by [`bernoulli_exp`].
    pub(crate) fn sample_with<R: RngCore + ?Sized>(&self, rng: &mut R, fast: FastPath) -> i64 {
        loop {
            let y = self.laplace_proposal(rng, fast);
            if self.accept(rng, y.unsigned_abs(), fast) {
                return y;
            }
        }
    }

    /// CKS Alg. 2 for Lap_ℤ(t) (s = 1), the proposal: X = U + t·V with U uniform on
    /// {0..t−1} kept with probability exp(−U/t) and V a run of Bernoulli(e^{−1}) successes,
    /// then a random sign with −0 rejected (the same algorithm as
    /// `laplace::sample_discrete_laplace`, its Bernoullis decided by [`bernoulli_exp`]).
    ///
    /// γ̂ errors: U/t with U < t < 2^53 exact in f64 is one rounding (≤ 2^−53 absolute, as
    /// U/t < 1); the constant 1 is exact.
    fn laplace_proposal<R: RngCore + ?Sized>(&self, rng: &mut R, fast: FastPath) -> i64 {
        let t = self.t;
        let one = || (U512::from_u128(1), U512::from_u128(1));
        loop {
            let u = uniform_below_u64(rng, t);
            let gamma_hat = u as f64 / t as f64;
            let exact = || {
                (
                    U512::from_u128(u128::from(u)),
                    U512::from_u128(u128::from(t)),
                )
            };
            if !bernoulli_exp(rng, gamma_hat, exact, fast) {
                continue;
            }
            let mut v: u64 = 0;
            while bernoulli_exp_enclosed(rng, self.exp_minus_one, one, fast) {
                v = v.saturating_add(1);
            }
            // t < 2^63 and v < 2^64: the product is below 2^127, so the sum cannot overflow.
            let x = u128::from(t) * u128::from(v) + u128::from(u);
            let negative = rng.next_u64() & 1 == 1;
            if negative && x == 0 {
                continue;
            }
            let Ok(magnitude) = i64::try_from(x) else {
                continue;
            };
            return if negative { -magnitude } else { magnitude };
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
    ///
    /// The one-word decision uses g = (a − σ²/t)²·(1/(2σ²)) in f64. Error (u = 2^−53): a as
    /// f64 is off by ≤ a·u, σ²/t by ≤ 3u·σ²/t ≤ 3u·σ (t > σ), the subtraction by u·|x|; so the
    /// computed x is x + δ with |δ| ≤ 5u(|x| + σ). With r = |x|/σ, γ = r²/2 and
    /// |g − γ| ≤ (2|x||δ| + δ²)/(2σ²) + 3uγ ≤ 5u(r + 1)r + 25u²(r + 1)² + 3ur²/2. The fast path
    /// is tried only for g ≤ 64, i.e. r ≤ 11.4: |g − γ| < 2^−44, inside the 2^−40 that
    /// `lazy_exp` assumes. The exact exponent (a·t·q − p)²/(2pqt²) is formed only when the
    /// one-word test cannot decide.
    fn accept<R: RngCore + ?Sized>(&self, rng: &mut R, a: u64, fast: FastPath) -> bool {
        let x = a as f64 - f64::from_bits(self.sigma_sq_over_t);
        let gamma_hat = x * x * f64::from_bits(self.half_inv_sigma_sq);
        let exact = || {
            let at = u128::from(a) * u128::from(self.t);
            let atq = U512::from_u128(at).mul(&U512::from_u128(self.q));
            let p = U512::from_u128(self.p);
            let diff = if atq >= p { atq.sub(p) } else { p.sub(atq) };
            (diff.mul(&diff), self.exponent_den)
        };
        bernoulli_exp(rng, gamma_hat, exact, fast)
    }
}
