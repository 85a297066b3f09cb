//! The crate's error type: one variant per cause, carrying the numbers that caused it.

/// Everything that can go wrong in projection, the DP marginal-std round and the threshold search.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A buffer holds the wrong number of values.
    #[error("{what}: expected {expected} values, got {got}")]
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The number of values required.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// `rows × cols` does not fit in `usize`.
    #[error("{what}: {rows} × {cols} overflows usize")]
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
    #[error("cannot allocate {bytes} bytes for the {what}: the allocator refused")]
    Allocation {
        /// What the buffer is for.
        what: &'static str,
        /// The bytes requested (saturated at `usize::MAX`).
        bytes: usize,
    },
    /// Something that needs at least one element (rows, columns, clients, repeats) has none.
    #[error("{what}: need at least one, got none")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A value of a row-major matrix is NaN or infinite.
    #[error("non-finite value: {what}[row {row}, column {column}] = {value}")]
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
    #[error("{what}[{index}] = {value} must be finite and > 0")]
    NotPositive {
        /// Which parameter.
        what: &'static str,
        /// Position in the parameter's list (0 for a scalar).
        index: usize,
        /// The value given.
        value: f64,
    },
    /// A client's value exceeds the bound its sensitivity assumes.
    #[error("client {client} value {value} exceeds the bound {bound} its sensitivity assumes")]
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
    #[error(
        "{starts} group starts for {rows} rows: starts must run from 0 to the row count, \
         strictly increasing (every client holds at least one row)"
    )]
    InvalidGrouping {
        /// Rows.
        rows: usize,
        /// Group starts given (clients + 1).
        starts: usize,
    },
    /// A client's contribution could not be computed (the learner's rule says why).
    #[error("a client's contribution: {0}")]
    Contribution(String),
    /// A budget split is not positive or does not sum to 1.
    #[error("split {split:?} is not a positive split of 1")]
    BadSplit {
        /// The split given.
        split: [f64; 3],
    },
    /// No split grid with at least `min_steps` of `steps` per part exists.
    #[error("no split with {steps} steps and at least {min_steps} per part")]
    NoSplitGrid {
        /// Grid resolution.
        steps: u32,
        /// Minimum steps per part.
        min_steps: u32,
    },
    /// A parameter lies outside its allowed range.
    #[error("{what} = {value} must be {requirement}")]
    OutOfRange {
        /// Which parameter.
        what: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range.
        requirement: &'static str,
    },
    /// A combination of settings that this crate does not support.
    #[error("unsupported: {reason}")]
    Unsupported {
        /// Why.
        reason: &'static str,
    },
    /// The noise library refused a calibration or a sample.
    #[error("noise: {0}")]
    Noise(#[from] dp_noise::Error),
    /// The DCA secure-sum round failed.
    #[error("DCA round: {0}")]
    Dca(#[from] fixedpoint_shares::Error),
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
