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
