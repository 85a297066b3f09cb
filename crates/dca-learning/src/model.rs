//! The models: what a client computes from its record, and the public parts of the objective.
//!
//! Every model minimises L(θ) = (1/N)·Σ_i ℓ(θ; x_i, y_i) + R(θ): the record terms ℓ are what
//! clients compute (clipped, summed through DCA with noise), R is public and added by the
//! trainer without privacy cost.

use crate::{Error, Result};

/// A model trainable by clipped noisy gradients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Logistic regression: ℓ = ln(1 + exp(−y·(wᵀx + b))) with y ∈ {−1, +1} (0/1 labels are
    /// read as −1/+1), R = (λ/2)‖w‖². With `intercept` θ = (w, b) has length d + 1, b last, and
    /// R leaves b alone (R is public; the guarantee needs no strong convexity); without it b = 0
    /// and θ = w — then the same objective as PLR (stacking paper Alg. 1) without its noise.
    ///
    /// The intercept is inside the clipped norm: a record's gradient −y·σ(−y·margin)·(x, 1) is
    /// clipped as one vector to ‖·‖ ≤ C, so one record still moves the sum by at most C and the
    /// noise and accounting are those of the model without intercept. Clipping scales the
    /// whole vector, so b's entry is never zeroed (it keeps the share 1/√(‖x‖² + 1)); with
    /// rows of norm ≤ 1 and C ≥ √2 nothing is clipped, since |σ| ≤ 1.
    Logistic {
        /// λ ≥ 0.
        l2: f64,
        /// Estimate an intercept b (on in [`Model::logistic`]).
        intercept: bool,
    },
    /// Bayesian linear regression by DP variational inference (Jälkö, Dikmen & Honkela 2017;
    /// the DCA paper's refs 18/20): y ~ N(xᵀβ, 1/λ), β ~ N(0, I/λ₀), mean-field posterior
    /// q(β) = N(m, diag(s²)), s = exp(ρ), θ = (m, ρ) of length 2d. L = −ELBO/N with the
    /// expected log-likelihood in closed form:
    /// ℓ = (λ/2)[(y − xᵀm)² + Σ_j x_j² s_j²] (+ const), R = (1/N)[(λ₀/2)Σ_j(m_j² + s_j²) − Σ_j ρ_j].
    LinearRegressionVi {
        /// λ > 0, the noise precision.
        noise_precision: f64,
        /// λ₀ > 0, the prior precision.
        prior_precision: f64,
    },
}

impl Model {
    /// Logistic regression with an intercept and ridge λ = `l2` on the weights.
    pub fn logistic(l2: f64) -> Self {
        Model::Logistic {
            l2,
            intercept: true,
        }
    }

