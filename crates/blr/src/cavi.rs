//! The Gamma-prior variant (robust LR paper eq. 6–7): λ ~ Gamma(a, b), λ₀ ~ Gamma(a₀, b₀)
//! (shape, rate), β | λ₀ ~ N(0, λ₀⁻¹I), y | x, β, λ ~ N(xᵀβ, λ⁻¹), fitted from the sufficient
//! statistics nxx, nxy, nyy by mean-field coordinate ascent q(β) q(λ) q(λ₀). Every update is
//! closed form (the paper used ADVI):
//!
//! - q(β) = N(m, S), S⁻¹ = E\[λ₀\] I + E\[λ\] nxx, m = S E\[λ\] nxy;
//! - q(λ) = Gamma(a + n/2, b + ½ E‖y − Xβ‖²), E‖y − Xβ‖² = nyy − 2mᵀnxy + mᵀ nxx m + tr(nxx S);
//! - q(λ₀) = Gamma(a₀ + d/2, b₀ + ½ (mᵀm + tr S)).
//!
//! With noisy statistics nxx is first repaired (eigenvalues floored at 0, as for the fixed-precision
//! posterior) so S stays positive definite, and the expected residual is floored at 0 so the
//! Gamma rates stay ≥ their priors. All updates run in the eigenbasis of the repaired nxx, so
//! each iteration is O(d).

use crate::error::{Error, Result};
use crate::posterior::RepairedGram;
use crate::stats::SuffStats;

/// Gamma(shape, rate) priors on the precisions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GammaPrior {
    /// Shape a of the noise-precision prior.
    pub a: f64,
    /// Rate b of the noise-precision prior.
    pub b: f64,
    /// Shape a₀ of the coefficient-precision prior.
    pub a0: f64,
    /// Rate b₀ of the coefficient-precision prior.
    pub b0: f64,
}

impl Default for GammaPrior {
    /// a = b = a₀ = b₀ = 2 (robust LR paper).
    fn default() -> Self {
        GammaPrior {
            a: 2.0,
            b: 2.0,
            a0: 2.0,
            b0: 2.0,
        }
    }
}

/// Stopping rule of the coordinate ascent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CaviOptions {
    /// Maximum number of sweeps.
    pub max_iter: usize,
    /// Stop when E\[λ\] and E\[λ₀\] change by less than this, relatively.
    pub tol: f64,
}

impl Default for CaviOptions {
    fn default() -> Self {
        CaviOptions {
            max_iter: 1000,
            tol: 1e-12,
        }
    }
}

/// The fitted mean-field posterior.
#[derive(Clone, Debug)]
pub struct CaviPosterior {
    /// Mean m of q(β) (use it for predictions).
    pub mean: Vec<f64>,
    /// Shape and rate of q(λ).
    pub lambda_shape_rate: (f64, f64),
    /// Shape and rate of q(λ₀).
    pub lambda0_shape_rate: (f64, f64),
    /// Sweeps run.
    pub iterations: usize,
    /// Whether the tolerance was met within `max_iter` sweeps.
    pub converged: bool,
}

impl CaviPosterior {
    /// E\[λ\] under q.
    pub fn expected_lambda(&self) -> f64 {
        self.lambda_shape_rate.0 / self.lambda_shape_rate.1
    }

    /// E\[λ₀\] under q.
    pub fn expected_lambda0(&self) -> f64 {
        self.lambda0_shape_rate.0 / self.lambda0_shape_rate.1
    }
}

