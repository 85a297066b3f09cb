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
