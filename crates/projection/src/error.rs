//! The crate's error type: one variant per cause, carrying the numbers that caused it.

use std::fmt;

/// Everything that can go wrong in projection, the DP marginal-std round and the threshold search.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A buffer holds the wrong number of values.
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The number of values required.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// `rows × cols` does not fit in `usize`.
    SizeOverflow {
        /// Which input.
        what: &'static str,
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
    },
    /// The allocator refused a buffer whose size comes from the caller (e.g. auxiliary data of
    /// as many records as the real data).
    Allocation {
        /// What the buffer is for.
        what: &'static str,
        /// The bytes requested (saturated at `usize::MAX`).
        bytes: usize,
    },
    /// Something that needs at least one element (rows, columns, clients, repeats) has none.
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A value of a row-major matrix is NaN or infinite.
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Row of the first offending value.
        row: usize,
        /// Column of the first offending value.
        column: usize,
        /// The value.
        value: f64,
    },
    /// A bound, scale, multiplier or budget that must be finite and > 0 is not.
    NotPositive {
        /// Which parameter.
        what: &'static str,
        /// Position in the parameter's list (0 for a scalar).
        index: usize,
        /// The value given.
        value: f64,
    },
    /// A client's value exceeds the bound its sensitivity assumes.
    BoundExceeded {
        /// The client (row).
        client: usize,
        /// The offending value.
        value: f64,
        /// The bound.
        bound: f64,
    },
    /// Rows cannot be grouped into clients this way (group starts must run from 0 to the row
    /// count, strictly increasing; remote holders need clients ≥ 1, rows ≥ clients, a row cap).
    InvalidGrouping {
        /// Rows.
        rows: usize,
        /// Group starts given (clients + 1).
        starts: usize,
    },
    /// A client's contribution could not be computed (the learner's rule says why).
    Contribution(String),
    /// A budget split is not positive or does not sum to 1.
    BadSplit {
        /// The split given.
        split: [f64; 3],
    },
    /// No split grid with at least `min_steps` of `steps` per part exists.
    NoSplitGrid {
        /// Grid resolution.
        steps: u32,
        /// Minimum steps per part.
        min_steps: u32,
    },
    /// A parameter lies outside its allowed range.
    OutOfRange {
        /// Which parameter.
        what: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range.
        requirement: &'static str,
    },
    /// A combination of settings that this crate does not support.
    Unsupported {
        /// Why.
        reason: &'static str,
    },
    /// The noise library refused a calibration or a sample.
    Noise(dp_noise::Error),
    /// The DCA secure-sum round failed.
    Dca(fixedpoint_shares::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LengthMismatch {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected {expected} values, got {got}"),
            Error::SizeOverflow { what, rows, cols } => {
                write!(f, "{what}: {rows} × {cols} overflows usize")
            }
            Error::Allocation { what, bytes } => {
                write!(
                    f,
                    "cannot allocate {bytes} bytes for the {what}: the allocator refused"
                )
            }
            Error::Empty { what } => write!(f, "{what}: need at least one, got none"),
            Error::NonFinite {
                what,
                row,
                column,
                value,
            } => write!(
                f,
                "non-finite value: {what}[row {row}, column {column}] = {value}"
            ),
            Error::NotPositive { what, index, value } => {
                write!(f, "{what}[{index}] = {value} must be finite and > 0")
            }
            Error::BoundExceeded {
                client,
                value,
                bound,
            } => write!(
                f,
                "client {client} value {value} exceeds the bound {bound} its sensitivity assumes"
            ),
            Error::InvalidGrouping { rows, starts } => write!(
                f,
                "{starts} group starts for {rows} rows: starts must run from 0 to the row count, \
                 strictly increasing (every client holds at least one row)"
            ),
            Error::Contribution(why) => write!(f, "a client's contribution: {why}"),
            Error::BadSplit { split } => {
                write!(f, "split {split:?} is not a positive split of 1")
            }
            Error::NoSplitGrid { steps, min_steps } => {
                write!(
                    f,
                    "no split with {steps} steps and at least {min_steps} per part"
                )
            }
            Error::OutOfRange {
                what,
                value,
                requirement,
            } => write!(f, "{what} = {value} must be {requirement}"),
            Error::Unsupported { reason } => write!(f, "unsupported: {reason}"),
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

/// `len` zeros, or [`Error::Allocation`] when the allocator refuses them (a size that comes
/// from a caller must not abort the process).
pub fn try_zeroed(len: usize, what: &'static str) -> Result<Vec<f64>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| Error::Allocation {
            what,
            bytes: len.saturating_mul(size_of::<f64>()),
        })?;
    buffer.resize(len, 0.0);
    Ok(buffer)
}

/// Checks that `values` holds `rows × cols` finite numbers; `what` names the input in messages.
pub fn check_matrix(values: &[f64], rows: usize, cols: usize, what: &'static str) -> Result<()> {
    let expected = rows
        .checked_mul(cols)
        .ok_or(Error::SizeOverflow { what, rows, cols })?;
    if values.len() != expected {
        return Err(Error::LengthMismatch {
            what,
            expected,
            got: values.len(),
        });
    }
    check_finite(values, cols.max(1), what)
}

/// Checks that every value is finite, reporting the (row, column) of the first offender for a
/// row-major matrix with `cols` columns.
pub fn check_finite(values: &[f64], cols: usize, what: &'static str) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(Error::NonFinite {
            what,
            row: i / cols.max(1),
            column: i % cols.max(1),
            value: values[i],
        }),
    }
}

/// Checks that every bound is finite and strictly positive.
pub fn check_bounds(bounds: &[f64], what: &'static str) -> Result<()> {
    match bounds.iter().position(|b| !(b.is_finite() && *b > 0.0)) {
        None => Ok(()),
        Some(index) => Err(Error::NotPositive {
            what,
            index,
            value: bounds[index],
        }),
    }
}
