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
    /// Draws a data set from the model in `spec` with independent x columns (the papers').
    pub fn generate<R: RngCore>(spec: &AuxSpec, rng: &mut R) -> Result<Self> {
        Self::generate_correlated(spec, 0.0, rng)
    }

    /// Draws a data set from the model in `spec` whose x columns share a common correlation
    /// r ~ U(0, `max_correlation`) (one draw per data set, through a shared factor); 0 gives
    /// the papers' independent columns and the same draws as [`AuxData::generate`].
    ///
    /// Why: with independent columns Σxxᵀ is diagonal, so an estimator that ignores it loses
    /// nothing on auxiliary data. A tiny ω_x makes the fit do exactly that (n·B_x² ≪ λ₀: the
    /// prior stands in for Σxxᵀ and the noise on Σxxᵀ drops out), so a search on independent
    /// columns runs to the bottom of its grid whenever that noise matters, whatever the real
    /// design. Correlated auxiliary designs charge ignoring Σxxᵀ what it costs on correlated
    /// real data.
    pub fn generate_correlated<R: RngCore>(
        spec: &AuxSpec,
        max_correlation: f64,
        rng: &mut R,
    ) -> Result<Self> {
        spec.validate()?;
        check_max_correlation(max_correlation)?;
        let (n, d) = (spec.n, spec.d());
        let beta: Vec<f64> = (0..d)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                z / spec.lambda0.sqrt()
            })
            .collect();
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
        let r = if max_correlation > 0.0 {
            max_correlation * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        } else {
            0.0
        };
        let mut normal = || -> f64 { StandardNormal.sample(rng) };
        // Var(xᵀβ) = (1 − r)‖β‖² + r(Σβ)² under the common correlation r.
        let sum_beta: f64 = beta.iter().sum();
        let signal = (1.0 - r) * beta.iter().map(|b| b * b).sum::<f64>() + r * sum_beta * sum_beta;
        let y_sd = (signal + 1.0 / spec.lambda).sqrt();
        let (shared, own) = (r.sqrt(), (1.0 - r).sqrt());
        for _ in 0..n {
            let mut mean = 0.0;
            let common = if r > 0.0 { normal() } else { 0.0 };
            for (j, b) in beta.iter().enumerate() {
                let z = shared * common + own * normal();
                mean += z * b;
                x.push(z * spec.x_scales[j]);
            }
            let target = mean + normal() / spec.lambda.sqrt();
            y.push(target * spec.y_scale / y_sd);
        }
        Ok(AuxData { x, y, n, d })
    }
}

/// A largest auxiliary correlation must lie in [0, 1).
pub(crate) fn check_max_correlation(max_correlation: f64) -> Result<()> {
    if (0.0..1.0).contains(&max_correlation) {
        Ok(())
    } else {
        Err(Error::OutOfRange {
            what: "auxiliary max correlation",
            value: max_correlation,
            requirement: "in [0, 1)",
        })
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

    /// Sample correlation of columns a and b of a row-major n × d matrix.
    fn correlation(x: &[f64], d: usize, a: usize, b: usize) -> f64 {
        let n = (x.len() / d) as f64;
        let col = |j: usize| x.iter().skip(j).step_by(d).copied().collect::<Vec<f64>>();
        let (u, v) = (col(a), col(b));
        let (mu, mv) = (u.iter().sum::<f64>() / n, v.iter().sum::<f64>() / n);
        let cov = u
            .iter()
            .zip(&v)
            .map(|(p, q)| (p - mu) * (q - mv))
            .sum::<f64>();
        let su = u.iter().map(|p| (p - mu).powi(2)).sum::<f64>().sqrt();
        let sv = v.iter().map(|q| (q - mv).powi(2)).sum::<f64>().sqrt();
        cov / (su * sv)
    }

    #[test]
    fn correlated_designs_keep_the_scales_and_share_a_correlation() {
        let spec = spec();
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut largest: f64 = 0.0;
        for _ in 0..10 {
            let aux = AuxData::generate_correlated(&spec, 0.6, &mut rng).unwrap();
            // n = 20000: a sample correlation's sd is ≤ 1/sqrt(n) ≈ 0.007, so every pair lies
            // in [−0.05, 0.65] and the three pairs agree within 0.05 (7 sd).
            let c: Vec<f64> = [(0, 1), (0, 2), (1, 2)]
                .iter()
                .map(|&(a, b)| correlation(&aux.x, 3, a, b))
                .collect();
            assert!(c.iter().all(|r| (-0.05..0.65).contains(r)), "{c:?}");
            let spread = c.iter().fold(0.0f64, |m, r| m.max((r - c[0]).abs()));
            assert!(spread < 0.05, "{c:?}");
            largest = largest.max(c[0]);
            // The scales are the specification's whatever r is (5% is > 10 sd, as above).
            for (j, &s) in spec.x_scales.iter().enumerate() {
                let sd =
                    (aux.x.iter().skip(j).step_by(3).map(|v| v * v).sum::<f64>() / 20_000.0).sqrt();
                assert!((sd / s - 1.0).abs() < 0.05, "column {j}: {sd}");
            }
            let sd_y = (aux.y.iter().map(|v| v * v).sum::<f64>() / 20_000.0).sqrt();
            assert!((sd_y / 4.0 - 1.0).abs() < 0.05, "{sd_y}");
        }
        // r ~ U(0, 0.6): all ten draws below 0.15 has probability 0.25^10 ≈ 1e-6.
        assert!(largest > 0.15, "{largest}");
    }

    #[test]
    fn zero_correlation_is_the_papers_design() {
        let a = AuxData::generate(&spec(), &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
        let b =
            AuxData::generate_correlated(&spec(), 0.0, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
        assert_eq!(a, b);
        assert!(correlation(&a.x, 3, 0, 1).abs() < 0.05);
        for bad in [1.0, -0.1, f64::NAN] {
            assert!(
                AuxData::generate_correlated(&spec(), bad, &mut ChaCha20Rng::seed_from_u64(3))
                    .is_err()
            );
        }
    }
}
