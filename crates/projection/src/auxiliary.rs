//! Auxiliary synthetic data for choosing projection thresholds without spending privacy
//! (robust LR paper Methods 4.3, eq. 10; DCA paper eq. 4–6).
//!
//! The data are drawn from the same Bayesian linear regression model the learner assumes,
//! x ~ N(0, I_d), β ~ N(0, λ₀⁻¹ I), y | x ~ N(xᵀβ, λ⁻¹), and then every x column and y are scaled
//! to the (DP-estimated) standard deviations of the real data, so that the sensitivity implied by a
//! threshold B = ω·σ meets the same signal size as on the real data. Nothing here touches private
//! data except through the already-released σ, so the search is post-processing.

use rand_core::RngCore;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result, check_bounds};

/// Shape and scales of an auxiliary data set.
#[derive(Clone, Debug, PartialEq)]
pub struct AuxSpec {
    /// Number of records (the same as the real data).
    pub n: usize,
    /// Standard deviation of each x column (the DP estimates of the real data's), length d.
    pub x_scales: Vec<f64>,
    /// Standard deviation of y (the DP estimate of the real data's).
    pub y_scale: f64,
    /// Noise precision λ of the generating model.
    pub lambda: f64,
    /// Prior precision λ₀ of the coefficients.
    pub lambda0: f64,
}

impl AuxSpec {
    /// Validates the specification.
    pub fn validate(&self) -> Result<()> {
        if self.n == 0 {
            return Err(Error::Empty {
                what: "auxiliary data rows",
            });
        }
        if self.x_scales.is_empty() {
            return Err(Error::Empty {
                what: "auxiliary data columns (x_scales)",
            });
        }
        check_bounds(&self.x_scales, "x_scales")?;
        check_bounds(
            &[self.y_scale, self.lambda, self.lambda0],
            "y_scale, lambda, lambda0",
        )
    }

    /// Number of x dimensions.
    pub fn d(&self) -> usize {
        self.x_scales.len()
    }
}

/// One auxiliary data set: row-major `n × d` inputs and `n` targets.
#[derive(Clone, Debug, PartialEq)]
pub struct AuxData {
    /// Row-major `n × d` inputs.
    pub x: Vec<f64>,
    /// Targets.
    pub y: Vec<f64>,
    /// Number of records.
    pub n: usize,
    /// Number of x dimensions.
    pub d: usize,
}

impl AuxData {
    /// Draws a data set from the model in `spec`.
    pub fn generate<R: RngCore>(spec: &AuxSpec, rng: &mut R) -> Result<Self> {
        spec.validate()?;
        let (n, d) = (spec.n, spec.d());
        let mut normal = || -> f64 { StandardNormal.sample(rng) };
        let beta: Vec<f64> = (0..d).map(|_| normal() / spec.lambda0.sqrt()).collect();
        // n is the real data's record count, from the caller: size it without wrapping and
        // without aborting when the memory is not there.
        let values = n.checked_mul(d).ok_or(Error::SizeOverflow {
            what: "auxiliary data",
            rows: n,
            cols: d,
        })?;
        let mut x = Vec::new();
        let mut y = Vec::new();
        let refused = |what, len: usize| Error::Allocation {
            what,
            bytes: len.saturating_mul(size_of::<f64>()),
        };
        x.try_reserve_exact(values)
            .map_err(|_| refused("auxiliary inputs", values))?;
        y.try_reserve_exact(n)
            .map_err(|_| refused("auxiliary targets", n))?;
        // y's model standard deviation; y is rescaled by y_scale / y_sd so its scale matches.
        let y_sd = (beta.iter().map(|b| b * b).sum::<f64>() + 1.0 / spec.lambda).sqrt();
        for _ in 0..n {
            let mut mean = 0.0;
            for (j, b) in beta.iter().enumerate() {
                let z = normal();
                mean += z * b;
                x.push(z * spec.x_scales[j]);
            }
            let target = mean + normal() / spec.lambda.sqrt();
            y.push(target * spec.y_scale / y_sd);
        }
        Ok(AuxData { x, y, n, d })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn spec() -> AuxSpec {
        AuxSpec {
            n: 20_000,
            x_scales: vec![0.5, 2.0, 3.0],
            y_scale: 4.0,
            lambda: 1.0,
            lambda0: 1.0,
        }
    }

    #[test]
    fn scales_match_the_specification() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let aux = AuxData::generate(&spec(), &mut rng).unwrap();
        assert_eq!((aux.x.len(), aux.y.len()), (60_000, 20_000));
        // Sample std of n = 20000 normals has relative sd ≈ 1/sqrt(2n) = 0.005; 5% is > 10 sd.
        for (j, &s) in spec().x_scales.iter().enumerate() {
            let var = aux.x.iter().skip(j).step_by(3).map(|v| v * v).sum::<f64>() / 20_000.0;
            assert!(
                (var.sqrt() / s - 1.0).abs() < 0.05,
                "column {j}: {}",
                var.sqrt()
            );
        }
        let var_y = aux.y.iter().map(|v| v * v).sum::<f64>() / 20_000.0;
        assert!((var_y.sqrt() / 4.0 - 1.0).abs() < 0.05, "{}", var_y.sqrt());
    }

    #[test]
    fn same_seed_same_data_and_bad_spec_rejected() {
        let small = AuxSpec { n: 5, ..spec() };
        let a = AuxData::generate(&small, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        let b = AuxData::generate(&small, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        assert_eq!(a, b);
        let bad = AuxSpec {
            y_scale: -1.0,
            ..small.clone()
        };
        assert!(AuxData::generate(&bad, &mut ChaCha20Rng::seed_from_u64(1)).is_err());
        let bad = AuxSpec { n: 0, ..small };
        assert!(AuxData::generate(&bad, &mut ChaCha20Rng::seed_from_u64(1)).is_err());
    }
}
