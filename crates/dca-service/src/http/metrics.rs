//! What a server counts, served at `GET /metrics` in the Prometheus text format (OpenMetrics,
//! `prometheus-client`): responses by route, status and problem cause; the node's group
//! commits (shares per commit, seconds per commit); the node store's transactions by name;
//! round transitions; and on the aggregator the rounds by state, the privacy budget spent and
//! the store's transactions by name. No label carries a round id, client id or token.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

/// The cause of an error answer, attached to the response by [`crate::http::problem::ApiError`].
#[derive(Debug, Clone, Copy)]
pub struct ProblemCause(pub &'static str);

/// Labels of `dpdist_http_responses_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResponseLabels {
    /// The route's path template, e.g. `/rounds/{id}/shares/{client}`.
    pub route: String,
    /// The status code.
    pub status: String,
    /// The problem cause of an error answer, `ok` otherwise.
    pub cause: String,
}

/// Labels of `dpdist_round_events_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    /// `created`, `closed`, `summed`, `sum_failed`, `aborted`, `damaged`, `released`.
    pub event: String,
}

/// Labels of `dpdist_rounds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabels {
    /// The recorded state.
    pub state: String,
}

/// Labels of a store's transactions: the aggregator's (`dpdist_store_transactions_total`,
/// `dpdist_store_transaction_seconds`) and the node's (`dpdist_node_store_…`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TxLabels {
    /// The transaction's name, e.g. `begin_close`, `commit_uploads`.
    pub name: String,
    /// `ok`, or `error` for a transaction that returned an error (and so changed nothing).
    pub outcome: String,
}

/// A store's transactions counted and timed by name, kept by the store and registered with the
/// server's metrics ([`Metrics::with_store`]).
#[derive(Clone, Debug)]
pub struct TxMetrics {
    count: Family<TxLabels, Counter>,
    seconds: Family<TxLabels, Histogram, fn() -> Histogram>,
}

impl Default for TxMetrics {
    fn default() -> Self {
        TxMetrics {
            count: Family::default(),
            seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_01, 4.0, 12))
            }),
        }
    }
}

impl TxMetrics {
    /// Counts one run of transaction `name` that started at `started` and ended now.
    pub fn observe(&self, name: &str, ok: bool, started: Instant) {
        let labels = TxLabels {
            name: name.to_string(),
            outcome: if ok { "ok" } else { "error" }.to_string(),
        };
        self.count.get_or_create(&labels).inc();
        self.seconds
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
    }
}

/// A server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    responses: Family<ResponseLabels, Counter>,
    round_events: Family<EventLabels, Counter>,
    commit_shares: Histogram,
    commit_seconds: Histogram,
    store_transactions: Family<TxLabels, Counter>,
    store_transaction_seconds: Family<TxLabels, Histogram, fn() -> Histogram>,
    rounds: Family<StateLabels, Gauge>,
    budget_epsilon_spent: Gauge<f64, AtomicU64>,
}

impl Metrics {
    /// A fresh set of metrics with every family registered.
    pub fn new() -> Arc<Self> {
        Self::registered(None)
    }

    /// As [`Self::new`], with the transactions of the server's store.
    pub fn with_store(transactions: TxMetrics) -> Arc<Self> {
        Self::registered(Some(transactions))
    }

