//! PLR: privacy-preserving logistic regression by objective perturbation (stacking paper
//! Alg. 1; Chaudhuri, Monteleoni & Sarwate 2011, Alg. 2).
//!
//! Guarantee: ε-DP for the training data set (replace-one neighbours), proof sketch in
//! `calibration`. The data enter only through rows projected to ‖x‖ ≤ r (a per-record map) and
//! labels ±1; the noise b has density ∝ exp(−ε′‖b‖/2) and comes from a CSPRNG unless the caller
//! picks the explicitly insecure fixed seed. The minimiser is computed to ‖∇f‖ ≤ 1e-8 (the proof
//! assumes the exact minimiser; the residual is far below the noise).

use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use faer::Mat;

use crate::calibration::{Calibration, GroupNoise, check_lambda};
use crate::data::{Dataset, project_row};
use crate::error::{Error, Result};
use crate::model::LogisticModel;
use crate::solver::Objective;

/// Parameters of a PLR fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlrConfig {
    /// Privacy budget ε > 0; `f64::INFINITY` fits the non-private model (no noise, Δ = 0).
    pub epsilon: f64,
    /// Regularisation λ > 0 (strong convexity is what the guarantee rests on).
    pub lambda: f64,
}

/// A fitted PLR model and what it cost.
#[derive(Debug, Clone)]
pub struct PlrFit {
    /// The model (inputs projected to ‖x‖ ≤ 1).
    pub model: LogisticModel,
    /// The guarantee for the training data set: (ε, 0); ε = ∞ for a non-private fit.
    pub privacy: PrivacyLoss,
    /// ε′ and Δ actually used.
    pub calibration: Calibration,
}

/// Fits PLR (Alg. 1) on `data`: rows projected to ‖x‖ ≤ 1, noise from `rng` (use
/// `RngSource::Os` in production).
pub fn fit_plr(data: &Dataset, config: &PlrConfig, rng: &RngSource) -> Result<PlrFit> {
    let calibration = Calibration::plr(config.epsilon, data.n_rows(), config.lambda)?;
    let group = calibration.groups[0];
    let anchor = vec![0.0; data.n_features()];
    let model = fit_perturbed(data, None, group, config.lambda, &anchor, rng)?;
    Ok(PlrFit {
        model,
        privacy: privacy_loss(config.epsilon),
        calibration,
    })
}

/// The guarantee (ε, 0); ε = ∞ is reported as such for non-private fits.
pub(crate) fn privacy_loss(epsilon: f64) -> PrivacyLoss {
    PrivacyLoss {
        epsilon,
        delta: 0.0,
    }
}

/// One objective-perturbation fit: features `columns` of `data` (all when `None`), rows
/// projected to ‖x‖ ≤ q (the group's importance), noise and Δ from `group`, regulariser
/// (λ/2)‖w − anchor‖², noise drawn from `rng`.
pub(crate) fn fit_perturbed(
    data: &Dataset,
    columns: Option<&[usize]>,
    group: GroupNoise,
    lambda: f64,
    anchor: &[f64],
    rng: &RngSource,
) -> Result<LogisticModel> {
    check_lambda(lambda)?;
    let x = projected_rows(data, columns, group.importance);
    let d = x.ncols();
    if anchor.len() != d {
        return Err(Error::DimensionMismatch {
            what: "anchor (source model) length".into(),
            expected: d,
            got: anchor.len(),
        });
    }
    let b = draw_noise(rng, d, group.noise_epsilon)?;
    let weights = Objective {
        x: &x,
        y: &data.y,
        b: &b,
        extra_ridge: group.extra_ridge,
        lambda,
        anchor,
    }
    .minimise()?;
    LogisticModel::new(weights, group.importance)
}

/// Rows of the chosen columns, each projected onto the ball of radius `radius`.
fn projected_rows(data: &Dataset, columns: Option<&[usize]>, radius: f64) -> Mat<f64> {
    let all: Vec<usize>;
    let columns = match columns {
        Some(c) => c,
        None => {
            all = (0..data.n_features()).collect();
            &all
        }
    };
    let mut x = Mat::zeros(data.n_rows(), columns.len());
    let mut row = vec![0.0; columns.len()];
    for i in 0..data.n_rows() {
        for (slot, &j) in row.iter_mut().zip(columns) {
            *slot = data.x[(i, j)];
        }
        project_row(&mut row, radius);
        for (j, &v) in row.iter().enumerate() {
            x[(i, j)] = v;
        }
    }
    x
}

