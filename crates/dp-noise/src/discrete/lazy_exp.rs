//! Exact Bernoulli(exp(−γ)) that usually decides from one random word and one
//! `fast_math::exp_neg`.
//!
//! # The method
//! Bernoulli(p) is the event U < p for a uniform real U ∈ [0, 1). U is revealed 64 bits at a
//! time. With the first word u, U ∈ [u, u + 1)·2^−64 ⊂ [v, v + 2^−52) with v = ⌊u/2^12⌋·2^−52
//! (exact in f64). Given p̂ with p ∈ p̂·[1 − 2^−39, 1 + 2^−39] ([`one_word_test`]):
//! * v + 2^−52 ≤ fl(p̂·(1 − 2^−32))  ⇒  U < p̂·(1 − 2^−32)·(1 + 2^−53) < p̂·(1 − 2^−39) ≤ p: the
//!   event holds (v + 2^−52 is exact: a multiple of 2^−52 no larger than 1);
//! * v ≥ fl(p̂·(1 + 2^−32))  ⇒  U ≥ p̂·(1 + 2^−32)·(1 − 2^−53) > p̂·(1 + 2^−39) ≥ p: it does not;
//! * otherwise (probability ≈ 2^−31·p) the same U — its first word kept, further words drawn —
//!   is compared with exp(−γ) *exactly*, by [`exact_less_than_exp`].
//!
//! Every branch returns the truth value of U < exp(−γ) for one and the same uniform U, so the
//! result is Bernoulli(exp(−γ)) exactly, whatever the quality of p̂ — as long as the enclosure
//! holds. The f64 arithmetic only decides how often the exact comparison runs.
//!
//! # Why p ∈ p̂·[1 − 2^−39, 1 + 2^−39]
//! The caller passes γ̂ with |γ̂ − γ| ≤ 2^−40 (see each caller for its error analysis; they are
//! all a few rounding errors of relative size 2^−53 on a γ ≤ 64). p̂ = `fast_math::exp_neg`(γ̂)
//! is within 2^−46 relative of exp(−γ̂) (proven in `fast_math.rs`; the test
//! `exp_neg_is_accurate` checks 2^−48 against exact rational bounds). So
//! p ∈ p̂·[e^{−2^−40}(1 − 2^−46), e^{2^−40}(1 + 2^−46)] ⊂ p̂·[1 − 2^−39, 1 + 2^−39]. The 2^7-fold
//! slack between 2^−39 and the test's 2^−32 is deliberate.
//!
//! Large γ (γ̂ > [`FAST_GAMMA_LIMIT`]) skips the fast path: exp(−γ) < 2^−92 there, so a one-word
//! test would almost always decide "false" anyway; [`bernoulli_exp_wide`] decides exactly.

use num_bigint::{BigInt, BigUint};
use num_traits::ToPrimitive;
use rand_core::RngCore;

use super::bernoulli::bernoulli_exp_wide;
use super::fast_math::{exp_neg, grid_point};
use super::wide::U512;

/// Above this γ̂ the one-word fast path is not attempted.
pub(crate) const FAST_GAMMA_LIMIT: f64 = 64.0;

/// Relative half-width of the one-word test's enclosure of exp(−γ) (see the module docs).
const ENCLOSURE: f64 = 1.0 / 4_294_967_296.0; // 2^-32

/// Whether the one-word fast path may decide (tests switch it off to drive every decision
/// through the exact comparison).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastPath {
    On,
    #[cfg(test)]
    Off,
}

/// Bernoulli(exp(−γ)) for γ = num/den ≥ 0 given by `exact` (called only when needed), with
/// `gamma_hat` within 2^−40 of γ whenever `gamma_hat` ≤ [`FAST_GAMMA_LIMIT`]. See the module
/// docs.
pub(crate) fn bernoulli_exp<R: RngCore + ?Sized>(
    rng: &mut R,
    gamma_hat: f64,
    exact: impl FnOnce() -> (U512, U512),
    fast: FastPath,
) -> bool {
    // NaN fails the comparison too and takes the exact path.
    let in_fast_range = gamma_hat <= FAST_GAMMA_LIMIT;
    if !in_fast_range {
        let (num, den) = exact();
        return bernoulli_exp_wide(rng, num, den);
    }
    let u = rng.next_u64();
    decide_exp(rng, u, exp_neg(gamma_hat), exact, fast)
}