    /// Checks the model's own parameters.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Model::Logistic { l2, .. } => {
                if !(l2.is_finite() && l2 >= 0.0) {
                    return Err(Error::InvalidParameter {
                        name: "l2",
                        value: l2,
                        requirement: "finite and >= 0",
                    });
                }
            }
            Model::LinearRegressionVi {
                noise_precision,
                prior_precision,
            } => {
                crate::error::positive_finite("noise_precision", noise_precision)?;
                crate::error::positive_finite("prior_precision", prior_precision)?;
            }
        }
        Ok(())
    }

    /// Checks the labels suit the model (logistic: each in {0, 1} or {−1, +1}).
    pub fn check_labels(&self, labels: &[f64]) -> Result<()> {
        if let Model::Logistic { .. } = self
            && let Some(index) = labels
                .iter()
                .position(|&y| !(y == 0.0 || y == 1.0 || y == -1.0))
        {
            return Err(Error::InvalidParameter {
                name: "label",
                value: labels[index],
                requirement: "0, 1 or -1 for logistic regression",
            });
        }
        Ok(())
    }

    /// Length of θ for d features.
    pub fn n_params(&self, dim: usize) -> usize {
        match self {
            Model::Logistic { intercept, .. } => dim + usize::from(*intercept),
            Model::LinearRegressionVi { .. } => 2 * dim,
        }
    }

    /// Writes the public starting point into `params` (length [`Model::n_params`]): w = 0;
    /// m = 0, s = 0.1·(prior std) … as ρ = ln(0.1) − ½ln λ₀.
    pub fn fill_initial_params(&self, params: &mut [f64]) {
        match *self {
            Model::Logistic { .. } => params.fill(0.0),
            Model::LinearRegressionVi {
                prior_precision, ..
            } => {
                let rho = 0.1f64.ln() - 0.5 * prior_precision.ln();
                let (m, s) = params.split_at_mut(params.len() / 2);
                m.fill(0.0);
                s.fill(rho);
            }
        }
    }

    /// ∇θ ℓ(θ; x, y) written to `out` (length [`Model::n_params`]).
    pub fn record_gradient(&self, params: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let d = x.len();
        match *self {
            Model::Logistic { intercept, .. } => {
                let y = if y > 0.0 { 1.0 } else { -1.0 };
                // dot stops at x's length: wᵀx, then b when θ has it
                let margin = y * (dot(params, x) + if intercept { params[d] } else { 0.0 });
                // d/dθ ln(1 + e^{−y(wᵀx + b)}) = −y·σ(−y(wᵀx + b))·(x, 1)
                let coef = -y * sigmoid(-margin);
                for (o, &xj) in out.iter_mut().zip(x) {
                    *o = coef * xj;
                }
                if intercept {
                    out[d] = coef;
                }
            }
            Model::LinearRegressionVi {
                noise_precision, ..
            } => {
                let (m, rho) = params.split_at(d);
                let resid = y - dot(m, x);
                let (gm, grho) = out.split_at_mut(d);
                for j in 0..d {
                    gm[j] = -noise_precision * resid * x[j];
                    let s2 = (2.0 * rho[j]).exp();
                    grho[j] = noise_precision * x[j] * x[j] * s2;
                }
            }
        }
    }

    /// ∇θ R(θ) for N records, added to `out`.
    pub fn add_public_gradient(&self, params: &[f64], n_records: usize, out: &mut [f64]) {
        match *self {
            Model::Logistic { l2, intercept } => {
                // b (last with an intercept) is not penalised
                let n_w = params.len() - usize::from(intercept);
                for (o, &w) in out.iter_mut().zip(&params[..n_w]) {
                    *o += l2 * w;
                }
            }
            Model::LinearRegressionVi {
                prior_precision, ..
            } => {
                let d = params.len() / 2;
                let n = n_records as f64;
                for j in 0..d {
                    out[j] += prior_precision * params[j] / n;
                    let s2 = (2.0 * params[d + j]).exp();
                    out[d + j] += (prior_precision * s2 - 1.0) / n;
                }
            }
        }
    }

    /// L(θ) on all records (for diagnostics and tests; uses every record, so not private).
    pub fn objective(&self, params: &[f64], records: &crate::Records) -> f64 {
        let n = records.len() as f64;
        let d = records.dim();
        match *self {
            Model::Logistic { l2, intercept } => {
                let b = if intercept { params[d] } else { 0.0 };
                let data: f64 = (0..records.len())
                    .map(|i| {
                        let y = if records.y(i) > 0.0 { 1.0 } else { -1.0 };
                        softplus(-y * (dot(params, records.x(i)) + b))
                    })
                    .sum();
                let w = &params[..d];
                data / n + 0.5 * l2 * dot(w, w)
            }
            Model::LinearRegressionVi {
                noise_precision,
                prior_precision,
            } => {
                let (m, rho) = params.split_at(d);
                let data: f64 = (0..records.len())
                    .map(|i| {
                        let x = records.x(i);
                        let r = records.y(i) - dot(m, x);
                        let v: f64 = x
                            .iter()
                            .zip(rho)
                            .map(|(xj, r)| xj * xj * (2.0 * r).exp())
                            .sum();
                        0.5 * noise_precision * (r * r + v)
                    })
                    .sum();
                let public: f64 = m
                    .iter()
                    .zip(rho)
                    .map(|(mj, r)| 0.5 * prior_precision * (mj * mj + (2.0 * r).exp()) - r)
                    .sum();
                (data + public) / n
            }
        }
    }
}

/// P(y = 1 | x) = σ(wᵀx + b) for each row of `x` (row-major), θ = (w, b) as trained by
/// [`Model::Logistic`] with an intercept: d = θ.len() − 1.
pub fn logistic_intercept_predict_proba(params: &[f64], x: &[f64]) -> Result<Vec<f64>> {
    let Some((&b, w)) = params.split_last() else {
        return Err(Error::InvalidParameter {
            name: "params length",
            value: 0.0,
            requirement: "d + 1 for d >= 1",
        });
    };
    rows(w.len(), x)?;
    Ok(x.chunks(w.len())
        .map(|row| sigmoid(dot(w, row) + b))
        .collect())
}

/// P(y = 1 | x) = σ(wᵀx) for each row of `x` (row-major, d = w.len()): a model without
/// intercept (for one with, [`logistic_intercept_predict_proba`]).
pub fn logistic_predict_proba(weights: &[f64], x: &[f64]) -> Result<Vec<f64>> {
    rows(weights.len(), x)?;
    Ok(x.chunks(weights.len())
        .map(|row| sigmoid(dot(weights, row)))
        .collect())
}

/// The posterior predictive mean xᵀm of DP-VI BLR for each row (params = (m, ρ), d = m.len()).
pub fn vi_predict_mean(params: &[f64], x: &[f64]) -> Result<Vec<f64>> {
    if params.is_empty() || !params.len().is_multiple_of(2) {
        return Err(Error::InvalidParameter {
            name: "params length",
            value: params.len() as f64,
            requirement: "2d for d >= 1",
        });
    }
    let m = &params[..params.len() / 2];
    rows(m.len(), x)?;
    Ok(x.chunks(m.len()).map(|row| dot(m, row)).collect())
}

