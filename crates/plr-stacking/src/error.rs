//! The crate's error type: every way the input can be wrong gets its own variant and message.

use std::fmt;

/// Errors returned by this crate. Library code never panics on input; it returns one of these.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A data set, partition or feature group has no rows or no features.
    Empty {
        /// What was empty.
        what: String,
    },
    /// Two sizes that must agree do not.
    DimensionMismatch {
        /// What was measured.
        what: String,
        /// The size required.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// A value that must be finite is NaN or infinite.
    NonFinite {
        /// Which input.
        what: String,
        /// Position of the first offending value.
        index: usize,
    },
    /// A label is not in {0, 1} or {−1, +1}.
    BadLabel {
        /// Row of the offending label.
        index: usize,
        /// The label given.
        value: f64,
    },
    /// Labels mix the {0, 1} and {−1, +1} encodings (0 and −1 both occur), which is ambiguous.
    MixedLabelEncodings,
    /// Only one class occurs where both are needed (AUC).
    SingleClass,
    /// A parameter is out of its domain.
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// An entry of a list that must be non-negative (scores, importances) is negative.
    NegativeEntry {
        /// Which list.
        what: &'static str,
        /// Position of the entry.
        index: usize,
        /// The entry.
        value: f64,
    },
    /// `groups` non-empty parts cannot be cut from `items` items (needs 1 ≤ groups ≤ items).
    BadGroupCount {
        /// Groups asked for.
        groups: usize,
        /// Items to partition.
        items: usize,
    },
    /// rows × features does not fit in `usize`.
    SizeOverflow {
        /// Rows.
        rows: usize,
        /// Features.
        features: usize,
    },
    /// The rows cannot be split into a non-empty D^h and a D^l with one row per part.
    PartitionTooSmall {
        /// Rows available.
        rows: usize,
        /// Rows D^h would get.
        high_rows: usize,
        /// Rows D^l needs at least.
        min_low_rows: usize,
    },
    /// Feature importances do not sum to 1.
    ImportanceSum {
        /// The sum given.
        sum: f64,
    },
    /// A feature index is out of range or listed twice.
    BadFeatureIndex {
        /// The index.
        index: usize,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The Newton solver did not reach the gradient tolerance (should not happen for a
    /// strongly convex problem; reported instead of returning an inexact minimiser).
    NotConverged {
        /// Iterations run.
        iterations: usize,
        /// Gradient norm reached.
        gradient_norm: f64,
    },
    /// The objective-perturbation noise or the random split could not be drawn (including a
    /// failure of the operating system's random number generator).
    Noise(dp_noise::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Empty { what } => write!(f, "{what} is empty"),
            Error::DimensionMismatch {
                what,
                expected,
                got,
            } => write!(f, "{what}: expected {expected}, got {got}"),
            Error::NonFinite { what, index } => {
                write!(
                    f,
                    "{what} contains a NaN or infinite value at position {index}"
                )
            }
            Error::BadLabel { index, value } => write!(
                f,
                "label {value} in row {index} is not a class label (use 0/1 or -1/+1)"
            ),
            Error::MixedLabelEncodings => write!(
                f,
                "labels mix the 0/1 and -1/+1 encodings (both 0 and -1 occur)"
            ),
            Error::SingleClass => write!(f, "only one class occurs; both classes are needed"),
            Error::InvalidParameter {
                name,
                value,
                requirement,
            } => write!(f, "invalid {name}: {value} must be {requirement}"),
            Error::NegativeEntry { what, index, value } => {
                write!(f, "{what}[{index}] = {value} is negative")
            }
            Error::BadGroupCount { groups, items } => write!(
                f,
                "{groups} groups cannot partition {items} items into non-empty parts"
            ),
            Error::SizeOverflow { rows, features } => {
                write!(f, "{rows} rows × {features} features overflows")
            }
            Error::PartitionTooSmall {
                rows,
                high_rows,
                min_low_rows,
            } => write!(
                f,
                "{rows} rows cannot give D^h {high_rows} > 0 rows and D^l at least {min_low_rows} \
                 (one per part)"
            ),
            Error::ImportanceSum { sum } => {
                write!(f, "feature importances must sum to 1, they sum to {sum}")
            }
            Error::BadFeatureIndex { index, reason } => {
                write!(f, "feature index {index}: {reason}")
            }
            Error::NotConverged {
                iterations,
                gradient_norm,
            } => write!(
                f,
                "Newton solver stopped after {iterations} iterations at gradient norm {gradient_norm:e}"
            ),
            Error::Noise(e) => write!(f, "randomness: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Noise(e) => Some(e),
            _ => None,
        }
    }
}

impl From<dp_noise::Error> for Error {
    fn from(e: dp_noise::Error) -> Self {
        Error::Noise(e)
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
