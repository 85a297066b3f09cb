//! `blr::Error` (including the `projection::Error` it wraps) → status code.

use crate::error::FfiError;
use crate::status::dpd_status;

impl From<blr::Error> for FfiError {
    fn from(error: blr::Error) -> Self {
        use blr::Error as E;
        let status = match &error {
            E::Shape(_) => dpd_status::DPD_ERR_LENGTH_MISMATCH,
            E::NonFinite(_) => dpd_status::DPD_ERR_NON_FINITE,
            E::InvalidParameter(_) | E::Csv(_) => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            E::Numerical(_) => dpd_status::DPD_ERR_NUMERICAL,
            E::Noise(inner) => FfiError::from(inner.clone()).status,
            E::Projection(inner) => match inner {
                projection::Error::Noise(e) => FfiError::from(e.clone()).status,
                projection::Error::Dca(e) => FfiError::from(e.clone()).status,
                projection::Error::Shape(_) => dpd_status::DPD_ERR_LENGTH_MISMATCH,
                projection::Error::NonFinite(_) => dpd_status::DPD_ERR_NON_FINITE,
                projection::Error::InvalidParameter(_) => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            },
        };
        FfiError::new(status, error.to_string())
    }
}
