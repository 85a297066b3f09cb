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
use std::borrow::Cow;

use faer::Mat;

use crate::calibration::{Calibration, GroupNoise, check_lambda};
use crate::data::{Dataset, clip_factor};
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
    let rows = projected_rows(data, columns, group.importance);
    let d = rows.x.ncols();
    if anchor.len() != d {
        return Err(Error::DimensionMismatch {
            what: "anchor (source model) length".into(),
            expected: d,
            got: anchor.len(),
        });
    }
    let b = draw_noise(rng, d, group.noise_epsilon)?;
    let weights = Objective {
        x: rows.x.as_ref().as_ref(),
        row_scale: &rows.scale,
        y: &data.y,
        b: &b,
        extra_ridge: group.extra_ridge,
        lambda,
        anchor,
    }
    .minimise()?;
    LogisticModel::new(weights, group.importance)
}

/// Rows of the chosen columns, each clipped into the ball of radius `radius`: the columns (the
/// data set's own matrix when all are chosen, else a column-major copy of those chosen) and one
/// factor per row, which the solver applies as it reads a row. Same arithmetic as
/// [`project_row`](crate::data::project_row) — squares summed in column order, one factor per
/// row.
fn projected_rows<'a>(data: &'a Dataset, columns: Option<&[usize]>, radius: f64) -> Projected<'a> {
    let x = match columns {
        None => Cow::Borrowed(&data.x),
        Some(columns) => {
            let mut chosen = Mat::zeros(data.n_rows(), columns.len());
            for (jj, &j) in columns.iter().enumerate() {
                chosen
                    .col_mut(jj)
                    .try_as_col_major_mut()
                    .expect("columns of a faer Mat are contiguous")
                    .as_slice_mut()
                    .copy_from_slice(column(data, j));
            }
            Cow::Owned(chosen)
        }
    };
    let mut norm_sq = vec![0.0; data.n_rows()];
    for j in 0..x.ncols() {
        let values = x
            .col(j)
            .try_as_col_major()
            .expect("columns of a faer Mat are contiguous")
            .as_slice();
        for (acc, &v) in norm_sq.iter_mut().zip(values) {
            *acc += v * v;
        }
    }
    let scale = norm_sq.iter().map(|&s| clip_factor(s, radius)).collect();
    Projected { x, scale }
}

/// The rows s_i·x_i of [`projected_rows`].
struct Projected<'a> {
    x: Cow<'a, Mat<f64>>,
    scale: Vec<f64>,
}

/// Column `j` of the data set's features (faer stores an owned matrix column by column).
fn column(data: &Dataset, j: usize) -> &[f64] {
    data.x
        .col(j)
        .try_as_col_major()
        .expect("columns of a faer Mat are contiguous")
        .as_slice()
}

