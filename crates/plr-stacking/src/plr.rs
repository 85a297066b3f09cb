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
use crate::data::{Dataset, FeatureRange, check_ranges, clip_factor};
use crate::error::{Error, Result};
use crate::model::{LogisticModel, feature_radius, intercept_constant, map_row};
use crate::solver::Objective;

/// Parameters of a PLR fit.
#[derive(Debug, Clone, PartialEq)]
pub struct PlrConfig {
    /// Privacy budget ε > 0; `f64::INFINITY` fits the non-private model (no noise, Δ = 0).
    pub epsilon: f64,
    /// Regularisation λ > 0 (strong convexity is what the guarantee rests on). With an
    /// intercept it also shrinks the intercept's solver weight w_c (see [`LogisticModel`]).
    pub lambda: f64,
    /// Estimate an intercept: the solver sees (φ(x), c) with c = 1/√2 and φ(x) clipped to
    /// ‖φ(x)‖ ≤ 1/√2, so the row still has norm ≤ 1 and the calibration is unchanged (module
    /// docs). On in [`PlrConfig::new`].
    pub intercept: bool,
    /// Public ranges, one per feature (codebooks, physical limits — never the private data):
    /// each value is clamped into its range and mapped onto [−1, 1] around the range's
    /// midpoint before the norm clipping. `None`: the features are used as given.
    pub ranges: Option<Vec<FeatureRange>>,
}

impl PlrConfig {
    /// ε and λ with an intercept and no public ranges.
    pub fn new(epsilon: f64, lambda: f64) -> Self {
        PlrConfig {
            epsilon,
            lambda,
            intercept: true,
            ranges: None,
        }
    }
}

/// A fitted PLR model and what it cost.
#[derive(Debug, Clone)]
pub struct PlrFit {
    /// The model; it maps raw rows as the fit did ([`LogisticModel::predict_proba`] takes rows
    /// in the data's units).
    pub model: LogisticModel,
    /// The guarantee for the training data set: (ε, 0); ε = ∞ for a non-private fit.
    pub privacy: PrivacyLoss,
    /// ε′ and Δ actually used.
    pub calibration: Calibration,
}

/// Fits PLR (Alg. 1) on `data`: rows mapped as `config` says and projected to ‖x‖ ≤ 1 (with
/// the intercept's constant inside that ball), noise from `rng` (use `RngSource::Os` in
/// production).
pub fn fit_plr(data: &Dataset, config: &PlrConfig, rng: &RngSource) -> Result<PlrFit> {
    let calibration = Calibration::plr(config.epsilon, data.n_rows(), config.lambda)?;
    let group = calibration.groups[0];
    if let Some(r) = &config.ranges {
        check_ranges(r, data.n_features())?;
    }
    let input = InputSpec {
        intercept: config.intercept,
        ranges: config.ranges.as_deref(),
    };
    let anchor = vec![0.0; data.n_features() + usize::from(config.intercept)];
    let model = fit_perturbed(data, None, group, config.lambda, &anchor, input, rng)?;
    Ok(PlrFit {
        model,
        privacy: privacy_loss(config.epsilon),
        calibration,
    })
}

/// How a fit maps its rows before the solver sees them: an appended constant (intercept) and
/// public ranges of the chosen columns (in the order of the columns).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct InputSpec<'a> {
    pub intercept: bool,
    pub ranges: Option<&'a [FeatureRange]>,
}

/// The guarantee (ε, 0); ε = ∞ is reported as such for non-private fits.
pub(crate) fn privacy_loss(epsilon: f64) -> PrivacyLoss {
    PrivacyLoss {
        epsilon,
        delta: 0.0,
    }
}