pub(crate) fn rows(d: usize, x: &[f64]) -> Result<()> {
    if d == 0 || x.is_empty() || !x.len().is_multiple_of(d) {
        return Err(Error::LengthMismatch {
            what: "rows (a multiple of d)",
            expected: d.max(1) * (x.len() / d.max(1)).max(1),
            actual: x.len(),
        });
    }
    if let Some(index) = x.iter().position(|v| !v.is_finite()) {
        return Err(Error::NonFinite { what: "x", index });
    }
    Ok(())
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// ln(1 + e^t) without overflow.
fn softplus(t: f64) -> f64 {
    if t > 0.0 {
        t + (-t).exp().ln_1p()
    } else {
        t.exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Records;

    /// Each model's record gradient against central finite differences of its objective.
    #[test]
    fn gradients_match_finite_differences() {
        let x = vec![0.3, -0.2, 0.5, 0.1, 0.4, -0.6, -0.3, 0.2, 0.05];
        let models = [
            (
                Model::Logistic {
                    l2: 0.1,
                    intercept: false,
                },
                vec![1.0, 0.0, 1.0],
                3,
            ),
            (Model::logistic(0.1), vec![1.0, 0.0, 1.0], 4),
            (
                Model::LinearRegressionVi {
                    noise_precision: 2.0,
                    prior_precision: 0.5,
                },
                vec![0.7, -1.2, 0.3],
                6,
            ),
        ];
        for (model, y, p) in models {
            let records = Records::new(x.clone(), 3, y).unwrap();
            let params: Vec<f64> = (0..p).map(|k| 0.1 * k as f64 - 0.2).collect();
            let mut grad = vec![0.0; p];
            let mut g = vec![0.0; p];
            for i in 0..records.len() {
                model.record_gradient(&params, records.x(i), records.y(i), &mut g);
                grad.iter_mut().zip(&g).for_each(|(a, b)| *a += b / 3.0);
            }
            model.add_public_gradient(&params, 3, &mut grad);
            for k in 0..p {
                let h = 1e-6;
                let mut up = params.clone();
                up[k] += h;
                let mut dn = params.clone();
                dn[k] -= h;
                let fd =
                    (model.objective(&up, &records) - model.objective(&dn, &records)) / (2.0 * h);
                assert!(
                    (fd - grad[k]).abs() < 1e-7,
                    "{model:?} k {k}: {fd} vs {}",
                    grad[k]
                );
            }
        }
    }

    #[test]
    fn bad_labels_and_rows_are_refused() {
        assert!(Model::logistic(0.0).check_labels(&[0.0, 1.0, -1.0]).is_ok());
        assert!(Model::logistic(0.0).check_labels(&[0.5]).is_err());
        assert!(Model::logistic(f64::NAN).validate().is_err());
        assert!(logistic_predict_proba(&[1.0, 2.0], &[1.0, 2.0, 3.0]).is_err());
        assert!(logistic_predict_proba(&[1.0], &[f64::NAN]).is_err());
        assert!(vi_predict_mean(&[1.0, 2.0, 3.0], &[1.0]).is_err());
        let p = logistic_predict_proba(&[1.0, -1.0], &[0.0, 0.0, 800.0, 0.0]).unwrap();
        assert_eq!(p, vec![0.5, 1.0]);
        // θ = (w, b) = (1, −1, 2): σ(0 + 2), σ(800 + 2)
        let p =
            logistic_intercept_predict_proba(&[1.0, -1.0, 2.0], &[0.0, 0.0, 800.0, 0.0]).unwrap();
        assert_eq!(p, vec![1.0 / (1.0 + (-2.0f64).exp()), 1.0]);
        assert!(logistic_intercept_predict_proba(&[], &[1.0]).is_err());
        assert!(logistic_intercept_predict_proba(&[1.0, 2.0], &[1.0, 2.0]).is_ok());
    }

    /// The intercept's entry is inside the clipped norm and never zeroed. θ = 0, x = (3, 4),
    /// y = +1: coef = −σ(0) = −½, gradient (−1.5, −2, −0.5) of norm ½√26 ≈ 2.55; clipped to
    /// C = 1 it is (−3, −4, −1)/√26: b's entry −1/√26 ≈ −0.196.
    #[test]
    fn intercept_gradient_is_clipped_with_the_weights() {
        let model = Model::logistic(0.0);
        assert_eq!(model.n_params(2), 3);
        let mut g = vec![0.0; 3];
        model.record_gradient(&[0.0; 3], &[3.0, 4.0], 1.0, &mut g);
        assert_eq!(g, vec![-1.5, -2.0, -0.5]);
        crate::clip_to_norm(&mut g, 1.0);
        let r = 26f64.sqrt();
        for (a, b) in g.iter().zip([-3.0 / r, -4.0 / r, -1.0 / r]) {
            assert!((a - b).abs() < 1e-15, "{g:?}");
        }
        // The public ridge leaves b alone: ∇R = λ(w, 0).
        let mut out = vec![0.0; 3];
        Model::logistic(0.5).add_public_gradient(&[2.0, -4.0, 7.0], 10, &mut out);
        assert_eq!(out, vec![1.0, -2.0, 0.0]);
    }
}