/// Fits the Gamma-prior model to `stats` (which must carry Σy²) by coordinate ascent.
pub fn fit_gamma_prior(
    stats: &SuffStats,
    prior: GammaPrior,
    options: CaviOptions,
) -> Result<CaviPosterior> {
    crate::error::check_positive("Gamma prior a", prior.a)?;
    crate::error::check_positive("Gamma prior b", prior.b)?;
    crate::error::check_positive("Gamma prior a0", prior.a0)?;
    crate::error::check_positive("Gamma prior b0", prior.b0)?;
    crate::error::check_positive("CAVI tolerance", options.tol)?;
    if options.max_iter == 0 {
        return Err(Error::Empty {
            what: "CAVI iterations (max_iter)",
        });
    }
    let gram = RepairedGram::new(stats)?;
    let r = gram.to_eigenbasis(&stats.xy);
    let s = &gram.values;
    let shape = prior.a + stats.n as f64 / 2.0;
    let shape0 = prior.a0 + stats.d as f64 / 2.0;
    let (mut e_lambda, mut e_lambda0) = (prior.a / prior.b, prior.a0 / prior.b0);
    let (mut rate, mut rate0) = (prior.b, prior.b0);
    let mut w = vec![0.0; stats.d];
    let mut converged = false;
    let mut iterations = 0;
    while iterations < options.max_iter {
        iterations += 1;
        let prec: Vec<f64> = s.iter().map(|si| e_lambda0 + e_lambda * si).collect();
        for i in 0..stats.d {
            w[i] = e_lambda * r[i] / prec[i];
        }
        let tr_s: f64 = prec.iter().map(|p| 1.0 / p).sum();
        let tr_xx_s: f64 = s.iter().zip(&prec).map(|(si, p)| si / p).sum();
        let m_xx_m: f64 = s.iter().zip(&w).map(|(si, wi)| si * wi * wi).sum();
        let m_xy: f64 = w.iter().zip(&r).map(|(wi, ri)| wi * ri).sum();
        let m_m: f64 = w.iter().map(|wi| wi * wi).sum();
        let residual = (stats.yy - 2.0 * m_xy + m_xx_m + tr_xx_s).max(0.0);
        rate = prior.b + 0.5 * residual;
        rate0 = prior.b0 + 0.5 * (m_m + tr_s);
        let (new_lambda, new_lambda0) = (shape / rate, shape0 / rate0);
        let change = ((new_lambda - e_lambda) / e_lambda)
            .abs()
            .max(((new_lambda0 - e_lambda0) / e_lambda0).abs());
        e_lambda = new_lambda;
        e_lambda0 = new_lambda0;
        if change < options.tol {
            converged = true;
            break;
        }
    }
    // Final q(β) for the final precisions.
    for i in 0..stats.d {
        w[i] = e_lambda * r[i] / (e_lambda0 + e_lambda * s[i]);
    }
    if !(e_lambda.is_finite() && e_lambda0.is_finite()) {
        return Err(Error::NonFinitePrecisions);
    }
    Ok(CaviPosterior {
        mean: gram.from_eigenbasis(&w),
        lambda_shape_rate: (shape, rate),
        lambda0_shape_rate: (shape0, rate0),
        iterations,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posterior::{Prior, posterior};

    fn data() -> SuffStats {
        let (n, d) = (200, 3);
        let x: Vec<f64> = (0..n * d)
            .map(|i| (((i * 37) % 101) as f64 - 50.0) / 29.0)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| 0.8 * x[i * d] - 0.3 * x[i * d + 1] + (((i * 17) % 23) as f64 - 11.0) / 20.0)
            .collect();
        SuffStats::compute(&x, &y, n, d).unwrap()
    }

    #[test]
    fn converges_to_a_fixed_point_of_the_updates() {
        let s = data();
        let q = fit_gamma_prior(&s, GammaPrior::default(), CaviOptions::default()).unwrap();
        assert!(q.converged && q.iterations < 200, "{q:?}");
        // At the fixed point, m is the fixed-precision posterior mean at (E\[λ\], E\[λ₀\]).
        let fixed = posterior(
            &s,
            Prior {
                lambda: q.expected_lambda(),
                lambda0: q.expected_lambda0(),
            },
        )
        .unwrap();
        for (a, b) in q.mean.iter().zip(&fixed.mean) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // The data's residual sd is about 0.33 (uniform on ±0.55 → sd 0.32): E\[λ\] ≈ 1/0.1 = 10.
        assert!(
            q.expected_lambda() > 5.0 && q.expected_lambda() < 20.0,
            "{}",
            q.expected_lambda()
        );
    }

    #[test]
    fn concentrated_gamma_priors_give_the_conjugate_posterior() {
        // Gamma(kλ, k) has mean λ and sd √λ/√k → 0: CAVI must reproduce the conjugate
        // fixed-precision posterior. Tolerance 1e-6 relative: the data move E\[λ\] by O(n/k) = 2e-7.
        let s = data();
        let k = 1e9;
        let prior = GammaPrior {
            a: 2.0 * k,
            b: k,
            a0: 0.5 * k,
            b0: k,
        };
        let q = fit_gamma_prior(&s, prior, CaviOptions::default()).unwrap();
        let exact = posterior(
            &s,
            Prior {
                lambda: 2.0,
                lambda0: 0.5,
            },
        )
        .unwrap();
        for (a, b) in q.mean.iter().zip(&exact.mean) {
            assert!((a - b).abs() < 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn rejects_bad_parameters() {
        let s = data();
        let bad = GammaPrior {
            a: -1.0,
            ..GammaPrior::default()
        };
        assert!(fit_gamma_prior(&s, bad, CaviOptions::default()).is_err());
        let opts = CaviOptions {
            max_iter: 0,
            tol: 1e-9,
        };
        assert!(fit_gamma_prior(&s, GammaPrior::default(), opts).is_err());
    }
}
