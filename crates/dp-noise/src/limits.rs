//! The valid ranges of the privacy parameters, stated once for every surface of dpdist: the
//! `dpdist` CLIs, the examples and the C ABI (whose `DPD_*_MIN` / `DPD_*_MAX` constants equal
//! these) check ε, δ, sensitivities and σ here before any work starts.
//!
//! The ranges exclude values that carry no privacy meaning or only produce numerical garbage.
//! δ is the probability that the e^ε bound fails outright: publishing one uniformly chosen
//! record of N in the clear is (0, 1/N)-DP, so δ = 10^-2 already permits exposing one person
//! in every hundred. The library cannot know N, so [`DELTA_MAX`] is a ceiling on nonsense, not
//! a recommendation: use δ much smaller than 1/N (dpdist's examples use 10^-5).

use crate::{Error, PrivacyLoss, Result};

/// Smallest ε accepted (a budget, a charge, a mechanism's ε).
pub const EPSILON_MIN: f64 = 1e-6;
/// Largest ε accepted: e^100 already makes the ε-bound vacuous for any practical purpose.
pub const EPSILON_MAX: f64 = 100.0;
/// Smallest positive δ accepted: the smallest normal double (subnormals are refused).
pub const DELTA_MIN: f64 = f64::MIN_POSITIVE;
/// Largest δ accepted (see the module documentation).
pub const DELTA_MAX: f64 = 0.01;
/// Smallest sensitivity Δ (ℓ1 or ℓ2, in the units of the released values).
pub const SENSITIVITY_MIN: f64 = 1e-12;
/// Largest sensitivity Δ.
pub const SENSITIVITY_MAX: f64 = 1e12;
/// Smallest noise σ (or Laplace scale) accepted as an input.
pub const SIGMA_MIN: f64 = 1e-15;
/// Largest noise σ (or Laplace scale) accepted as an input.
pub const SIGMA_MAX: f64 = 1e20;

fn within(
    name: &'static str,
    value: f64,
    lo: f64,
    hi: f64,
    requirement: &'static str,
) -> Result<f64> {
    // `contains` is false for NaN.
    if (lo..=hi).contains(&value) {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            requirement,
        })
    }
}

/// ε ∈ [1e-6, 100].
pub fn epsilon(name: &'static str, value: f64) -> Result<f64> {
    within(name, value, EPSILON_MIN, EPSILON_MAX, "in [1e-6, 100]")
}

/// δ ∈ [2.2e-308, 0.01]: the δ of a Gaussian mechanism or of an (ε, δ) budget that has one.
pub fn delta(name: &'static str, value: f64) -> Result<f64> {
    within(
        name,
        value,
        DELTA_MIN,
        DELTA_MAX,
        "in [2.2e-308, 0.01] (positive, at most dp_noise::limits::DELTA_MAX = 0.01; use δ much \
         smaller than 1/N)",
    )
}

/// Δ ∈ [1e-12, 1e12].
pub fn sensitivity(name: &'static str, value: f64) -> Result<f64> {
    within(
        name,
        value,
        SENSITIVITY_MIN,
        SENSITIVITY_MAX,
        "in [1e-12, 1e12]",
    )
}

/// σ ∈ [1e-15, 1e20].
pub fn sigma(name: &'static str, value: f64) -> Result<f64> {
    within(name, value, SIGMA_MIN, SIGMA_MAX, "in [1e-15, 1e20]")
}

/// The (ε, δ) of a Gaussian fit or job: ε by [`epsilon`], δ by [`delta`].
pub fn gaussian_budget(epsilon_value: f64, delta_value: f64) -> Result<PrivacyLoss> {
    Ok(PrivacyLoss {
        epsilon: epsilon("epsilon", epsilon_value)?,
        delta: delta("delta", delta_value)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_accepted_and_everything_else_refused_with_the_range() {
        assert_eq!(epsilon("epsilon", 1e-6).unwrap(), 1e-6);
        assert_eq!(epsilon("epsilon", 100.0).unwrap(), 100.0);
        for bad in [0.0, -1.0, 9.9e-7, 100.5, f64::NAN, f64::INFINITY] {
            let e = epsilon("epsilon", bad).unwrap_err().to_string();
            assert!(e.contains("[1e-6, 100]") && e.contains("epsilon"), "{e}");
        }
        assert!(delta("delta", 0.01).is_ok() && delta("delta", f64::MIN_POSITIVE).is_ok());
        for bad in [0.0, 0.5, 0.010001, 1e-310, -1e-5, f64::NAN] {
            let e = delta("delta", bad).unwrap_err().to_string();
            assert!(e.contains("0.01"), "{e}");
        }
        assert!(sigma("sigma", 0.0).is_err() && sigma("sigma", 1e-15).is_ok());
        assert!(sensitivity("l2", 1e13).is_err() && sensitivity("l2", 1.0).is_ok());
        assert!(gaussian_budget(1.0, 0.5).is_err() && gaussian_budget(-1.0, 1e-5).is_err());
        assert_eq!(
            gaussian_budget(1.0, 1e-5).unwrap(),
            PrivacyLoss::new(1.0, 1e-5).unwrap()
        );
    }
}