/// One objective-perturbation fit: features `columns` of `data` (all when `None`), rows mapped
/// by `input` and projected so that the solver's row — with the intercept's constant when
/// asked — has norm ≤ q (the group's importance), noise and Δ from `group`, regulariser
/// (λ/2)‖w − anchor‖² over every solver weight (the intercept's too: the calibration needs
/// the objective λ-strongly convex in all of them), noise drawn from `rng`.
///
/// Why the intercept keeps the guarantee: the calibration (stacking paper Alg. 1, Chaudhuri et
/// al. 2011 Thm 9; PST-F's `calibration`) uses the data only through ‖row‖ ≤ q, |ℓ′| ≤ 1 and
/// 0 ≤ ℓ″ ≤ 1/4; it does not depend on the dimension. The row (φ(x), c) with ‖φ(x)‖ ≤ q/√2 and
/// c = q/√2 has ‖·‖² ≤ q²/2 + q²/2 = q², and φ is a fixed per-record map of public constants
/// (the ranges, q): the same ε′ and Δ hold, and the noise b is drawn in d + 1 dimensions.
pub(crate) fn fit_perturbed(
    data: &Dataset,
    columns: Option<&[usize]>,
    group: GroupNoise,
    lambda: f64,
    anchor: &[f64],
    input: InputSpec<'_>,
    rng: &RngSource,
) -> Result<LogisticModel> {
    check_lambda(lambda)?;
    let rows = projected_rows(data, columns, group.importance, input);
    let d = rows.x.ncols();
    if anchor.len() != d {
        return Err(Error::DimensionMismatch {
            what: "anchor (source model) length".into(),
            expected: d,
            got: anchor.len(),
        });
    }
    let b = draw_noise(rng, d, group.noise_epsilon)?;
    let mut weights = Objective {
        x: rows.x.as_ref().as_ref(),
        row_scale: &rows.scale,
        y: &data.y,
        b: &b,
        extra_ridge: group.extra_ridge,
        lambda,
        anchor,
    }
    .minimise()?;
    let intercept = if input.intercept {
        let w_c = weights.pop().expect("the solver returns d + 1 weights");
        Some(w_c * intercept_constant(group.importance))
    } else {
        None
    };
    LogisticModel::with_input_map(
        weights,
        intercept,
        group.importance,
        input.ranges.map(<[FeatureRange]>::to_vec),
    )
}

/// Rows of the chosen columns as the solver reads them: the columns (the data set's own
/// matrix when all are chosen and nothing is mapped, else a column-major copy) and one factor
/// per row, which the solver applies as it reads a row. Without ranges or intercept: each row
/// clipped into the ball of radius `radius` by its factor — same arithmetic as
/// [`project_row`](crate::data::project_row), squares summed in column order. With either:
/// each row mapped by [`map_row`] into the ball of radius r_x (r/√2 with an intercept), the
/// constant c = r/√2 appended, factors 1.
fn projected_rows<'a>(
    data: &'a Dataset,
    columns: Option<&[usize]>,
    radius: f64,
    input: InputSpec<'_>,
) -> Projected<'a> {
    if input.intercept || input.ranges.is_some() {
        return mapped_rows(data, columns, radius, input);
    }
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

