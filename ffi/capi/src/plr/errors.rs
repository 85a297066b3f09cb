//! `plr_stacking::Error` → status code.

use plr_stacking::Error;

use crate::error::FfiError;
use crate::status::dpd_status;

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::DimensionMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
            Error::NonFinite { .. } => dpd_status::DPD_ERR_NON_FINITE,
            Error::Empty { .. }
            | Error::BadLabel { .. }
            | Error::MixedLabelEncodings
            | Error::SingleClass
            | Error::InvalidParameter { .. }
            | Error::ImportanceSum { .. }
            | Error::BadFeatureIndex { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            Error::NotConverged { .. } => dpd_status::DPD_ERR_NUMERICAL,
            Error::Noise(_) => dpd_status::DPD_ERR_OTHER,
        };
        FfiError::new(status, error.to_string())
    }
}
