//! `plr_stacking::Error` → status code: every cause gets the most specific `dpd_status`; a noise
//! or RNG failure keeps the status `dp_noise::Error` maps to (an OS RNG failure is `DPD_ERR_RNG`).

use plr_stacking::Error;

use crate::error::FfiError;
use crate::status::dpd_status;

fn plr_status(error: &Error) -> dpd_status {
    match error {
        Error::DimensionMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
        Error::NonFinite { .. } => dpd_status::DPD_ERR_NON_FINITE,
        Error::InvalidParameter { value, .. } if !value.is_finite() => {
            dpd_status::DPD_ERR_NON_FINITE
        }
        Error::SizeOverflow { .. } => dpd_status::DPD_ERR_OVERFLOW,
        Error::Empty { .. }
        | Error::BadLabel { .. }
        | Error::MixedLabelEncodings
        | Error::SingleClass
        | Error::InvalidParameter { .. }
        | Error::NegativeEntry { .. }
        | Error::BadGroupCount { .. }
        | Error::PartitionTooSmall { .. }
        | Error::ImportanceSum { .. }
        | Error::BadFeatureIndex { .. }
        | Error::BadRange { .. }
        | Error::SourceRangesMismatch { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
        Error::NotConverged { .. } => dpd_status::DPD_ERR_NUMERICAL,
        Error::Noise(inner) => FfiError::from(inner.clone()).status,
        // `plr_stacking::Error` is non-exhaustive: a cause added later maps here until it is named.
        _ => dpd_status::DPD_ERR_OTHER,
    }
}

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        FfiError::new(plr_status(&error), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpd_status as S;

    #[test]
    fn every_plr_cause_has_its_own_status() {
        let cases = [
            (
                Error::Empty {
                    what: "labels".into(),
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::DimensionMismatch {
                    what: "anchor".into(),
                    expected: 3,
                    got: 2,
                },
                S::DPD_ERR_LENGTH_MISMATCH,
            ),
            (
                Error::NonFinite {
                    what: "rows".into(),
                    index: 1,
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                Error::BadLabel {
                    index: 0,
                    value: 2.0,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (Error::MixedLabelEncodings, S::DPD_ERR_INVALID_ARGUMENT),
            (Error::SingleClass, S::DPD_ERR_INVALID_ARGUMENT),
            (
                Error::InvalidParameter {
                    name: "lambda",
                    value: -1.0,
                    requirement: "finite and > 0",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::InvalidParameter {
                    name: "epsilon",
                    value: f64::NAN,
                    requirement: "> 0",
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                Error::NegativeEntry {
                    what: "scores",
                    index: 1,
                    value: -0.5,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::BadGroupCount {
                    groups: 4,
                    items: 3,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::SizeOverflow {
                    rows: usize::MAX,
                    features: 2,
                },
                S::DPD_ERR_OVERFLOW,
            ),
            (
                Error::PartitionTooSmall {
                    rows: 1,
                    high_rows: 1,
                    min_low_rows: 1,
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::ImportanceSum { sum: 1.1 },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::BadFeatureIndex {
                    index: 9,
                    reason: "out of range",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::BadRange {
                    column: 2,
                    lo: f64::NAN,
                    hi: 1.0,
                    requirement: "both ends must be finite",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::SourceRangesMismatch { group: 1 },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::NotConverged {
                    iterations: 100,
                    gradient_norm: 1e-3,
                },
                S::DPD_ERR_NUMERICAL,
            ),
            (
                Error::Noise(dp_noise::Error::OsRng("getrandom failed".into())),
                S::DPD_ERR_RNG,
            ),
        ];
        for (error, expected) in cases {
            let shown = error.to_string();
            assert_eq!(FfiError::from(error).status, expected, "{shown}");
        }
    }
}
