//! Floating-point Gaussian and Laplace noise for the trusted-aggregator path.
//!
//! These samplers return `f64` noise. Floating-point noise has a known weakness: the set of
//! reachable values of `x + noise` depends on `x` in the low-order bits (Mironov 2012), so
//! releasing raw sums leaks more than the DP analysis says. DCA clients therefore use the exact
//! integer samplers in [`crate::discrete`]; these functions serve the path where one trusted
//! party adds noise once, and callers should round their released values to a coarse grid.

use rand_core::{CryptoRng, RngCore};
use rand_distr::{Distribution, Exp1, Normal};

use crate::error::positive_finite;
use crate::{Error, Result};

/// Fills `out` with independent N(0, σ²) draws. Errors unless σ is finite and > 0.
pub fn fill_gaussian<R: RngCore + CryptoRng + ?Sized>(
    rng: &mut R,
    sigma: f64,
    out: &mut [f64],
) -> Result<()> {
    positive_finite("sigma", sigma)?;
    let normal = Normal::new(0.0, sigma).map_err(|_| Error::InvalidParameter {
        name: "sigma",
        value: sigma,
        requirement: "finite and > 0",
    })?;
    for x in out.iter_mut() {
        *x = normal.sample(rng);
    }
    Ok(())
}

/// Fills `out` with independent Laplace(0, b) draws (density e^{−|x|/b}/(2b)): an Exp(1) draw
/// times b with a uniformly random sign. Errors unless b is finite and > 0.
pub fn fill_laplace<R: RngCore + CryptoRng + ?Sized>(
    rng: &mut R,
    scale: f64,
    out: &mut [f64],
) -> Result<()> {
    positive_finite("scale", scale)?;
    for x in out.iter_mut() {
        let magnitude: f64 = Exp1.sample(rng);
        let negative = rng.next_u32() & 1 == 1;
        *x = if negative { -magnitude } else { magnitude } * scale;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::special::normal_cdf;
    use crate::test_stats::{ks_critical, ks_statistic};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    const N: usize = 100_000;

    #[test]
    fn gaussian_passes_ks() {
        let mut rng = ChaCha20Rng::seed_from_u64(21);
        for sigma in [0.01, 1.0, 3.5e6] {
            let mut xs = vec![0.0; N];
            fill_gaussian(&mut rng, sigma, &mut xs).unwrap();
            let d = ks_statistic(&mut xs, |x| normal_cdf(x / sigma));
            assert!(d < ks_critical(N), "sigma {sigma}: D = {d}");
            // Power: the same samples against a 10% wider Gaussian are rejected.
            let d_wrong = ks_statistic(&mut xs, |x| normal_cdf(x / (1.1 * sigma)));
            assert!(
                d_wrong > ks_critical(N),
                "sigma {sigma}: D_wrong = {d_wrong}"
            );
        }
    }

    #[test]
    fn laplace_passes_ks() {
        let mut rng = ChaCha20Rng::seed_from_u64(22);
        let laplace_cdf = |b: f64| {
            move |x: f64| {
                if x < 0.0 {
                    0.5 * (x / b).exp()
                } else {
                    1.0 - 0.5 * (-x / b).exp()
                }
            }
        };
        for scale in [0.5, 2.0, 1e4] {
            let mut xs = vec![0.0; N];
            fill_laplace(&mut rng, scale, &mut xs).unwrap();
            let d = ks_statistic(&mut xs, laplace_cdf(scale));
            assert!(d < ks_critical(N), "scale {scale}: D = {d}");
            let d_wrong = ks_statistic(&mut xs, laplace_cdf(1.1 * scale));
            assert!(
                d_wrong > ks_critical(N),
                "scale {scale}: D_wrong = {d_wrong}"
            );
        }
    }

    #[test]
    fn invalid_scales_are_refused_and_leave_output_untouched() {
        let mut rng = ChaCha20Rng::seed_from_u64(23);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            let mut out = [7.0; 3];
            assert!(fill_gaussian(&mut rng, bad, &mut out).is_err());
            assert!(fill_laplace(&mut rng, bad, &mut out).is_err());
            assert_eq!(out, [7.0; 3]);
        }
    }
}
