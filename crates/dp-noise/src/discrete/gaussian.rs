//! Exact discrete Gaussian sampler (Canonne, Kamath & Steinke 2020, Alg. 3).

use rand_core::{CryptoRng, RngCore};

use super::aes_rng::AesCtrRng;
use super::bernoulli::bernoulli_exp_wide;
use super::bernoulli::uniform_below_u64;
use super::fast_math;
use super::lazy_exp::{
    Enclosure, FAST_GAMMA_LIMIT, FastPath, LazyUniform, bernoulli_exp, bernoulli_exp_enclosed,
    one_word_test,
};
use super::wide::U512;
use super::{MAX_SCALE_UNITS, dyadic};
use crate::{Error, Result};
use multiversion::multiversion;

/// Smallest supported discrete Gaussian σ, in units.
pub const MIN_GAUSSIAN_SIGMA_UNITS: f64 = 1.0 / 256.0; // 2^-8

/// Largest proposal scale t whose magnitude is drawn by inversion ([`DiscreteGaussian::
/// magnitude_by_inversion`]); above it the one-logarithm decision would fail too often
/// (its margin grows like t·2^−40) and CKS Alg. 2 is used instead.
const INVERSION_MAX_T: u64 = 1 << 24;

/// Smallest first word for which the inversion tries its one-logarithm decision: below it
/// U's 64-bit interval is too wide relative to U (probability 2^−24).
const INVERSION_MIN_WORD: u64 = 1 << 40;

