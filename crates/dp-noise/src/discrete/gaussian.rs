//! Exact discrete Gaussian sampler (Canonne, Kamath & Steinke 2020, Alg. 3).

use rand_core::{CryptoRng, RngCore};

use super::aes_rng::AesCtrRng;
use super::bernoulli::bernoulli_exp_wide;
use super::fast_math;
use super::lazy_exp::{
    FAST_GAMMA_LIMIT, FastPath, LazyUniform, bernoulli_exp, exact_less_than_exp, one_word_test,
};
use super::wide::U512;
use super::{MAX_SCALE_UNITS, dyadic};
use crate::{Error, Result};
use multiversion::multiversion;
use zeroize::Zeroize;

/// Smallest supported discrete Gaussian σ, in units.
pub const MIN_GAUSSIAN_SIGMA_UNITS: f64 = 1.0 / 256.0; // 2^-8

/// log2 of the largest scale t/B of the inverted geometric part: the decision's margin grows
/// in proportion to t/B, so larger t are split into blocks B = 2^s (see
/// [`DiscreteGaussian::magnitude_by_inversion`]).
const INVERSION_SCALE_BITS: u32 = 24;

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
    /// s with B = 2^s the block of the proposal's magnitude, and t/B (bits of the f64, exact).
    block_bits: u32,
    t_over_block: u64,
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
        // t < 2^53 is exact in f64, and dividing by a power of two is exact too.
        let block_bits = (u64::BITS - t.leading_zeros()).saturating_sub(INVERSION_SCALE_BITS);
        let t_over_block = t as f64 / (1u64 << block_bits) as f64;
        Ok(DiscreteGaussian {
            sigma_units: sigma_units.to_bits(),
            t,
            p,
            q,
            exponent_den,
            sigma_sq_over_t: (sigma_units * sigma_units / t as f64).to_bits(),
            half_inv_sigma_sq: (0.5 / (sigma_units * sigma_units)).to_bits(),
            block_bits,
            t_over_block: t_over_block.to_bits(),
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
        self.stream(rng).fill(out);
    }

    /// A stream of draws whose random words come from one AES-128-CTR keystream keyed with 16
    /// bytes of `rng` (read once, here): for filling a long vector in chunks at the cost of
    /// one fill. (Separate [`Self::fill`] calls each key a keystream, leave part of its
    /// buffered words unused and drop the accepted draws past the end of their slice; a stream
    /// keeps both for its next call.)
    pub fn stream<R: RngCore + CryptoRng + ?Sized>(&self, rng: &mut R) -> GaussianStream<'_> {
        GaussianStream {
            sampler: self,
            rng: AesCtrRng::from_rng(rng),
            spare: [0; BATCH],
            spare_len: 0,
        }
    }

    /// [`Self::sample_with`] for [`BATCH`] proposals at a time: their logarithms and the
    /// exponentials of their acceptance tests are computed together (vectorised), the
    /// decisions are the same as one at a time. The accepted proposals of an i.i.d. sequence
    /// are i.i.d. draws of the target, so taking them in order — and dropping what is left of
    /// the last batch — gives independent samples. A proposal that is not one of the law (a
    /// negative zero, a magnitude past i64::MAX) goes through the vectorised tests with the
    /// rest and is dropped at the end; its acceptance word is drawn and left unused, which
    /// changes no decision about the others.
    ///
    /// The common case is written without data-dependent branches (a kept value is stored and
    /// the count advanced by 0 or 1), since each decision is a coin flip a branch predictor
    /// cannot learn; only the rare undecided cases branch to the exact comparisons.
    ///
    /// Accepted draws of the last batch beyond `out` go to `spare` (which must be empty): they
    /// are i.i.d. draws like the rest, so a stream hands them out first next time.
    fn fill_batched(
        &self,
        rng: &mut AesCtrRng,
        out: &mut [i64],
        fast: FastPath,
        spare: &mut [i64; BATCH],
        spare_len: &mut usize,
    ) {
        let mut words = [0u64; BATCH];
        let mut magnitudes = [0u64; BATCH];
        let mut decided = [false; BATCH];
        let mut proposals = [0i64; BATCH];
        let mut gammas = [0f64; BATCH];
        let mut p_hats = [0f64; BATCH];
        let mut accept_words = [0u64; BATCH];
        let mut below = [false; BATCH];
        let mut keep = [false; BATCH];
        let scale = f64::from_bits(self.t_over_block);
        let mut filled = 0;
        while filled < out.len() {
            rng.fill_array(&mut words);
            magnitudes_fast(scale, &words, &mut magnitudes, &mut decided);
            if fast != FastPath::On {
                decided.fill(false);
            }
            if !all_set(&decided) {
                for i in 0..BATCH {
                    if !decided[i] {
                        magnitudes[i] = self.blocks_exact(rng, words[i]);
                    }
                }
            }
            if self.block_bits > 0 {
                rng.fill_array(&mut words);
                // The kept low parts joined in one vectorised pass; the rest (probability
                // < 2^−22 each, every one when the fast path is off) in order, as
                // `low_part` would take them.
                if fast == FastPath::On {
                    join_low_parts_fast(self.block_bits, &words, &mut magnitudes, &mut decided);
                } else {
                    decided.fill(false);
                }
                if !all_set(&decided) {
                    for i in 0..BATCH {
                        if !decided[i] {
                            let low = self.low_part_from(rng, words[i], fast);
                            magnitudes[i] = self.join(magnitudes[i], low);
                        }
                    }
                }
            }
            // Every proposal of the batch goes through the vectorised tests; the few that are
            // not proposals of the law (a negative zero, a magnitude past i64::MAX) are
            // dropped at the end with the rejected ones, their acceptance word unused.
            let signs = rng.next_u64();
            propose(
                self.gamma_constants(),
                signs,
                &magnitudes,
                &mut proposals,
                &mut keep,
                &mut gammas,
            );
            fast_math::exp_neg_batch(&gammas, &mut p_hats);
            rng.fill_array(&mut accept_words);
            accept_fast(&accept_words, &p_hats, &gammas, &mut below, &mut decided);
            if fast != FastPath::On {
                decided.fill(false);
            }
            // The rare undecided tests first, in order (so the words they draw are the same as
            // one at a time); then every lane's decision is in `below`.
            if !all_set(&decided) {
                for i in 0..BATCH {
                    if !decided[i] {
                        below[i] = keep[i] && {
                            let a = proposals[i].unsigned_abs();
                            self.accept_exact(rng, accept_words[i], a, gammas[i])
                        };
                    }
                }
            }
            // Compaction: every proposal is written at the next free slot and the slot kept
            // only when accepted. With a whole batch of room left it writes straight into
            // `out` (what a rejected proposal wrote there is overwritten or past the end).
            if let Some(chunk) = out[filled..].first_chunk_mut::<BATCH>() {
                filled += compact(&proposals, &keep, &below, chunk);
            } else {
                let kept = compact(&proposals, &keep, &below, spare);
                let take = kept.min(out.len() - filled);
                out[filled..filled + take].copy_from_slice(&spare[..take]);
                spare.copy_within(take..kept, 0);
                *spare_len = kept - take;
                filled += take;
            }
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
        let mut stream = self.stream(rng);
        stream.fill_with(out, fast);
    }

    /// The acceptance decision when the one-word test could not decide (or γ̂ > 64).
    #[cold]
    fn accept_exact<R: RngCore + ?Sized>(&self, rng: &mut R, u: u64, a: u64, gamma: f64) -> bool {
        if gamma <= FAST_GAMMA_LIMIT {
            let (num, den) = self.exact_exponent(a);
            exact_less_than_exp(rng, u, &num, &den)
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
            let y = self.laplace_by_inversion(rng, signs, fast);
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
            // A magnitude past i64::MAX is rejected.
            let Ok(magnitude) = i64::try_from(magnitude) else {
                continue;
            };
            return if negative { -magnitude } else { magnitude };
        }
    }

    /// K with P(K ≥ k) = exp(−k/t), as K = Q·B + R with B = 2^s (s = 0 unless t ≥ 2^24):
    /// P(Q = q, R = r) ∝ exp(−q·B/t)·exp(−r/t) factorises, so Q and R are independent — Q
    /// geometric of scale t/B < 2^24, drawn by inversion, and R on {0, …, B − 1} with
    /// P(R = r) ∝ exp(−r/t), drawn by rejection from s uniform bits ([`Self::low_part`]).
    ///
    /// # Q by inversion
    /// Q = ⌊−(t/B)·ln U⌋ for a uniform real U ∈ (0, 1): Q = q exactly when
    /// exp(−(q+1)·B/t) ≤ U < exp(−q·B/t), so P(Q ≥ q) = exp(−q·B/t).
    ///
    /// # The one-logarithm decision, and why it is exact
    /// Write τ = t/B (exact in f64). U's first word u puts U in [u, u+1)·2^−64 ⊂ [y, y + 2^−52)
    /// with y = ⌊u/2^12⌋·2^−52, exact in f64 (`fast_math::grid_point`). For u ≥ 2^40 (so
    /// y ≥ 2^−24) let λ̂ = `fast_math::ln`(y) and ℓ̂ = fl(−τ·λ̂). For every U in the interval, with
    /// L(U) = −τ·ln U:
    /// * 0 ≤ ln U − ln y ≤ ln(1 + 2^−52/y) ≤ 2^−52/y, so L(y) − τ·2^−52/y ≤ L(U) ≤ L(y);
    /// * `fast_math::ln` is within 2^−48·|ln y| of ln y (proven there; the test `ln_is_accurate`
    ///   checks 2^−50 against exact bounds), so τ·|λ̂ − ln y| ≤ 2^−48·τ·|ln y|, and
    ///   τ·|ln y| ≤ τ·|λ̂|·(1 + 2^−47) ≤ ℓ̂·(1 + 2^−46);
    /// * the product τ·λ̂ is one rounding: |ℓ̂ − τ·|λ̂|| ≤ 2^−53·ℓ̂.
    ///
    /// So |ℓ̂ − L(U)| ≤ τ·2^−52/y + ℓ̂·(2^−48 + 2^−53)·(1 + 2^−46) < τ·2^−52/y + 2^−47.9·ℓ̂ — the
    /// logarithm's error is relative, hence a multiple of ℓ̂. The margin
    /// η = τ·2^−51/y + 2^−46·ℓ̂ is computed with three roundings (≥ η·(1 − 2^−51)), and the sums
    /// ℓ̂ ± η add one more of at most 2^−53·(ℓ̂ + η); what is left of η after both still exceeds
    /// τ·2^−52/y + 2^−46.1·ℓ̂, more than the error. Hence fl(ℓ̂ − η) ≤ L(U) ≤ fl(ℓ̂ + η), and
    /// L(U) ≥ 0. When q = ⌊fl(ℓ̂ + η)⌋ has max(fl(ℓ̂ − η), 0) ≥ q, then q ≤ L(U) < q + 1 for
    /// *every* U of the interval: Q = q. Otherwise (probability ≈ 2η: about 2^−20 on average
    /// with τ < 2^24, as E[−ln U] = 1 and E[1/y] ≈ 17 on y ≥ 2^−24; the test
    /// `inversion_fast_path_agrees_at_block_boundaries` aims first words at the boundaries)
    /// the same U is located exactly by [`Self::blocks_exact`]. Both branches return the same
    /// function of the same U, so Q has exactly the geometric law; the f64 arithmetic only
    /// decides which branch runs.
    fn magnitude_by_inversion<R: RngCore + ?Sized>(&self, rng: &mut R, fast: FastPath) -> u64 {
        let u = rng.next_u64();
        let (q, decided) = one_log_decision(
            f64::from_bits(self.t_over_block),
            u,
            fast_math::ln(fast_math::grid_point(u)),
        );
        let q = if decided && fast == FastPath::On {
            q
        } else {
            self.blocks_exact(rng, u)
        };
        let low = self.low_part(rng, fast);
        self.join(q, low)
    }

    #[cfg(test)]
    pub(crate) fn magnitude_for_tests<R: RngCore + ?Sized>(
        &self,
        rng: &mut R,
        fast: FastPath,
    ) -> u64 {
        self.magnitude_by_inversion(rng, fast)
    }

    #[cfg(test)]
    pub(crate) fn one_log_decided_for_tests(&self, u: u64) -> bool {
        let ln_y = fast_math::ln(fast_math::grid_point(u));
        one_log_decision(f64::from_bits(self.t_over_block), u, ln_y).1
    }

    /// Q·B + R, or `u64::MAX` (rejected by the callers) past i64::MAX.
    #[inline(always)]
    fn join(&self, blocks: u64, low: u64) -> u64 {
        join_blocks(self.block_bits, blocks, low)
    }

    /// R ∈ {0, …, 2^s − 1} with P(R = r) ∝ exp(−r/t): s uniform bits r, kept with probability
    /// exp(−r/t), else drawn again. One word w gives both: r is its low s ≤ 29 bits and the
    /// top 32 bits start the uniform U′ of the Bernoulli (disjoint bits, so independent). As
    /// t ≥ 2^(s+23), exp(−r/t) ≥ 1 − r/t > 1 − 2^−23, so U′ < 1 − 2^−22 — which its top 32
    /// bits show when they are below 2^32 − 2^10 — means "keep" ([`Self::low_part_fast`]);
    /// otherwise (probability < 2^−22) U′ continues with fresh words and is compared with
    /// exp(−r/t) exactly.
    fn low_part<R: RngCore + ?Sized>(&self, rng: &mut R, fast: FastPath) -> u64 {
        if self.block_bits == 0 {
            return 0;
        }
        let w = rng.next_u64();
        match self.low_part_fast(w, fast) {
            Some(r) => r,
            None => self.low_part_from(rng, w, fast),
        }
    }

    /// R from the word `w` when its top 32 bits decide "keep" (see [`Self::low_part`]).
    #[inline(always)]
    fn low_part_fast(&self, w: u64, fast: FastPath) -> Option<u64> {
        let r = w & ((1u64 << self.block_bits) - 1);
        (fast == FastPath::On && (w >> 32) < LOW_PART_KEEP_BELOW).then_some(r)
    }

    /// R when the word `w` did not decide: U′ = its top 32 bits followed by fresh bits, compared
    /// with exp(−r/t) exactly; if rejected, R is drawn again.
    #[cold]
    fn low_part_from<R: RngCore + ?Sized>(&self, rng: &mut R, w: u64, fast: FastPath) -> u64 {
        let mut w = w;
        loop {
            let r = w & ((1u64 << self.block_bits) - 1);
            let first = (w & !0xffff_ffff) | (rng.next_u64() >> 32);
            let num = U512::from_u128(u128::from(r));
            if exact_less_than_exp(rng, first, &num, &U512::from_u128(u128::from(self.t))) {
                return r;
            }
            w = rng.next_u64();
            if let Some(r) = self.low_part_fast(w, fast) {
                return r;
            }
        }
    }

    /// The q with exp(−(q+1)·B/t) ≤ U < exp(−q·B/t), by exact comparisons of one lazily
    /// revealed U whose first word is `first_word`, searching from an f64 estimate. A q whose
    /// magnitude q·B would pass i64::MAX is returned as `u64::MAX` (the callers reject it).
    #[cold]
    fn blocks_exact<R: RngCore + ?Sized>(&self, rng: &mut R, first_word: u64) -> u64 {
        let mut uniform = LazyUniform::new(first_word);
        // A starting point only (the search below is exact): ln U from the first word, or for
        // a tiny U from w_z·2^64 + w_{z+1} with w_z its first non-zero word.
        let ln_u = if first_word >= 1 << 40 {
            fast_math::ln(fast_math::grid_point(first_word))
        } else {
            let mut z = 0;
            while uniform.word(rng, z) == 0 {
                z += 1;
            }
            let top = uniform.word(rng, z) as f64 * 18_446_744_073_709_551_616.0
                + uniform.word(rng, z + 1) as f64;
            top.ln() - 64.0 * (z as f64 + 2.0) * std::f64::consts::LN_2
        };
        let estimate = -f64::from_bits(self.t_over_block) * ln_u;
        let limit = (i64::MAX as u64) >> self.block_bits;
        let mut q = if estimate.is_finite() && estimate >= 0.0 {
            (estimate as u64).min(limit)
        } else {
            0
        };
        let t = U512::from_u128(u128::from(self.t));
        let below = |uniform: &mut LazyUniform, rng: &mut R, q: u64| {
            let exponent = U512::from_u128(u128::from(q) << self.block_bits);
            uniform.less_than_exp(rng, &exponent, &t)
        };
        // Invariant after the first loop: U < exp(−q·B/t) (for q = 0 it holds as U < 1).
        while q > 0 && !below(&mut uniform, rng, q) {
            q -= 1;
        }
        while below(&mut uniform, rng, q + 1) {
            q += 1;
            if q > limit {
                return u64::MAX;
            }
        }
        q
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
        gamma_hat(self.gamma_constants(), a)
    }

    /// (σ²/t, 1/(2σ²)) as f64, the constants of [`gamma_hat`].
    #[inline(always)]
    fn gamma_constants(&self) -> (f64, f64) {
        (
            f64::from_bits(self.sigma_sq_over_t),
            f64::from_bits(self.half_inv_sigma_sq),
        )
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

/// The one-logarithm decision of [`DiscreteGaussian::magnitude_by_inversion`] for the scale
/// `t` = τ, the first word `u` and `ln_y` = `fast_math::ln` of its grid point: (q, whether q is
/// certain).
#[inline(always)]
fn one_log_decision(t: f64, u: u64, ln_y: f64) -> (u64, bool) {
    const TWO_M51: f64 = 1.0 / 2_251_799_813_685_248.0;
    const REL: f64 = 1.0 / 70_368_744_177_664.0; // 2^-46
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let y = fast_math::grid_point(u);
    let l = -t * ln_y;
    let eta = t * (TWO_M51 / y) + l * REL;
    let k = (l + eta).floor();
    let decided = (u >= INVERSION_MIN_WORD) & ((l - eta).max(0.0) >= k);
    // When decided, 0 ≤ k < τ·17 < 2^29 is an integer, so its bits after adding 2^52 are k.
    let k_int = (k + TWO_52).to_bits().wrapping_sub(TWO_52.to_bits());
    (k_int, decided)
}

/// [`one_log_decision`] for a batch of first words (vectorised).
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2+fma", "x86_64+avx2"))]
fn magnitudes_fast(t: f64, words: &[u64], magnitudes: &mut [u64], decided: &mut [bool]) {
    const FMA: bool = multiversion::target::selected_target!().supports_feature_str("fma");
    for ((&u, k), d) in words.iter().zip(magnitudes).zip(decided) {
        let ln_y = fast_math::ln_with::<FMA>(fast_math::grid_point(u));
        (*k, *d) = one_log_decision(t, u, ln_y);
    }
}

/// Q·B + R for B = 2^`block_bits`, or `u64::MAX` (rejected by the callers) past i64::MAX.
#[inline(always)]
fn join_blocks(block_bits: u32, blocks: u64, low: u64) -> u64 {
    if blocks <= (i64::MAX as u64) >> block_bits {
        (blocks << block_bits) | low
    } else {
        u64::MAX
    }
}

/// A low-part word whose top 32 bits are below this decides "keep" (see
/// [`DiscreteGaussian::low_part`]).
const LOW_PART_KEEP_BELOW: u64 = (1 << 32) - (1 << 10);

/// [`DiscreteGaussian::low_part_fast`] and the join for a batch (vectorised): where the word
/// decides "keep", `magnitudes[i]` becomes Q·B + R and `kept[i]` is set; elsewhere both are
/// left for the exact path (`magnitudes[i]` still Q).
#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn join_low_parts_fast(block_bits: u32, words: &[u64], magnitudes: &mut [u64], kept: &mut [bool]) {
    let low_mask = (1u64 << block_bits) - 1;
    for ((&w, k), ok) in words.iter().zip(magnitudes).zip(kept) {
        let keep = (w >> 32) < LOW_PART_KEEP_BELOW;
        let joined = join_blocks(block_bits, *k, w & low_mask);
        *k = if keep { joined } else { *k };
        *ok = keep;
    }
}

/// The f64 estimate of the acceptance exponent for |y| = `a` ≤ i64::MAX, from
/// `(σ²/t, 1/(2σ²))` (error analysis at [`DiscreteGaussian::accept`]).
#[inline(always)]
fn gamma_hat((sigma_sq_over_t, half_inv_sigma_sq): (f64, f64), a: u64) -> f64 {
    // a ≤ i64::MAX (the proposal is an i64): the conversion through i64 is the same value.
    let x = a as i64 as f64 - sigma_sq_over_t;
    x * x * half_inv_sigma_sq
}

/// Signed proposals of a batch (vectorised): bit i of `signs` is the sign of magnitude i;
/// `keep[i]` is false for a negative zero (so 0 is not counted twice) and for a magnitude past
/// i64::MAX, whose value and γ̂ are then meaningless and must be dropped by the caller.
/// (AVX-512DQ converts eight i64 to f64 in one instruction; with AVX-512F alone the compiler
/// converts lane by lane.)
#[multiversion(targets("x86_64+avx512f+avx512dq", "x86_64+avx512f", "x86_64+avx2"))]
fn propose(
    constants: (f64, f64),
    signs: u64,
    magnitudes: &[u64; BATCH],
    proposals: &mut [i64; BATCH],
    keep: &mut [bool; BATCH],
    gammas: &mut [f64; BATCH],
) {
    for i in 0..BATCH {
        let magnitude = magnitudes[i];
        let negative = (signs >> i) & 1 == 1;
        let value = magnitude as i64;
        keep[i] = !(negative && magnitude == 0) && magnitude <= i64::MAX as u64;
        proposals[i] = if negative {
            value.wrapping_neg()
        } else {
            value
        };
        gammas[i] = gamma_hat(constants, magnitude);
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

/// Whether every flag is set (a vectorised reduction, so the common all-decided batch skips
/// the per-lane branches).
#[inline(always)]
fn all_set(flags: &[bool; BATCH]) -> bool {
    flags.iter().fold(true, |all, &f| all & f)
}

/// Writes the accepted proposals (`keep[i] & below[i]`) to the front of `out` in order and
/// returns how many. Each proposal is stored at the next free slot and the count advanced by
/// 0 or 1: no data-dependent branch, since each decision is a coin flip.
#[inline(always)]
fn compact(
    proposals: &[i64; BATCH],
    keep: &[bool; BATCH],
    below: &[bool; BATCH],
    out: &mut [i64; BATCH],
) -> usize {
    let mut kept = 0;
    for i in 0..BATCH {
        // kept ≤ i < BATCH here.
        out[kept] = proposals[i];
        kept += usize::from(keep[i] & below[i]);
    }
    kept
}

/// Draws of a [`DiscreteGaussian`] from one keystream across calls ([`DiscreteGaussian::stream`]).
/// Its buffered words and spare draws are secret (they are, or decide, noise): wiped on drop.
pub struct GaussianStream<'s> {
    sampler: &'s DiscreteGaussian,
    rng: AesCtrRng,
    /// Accepted draws not handed out yet: `spare[..spare_len]`.
    spare: [i64; BATCH],
    spare_len: usize,
}

impl GaussianStream<'_> {
    /// Fills `out` with independent draws (continuing the stream).
    pub fn fill(&mut self, out: &mut [i64]) {
        self.fill_with(out, FastPath::On);
    }

    fn fill_with(&mut self, out: &mut [i64], fast: FastPath) {
        let from_spare = self.spare_len.min(out.len());
        out[..from_spare].copy_from_slice(&self.spare[..from_spare]);
        self.spare.copy_within(from_spare..self.spare_len, 0);
        self.spare_len -= from_spare;
        if from_spare < out.len() {
            self.sampler.fill_batched(
                &mut self.rng,
                &mut out[from_spare..],
                fast,
                &mut self.spare,
                &mut self.spare_len,
            );
        }
    }
}

impl Drop for GaussianStream<'_> {
    fn drop(&mut self) {
        self.spare.zeroize();
    }
}

impl std::fmt::Debug for GaussianStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GaussianStream")
            .field("sampler", self.sampler)
            .finish_non_exhaustive()
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
