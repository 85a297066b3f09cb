//! The valid ranges of the privacy parameters ε, δ, Δ (sensitivity), σ (noise) and ρ (zCDP),
//! exported to the header as `DPD_*_MIN` / `DPD_*_MAX` (equal to `dp_noise::limits`, whose
//! checks the CLIs share) and checked by every entry point that takes one. A value outside its
//! range — NaN and ±∞ included — is `DPD_ERR_INVALID_PRIVACY_PARAMETER` with a message naming
//! the range.
//!
//! The ranges exclude values that carry no privacy meaning or only produce numerical garbage
//! (subnormal sensitivities, δ near 1, ε = 1e300); every combination inside them calibrates to
//! a finite σ inside σ's range (e.g. Δ = 10^12, ε = 10^-6 and the smallest δ give
//! σ ≈ 3.8·10^19 < `DPD_SIGMA_MAX`; Δ = 10^-12, ε = 100, δ = 10^-2 give σ ≈ 7·10^-14 >
//! `DPD_SIGMA_MIN`).

use dp_noise::limits;

use crate::error::{FfiError, FfiResult};
use crate::status::dpd_status;

/// Smallest ε accepted (a budget, a charge, a mechanism's ε).
pub const DPD_EPSILON_MIN: f64 = 1e-6;
/// Largest ε accepted: e^100 already makes the ε-bound vacuous for any practical purpose.
pub const DPD_EPSILON_MAX: f64 = 100.0;
/// Largest δ accepted. δ is the probability that the e^ε bound fails outright: publishing one
/// uniformly chosen record of N in the clear is (0, 1/N)-DP, so a δ of 10^-2 already permits
/// exposing one person in every hundred. The library cannot know N, so this is a ceiling on
/// nonsense, not a recommendation: use δ much smaller than 1/N (dpdist's examples use 10^-5).
pub const DPD_DELTA_MAX: f64 = 0.01;
/// Smallest positive δ accepted: the smallest normal double (subnormals are refused).
pub const DPD_DELTA_MIN: f64 = 2.2250738585072014e-308;
/// Smallest sensitivity Δ (ℓ1 or ℓ2, in the units of the released values).
#[allow(dead_code)] // For the header; checked by dp_noise::limits (equal: tested below).
pub const DPD_SENSITIVITY_MIN: f64 = 1e-12;
/// Largest sensitivity Δ.
#[allow(dead_code)] // For the header; checked by dp_noise::limits (equal: tested below).
pub const DPD_SENSITIVITY_MAX: f64 = 1e12;
/// Smallest noise σ (or Laplace scale) accepted as an input.
#[allow(dead_code)] // For the header; checked by dp_noise::limits (equal: tested below).
pub const DPD_SIGMA_MIN: f64 = 1e-15;
/// Largest noise σ (or Laplace scale) accepted as an input.
#[allow(dead_code)] // For the header; checked by dp_noise::limits (equal: tested below).
pub const DPD_SIGMA_MAX: f64 = 1e20;
/// Smallest ρ of a zCDP charge: ε_min²/2 (a charge that costs less is a zero-cost charge).
pub const DPD_RHO_MIN: f64 = 5e-13;
/// Largest ρ of a zCDP charge: ε_max²/2.
pub const DPD_RHO_MAX: f64 = 5000.0;

fn refuse(name: &str, value: f64, range: &str) -> FfiError {
    let zero = if value == 0.0 {
        " (0 would be a round or budget that costs nothing)"
    } else {
        ""
    };
    FfiError::new(
        dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
        format!("privacy parameter `{name}` = {value:e} is outside its valid range {range}{zero}"),
    )
}

fn within(name: &str, value: f64, lo: f64, hi: f64, range: &str) -> FfiResult<f64> {
    // `contains` is false for NaN.
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(refuse(name, value, range))
    }
}

/// ε ∈ [1e-6, 100] (`dp_noise::limits::epsilon`, the check every surface shares).
pub(crate) fn epsilon(name: &str, value: f64) -> FfiResult<f64> {
    limits::epsilon("epsilon", value).map_err(|_| refuse(name, value, "[1e-6, 100]"))
}