/// [`projected_rows`] with ranges or an intercept: an owned n × (d + intercept) copy, each row
/// mapped by [`map_row`], the constant column c = r/√2, factors 1.
fn mapped_rows<'a>(
    data: &'a Dataset,
    columns: Option<&[usize]>,
    radius: f64,
    input: InputSpec<'_>,
) -> Projected<'a> {
    let all: Vec<usize>;
    let columns = match columns {
        Some(c) => c,
        None => {
            all = (0..data.n_features()).collect();
            &all
        }
    };
    let d = columns.len();
    let width = d + usize::from(input.intercept);
    let r_x = feature_radius(radius, input.intercept);
    let c = intercept_constant(radius);
    let mut x = Mat::zeros(data.n_rows(), width);
    let mut row = vec![0.0; d];
    for i in 0..data.n_rows() {
        for (v, &j) in row.iter_mut().zip(columns) {
            *v = data.x[(i, j)];
        }
        map_row(&mut row, input.ranges, r_x);
        for (jj, &v) in row.iter().enumerate() {
            x[(i, jj)] = v;
        }
        if input.intercept {
            x[(i, d)] = c;
        }
    }
    Projected {
        x: Cow::Owned(x),
        scale: vec![1.0; data.n_rows()],
    }
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
            intercept: false,
            ..PlrConfig::new(f64::INFINITY, 0.05)
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
        check_noise_with(epsilon, expect_noise_epsilon, expect_extra_ridge, false);
        check_noise_with(epsilon, expect_noise_epsilon, expect_extra_ridge, true);
    }

    /// Rows (x·min(1, (1/√2)/‖x‖), 1/√2): the intercept's solver rows, built by the test.
    fn with_constant(x: &[f64], d: usize) -> Vec<Vec<f64>> {
        let h = 0.5f64.sqrt();
        x.chunks(d)
            .map(|r| {
                let norm = r.iter().map(|v| v * v).sum::<f64>().sqrt();
                let mut row: Vec<f64> = r.iter().map(|v| v * (h / norm).min(1.0)).collect();
                row.push(h);
                row
            })
            .collect()
    }

    /// As [`check_noise`], for a fit with or without intercept; the noise lives in the solver's
    /// d = 3 dimensions either way (3 features, or 2 features and the constant), so the same
    /// Gamma(3, 2/ε′) and uniform-direction checks apply — and ε′, Δ are the same as without.
    fn check_noise_with(
        epsilon: f64,
        expect_noise_epsilon: f64,
        expect_extra_ridge: f64,
        intercept: bool,
    ) {
        let (n, d, lambda, m) = (30, 3, 0.01, 400);
        let features = d - usize::from(intercept);
        let (x, y) = synthetic(n, features, 1.0, 5);
        let rows = if intercept {
            with_constant(&x, features)
        } else {
            projected(&x, features)
        };
        let data = Dataset::from_rows(&x, features, &y).unwrap();
        let config = PlrConfig {
            intercept,
            ..PlrConfig::new(epsilon, lambda)
        };
        let mut norms = Vec::with_capacity(m);
        let mut first_direction = Vec::with_capacity(m);
        for seed in 0..m as u64 {
            let fit = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(seed)).unwrap();
            let g = fit.calibration.groups[0];
            assert!((g.noise_epsilon - expect_noise_epsilon).abs() < 1e-12);
            assert!((g.extra_ridge - expect_extra_ridge).abs() < 1e-12);
            let w = fit.model.solver_weights();
            assert_eq!(w.len(), d);
            let b = recovered_noise(&rows, &y, &w, lambda + g.extra_ridge);
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

    /// Labels that depend on x only through an offset: x = 0.025, 0.05, …, 0.6 (all > 0),
    /// y = 1 iff x > 0.3. Without intercept the margin w·x has one sign for every row, so the
    /// model predicts one class: accuracy 12/24 = 0.5 exactly. With it, the boundary can sit at
    /// 0.3.
    #[test]
    fn intercept_classifies_an_offset_that_the_plain_model_cannot() {
        let x: Vec<f64> = (1..=24).map(|k| 0.025 * k as f64).collect();
        // Labels from the index (k > 12), not from 0.025·k > 0.3, which rounds k = 12 up.
        let y: Vec<f64> = (1..=24).map(|k| f64::from(u8::from(k > 12))).collect();
        let data = Dataset::from_rows(&x, 1, &y).unwrap();
        let accuracy = |config: &PlrConfig| {
            let fit = fit_plr(&data, config, &RngSource::InsecureFixedSeed(1)).unwrap();
            let p = fit.model.predict_proba(&x).unwrap();
            let right = p
                .iter()
                .zip(&y)
                .filter(|(p, y)| (**p > 0.5) == (**y == 1.0))
                .count();
            right as f64 / 24.0
        };
        let plain = PlrConfig {
            intercept: false,
            ..PlrConfig::new(f64::INFINITY, 1e-4)
        };
        let with = PlrConfig::new(f64::INFINITY, 1e-4);
        assert_eq!(accuracy(&plain), 0.5);
        let a = accuracy(&with);
        assert!(a >= 0.95, "accuracy with intercept {a}");
        // The same data in other units, x·10 in a public range [0, 10]: centred at 5, so the
        // plain model's boundary sits at x = 5 and it gets x in (3, 5] wrong (8 rows of 24:
        // 16/24); the intercept moves the boundary to 3.
        let x10: Vec<f64> = x.iter().map(|v| v * 10.0).collect();
        let data10 = Dataset::from_rows(&x10, 1, &y).unwrap();
        let ranges = Some(vec![FeatureRange::new(0.0, 10.0).unwrap()]);
        let accuracy10 = |config: &PlrConfig| {
            let fit = fit_plr(&data10, config, &RngSource::InsecureFixedSeed(1)).unwrap();
            let p = fit.model.predict_proba(&x10).unwrap();
            let right = p
                .iter()
                .zip(&y)
                .filter(|(p, y)| (**p > 0.5) == (**y == 1.0))
                .count();
            right as f64 / 24.0
        };
        let plain10 = PlrConfig {
            ranges: ranges.clone(),
            ..plain.clone()
        };
        let with10 = PlrConfig { ranges, ..with };
        assert_eq!(accuracy10(&plain10), 16.0 / 24.0);
        let a10 = accuracy10(&with10);
        assert!(a10 >= 0.95, "accuracy with intercept and ranges {a10}");
        // Private at ε = 5 (n = 24 is tiny; the noise is large): still better than the plain
        // model's 0.5 on most seeds — not asserted per seed, only on the mean of 50.
        let mean: f64 = (0..50)
            .map(|seed| {
                let config = PlrConfig::new(5.0, 0.1);
                let fit = fit_plr(&data, &config, &RngSource::InsecureFixedSeed(seed)).unwrap();
                let p = fit.model.predict_proba(&x).unwrap();
                p.iter()
                    .zip(&y)
                    .filter(|(p, y)| (**p > 0.5) == (**y == 1.0))
                    .count() as f64
                    / 24.0
            })
            .sum::<f64>()
            / 50.0;
        assert!(mean > 0.6, "mean private accuracy with intercept {mean}");
    }

    #[test]
    fn intercept_fit_at_infinite_epsilon_is_the_reference_on_rows_with_a_constant() {
        let (x, y) = synthetic(80, 3, 1.5, 11);
        let data = Dataset::from_rows(&x, 3, &y).unwrap();
        let fit = fit_plr(
            &data,
            &PlrConfig::new(f64::INFINITY, 0.05),
            &RngSource::InsecureFixedSeed(1),
        )
        .unwrap();
        let reference = reference_fit(&with_constant(&x, 3), &y, 0.05);
        // The solver stops at ‖∇f‖ ≤ 1e-8 and f is λ = 0.05 strongly convex, so its weights are
        // within 1e-8/0.05 = 2e-7 of the minimiser.
        let w = fit.model.weights();
        for j in 0..3 {
            assert!((w[j] - reference[j]).abs() < 2e-7, "{w:?} vs {reference:?}");
        }
        // a = w_c · c with c = 1/√2
        let a = fit.model.intercept().unwrap();
        assert!((a - reference[3] * 0.5f64.sqrt()).abs() < 2e-7);
        assert!(
            reference[3].abs() > 0.1,
            "the data need an intercept: {reference:?}"
        );
        assert_eq!(fit.model.input_radius(), 1.0);
    }

    /// The solver's rows with ranges and an intercept, against values computed by hand.
    /// Ranges [0, 4] (centre 2, half-width 2) and [−1, 1]; radius 1, so r_x = c = 1/√2.
    /// Row (6, −1): clamp → (4, −1), map → (1, −1), ‖·‖ = √2 > 1/√2 → ×(1/√2)/√2 = ½ →
    /// (0.5, −0.5), then c: (0.5, −0.5, 0.70710678). Row (3, 0.25): (0.5, 0.25), ‖·‖² = 0.3125
    /// < 0.5, kept: (0.5, 0.25, 0.70710678).
    #[test]
    fn mapped_rows_match_hand_values() {
        let data = Dataset::from_rows(&[6.0, -1.0, 3.0, 0.25], 2, &[1.0, 0.0]).unwrap();
        let ranges = [
            FeatureRange::new(0.0, 4.0).unwrap(),
            FeatureRange::new(-1.0, 1.0).unwrap(),
        ];
        let input = InputSpec {
            intercept: true,
            ranges: Some(&ranges),
        };
        let rows = projected_rows(&data, None, 1.0, input);
        let c = 0.5f64.sqrt(); // 0.70710678…
        let expect = [[0.5, -0.5, c], [0.5, 0.25, c]];
        for (i, e) in expect.iter().enumerate() {
            for (j, &v) in e.iter().enumerate() {
                assert!(
                    (rows.x[(i, j)] * rows.scale[i] - v).abs() < 1e-15,
                    "({i}, {j})"
                );
            }
        }
        // The model applies the same map to raw rows: w = (1, 2), a = 0.25.
        // (6, −1) → 0.5 − 1 + 0.25 = −0.25; (0, 0) → (−1, 0) → (−0.70710678, 0) → −0.45710678.
        let model =
            LogisticModel::with_input_map(vec![1.0, 2.0], Some(0.25), 1.0, Some(ranges.to_vec()))
                .unwrap();
        let m = model.decision_function(&[6.0, -1.0, 0.0, 0.0]).unwrap();
        assert!((m[0] + 0.25).abs() < 1e-15, "{m:?}");
        assert!((m[1] + 0.457_106_781_186_547_5).abs() < 1e-15, "{m:?}");
    }

    /// The bound the calibration needs, ‖solver row‖ ≤ r, for rows far outside their ranges
    /// and for rows without ranges, at radii r of PLR (1) and of PST-F groups (< 1).
    #[test]
    fn rows_with_a_constant_stay_in_the_ball() {
        let x = [1e9, -1e9, 0.0, 0.0, 5.0, 1e-12, -3.0, 2.0];
        let data = Dataset::from_rows(&x, 2, &[1.0, 0.0, 1.0, 0.0]).unwrap();
        let ranges = [
            FeatureRange::new(-1.0, 3.0).unwrap(),
            FeatureRange::new(10.0, 20.0).unwrap(),
        ];
        for radius in [1.0, 0.6, 0.05] {
            for r in [None, Some(&ranges[..])] {
                let input = InputSpec {
                    intercept: true,
                    ranges: r,
                };
                let rows = projected_rows(&data, None, radius, input);
                for i in 0..4 {
                    let norm: f64 = (0..3)
                        .map(|j| (rows.x[(i, j)] * rows.scale[i]).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(norm <= radius * (1.0 + 1e-15), "r {radius} row {i}: {norm}");
                    assert_eq!(rows.x[(i, 2)], radius * 0.5f64.sqrt());
                }
            }
        }
    }

    /// PST-F's group k reads its columns, mapped by their ranges in the group's order, in the
    /// ball of radius q_k < 1: ‖solver row‖ ≤ q_k for rows far outside their ranges, with and
    /// without intercept. Row (1e9, 7, −1e9), group (2, 0) with ranges [10, 20] and [−1, 3]:
    /// clamp → (10, 3), map → (−1, 1), norm √2, clipped to r_x (q_k, or q_k/√2 with the
    /// constant): (−r_x/√2, r_x/√2).
    #[test]
    fn group_rows_far_outside_their_ranges_stay_in_the_ball() {
        let x = [1e9, 7.0, -1e9, -1e12, 0.0, 1e12, 1.0, 0.0, 15.0];
        let data = Dataset::from_rows(&x, 3, &[1.0, 0.0, 1.0]).unwrap();
        let group = [2, 0];
        let ranges = [
            FeatureRange::new(10.0, 20.0).unwrap(),
            FeatureRange::new(-1.0, 3.0).unwrap(),
        ];
        for q in [0.7, 0.3, 0.05] {
            for intercept in [false, true] {
                let input = InputSpec {
                    intercept,
                    ranges: Some(&ranges),
                };
                let rows = projected_rows(&data, Some(&group), q, input);
                let r_x = if intercept { q * 0.5f64.sqrt() } else { q };
                let width = 2 + usize::from(intercept);
                assert_eq!(rows.x.ncols(), width);
                for i in 0..3 {
                    let row: Vec<f64> =
                        (0..width).map(|j| rows.x[(i, j)] * rows.scale[i]).collect();
                    let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
                    assert!(norm <= q * (1.0 + 1e-15), "q {q} row {i}: {norm}");
                }
                let first: Vec<f64> = (0..2).map(|j| rows.x[(0, j)] * rows.scale[0]).collect();
                let corner = r_x * 0.5f64.sqrt();
                assert!((first[0] + corner).abs() < 1e-15 && (first[1] - corner).abs() < 1e-15);
                if intercept {
                    assert_eq!(rows.x[(0, 2)], q * 0.5f64.sqrt());
                }
            }
        }
    }

    #[test]
    fn bad_ranges_are_refused() {
        let data = synthetic_dataset(20, 2, 1.0, 3);
        let rng = RngSource::InsecureFixedSeed(0);
        assert!(FeatureRange::new(1.0, 1.0).is_err());
        assert!(FeatureRange::new(f64::NAN, 1.0).is_err());
        let one = vec![FeatureRange::new(0.0, 1.0).unwrap()];
        let config = PlrConfig {
            ranges: Some(one),
            ..PlrConfig::new(1.0, 0.1)
        };
        assert!(matches!(
            fit_plr(&data, &config, &rng),
            Err(Error::DimensionMismatch { .. })
        ));
    }

    #[test]
    fn private_fit_is_reproducible_only_under_the_same_seed() {
        let data = synthetic_dataset(50, 3, 1.0, 3);
        let config = PlrConfig {
            intercept: false,
            ..PlrConfig::new(1.0, 0.1)
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
                fit_plr(
                    &data,
                    &PlrConfig {
                        intercept: false,
                        ..PlrConfig::new(epsilon, lambda)
                    },
                    &rng
                ),
                Err(Error::InvalidParameter { .. })
            ));
        }
        let model = fit_plr(
            &data,
            &PlrConfig {
                intercept: false,
                ..PlrConfig::new(1.0, 0.1)
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
            let xt = projected_rows(&data, Some(&group), radius, InputSpec::default());
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
            let xt = projected_rows(&data, Some(&group), radius, InputSpec::default());
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
