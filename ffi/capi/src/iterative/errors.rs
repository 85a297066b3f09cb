//! `dca_learning::Error` → status code: every cause gets the most specific `dpd_status`; errors
//! of the noise and DCA layers keep their own mapping.

use dca_learning::Error;

use crate::error::FfiError;
use crate::status::dpd_status;

fn learning_status(error: &Error) -> dpd_status {
    match error {
        Error::InvalidParameter { value, .. } if !value.is_finite() => {
            dpd_status::DPD_ERR_NON_FINITE
        }
        Error::InvalidParameter { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
        Error::LengthMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
        Error::BadRange { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
        Error::NonFinite { .. } => dpd_status::DPD_ERR_NON_FINITE,
        Error::BudgetExceeded { .. } => dpd_status::DPD_ERR_BUDGET_EXCEEDED,
        Error::TooManyDropped { .. } => dpd_status::DPD_ERR_TOO_MANY_DROPPED,
        Error::Diverged { .. } => dpd_status::DPD_ERR_NUMERICAL,
        Error::Noise(inner) => FfiError::from(inner.clone()).status,
        Error::Shares(inner) => FfiError::from(inner.clone()).status,
        // `dca_learning::Error` is non-exhaustive: a cause added later maps here until named.
        _ => dpd_status::DPD_ERR_OTHER,
    }
}

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        FfiError::new(learning_status(&error), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::PrivacyLoss;
    use dpd_status as S;

    #[test]
    fn every_learning_cause_has_its_own_status() {
        let loss = PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let cases = [
            (
                Error::InvalidParameter {
                    name: "l2",
                    value: -1.0,
                    requirement: ">= 0",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (
                Error::InvalidParameter {
                    name: "l2",
                    value: f64::NAN,
                    requirement: ">= 0",
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                Error::LengthMismatch {
                    what: "records",
                    expected: 3,
                    actual: 2,
                },
                S::DPD_ERR_LENGTH_MISMATCH,
            ),
            (
                Error::NonFinite {
                    what: "features",
                    index: 0,
                },
                S::DPD_ERR_NON_FINITE,
            ),
            (
                Error::BudgetExceeded {
                    would_spend: loss,
                    budget: loss,
                },
                S::DPD_ERR_BUDGET_EXCEEDED,
            ),
            (
                Error::TooManyDropped {
                    dropped: 3,
                    max_dropped: 1,
                },
                S::DPD_ERR_TOO_MANY_DROPPED,
            ),
            (
                Error::BadRange {
                    column: 1,
                    lo: 2.0,
                    hi: 1.0,
                    requirement: "lo must be below hi",
                },
                S::DPD_ERR_INVALID_ARGUMENT,
            ),
            (Error::Diverged { iteration: 4 }, S::DPD_ERR_NUMERICAL),
            (
                Error::Noise(dp_noise::Error::OsRng("getrandom failed".into())),
                S::DPD_ERR_RNG,
            ),
            (
                Error::Shares(fixedpoint_shares::Error::TooManyDropped {
                    missing: 3,
                    max_dropped: 1,
                    n_clients: 10,
                }),
                S::DPD_ERR_TOO_MANY_DROPPED,
            ),
        ];
        for (error, expected) in cases {
            let shown = error.to_string();
            assert_eq!(FfiError::from(error).status, expected, "{shown}");
        }
    }
}