/// b with density ∝ exp(−ε′‖b‖/2) (‖b‖ ~ Gamma(d, 2/ε′), uniform direction); zero for ε′ = ∞.
fn draw_noise(rng: &RngSource, d: usize, noise_epsilon: f64) -> Result<Vec<f64>> {
    if noise_epsilon.is_infinite() {
        return Ok(vec![0.0; d]);
    }
    let mut generator = rng.try_rng().map_err(|e| Error::Noise(e.to_string()))?;
    dp_noise::objective::objective_perturbation(&mut generator, d, noise_epsilon)
        .map_err(|e| Error::Noise(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{
        gamma_cdf_integer_shape, ks_critical, ks_statistic, synthetic, synthetic_dataset,
    };

    /// Rows projected to ‖x‖ ≤ 1 by the test itself.
    fn projected(x: &[f64], d: usize) -> Vec<Vec<f64>> {
        x.chunks(d)
            .map(|r| {
                let norm = r.iter().map(|v| v * v).sum::<f64>().sqrt();
                r.iter().map(|v| v / norm.max(1.0)).collect()
            })
            .collect()
    }

    /// Non-private regularised logistic regression by plain gradient descent (step 1/L with
    /// L = 1/4 + λ ≥ the Hessian's largest eigenvalue for rows of norm ≤ 1), written here
    /// independently of the crate's Newton solver.
    fn reference_fit(rows: &[Vec<f64>], y01: &[f64], lambda: f64) -> Vec<f64> {
        let n = rows.len() as f64;
        let d = rows[0].len();
        let step = 1.0 / (0.25 + lambda);
        let mut w = vec![0.0; d];
        for _ in 0..500_000 {
            let mut g: Vec<f64> = w.iter().map(|wj| lambda * wj).collect();
            for (r, &label) in rows.iter().zip(y01) {
                let y = 2.0 * label - 1.0;
                let z: f64 = r.iter().zip(&w).map(|(a, b)| a * b).sum();
                let c = -y / (1.0 + (y * z).exp()) / n;
                g.iter_mut().zip(r).for_each(|(gj, xj)| *gj += c * xj);
            }
            if g.iter().map(|v| v * v).sum::<f64>().sqrt() < 1e-13 {
                break;
            }
            w.iter_mut().zip(&g).for_each(|(wj, gj)| *wj -= step * gj);
        }
        w
    }

    #[test]
    fn infinite_epsilon_is_plain_regularised_logistic_regression() {
        // scale 1.5 makes many rows longer than 1, so the projection is exercised too.
        let (x, y) = synthetic(80, 4, 1.5, 11);
        let data = Dataset::from_rows(&x, 4, &y).unwrap();
        let config = PlrConfig {
            epsilon: f64::INFINITY,
            lambda: 0.05,
        };
        let fit = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(1)).unwrap();
        let reference = reference_fit(&projected(&x, 4), &y, 0.05);
        for (a, b) in fit.model.weights().iter().zip(&reference) {
            assert!(
                (a - b).abs() < 1e-8,
                "{:?} vs {reference:?}",
                fit.model.weights()
            );
        }
        assert_eq!(fit.privacy.epsilon, f64::INFINITY);
        // no noise: the seed does not matter
        let again = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(2)).unwrap();
        assert_eq!(again.model.weights(), fit.model.weights());
    }

    /// Recovers b from the optimality condition of a fit:
    /// 0 = ∇f = (1/n)Σ −y σ(−y z) x + b/n + (Δ+λ) w  ⇒  b = Σ y σ(−y z) x − n(Δ+λ) w.
    fn recovered_noise(rows: &[Vec<f64>], y01: &[f64], w: &[f64], ridge: f64) -> Vec<f64> {
        let n = rows.len() as f64;
        let mut b: Vec<f64> = w.iter().map(|wj| -n * ridge * wj).collect();
        for (r, &label) in rows.iter().zip(y01) {
            let y = 2.0 * label - 1.0;
            let z: f64 = r.iter().zip(w).map(|(a, c)| a * c).sum();
            let c = y / (1.0 + (y * z).exp());
            b.iter_mut().zip(r).for_each(|(bj, xj)| *bj += c * xj);
        }
        b
    }

    /// Fits PLR `m` times with different seeds and checks the recovered noise: ‖b‖ against
    /// Gamma(d, 2/ε_noise) (and not against the uncorrected 2/ε), direction uniform (for d = 3
    /// a coordinate of a uniform unit vector is Uniform(−1, 1)). KS at α = 1e-6.
    fn check_noise(epsilon: f64, expect_noise_epsilon: f64, expect_extra_ridge: f64) {
        let (n, d, lambda, m) = (30, 3, 0.01, 400);
        let (x, y) = synthetic(n, d, 1.0, 5);
        let rows = projected(&x, d);
        let data = Dataset::from_rows(&x, d, &y).unwrap();
        let config = PlrConfig { epsilon, lambda };
        let mut norms = Vec::with_capacity(m);
        let mut first_direction = Vec::with_capacity(m);
        for seed in 0..m as u64 {
            let fit = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(seed)).unwrap();
            let g = fit.calibration.groups[0];
            assert!((g.noise_epsilon - expect_noise_epsilon).abs() < 1e-12);
            assert!((g.extra_ridge - expect_extra_ridge).abs() < 1e-12);
            let b = recovered_noise(&rows, &y, fit.model.weights(), lambda + g.extra_ridge);
            let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
            norms.push(norm);
            first_direction.push(b[0] / norm);
        }
        let critical = ks_critical(m);
        let theta = 2.0 / expect_noise_epsilon;
        let ks = ks_statistic(norms.clone(), |v| gamma_cdf_integer_shape(v, d, theta));
        assert!(ks < critical, "‖b‖ vs Gamma({d}, {theta}): D = {ks}");
        let wrong = ks_statistic(norms, |v| gamma_cdf_integer_shape(v, d, 2.0 / epsilon));
        assert!(
            wrong > critical,
            "the test cannot tell ε′ from ε: D = {wrong}"
        );
        let ks_dir = ks_statistic(first_direction, |v| ((v + 1.0) / 2.0).clamp(0.0, 1.0));
        assert!(ks_dir < critical, "direction: D = {ks_dir}");
    }

    #[test]
    fn fit_uses_noise_calibrated_to_epsilon_prime() {
        // ε = 2, n = 30, λ = 0.01: nλ = 0.3, log(1 + 1/0.6 + 1/1.44) = log(3.3611111) =
        // 1.2122373; ε′ = 0.7877627 > 0, Δ = 0.
        let eps_prime = 2.0 - (1.0f64 + 1.0 / 0.6 + 1.0 / 1.44).ln();
        check_noise(2.0, eps_prime, 0.0);
    }

    #[test]
    fn fit_uses_extra_ridge_branch_when_epsilon_prime_is_not_positive() {
        // ε = 1: ε′ = 1 − 1.2122373 < 0 ⇒ noise at ε/2 = 0.5 and
        // Δ = 1/(4·30·(e^{1/4} − 1)) − 0.01 = 1/(120 · 0.2840254) − 0.01 = 0.0193400.
        let extra = 1.0 / (120.0 * (0.25f64.exp() - 1.0)) - 0.01;
        check_noise(1.0, 0.5, extra);
    }

    #[test]
    fn private_fit_is_reproducible_only_under_the_same_seed() {
        let data = synthetic_dataset(50, 3, 1.0, 3);
        let config = PlrConfig {
            epsilon: 1.0,
            lambda: 0.1,
        };
        let a = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(9)).unwrap();
        let b = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(9)).unwrap();
        let c = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(10)).unwrap();
        assert_eq!(a.model.weights(), b.model.weights());
        assert_ne!(a.model.weights(), c.model.weights());
        assert_eq!(a.privacy.epsilon, 1.0);
        assert_eq!(a.privacy.delta, 0.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let data = synthetic_dataset(20, 2, 1.0, 3);
        let rng = RngSource::InsecureFixedSeed(0);
        for (epsilon, lambda) in [
            (1.0, 0.0),
            (1.0, -1.0),
            (1.0, f64::NAN),
            (0.0, 0.1),
            (-1.0, 0.1),
        ] {
            assert!(matches!(
                fit_plr(&data, &PlrConfig { epsilon, lambda }, &rng),
                Err(Error::InvalidParameter { .. })
            ));
        }
        let model = fit_plr(
            &data,
            &PlrConfig {
                epsilon: 1.0,
                lambda: 0.1,
            },
            &rng,
        )
        .unwrap()
        .model;
        assert!(model.predict_proba(&[0.1, f64::NAN]).is_err());
        assert!(model.predict_proba(&[0.1, 0.2, 0.3]).is_err());
        assert!(model.predict_proba(&[]).is_err());
        assert_eq!(model.predict_proba(&[0.1, 0.2, 0.3, 0.4]).unwrap().len(), 2);
    }
}
