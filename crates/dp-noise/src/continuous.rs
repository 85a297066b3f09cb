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
