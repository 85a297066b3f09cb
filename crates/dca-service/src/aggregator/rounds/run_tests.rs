//! The release driven under a round's lease, in process: a drive that stops asking the nodes
//! once another drive recorded the release, and the analyst's `POST /rounds/{id}/release`
//! while another aggregator holds the lease (taken through the store) and after it expired
//! (by the aggregator's mock clock). Nodes are routers served on loopback (plain HTTP).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Encode, ShardSet};
use share_sealing::NodeKeyPair;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tower::ServiceExt;

use crate::aggregator::store::{
    AggregatorStore, AggregatorStoreLocation, LeaseTaken, RoundPhase, RoundState,
};
use crate::aggregator::{Aggregator, PublishedRelease, SUM_POLLS};
use crate::clock::{Clock, MockClock};
use crate::node::NodeOptions;
use crate::protocol::spec::{Round, RoundSpec, token_hash};
use crate::secret::SecretString;

const ADMIN: &str = "admin-token-for-release-lease-tests";
const ANALYST: &str = "analyst-token-for-release-lease-tests";

fn budget() -> PrivacyLoss {
    PrivacyLoss {
        epsilon: 10.0,
        delta: 1e-5,
    }
}

/// The deployment's client; these nodes speak plain HTTP on loopback, so the CA is unused.
fn http_client() -> reqwest::Client {
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    crate::http::tls::http_client(ca.cert.pem().as_bytes(), 8, Duration::from_secs(30)).unwrap()
}

fn client_token(client: u64) -> String {
    format!("client-token-{client}")
}

/// A round of `n` clients (T = 1, d = 2) without noise on nodes with `node_keys`.
fn round(n: u64, node_keys: Vec<String>) -> Round {
    RoundSpec {
        validity: None,
        round: 1,
        n_clients: n as usize,
        n_nodes: node_keys.len() as u16,
        max_dropped: 1,
        dim: 2,
        bound: 8.0,
        mode: "seed".into(),
        noise_sigma_total: None,
        l2_sensitivity: None,
        frac_bits: None,
        deadline_unix_ms: crate::clock::now_ms() + 600_000,
        node_keys,
        client_token_sha256: (0..n)
            .map(|c| crate::hex::encode(&token_hash(&client_token(c))))
            .collect(),
    }
    .validate()
    .unwrap()
}

