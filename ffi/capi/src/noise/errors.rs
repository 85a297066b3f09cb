//! `dp_noise::Error` → status code.

use dp_noise::Error;

use crate::error::FfiError;
use crate::status::dpd_status;

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::InvalidParameter { value, .. } if !value.is_finite() => {
                dpd_status::DPD_ERR_NON_FINITE
            }
            Error::InvalidParameter { .. }
            | Error::ClassicGaussianNeedsEpsilonBelowOne { .. }
            | Error::TooFewHonestClients { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            Error::BudgetExceeded { .. } => dpd_status::DPD_ERR_BUDGET_EXCEEDED,
            Error::CalibrationFailed { .. } => dpd_status::DPD_ERR_NUMERICAL,
            Error::OsRng(_) => dpd_status::DPD_ERR_RNG,
            _ => dpd_status::DPD_ERR_OTHER,
        };
        FfiError::new(status, error.to_string())
    }
}