    fn registered(transactions: Option<TxMetrics>) -> Arc<Self> {
        let mut registry = Registry::with_prefix("dpdist");
        let responses = Family::<ResponseLabels, Counter>::default();
        registry.register(
            "http_responses",
            "HTTP responses by route, status and problem cause",
            responses.clone(),
        );
        let round_events = Family::<EventLabels, Counter>::default();
        registry.register(
            "round_events",
            "Round transitions seen by this server",
            round_events.clone(),
        );
        let commit_shares = Histogram::new(exponential_buckets(1.0, 2.0, 11));
        registry.register(
            "node_commit_shares",
            "Shares per group commit of the node's store",
            commit_shares.clone(),
        );
        let commit_seconds = Histogram::new(exponential_buckets(0.000_1, 2.0, 16));
        registry.register(
            "node_commit_seconds",
            "Seconds per group commit of the node's store (fsync included)",
            commit_seconds.clone(),
        );
        let store_transactions = Family::<TxLabels, Counter>::default();
        registry.register(
            "node_store_transactions",
            "Transactions of the node's store, by name and outcome",
            store_transactions.clone(),
        );
        let store_transaction_seconds =
            Family::<TxLabels, Histogram, fn() -> Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
            });
        registry.register(
            "node_store_transaction_seconds",
            "Seconds per transaction of the node's store (retries and commit included)",
            store_transaction_seconds.clone(),
        );
        let rounds = Family::<StateLabels, Gauge>::default();
        registry.register(
            "aggregator_rounds",
            "Rounds recorded by the aggregator, by state",
            rounds.clone(),
        );
        let budget_epsilon_spent = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "aggregator_budget_epsilon_spent",
            "Privacy budget epsilon spent by the aggregator's accountant",
            budget_epsilon_spent.clone(),
        );
        if let Some(tx) = transactions {
            registry.register(
                "store_transactions",
                "Store transactions by name and outcome",
                tx.count,
            );
            registry.register(
                "store_transaction_seconds",
                "Seconds per store transaction by name and outcome (retries included)",
                tx.seconds,
            );
        }
        Arc::new(Metrics {
            registry,
            responses,
            round_events,
            commit_shares,
            commit_seconds,
            store_transactions,
            store_transaction_seconds,
            rounds,
            budget_epsilon_spent,
        })
    }

    /// Counts a round transition.
    pub fn round_event(&self, event: &str) {
        self.round_events
            .get_or_create(&EventLabels {
                event: event.to_string(),
            })
            .inc();
    }

    /// Records one group commit of `shares` shares that took from `started` until now.
    pub fn commit(&self, shares: usize, started: Instant) {
        self.commit_shares.observe(shares as f64);
        self.commit_seconds.observe(started.elapsed().as_secs_f64());
    }

    /// Records one transaction of the node's store, named `tx`, that ran from `started` until
    /// now and committed or not.
    pub fn store_tx(&self, tx: &str, committed: bool, started: Instant) {
        let labels = TxLabels {
            name: tx.to_string(),
            outcome: if committed { "ok" } else { "error" }.to_string(),
        };
        self.store_transactions.get_or_create(&labels).inc();
        self.store_transaction_seconds
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
    }

    /// Sets the number of recorded rounds in `state`.
    pub fn set_rounds(&self, state: &str, count: i64) {
        self.rounds
            .get_or_create(&StateLabels {
                state: state.to_string(),
            })
            .set(count);
    }

    /// Sets the budget spent.
    pub fn set_budget_spent(&self, epsilon: f64) {
        self.budget_epsilon_spent.set(epsilon);
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Middleware (a route layer): runs each request in a `tracing` span (method, route) and counts
/// its response by route, status and problem cause.
pub async fn count_responses(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    use tracing::Instrument;
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("other", |p| p.as_str())
        .to_string();
    let span = tracing::info_span!("request", method = %request.method(), route = %route);
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::debug!(
            status = response.status().as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "answered"
        )
    });
    let cause = response
        .extensions()
        .get::<ProblemCause>()
        .map_or("ok", |c| c.0)
        .to_string();
    metrics
        .responses
        .get_or_create(&ResponseLabels {
            route,
            status: response.status().as_str().to_string(),
            cause,
        })
        .inc();
    response
}

/// `GET /metrics`.
pub fn exposition(metrics: &Metrics) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        metrics.encode(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_transactions_are_counted_by_name_and_outcome() {
        let transactions = TxMetrics::default();
        let metrics = Metrics::with_store(transactions.clone());
        for ok in [true, true, false] {
            transactions.observe("begin_close", ok, Instant::now());
        }
        let text = metrics.encode();
        for line in [
            "dpdist_store_transactions_total{name=\"begin_close\",outcome=\"ok\"} 2",
            "dpdist_store_transactions_total{name=\"begin_close\",outcome=\"error\"} 1",
            "dpdist_store_transaction_seconds_count{name=\"begin_close\",outcome=\"ok\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(!Metrics::new().encode().contains("store_transaction"));
    }
}
