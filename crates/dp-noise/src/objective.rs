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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stats::{ks_critical, ks_statistic};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// CDF of Gamma(shape k, scale θ) for integer k: 1 − e^{−y} Σ_{i<k} y^i/i!, y = x/θ.
    fn gamma_cdf(k: usize, theta: f64) -> impl Fn(f64) -> f64 {
        move |x: f64| {
            let y = x / theta;
            let mut term = 1.0;
            let mut sum = 0.0;
            for i in 0..k {
                if i > 0 {
                    term *= y / i as f64;
                }
                sum += term;
            }
            1.0 - (-y).exp() * sum
        }
    }

    fn norm(v: &[f64]) -> f64 {
        v.iter().map(|x| x * x).sum::<f64>().sqrt()
    }

    #[test]
    fn norm_is_gamma_d_two_over_epsilon() {
        let mut rng = ChaCha20Rng::seed_from_u64(31);
        let n = 40_000;
        for (d, eps) in [(1usize, 0.5), (5, 2.0), (20, 0.1)] {
            let mut norms: Vec<f64> = (0..n)
                .map(|_| norm(&objective_perturbation(&mut rng, d, eps).unwrap()))
                .collect();
            let dist = ks_statistic(&mut norms, gamma_cdf(d, 2.0 / eps));
            assert!(dist < ks_critical(n), "d {d}, eps {eps}: D = {dist}");
            // Power: scale 2.2/ε (a 10% error) is rejected.
            let wrong = ks_statistic(&mut norms, gamma_cdf(d, 2.2 / eps));
            assert!(wrong > ks_critical(n), "d {d}: D_wrong = {wrong}");
        }
    }

    /// For a uniform direction u on S^{d−1}, one coordinate has density ∝ (1 − t²)^{(d−3)/2}
    /// on [−1, 1] (i.e. (u₁ + 1)/2 ~ Beta((d−1)/2, (d−1)/2)): uniform for d = 3 (Archimedes),
    /// CDF (2 + 3t − t³)/4 for d = 5. Checked on every coordinate, plus on a fixed oblique
    /// projection (rotation invariance).
    #[test]
    fn direction_is_uniform_on_the_sphere() {
        let mut rng = ChaCha20Rng::seed_from_u64(32);
        let n = 30_000;
        let cdf3 = |t: f64| (t + 1.0) / 2.0;
        let cdf5 = |t: f64| (2.0 + 3.0 * t - t * t * t) / 4.0;
        for (d, cdf) in [(3usize, &cdf3 as &dyn Fn(f64) -> f64), (5, &cdf5)] {
            let dirs: Vec<Vec<f64>> = (0..n)
                .map(|_| {
                    let b = objective_perturbation(&mut rng, d, 1.0).unwrap();
                    let r = norm(&b);
                    b.iter().map(|x| x / r).collect()
                })
                .collect();
            let oblique: Vec<f64> = (0..d).map(|i| (i + 1) as f64).collect();
            let on = norm(&oblique);
            let mut projections: Vec<Vec<f64>> = (0..d)
                .map(|j| dirs.iter().map(|u| u[j]).collect())
                .collect();
            projections.push(
                dirs.iter()
                    .map(|u| u.iter().zip(&oblique).map(|(a, b)| a * b).sum::<f64>() / on)
                    .collect(),
            );
            for (j, mut xs) in projections.into_iter().enumerate() {
                let dist = ks_statistic(&mut xs, cdf);
                assert!(dist < ks_critical(n), "d {d}, projection {j}: D = {dist}");
            }
        }
    }

    #[test]
    fn invalid_parameters_are_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(33);
        assert!(objective_perturbation(&mut rng, 0, 1.0).is_err());
        for bad in [f64::NAN, f64::INFINITY, 0.0, -2.0] {
            assert!(objective_perturbation(&mut rng, 3, bad).is_err());
        }
        let mut out = [0.0; 4];
        fill_objective_perturbation(&mut rng, 1.0, &mut out).unwrap();
        assert!(out.iter().all(|x| x.is_finite()) && norm(&out) > 0.0);
        assert!(fill_objective_perturbation(&mut rng, 1.0, &mut []).is_err());
    }
}
