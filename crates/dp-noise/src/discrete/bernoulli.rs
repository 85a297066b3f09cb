//! Exact uniform integers and Bernoulli trials with rational or exp(−rational) success
//! probabilities (Canonne, Kamath & Steinke 2020, Alg. 1). No floating point anywhere.

use rand_core::RngCore;

use super::wide::U512;

/// Uniform on {0, …, n − 1} for n ≥ 1 (n = 0 is treated as 1), without modulo bias.
///
/// Lemire's multiply-shift: the high word of `x·n` is uniform over {0..n−1} once the low word
/// avoids the first (2^64 mod n) values; those are rejected. Expected draws < 1 + n/2^64.
pub(crate) fn uniform_below_u64<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let n = n.max(1);
    let mut product = u128::from(rng.next_u64()) * u128::from(n);
    if (product as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (product as u64) < threshold {
            product = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (product >> 64) as u64
}

/// Uniform on {0, …, n − 1} for n ≥ 1 (n = 0 is treated as 1): masked rejection above 2^64.
pub(crate) fn uniform_below_u128<R: RngCore + ?Sized>(rng: &mut R, n: u128) -> u128 {
    if let Ok(small) = u64::try_from(n) {
        return u128::from(uniform_below_u64(rng, small));
    }
    // n > 2^64: draw bit_length(n − 1) bits until below n; expected draws < 2.
    let mask = u128::MAX >> (n - 1).leading_zeros();
    loop {
        let x = ((u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())) & mask;
        if x < n {
            return x;
        }
    }
}

/// Bernoulli(num/den) for num ≤ den, den ≥ 1.
pub(crate) fn bernoulli_ratio<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u128) -> bool {
    uniform_below_u128(rng, den) < num
}

