//! Kairouz, Liu & Steinke (2021): how far a sum of discrete Gaussians is from one.

use std::f64::consts::PI;

use crate::error::positive_finite;
use crate::{Error, Result};

/// τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)) for n clients each adding N_ℤ(0, σ²)
/// (KLS 2021, Thm. 1). τ = 0 for n = 1; it underflows to 0 for σ ≳ 4 units.
///
/// Errors unless σ ≥ 1/2 (the theorem's assumption) is finite and n ≥ 1. O(n) work, cut short
/// once the (decreasing) terms underflow.
pub fn sum_closeness_tau(sigma_units: f64, n_clients: usize) -> Result<f64> {
    positive_finite("sigma_units", sigma_units)?;
    if sigma_units < 0.5 {
        return Err(Error::InvalidParameter {
            name: "sigma_units",
            value: sigma_units,
            requirement: ">= 0.5 (Kairouz-Liu-Steinke Thm. 1)",
        });
    }
    if n_clients == 0 {
        return Err(Error::InvalidParameter {
            name: "n_clients",
            value: 0.0,
            requirement: ">= 1",
        });
    }
    let c = 2.0 * PI * PI * sigma_units * sigma_units;
    let mut sum = 0.0;
    for k in 1..n_clients {
        let kf = k as f64;
        let term = (-c * kf / (kf + 1.0)).exp();
        if term == 0.0 {
            break;
        }
        sum += term;
    }
    Ok(10.0 * sum)
}

/// ρ = ε̃²/2 with ε̃ = min( sqrt(Δ²/(nσ²) + τd/2), Δ/(√n·σ) + τ√d ): the zCDP guarantee of n
/// clients each adding N_ℤ(0, σ²)^d to an integer vector of ℓ2-sensitivity Δ (KLS 2021, Thm. 1),
/// all in units of the integer grid. With τ = 0 this is the continuous value Δ²/(2nσ²).
pub fn distributed_zcdp_rho(
    l2_sensitivity_units: f64,
    sigma_units: f64,
    n_clients: usize,
    dim: usize,
) -> Result<f64> {
    positive_finite("l2_sensitivity_units", l2_sensitivity_units)?;
    if dim == 0 {
        return Err(Error::InvalidParameter {
            name: "dim",
            value: 0.0,
            requirement: ">= 1",
        });
    }
    let tau = sum_closeness_tau(sigma_units, n_clients)?;
    let n = n_clients as f64;
    let d = dim as f64;
    let base = l2_sensitivity_units / (n.sqrt() * sigma_units);
    let eps = (base * base + 0.5 * tau * d)
        .sqrt()
        .min(base + tau * d.sqrt());
    Ok(0.5 * eps * eps)
}