/// The decision of [`bernoulli_exp`] for a first word `u` already drawn and
/// p̂ = [`exp_neg`](γ̂) already computed (the batched sampler computes many at once), for
/// γ̂ ≤ [`FAST_GAMMA_LIMIT`]. `fast_math.rs` bounds p̂'s error by 2^−46 relative, inside the
/// 2^−50 … 2^−39 budget of the module docs.
#[inline]
pub(crate) fn decide_exp<R: RngCore + ?Sized>(
    rng: &mut R,
    u: u64,
    p_hat: f64,
    exact: impl FnOnce() -> (U512, U512),
    fast: FastPath,
) -> bool {
    if fast == FastPath::On {
        let (below, above) = one_word_test(u, p_hat);
        if below {
            return true;
        }
        if above {
            return false;
        }
    }
    let (num, den) = exact();
    exact_less_than_exp(rng, u, &num, &den)
}

/// The one-word test of [`decide_exp`]: (U certainly below p, U certainly not below p) for the
/// uniform U whose first word is `u`, given p̂ within 2^−39 relative of p (module docs).
#[inline(always)]
pub(crate) fn one_word_test(u: u64, p_hat: f64) -> (bool, bool) {
    const TWO_M52: f64 = 1.0 / 4_503_599_627_370_496.0;
    let v = grid_point(u);
    (
        v + TWO_M52 <= p_hat * (1.0 - ENCLOSURE),
        v >= p_hat * (1.0 + ENCLOSURE),
    )
}

/// U < exp(−num/den), exactly, for the uniform U whose first 64 bits are `first_word`; further
/// bits are drawn from `rng` until the comparison is decided.
pub(crate) fn exact_less_than_exp<R: RngCore + ?Sized>(
    rng: &mut R,
    first_word: u64,
    num: &U512,
    den: &U512,
) -> bool {
    LazyUniform::new(first_word).less_than_exp(rng, num, den)
}

/// A uniform real U ∈ [0, 1) revealed 64 bits at a time: U = Σ_i words[i]·2^(−64(i+1)) plus
/// the bits not drawn yet. Several exact comparisons of *the same* U (the inversion in
/// `gaussian.rs`) share the words revealed so far.
pub(crate) struct LazyUniform {
    words: Vec<u64>,
}

impl LazyUniform {
    pub(crate) fn new(first_word: u64) -> Self {
        LazyUniform {
            words: vec![first_word],
        }
    }

    /// Word `i` of U, drawn from `rng` (with every word before it) if not revealed yet.
    pub(crate) fn word<R: RngCore + ?Sized>(&mut self, rng: &mut R, i: usize) -> u64 {
        while self.words.len() <= i {
            self.words.push(rng.next_u64());
        }
        self.words[i]
    }

