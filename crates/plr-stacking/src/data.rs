//! Validated training data: a design matrix and ±1 labels.
//!
//! Rows are given row-major (the layout C, R and Julia callers hold); they are stored as a faer
//! matrix. Labels may be given as 0/1 or as −1/+1 and are stored as −1/+1.

use faer::Mat;

use crate::error::{Error, Result};

/// A validated labelled data set: `n_rows` rows of `n_features` finite values, labels ±1.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub(crate) x: Mat<f64>,
    pub(crate) y: Vec<f64>,
}

impl Dataset {
    /// Builds a data set from row-major features (`x.len() == labels.len() * n_features`) and
    /// labels in {0, 1} or {−1, +1}. Refuses empty data, NaN/inf, wrong lengths and other labels.
    pub fn from_rows(x: &[f64], n_features: usize, labels: &[f64]) -> Result<Self> {
        let n_rows = labels.len();
        check_rows(x, n_rows, n_features, "features")?;
        let y = signed_labels(labels)?;
        let x = Mat::from_fn(n_rows, n_features, |i, j| x[i * n_features + j]);
        Ok(Dataset { x, y })
    }

    /// Number of rows (records).
    pub fn n_rows(&self) -> usize {
        self.y.len()
    }

    /// Number of features per row.
    pub fn n_features(&self) -> usize {
        self.x.ncols()
    }

    /// The labels as −1/+1.
    pub fn labels(&self) -> &[f64] {
        &self.y
    }

    /// The rows whose indices are listed (indices come from this crate, always in range).
    pub(crate) fn subset(&self, rows: &[usize]) -> Dataset {
        Dataset {
            x: Mat::from_fn(rows.len(), self.n_features(), |i, j| self.x[(rows[i], j)]),
            y: rows.iter().map(|&i| self.y[i]).collect(),
        }
    }
}

/// Checks that `x` holds `n_rows` finite rows of `n_features` values.
pub(crate) fn check_rows(x: &[f64], n_rows: usize, n_features: usize, what: &str) -> Result<()> {
    if n_rows == 0 {
        return Err(Error::Empty {
            what: format!("{what} (no rows)"),
        });
    }
    if n_features == 0 {
        return Err(Error::Empty {
            what: format!("{what} (no features)"),
        });
    }
    let expected = n_rows.checked_mul(n_features).ok_or(Error::SizeOverflow {
        rows: n_rows,
        features: n_features,
    })?;
    if x.len() != expected {
        return Err(Error::DimensionMismatch {
            what: format!("{what} length (rows × features)"),
            expected,
            got: x.len(),
        });
    }
    check_finite(x, what)
}

/// Refuses NaN and ±inf.
pub(crate) fn check_finite(values: &[f64], what: &str) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(Error::NonFinite {
            what: what.to_string(),
            index,
        }),
        None => Ok(()),
    }
}

/// Maps labels in {0, 1} or {−1, +1} to ±1; anything else (including a mix of 0 and −1) is an
/// error.
pub(crate) fn signed_labels(labels: &[f64]) -> Result<Vec<f64>> {
    if labels.is_empty() {
        return Err(Error::Empty {
            what: "labels".into(),
        });
    }
    let mut seen_zero = false;
    let mut seen_minus_one = false;
    let mut y = Vec::with_capacity(labels.len());
    for (index, &value) in labels.iter().enumerate() {
        if value == 1.0 {
            y.push(1.0);
        } else if value == 0.0 {
            seen_zero = true;
            y.push(-1.0);
        } else if value == -1.0 {
            seen_minus_one = true;
            y.push(-1.0);
        } else {
            return Err(Error::BadLabel { index, value });
        }
    }
    if seen_zero && seen_minus_one {
        return Err(Error::MixedLabelEncodings);
    }
    Ok(y)
}

/// A public range [lo, hi] of one feature (from a codebook or a physical limit, never from
/// the private data). A fit given ranges clamps each value into its range and maps the range
/// onto [−1, 1]: u = (clamp(x, lo, hi) − (lo + hi)/2) / ((hi − lo)/2). The map is centred at
/// the range's midpoint, so a range that is not symmetric around 0 (an age in [18, 90]) is
/// clipped asymmetrically around 0 in the data's units and symmetrically in the model's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeatureRange {
    /// Lower end, finite.
    pub lo: f64,
    /// Upper end, finite and > `lo`.
    pub hi: f64,
}

impl FeatureRange {
    /// A checked range: both ends finite, `lo < hi`.
    pub fn new(lo: f64, hi: f64) -> Result<Self> {
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(Error::InvalidParameter {
                name: "feature range",
                value: if lo.is_finite() { hi } else { lo },
                requirement: "both ends finite",
            });
        }
        if lo >= hi {
            return Err(Error::InvalidParameter {
                name: "feature range lo",
                value: lo,
                requirement: "strictly below hi",
            });
        }
        Ok(FeatureRange { lo, hi })
    }

    /// The midpoint (lo + hi)/2, the centre the map subtracts.
    pub fn centre(&self) -> f64 {
        0.5 * (self.lo + self.hi)
    }

    /// The half-width (hi − lo)/2, the unit the map divides by.
    pub fn half_width(&self) -> f64 {
        0.5 * (self.hi - self.lo)
    }

    /// clamp(x, lo, hi) mapped onto [−1, 1].
    pub fn map(&self, x: f64) -> f64 {
        (x.clamp(self.lo, self.hi) - self.centre()) / self.half_width()
    }
}

