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
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use crate::aggregator::Aggregator;
use crate::aggregator::jobs::acquirer::JobAcquirer;
use crate::aggregator::store::{RoundPhase, RoundState};
use crate::http::body::BodyBudget;
use crate::http::metrics::Metrics;
use crate::http::problem::{ApiError, ApiResult, content_type_is, healthz, json, require_token};
use crate::protocol::spec::{decode_round_config, token_hash};
use crate::{Error, MEDIA_ROUND_CONFIG};

/// Largest round configuration accepted (bytes): N token hashes of 67 bytes dominate.
pub const MAX_SPEC_BYTES: usize = 64 << 20;

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
    backoff: RetryBackoff,
    metrics: Arc<Metrics>,
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

async fn nodes(State(s): State<Arc<ServerState>>, headers: HeaderMap) -> ApiResult<Response> {
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

async fn create(
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

async fn state_of(
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

async fn get_release(
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
async fn aggregator_metrics(State(s): State<Arc<ServerState>>) -> Response {
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

async fn release_now(
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

/// Longest pause between two attempts of the server's own pass at a round whose release
/// keeps failing (a node down): the pause doubles from one poll with each failure up to this.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// The rounds whose release failed on this server's passes, each with its consecutive failures
/// and when it is tried next (ms of this process's monotonic time): the pass
/// backs off, so that a node down for an hour costs a few attempts and log lines a minute, not
/// one per poll.
#[derive(Default)]
pub struct RetryBackoff {
    rounds: std::sync::Mutex<std::collections::HashMap<String, (u32, u64)>>,
}

/// Milliseconds since this process first asked. The pauses between retries are about load, so
/// they run on real time, not on the aggregator's injected clock: a test's mock clock, which
/// stands still unless the test moves it, stopped every retry of a round whose first attempt
/// failed (a node that had not yet seen its round answered 404), and its job never ended.
fn monotonic_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

impl RetryBackoff {
    /// Whether round `id` is due for an attempt at `now_ms`.
    fn due(&self, id: &str, now_ms: u64) -> bool {
        self.rounds
            .lock()
            .map_or(true, |r| r.get(id).is_none_or(|&(_, next)| now_ms >= next))
    }

    /// Records a failed attempt at round `id`; the consecutive failures so far and the pause
    /// before the next attempt.
    fn failed(&self, id: &str, now_ms: u64, poll: Duration) -> (u32, Duration) {
        let Ok(mut rounds) = self.rounds.lock() else {
            return (1, poll);
        };
        let entry = rounds.entry(id.to_string()).or_insert((0, 0));
        entry.0 += 1;
        let pause = poll
            .saturating_mul(1 << (entry.0 - 1).min(20))
            .min(MAX_RETRY_PAUSE);
        entry.1 = now_ms.saturating_add(pause.as_millis() as u64);
        (entry.0, pause)
    }

    /// Forgets round `id` (released, ended, or driven by another aggregator).
    fn forget(&self, id: &str) {
        if let Ok(mut rounds) = self.rounds.lock() {
            rounds.remove(id);
        }
    }

    /// Forgets every round not in `live`.
    fn keep_only(&self, live: &[Arc<crate::protocol::spec::Round>]) {
        if let Ok(mut rounds) = self.rounds.lock() {
            rounds.retain(|id, _| live.iter().any(|r| r.id() == *id));
        }
    }
}

/// One pass of the server's own work: re-send pending abort notices, then close and release
/// (or abort) every open round that is due. A round the accountant's budget does not allow is
/// aborted; a round whose release a node made impossible (its stored state damaged) has failed
/// and is not tried again; other errors (a node down) are logged and retried on a later pass,
/// after a pause that doubles with each failure of the round (from `poll` to
/// [`MAX_RETRY_PAUSE`]).
pub async fn tick(agg: &Aggregator, metrics: &Metrics, backoff: &RetryBackoff, poll: Duration) {
    if let Err(e) = agg.notify_pending_aborts().await {
        tracing::warn!("abort notice: {e}");
    }
    let open = match agg.open_rounds() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("reading rounds: {e}");
            return;
        }
    };
    backoff.keep_only(&open);
    for round in open {
        let id = round.id();
        if !backoff.due(&id, monotonic_ms()) {
            continue;
        }
        match agg.due(&round).await {
            Ok(true) => match agg.release(&round).await {
                Ok(r) => {
                    backoff.forget(&id);
                    metrics.round_event(RoundPhase::Released.as_str());
                    tracing::info!(
                        round = r.round,
                        clients = r.clients.len(),
                        spent_epsilon = r.spent_epsilon,
                        privacy = r.privacy.as_deref().unwrap_or("private"),
                        "released"
                    );
                }
                // The budget will not grow back: this round can never be released.
                Err(e @ (Error::Budget(_) | Error::JobBudget { .. })) => {
                    let reason = format!("the aggregator's privacy budget does not allow it: {e}");
                    tracing::warn!(round = round.spec.round, "aborted: {reason}");
                    metrics.round_event(RoundPhase::Aborted.as_str());
                    if let Err(e) = agg.abort(&round, &reason).await {
                        tracing::error!(round = round.spec.round, "abort: {e}");
                    }
                }
                // Recorded (and logged) as failed by the release: it is no longer open.
                Err(Error::RoundFailed(_)) => {
                    backoff.forget(&id);
                    metrics.round_event(RoundPhase::Failed.as_str());
                }
                // Another aggregator on the store is driving it; it is not this pass's work.
                Err(Error::ReleaseInProgress(why)) => {
                    backoff.forget(&id);
                    tracing::debug!(round = round.spec.round, "{why}");
                }
                Err(e) => {
                    if matches!(e, Error::Aborted { .. }) {
                        metrics.round_event(RoundPhase::Aborted.as_str());
                    }
                    let (failures, pause) = backoff.failed(&id, monotonic_ms(), poll);
                    tracing::warn!(
                        round = round.spec.round,
                        failures,
                        "release: {e}; trying again in {} ms",
                        pause.as_millis()
                    );
                }
            },
            // Not due yet, and its nodes answered: the failures so far were not consecutive.
            Ok(false) => backoff.forget(&id),
            Err(e) => {
                let (failures, pause) = backoff.failed(&id, monotonic_ms(), poll);
                tracing::warn!(
                    round = round.spec.round,
                    failures,
                    "{e}; trying again in {} ms",
                    pause.as_millis()
                );
            }
        }
    }
}

/// The aggregator's router, the background task that closes due rounds every `poll` and the
/// one that takes and drives the jobs nobody drives every `poll`. The tasks end when the
/// router (and every clone of it) is dropped.
pub fn router(aggregator: Aggregator, analyst_token: &str, poll: Duration) -> Router {
    let aggregator = Arc::new(aggregator);
    let metrics = Metrics::with_store(aggregator.store_transactions());
    let state = Arc::new(ServerState {
        jobs: JobAcquirer::new(aggregator.clone(), poll),
        aggregator,
        analyst_token_hash: token_hash(analyst_token),
        spec_bytes: BodyBudget::new(2 * MAX_SPEC_BYTES),
        metrics,
        backoff: RetryBackoff::default(),
    });
    // Jobs at once (a restarted aggregator resumes its jobs without waiting a poll), then
    // every poll.
    let weak = Arc::downgrade(&state);
    tokio::spawn(async move {
        loop {
            {
                let Some(state) = weak.upgrade() else { return };
                state.jobs.pass();
            }
            tokio::time::sleep(poll).await;
        }
    });
    let weak = Arc::downgrade(&state);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(poll).await;
            let Some(state) = weak.upgrade() else { return };
            tick(&state.aggregator, &state.metrics, &state.backoff, poll).await;
        }
    });
    Router::new()
        .route("/healthz", get(healthz))
        .route("/nodes", get(nodes))
        .route("/rounds/{id}", get(state_of).put(create))
        .route("/rounds/{id}/release", get(get_release).post(release_now))
        .route("/metrics", get(aggregator_metrics))
        .route("/jobs", get(crate::aggregator::jobs::http::list_jobs))
        .route(
            "/participation",
            get(crate::aggregator::jobs::http::participation),
        )
        .route(
            "/jobs/{id}",
            get(crate::aggregator::jobs::http::get_job)
                .put(crate::aggregator::jobs::http::create_job),
        )
        .route(
            "/jobs/{id}/spec",
            get(crate::aggregator::jobs::http::get_job_spec),
        )
        .route(
            "/jobs/{id}/answer",
            axum::routing::post(crate::aggregator::jobs::http::answer_job),
        )
        .route(
            "/jobs/{id}/cancel",
            axum::routing::post(crate::aggregator::jobs::http::cancel_job),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            crate::http::metrics::count_responses,
        ))
        .layer(DefaultBodyLimit::max(MAX_SPEC_BYTES))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round that keeps failing is tried after one poll, then two, four, … up to
    /// `MAX_RETRY_PAUSE`: a node down for a minute costs a handful of attempts (and log lines),
    /// not one per poll; a round that is forgotten is tried at once again.
    #[test]
    fn a_failing_round_is_tried_again_after_a_doubling_pause() {
        let backoff = RetryBackoff::default();
        let poll = Duration::from_millis(50);
        let mut now = 0u64;
        let mut attempts = 0;
        while now < 60_000 {
            if backoff.due("r", now) {
                attempts += 1;
                backoff.failed("r", now, poll);
            }
            now += poll.as_millis() as u64;
        }
        // 50 ms, 100, …, 25.6 s, then every 30 s: 11 attempts in the first minute, against
        // 1,200 polls.
        assert_eq!(attempts, 11);
        let (failures, pause) = backoff.failed("r", now, poll);
        assert_eq!((failures, pause), (12, MAX_RETRY_PAUSE));
        assert!(!backoff.due("r", now + 1));
        assert!(backoff.due("other", now));
        backoff.forget("r");
        assert!(backoff.due("r", now + 1));
    }
}