    /// U < exp(−num/den), exactly.
    ///
    /// Taylor's theorem with the Lagrange remainder gives, for x ≥ 0 and every m,
    /// exp(−x) − S_m(x) = (−1)^{m+1} e^{−ξ} x^{m+1}/(m+1)! with ξ ∈ [0, x], S_m the partial sum
    /// of Σ (−x)^k/k!: so exp(−x) lies between S_m and S_{m+1}, exact rationals. U is known to
    /// lie in [A/2^b, (A + 1)/2^b); when that interval is below the lower or above the upper of
    /// the two bounds the answer is certain; otherwise the bracket is refined with more terms
    /// while it is wider than a quarter of U's interval, and then 64 more bits of U are used.
    /// The bracket shrinks like x^m/m! and the interval like 2^−b, and U ≠ exp(−x) almost
    /// surely, so this ends with probability 1 (after about one round).
    pub(crate) fn less_than_exp<R: RngCore + ?Sized>(
        &mut self,
        rng: &mut R,
        num: &U512,
        den: &U512,
    ) -> bool {
        let x_num = to_big(num);
        let x_den = to_big(den);
        let mut a = BigUint::from(self.words[0]);
        let mut used: usize = 1;
        let mut bits: u64 = 64;
        // Start past the peak of x^k/k! (x ≤ 64 on the fast path; more if called with larger x).
        let ratio_ceiling = (&x_num / &x_den) + 1u32;
        let mut terms: u64 = 2 * ratio_ceiling.to_u64().unwrap_or(u64::MAX / 4).min(1 << 20) + 16;
        loop {
            let (s_m, s_next, scale) = partial_sums(&x_num, &x_den, terms);
            let (low, high) = if s_m <= s_next {
                (s_m, s_next)
            } else {
                (s_next, s_m)
            };
            // U < (A+1)/2^b ≤ low/scale  ⇔  (A+1)·scale ≤ low·2^b.
            let upper_u = BigInt::from(&a + 1u32) * BigInt::from(scale.clone());
            if upper_u <= low.clone() << bits {
                return true;
            }
            // U ≥ A/2^b ≥ high/scale  ⇔  A·scale ≥ high·2^b.
            let scale_copy = scale.clone();
            let lower_u = BigInt::from(a.clone()) * BigInt::from(scale);
            if lower_u >= high.clone() << bits {
                return false;
            }
            // Undecided. Refine the bracket while it is wider than a quarter of U's interval;
            // only then use 64 more bits of U.
            let bracket = (high - low) << bits;
            if bracket * 4 >= BigInt::from(scale_copy) {
                terms += 16;
                continue;
            }
            a = (a << 64u32) + BigUint::from(self.word(rng, used));
            used += 1;
            bits += 64;
        }
    }
}

/// (S_m·Q, S_{m+1}·Q, Q) for x = n/d and Q = d^{m+1}·(m+1)!: integer numerators of the partial
/// sums S_m = Σ_{k ≤ m} (−x)^k/k! over a common denominator.
fn partial_sums(n: &BigUint, d: &BigUint, m: u64) -> (BigInt, BigInt, BigUint) {
    // Term k over the denominator d^{m+1}(m+1)!: n^k d^{m+1−k} (m+1)!/k!. Built from k = m+1
    // downwards: t_{m+1} = n^{m+1}; t_{k} = t_{k+1}·d·(k+1)/n would divide, so build upwards
    // instead with the factor (m+1)!/k! = Π_{j=k+1}^{m+1} j accumulated from the top.
    let top = m + 1;
    let mut sums = BigInt::from(0u32);
    let mut last = BigInt::from(0u32);
    // Precompute n^k for k ≤ top and d^j for j ≤ top.
    let mut n_pow = Vec::with_capacity(top as usize + 1);
    let mut d_pow = Vec::with_capacity(top as usize + 1);
    n_pow.push(BigUint::from(1u32));
    d_pow.push(BigUint::from(1u32));
    for k in 1..=top as usize {
        n_pow.push(&n_pow[k - 1] * n);
        d_pow.push(&d_pow[k - 1] * d);
    }
    let mut falling = BigUint::from(1u32); // (m+1)!/k!, for k from top down
    for k in (0..=top).rev() {
        let term = &n_pow[k as usize] * &d_pow[(top - k) as usize] * &falling;
        let signed = if k % 2 == 0 {
            BigInt::from(term)
        } else {
            -BigInt::from(term)
        };
        if k == top {
            last = signed;
        } else {
            sums += signed;
        }
        falling *= k.max(1);
    }
    let q = &d_pow[top as usize] * factorial(top);
    let with_last = &sums + &last;
    (sums, with_last, q)
}

