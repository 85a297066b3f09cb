//! The crate's error type: one variant per cause, carrying the numbers that caused it.

use crate::ssp::{Mechanism, RoundBudget};

/// Everything that can go wrong when computing statistics, releasing them or fitting a model.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A buffer holds the wrong number of values, or two dimensions disagree.
    #[error("shape mismatch: {what}: expected {expected}, got {got}")]
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The number of values required.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// Something that needs at least one element (rows, columns, bounds) has none.
    #[error("{what}: need at least one, got none")]
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A parameter is outside its domain.
    #[error("invalid parameter: {name} = {value} must be {requirement}")]
    OutOfRange {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A budget split (p₁, p₂, p₃) is not positive or does not sum to 1.
    #[error("budget split {split:?} must be positive and sum to 1")]
    BadBudgetSplit {
        /// The split given.
        split: [f64; 3],
    },
    /// The budget's currency does not fit the mechanism (ε for Laplace, ρ for Gaussian).
    #[error("budget {budget:?} does not fit mechanism {mechanism:?}")]
    MechanismBudgetMismatch {
        /// The mechanism.
        mechanism: Mechanism,
        /// The budget given.
        budget: RoundBudget,
    },
    /// DCA needs N − T − 1 ≥ 1 honest clients.
    #[error("DCA needs N − T − 1 ≥ 1 (N = {n}, T = {max_dropped})")]
    TooFewHonestClients {
        /// Clients N.
        n: usize,
        /// Tolerated dropped or colluding clients T.
        max_dropped: usize,
    },
    /// The standard deviations are to be released by a DP round but the configuration gives that
    /// round no budget.
    #[error("the std round has no budget (set a std share)")]
    MissingStdBudget,
    /// A CSV file could not be read as a numeric table.
    #[error("bad CSV: {0}")]
    Csv(#[from] CsvError),
    /// The eigendecomposition of nXᵀX did not converge.
    #[error("numerical failure: eigendecomposition of nXᵀX did not converge")]
    Eigendecomposition,
    /// Coordinate ascent produced non-finite precisions.
    #[error("numerical failure: coordinate ascent produced non-finite precisions")]
    NonFinitePrecisions,
    /// The noise-aware posterior's importance weights are not finite (statistics so large that
    /// the Gaussian log densities overflow).
    #[error("numerical failure: the noise-aware posterior's importance weights are not finite")]
    NonFiniteImportanceWeights,
    /// A published contribution rule cannot be read or is not admissible.
    #[error("contribution rule: {reason}")]
    InvalidRule {
        /// Why.
        reason: String,
    },
    /// A public range is empty, reversed or not finite.
    #[error("public range of {what}: [{lower}, {upper}] must be finite with lower < upper")]
    InvalidRange {
        /// Which column.
        what: String,
        /// The lower end given.
        lower: f64,
        /// The upper end given.
        upper: f64,
    },
    /// An indicator group is malformed, or a record sets more than one of its levels.
    #[error("indicator group {group}: {reason}")]
    IndicatorGroup {
        /// The group's position in [`crate::Design::indicator_groups`].
        group: usize,
        /// Why.
        reason: String,
    },
    /// Projection, the marginal-std round or the threshold search failed.
    #[error("{0}")]
    Projection(#[from] projection::Error),
    /// The noise library refused a calibration, a sample or a budget charge.
    #[error("noise: {0}")]
    Noise(#[from] dp_noise::Error),
}

/// Why a CSV file is not a numeric table. Lines and columns count from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CsvError {
    /// The file has no header row.
    #[error("the file is empty (no header row)")]
    NoHeader,
    /// A header column has no name.
    #[error("header column {column} has no name")]
    UnnamedColumn {
        /// The column.
        column: usize,
    },
    /// A column name appears twice in the header.
    #[error("column name '{name}' appears twice in the header")]
    DuplicateColumn {
        /// The name.
        name: String,
    },
    /// A row has a different number of cells than the header.
    #[error("line {line} has {cells} cells, the header has {columns} (ragged row)")]
    RaggedRow {
        /// The line.
        line: usize,
        /// Cells on the line.
        cells: usize,
        /// Columns in the header.
        columns: usize,
    },
    /// A cell is not a number.
    #[error("line {line}, column {column} ('{name}'): '{cell}' is not a number")]
    NotANumber {
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The column's name.
        name: String,
        /// The cell's text.
        cell: String,
    },
    /// A cell is NaN or infinite.
    #[error("line {line}, column {column} ('{name}'): {value} is not finite")]
    NotFinite {
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The column's name.
        name: String,
        /// The value.
        value: f64,
    },
    /// The file has a header but no data rows.
    #[error("the file has a header but zero data rows")]
    NoRows,
    /// No column has the target's name.
    #[error("no column named '{target}'")]
    NoSuchColumn {
        /// The name asked for.
        target: String,
    },
    /// The table has no input column besides the target.
    #[error("need at least one input column besides the target")]
    NoInputColumns,
    /// A cell that is used is empty.
    #[error("line {line}, column {column} ('{name}'): missing value")]
    MissingValue {
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The column's name.
        name: String,
    },
    /// A line is not UTF-8 text.
    #[error("line {line} is not UTF-8 text")]
    NotUtf8 {
        /// The line.
        line: usize,
    },
    /// The file could not be read.
    #[error("read failed: {message}")]
    Read {
        /// The operating system's message.
        message: String,
    },
    /// A column is named twice in the schema (as two inputs, or as input and target).
    #[error("the schema names column '{name}' twice")]
    SchemaRepeats {
        /// The name.
        name: String,
    },
    /// One of the other causes, in the named file.
    #[error("{file}: {error}")]
    InFile {
        /// The file as the caller named it.
        file: String,
        /// The cause.
        #[source]
        error: Box<CsvError>,
    },
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// `Err(OutOfRange)` unless `value` is finite and > 0.
pub(crate) fn check_positive(name: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::OutOfRange {
            name,
            value,
            requirement: "finite and > 0",
        })
    }
}

/// `Err(OutOfRange)` unless `value` is finite and ≥ 0.
pub(crate) fn check_non_negative(name: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::OutOfRange {
            name,
            value,
            requirement: "finite and ≥ 0",
        })
    }
}

