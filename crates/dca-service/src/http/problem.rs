//! Error answers of every server as RFC 9457 problem documents (`application/problem+json`):
//! a stable `type` per cause that programs can match, the status, a title, and a `detail` for
//! people. Internal failures (the store, a worker thread) are logged in full and answered
//! with a generic detail: error bodies never carry another library's text.
//!
//! Also the request checks every server shares: the bearer token and the media type.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::secret::token_matches;

/// Media type of problem documents.
pub const MEDIA_PROBLEM: &str = "application/problem+json";

/// The prefix of every problem `type` (a URN, so that it is not mistaken for a page to fetch).
pub const TYPE_PREFIX: &str = "urn:dpdist:problem:";

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    detail: String,
    /// Seconds after which the request may be tried again (`Retry-After`).
    retry_after: Option<u32>,
}

/// `Result` of a handler.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// A problem document as it travels.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProblemDocument {
    /// `urn:dpdist:problem:<cause>`.
    #[serde(rename = "type")]
    pub type_uri: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, for people.
    pub detail: String,
}

impl ApiError {
    /// An answer with `status`, the cause `kind` (the last part of its `type`) and `detail`.
    pub fn new(status: StatusCode, kind: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            detail: detail.into(),
            retry_after: None,
        }
    }
    /// 404 `not-found`.
    pub fn not_found(detail: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", detail)
    }
    /// 400 `malformed`: the request cannot be what it claims to be.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed", detail)
    }
    /// 409 with the cause `kind`: the request conflicts with the state of the resource.
    pub fn conflict(kind: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, kind, detail)
    }
    /// 500 `internal`: logged in full here, answered without the detail.
    pub fn internal(detail: impl Into<String>) -> Self {
        let detail = detail.into();
        tracing::error!("{detail}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server's log has the details",
        )
    }
    /// 500 `stored-state-damaged`: stored data failed its integrity check (the detail names
    /// the round and what, no internals).
    pub fn damaged(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "stored-state-damaged",
            detail,
        )
    }
    /// Adds `Retry-After: seconds`.
    pub fn retry_after(self, seconds: u32) -> Self {
        ApiError {
            retry_after: Some(seconds),
            ..self
        }
    }
    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }
    /// The detail.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let document = ProblemDocument {
            type_uri: format!("{TYPE_PREFIX}{}", self.kind),
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail,
        };
        let body = serde_json::to_vec(&document).unwrap_or_default();
        let mut r = (
            self.status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(MEDIA_PROBLEM),
            )],
            body,
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r.extensions_mut()
            .insert(crate::http::metrics::ProblemCause(self.kind));
        r
    }
}

/// The request's bearer token (401 `unauthenticated` without one).
pub fn bearer(headers: &HeaderMap) -> ApiResult<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "missing bearer token",
            )
        })
}

/// Checks the request's bearer token against `expected_hash` in constant time (401 without a
/// token, 403 `forbidden` naming `whose` for another one).
pub fn require_token(headers: &HeaderMap, expected_hash: &[u8; 32], whose: &str) -> ApiResult<()> {
    if token_matches(bearer(headers)?, expected_hash) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("not {whose} token"),
        ))
    }
}

/// 415 `unsupported-media-type` unless the request's `Content-Type` is `media`.
pub fn content_type_is(headers: &HeaderMap, media: &str) -> ApiResult<()> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            format!("Content-Type must be {media}"),
        ))
    }
}

/// A JSON answer.
pub fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, crate::MEDIA_JSON)], body).into_response()
}

/// `GET /healthz`.
pub async fn healthz() -> &'static str {
    "ok\n"
}
