//! Rényi-DP accounting for the subsampled Gaussian (DP-SGD style iterative learning).
//!
//! A mechanism M is (α, ε(α))-RDP (Mironov 2017) when D_α(M(D)‖M(D′)) ≤ ε(α) for all
//! neighbours D, D′. RDP at a fixed order composes by addition, so an iterative learner keeps one
//! running total per order of a grid ([`default_orders`], the grid of Google's dp_accounting)
//! and converts to (ε, δ) only when asked ([`epsilon_from_rdp`]).
//!
//! Per-step RDP ([`SubsampledGaussian::rdp`]):
//! * **Poisson sampling at rate q, continuous Gaussian of noise multiplier z = σ/C**
//!   (add/remove-one neighbours, sensitivity C): Mironov, Talwar & Zhang 2019 ("Rényi
//!   Differential Privacy of the Sampled Gaussian Mechanism"), Sec. 3.3: for integer α the exact
//!   binomial sum A_α = Σ_k C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2z²)), for fractional α their
//!   two-series formula with erfc terms; ε(α) = ln A_α/(α−1). q = 1 is the plain Gaussian α/(2z²).
//! * **Sampling a fixed-size batch of m out of n without replacement** (γ = m/n): Wang, Balle &
//!   Kasiviswanathan 2019 ("Subsampled Rényi DP and analytical moments accountant"), Thm 9, with
//!   **replace-one** neighbours (one record swapped for another: the batch size is public and
//!   fixed). The base mechanism's replace-one sensitivity is 2C, so its RDP is ε(j) = 2j/z²
//!   (continuous). The bound is for integer α; a fractional α is charged the bound at ⌈α⌉ (RDP is
//!   non-decreasing in α).
//! * **Distributed discrete Gaussian (DCA)**: the released noise is a sum of n honest clients'
//!   discrete Gaussians N_ℤ(0, σ_c²) in grid units, which is not a Gaussian. Its RDP comes from
//!   Kairouz, Liu & Steinke 2021, Thm 1 ([`crate::discrete::distributed_zcdp_rho`]): ρ-zCDP,
//!   i.e. ε(j) = jρ, with the ℓ2 sensitivity in units *after rounding* to the grid
//!   (C·2^f + √d/2 add/remove, 2C·2^f + √d replace-one: rounding moves each coordinate by ≤ ½).
//!   Mironov–Talwar–Zhang's exact formula is proven for the continuous Gaussian only, so the
//!   Poisson-subsampled discrete sum uses the general bound for any base mechanism of Zhu & Wang
//!   2019 ("Poisson Subsampled Rényi Differential Privacy", Thm 6) — the same first terms as the
//!   MTZ sum, the terms k ≥ 3 multiplied by 3 — and fixed-size sampling uses WBK with ε(j) = jρ.
//!   [`SubsampledGaussian::rdp`] on [`BaseNoise::DistributedDiscrete`] therefore charges
//!   slightly more than the same σ as a continuous Gaussian; [`DiscreteSum::adjustment`] states
//!   by how much.
//!
//! Conversion to (ε, δ): ε = min_α [ε(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1)] (Balle, Barthe,
//! Gaboardi, Hsu & Sato 2020, Thm 21; the same expression as Canonne, Kamath & Steinke 2020,
//! Prop. 12, and dp_accounting's `compute_epsilon`), which is never worse than Mironov's
//! ε(α) + ln(1/δ)/(α−1).
//!
//! [`RdpAccountant`] keeps the totals against an (ε, δ) budget and refuses a step that would go
//! past it before anything changes; [`calibrate_noise_multiplier`] finds the smallest z meeting a
//! target (ε, δ) after a number of steps by bisection.

mod accountant;
mod calibrate;
mod conversion;
mod subsampled;
#[cfg(test)]
mod tests;

pub use accountant::RdpAccountant;
pub use calibrate::{calibrate_noise_multiplier, calibrate_noise_multiplier_with};
pub use conversion::{default_orders, epsilon_from_rdp};
pub use subsampled::{BaseNoise, DiscreteSum, Sampling, SubsampledGaussian};
