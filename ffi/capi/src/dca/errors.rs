//! `fixedpoint_shares::Error` → status code.

use fixedpoint_shares::Error;

use crate::error::FfiError;
use crate::status::dpd_status;

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::NonFinite { .. } => dpd_status::DPD_ERR_NON_FINITE,
            Error::InvalidParameter { value, .. } if !value.is_finite() => {
                dpd_status::DPD_ERR_NON_FINITE
            }
            // A value past the bound the codec was sized for would wrap the ring sum.
            Error::OutOfBound { .. } | Error::Capacity { .. } => dpd_status::DPD_ERR_OVERFLOW,
            Error::LengthMismatch { .. } => dpd_status::DPD_ERR_LENGTH_MISMATCH,
            Error::InvalidParameter { .. }
            | Error::UnknownClient { .. }
            | Error::AgreedNotReceived { .. }
            | Error::ClientSetMismatch { .. }
            | Error::AttemptMismatch { .. }
            | Error::ShardMismatch { .. }
            | Error::RetractMismatch { .. }
            | Error::DuplicateNodeSum { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            // Another round, or the same round id under another configuration.
            Error::WrongRound { .. } | Error::WrongConfig { .. } | Error::RoundIdReused { .. } => {
                dpd_status::DPD_ERR_WRONG_ROUND
            }
            Error::WrongNode { .. } | Error::UnknownNode { .. } => dpd_status::DPD_ERR_UNKNOWN_NODE,
            // Well-formed bytes that do not fit this round's format.
            Error::WrongFracBits { .. } | Error::WrongPayloadKind { .. } | Error::Wire(_) => {
                dpd_status::DPD_ERR_MALFORMED
            }
            Error::DuplicateClient { .. } => dpd_status::DPD_ERR_DUPLICATE_CLIENT,
            Error::NotAbsorbed { .. }
            | Error::NeedsRetraction { .. }
            | Error::MissingNodeSums { .. } => dpd_status::DPD_ERR_INVALID_STATE,
            Error::TooManyDropped { .. } => dpd_status::DPD_ERR_TOO_MANY_DROPPED,
            Error::Noise(inner) => FfiError::from(inner.clone()).status,
            Error::Allocation { .. } => dpd_status::DPD_ERR_ALLOC,
            _ => dpd_status::DPD_ERR_OTHER,
        };
        FfiError::new(status, error.to_string())
    }
}
