//! How a `train` or `sum` job's noise is planned so that every party can check it: the
//! smallest noise for which the job's rounds cost at most its ρ.

use fixedpoint_shares::RoundConfig;

use crate::protocol::spec::config_rho;
use crate::{Error, Result};

/// The columns are mapped onto ±`SCALE` (the job's public bounds), as for `blr`.
pub(super) const SCALE: f64 = 5.0;

/// Whether `rounds` rounds like `round` (sum of ℓ2 sensitivity `l2`) fit in ρ `budget`.
pub fn rounds_fit(config: &RoundConfig, l2: f64, rounds: u64, budget: f64) -> Result<bool> {
    Ok(match config_rho(config, l2)? {
        Some(rho) => rho * rounds as f64 <= budget * (1.0 + 1e-9),
        None => false,
    })
}

/// The smallest noise parameter s (σ_total = s · `unit`) for which `rounds` rounds configured
/// by `make(s)` fit in ρ `budget`, by bisection (the fixed-point grid depends on the noise, so
/// the cost is computed on the very configuration).
pub(super) fn smallest_noise(
    make: &dyn Fn(f64) -> Result<RoundConfig>,
    l2: f64,
    budget: f64,
    rounds: u64,
    unit: f64,
) -> Result<f64> {
    // Planned with a little slack below the budget, so that the running totals of the
    // aggregator and of each participant (a sum of `rounds` equal charges, checked against
    // the budget up to 1e-9) never trip over rounding at the last round.
    let target = budget * (1.0 - 1e-6);
    let fits = |s: f64| -> Result<bool> {
        match make(s) {
            Ok(config) => rounds_fit(&config, l2, rounds, target),
            // A noise so large the grid cannot hold it is "does not fit" from above; the
            // search never goes there unless nothing smaller fits.
            Err(_) => Ok(false),
        }
    };
    // σ ≥ Δ·sqrt(rounds / 2ρ) for the continuous Gaussian; the discrete sum costs a little
    // more, so start there and double.
    let mut lo = l2 / unit * (rounds as f64 / (2.0 * budget)).sqrt() * 0.5;
    let mut hi = lo * 2.0;
    let mut doublings = 0;
    while !fits(hi)? {
        lo = hi;
        hi *= 2.0;
        doublings += 1;
        if doublings > 60 || !hi.is_finite() {
            return Err(Error::InvalidSpec(format!(
                "job: no noise lets {rounds} round(s) fit in the job's ε, δ (zCDP ρ = \
                 {budget}) with these participants and nodes"
            )));
        }
    }
    for _ in 0..64 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if fits(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
