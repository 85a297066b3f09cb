//! The bound a verified contribution is checked against, and what truncating the noise costs.

use fixedpoint_shares::RoundConfig;

use crate::{Error, Result};

/// The per-coordinate bound of a verified round, in grid units: B = `data_units` + `slice_units`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinfBound {
    /// The codec's bound on |enc(x)| for |x| ≤ the round's bound.
    pub data_units: u64,
    /// τ: each honest noise value is clamped into [−τ, τ] (0 for a round without noise).
    pub slice_units: u64,
    /// δ_t: the probability that any honest noise value of the round reaches τ.
    pub truncation_delta: f64,
}

impl LinfBound {
    /// The bound for `config`, with τ chosen so that δ_t ≤ `truncation_delta`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless 0 < `truncation_delta` < 1, or if B·2·N exceeds 2^120
    /// (the field sum must not wrap); codec errors.
    pub fn new(config: &RoundConfig, truncation_delta: f64) -> Result<Self> {
        if !(truncation_delta > 0.0 && truncation_delta < 1.0) {
            return Err(Error::InvalidParameter {
                name: "truncation_delta",
                value: truncation_delta,
                requirement: "strictly between 0 and 1",
            });
        }
        let mut units = [0u64];
        config.codec().encode(&[config.bound()], &mut units)?;
        let data_units = units[0];
        let (slice_units, delta) = match config.noise() {
            None => (0, 0.0),
            Some(noise) => {
                let (n, d) = (config.n_clients(), config.dim());
                let tau = slice_bound_units(noise.sigma_client_units, n, d, truncation_delta);
                (
                    tau,
                    truncation_delta_at(noise.sigma_client_units, n, d, tau),
                )
            }
        };
        let bound = LinfBound {
            data_units,
            slice_units,
            truncation_delta: delta,
        };
        let total = u128::from(bound.units()) * 2 * config.n_clients() as u128;
        if bound.units() > i64::MAX as u64 / 2 || total > 1u128 << 120 {
            return Err(Error::InvalidParameter {
                name: "bound (grid units)",
                value: bound.units() as f64,
                requirement: "such that 2·B·N < 2^120 and B < 2^62",
            });
        }
        Ok(bound)
    }

    /// B = data + slice, grid units.
    pub fn units(&self) -> u64 {
        self.data_units + self.slice_units
    }

    /// 2B: the largest value of a shifted coordinate m = v + B.
    pub fn max_measurement(&self) -> u128 {
        2 * u128::from(self.units())
    }
}

/// τ = ⌈σ·sqrt(2·ln(2·N·d/δ_t))⌉ grid units: with it, the probability that any of N clients'
/// d noise values reaches τ is at most δ_t. N_Z(0, σ²) is σ²-subgaussian (Canonne, Kamath &
/// Steinke 2020, Cor. 9), so P(|η| ≥ t) ≤ 2·exp(−t²/(2σ²)); a union bound over the N·d values
/// gives [`truncation_delta`].
pub fn slice_bound_units(sigma_units: f64, n_clients: usize, dim: usize, delta_t: f64) -> u64 {
    let count = n_clients as f64 * dim as f64;
    let tau = (sigma_units * (2.0 * (2.0 * count / delta_t).ln()).sqrt()).ceil() as u64;
    raise_until_within(tau, delta_t, |tau| {
        truncation_delta_at(sigma_units, n_clients, dim, tau)
    })
}

/// The smallest step above `tau` at which `delta_at` ≤ `target`: past 2^53 units the formula's
/// ceiling can land a rounding error short of the target (δ_t = 1.000000000000001e-9 for a
/// target of 1e-9 was seen at 52 fractional bits), so τ grows by about 2^-48 of itself until
/// the promise "δ_t ≤ target" holds as computed.
pub(crate) fn raise_until_within(mut tau: u64, target: f64, delta_at: impl Fn(u64) -> f64) -> u64 {
    for _ in 0..64 {
        if delta_at(tau) <= target {
            break;
        }
        tau = tau.saturating_add((tau >> 48).max(1));
    }
    tau
}

/// δ_t = 2·N·d·exp(−τ²/(2σ²)): the bound on the probability that any honest noise value of the
/// round reaches τ (see [`slice_bound_units`]).
pub fn truncation_delta(sigma_units: f64, n_clients: usize, dim: usize, tau_units: u64) -> f64 {
    truncation_delta_at(sigma_units, n_clients, dim, tau_units)
}

fn truncation_delta_at(sigma_units: f64, n_clients: usize, dim: usize, tau_units: u64) -> f64 {
    let tau = tau_units as f64;
    2.0 * n_clients as f64 * dim as f64 * (-tau * tau / (2.0 * sigma_units * sigma_units)).exp()
}

/// The guarantee of the clamped mechanism: if the unclamped one is (ε, δ)-DP, the clamped one is
/// (ε, δ + (1 + e^ε)·δ_t)-DP. Both outputs agree except on an event of probability ≤ δ_t (the
/// same noise draws, clamped only when a value reaches τ), so for every set S and neighbours
/// D, D′: P[M′(D) ∈ S] ≤ P[M(D) ∈ S] + δ_t ≤ e^ε·P[M(D′) ∈ S] + δ + δ_t
/// ≤ e^ε·(P[M′(D′) ∈ S] + δ_t) + δ + δ_t.
pub fn total_delta(epsilon: f64, delta: f64, delta_t: f64) -> f64 {
    delta + (1.0 + epsilon.exp()) * delta_t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// σ = 1000 units, N = 10, d = 100, δ_t = 1e-9, computed by hand (Python `math`):
    /// 1000·sqrt(2·ln(2·1000/1e-9)) = 7526.50892465936, so τ = 7527; at τ = 7527,
    /// 2·1000·exp(−7527²/(2·1000²)) = 9.963106190402572e-10 ≤ 1e-9.
    /// The promise δ_t ≤ target holds as computed, also where τ passes 2^53 units.
    #[test]
    fn the_slice_bound_keeps_its_delta_within_the_target_past_2_pow_53() {
        for i in 0..2000 {
            let sigma = 2f64.powi(48) * (1.0 + i as f64 / 997.0);
            for (n, d, target) in [(10, 100, 1e-9), (10_000, 1000, 1e-9), (1000, 7, 1e-12)] {
                let tau = slice_bound_units(sigma, n, d, target);
                let dt = truncation_delta(sigma, n, d, tau);
                assert!(dt <= target, "σ = {sigma}: δ_t = {dt:e} > {target:e}");
            }
        }
    }

    #[test]
    fn slice_bound_and_its_delta_by_hand() {
        assert_eq!(slice_bound_units(1000.0, 10, 100, 1e-9), 7527);
        let dt = truncation_delta(1000.0, 10, 100, 7527);
        assert!((dt - 9.963106190402572e-10).abs() < 1e-22, "{dt:e}");
        assert!(dt <= 1e-9);
    }

    /// 1e-6 + (1 + e)·1e-9 = 1.003718281828459e-06.
    #[test]
    fn total_delta_by_hand() {
        let total = total_delta(1.0, 1e-6, 1e-9);
        assert!((total - 1.003718281828459e-06).abs() < 1e-20, "{total:e}");
    }
}
