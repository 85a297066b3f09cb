//! A fitted logistic-regression model together with the input map it was trained under.

use crate::data::{FeatureRange, check_finite, check_ranges, project_row};
use crate::error::{Error, Result};
use crate::solver::sigmoid;

/// A logistic model p(y = 1 | x) = σ(wᵀφ(x) + a), where φ is the per-record map the fit
/// applied, so that predictions see the same geometry as the fit did:
///
/// 1. with public ranges, each x_j is clamped into [lo_j, hi_j] and mapped onto [−1, 1]
///    ([`FeatureRange::map`]);
/// 2. the row is clipped into the ball of radius r_x: x ↦ x · min(1, r_x/‖x‖), with r_x = r
///    (`input_radius`) without an intercept and r/√2 with one.
///
/// With an intercept the fit saw the row (φ(x), c) with c = r/√2 and estimated one more weight
/// w_c; a = w_c·c is the margin's constant. ‖(φ(x), c)‖² ≤ r²/2 + r²/2 = r², so the norm bound
/// the objective-perturbation calibration rests on holds for the extended row.
#[derive(Debug, Clone, PartialEq)]
pub struct LogisticModel {
    weights: Vec<f64>,
    intercept: Option<f64>,
    input_radius: f64,
    ranges: Option<Vec<FeatureRange>>,
}

impl LogisticModel {
    /// Builds a model without intercept or ranges from weights and an input radius (e.g. to
    /// load an exported model).
    pub fn new(weights: Vec<f64>, input_radius: f64) -> Result<Self> {
        LogisticModel::with_input_map(weights, None, input_radius, None)
    }

    /// Builds a model with an optional intercept a (the margin's constant, in margin units) and
    /// optional public ranges (one per feature).
    pub fn with_input_map(
        weights: Vec<f64>,
        intercept: Option<f64>,
        input_radius: f64,
        ranges: Option<Vec<FeatureRange>>,
    ) -> Result<Self> {
        if weights.is_empty() {
            return Err(Error::Empty {
                what: "weights".into(),
            });
        }
        check_finite(&weights, "weights")?;
        if let Some(a) = intercept {
            check_finite(&[a], "intercept")?;
        }
        if !(input_radius.is_finite() && input_radius >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "input_radius",
                value: input_radius,
                requirement: "finite and ≥ 0",
            });
        }
        if let Some(r) = &ranges {
            check_ranges(r, weights.len())?;
        }
        Ok(LogisticModel {
            weights,
            intercept,
            input_radius,
            ranges,
        })
    }

    /// The weight vector w (one entry per feature, on the mapped scale φ(x)).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The intercept a (the margin at φ(x) = 0, i.e. at the ranges' centres), if the model has
    /// one.
    pub fn intercept(&self) -> Option<f64> {
        self.intercept
    }

    /// The public ranges the inputs are mapped from, if any.
    pub fn ranges(&self) -> Option<&[FeatureRange]> {
        self.ranges.as_deref()
    }

    /// The radius r the solver's rows (features and, with an intercept, the constant) lie in.
    pub fn input_radius(&self) -> f64 {
        self.input_radius
    }

    /// The radius r_x the features are clipped into: r, or r/√2 when the constant c = r/√2
    /// shares the ball.
    pub fn feature_radius(&self) -> f64 {
        feature_radius(self.input_radius, self.intercept.is_some())
    }

    /// Number of input features.
    pub fn n_features(&self) -> usize {
        self.weights.len()
    }

    /// Margins wᵀφ(x) + a for row-major rows `x` in the data's units (length a multiple of
    /// `n_features()`).
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

    /// Predicted probabilities p(y = 1 | x) for row-major rows `x` in the data's units.
    pub fn predict_proba(&self, x: &[f64]) -> Result<Vec<f64>> {
        Ok(self
            .decision_function(x)?
            .into_iter()
            .map(sigmoid)
            .collect())
    }

    /// wᵀφ(row) + a for one validated row; `row` is mapped in place.
    pub(crate) fn margin_of_row(&self, row: &mut [f64]) -> f64 {
        map_row(row, self.ranges.as_deref(), self.feature_radius());
        row.iter()
            .zip(&self.weights)
            .map(|(a, b)| a * b)
            .sum::<f64>()
            + self.intercept.unwrap_or(0.0)
    }

    /// The solver's coordinates: w, then w_c = a/c with an intercept (what a transfer anchor
    /// or a re-fit starts from).
    pub(crate) fn solver_weights(&self) -> Vec<f64> {
        let mut w = self.weights.clone();
        if let Some(a) = self.intercept {
            w.push(a / intercept_constant(self.input_radius));
        }
        w
    }
}

/// r_x = r without an intercept, r/√2 with one.
pub(crate) fn feature_radius(radius: f64, intercept: bool) -> f64 {
    if intercept {
        radius * std::f64::consts::FRAC_1_SQRT_2
    } else {
        radius
    }
}

/// The constant c = r/√2 appended to every row when the model has an intercept.
pub(crate) fn intercept_constant(radius: f64) -> f64 {
    radius * std::f64::consts::FRAC_1_SQRT_2
}

/// φ(row) in place: clamp and map each value from its public range (when given), then clip the
/// row into the ball of radius `feature_radius`.
pub(crate) fn map_row(row: &mut [f64], ranges: Option<&[FeatureRange]>, feature_radius: f64) {
    if let Some(ranges) = ranges {
        row.iter_mut().zip(ranges).for_each(|(v, r)| *v = r.map(*v));
    }
    project_row(row, feature_radius);
}
