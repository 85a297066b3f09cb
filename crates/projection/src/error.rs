//! The crate's error type.

use std::fmt;

/// Everything that can go wrong in projection, the DP marginal-std round and the threshold search.
#[derive(Debug)]
pub enum Error {
    /// A matrix or vector had the wrong length for the stated shape.
    Shape(String),
    /// A value was NaN or infinite.
    NonFinite(String),
    /// A parameter was outside its valid range (bounds, grids, shares, sizes).
    InvalidParameter(String),
    /// The noise library refused a calibration or a sample.
    Noise(dp_noise::Error),
    /// The DCA secure-sum round failed.
    Dca(fixedpoint_shares::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape(m) => write!(f, "shape mismatch: {m}"),
            Error::NonFinite(m) => write!(f, "non-finite value: {m}"),
            Error::InvalidParameter(m) => write!(f, "invalid parameter: {m}"),
            Error::Noise(e) => write!(f, "noise: {e}"),
            Error::Dca(e) => write!(f, "DCA round: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Noise(e) => Some(e),
            Error::Dca(e) => Some(e),
            _ => None,
        }
    }
}

impl From<dp_noise::Error> for Error {
    fn from(e: dp_noise::Error) -> Self {
        Error::Noise(e)
    }
}

impl From<fixedpoint_shares::Error> for Error {
    fn from(e: fixedpoint_shares::Error) -> Self {
        Error::Dca(e)
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Checks that `values` holds `rows × cols` finite numbers; `what` names the input in messages.
pub fn check_matrix(values: &[f64], rows: usize, cols: usize, what: &str) -> Result<()> {
    let expected = rows
        .checked_mul(cols)
        .ok_or_else(|| Error::Shape(format!("{what}: {rows} × {cols} overflows usize")))?;
    if values.len() != expected {
        return Err(Error::Shape(format!(
            "{what}: expected {rows} × {cols} = {expected} values, got {}",
            values.len()
        )));
    }
    check_finite(values, cols.max(1), what)
}

/// Checks that every value is finite, reporting the (row, column) of the first offender for a
/// row-major matrix with `cols` columns.
pub fn check_finite(values: &[f64], cols: usize, what: &str) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::NonFinite(format!(
            "{what}[row {}, column {}] = {}",
            i / cols.max(1),
            i % cols.max(1),
            values[i]
        ))),
    }
}

/// Checks that every bound is finite and strictly positive.
pub fn check_bounds(bounds: &[f64], what: &str) -> Result<()> {
    match bounds.iter().position(|b| !(b.is_finite() && *b > 0.0)) {
        None => Ok(()),
        Some(j) => Err(Error::InvalidParameter(format!(
            "{what}[{j}] = {} must be finite and > 0",
            bounds[j]
        ))),
    }
}