/// Bernoulli(exp(−1)) by the series method (CKS Alg. 1 with γ = 1): count K = 2, 3, … while
/// Bernoulli(1/K) succeeds; the result is 1 iff the final K is odd, which has probability
/// Σ_k (−1)^k/k! = e^{−1}. Expected uniform draws: e − 1 ≈ 1.72.
pub(crate) fn bernoulli_exp_minus_one<R: RngCore + ?Sized>(rng: &mut R) -> bool {
    let mut k: u64 = 2;
    while uniform_below_u64(rng, k) == 0 {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(exp(−num/den)) for any num ≥ 0 and den ≥ 1 (den = 0 is treated as 1).
///
/// Each whole unit of num/den costs one Bernoulli(e^{−1}) that must succeed
/// (stopping at the first failure, so at most ~1.6 of them in expectation), and the fractional
/// part f ∈ [0, 1) is handled by the series method: K = 1, 2, … while Bernoulli(f/K) succeeds,
/// 1 iff the final K is odd (probability Σ_k (−1)^k f^k/k! = e^{−f}); expected trials e^f ≤ e.
///
/// den < 2^64 keeps den·K below 2^128 for every K a run can reach (K ≥ 2^64 would need 2^64
/// consecutive successes; the saturating product only guards against a panic).
pub(crate) fn bernoulli_exp_ratio<R: RngCore + ?Sized>(rng: &mut R, num: u128, den: u64) -> bool {
    let den = u128::from(den.max(1));
    let mut num = num;
    while num >= den {
        if !bernoulli_exp_minus_one(rng) {
            return false;
        }
        num -= den;
    }
    let mut k: u128 = 1;
    while bernoulli_ratio(rng, num, den.saturating_mul(k)) {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(num/den) for wide num < den < 2^448, deciding from as few random words as possible.
///
/// A uniform x ∈ [0, 1) is drawn 64 bits at a time and compared with num/den: with the next word
/// w, x·den lies in [w·den, (w + 1)·den)/2^64, so x < num/den is certain once
/// (w + 1)·den ≤ num·2^64 and impossible once w·den ≥ num·2^64. Otherwise (probability 2^−64)
/// the same question recurs with num ← num·2^64 − w·den < den.
pub(crate) fn bernoulli_ratio_wide<R: RngCore + ?Sized>(rng: &mut R, num: U512, den: U512) -> bool {
    let mut num = num;
    loop {
        let w = rng.next_u64();
        let low = den.mul_u64(w);
        let target = num.shl_word();
        if low >= target {
            return false;
        }
        let high = low.add(den);
        if high <= target {
            return true;
        }
        num = target.sub(low);
    }
}

/// Bernoulli(exp(−num/den)) for wide num and den, den < 2^383 (so den·K < 2^447 for any
/// 64-bit K). Same method as [`bernoulli_exp_ratio`].
pub(crate) fn bernoulli_exp_wide<R: RngCore + ?Sized>(rng: &mut R, num: U512, den: U512) -> bool {
    let mut num = num;
    while num >= den {
        if !bernoulli_exp_minus_one(rng) {
            return false;
        }
        num = num.sub(den);
    }
    let mut k: u64 = 1;
    while bernoulli_ratio_wide(rng, num, den.mul_u64(k)) {
        k = k.saturating_add(1);
    }
    k % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stats::{ALPHA, chi_square_p_value, hoeffding_radius};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// A range where `x % n` would be badly biased: n = 3·2^62. Modulo reduction of a 64-bit
    /// word would give the thirds [0, 2^62), [2^62, 2^63), [2^63, 3·2^62) probabilities
    /// 1/2, 1/4, 1/4 instead of 1/3 each.
    #[test]
    fn uniform_below_has_no_modulo_bias() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let n = 3u64 << 62;
        let mut counts = [0u64; 3];
        for _ in 0..30_000 {
            let x = uniform_below_u64(&mut rng, n);
            assert!(x < n);
            counts[(x >> 62) as usize] += 1;
        }
        let (_, p) = chi_square_p_value(&counts, &[1.0 / 3.0; 3]);
        assert!(p > ALPHA, "{counts:?}");
    }

    #[test]
    fn uniform_below_small_and_wide_ranges_are_uniform() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let mut counts = [0u64; 7];
        for _ in 0..70_000 {
            counts[uniform_below_u64(&mut rng, 7) as usize] += 1;
        }
        let (_, p) = chi_square_p_value(&counts, &[1.0 / 7.0; 7]);
        assert!(p > ALPHA, "{counts:?}");
        // A 128-bit bound n = 5·2^100: fifths of the range must be equally likely.
        let n: u128 = 5 << 100;
        let mut counts = [0u64; 5];
        for _ in 0..50_000 {
            let x = uniform_below_u128(&mut rng, n);
            assert!(x < n);
            counts[(x >> 100) as usize] += 1;
        }
        let (_, p) = chi_square_p_value(&counts, &[0.2; 5]);
        assert!(p > ALPHA, "{counts:?}");
        assert_eq!(uniform_below_u64(&mut rng, 1), 0);
        assert_eq!(uniform_below_u128(&mut rng, 1), 0);
    }

    fn frequency(n: usize, mut trial: impl FnMut() -> bool) -> f64 {
        (0..n).filter(|_| trial()).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_exp_ratio_has_probability_exp_minus_gamma() {
        let mut rng = ChaCha20Rng::seed_from_u64(13);
        let n = 200_000;
        let radius = hoeffding_radius(n);
        for (num, den) in [
            (0u128, 1u64),
            (3, 10),
            (1, 1),
            (5, 2),
            (7, 1),
            (999_999, 1_000_000),
        ] {
            let want = (-(num as f64) / den as f64).exp();
            let got = frequency(n, || bernoulli_exp_ratio(&mut rng, num, den));
            assert!((got - want).abs() < radius, "{num}/{den}: {got} vs {want}");
        }
        let got = frequency(n, || bernoulli_exp_minus_one(&mut rng));
        assert!((got - (-1f64).exp()).abs() < radius);
    }

    #[test]
    fn wide_bernoullis_match_their_probabilities() {
        let mut rng = ChaCha20Rng::seed_from_u64(14);
        let n = 200_000;
        let radius = hoeffding_radius(n);
        // Ratios of numbers far beyond 128 bits: (k·2^300 + 12345)/(m·2^300).
        let big = |k: u64| {
            let mut x = U512::from_u128(u128::from(k));
            for _ in 0..5 {
                x = x.shl_word();
            }
            x.shl_word().add(U512::from_u128(12_345)) // k·2^384 + 12345
        };
        for (k, m) in [(1u64, 3u64), (2, 3), (5, 7), (0, 1)] {
            let (num, den) = (big(k), big(m));
            let want = k as f64 / m as f64;
            let got = frequency(n, || bernoulli_ratio_wide(&mut rng, num, den));
            assert!((got - want).abs() < radius, "ratio {k}/{m}: {got}");
            let want = (-want).exp();
            let got = frequency(n, || bernoulli_exp_wide(&mut rng, num, den));
            assert!(
                (got - want).abs() < radius,
                "exp(-{k}/{m}): {got} vs {want}"
            );
        }
        // γ = 5/2 with an integer part.
        let (num, den) = (U512::from_u128(5 << 100), U512::from_u128(2 << 100));
        let got = frequency(n, || bernoulli_exp_wide(&mut rng, num, den));
        assert!((got - (-2.5f64).exp()).abs() < radius);
    }

    /// Replays fixed words, to drive the lazy comparison down a chosen path.
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

    /// num/den = (2^127 + 1)/2^128 = 1/2 + 2^−128. A first word of exactly 2^63 leaves the
    /// decision open (x ∈ [1/2, 1/2 + 2^−64)); the second word then decides: x < 1/2 + 2^−128
    /// iff it is 0.
    #[test]
    fn wide_ratio_refines_past_the_first_word() {
        let den = U512::from_u128(1).shl_word().shl_word(); // 2^128
        let num = U512::from_u128((1u128 << 127) + 1);
        assert!(bernoulli_ratio_wide(
            &mut Scripted(vec![1 << 63, 0]),
            num,
            den
        ));
        assert!(!bernoulli_ratio_wide(
            &mut Scripted(vec![1 << 63, 1]),
            num,
            den
        ));
        assert!(bernoulli_ratio_wide(
            &mut Scripted(vec![(1 << 63) - 1]),
            num,
            den
        ));
        assert!(!bernoulli_ratio_wide(
            &mut Scripted(vec![(1 << 63) + 1]),
            num,
            den
        ));
    }
}
