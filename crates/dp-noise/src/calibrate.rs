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

/// The analytic σ is returned this much (relatively) above the bisection's upper end, so that
/// converting the round back to (ε, δ) with the exact GDP profile
/// ([`accountant::gdp_to_approx`](crate::accountant::gdp_to_approx), precise to 1e-14) cannot
/// land above ε through floating-point evaluation: one round calibrated for ε is charged ≤ ε.
const ANALYTIC_ROUND_UP: f64 = 1e-10;

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
/// and rounded up by a further 1e-10 relative (the returned σ satisfies the inequality as
/// evaluated, with room for the accountant's exact conversion back to ε).
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
    finite_result(hi * (1.0 + ANALYTIC_ROUND_UP) * l2_sensitivity)
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
pub fn distributed_sigma(sigma_total: f64, n_clients: usize, max_dropped: usize) -> Result<f64> {
    positive_finite("sigma_total", sigma_total)?;
    let honest_others = n_clients
        .checked_sub(max_dropped)
        .and_then(|h| h.checked_sub(1))
        .filter(|&h| h >= 1)
        .ok_or(Error::TooFewHonestClients {
            n_clients,
            max_dropped,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_err(got: f64, want: f64) -> f64 {
        ((got - want) / want).abs()
    }

    #[test]
    fn classic_matches_hand_computation() {
        // ε = 0.5, δ = 1e-5, Δ = 1:
        //   ln(1.25/1e-5) = ln 125000 = ln 1.25 + 5 ln 10 = 0.2231435513 + 11.5129254650 = 11.7360690163
        //   2·11.7360690163 = 23.4721380326;  sqrt = 4.8448052626;  / 0.5 = 9.6896105252
        let sigma = gaussian_sigma_classic(0.5, 1e-5, 1.0).unwrap();
        assert!(rel_err(sigma, 9.689_610_525_2) < 1e-10, "{sigma}");
        // ε = 0.9, δ = 1e-6, Δ = 2:
        //   ln(1.25e6) = 0.2231435513 + 6·2.3025850930 = 14.0386541093
        //   2·14.0386541093 = 28.0773082186;  sqrt = 5.2988025269;  ·2/0.9 = 11.7751167263
        let sigma = gaussian_sigma_classic(0.9, 1e-6, 2.0).unwrap();
        assert!(rel_err(sigma, 11.775_116_726_3) < 1e-10, "{sigma}");
        // σ is linear in Δ and rounded up (the theorem needs σ strictly above the bound).
        let base = (2.0 * (1.25f64 / 1e-5).ln()).sqrt() / 0.5;
        assert!(gaussian_sigma_classic(0.5, 1e-5, 1.0).unwrap() > base);
    }

    #[test]
    fn classic_refuses_large_epsilon_and_names_the_analytic_variant() {
        for eps in [1.0, 1.5, 10.0] {
            let err = gaussian_sigma_classic(eps, 1e-5, 1.0).unwrap_err();
            assert_eq!(
                err,
                Error::ClassicGaussianNeedsEpsilonBelowOne { epsilon: eps }
            );
            assert!(err.to_string().contains("gaussian_sigma_analytic"));
        }
    }

    /// δ(σ) against Google's differential-privacy library (Go, `noise/gaussian_noise_test.go`,
    /// tests of `deltaForGaussian`, l2 = sqrt(l0)·lInf), also confirmed with mpmath at 60 digits.
    #[test]
    fn analytic_delta_matches_google_dp_library() {
        let cases = [
            // (σ, Δ, ε, δ)
            (10.0, 1.0, 0.1, 0.008_751_768_145_810),
            (20.0, 2.0, 0.1, 0.008_751_768_145_810),
            (10.0, 5.0, 3f64.ln(), 0.004_159_742_234_000_802),
            (1.0, 1.0, 3f64.ln(), 0.109_855_563_444_450_52),
            (1.0, 2f64.sqrt(), 3f64.ln(), 0.265_468_441_060_387_14),
        ];
        for (sigma, l2, eps, want) in cases {
            let got = ln_delta_of_scale(eps, sigma / l2).exp();
            assert!(rel_err(got, want) < 1e-12, "sigma {sigma}: {got} vs {want}");
        }
        // Their "small delta" case: σ = 500, Δ = 10, ε = 0.5 gives δ ≈ 3.1297767730e-141
        // (mpmath: 3.12977677298013e-141).
        let got = ln_delta_of_scale(0.5, 50.0);
        assert!(
            (got - 3.129_776_772_980_134e-141_f64.ln()).abs() < 1e-9,
            "{got}"
        );
    }

    /// Inverting those δ's must give back the library's σ (to 1e-6 relative).
    #[test]
    fn analytic_sigma_inverts_google_dp_library_values() {
        let cases = [
            (10.0, 1.0, 0.1, 0.008_751_768_145_810),
            (10.0, 5.0, 3f64.ln(), 0.004_159_742_234_000_802),
            (1.0, 1.0, 3f64.ln(), 0.109_855_563_444_450_52),
            (1.0, 2f64.sqrt(), 3f64.ln(), 0.265_468_441_060_387_14),
            (500.0, 10.0, 0.5, 3.129_776_772_980_134e-141),
        ];
        for (sigma, l2, eps, delta) in cases {
            let got = gaussian_sigma_analytic(eps, delta, l2).unwrap();
            assert!(rel_err(got, sigma) < 1e-6, "want {sigma}, got {got}");
        }
    }

    /// Analytic σ for Δ = 1 computed independently by bisection in mpmath 1.3.0 at 80 digits
    /// (`ncdf(a-b) - exp(eps)*ncdf(-a-b) <= delta`, 200 halvings of [1e-6, 1e6]).
    #[test]
    fn analytic_sigma_matches_high_precision_values() {
        let cases = [
            (0.5, 1e-5, 7.031_826_675_582_491),
            (1.0, 1e-5, 3.730_631_634_815_942),
            (5.0, 1e-5, 0.891_868_264_951_518),
            (50.0, 1e-10, 0.180_294_222_942_413_73),
            (200.0, 1e-12, 0.070_398_703_439_025_28),
            (0.01, 1e-6, 306.350_376_153_817_7),
            (0.1, 1e-300, 367.909_238_577_685),
            (1e-4, 1e-5, 9_373.853_362_152_795),
        ];
        for (eps, delta, want) in cases {
            let got = gaussian_sigma_analytic(eps, delta, 1.0).unwrap();
            assert!(
                rel_err(got, want) < 1e-9,
                "eps {eps}: got {got}, want {want}"
            );
            // The answer is on the private side of the bound and scales with Δ.
            assert!(ln_delta_of_scale(eps, got) <= delta.ln());
            let scaled = gaussian_sigma_analytic(eps, delta, 3.5).unwrap();
            assert!(rel_err(scaled, 3.5 * want) < 1e-9);
        }
    }

    #[test]
    fn analytic_is_below_classic_for_small_epsilon() {
        for eps in [0.01, 0.1, 0.5, 0.9, 0.999] {
            for delta in [1e-3, 1e-5, 1e-9] {
                let a = gaussian_sigma_analytic(eps, delta, 1.0).unwrap();
                let c = gaussian_sigma_classic(eps, delta, 1.0).unwrap();
                assert!(
                    a < c,
                    "eps {eps}, delta {delta}: analytic {a} >= classic {c}"
                );
            }
        }
    }

    #[test]
    fn analytic_works_for_extreme_epsilon() {
        // ε → 0: the condition becomes 2Φ(1/(2s)) − 1 ≤ δ, i.e. s ≈ 1/(δ·sqrt(2π)) for small δ
        // (0.3989422804/1e-5 = 39894.22804).
        let sigma = gaussian_sigma_analytic(1e-300, 1e-5, 1.0).unwrap();
        assert!(rel_err(sigma, 39_894.228_04) < 1e-6, "{sigma}");
        for eps in [1e3, 1e5] {
            let sigma = gaussian_sigma_analytic(eps, 1e-10, 1.0).unwrap();
            assert!(sigma.is_finite() && sigma > 0.0);
            assert!(ln_delta_of_scale(eps, sigma) <= 1e-10f64.ln());
        }
    }

    #[test]
    fn distributed_sigma_scales_by_honest_clients() {
        // N = 10, T = 0: σ/sqrt(9) = σ/3.  N = 10, T = 5: σ/sqrt(4) = σ/2.
        assert!(rel_err(distributed_sigma(6.0, 10, 0).unwrap(), 2.0) < 1e-15);
        assert!(rel_err(distributed_sigma(6.0, 10, 5).unwrap(), 3.0) < 1e-15);
        assert!(rel_err(distributed_sigma(6.0, 2, 0).unwrap(), 6.0) < 1e-15);
        for (n, t) in [(1, 0), (2, 1), (10, 9), (10, 10), (3, 100), (0, 0)] {
            assert_eq!(
                distributed_sigma(1.0, n, t),
                Err(Error::TooFewHonestClients {
                    n_clients: n,
                    max_dropped: t
                })
            );
        }
        assert!(distributed_sigma(1.0, usize::MAX, usize::MAX).is_err());
    }

    #[test]
    fn laplace_scale_is_sensitivity_over_epsilon() {
        assert_eq!(laplace_scale(0.5, 2.0).unwrap(), 4.0);
        assert_eq!(laplace_scale(4.0, 1.0).unwrap(), 0.25);
    }

    #[test]
    fn invalid_parameters_are_refused() {
        let bad_positive = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -1.0];
        for bad in bad_positive {
            assert!(gaussian_sigma_classic(bad, 1e-5, 1.0).is_err());
            assert!(gaussian_sigma_classic(0.5, 1e-5, bad).is_err());
            assert!(gaussian_sigma_analytic(bad, 1e-5, 1.0).is_err());
            assert!(gaussian_sigma_analytic(0.5, 1e-5, bad).is_err());
            assert!(distributed_sigma(bad, 10, 0).is_err());
            assert!(laplace_scale(bad, 1.0).is_err());
            assert!(laplace_scale(1.0, bad).is_err());
        }
        for bad_delta in [f64::NAN, 0.0, 1.0, -0.1, 1.5, f64::INFINITY] {
            assert!(gaussian_sigma_classic(0.5, bad_delta, 1.0).is_err());
            assert!(gaussian_sigma_analytic(0.5, bad_delta, 1.0).is_err());
        }
        // Overflowing results are errors, not infinities.
        assert!(laplace_scale(1e-300, 1e300).is_err());
        assert!(gaussian_sigma_analytic(0.5, 1e-5, 1e308).is_err());
        assert!(gaussian_sigma_classic(0.5, 1e-5, 1e308).is_err());
    }
}
