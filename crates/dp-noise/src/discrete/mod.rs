//! Exact integer noise: the discrete Gaussian and the discrete Laplace on ℤ.
//!
//! DCA clients add noise in integer units of the fixed-point grid, so shares cancel bit-exactly
//! and no floating-point artefact (Mironov 2012) can leak the input through low-order bits.
//!
//! # Algorithms (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential Privacy")
//! * Alg. 1, Bernoulli(exp(−γ)) for rational γ: one Bernoulli(e^{−1}) per whole unit of γ
//!   (stopping at the first failure) and the series method for the fractional part f: count
//!   K = 1, 2, … while Bernoulli(f/K) succeeds, output 1 iff K ends odd.
//! * Alg. 2, discrete Laplace Lap_ℤ(t/s): X = U + t·V with U uniform on {0..t−1} kept with
//!   probability exp(−U/t) and V geometric (a run of Bernoulli(e^{−1}) successes), then
//!   Y = ±⌊X/s⌋ with −0 rejected.
//! * Alg. 3, discrete Gaussian N_ℤ(0, σ²): propose Y ~ Lap_ℤ(t), t = ⌊σ⌋ + 1, accept with
//!   probability exp(−(|Y| − σ²/t)²/(2σ²)). The proposal is not drawn by Alg. 2 but as a sign
//!   bit and a geometric magnitude K = Q·2^s + R (`gaussian.rs`): Q = ⌊−(t/2^s)·ln U⌋ of one
//!   uniform U by inversion, R on {0..2^s − 1} by rejection from s uniform bits (s = 0 unless
//!   t ≥ 2^24). Same law, ≈ 1–3 words instead of ≈ 7 Bernoulli decisions.
//!
//! Every accept/reject decision is exact. Uniform integers below a bound use rejection
//! (Lemire's multiply-shift, no modulo bias) and Bernoulli(n/d) is "uniform below d < n". In
//! the discrete Gaussian every decision is about a uniform real U revealed 64 bits at a time:
//! its first word settles it against f64 values with a proven error margin (`fast_math.rs`
//! computes exp and ln with stated bounds, `lazy_exp.rs` and `gaussian.rs` carry the margins),
//! in all but ≈ 2^−15 of cases; otherwise the same U is compared with exp(−γ) exactly (rational
//! Taylor bounds with Lagrange remainder, big integers). Both branches answer the same question
//! about the same U, so the result is exact; the f64 arithmetic only decides how often the slow
//! branch runs. `DiscreteGaussian::fill` works on batches of 64 proposals (vectorised exp/ln,
//! no data-dependent branch in the common case) and draws its random words from an
//! AES-128-CTR keystream keyed with 16 bytes of the caller's CSPRNG (`aes_rng.rs`). The discrete
//! Laplace keeps the integer-only CKS Alg. 1 and, for the wide exponent, a lazy comparison with
//! the exact rational (512-bit fixed-width arithmetic, see `wide.rs`). The f64 parameters are
//! converted exactly: an f64 is m·2^e, a dyadic rational.
//!
//! # Supported range and the one approximation
//! σ ∈ [2^−8, 2^52] units for [`DiscreteGaussian`], scale ∈ [2^−32, 2^52] units for
//! [`DiscreteLaplace`]. Outputs are `i64`: a proposal with |Y| > i64::MAX is rejected, which
//! conditions the output on fitting in an i64. For σ ≤ 2^52 the discarded mass is below
//! exp(−2^10), far below anything measurable; otherwise the samplers are exact.
//!
//! # Cost
//! Discrete Laplace with integer scale t (s = 1): a U is kept with probability
//! E[exp(−U/t)] ≈ 1 − e^{−1} ≈ 0.63, so ≈ 1.6 rounds of one uniform draw plus the series
//! trials for exp(−U/t); the geometric V is ≈ 1.6 Bernoulli(e^{−1}) trials of ≈ 1.7 draws
//! each; plus one sign draw. The discrete Gaussian makes ≈ 1.32 proposals per sample (the
//! acceptance rate tends to e^{−1/2}·√(π/2) ≈ 0.76 for large σ), each one word and one ln for
//! Q, 1/64 of a word for the sign, one word and one exp for the acceptance, and for t ≥ 2^24 one
//! more word for R. Measured rates: docs/src/results/noise-samplers.md (`cargo bench --bench peers
//! -- noise SIGMA COUNT`, `scripts/bench-sampler-vs.sh`).
//!
//! # Sums of discrete Gaussians (Kairouz, Liu & Steinke 2021)
//! In DCA, n honest clients each add N_ℤ(0, σ²); the released noise is their sum, which is
//! *not* exactly N_ℤ(0, nσ²). "The Distributed Discrete Gaussian Mechanism for Federated
//! Learning with Secure Aggregation" (ICML 2021) bounds the gap: with
//! τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)), the sum mechanism on integer vectors of dimension
//! d and ℓ2-sensitivity Δ satisfies ½ε̃²-zCDP with
//! ε̃ = min( sqrt(Δ²/(nσ²) + 2τd), Δ/(√n·σ) + τ√d )
//! (their Prop. 14 in zCDP form, for σ ≥ 1/2; see [`distributed_zcdp_rho`] for the derivation
//! and why 2τd), i.e. the continuous-Gaussian value Δ/(√n σ) plus a term
//! that vanishes with τ. [`sum_closeness_tau`] and [`distributed_zcdp_rho`] compute these so a
//! release can report them. For σ ≥ 4 units τ < 10·n·e^{−157} — far below 1e−60.

mod aes_rng;
mod bernoulli;
mod fast_math;
mod gaussian;
mod laplace;
mod lazy_exp;
mod sum_bound;
mod wide;

#[cfg(test)]
mod exact_renyi_tests;

pub use gaussian::{DiscreteGaussian, GaussianStream, MIN_GAUSSIAN_SIGMA_UNITS};
pub use laplace::{DiscreteLaplace, MIN_LAPLACE_SCALE_UNITS};
pub use sum_bound::{distributed_zcdp_rho, sum_closeness_tau};

/// Largest supported σ (Gaussian) or scale (Laplace), in units: 2^52.
pub const MAX_SCALE_UNITS: f64 = 4_503_599_627_370_496.0;

/// Splits a positive finite f64 into (m, e) with x = m·2^e and m odd.
fn dyadic(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let biased_exp = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased_exp == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased_exp - 1075)
    };
    let zeros = m.trailing_zeros().min(63);
    (m >> zeros, e + zeros as i32)
}

#[cfg(test)]
mod tests;