/// b with density ∝ exp(−ε′‖b‖/2) (‖b‖ ~ Gamma(d, 2/ε′), uniform direction); zero for ε′ = ∞.
fn draw_noise(rng: &RngSource, d: usize, noise_epsilon: f64) -> Result<Vec<f64>> {
    if noise_epsilon.is_infinite() {
        return Ok(vec![0.0; d]);
    }
    let mut generator = rng.try_rng()?;
    Ok(dp_noise::objective::objective_perturbation(
        &mut generator,
        d,
        noise_epsilon,
    )?)
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

/// The two facts the PST-F calibration rests on (see `calibration`), checked on what the fits
/// actually feed the solver: clipped group rows.
#[cfg(test)]
mod clip_tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// Uniform in [−scale, scale) from 53 random bits.
    fn uniform(rng: &mut ChaCha20Rng, scale: f64) -> f64 {
        ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
    }

    /// Row i of Xᵀ (column i) as a vector.
    fn record(rows: &Projected<'_>, i: usize) -> Vec<f64> {
        (0..rows.x.ncols())
            .map(|j| rows.x[(i, j)] * rows.scale[i])
            .collect()
    }

    fn norm(v: &[f64]) -> f64 {
        v.iter().map(|a| a * a).sum::<f64>().sqrt()
    }

    #[test]
    fn clipped_groups_respect_their_radius() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let (n, d) = (200, 9);
        for trial in 0..50 {
            // Row scales from 1e-3 to 1e3: some rows far inside, some far outside the ball.
            let scale = 10f64.powf(uniform(&mut rng, 3.0));
            let x: Vec<f64> = (0..n * d).map(|_| uniform(&mut rng, scale)).collect();
            let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
            let data = Dataset::from_rows(&x, d, &y).unwrap();
            let group: Vec<usize> = (0..d).filter(|j| (j + trial) % 3 != 0).collect();
            let radius = uniform(&mut rng, 0.5) + 0.5;
            let xt = projected_rows(&data, Some(&group), radius);
            for i in 0..n {
                let clipped = record(&xt, i);
                let raw: Vec<f64> = group.iter().map(|&j| x[i * d + j]).collect();
                assert!(
                    norm(&clipped) <= radius * (1.0 + 1e-12),
                    "trial {trial} row {i}"
                );
                if norm(&raw) <= radius {
                    assert_eq!(clipped, raw, "rows inside the ball are kept as they are");
                } else {
                    // Same direction, on the sphere.
                    assert!((norm(&clipped) - radius).abs() <= 1e-12 * radius);
                    let cos: f64 = clipped.iter().zip(&raw).map(|(a, b)| a * b).sum::<f64>()
                        / (norm(&clipped) * norm(&raw));
                    assert!((cos - 1.0).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn worst_case_neighbours_stay_within_the_calibrated_bounds() {
        // Neighbouring data sets differ in one record. The calibration assumes that the
        // gradient of n·f moves by at most 2q (so ‖b − b′‖ ≤ 2q reaches the same minimiser) and
        // that one record's Hessian term has eigenvalue at most q²/4. Adversarial records: huge
        // norms, aligned with ±w (largest |σ(−z)|) or orthogonal to w (largest ℓ″ = 1/4),
        // opposite labels.
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let d = 5;
        let group: Vec<usize> = vec![0, 2, 3];
        for _ in 0..200 {
            let radius = uniform(&mut rng, 0.5) + 0.5;
            let w: Vec<f64> = (0..group.len()).map(|_| uniform(&mut rng, 3.0)).collect();
            let mut candidates: Vec<Vec<f64>> = Vec::new();
            let big = 10f64.powf(uniform(&mut rng, 6.0).abs());
            let mut along = vec![0.0; d];
            let mut across = vec![0.0; d];
            for (gi, &j) in group.iter().enumerate() {
                along[j] = w[gi] * big;
            }
            // A direction orthogonal to w inside the group: (w1, −w0, 0).
            across[group[0]] = w[1] * big;
            across[group[1]] = -w[0] * big;
            candidates.push(along.clone());
            candidates.push(along.iter().map(|v| -v).collect());
            candidates.push(across);
            candidates.push((0..d).map(|_| uniform(&mut rng, big)).collect());
            let x: Vec<f64> = candidates.concat();
            let y = [1.0, 0.0, 1.0, 0.0];
            let data = Dataset::from_rows(&x, d, &y).unwrap();
            let xt = projected_rows(&data, Some(&group), radius);
            let signed = [1.0, -1.0, 1.0, -1.0];
            let gradient = |i: usize| -> Vec<f64> {
                let r = record(&xt, i);
                let z: f64 = signed[i] * r.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
                let s = 1.0 / (1.0 + z.exp()); // σ(−z)
                r.iter().map(|v| -signed[i] * s * v).collect()
            };
            for (i, &label) in signed.iter().enumerate() {
                let r = record(&xt, i);
                let z: f64 = label * r.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>();
                let p = 1.0 / (1.0 + (-z).exp());
                let hessian_eigenvalue = p * (1.0 - p) * norm(&r).powi(2);
                assert!(hessian_eigenvalue <= radius * radius / 4.0 * (1.0 + 1e-12));
                for k in 0..4 {
                    let (gi, gk) = (gradient(i), gradient(k));
                    let moved: Vec<f64> = gi.iter().zip(&gk).map(|(a, b)| a - b).collect();
                    assert!(norm(&moved) <= 2.0 * radius * (1.0 + 1e-12));
                }
            }
        }
    }
}
