//! The noise vector of objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011; stacking
//! paper Alg. 1): b with density ∝ exp(−ε′‖b‖/2) on ℝ^d.
//!
//! In polar coordinates that density factorises: the direction is uniform on the unit sphere
//! and the norm r has density ∝ r^{d−1} e^{−ε′r/2}, i.e. r ~ Gamma(shape d, scale 2/ε′).
//! A uniform direction is a vector of independent standard normals divided by its norm
//! (the standard normal vector is rotation invariant).

use rand_core::{CryptoRng, RngCore};
use rand_distr::{Distribution, Gamma, StandardNormal};

use crate::error::positive_finite;
use crate::{Error, Result};

/// Draws b ∈ ℝ^d with density ∝ exp(−ε′‖b‖/2).
///
/// Errors unless d ≥ 1 and ε′ is finite and > 0.
pub fn objective_perturbation<R: RngCore + CryptoRng + ?Sized>(
    rng: &mut R,
    d: usize,
    epsilon_prime: f64,
) -> Result<Vec<f64>> {
    let mut out = vec![0.0; d];
    fill_objective_perturbation(rng, epsilon_prime, &mut out)?;
    Ok(out)
}

/// Like [`objective_perturbation`], writing into a caller-provided slice of length d ≥ 1.
pub fn fill_objective_perturbation<R: RngCore + CryptoRng + ?Sized>(
    rng: &mut R,
    epsilon_prime: f64,
    out: &mut [f64],
) -> Result<()> {
    let d = out.len();
    if d == 0 {
        return Err(Error::InvalidParameter {
            name: "d",
            value: 0.0,
            requirement: ">= 1",
        });
    }
    positive_finite("epsilon_prime", epsilon_prime)?;
    let scale = 2.0 / epsilon_prime;
    let gamma = Gamma::new(d as f64, scale).map_err(|_| Error::InvalidParameter {
        name: "epsilon_prime",
        value: epsilon_prime,
        requirement: "such that 2/epsilon_prime is a finite positive Gamma scale",
    })?;
    let norm: f64 = gamma.sample(rng);
    sample_unit_direction(rng, out);
    for x in out.iter_mut() {
        *x *= norm;
    }
    Ok(())
}

/// Overwrites `out` (non-empty) with a uniformly random unit vector.
fn sample_unit_direction<R: RngCore + CryptoRng + ?Sized>(rng: &mut R, out: &mut [f64]) {
    loop {
        let mut sum_sq = 0.0;
        for x in out.iter_mut() {
            let z: f64 = StandardNormal.sample(rng);
            *x = z;
            sum_sq += z * z;
        }
        // An all-zero draw has probability 0 but would make the direction undefined.
        if sum_sq > 0.0 && sum_sq.is_finite() {
            let inv = 1.0 / sum_sq.sqrt();
            for x in out.iter_mut() {
                *x *= inv;
            }
            return;
        }
    }
}
