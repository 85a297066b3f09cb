//! The order grid and the RDP → (ε, δ) conversion.

use crate::{Error, Result};

/// The orders of Google's dp_accounting `RdpAccountant` (1.1, 1.2, …, 10.9, then 11, …, 63,
/// then 128, 256, 512, 1024): dense where the Gaussian's optimum lies for useful ε.
pub fn default_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (1..100).map(|x| 1.0 + f64::from(x) / 10.0).collect();
    orders.extend((11..64).map(f64::from));
    orders.extend([128.0, 256.0, 512.0, 1024.0]);
    orders
}

/// Checks a grid of orders: non-empty, each finite and > 1.
pub(crate) fn check_orders(orders: &[f64]) -> Result<()> {
    if orders.is_empty() {
        return Err(Error::InvalidParameter {
            name: "orders",
            value: 0.0,
            requirement: "non-empty",
        });
    }
    for &a in orders {
        if !(a.is_finite() && a > 1.0) {
            return Err(Error::InvalidParameter {
                name: "orders",
                value: a,
                requirement: "each finite and > 1",
            });
        }
    }
    Ok(())
}

/// The smallest ε such that RDP values `rdp[i]` at `orders[i]` imply (ε, δ)-DP, and the order
/// that attains it: ε = min_α [ε(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1)], floored at 0
/// (Balle et al. 2020, Thm 21), or 0 when √(1 − e^{−ε(α)}) ≤ δ. An RDP value of +∞ at an order just makes that order useless.
///
/// # Errors
/// Lengths differ, an order not finite > 1, an RDP value NaN or negative, δ not in (0, 1).
pub fn epsilon_from_rdp(orders: &[f64], rdp: &[f64], delta: f64) -> Result<(f64, f64)> {
    check_orders(orders)?;
    if rdp.len() != orders.len() {
        return Err(Error::InvalidParameter {
            name: "rdp",
            value: rdp.len() as f64,
            requirement: "as many values as orders",
        });
    }
    crate::error::open_unit("delta", delta)?;
    let ln_delta = delta.ln();
    let mut best = (f64::INFINITY, orders[0]);
    for (&a, &r) in orders.iter().zip(rdp) {
        if r.is_nan() || r < 0.0 {
            return Err(Error::InvalidParameter {
                name: "rdp",
                value: r,
                requirement: "each >= 0 (+inf allowed)",
            });
        }
        // D_KL <= D_α, and TV <= sqrt(1 − e^{−D_KL}) (Bretagnolle–Huber): (0, δ)-DP outright
        // when that is <= δ (as dp_accounting does).
        let eps = if delta * delta + (-r).exp_m1() > 0.0 {
            0.0
        } else {
            r + (-1.0 / a).ln_1p() - (ln_delta + a.ln()) / (a - 1.0)
        };
        if eps < best.0 {
            best = (eps, a);
        }
    }
    Ok((best.0.max(0.0), best.1))
}
