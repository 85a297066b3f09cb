//! The round resources of the aggregator server (`/nodes`, `/rounds/{id}`, its release) and
//! its `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::state::{MAX_SPEC_BYTES, ServerState};
use crate::aggregator::store::RoundState;
use crate::http::problem::{ApiError, ApiResult, content_type_is, json};
use crate::protocol::spec::decode_round_config;
use crate::{Error, MEDIA_ROUND_CONFIG};

pub use crate::protocol::messages::NodeList;

/// A round's state on the aggregator (`GET /rounds/{id}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AggregatorRoundState {
    /// Hex round id.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// "created" (collecting), "closing" (agreed set recorded, release on the way),
    /// "aborting" (nodes not all told yet), "aborted", "released", or "failed" (its release
    /// became impossible after it was closing: a node reported its stored state damaged).
    pub state: String,
    /// The abort reason, if aborted; the cause (the node's answer), if failed.
    pub reason: Option<String>,
}

pub(super) async fn nodes(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = &s.aggregator;
    let list = NodeList {
        nodes: agg.node_urls().to_vec(),
        node_keys: agg.node_keys().await?,
    };
    Ok(json(StatusCode::OK, &list))
}

/// Time the analyst has to send a round configuration once its headers are in.
const SPEC_BODY_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) async fn create(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    // The analyst is authenticated before a byte of the body is read.
    if let Err(refused) = s.analyst(&headers) {
        crate::http::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
        return Err(refused);
    }
    if let Err(refused) = content_type_is(&headers, MEDIA_ROUND_CONFIG) {
        crate::http::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
        return Err(refused);
    }
    let (body, _permit) = s
        .spec_bytes
        .read(&headers, body, MAX_SPEC_BYTES, SPEC_BODY_TIMEOUT)
        .await
        .map_err(|e| ApiError::new(e.status(), e.kind(), e.to_string()))?;
    let round = decode_round_config(&body)?.validate()?;
    if round.id() != id.to_ascii_lowercase() {
        return Err(ApiError::bad_request(format!(
            "round id must be the config's SHA-256, {}",
            round.id()
        )));
    }
    let agg = &s.aggregator;
    let existed = agg.round(&round.id())?.is_some();
    agg.create_round(round.spec).await?;
    Ok(if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    }
    .into_response())
}

pub(super) async fn state_of(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = &s.aggregator;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError::not_found("unknown round"))?;
    let state = agg.recorded_state(&round)?;
    Ok(json(
        StatusCode::OK,
        &AggregatorRoundState {
            id: round.id(),
            round: round.spec.round,
            state: state
                .as_ref()
                .map_or("", |s| s.phase().as_str())
                .to_string(),
            reason: state
                .as_ref()
                .and_then(RoundState::ended_unreleased)
                .map(str::to_string),
        },
    ))
}

pub(super) async fn get_release(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = &s.aggregator;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError::not_found("unknown round"))?;
    if let Some(release) = agg.published(&round)? {
        return Ok(json(StatusCode::OK, &release));
    }
    match agg.recorded_state(&round)? {
        Some(RoundState::Aborted(reason) | RoundState::Aborting(reason)) => Err(
            ApiError::conflict("round-aborted", format!("round was aborted: {reason}")),
        ),
        Some(RoundState::Failed(cause)) => Err(Error::RoundFailed(cause).into()),
        state => Ok((
            StatusCode::ACCEPTED,
            [(header::RETRY_AFTER, "1")],
            if state == Some(RoundState::Closing) {
                "round closing: its release is on the way\n"
            } else {
                "round still collecting shares\n"
            },
        )
            .into_response()),
    }
}

/// `GET /metrics`.
pub(super) async fn aggregator_metrics(State(s): State<Arc<ServerState>>) -> Response {
    let agg = &s.aggregator;
    s.metrics.set_budget_spent(agg.spent().epsilon);
    match agg.rounds_by_state() {
        Ok(counts) => {
            for (state, count) in counts {
                s.metrics.set_rounds(state.as_str(), count as i64);
            }
        }
        Err(e) => tracing::error!("reading rounds for /metrics: {e}"),
    }
    crate::http::metrics::exposition(&s.metrics)
}

pub(super) async fn release_now(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let agg = &s.aggregator;
    let round = agg
        .round(&id.to_ascii_lowercase())?
        .ok_or_else(|| ApiError::not_found("unknown round"))?;
    match agg.release(&round).await {
        Ok(release) => Ok(json(StatusCode::OK, &release)),
        // Another aggregator on the store is releasing it: the answer of a round not out yet.
        Err(Error::ReleaseInProgress(why)) => Ok((
            StatusCode::ACCEPTED,
            [(header::RETRY_AFTER, "1")],
            format!("{why}\n"),
        )
            .into_response()),
        Err(e) => Err(e.into()),
    }
}
