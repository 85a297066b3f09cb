//! The crate's error type: one variant per cause, carrying the numbers that caused it.

use std::fmt;

use crate::ssp::{Mechanism, RoundBudget};

/// Everything that can go wrong when computing statistics, releasing them or fitting a model.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A buffer holds the wrong number of values, or two dimensions disagree.
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The number of values required.
        expected: usize,
        /// The number given.
        got: usize,
    },
    /// Something that needs at least one element (rows, columns, bounds) has none.
    Empty {
        /// What was empty.
        what: &'static str,
    },
    /// A parameter is outside its domain.
    OutOfRange {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A budget split (p₁, p₂, p₃) is not positive or does not sum to 1.
    BadBudgetSplit {
        /// The split given.
        split: [f64; 3],
    },
    /// The budget's currency does not fit the mechanism (ε for Laplace, ρ for Gaussian).
    MechanismBudgetMismatch {
        /// The mechanism.
        mechanism: Mechanism,
        /// The budget given.
        budget: RoundBudget,
    },
    /// DCA needs N − T − 1 ≥ 1 honest clients.
    TooFewHonestClients {
        /// Clients N.
        n: usize,
        /// Tolerated dropped or colluding clients T.
        max_dropped: usize,
    },
    /// The standard deviations are to be released by a DP round but the configuration gives that
    /// round no budget.
    MissingStdBudget,
    /// A CSV file could not be read as a numeric table.
    Csv(CsvError),
    /// The eigendecomposition of nXᵀX did not converge.
    Eigendecomposition,
    /// Coordinate ascent produced non-finite precisions.
    NonFinitePrecisions,
    /// The noise-aware posterior's importance weights are not finite (statistics so large that
    /// the Gaussian log densities overflow).
    NonFiniteImportanceWeights,
    /// A published contribution rule cannot be read or is not admissible.
    InvalidRule {
        /// Why.
        reason: String,
    },
    /// Projection, the marginal-std round or the threshold search failed.
    Projection(projection::Error),
    /// The noise library refused a calibration, a sample or a budget charge.
    Noise(dp_noise::Error),
}

/// Why a CSV file is not a numeric table. Lines and columns count from 1.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CsvError {
    /// The file has no header row.
    NoHeader,
    /// A header column has no name.
    UnnamedColumn {
        /// The column.
        column: usize,
    },
    /// A column name appears twice in the header.
    DuplicateColumn {
        /// The name.
        name: String,
    },
    /// A row has a different number of cells than the header.
    RaggedRow {
        /// The line.
        line: usize,
        /// Cells on the line.
        cells: usize,
        /// Columns in the header.
        columns: usize,
    },
    /// A cell is not a number.
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
    NoRows,
    /// No column has the target's name.
    NoSuchColumn {
        /// The name asked for.
        target: String,
    },
    /// The table has no input column besides the target.
    NoInputColumns,
    /// A cell that is used is empty.
    MissingValue {
        /// The line.
        line: usize,
        /// The column.
        column: usize,
        /// The column's name.
        name: String,
    },
    /// A line is not UTF-8 text.
    NotUtf8 {
        /// The line.
        line: usize,
    },
    /// The file could not be read.
    Read {
        /// The operating system's message.
        message: String,
    },
    /// A column is named twice in the schema (as two inputs, or as input and target).
    SchemaRepeats {
        /// The name.
        name: String,
    },
    /// One of the other causes, in the named file.
    InFile {
        /// The file as the caller named it.
        file: String,
        /// The cause.
        error: Box<CsvError>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LengthMismatch {
                what,
                expected,
                got,
            } => write!(f, "shape mismatch: {what}: expected {expected}, got {got}"),
            Error::Empty { what } => write!(f, "{what}: need at least one, got none"),
            Error::OutOfRange {
                name,
                value,
                requirement,
            } => write!(
                f,
                "invalid parameter: {name} = {value} must be {requirement}"
            ),
            Error::BadBudgetSplit { split } => {
                write!(f, "budget split {split:?} must be positive and sum to 1")
            }
            Error::MechanismBudgetMismatch { mechanism, budget } => {
                write!(f, "budget {budget:?} does not fit mechanism {mechanism:?}")
            }
            Error::TooFewHonestClients { n, max_dropped } => {
                write!(f, "DCA needs N − T − 1 ≥ 1 (N = {n}, T = {max_dropped})")
            }
            Error::MissingStdBudget => {
                write!(f, "the std round has no budget (set a std share)")
            }
            Error::Csv(e) => write!(f, "bad CSV: {e}"),
            Error::Eigendecomposition => {
                write!(
                    f,
                    "numerical failure: eigendecomposition of nXᵀX did not converge"
                )
            }
            Error::NonFiniteImportanceWeights => write!(
                f,
                "numerical failure: the noise-aware posterior's importance weights are not finite"
            ),
            Error::NonFinitePrecisions => write!(
                f,
                "numerical failure: coordinate ascent produced non-finite precisions"
            ),
            Error::InvalidRule { reason } => write!(f, "contribution rule: {reason}"),
            Error::Projection(e) => write!(f, "{e}"),
            Error::Noise(e) => write!(f, "noise: {e}"),
        }
    }
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsvError::NoHeader => write!(f, "the file is empty (no header row)"),
            CsvError::UnnamedColumn { column } => write!(f, "header column {column} has no name"),
            CsvError::DuplicateColumn { name } => {
                write!(f, "column name '{name}' appears twice in the header")
            }
            CsvError::RaggedRow {
                line,
                cells,
                columns,
            } => write!(
                f,
                "line {line} has {cells} cells, the header has {columns} (ragged row)"
            ),
            CsvError::NotANumber {
                line,
                column,
                name,
                cell,
            } => write!(
                f,
                "line {line}, column {column} ('{name}'): '{cell}' is not a number"
            ),
            CsvError::NotFinite {
                line,
                column,
                name,
                value,
            } => write!(
                f,
                "line {line}, column {column} ('{name}'): {value} is not finite"
            ),
            CsvError::NoRows => write!(f, "the file has a header but zero data rows"),
            CsvError::NoSuchColumn { target } => write!(f, "no column named '{target}'"),
            CsvError::NoInputColumns => {
                write!(f, "need at least one input column besides the target")
            }
            CsvError::MissingValue { line, column, name } => {
                write!(f, "line {line}, column {column} ('{name}'): missing value")
            }
            CsvError::NotUtf8 { line } => write!(f, "line {line} is not UTF-8 text"),
            CsvError::Read { message } => write!(f, "read failed: {message}"),
            CsvError::SchemaRepeats { name } => {
                write!(f, "the schema names column '{name}' twice")
            }
            CsvError::InFile { file, error } => write!(f, "{file}: {error}"),
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
        Error::Projection(e)
    }
}

impl From<dp_noise::Error> for Error {
    fn from(e: dp_noise::Error) -> Self {
        Error::Noise(e)
    }
}

impl From<CsvError> for Error {
    fn from(e: CsvError) -> Self {
        Error::Csv(e)
    }
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
