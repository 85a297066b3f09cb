//! The crate's error type: every way the input can be wrong gets its own variant and message.

/// Errors returned by this crate. Library code never panics on input; it returns one of these.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A data set, partition or feature group has no rows or no features.
    #[error("{what} is empty")]
    Empty {
        /// What was empty.
        what: String,
    },
    /// Two sizes that must agree do not.
    #[error("{what}: expected {expected}, got {got}")]
    DimensionMismatch {
        /// What was measured.
        what: String,
        /// The size required.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// A value that must be finite is NaN or infinite.
    #[error("{what} contains a NaN or infinite value at position {index}")]
    NonFinite {
        /// Which input.
        what: String,
        /// Position of the first offending value.
        index: usize,
    },
    /// A label is not in {0, 1} or {−1, +1}.
    #[error("label {value} in row {index} is not a class label (use 0/1 or -1/+1)")]
    BadLabel {
        /// Row of the offending label.
        index: usize,
        /// The label given.
        value: f64,
    },
    /// Labels mix the {0, 1} and {−1, +1} encodings (0 and −1 both occur), which is ambiguous.
    #[error("labels mix the 0/1 and -1/+1 encodings (both 0 and -1 occur)")]
    MixedLabelEncodings,
    /// Only one class occurs where both are needed (AUC).
    #[error("only one class occurs; both classes are needed")]
    SingleClass,
    /// A parameter is out of its domain.
    #[error("invalid {name}: {value} must be {requirement}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// An entry of a list that must be non-negative (scores, importances) is negative.
    #[error("{what}[{index}] = {value} is negative")]
    NegativeEntry {
        /// Which list.
        what: &'static str,
        /// Position of the entry.
        index: usize,
        /// The entry.
        value: f64,
    },
    /// `groups` non-empty parts cannot be cut from `items` items (needs 1 ≤ groups ≤ items).
    #[error("{groups} groups cannot partition {items} items into non-empty parts")]
    BadGroupCount {
        /// Groups asked for.
        groups: usize,
        /// Items to partition.
        items: usize,
    },
    /// rows × features does not fit in `usize`.
    #[error("{rows} rows × {features} features overflows")]
    SizeOverflow {
        /// Rows.
        rows: usize,
        /// Features.
        features: usize,
    },
    /// The rows cannot be split into a non-empty D^h and a D^l with one row per part.
    #[error(
        "{rows} rows cannot give D^h {high_rows} > 0 rows and D^l at least {min_low_rows} \
         (one per part)"
    )]
    PartitionTooSmall {
        /// Rows available.
        rows: usize,
        /// Rows D^h would get.
        high_rows: usize,
        /// Rows D^l needs at least.
        min_low_rows: usize,
    },
    /// Feature importances do not sum to 1.
    #[error("feature importances must sum to 1, they sum to {sum}")]
    ImportanceSum {
        /// The sum given.
        sum: f64,
    },
    /// A feature index is out of range or listed twice.
    #[error("feature index {index}: {reason}")]
    BadFeatureIndex {
        /// The index.
        index: usize,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The Newton solver did not reach the gradient tolerance (should not happen for a
    /// strongly convex problem; reported instead of returning an inexact minimiser).
    #[error(
        "Newton solver stopped after {iterations} iterations at gradient norm {gradient_norm:e}"
    )]
    NotConverged {
        /// Iterations run.
        iterations: usize,
        /// Gradient norm reached.
        gradient_norm: f64,
    },
    /// A public feature range is not usable: an end is NaN or infinite, or lo ≥ hi.
    #[error("range of column {column}: lo = {lo}, hi = {hi}; {requirement}")]
    BadRange {
        /// 0-based column of the data the range belongs to.
        column: usize,
        /// Lower end given.
        lo: f64,
        /// Upper end given.
        hi: f64,
        /// What the range must satisfy.
        requirement: &'static str,
    },
    /// A source model of PST-H maps its inputs from other ranges than the target's group does,
    /// so its weights, read as an anchor, would live on another scale.
    #[error(
        "source model {group}: its public ranges differ from the target's ranges of the group's \
         columns (fit the source with the same ranges)"
    )]
    SourceRangesMismatch {
        /// The group (and source model) index.
        group: usize,
    },
    /// The objective-perturbation noise or the random split could not be drawn (including a
    /// failure of the operating system's random number generator).
    #[error("randomness: {0}")]
    Noise(#[from] dp_noise::Error),
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