/// Serves `app` on a free loopback port: its base URL and the task serving it.
async fn serve(app: Router) -> (String, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// A node that takes every close and never has its sum ready: 202 with `Retry-After: 0`, so it
/// is polled again at once. Counts the sum polls and signals the first.
struct NeverReadyNode {
    url: String,
    sum_polls: Arc<AtomicUsize>,
    first_poll: Arc<Notify>,
    task: JoinHandle<()>,
}

impl NeverReadyNode {
    async fn start() -> Self {
        let sum_polls = Arc::new(AtomicUsize::new(0));
        let first_poll = Arc::new(Notify::new());
        let (polls, first) = (sum_polls.clone(), first_poll.clone());
        let app = Router::new()
            .route("/rounds/{id}/close", post(|| async { StatusCode::OK }))
            .route(
                "/rounds/{id}/sum",
                get(move || async move {
                    if polls.fetch_add(1, Ordering::SeqCst) == 0 {
                        first.notify_one();
                    }
                    (StatusCode::ACCEPTED, [(header::RETRY_AFTER, "0")]).into_response()
                }),
            );
        let (url, task) = serve(app).await;
        NeverReadyNode {
            url,
            sum_polls,
            first_poll,
            task,
        }
    }
}

#[tokio::test]
async fn a_drive_stops_polling_the_nodes_once_another_drive_recorded_the_release() {
    let dir = crate::scratch_dir("release-lease-polls");
    let node = NeverReadyNode::start().await;
    let agg = Aggregator::open(
        &dir.join("aggregator.sqlite"),
        http_client(),
        // Both nodes of the round are this one.
        vec![node.url.clone(), node.url.clone()],
        ADMIN.to_string(),
        budget(),
    )
    .unwrap();
    let keys = (0..2)
        .map(|_| crate::hex::encode(&NodeKeyPair::generate().public.to_bytes()))
        .collect();
    let round = round(2, keys);
    let id = round.id();
    agg.store
        .insert_round(&id, &round.config_bytes().unwrap())
        .unwrap();
    let agreed = ShardSet::empty(round.config.n_clients())
        .get_encoded()
        .unwrap();
    assert!(
        agg.store
            .begin_close(&id, &agreed, None, |_| Ok(()))
            .unwrap()
    );
    let recorded = PublishedRelease {
        id: id.clone(),
        round: 1,
        sum: vec![1.5, -2.0],
        sum_units: vec![3 << 15, -(1 << 17)],
        frac_bits: 16,
        clients: vec![],
        noise_sigma_released: 0.0,
        spent_epsilon: 0.0,
        spent_delta: 0.0,
        privacy: Some(crate::protocol::spec::NON_PRIVATE_MARK.to_string()),
        invalid: None,
        truncation_delta: None,
    };
    // The other drive of this aggregator (same holder) records the release while this one
    // polls the node.
    let other_drive = async {
        node.first_poll.notified().await;
        let json = serde_json::to_string(&recorded).unwrap();
        let now = agg.clock.now_ms();
        assert!(
            agg.store
                .mark_released(&id, &agg.leases.holder, now, &json)
                .unwrap()
        );
    };
    let (outcome, ()) = tokio::join!(agg.release(&round), other_drive);
    assert_eq!(outcome.unwrap(), recorded);
    let polls = node.sum_polls.load(Ordering::SeqCst);
    assert!(polls < SUM_POLLS as usize, "{polls} polls");
    node.task.abort();
}

/// Client `c`'s vector: exact in binary fixed point, so the sum has one right value.
fn values(c: u64) -> Vec<f64> {
    vec![c as f64 + 0.5, -(c as f64)]
}

async fn post_release(app: &Router, id: &str) -> (StatusCode, Option<HeaderValue>, Vec<u8>) {
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("/rounds/{id}/release"))
        .header(header::AUTHORIZATION, format!("Bearer {ANALYST}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let retry_after = response.headers().get(header::RETRY_AFTER).cloned();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, retry_after, body.to_vec())
}

#[tokio::test]
async fn the_analysts_release_waits_202_while_another_aggregator_holds_the_lease() {
    let dir = crate::scratch_dir("release-lease-held");
    let mut nodes = Vec::new();
    let mut tasks = Vec::new();
    for k in 0..2u16 {
        let data = dir.join(format!("node{k}"));
        std::fs::create_dir_all(&data).unwrap();
        let options = NodeOptions::new(k, data, SecretString::from(ADMIN.to_string()));
        let (url, task) = serve(crate::node::router(&options).unwrap()).await;
        nodes.push(url);
        tasks.push(task);
    }
    let http = http_client();
    let clock = Arc::new(MockClock::new(crate::clock::now_ms()));
    let at = AggregatorStoreLocation::Sqlite(dir.join("aggregator.sqlite"));
    let agg = Aggregator::open_at(
        &at,
        http.clone(),
        nodes.clone(),
        ADMIN.to_string(),
        budget(),
    )
    .unwrap()
    .with_clock(clock.clone());
    let round = agg
        .create_round(round(3, agg.node_keys().await.unwrap()).spec)
        .await
        .unwrap();
    let id = round.id();
    for c in 0..3 {
        let rng = RngSource::InsecureFixedSeed(7).derive(c);
        crate::protocol::upload::upload(
            &http,
            &round,
            &nodes,
            c,
            &client_token(c),
            &values(c),
            rng,
        )
        .await
        .unwrap();
    }
    agg.begin_close(&round).await.unwrap();
    // Another aggregator on the same store takes the closing round's lease for 30 s.
    let other = AggregatorStore::open(&at).unwrap();
    let now = clock.now_ms();
    assert_eq!(
        other
            .take_release_lease(&id, "another aggregator", now, now + 30_000)
            .unwrap(),
        LeaseTaken::Taken
    );
    // The server's own pass never looks here: every release below is the analyst's.
    let app = crate::aggregator::server::router(agg, ANALYST, Duration::from_secs(3600));

    let (status, retry_after, body) = post_release(&app, &id).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(retry_after, Some(HeaderValue::from_static("1")));
    let why = String::from_utf8_lossy(&body);
    assert!(
        why.contains("another aggregator holds the release lease"),
        "{why}"
    );
    assert_eq!(other.round(&id).unwrap().unwrap().1, RoundState::Closing);

    clock.advance(30_001);
    let (status, _, body) = post_release(&app, &id).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let release: PublishedRelease = serde_json::from_slice(&body).unwrap();
    assert_eq!(release.clients, vec![0, 1, 2]);
    assert_eq!(release.sum, vec![0.5 + 1.5 + 2.5, -3.0]);
    assert_eq!(
        other.round(&id).unwrap().unwrap().1.phase(),
        RoundPhase::Released
    );
    for task in tasks {
        task.abort();
    }
}