/// Proposals generated together by [`DiscreteGaussian::fill`] (one word of sign bits each).
const BATCH: usize = 64;

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
        self.sample_with(rng, &mut SignBits::default(), FastPath::On)
    }

    /// Fills `out` with independent draws. The random words come from an AES-128-CTR
    /// keystream keyed with 16 bytes of `rng` (see `aes_rng.rs`): `rng` is read once per call.
    pub fn fill<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        let mut bulk = AesCtrRng::from_rng(rng);
        if self.t <= INVERSION_MAX_T {
            self.fill_batched(&mut bulk, out, FastPath::On);
        } else {
            let mut signs = SignBits::default();
            for x in out.iter_mut() {
                *x = self.sample_with(&mut bulk, &mut signs, FastPath::On);
            }
        }
    }

    /// [`Self::sample_with`] for [`BATCH`] proposals at a time: their logarithms and the
    /// exponentials of their acceptance tests are computed together (vectorised), the
    /// decisions are the same as one at a time. The accepted proposals of an i.i.d. sequence
    /// are i.i.d. draws of the target, so taking them in order — and dropping what is left of
    /// the last batch — gives independent samples.
    ///
    /// The common case is written without data-dependent branches (a kept value is stored and
    /// the count advanced by 0 or 1), since each decision is a coin flip a branch predictor
    /// cannot learn; only the rare undecided cases branch to the exact comparisons.
    fn fill_batched(&self, rng: &mut AesCtrRng, out: &mut [i64], fast: FastPath) {
        let mut words = [0u64; BATCH];
        let mut magnitudes = [0u64; BATCH];
        let mut decided = [false; BATCH];
        let mut proposals = [0i64; BATCH];
        let mut gammas = [0f64; BATCH];
        let mut p_hats = [0f64; BATCH];
        let mut accept_words = [0u64; BATCH];
        let mut below = [false; BATCH];
        let mut accepted = [0i64; BATCH];
        let t = self.t as i64 as f64;
        let mut filled = 0;
        while filled < out.len() {
            rng.fill_words(&mut words);
            magnitudes_fast(t, &words, &mut magnitudes, &mut decided);
            if fast != FastPath::On {
                decided.fill(false);
            }
            let mut signs = rng.next_u64();
            let mut count = 0;
            for i in 0..BATCH {
                let magnitude = if decided[i] {
                    magnitudes[i]
                } else {
                    self.magnitude_exact(rng, words[i])
                };
                let negative = signs & 1 == 1;
                signs >>= 1;
                // Negative zero and magnitudes past i64::MAX are rejected.
                let keep = !(negative && magnitude == 0) && magnitude <= i64::MAX as u64;
                let value = magnitude as i64;
                proposals[count] = if negative {
                    value.wrapping_neg()
                } else {
                    value
                };
                count += usize::from(keep);
            }
            for (g, &y) in gammas.iter_mut().zip(&proposals[..count]) {
                *g = self.gamma_hat(y.unsigned_abs());
            }
            fast_math::exp_neg_batch(&gammas[..count], &mut p_hats[..count]);
            rng.fill_words(&mut accept_words[..count]);
            accept_fast(
                &accept_words[..count],
                &p_hats[..count],
                &gammas[..count],
                &mut below[..count],
                &mut decided[..count],
            );
            if fast != FastPath::On {
                decided.fill(false);
            }
            let mut kept = 0;
            for i in 0..count {
                let accept = if decided[i] {
                    below[i]
                } else {
                    let a = proposals[i].unsigned_abs();
                    self.accept_exact(rng, accept_words[i], a, gammas[i])
                };
                accepted[kept] = proposals[i];
                kept += usize::from(accept);
            }
            let take = kept.min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&accepted[..take]);
            filled += take;
        }
    }

    /// `fill` with every decision of the batch sent down the exact paths (`FastPath::Off`).
    #[cfg(test)]
    pub(crate) fn fill_for_tests<R: RngCore + CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
        out: &mut [i64],
        fast: FastPath,
    ) {
        self.fill_batched(&mut AesCtrRng::from_rng(rng), out, fast);
    }

    /// The acceptance decision when the one-word test could not decide (or γ̂ > 64).
    #[cold]
    fn accept_exact<R: RngCore + ?Sized>(&self, rng: &mut R, u: u64, a: u64, gamma: f64) -> bool {
        if gamma <= FAST_GAMMA_LIMIT {
            let (num, den) = self.exact_exponent(a);
            super::lazy_exp::exact_less_than_exp(rng, u, &num, &den)
        } else {
            let (num, den) = self.exact_exponent(a);
            bernoulli_exp_wide(rng, num, den)
        }
    }

    /// CKS Alg. 3: a discrete Laplace proposal Y ~ Lap_ℤ(t), accepted with probability
    /// exp(−(|Y| − σ²/t)²/(2σ²)) decided by [`bernoulli_exp`].
    pub(crate) fn sample_with<R: RngCore + ?Sized>(
        &self,
        rng: &mut R,
        signs: &mut SignBits,
        fast: FastPath,
    ) -> i64 {
        loop {
            let y = if self.t <= INVERSION_MAX_T {
                self.laplace_by_inversion(rng, signs, fast)
            } else {
                self.laplace_proposal(rng, fast)
            };
            if self.accept(rng, y.unsigned_abs(), fast) {
                return y;
            }
        }
    }

    /// Lap_ℤ(t): P(y) ∝ exp(−|y|/t), as a sign and a geometric magnitude K with
    /// P(K ≥ k) = exp(−k/t), a negative zero rejected (so 0 is not counted twice). The same
    /// law as CKS Alg. 2, with one uniform per magnitude instead of ≈ 5 Bernoulli decisions.
    fn laplace_by_inversion<R: RngCore + ?Sized>(
        &self,
        rng: &mut R,
        signs: &mut SignBits,
        fast: FastPath,
    ) -> i64 {
        loop {
            let magnitude = self.magnitude_by_inversion(rng, fast);
            let negative = signs.next(rng);
            if negative && magnitude == 0 {
                continue;
            }
            // A magnitude past i64::MAX is rejected, as in `laplace_proposal`.
            let Ok(magnitude) = i64::try_from(magnitude) else {
                continue;
            };
            return if negative { -magnitude } else { magnitude };
        }
    }

    /// K = ⌊−t·ln U⌋ for a uniform real U ∈ (0, 1): K = k exactly when
    /// exp(−(k+1)/t) ≤ U < exp(−k/t), so P(K ≥ k) = P(U < exp(−k/t)) = exp(−k/t).
    ///
    /// # The one-logarithm decision, and why it is exact
    /// U's first word u puts U in [u, u+1)·2^−64 ⊂ [y, y + 2^−52) with y = ⌊u/2^12⌋·2^−52, exact
    /// in f64 (`fast_math::grid_point`). For u ≥ 2^40 (so y ≥ 2^−24) let ℓ̂ = fl(t·(−ln y)) with
    /// `fast_math::ln`. For every U in the interval, with L(U) = −t·ln U:
    /// * 0 ≤ ln U − ln y ≤ ln(1 + 2^−52/y) ≤ 2^−52/y;
    /// * `fast_math::ln` is within 2^−48·|ln y| of ln y (proven there; the test `ln_is_accurate`
    ///   checks 2^−50 against exact bounds), and |ln y| ≤ 24·ln 2 < 16.7: at most 2^−43.9;
    /// * the product t·(−ln y) is one rounding: ≤ 2^−53·ℓ̂.
    ///
    /// So |ℓ̂ − L(U)| ≤ t·(2^−52/y + 2^−43.9) + 2^−53·ℓ̂. The margin
    /// η = t·(2^−51/y + 2^−40) + 2^−50·ℓ̂ exceeds each of those terms 1.9-fold even after the
    /// rounding of its own f64 operations, and the sums ℓ̂ ± η add a rounding of at most
    /// 2^−53·(ℓ̂ + η), less than what is left of η. Hence fl(ℓ̂ − η) ≤ L(U) ≤ fl(ℓ̂ + η), and L(U) ≥ 0.
    /// When k = ⌊fl(ℓ̂ + η)⌋ has max(fl(ℓ̂ − η), 0) ≥ k, then k ≤ L(U) < k + 1 for *every* U of
    /// the interval: K = k. Otherwise (probability ≈ 2η ≤ 2^−15 at t ≤ 2^24) the same U is
    /// located exactly by [`Self::magnitude_exact`]. Both branches return the same function of
    /// the same U, so K has exactly the geometric law; the f64 arithmetic only decides which
    /// branch runs.
    fn magnitude_by_inversion<R: RngCore + ?Sized>(&self, rng: &mut R, fast: FastPath) -> u64 {
        let u = rng.next_u64();
        self.magnitude_from(rng, u, fast_math::ln(fast_math::grid_point(u)), fast)
    }

    /// [`Self::magnitude_by_inversion`] for a first word `u` already drawn and
    /// `ln_y` = `fast_math::ln` of its grid point already computed.
    #[inline]
    fn magnitude_from<R: RngCore + ?Sized>(
        &self,
        rng: &mut R,
        u: u64,
        ln_y: f64,
        fast: FastPath,
    ) -> u64 {
        if fast == FastPath::On
            && let Some(k) = self.magnitude_fast(u, ln_y)
        {
            return k;
        }
        self.magnitude_exact(rng, u)
    }

    /// The one-logarithm decision (see [`Self::magnitude_by_inversion`]), `None` if it cannot
    /// decide.
    #[inline(always)]
    fn magnitude_fast(&self, u: u64, ln_y: f64) -> Option<u64> {
        let (k, decided) = one_log_decision(self.t as i64 as f64, u, ln_y);
        decided.then_some(k)
    }

    #[cfg(test)]
    pub(crate) fn magnitude_for_tests<R: RngCore + ?Sized>(
        &self,
        rng: &mut R,
        fast: FastPath,
    ) -> u64 {
        self.magnitude_by_inversion(rng, fast)
    }

    /// The k with exp(−(k+1)/t) ≤ U < exp(−k/t), by exact comparisons of one lazily revealed U
    /// whose first word is `first_word`, searching from an f64 estimate. A k past i64::MAX is
    /// returned as `u64::MAX` (the caller rejects it).
    fn magnitude_exact<R: RngCore + ?Sized>(&self, rng: &mut R, first_word: u64) -> u64 {
        let mut uniform = LazyUniform::new(first_word);
        // ln U ≈ ln(w_z·2^64 + w_{z+1}) − 64·(z+2)·ln 2 with w_z the first non-zero word: only a
        // starting point (the search below is exact), accurate to ≈ 2^−50·|ln U|.
        let mut z = 0;
        while uniform.word(rng, z) == 0 {
            z += 1;
        }
        let top = uniform.word(rng, z) as f64 * 18_446_744_073_709_551_616.0
            + uniform.word(rng, z + 1) as f64;
        let ln_u = top.ln() - 64.0 * (z as f64 + 2.0) * std::f64::consts::LN_2;
        let estimate = -(self.t as f64) * ln_u;
        let limit = i64::MAX as u64;
        let mut k = if estimate.is_finite() && estimate >= 0.0 {
            (estimate as u64).min(limit)
        } else {
            0
        };
        let t = U512::from_u128(u128::from(self.t));
        let below = |uniform: &mut LazyUniform, rng: &mut R, k: u64| {
            uniform.less_than_exp(rng, &U512::from_u128(u128::from(k)), &t)
        };
        // Invariant after the first loop: U < exp(−k/t) (for k = 0 it holds as U < 1).
        while k > 0 && !below(&mut uniform, rng, k) {
            k -= 1;
        }
        while below(&mut uniform, rng, k + 1) {
            k += 1;
            if k > limit {
                return u64::MAX;
            }
        }
        k
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
        bernoulli_exp(rng, self.gamma_hat(a), || self.exact_exponent(a), fast)
    }

    /// The f64 estimate of the acceptance exponent (error analysis at [`Self::accept`]).
    #[inline]
    fn gamma_hat(&self, a: u64) -> f64 {
        // a ≤ i64::MAX (the proposal is an i64): the conversion through i64 is the same value.
        let x = a as i64 as f64 - f64::from_bits(self.sigma_sq_over_t);
        x * x * f64::from_bits(self.half_inv_sigma_sq)
    }

    /// The acceptance exponent (a·t·q − p)²/(2pqt²) as an exact fraction.
    fn exact_exponent(&self, a: u64) -> (U512, U512) {
        let at = u128::from(a) * u128::from(self.t);
        let atq = U512::from_u128(at).mul(&U512::from_u128(self.q));
        let p = U512::from_u128(self.p);
        let diff = if atq >= p { atq.sub(p) } else { p.sub(atq) };
        (diff.mul(&diff), self.exponent_den)
    }
}

