//! What the aggregator server's handlers share, and how its errors become problem documents.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};

use super::deadlines::RetryBackoff;
use crate::Error;
use crate::aggregator::Aggregator;
use crate::aggregator::jobs::acquirer::JobAcquirer;
use crate::http::body::BodyBudget;
use crate::http::metrics::Metrics;
use crate::http::problem::{ApiError, ApiResult, require_token};

/// Largest round configuration accepted (bytes): N token hashes of 67 bytes dominate.
pub const MAX_SPEC_BYTES: usize = 64 << 20;

pub(crate) struct ServerState {
    /// Shared by the handlers, the background task and the job drivers without a lock: its
    /// node calls run concurrently, its state changes are store transactions.
    pub(crate) aggregator: Arc<Aggregator>,
    pub(crate) analyst_token_hash: [u8; 32],
    /// Round configurations and job specs being read at once (bytes).
    pub(crate) spec_bytes: BodyBudget,
    /// Takes the jobs this aggregator drives.
    pub(crate) jobs: Arc<JobAcquirer>,
    /// The server's own pass's pauses before it tries a failing round again.
    pub(super) backoff: RetryBackoff,
    pub(super) metrics: Arc<Metrics>,
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let (status, kind) = match &e {
            Error::InvalidSpec(_) => (StatusCode::BAD_REQUEST, "invalid-config"),
            Error::AlreadyReleased => (StatusCode::CONFLICT, "round-released"),
            Error::RoundAborted(_) => (StatusCode::CONFLICT, "round-aborted"),
            Error::RoundFailed(_) => (StatusCode::CONFLICT, "round-failed"),
            Error::Aborted { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "too-many-dropped"),
            Error::Budget(_) | Error::JobBudget { .. } => {
                (StatusCode::FORBIDDEN, "budget-exhausted")
            }
            Error::Job(_) => (StatusCode::CONFLICT, "job-state"),
            Error::Http(_) | Error::Timeout(_) => (StatusCode::BAD_GATEWAY, "node-unavailable"),
            Error::Integrity(_) => return ApiError::damaged(e.to_string()),
            _ => return ApiError::internal(e.to_string()),
        };
        ApiError::new(status, kind, e.to_string())
    }
}

impl ServerState {
    pub(crate) fn analyst(&self, headers: &HeaderMap) -> ApiResult<()> {
        require_token(headers, &self.analyst_token_hash, "the analyst's")
    }
}
