//! A fitted logistic-regression model together with the input map it was trained under.

use crate::data::{check_finite, project_row};
use crate::error::{Error, Result};
use crate::solver::sigmoid;

/// A logistic model p(y = 1 | x) = σ(wᵀφ(x)), where φ(x) = x · min(1, r/‖x‖) clips a row into
/// the ball of radius r (`input_radius`) exactly as during training, so that predictions see
/// the same geometry as the fit did.
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticModel {
    weights: Vec<f64>,
    input_radius: f64,
}

impl LogisticModel {
    /// Builds a model from weights and an input radius (e.g. to load an exported model).
    pub fn new(weights: Vec<f64>, input_radius: f64) -> Result<Self> {
        if weights.is_empty() {
            return Err(Error::Empty {
                what: "weights".into(),
            });
        }
        check_finite(&weights, "weights")?;
        if !(input_radius.is_finite() && input_radius >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "input_radius",
                value: input_radius,
                requirement: "finite and ≥ 0",
            });
        }
        Ok(LogisticModel {
            weights,
            input_radius,
        })
    }

    /// The weight vector w (one entry per feature of the model's input).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The radius r of the ball rows are clipped into before wᵀx is taken.
    pub fn input_radius(&self) -> f64 {
        self.input_radius
    }

    /// Number of input features.
    pub fn n_features(&self) -> usize {
        self.weights.len()
    }

    /// Margins wᵀφ(x) for row-major rows `x` (length a multiple of `n_features()`).
    pub fn decision_function(&self, x: &[f64]) -> Result<Vec<f64>> {
        let d = self.n_features();
        if x.is_empty() || !x.len().is_multiple_of(d) {
            return Err(Error::DimensionMismatch {
                what: "rows length (a positive multiple of the number of features)".into(),
                expected: d,
                got: x.len(),
            });
        }
        check_finite(x, "rows")?;
        let mut row = vec![0.0; d];
        Ok(x.chunks_exact(d)
            .map(|r| {
                row.copy_from_slice(r);
                self.margin_of_row(&mut row)
            })
            .collect())
    }

    /// Predicted probabilities p(y = 1 | x) for row-major rows `x`.
    pub fn predict_proba(&self, x: &[f64]) -> Result<Vec<f64>> {
        Ok(self
            .decision_function(x)?
            .into_iter()
            .map(sigmoid)
            .collect())
    }

    /// wᵀφ(row) for one validated row; `row` is projected in place.
    pub(crate) fn margin_of_row(&self, row: &mut [f64]) -> f64 {
        project_row(row, self.input_radius);
        row.iter().zip(&self.weights).map(|(a, b)| a * b).sum()
    }
}