/// ε ∈ [1e-6, 100] ∪ {+∞}: the ε of a PLR/PST fit, where +∞ is the documented non-private
/// baseline (no noise, and the model reports ε = ∞).
pub(crate) fn epsilon_or_non_private(name: &str, value: f64) -> FfiResult<f64> {
    if value == f64::INFINITY {
        return Ok(value);
    }
    within(
        name,
        value,
        DPD_EPSILON_MIN,
        DPD_EPSILON_MAX,
        "[1e-6, 100], or INFINITY for the non-private baseline",
    )
}

/// ε ∈ {0} ∪ [1e-6, 100] (the ε of an (ε, δ) charge whose δ carries the cost).
pub(crate) fn epsilon_or_zero(name: &str, value: f64) -> FfiResult<f64> {
    if value == 0.0 {
        return Ok(value);
    }
    within(
        name,
        value,
        DPD_EPSILON_MIN,
        DPD_EPSILON_MAX,
        "{0} ∪ [1e-6, 100]",
    )
}

/// δ ∈ [2.2e-308, 0.01]: a Gaussian mechanism's δ (`dp_noise::limits::delta`).
pub(crate) fn delta(name: &str, value: f64) -> FfiResult<f64> {
    limits::delta("delta", value).map_err(|_| {
        refuse(
            name,
            value,
            "[2.2e-308, 0.01] (positive, normal, at most DPD_DELTA_MAX)",
        )
    })
}

/// δ ∈ {0} ∪ [2.2e-308, 0.01]: a budget's δ or a charge's (0 = pure ε-DP).
pub(crate) fn delta_or_zero(name: &str, value: f64) -> FfiResult<f64> {
    if value == 0.0 {
        return Ok(value);
    }
    within(
        name,
        value,
        DPD_DELTA_MIN,
        DPD_DELTA_MAX,
        "{0} ∪ [2.2e-308, 0.01] (0 for pure ε-DP)",
    )
}

/// Δ ∈ [1e-12, 1e12] (`dp_noise::limits::sensitivity`).
pub(crate) fn sensitivity(name: &str, value: f64) -> FfiResult<f64> {
    limits::sensitivity("sensitivity", value).map_err(|_| refuse(name, value, "[1e-12, 1e12]"))
}

/// σ ∈ [1e-15, 1e20] (`dp_noise::limits::sigma`).
pub(crate) fn sigma(name: &str, value: f64) -> FfiResult<f64> {
    limits::sigma("sigma", value).map_err(|_| refuse(name, value, "[1e-15, 1e20]"))
}

/// σ of a DCA round's released noise, ∈ [1e-15, 1e20]. Zero, negative and NaN are refused
/// with a message naming the non-private constructor, because σ = 0 is what a caller that
/// ignored a failed calibration would pass.
pub(crate) fn round_sigma(name: &str, value: f64) -> FfiResult<f64> {
    if limits::sigma("sigma", value).is_ok() {
        return Ok(value);
    }
    Err(FfiError::new(
        dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
        format!(
            "privacy parameter `{name}` = {value:e} is outside its valid range [1e-15, 1e20]: a \
             private round needs σ > 0 (calibrate it with dpd_gaussian_sigma_analytic and check \
             its status); for an exact, NON-PRIVATE sum call dpd_round_config_new_exact"
        ),
    ))
}

