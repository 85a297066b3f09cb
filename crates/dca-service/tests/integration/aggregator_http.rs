//! The aggregator's HTTP API in process: its router driven request by request
//! (`tower::ServiceExt::oneshot`), one behaviour per test, over two compute nodes that are
//! in-process routers served on loopback (plain HTTP). The aggregator decides deadlines by a
//! mock clock; nothing here starts a process. The tests of what the aggregator stores run with
//! it on SQLite and on PostgreSQL.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use common::{client_token, values};
use dca_service::aggregator::server::{AggregatorRoundState, NodeList, router};
use dca_service::aggregator::{Aggregator, AggregatorStoreLocation};
use dca_service::clock::{Clock, MockClock};
use dca_service::http::problem::ProblemDocument;
use dca_service::node::NodeOptions;
use dca_service::protocol::job::JobView;
use dca_service::protocol::job::view::ParticipantView;
use dca_service::protocol::job::{Answer, ColumnBounds, JobKind, JobSpec, JobState, JobStatus};
use dca_service::protocol::spec::{RoundSpec, token_hash};
use dca_service::secret::SecretString;
use dca_service::{MEDIA_JSON, MEDIA_ROUND_CONFIG, hex};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use tower::ServiceExt;

const ADMIN: &str = "admin-token-for-aggregator-http-tests";
const ANALYST: &str = "analyst-token-for-aggregator-http-tests";

struct Setup {
    router: Router,
    http: reqwest::Client,
    nodes: Vec<String>,
    clock: Arc<MockClock>,
    _dir: common::Scratch,
    /// The aggregator's database when it is on PostgreSQL (dropped after the aggregator).
    _pg: Option<common::PgDatabases>,
}

/// Two in-process nodes on loopback and the aggregator's router over them, its background task
/// looking at due rounds every 20 ms.
async fn setup(name: &str) -> Setup {
    setup_polling(name, Duration::from_millis(20)).await
}

/// As [`setup`], the aggregator keeping its state in `store`; `None` if that is PostgreSQL and
/// no server is given (said loudly; a failure under CI).
async fn setup_on(name: &str, store: common::Store) -> Option<Setup> {
    setup_polling_on(name, Duration::from_millis(20), store).await
}

/// As [`setup`], the background task looking every `poll`.
async fn setup_polling(name: &str, poll: Duration) -> Setup {
    setup_polling_on(name, poll, common::Store::Sqlite)
        .await
        .expect("SQLite needs no server")
}

