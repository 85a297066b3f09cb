//! The aggregator as a long-running HTTPS server (`dpdist aggregator`): the analyst creates
//! rounds on it, the clients upload to the nodes, and the server itself closes every round at
//! its deadline or as soon as all N clients reached all M nodes, releases it (or aborts it and
//! tells the nodes), and serves the release. See docs/http-api.md ("Aggregator").
//!
//! Authentication: the analyst presents a bearer token (SHA-256 compared); the aggregator
//! presents the nodes' shared secret to the nodes and checks their TLS certificates against
//! its CA.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::aggregator::{Aggregator, PublishedRelease};
use crate::secret::token_matches;
use crate::spec::{RoundSpec, token_hash};
use crate::{Error, MEDIA_JSON};

/// Largest round configuration accepted (bytes): N token hashes of 67 bytes dominate.
pub const MAX_SPEC_BYTES: usize = 64 << 20;

/// The node list the analyst builds a round from (`GET /nodes`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeList {
    /// Base URLs, in node order (where clients upload).
    pub nodes: Vec<String>,
    /// Hex X25519 public keys, in node order (what the round's `node_keys` must list).
    pub node_keys: Vec<String>,
}

/// A round's state on the aggregator (`GET /rounds/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AggregatorRoundState {
    /// Hex round id.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// "created" (collecting), "aborting" (nodes not all told yet), "aborted" or "released".
    pub state: String,
    /// The abort reason, if aborted.
    pub reason: Option<String>,
}

struct ServerState {
    aggregator: Mutex<Aggregator>,
    analyst_token_hash: [u8; 32],
}

struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.0, format!("{}\n", self.1)).into_response();
        if self.0 == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::InvalidSpec(_) => StatusCode::BAD_REQUEST,
            Error::AlreadyReleased | Error::RoundAborted(_) => StatusCode::CONFLICT,
            Error::Aborted { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Error::Budget(_) => StatusCode::FORBIDDEN,
            Error::Http(_) | Error::Timeout(_) => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, e.to_string())
    }
}

type ApiResult<T> = std::result::Result<T, ApiError>;

impl ServerState {
    fn analyst(&self, headers: &HeaderMap) -> ApiResult<()> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| ApiError(StatusCode::UNAUTHORIZED, "missing bearer token".into()))?;
        if token_matches(token, &self.analyst_token_hash) {
            Ok(())
        } else {
            Err(ApiError(
                StatusCode::FORBIDDEN,
                "not the analyst's token".into(),
            ))
        }
    }
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, MEDIA_JSON)], body).into_response()
}

async fn nodes(State(s): State<Arc<ServerState>>, headers: HeaderMap) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = s.aggregator.lock().await;
    let list = NodeList {
        nodes: agg.node_urls().to_vec(),
        node_keys: agg.node_keys().await?,
    };
    Ok(json(StatusCode::OK, &list))
}

async fn create(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let spec: RoundSpec = serde_json::from_slice(&body)
        .map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("round config: {e}")))?;
    let round = spec.validate()?;
    if round.id() != id.to_ascii_lowercase() {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("round id must be the config's SHA-256, {}", round.id()),
        ));
    }
    let agg = s.aggregator.lock().await;
    let existed = agg.round(&round.id())?.is_some();
    agg.create_round(round.spec).await?;
    Ok(if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    }
    .into_response())
}

async fn state_of(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = s.aggregator.lock().await;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, "unknown round".into()))?;
    let (state, detail) = agg.recorded_state(&round)?.unwrap_or_default();
    let reason = matches!(state.as_str(), "aborted" | "aborting")
        .then_some(detail)
        .flatten();
    Ok(json(
        StatusCode::OK,
        &AggregatorRoundState {
            id: round.id(),
            round: round.spec.round,
            state,
            reason,
        },
    ))
}

async fn get_release(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = s.aggregator.lock().await;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, "unknown round".into()))?;
    if let Some(release) = agg.published(&round)? {
        return Ok(json(StatusCode::OK, &release));
    }
    match agg.recorded_state(&round)?.unwrap_or_default() {
        (state, detail) if state == "aborted" || state == "aborting" => Err(ApiError(
            StatusCode::CONFLICT,
            format!("round was aborted: {}", detail.unwrap_or_default()),
        )),
        _ => Ok((
            StatusCode::ACCEPTED,
            [(header::RETRY_AFTER, "1")],
            "round still collecting shares\n",
        )
            .into_response()),
    }
}

async fn release_now(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let mut agg = s.aggregator.lock().await;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, "unknown round".into()))?;
    let release: PublishedRelease = agg.release(&round).await?;
    Ok(json(StatusCode::OK, &release))
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// One pass of the server's own work: re-send pending abort notices, then close and release
/// (or abort) every open round that is due. A round the accountant's budget does not allow is
/// aborted; other errors (a node down) are reported on stderr and retried on the next pass.
pub async fn tick(aggregator: &Mutex<Aggregator>) {
    let mut agg = aggregator.lock().await;
    if let Err(e) = agg.notify_pending_aborts().await {
        eprintln!("dpdist aggregator: abort notice: {e}");
    }
    let open = match agg.open_rounds() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dpdist aggregator: reading rounds: {e}");
            return;
        }
    };
    for round in open {
        match agg.due(&round).await {
            Ok(true) => match agg.release(&round).await {
                Ok(r) => eprintln!(
                    "dpdist aggregator: round {} released ({} clients, spent ε = {:.4}){}",
                    r.round,
                    r.clients.len(),
                    r.spent_epsilon,
                    r.privacy.map(|p| format!(" {p}")).unwrap_or_default()
                ),
                // The budget will not grow back: this round can never be released.
                Err(Error::Budget(e)) => {
                    let reason = format!("the aggregator's privacy budget does not allow it: {e}");
                    eprintln!(
                        "dpdist aggregator: round {} aborted: {reason}",
                        round.spec.round
                    );
                    if let Err(e) = agg.abort(&round, &reason).await {
                        eprintln!("dpdist aggregator: round {}: {e}", round.spec.round);
                    }
                }
                Err(e) => eprintln!("dpdist aggregator: round {}: {e}", round.spec.round),
            },
            Ok(false) => {}
            Err(e) => eprintln!("dpdist aggregator: round {}: {e}", round.spec.round),
        }
    }
}

/// The aggregator's router and the background task that closes due rounds every `poll`.
/// The task ends when the router (and every clone of it) is dropped.
pub fn router(aggregator: Aggregator, analyst_token: &str, poll: Duration) -> Router {
    let state = Arc::new(ServerState {
        aggregator: Mutex::new(aggregator),
        analyst_token_hash: token_hash(analyst_token),
    });
    let weak = Arc::downgrade(&state);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(poll).await;
            let Some(state) = weak.upgrade() else { return };
            tick(&state.aggregator).await;
        }
    });
    Router::new()
        .route("/healthz", get(healthz))
        .route("/nodes", get(nodes))
        .route("/rounds/{id}", get(state_of).put(create))
        .route("/rounds/{id}/release", get(get_release).post(release_now))
        .layer(DefaultBodyLimit::max(MAX_SPEC_BYTES))
        .with_state(state)
}
