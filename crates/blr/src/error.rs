//! The crate's error type.

use std::fmt;

/// Everything that can go wrong when computing statistics, releasing them or fitting a model.
#[derive(Debug)]
pub enum Error {
    /// A matrix or vector had the wrong length for the stated shape, or dimensions disagree.
    Shape(String),
    /// A value was NaN or infinite.
    NonFinite(String),
    /// A parameter was outside its valid range.
    InvalidParameter(String),
    /// A CSV file could not be read as a numeric table.
    Csv(String),
    /// A linear-algebra routine failed (e.g. the eigensolver did not converge).
    Numerical(String),
    /// Projection, the marginal-std round or the threshold search failed.
    Projection(projection::Error),
    /// The noise library refused a calibration, a sample or a budget charge.
    Noise(dp_noise::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Shape(m) => write!(f, "shape mismatch: {m}"),
            Error::NonFinite(m) => write!(f, "non-finite value: {m}"),
            Error::InvalidParameter(m) => write!(f, "invalid parameter: {m}"),
            Error::Csv(m) => write!(f, "bad CSV: {m}"),
            Error::Numerical(m) => write!(f, "numerical failure: {m}"),
            Error::Projection(e) => write!(f, "{e}"),
            Error::Noise(e) => write!(f, "noise: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Projection(e) => Some(e),
            Error::Noise(e) => Some(e),
            _ => None,
        }
    }
}

impl From<projection::Error> for Error {
    fn from(e: projection::Error) -> Self {
        match e {
            projection::Error::Shape(m) => Error::Shape(m),
            projection::Error::NonFinite(m) => Error::NonFinite(m),
            other => Error::Projection(other),
        }
    }
}

impl From<dp_noise::Error> for Error {
    fn from(e: dp_noise::Error) -> Self {
        Error::Noise(e)
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Checks that `x` is a finite row-major `n × d` matrix and `y` a finite vector of length `n`.
pub fn check_xy(x: &[f64], y: &[f64], n: usize, d: usize) -> Result<()> {
    if d == 0 {
        return Err(Error::Shape("d must be at least 1".into()));
    }
    if n == 0 {
        return Err(Error::Shape("the data set has zero rows".into()));
    }
    projection::error::check_matrix(x, n, d, "x")?;
    if y.len() != n {
        return Err(Error::Shape(format!(
            "y has {} values for n = {n} rows",
            y.len()
        )));
    }
    projection::error::check_finite(y, 1, "y")?;
    Ok(())
}