/// As [`setup_polling`], the aggregator keeping its state in `store`; `None` if that is
/// PostgreSQL and no server is given (said loudly; a failure under CI).
async fn setup_polling_on(name: &str, poll: Duration, store: common::Store) -> Option<Setup> {
    let pg = match store {
        common::Store::Sqlite => None,
        common::Store::Postgres => {
            let admin = common::postgres_admin_url(name)?;
            Some(common::PgDatabases::create(
                &admin,
                &format!("agghttp_{name}"),
                1,
            ))
        }
    };
    // The two variants of a test run at once: each has its own directory.
    let suffix = if pg.is_some() { "-pg" } else { "" };
    let dir = common::Scratch::new(&format!("agghttp-{name}{suffix}"));
    let mut nodes = Vec::new();
    for k in 0..2u16 {
        let data = dir.path.join(format!("node{k}"));
        std::fs::create_dir_all(&data).unwrap();
        let options = NodeOptions::new(k, data, SecretString::from(ADMIN.to_string()));
        let app = dca_service::node::router(&options).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        nodes.push(format!("http://{}", listener.local_addr().unwrap()));
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    // The deployment's client (TLS 1.3 for https URLs; these nodes speak plain HTTP on loopback).
    let certs = common::make_certs(&dir.path);
    let http =
        dca_service::http::tls::http_client(&certs.ca_pem, 8, Duration::from_secs(30)).unwrap();
    let clock = Arc::new(MockClock::new(dca_service::node::now_ms()));
    let at = match &pg {
        None => AggregatorStoreLocation::Sqlite(dir.path.join("aggregator.sqlite")),
        Some(pg) => AggregatorStoreLocation::parse(Some(&pg.urls[0]), None).unwrap(),
    };
    let aggregator = Aggregator::open_at(
        &at,
        http.clone(),
        nodes.clone(),
        ADMIN.to_string(),
        PrivacyLoss {
            epsilon: 10.0,
            delta: 1e-5,
        },
    )
    .unwrap()
    .with_clock(clock.clone());
    Some(Setup {
        router: router(aggregator, ANALYST, poll),
        http,
        nodes,
        clock,
        _dir: dir,
        _pg: pg,
    })
}

async fn send(
    s: &Setup,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> (StatusCode, Bytes) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = match body {
        Some(b) => {
            let media = if b.starts_with(&fixedpoint_shares::wire::ROUND_CONFIG_MAGIC) {
                MEDIA_ROUND_CONFIG
            } else {
                MEDIA_JSON
            };
            request = request.header("content-type", media);
            Body::from(b)
        }
        None => Body::empty(),
    };
    let response = s
        .router
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    (
        parts.status,
        axum::body::to_bytes(body, usize::MAX).await.unwrap(),
    )
}

fn problem_type(body: &Bytes) -> String {
    serde_json::from_slice::<ProblemDocument>(body)
        .map(|p| p.type_uri)
        .unwrap_or_default()
}

async fn node_keys(s: &Setup) -> Vec<String> {
    let (status, body) = send(s, Method::GET, "/nodes", Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_slice::<NodeList>(&body).unwrap().node_keys
}

/// A round of 4 clients (T = 1, d = 3) on the two nodes, created through the router.
async fn round(s: &Setup, number: u64) -> dca_service::protocol::spec::Round {
    let spec = common::spec(number, 4, 1, 3, "seed", None, node_keys(s).await);
    let round = spec.validate().unwrap();
    let (status, _) = send(
        s,
        Method::PUT,
        &format!("/rounds/{}", round.id()),
        Some(ANALYST),
        Some(round.config_bytes().unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    round
}

async fn upload(
    s: &Setup,
    round: &dca_service::protocol::spec::Round,
    clients: std::ops::Range<u64>,
) {
    for c in clients {
        dca_service::protocol::upload::upload(
            &s.http,
            round,
            &s.nodes,
            c,
            &client_token(c),
            &values(c as usize, 3),
            RngSource::InsecureFixedSeed(common::SEED).derive(c),
        )
        .await
        .unwrap();
    }
}

#[tokio::test]
async fn the_node_list_needs_the_analysts_token() {
    let s = setup("nodes").await;
    let (none, _) = send(&s, Method::GET, "/nodes", None, None).await;
    assert_eq!(none, StatusCode::UNAUTHORIZED);
    let (admin, body) = send(&s, Method::GET, "/nodes", Some(ADMIN), None).await;
    assert_eq!(admin, StatusCode::FORBIDDEN);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:forbidden");
    assert_eq!(node_keys(&s).await.len(), 2);
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_round_is_created_once_and_its_id_must_be_its_hash(#[case] store: common::Store) {
    let Some(s) = setup_on("create", store).await else {
        return;
    };
    let r = round(&s, 1).await;
    let uri = format!("/rounds/{}", r.id());
    let again = send(
        &s,
        Method::PUT,
        &uri,
        Some(ANALYST),
        Some(r.config_bytes().unwrap()),
    )
    .await;
    assert_eq!(again.0, StatusCode::OK);
    let other = RoundSpec {
        bound: 9.0,
        ..r.spec.clone()
    };
    let (status, body) = send(
        &s,
        Method::PUT,
        &uri,
        Some(ANALYST),
        Some(other.validate().unwrap().config_bytes().unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("SHA-256"));
    // JSON (with or without the token list inline) is no round config.
    let (status, body) = send(&s, Method::PUT, &uri, Some(ANALYST), Some(b"{".to_vec())).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        problem_type(&body),
        "urn:dpdist:problem:unsupported-media-type"
    );
    let cut = b"DPDC\x01\x00\x00\x00\x40".to_vec();
    let (status, body) = send(&s, Method::PUT, &uri, Some(ANALYST), Some(cut)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("truncated"));
    let (status, _) = send(&s, Method::GET, "/rounds/00", Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A node that does not answer makes creating a round 502 (`node-unavailable`): the same round
/// through an aggregator whose second node is an address nobody listens on.
#[tokio::test]
async fn a_round_a_node_cannot_take_is_502() {
    let s = setup("unreachable").await;
    let keys = node_keys(&s).await;
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let aggregator = Aggregator::open_at(
        &AggregatorStoreLocation::Sqlite(s._dir.path.join("unreachable.sqlite")),
        s.http.clone(),
        vec![s.nodes[0].clone(), dead],
        ADMIN.to_string(),
        PrivacyLoss {
            epsilon: 10.0,
            delta: 1e-5,
        },
    )
    .unwrap();
    let broken = Setup {
        router: router(aggregator, ANALYST, Duration::from_secs(3600)),
        http: s.http.clone(),
        nodes: s.nodes.clone(),
        clock: s.clock.clone(),
        _dir: common::Scratch::new("agghttp-unreachable-second"),
        _pg: None,
    };
    let round = common::spec(1, 4, 1, 3, "seed", None, keys)
        .validate()
        .unwrap();
    let (status, body) = send(
        &broken,
        Method::PUT,
        &format!("/rounds/{}", round.id()),
        Some(ANALYST),
        Some(round.config_bytes().unwrap()),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_GATEWAY,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(problem_type(&body), "urn:dpdist:problem:node-unavailable");
}

/// A round number used again under another configuration (another job on the same numbers) is
/// refused at its own id, with the number and the round that holds it: what the `dpdist` CLI's
/// `--round-offset` hint keys on (cli_errors.rs runs that end to end).
#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_reused_round_number_is_refused_naming_the_number_and_its_round(
    #[case] store: common::Store,
) {
    let Some(s) = setup_on("reuse", store).await else {
        return;
    };
    let first = round(&s, 7).await;
    let other = RoundSpec {
        bound: 9.0,
        ..first.spec.clone()
    }
    .validate()
    .unwrap();
    assert_ne!(other.id(), first.id());
    let (status, body) = send(
        &s,
        Method::PUT,
        &format!("/rounds/{}", other.id()),
        Some(ANALYST),
        Some(other.config_bytes().unwrap()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:invalid-config");
    let detail = String::from_utf8_lossy(&body);
    assert!(
        detail.contains(&format!(
            "round number 7 was already used with another configuration (round {})",
            first.id()
        )),
        "{detail}"
    );
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_round_collecting_is_202_then_released_once(#[case] store: common::Store) {
    // The server's own task never looks here: the releases below are the analyst's.
    let Some(s) = setup_polling_on("release", Duration::from_secs(3600), store).await else {
        return;
    };
    let r = round(&s, 2).await;
    let uri = format!("/rounds/{}/release", r.id());
    let (status, _) = send(&s, Method::GET, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    upload(&s, &r, 0..4).await;
    let (status, body) = send(&s, Method::POST, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (status, body) = send(&s, Method::POST, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:round-released");
    let (status, _) = send(&s, Method::GET, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::OK);
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn more_than_t_missing_is_422_and_the_round_stays_aborted(#[case] store: common::Store) {
    let Some(s) = setup_on("abort", store).await else {
        return;
    };
    let r = round(&s, 3).await;
    upload(&s, &r, 0..2).await; // 2 of 4 missing, T = 1
    let uri = format!("/rounds/{}/release", r.id());
    let (status, body) = send(&s, Method::POST, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:too-many-dropped");
    let (status, _) = send(&s, Method::GET, &uri, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (_, body) = send(
        &s,
        Method::GET,
        &format!("/rounds/{}", r.id()),
        Some(ANALYST),
        None,
    )
    .await;
    let state: AggregatorRoundState = serde_json::from_slice(&body).unwrap();
    assert!(
        matches!(state.state.as_str(), "aborted" | "aborting"),
        "{state:?}"
    );
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_round_past_its_deadline_is_closed_by_the_server_itself(#[case] store: common::Store) {
    let Some(s) = setup_on("deadline", store).await else {
        return;
    };
    let r = round(&s, 4).await;
    upload(&s, &r, 0..3).await; // one missing: within T
    let uri = format!("/rounds/{}/release", r.id());
    assert_eq!(
        send(&s, Method::GET, &uri, Some(ANALYST), None).await.0,
        StatusCode::ACCEPTED
    );
    s.clock.advance(700_000); // past the spec's 600 s deadline
    let mut released = false;
    for _ in 0..200 {
        if send(&s, Method::GET, &uri, Some(ANALYST), None).await.0 == StatusCode::OK {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        released,
        "the background task did not release the due round"
    );
}

fn job(roster: usize) -> JobSpec {
    JobSpec {
        kind: JobKind::Blr,
        target: ColumnBounds {
            name: "y".into(),
            lo: 0.0,
            hi: 1.0,
            group: None,
        },
        features: vec![ColumnBounds {
            name: "x".into(),
            lo: 0.0,
            hi: 1.0,
            group: None,
        }],
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..roster)
            .map(|i| hex::encode(&token_hash(&format!("p{i}"))))
            .collect(),
        max_rows: 10,
        answer_window_ms: 60_000,
        upload_window_ms: 60_000,
        created_unix_ms: 1,
        public_seed: None,
        clipped_share: None,
        validity: None,
        train: None,
    }
}

async fn put_job(s: &Setup, spec: &JobSpec, token: Option<&str>) -> (StatusCode, Bytes) {
    send(
        s,
        Method::PUT,
        &format!("/jobs/{}", spec.id()),
        token,
        Some(spec.canonical_json()),
    )
    .await
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_job_is_created_once_by_the_analyst_only(#[case] store: common::Store) {
    let Some(s) = setup_on("job-create", store).await else {
        return;
    };
    let spec = job(3);
    assert_eq!(put_job(&s, &spec, None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        put_job(&s, &spec, Some("p0")).await.0,
        StatusCode::FORBIDDEN
    );
    let (status, body) = put_job(&s, &spec, Some(ANALYST)).await;
    assert_eq!(status, StatusCode::CREATED);
    let view: JobView = serde_json::from_slice(&body).unwrap();
    assert_eq!(view.status.state, JobState::Answering);
    assert_eq!(view.status.node_keys.len(), 2);
    assert_eq!(put_job(&s, &spec, Some(ANALYST)).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_bad_job_spec_is_400_and_names_its_field() {
    let s = setup("job-bad").await;
    let spec = job(3);
    let fit = String::from_utf8(spec.canonical_json())
        .unwrap()
        .replace("\"kind\":\"blr\"", "\"kind\":\"fit\"");
    assert!(fit.contains("\"kind\":\"fit\""));
    let (status, body) = send(
        &s,
        Method::PUT,
        &format!("/jobs/{}", spec.id()),
        Some(ANALYST),
        Some(fit.into_bytes()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("job kind \"fit\" is not supported"),
        "{detail}"
    );
    let good = job(3);
    let (status, body) = send(
        &s,
        Method::PUT,
        &format!("/jobs/{}", job(4).id()),
        Some(ANALYST),
        Some(good.canonical_json()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("SHA-256"));
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn a_job_is_visible_to_its_roster_only(#[case] store: common::Store) {
    let Some(s) = setup_on("job-visible", store).await else {
        return;
    };
    let spec = job(3);
    put_job(&s, &spec, Some(ANALYST)).await;
    let uri = format!("/jobs/{}", spec.id());
    let (status, body) = send(&s, Method::GET, &uri, Some("p2"), None).await;
    assert_eq!(status, StatusCode::OK);
    // A participant's view carries its place, not the roster (whose size it must not grow with).
    let view: ParticipantView = serde_json::from_slice(&body).unwrap();
    assert_eq!((view.you, view.id.as_str()), (2, spec.id().as_str()));
    assert!(!String::from_utf8_lossy(&body).contains(&spec.roster[0]));
    // The spec, fetched once, is the one whose hash is the job's id.
    let (status, body) = send(&s, Method::GET, &format!("{uri}/spec"), Some("p2"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_slice::<JobSpec>(&body).unwrap(), spec);
    assert_eq!(
        send(
            &s,
            Method::GET,
            &format!("{uri}/spec"),
            Some("stranger"),
            None
        )
        .await
        .0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&s, Method::GET, &uri, Some("stranger"), None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&s, Method::GET, "/jobs", Some("stranger"), None)
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    let (status, body) = send(&s, Method::GET, "/jobs", Some("p1"), None).await;
    assert_eq!(status, StatusCode::OK);
    let views: Vec<ParticipantView> = serde_json::from_slice(&body).unwrap();
    assert_eq!((views.len(), views[0].you), (1, 1));
    assert_eq!(
        send(&s, Method::GET, "/jobs/00", Some(ANALYST), None)
            .await
            .0,
        StatusCode::NOT_FOUND
    );
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn an_answer_is_given_once_by_a_participant_while_the_job_answers(
    #[case] store: common::Store,
) {
    let Some(s) = setup_on("job-answer", store).await else {
        return;
    };
    let spec = job(3);
    put_job(&s, &spec, Some(ANALYST)).await;
    let uri = format!("/jobs/{}/answer", spec.id());
    let answer = |accept: bool, rows: usize| {
        serde_json::to_vec(&Answer {
            accept,
            rows,
            reason: String::new(),
        })
        .unwrap()
    };
    let (status, body) = send(&s, Method::POST, &uri, Some("p0"), Some(answer(true, 11))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "more rows than max_rows");
    assert!(String::from_utf8_lossy(&body).contains("max_rows"));
    assert_eq!(
        send(&s, Method::POST, &uri, Some(ANALYST), Some(answer(true, 1)))
            .await
            .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        send(&s, Method::POST, &uri, Some("p0"), Some(answer(true, 5)))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        send(&s, Method::POST, &uri, Some("p0"), Some(answer(true, 5)))
            .await
            .0,
        StatusCode::OK
    );
    let (status, body) = send(&s, Method::POST, &uri, Some("p0"), Some(answer(false, 0))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:already-answered");
    let cancel = format!("/jobs/{}/cancel", spec.id());
    let (status, body) = send(&s, Method::POST, &cancel, Some(ANALYST), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_slice::<JobStatus>(&body).unwrap().state,
        JobState::Cancelled
    );
    let (status, body) = send(&s, Method::POST, &uri, Some("p1"), Some(answer(true, 1))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem_type(&body), "urn:dpdist:problem:job-state");
    assert_eq!(
        send(&s, Method::POST, &cancel, Some(ANALYST), None).await.0,
        StatusCode::CONFLICT
    );
    assert_eq!(
        send(&s, Method::POST, &cancel, Some("p1"), None).await.0,
        StatusCode::FORBIDDEN
    );
}

#[rstest]
#[case::sqlite(common::Store::Sqlite)]
#[case::postgres(common::Store::Postgres)]
#[tokio::test]
async fn participants_silent_past_the_answer_window_end_the_job_before_any_round(
    #[case] store: common::Store,
) {
    let Some(s) = setup_on("job-silent", store).await else {
        return;
    };
    let spec = JobSpec {
        created_unix_ms: s.clock.now_ms(),
        ..job(3)
    };
    put_job(&s, &spec, Some(ANALYST)).await;
    s.clock.advance(61_000);
    let uri = format!("/jobs/{}", spec.id());
    for _ in 0..200 {
        let (_, body) = send(&s, Method::GET, &uri, Some(ANALYST), None).await;
        let view: JobView = serde_json::from_slice(&body).unwrap();
        if !view.status.is_live() {
            assert_eq!(view.status.state, JobState::Aborted);
            assert!(
                view.status
                    .reason
                    .unwrap()
                    .contains("3 participants refused or did not answer")
            );
            assert!(view.status.rounds.is_empty());
            assert_eq!(view.status.rho_spent, 0.0);
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the job did not end at its answer deadline");
}

// The job tests create jobs dated long ago (`created_unix_ms: 1`): they look at a job before
// the background task, which runs only when the test awaits, ends it.
