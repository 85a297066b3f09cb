//! `blr::Error` (including the `projection::Error` it wraps) → status code: every cause gets the
//! most specific `dpd_status`, and errors of wrapped crates keep their own mapping.

use crate::error::FfiError;
use crate::status::dpd_status;

/// The status of a projection error (also reached through `blr::Error::Projection`).
fn projection_status(error: &projection::Error) -> dpd_status {
    use projection::Error as E;
    match error {
        E::LengthMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
        E::SizeOverflow { .. } => dpd_status::DPD_ERR_OVERFLOW,
        E::Allocation { .. } => dpd_status::DPD_ERR_ALLOC,
        E::NonFinite { .. } => dpd_status::DPD_ERR_NON_FINITE,
        E::NotPositive { value, .. } if !value.is_finite() => dpd_status::DPD_ERR_NON_FINITE,
        E::Empty { .. }
        | E::NotPositive { .. }
        | E::BoundExceeded { .. }
        | E::BadSplit { .. }
        | E::NoSplitGrid { .. }
        | E::InvalidGrouping { .. }
        | E::Contribution(_)
        | E::OutOfRange { .. }
        | E::Unsupported { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
        E::Noise(e) => FfiError::from(e.clone()).status,
        E::Dca(e) => FfiError::from(e.clone()).status,
        // `projection::Error` is non-exhaustive: a cause added later maps here until it is named.
        _ => dpd_status::DPD_ERR_OTHER,
    }
}

/// The status of a BLR error.
fn blr_status(error: &blr::Error) -> dpd_status {
    use blr::Error as E;
    match error {
        E::LengthMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
        E::OutOfRange { value, .. } if !value.is_finite() => dpd_status::DPD_ERR_NON_FINITE,
        E::InvalidRange { lower, upper, .. } if !(lower.is_finite() && upper.is_finite()) => {
            dpd_status::DPD_ERR_NON_FINITE
        }
        E::InvalidRange { .. }
        | E::Empty { .. }
        | E::OutOfRange { .. }
        | E::BadBudgetSplit { .. }
        | E::MechanismBudgetMismatch { .. }
        | E::TooFewHonestClients { .. }
        | E::InvalidRule { .. }
        | E::IndicatorGroup { .. }
        | E::MissingStdBudget => dpd_status::DPD_ERR_INVALID_ARGUMENT,
        E::Csv(_) => dpd_status::DPD_ERR_MALFORMED,
        E::Eigendecomposition | E::NonFinitePrecisions | E::NonFiniteImportanceWeights => {
            dpd_status::DPD_ERR_NUMERICAL
        }
        E::Projection(inner) => projection_status(inner),
        E::Noise(inner) => FfiError::from(inner.clone()).status,
        // `blr::Error` is non-exhaustive: a cause added later maps here until it is named.
        _ => dpd_status::DPD_ERR_OTHER,
    }
}

impl From<blr::Error> for FfiError {
    fn from(error: blr::Error) -> Self {
        FfiError::new(blr_status(&error), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blr::ssp::{Mechanism, RoundBudget};
    use dpd_status as S;

    fn status(e: blr::Error) -> dpd_status {
        FfiError::from(e).status
    }

    fn via_projection(e: projection::Error) -> dpd_status {
        status(blr::Error::Projection(e))
    }

    #[test]
    fn every_blr_cause_has_its_own_status() {
        let cases = [
            (
                blr::Error::LengthMismatch {
                    what: "y",
                    expected: 3,
                    got: 2,
                },
                S::DPD_ERR_LENGTH_MISMATCH,
            ),
            (
                blr::Error::Empty { what: "rows" },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                blr::Error::OutOfRange {
                    name: "ε",
                    value: -1.0,
                    requirement: "> 0",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                blr::Error::OutOfRange {
                    name: "ε",
                    value: f64::NAN,
                    requirement: "> 0",
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                blr::Error::BadBudgetSplit {
                    split: [0.5, 0.6, 0.1],
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                blr::Error::MechanismBudgetMismatch {
                    mechanism: Mechanism::Gaussian,
                    budget: RoundBudget::Epsilon(1.0),
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                blr::Error::TooFewHonestClients {
                    n: 3,
                    max_dropped: 2,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (blr::Error::MissingStdBudget, S::DPD_ERR_INVALID_ARGUMENT),
            (blr::Error::Csv(blr::CsvError::NoRows), S::DPD_ERR_MALFORMED),
            (blr::Error::Eigendecomposition, S::DPD_ERR_NUMERICAL),
            (blr::Error::NonFinitePrecisions, S::DPD_ERR_NUMERICAL),
            (blr::Error::NonFiniteImportanceWeights, S::DPD_ERR_NUMERICAL),
            (
                blr::Error::Noise(dp_noise::Error::OsRng("no entropy".into())),
                S::DPD_ERR_RNG,
            ),
        ];
        for (error, expected) in cases {
            let shown = error.to_string();
            assert_eq!(status(error), expected, "{shown}");
        }
    }

    #[test]
    fn every_projection_cause_has_its_own_status() {
        let cases = [
            (
                projection::Error::LengthMismatch {
                    what: "x",
                    expected: 6,
                    got: 5,
                },
                S::DPD_ERR_LENGTH_MISMATCH,
            ),
            (
                projection::Error::SizeOverflow {
                    what: "x",
                    rows: usize::MAX,
                    cols: 2,
                },
                S::DPD_ERR_OVERFLOW,
            ),
            (
                projection::Error::Empty { what: "rows" },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::NonFinite {
                    what: "x",
                    row: 1,
                    column: 0,
                    value: f64::INFINITY,
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                projection::Error::NotPositive {
                    what: "bounds",
                    index: 2,
                    value: 0.0,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::NotPositive {
                    what: "bounds",
                    index: 2,
                    value: f64::NAN,
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                projection::Error::BoundExceeded {
                    client: 4,
                    value: 3.0,
                    bound: 2.0,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::BadSplit {
                    split: [1.0, 0.0, 0.0],
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::NoSplitGrid {
                    steps: 2,
                    min_steps: 1,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::Unsupported { reason: "Laplace" },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::InvalidGrouping { rows: 3, starts: 1 },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::Contribution("a record outside its file".into()),
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::OutOfRange {
                    what: "aux correlation",
                    value: 2.0,
                    requirement: "in [0, 1)",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                projection::Error::Noise(dp_noise::Error::OsRng("no entropy".into())),
                S::DPD_ERR_RNG,
            ),
        ];
        for (error, expected) in cases {
            let shown = error.to_string();
            assert_eq!(via_projection(error), expected, "{shown}");
        }
    }
}