/// Checks that `x` is a finite row-major `n × d` matrix and `y` a finite vector of length `n`.
pub fn check_xy(x: &[f64], y: &[f64], n: usize, d: usize) -> Result<()> {
    if d == 0 {
        return Err(Error::Empty {
            what: "columns (d)",
        });
    }
    if n == 0 {
        return Err(Error::Empty {
            what: "rows (n = 0: zero rows)",
        });
    }
    projection::error::check_matrix(x, n, d, "x")?;
    if y.len() != n {
        return Err(Error::LengthMismatch {
            what: "y (one per row)",
            expected: n,
            got: y.len(),
        });
    }
    projection::error::check_finite(y, 1, "y")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// A wrapped cause is reachable through `source()` (what a caller walking the chain, e.g.
    /// the services' `cause_chain`, relies on), and the messages stay as the CLI and docs quote
    /// them.
    #[test]
    fn wrapped_causes_are_sources_and_messages_are_unchanged() {
        let in_file = CsvError::InFile {
            file: "data.csv".into(),
            error: Box::new(CsvError::NoSuchColumn { target: "y".into() }),
        };
        assert_eq!(in_file.to_string(), "data.csv: no column named 'y'");
        assert_eq!(
            in_file.source().map(|e| e.to_string()).as_deref(),
            Some("no column named 'y'")
        );
        let e = Error::from(in_file);
        assert_eq!(e.to_string(), "bad CSV: data.csv: no column named 'y'");
        assert!(e.source().is_some());
        let noise = Error::from(dp_noise::Error::CalibrationFailed { reason: "r" });
        assert_eq!(noise.to_string(), "noise: calibration failed: r");
        assert_eq!(
            noise.source().map(|e| e.to_string()).as_deref(),
            Some("calibration failed: r")
        );
        assert!(Error::MissingStdBudget.source().is_none());
    }
}
