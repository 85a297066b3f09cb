//! The aggregator as a long-running HTTPS server (`dpdist aggregator`): the analyst creates
//! rounds on it, the clients upload to the nodes, and the server itself closes every round at
//! its deadline or as soon as all N clients reached all M nodes, releases it (or aborts it and
//! tells the nodes), and serves the release. See docs/http-api.md ("Aggregator").
//!
//! Authentication: the analyst presents a bearer token (SHA-256 compared); the aggregator
//! presents the nodes' shared secret to the nodes and checks their TLS certificates against
//! its CA.

mod deadlines;
pub(crate) mod jobs;
mod rounds;
mod state;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;

use crate::aggregator::Aggregator;
use crate::aggregator::jobs::acquirer::JobAcquirer;
use crate::http::body::BodyBudget;
use crate::http::metrics::Metrics;
use crate::http::problem::healthz;
use crate::protocol::spec::token_hash;
pub use deadlines::{MAX_RETRY_PAUSE, RetryBackoff, tick};
use rounds::*;
pub use rounds::{AggregatorRoundState, NodeList};
pub(crate) use state::{MAX_SPEC_BYTES, ServerState};

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
        .route("/jobs", get(jobs::list_jobs))
        .route("/participation", get(jobs::participation))
        .route("/jobs/{id}", get(jobs::get_job).put(jobs::create_job))
        .route("/jobs/{id}/spec", get(jobs::get_job_spec))
        .route("/jobs/{id}/answer", axum::routing::post(jobs::answer_job))
        .route("/jobs/{id}/cancel", axum::routing::post(jobs::cancel_job))
        .route_layer(axum::middleware::from_fn_with_state(
            state.metrics.clone(),
            crate::http::metrics::count_responses,
        ))
        .layer(DefaultBodyLimit::max(MAX_SPEC_BYTES))
        .with_state(state)
}
