//! The smallest noise multiplier that meets a target (ε, δ) after a number of steps.

use super::conversion::{default_orders, epsilon_from_rdp};
use super::subsampled::{BaseNoise, Sampling, SubsampledGaussian};
use crate::error::positive_finite;
use crate::{Error, PrivacyLoss, Result};

/// The smallest z (to relative precision 1e-9) such that `steps` steps of `sampling` with a
/// continuous Gaussian of noise multiplier z are (ε, δ)-DP by the [`default_orders`] RDP
/// accountant, by bisection (ε is non-increasing in z). The result is rounded up, so the
/// returned z always meets the target.
///
/// # Errors
/// Invalid target, steps = 0, a sampling probability outside (0, 1], or no z ≤ 1e6 suffices.
pub fn calibrate_noise_multiplier(
    target: PrivacyLoss,
    steps: u64,
    sampling: Sampling,
) -> Result<f64> {
    calibrate_noise_multiplier_with(target, steps, |z| {
        Ok(SubsampledGaussian {
            sampling,
            noise: BaseNoise::Continuous {
                noise_multiplier: z,
            },
        })
    })
}

/// As [`calibrate_noise_multiplier`] for any step whose privacy improves with z: `step(z)`
/// builds the mechanism of one step at noise multiplier z (e.g. a DCA round's discrete sum,
/// whose grid depends on z). ε must be non-increasing in z for the answer to be the smallest.
pub fn calibrate_noise_multiplier_with<F>(target: PrivacyLoss, steps: u64, step: F) -> Result<f64>
where
    F: Fn(f64) -> Result<SubsampledGaussian>,
{
    target.validate()?;
    positive_finite("target epsilon", target.epsilon)?;
    crate::error::open_unit("target delta", target.delta)?;
    if steps == 0 {
        return Err(Error::InvalidParameter {
            name: "steps",
            value: 0.0,
            requirement: ">= 1",
        });
    }
    let orders = default_orders();
    let epsilon = |z: f64| -> Result<f64> {
        let totals: Vec<f64> = step(z)?
            .rdp_orders(&orders)?
            .into_iter()
            .map(|r| r * steps as f64)
            .collect();
        Ok(epsilon_from_rdp(&orders, &totals, target.delta)?.0)
    };
    let (mut lo, mut hi) = (1e-3, 1.0);
    while epsilon(hi)? > target.epsilon {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return Err(Error::CalibrationFailed {
                reason: "no noise multiplier up to 1e6 meets the target",
            });
        }
    }
    if epsilon(lo)? <= target.epsilon {
        return Ok(lo);
    }
    while hi - lo > 1e-9 * hi {
        let mid = 0.5 * (lo + hi);
        if epsilon(mid)? <= target.epsilon {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