/// ρ ∈ [5e-13, 5000].
pub(crate) fn rho(name: &str, value: f64) -> FfiResult<f64> {
    within(name, value, DPD_RHO_MIN, DPD_RHO_MAX, "[5e-13, 5000]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::calibrate;

    #[test]
    fn edges_are_accepted_and_everything_else_refused_with_the_range() {
        assert_eq!(epsilon("epsilon", 1e-6).unwrap(), 1e-6);
        assert_eq!(epsilon("epsilon", 100.0).unwrap(), 100.0);
        for bad in [
            0.0,
            -1.0,
            9.9e-7,
            100.5,
            1e300,
            f64::NAN,
            f64::INFINITY,
            5e-324,
        ] {
            let e = epsilon("epsilon", bad).unwrap_err();
            assert_eq!(e.status, dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER);
            assert!(e.message.contains("[1e-6, 100]"), "{}", e.message);
            assert!(e.message.contains("`epsilon`"), "{}", e.message);
        }
        assert!(delta("delta", 0.01).is_ok() && delta("delta", f64::MIN_POSITIVE).is_ok());
        for bad in [0.0, 0.5, 0.010001, 1e-310, f64::NAN] {
            assert!(delta("delta", bad).is_err(), "{bad}");
        }
        assert!(delta_or_zero("delta", 0.0).is_ok());
        assert!(delta_or_zero("delta", 1e-310).is_err());
        for bad in [1e-300, 5e-324, 0.0, 1e13, f64::NAN] {
            assert!(sensitivity("l2_sensitivity", bad).is_err(), "{bad}");
        }
        assert!(sigma("sigma", 1e-15).is_ok() && sigma("sigma", 1e20).is_ok());
        assert!(sigma("sigma", 0.0).is_err() && sigma("sigma", f64::INFINITY).is_err());
        assert!(rho("rho", 0.0).is_err() && rho("rho", 5e-13).is_ok());
        assert!(epsilon_or_zero("epsilon", 0.0).is_ok() && epsilon_or_zero("e", -0.1).is_err());
    }

    #[test]
    fn the_header_constants_are_dp_noises_limits() {
        assert_eq!(DPD_EPSILON_MIN, limits::EPSILON_MIN);
        assert_eq!(DPD_EPSILON_MAX, limits::EPSILON_MAX);
        assert_eq!(DPD_DELTA_MIN, limits::DELTA_MIN);
        assert_eq!(DPD_DELTA_MAX, limits::DELTA_MAX);
        assert_eq!(DPD_SENSITIVITY_MIN, limits::SENSITIVITY_MIN);
        assert_eq!(DPD_SENSITIVITY_MAX, limits::SENSITIVITY_MAX);
        assert_eq!(DPD_SIGMA_MIN, limits::SIGMA_MIN);
        assert_eq!(DPD_SIGMA_MAX, limits::SIGMA_MAX);
    }

    #[test]
    fn a_round_sigma_of_zero_negative_or_nan_names_the_non_private_constructor() {
        assert_eq!(round_sigma("s", 1e-15).unwrap(), 1e-15);
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, 1e21] {
            let e = round_sigma("noise_sigma_total", bad).unwrap_err();
            assert_eq!(e.status, dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER);
            assert!(
                e.message.contains("dpd_round_config_new_exact"),
                "{}",
                e.message
            );
            assert!(e.message.contains("NON-PRIVATE"), "{}", e.message);
        }
    }

    #[test]
    fn every_calibration_inside_the_ranges_gives_a_sigma_inside_sigmas_range() {
        // The corners of the (ε, δ, Δ) box, for both Gaussian calibrations (classic only
        // where it is defined, ε < 1) and Laplace (b = Δ/ε).
        for eps in [DPD_EPSILON_MIN, 0.999, DPD_EPSILON_MAX] {
            for delta in [DPD_DELTA_MIN, DPD_DELTA_MAX] {
                for l2 in [DPD_SENSITIVITY_MIN, DPD_SENSITIVITY_MAX] {
                    let analytic = calibrate::gaussian_sigma_analytic(eps, delta, l2).unwrap();
                    assert!(
                        sigma("sigma", analytic).is_ok(),
                        "{eps} {delta} {l2}: {analytic}"
                    );
                    if eps < 1.0 {
                        let classic = calibrate::gaussian_sigma_classic(eps, delta, l2).unwrap();
                        assert!(sigma("sigma", classic).is_ok(), "{classic}");
                    }
                    let b = calibrate::laplace_scale(eps, l2).unwrap();
                    assert!(sigma("scale", b).is_ok(), "{b}");
                }
            }
        }
    }
}