/// The one-logarithm decision of [`DiscreteGaussian::magnitude_by_inversion`] for the first word
/// `u` with `ln_y` = `fast_math::ln` of its grid point: (k, whether k is certain).
#[inline(always)]
fn one_log_decision(t: f64, u: u64, ln_y: f64) -> (u64, bool) {
    const TWO_M51: f64 = 1.0 / 2_251_799_813_685_248.0;
    const SLACK: f64 = 1.0 / 1_099_511_627_776.0; // 2^-40
    const REL: f64 = 1.0 / 1_125_899_906_842_624.0; // 2^-50
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let y = fast_math::grid_point(u);
    let l = -t * ln_y;
    let eta = t * (TWO_M51 / y + SLACK) + l * REL;
    let k = (l + eta).floor();
    let decided = (u >= INVERSION_MIN_WORD) & ((l - eta).max(0.0) >= k);
    // When decided, 0 ≤ k < t·17 < 2^29 is an integer, so its bits after adding 2^52 are k.
    let k_int = (k + TWO_52).to_bits().wrapping_sub(TWO_52.to_bits());
    (k_int, decided)
}

/// [`one_log_decision`] for a batch of first words (vectorised).
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn magnitudes_fast(t: f64, words: &[u64], magnitudes: &mut [u64], decided: &mut [bool]) {
    for ((&u, k), d) in words.iter().zip(magnitudes).zip(decided) {
        (*k, *d) = one_log_decision(t, u, fast_math::ln(fast_math::grid_point(u)));
    }
}

/// The one-word acceptance tests of a batch (vectorised): `below[i]` is the decision where
/// `decided[i]`.
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn accept_fast(
    words: &[u64],
    p_hats: &[f64],
    gammas: &[f64],
    below: &mut [bool],
    decided: &mut [bool],
) {
    for i in 0..words
        .len()
        .min(p_hats.len())
        .min(gammas.len())
        .min(below.len())
        .min(decided.len())
    {
        let (b, a) = one_word_test(words[i], p_hats[i]);
        below[i] = b;
        decided[i] = (b | a) & (gammas[i] <= FAST_GAMMA_LIMIT);
    }
}

/// Random signs, 64 from each word: a sign needs one bit, not one word.
#[derive(Debug, Default)]
pub(crate) struct SignBits {
    word: u64,
    left: u32,
}

impl SignBits {
    /// A fair coin: true means negative.
    fn next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> bool {
        if self.left == 0 {
            self.word = rng.next_u64();
            self.left = 64;
        }
        let bit = self.word & 1 == 1;
        self.word >>= 1;
        self.left -= 1;
        bit
    }
}