/// Checks a list of public ranges (one per feature, each valid); a bad range is named by its
/// 0-based column (the fields are public, so a range need not have come through
/// [`FeatureRange::new`]).
pub(crate) fn check_ranges(ranges: &[FeatureRange], n_features: usize) -> Result<()> {
    if ranges.len() != n_features {
        return Err(Error::DimensionMismatch {
            what: "public feature ranges (one per feature)".into(),
            expected: n_features,
            got: ranges.len(),
        });
    }
    for (column, &FeatureRange { lo, hi }) in ranges.iter().enumerate() {
        let requirement = if !(lo.is_finite() && hi.is_finite()) {
            "both ends must be finite"
        } else if lo >= hi {
            "lo must be below hi"
        } else {
            continue;
        };
        return Err(Error::BadRange {
            column,
            lo,
            hi,
            requirement,
        });
    }
    Ok(())
}

/// Projects `row` onto the ball of radius `radius` (norm clipping): x ↦ x · min(1, radius/‖x‖).
///
/// Rows already inside the ball are left as they are; longer rows are shrunk onto its surface.
/// This is a fixed per-record map (it never looks at other records), so applying it before a
/// DP mechanism costs no privacy; it is what makes the sensitivity bound ‖x‖ ≤ radius hold.
/// (Projecting onto the unit ball and then multiplying by the radius would give the same bound
/// but shrink short rows by q_k for nothing: less signal.)
pub(crate) fn project_row(row: &mut [f64], radius: f64) {
    let factor = clip_factor(row.iter().map(|v| v * v).sum::<f64>(), radius);
    row.iter_mut().for_each(|v| *v *= factor);
}

/// The factor min(1, radius/‖x‖) for a row with squared norm `norm_sq` (1 for the zero row,
/// 0 for radius 0 and a non-zero row: never NaN).
pub(crate) fn clip_factor(norm_sq: f64, radius: f64) -> f64 {
    let norm = norm_sq.sqrt();
    if norm > radius { radius / norm } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_accept_both_encodings() {
        assert_eq!(signed_labels(&[0.0, 1.0, 1.0]).unwrap(), [-1.0, 1.0, 1.0]);
        assert_eq!(signed_labels(&[-1.0, 1.0]).unwrap(), [-1.0, 1.0]);
    }

    #[test]
    fn bad_labels_are_refused() {
        assert_eq!(
            signed_labels(&[0.0, 2.0]),
            Err(Error::BadLabel {
                index: 1,
                value: 2.0
            })
        );
        assert!(matches!(
            signed_labels(&[0.0, f64::NAN]),
            Err(Error::BadLabel { index: 1, .. })
        ));
        assert_eq!(
            signed_labels(&[0.0, -1.0, 1.0]),
            Err(Error::MixedLabelEncodings)
        );
        assert!(matches!(signed_labels(&[]), Err(Error::Empty { .. })));
    }

    #[test]
    fn nan_and_wrong_lengths_are_refused() {
        let err = Dataset::from_rows(&[1.0, f64::NAN, 0.0, 0.0], 2, &[0.0, 1.0]).unwrap_err();
        assert_eq!(
            err,
            Error::NonFinite {
                what: "features".into(),
                index: 1
            }
        );
        assert!(matches!(
            Dataset::from_rows(&[1.0, 2.0, 3.0], 2, &[0.0, 1.0]),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(matches!(
            Dataset::from_rows(&[f64::INFINITY, 0.0], 1, &[0.0, 1.0]),
            Err(Error::NonFinite { .. })
        ));
        assert!(matches!(
            Dataset::from_rows(&[], 0, &[0.0]),
            Err(Error::Empty { .. })
        ));
    }

    #[test]
    fn projection_bounds_the_norm_and_keeps_short_rows() {
        let mut long = [3.0, 4.0];
        project_row(&mut long, 0.5);
        assert!((long[0] - 0.3).abs() < 1e-15 && (long[1] - 0.4).abs() < 1e-15);
        let mut short = [0.3, 0.4];
        project_row(&mut short, 1.0);
        assert_eq!(short, [0.3, 0.4]);
        // Inside a small ball: kept as is (not multiplied by the radius).
        let mut inside = [0.03, 0.04];
        project_row(&mut inside, 0.25);
        assert_eq!(inside, [0.03, 0.04]);
        let mut zero_radius = [1.0, -2.0];
        project_row(&mut zero_radius, 0.0);
        assert_eq!(zero_radius, [0.0, 0.0]);
        let mut zero_row = [0.0, 0.0];
        project_row(&mut zero_row, 0.0);
        assert_eq!(zero_row, [0.0, 0.0]);
    }
}
