//! Request bodies read only after the request is authenticated, with a size known in advance,
//! within a time limit, and under a per-process budget of bytes in flight — so that neither
//! unauthenticated nor slow clients can make a server hold memory or connections.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Larger than allowed (413): declared up front, or found while reading.
    #[error("request body larger than the {limit} bytes allowed here")]
    TooLarge {
        /// The bytes allowed.
        limit: usize,
    },
    /// The process's budget of body bytes in flight is used up (503, try again).
    #[error("too many request bytes in flight; retry shortly")]
    Busy,
    /// Not received within the time limit (408).
    #[error("request body not received within {} s", .limit.as_secs_f64())]
    TooSlow {
        /// The time allowed.
        limit: Duration,
    },
    /// The connection failed while the body was read (400).
    #[error("request body: {0}")]
    Broken(String),
}

impl BodyError {
    /// The problem type of the answer (see [`crate::http::problem`]).
    pub fn kind(&self) -> &'static str {
        match self {
            BodyError::TooLarge { .. } => "too-large",
            BodyError::Busy => "busy",
            BodyError::TooSlow { .. } => "body-timeout",
            BodyError::Broken(_) => "malformed",
        }
    }

    /// The status to answer with.
    pub fn status(&self) -> StatusCode {
        match self {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::Busy => StatusCode::SERVICE_UNAVAILABLE,
            BodyError::TooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken(_) => StatusCode::BAD_REQUEST,
        }
    }
}

/// The bytes of request bodies a process holds at once, at most (a semaphore of bytes).
#[derive(Clone)]
pub struct BodyBudget {
    bytes: Arc<Semaphore>,
    total: usize,
}

impl BodyBudget {
    /// A budget of `total` bytes (at least 1).
    pub fn new(total: usize) -> Self {
        let total = total.clamp(1, Semaphore::MAX_PERMITS);
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Bytes not reserved right now.
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }

    /// Reads a body of at most `limit` bytes within `timeout`, reserving `limit` bytes of the
    /// budget while it is read and held (the permit travels with the bytes). A `Content-Length`
    /// above the limit is refused before a byte is read.
    pub async fn read(
        &self,
        headers: &HeaderMap,
        body: Body,
        limit: usize,
        timeout: Duration,
    ) -> Result<(Bytes, OwnedSemaphorePermit), BodyError> {
        if declared_len(headers).is_some_and(|len| len > limit as u64) {
            return Err(BodyError::TooLarge { limit });
        }
        if limit > self.total {
            return Err(BodyError::TooLarge { limit: self.total });
        }
        let permit = self
            .bytes
            .clone()
            .try_acquire_many_owned(limit as u32)
            .map_err(|_| BodyError::Busy)?;
        let limited = http_body_util::Limited::new(body, limit);
        let collected = tokio::time::timeout(timeout, limited.collect())
            .await
            .map_err(|_| BodyError::TooSlow { limit: timeout })?;
        match collected {
            Ok(c) => Ok((c.to_bytes(), permit)),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                Err(BodyError::TooLarge { limit })
            }
            Err(e) => Err(BodyError::Broken(e.to_string())),
        }
    }
}

/// The request's `Content-Length`, if it has a valid one.
pub fn declared_len(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Reads and drops what is left of a refused request's body, at most `max` bytes within `for_at_most`, on a task of
/// its own, so that a client still sending can finish and read the refusal instead of
/// having its connection reset under it. Nothing is kept; a body declared larger than `max`
/// is not drained at all (the connection is closed after the answer).
pub fn drain_refused(headers: &HeaderMap, body: Body, max: u64, for_at_most: Duration) {
    if declared_len(headers).is_some_and(|len| len > max) {
        return;
    }
    tokio::spawn(async move {
        let mut body = body;
        let mut seen = 0u64;
        let _ = tokio::time::timeout(for_at_most, async {
            while let Some(Ok(frame)) = body.frame().await {
                if let Some(data) = frame.data_ref() {
                    seen += data.len() as u64;
                    if seen > max {
                        return;
                    }
                }
            }
        })
        .await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(len: Option<u64>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(len) = len {
            h.insert(header::CONTENT_LENGTH, len.into());
        }
        h
    }

    // Paused time: the time limit passes as soon as nothing else can run, without sleeping.
    #[tokio::test(start_paused = true)]
    async fn bodies_are_read_within_their_limit_time_and_budget() {
        let budget = BodyBudget::new(100);
        let t = Duration::from_secs(5);
        let (bytes, permit) = budget
            .read(&headers(Some(10)), Body::from(vec![1u8; 10]), 60, t)
            .await
            .unwrap();
        assert_eq!(bytes.len(), 10);
        // The permit holds the limit's bytes while the body is held.
        assert_eq!(budget.available(), 40);
        assert_eq!(
            budget
                .read(&headers(Some(10)), Body::from(vec![1u8; 10]), 60, t)
                .await
                .unwrap_err(),
            BodyError::Busy
        );
        drop(permit);
        assert_eq!(budget.available(), 100);
        // Declared too large: refused before reading; found too large while reading.
        assert_eq!(
            budget
                .read(&headers(Some(1_000_000_000_000)), Body::empty(), 60, t)
                .await
                .unwrap_err(),
            BodyError::TooLarge { limit: 60 }
        );
        assert_eq!(
            budget
                .read(&headers(None), Body::from(vec![0u8; 61]), 60, t)
                .await
                .unwrap_err(),
            BodyError::TooLarge { limit: 60 }
        );
        assert_eq!(budget.available(), 100);
        // A body that never ends is cut off at the time limit.
        let (_tx, never) = http_body_util::channel::Channel::<Bytes, std::io::Error>::new(1);
        let short = Duration::from_secs(30);
        assert_eq!(
            budget
                .read(&headers(Some(10)), Body::new(never), 60, short)
                .await
                .unwrap_err(),
            BodyError::TooSlow { limit: short }
        );
        assert_eq!(budget.available(), 100);
    }
}