fn factorial(n: u64) -> BigUint {
    (1..=n).fold(BigUint::from(1u32), |f, k| f * k)
}

fn to_big(x: &U512) -> BigUint {
    BigUint::from_slice(
        &x.limbs()
            .iter()
            .flat_map(|&l| [l as u32, (l >> 32) as u32])
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discrete::fast_math;
    use crate::test_stats::hoeffding_radius;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn exact_bounds(num: u128, den: u128) -> (BigInt, BigInt, BigUint) {
        // exp(−num/den) to far below 2^−128.
        let (a, b, q) = partial_sums(&BigUint::from(num), &BigUint::from(den), 400);
        if a <= b { (a, b, q) } else { (b, a, q) }
    }

    /// Exact bounds (low, high, Q) on exp(−x·(1 ± 2^−b)) for the f64 x > 0: x·(1 ± 2^−b) =
    /// m·(2^b ± 1)·2^(e − b) exactly.
    fn exp_bounds_scaled(x: f64, b: i32, plus: bool) -> (BigInt, BigInt, BigUint) {
        let (m, e) = crate::discrete::dyadic(x);
        let factor = if plus {
            (1u64 << b) + 1
        } else {
            (1u64 << b) - 1
        };
        let mut num = BigUint::from(m) * BigUint::from(factor);
        let mut den = BigUint::from(1u32);
        let shift = e - b;
        if shift >= 0 {
            num <<= shift as u32;
        } else {
            den <<= (-shift) as u32;
        }
        let terms = 2 * (x as u64) + 120;
        let (a, c, q) = partial_sums(&num, &den, terms);
        if a <= c { (a, c, q) } else { (c, a, q) }
    }

    /// `fast_math::ln` on the inversion's arguments (y = v·2^−53 ∈ [2^−24, 1)) is within
    /// 2^−50 relative of ln y (the proof there claims 2^−48): with x = −ln(y) as computed,
    /// y lies between exp(−x(1 + 2^−50)) and exp(−x(1 − 2^−50)), exactly.
    #[test]
    fn ln_is_accurate() {
        const TWO_M53: f64 = 1.0 / 9_007_199_254_740_992.0;
        let mut v: u64 = 1 << 29;
        let mut checked = 0;
        while v < (1u64 << 53) - 1 {
            for v in [v, v + 1, v | 0x5555_5555, (1 << 53) - 1 - v % (1 << 40)] {
                let y = v as f64 * TWO_M53;
                // The plain and the fused-multiply-add polynomial (the batch paths' on CPUs
                // with FMA; `mul_add` is correctly rounded with or without the instruction).
                for x in [-fast_math::ln(y), -fast_math::ln_with::<true>(y)] {
                    if x == 0.0 {
                        continue;
                    }
                    let (_, high, q) = exp_bounds_scaled(x, 50, true);
                    assert!(BigInt::from(v) * BigInt::from(q) >= high << 53u32, "v {v}");
                    let (low, _, q) = exp_bounds_scaled(x, 50, false);
                    assert!(BigInt::from(v) * BigInt::from(q) <= low << 53u32, "v {v}");
                    checked += 1;
                }
            }
            v = v + v / 8 + 12_345;
        }
        assert!(checked > 600, "{checked}");
    }

    /// `fast_math::exp_neg` on γ ∈ [0, 64] is within 2^−48 relative of exp(−γ) (the proof
    /// there claims 2^−46): exact bounds on exp(−γ) bracket p̂·(1 ± 2^−48).
    #[test]
    fn exp_neg_is_accurate() {
        let den: u128 = 1 << 40;
        let mut checked = 0;
        for step in 0..1500u128 {
            let num = (step * (64 * den / 1500) + (step * 104_729 * 7919) % den).min(64 * den);
            let gamma = num as f64 / den as f64; // exact: num < 2^47
            let (low, high, q) = exact_bounds(num, den);
            // The plain and the fused-multiply-add polynomial, as in `ln_is_accurate`.
            for p in [
                fast_math::exp_neg(gamma),
                fast_math::exp_neg_with::<true>(gamma),
            ] {
                // p·(1 − 2^−48) ≤ low/q and p·(1 + 2^−48) ≥ high/q, with p = m·2^e exactly.
                let (m, e) = crate::discrete::dyadic(p);
                let scaled = |f: u64| {
                    let v = BigInt::from(m) * BigInt::from(f) * BigInt::from(q.clone());
                    // v·2^(e − 48) against bound: compare v·2^e with bound·2^48.
                    (v, e)
                };
                let (lo_v, e1) = scaled((1u64 << 48) - 1);
                let (hi_v, _) = scaled((1u64 << 48) + 1);
                let shift = 48 - e1; // compare v vs bound·2^(48 − e)
                assert!(shift >= 0);
                assert!(lo_v <= low.clone() << shift as u32, "γ {gamma}");
                assert!(hi_v >= high.clone() << shift as u32, "γ {gamma}");
                checked += 1;
            }
        }
        assert_eq!(checked, 3000);
    }

    /// Both paths — the fast one and the forced exact one — have frequency exp(−γ).
    #[test]
    fn fast_and_exact_paths_have_probability_exp_minus_gamma() {
        let mut rng = ChaCha20Rng::seed_from_u64(21);
        let n = 200_000;
        let radius = hoeffding_radius(n);
        for (num, den) in [
            (0u128, 1u128),
            (3, 10),
            (1, 1),
            (5, 2),
            (7, 1),
            (999_999, 1_000_000),
            (130, 2),
        ] {
            let gamma = num as f64 / den as f64;
            let want = (-gamma).exp();
            for fast in [FastPath::On, FastPath::Off] {
                let runs = if fast == FastPath::On { n } else { n / 10 };
                let hits = (0..runs)
                    .filter(|_| {
                        bernoulli_exp(
                            &mut rng,
                            gamma,
                            || (U512::from_u128(num), U512::from_u128(den)),
                            fast,
                        )
                    })
                    .count();
                let got = hits as f64 / runs as f64;
                let r = if fast == FastPath::On {
                    radius
                } else {
                    hoeffding_radius(runs)
                };
                assert!(
                    (got - want).abs() < r,
                    "γ {gamma} {fast:?}: {got} vs {want}"
                );
            }
        }
    }

    /// Replays fixed words.
    struct Scripted(Vec<u64>);

    impl RngCore for Scripted {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0.remove(0)
        }
        fn fill_bytes(&mut self, _: &mut [u8]) {
            unreachable!()
        }
    }

    /// The exact comparison with hand-checkable cases: exp(−0) = 1 (every U is below it), and
    /// exp(−1)·2^64 = 0x5e2d58d8b3bcdf1a + 0.72996… (computed with 80-digit decimals): the
    /// first word 0x5e2d58d8b3bcdf1a leaves it open until the next word decides.
    #[test]
    fn exact_comparison_on_scripted_words() {
        let zero = U512::from_u128(0);
        let one = U512::from_u128(1);
        assert!(exact_less_than_exp(
            &mut Scripted(vec![]),
            u64::MAX,
            &zero,
            &one
        ));
        let floor = 0x5e2d_58d8_b3bc_df1a_u64;
        assert!(exact_less_than_exp(
            &mut Scripted(vec![]),
            floor - 1,
            &one,
            &one
        ));
        assert!(!exact_less_than_exp(
            &mut Scripted(vec![]),
            floor + 1,
            &one,
            &one
        ));
        // With first word `floor`, a next word 0 puts U below the fraction 0.72996… of a unit,
        // u64::MAX above it.
        assert!(exact_less_than_exp(
            &mut Scripted(vec![0]),
            floor,
            &one,
            &one
        ));
        assert!(!exact_less_than_exp(
            &mut Scripted(vec![u64::MAX]),
            floor,
            &one,
            &one
        ));
    }
}
