//! Noise scales for the Gaussian and Laplace mechanisms.
//!
//! * Classic Gaussian (Dwork & Roth 2014, Thm 3.22; DCA paper eq. 1):
//!   σ = sqrt(2 ln(1.25/δ))·Δ₂/ε, proven only for 0 < ε < 1.
//! * Analytic Gaussian (Balle & Wang 2018, Thm 8): the smallest σ with
//!   Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ; exact (necessary and sufficient) for every ε > 0.
//! * Distributed Gaussian (DCA paper Thm 1): with N clients of which at most T drop out or
//!   collude, each client adds N(0, σ²/(N − T − 1)); the honest survivors' noise then sums to
//!   variance ≥ σ².
//! * Laplace: b = Δ₁/ε gives ε-DP.

use crate::error::{open_unit, positive_finite};
use crate::special::{ln_normal_cdf, mills_ratio, normal_cdf};
use crate::{Error, Result};

/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Relative width at which the analytic bisection stops (the answer is the upper end).
const ANALYTIC_RELATIVE_PRECISION: f64 = 1e-12;

/// Classic Gaussian mechanism: σ = sqrt(2 ln(1.25/δ))·Δ₂/ε (Dwork & Roth 2014, Thm 3.22).
///
/// The theorem needs σ strictly above that value; the result is rounded up by one ulp.
/// Errors unless 0 < ε < 1 (for larger ε use [`gaussian_sigma_analytic`]), 0 < δ < 1,
/// Δ₂ > 0, all finite.
pub fn gaussian_sigma_classic(epsilon: f64, delta: f64, l2_sensitivity: f64) -> Result<f64> {
    positive_finite("epsilon", epsilon)?;
    if epsilon >= 1.0 {
        return Err(Error::ClassicGaussianNeedsEpsilonBelowOne { epsilon });
    }
    open_unit("delta", delta)?;
    positive_finite("l2_sensitivity", l2_sensitivity)?;
    let sigma = (2.0 * (1.25 / delta).ln()).sqrt() * l2_sensitivity / epsilon;
    finite_result(sigma.next_up())
}

/// Analytic Gaussian mechanism (Balle & Wang 2018): the smallest σ such that
/// Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) ≤ δ, found by bisection to relative precision 1e-12
/// and rounded up (the returned σ satisfies the inequality as evaluated).
///
/// Valid for every ε > 0. Errors unless ε > 0, 0 < δ < 1, Δ₂ > 0, all finite.
pub fn gaussian_sigma_analytic(epsilon: f64, delta: f64, l2_sensitivity: f64) -> Result<f64> {
    positive_finite("epsilon", epsilon)?;
    open_unit("delta", delta)?;
    positive_finite("l2_sensitivity", l2_sensitivity)?;
    let ln_delta = delta.ln();
    // Work with s = σ/Δ; δ(s) decreases from 1 (s → 0) to 0 (s → ∞).
    let private_enough = |s: f64| ln_delta_of_scale(epsilon, s) <= ln_delta;
    // Bracket: δ(lo) > δ ≥ δ(hi) with hi = 2·lo.
    let (mut lo, mut hi);
    if private_enough(1.0) {
        hi = 1.0;
        loop {
            let next = hi * 0.5;
            if next == 0.0 {
                return Err(Error::CalibrationFailed {
                    reason: "sigma underflows: epsilon is too large",
                });
            }
            if private_enough(next) {
                hi = next;
            } else {
                lo = next;
                break;
            }
        }
    } else {
        lo = 1.0;
        loop {
            let next = lo * 2.0;
            if !next.is_finite() {
                return Err(Error::CalibrationFailed {
                    reason: "no finite sigma reaches the requested delta",
                });
            }
            if private_enough(next) {
                hi = next;
                break;
            }
            lo = next;
        }
    }
    while hi - lo > ANALYTIC_RELATIVE_PRECISION * hi {
        let mid = 0.5 * (lo + hi);
        if private_enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    finite_result(hi * l2_sensitivity)
}

/// The δ that a Gaussian of standard deviation s·Δ achieves at ε (Balle & Wang 2018, Thm 8),
/// as a natural logarithm so that tiny values stay representable.
///
/// With a = 1/(2s) and b = εs (so that ε = 2ab): δ(s) = Φ(a − b) − e^ε Φ(−a − b).
/// For b > a, since φ(b − a) = e^{2ab} φ(a + b), this is
/// δ(s) = φ(b − a)·[R(b − a) − R(b + a)] with R the Mills ratio Φ(−x)/φ(x): e^ε is never
/// formed and nothing underflows. When a is small the bracket cancels, so a Taylor expansion
/// around b is used instead: R(b − a) − R(b + a) = −2a R'(b) − (a³/3) R'''(b) − O(a⁵), with
/// R' = xR − 1 and R''' = (x³ + 3x)R − x² − 2.
pub(crate) fn ln_delta_of_scale(epsilon: f64, s: f64) -> f64 {
    let a = 0.5 / s;
    let b = epsilon * s;
    if b > a {
        let u = b - a;
        let bracket = if a < 1e-3 {
            let r = mills_ratio(b);
            let d1 = b * r - 1.0;
            let d3 = (b * b * b + 3.0 * b) * r - b * b - 2.0;
            -2.0 * a * d1 - a * a * a / 3.0 * d3
        } else {
            mills_ratio(u) - mills_ratio(b + a)
        };
        if bracket > 0.0 {
            -0.5 * u * u - LN_SQRT_2PI + bracket.ln()
        } else {
            // Not resolvable in f64: report "not private enough" so the search moves on safely.
            0.0
        }
    } else {
        let d = normal_cdf(a - b) - (epsilon + ln_normal_cdf(-a - b)).exp();
        if d > 0.0 { d.ln() } else { 0.0 }
    }
}

/// Per-client standard deviation for DCA (Heikkilä et al. 2017, Thm 1):
/// σ_client = σ_total / sqrt(N − T − 1), where N is the number of clients and T the number that
/// may drop out or collude.
///
/// Errors unless σ_total is finite and > 0 and N − T − 1 ≥ 1.
pub fn distributed_sigma(
    sigma_total: f64,
    n_clients: usize,
    max_dropped_or_colluding: usize,
) -> Result<f64> {
    positive_finite("sigma_total", sigma_total)?;
    let honest_others = n_clients
        .checked_sub(max_dropped_or_colluding)
        .and_then(|h| h.checked_sub(1))
        .filter(|&h| h >= 1)
        .ok_or(Error::TooFewHonestClients {
            n_clients,
            max_dropped_or_colluding,
        })?;
    finite_result(sigma_total / (honest_others as f64).sqrt())
}

/// Laplace mechanism scale b = Δ₁/ε (ε-DP). Errors unless both are finite and > 0.
pub fn laplace_scale(epsilon: f64, l1_sensitivity: f64) -> Result<f64> {
    positive_finite("epsilon", epsilon)?;
    positive_finite("l1_sensitivity", l1_sensitivity)?;
    finite_result(l1_sensitivity / epsilon)
}

fn finite_result(value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::CalibrationFailed {
            reason: "the noise scale is not a positive finite f64",
        })
    }
}
