//! The compute node's HTTP API in process: the router driven request by request
//! (`tower::ServiceExt::oneshot`), one behaviour per test, every status code of
//! docs/src/services/http-api.md that a request can cause. Deadlines pass on a mock clock; body
//! time limits on tokio's paused clock — nothing sleeps.

#![allow(missing_docs)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use common::{client_token, spec, values};
use dca_service::clock::MockClock;
use dca_service::http::problem::{MEDIA_PROBLEM, ProblemDocument};
use dca_service::node::{NodeOptions, RoundStatus, router};
use dca_service::protocol::spec::Round;
use dca_service::protocol::upload as client;
use dca_service::secret::SecretString;
use dca_service::{
    MEDIA_JSON, MEDIA_NODE_SUM, MEDIA_PAIR_SET, MEDIA_ROUND_CONFIG, MEDIA_SEALED_SHARE, hex,
};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Decode, Encode};
use share_sealing::NodeKeyPair;
use tower::ServiceExt;

const ADMIN: &str = "admin-token-for-http-tests";
const N: usize = 4;
const T: usize = 1;
const DIM: usize = 3;

struct Node {
    router: Router,
    clock: Arc<MockClock>,
    round: Round,
    _dir: common::Scratch,
}

/// Node 0 in a fresh directory with a round of N = 4 clients (T = 1, d = 3, seed mode) created
/// on it; `tune` adjusts its options.
async fn node(name: &str, tune: impl FnOnce(&mut NodeOptions)) -> Node {
    let dir = common::Scratch::new(&format!("http-{name}"));
    let clock = Arc::new(MockClock::new(dca_service::node::now_ms()));
    let mut options = NodeOptions::new(0, dir.path.clone(), SecretString::from(ADMIN.to_string()));
    options.clock = clock.clone();
    tune(&mut options);
    let router = router(&options).unwrap();
    let mine = dca_service::node::key::load_or_create_key(&dir.path)
        .unwrap()
        .public;
    let keys = vec![
        hex::encode(&mine.to_bytes()),
        hex::encode(&NodeKeyPair::generate().public.to_bytes()),
    ];
    let round = spec(7, N, T, DIM, "seed", None, keys).validate().unwrap();
    let node = Node {
        router,
        clock,
        round,
        _dir: dir,
    };
    assert_eq!(create(&node, &node.round).await.0, StatusCode::CREATED);
    node
}

async fn send(
    node: &Node,
    method: Method,
    uri: &str,
    token: Option<&str>,
    media: Option<&str>,
    body: Body,
) -> (StatusCode, HeaderMap, Bytes) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(media) = media {
        request = request.header("content-type", media);
    }
    let response = node
        .router
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (parts.status, parts.headers, bytes)
}

/// The problem document of an error answer, checked to be one.
fn problem(headers: &HeaderMap, body: &Bytes) -> ProblemDocument {
    assert_eq!(headers["content-type"], MEDIA_PROBLEM);
    serde_json::from_slice(body).unwrap()
}

async fn create(node: &Node, round: &Round) -> (StatusCode, HeaderMap, Bytes) {
    put_config(node, &round.id(), round.config_bytes().unwrap()).await
}

async fn put_config(node: &Node, id: &str, body: Vec<u8>) -> (StatusCode, HeaderMap, Bytes) {
    let uri = format!("/rounds/{id}");
    send(
        node,
        Method::PUT,
        &uri,
        Some(ADMIN),
        Some(MEDIA_ROUND_CONFIG),
        body.into(),
    )
    .await
}

/// Client `c`'s sealed share for node 0 (attempt `seed`).
fn sealed(round: &Round, c: u64, seed: u64) -> Vec<u8> {
    let messages = Client::new(
        &round.config,
        ClientId(c),
        RngSource::InsecureFixedSeed(seed),
    )
    .unwrap()
    .shard(&values(c as usize, DIM))
    .unwrap();
    client::seal_for(round, c, 0, &messages[0].get_encoded().unwrap()).unwrap()
}

async fn upload_as(node: &Node, c: u64, token: &str, body: Body) -> (StatusCode, HeaderMap, Bytes) {
    let uri = format!("/rounds/{}/shares/{c}", node.round.id());
    send(
        node,
        Method::PUT,
        &uri,
        Some(token),
        Some(MEDIA_SEALED_SHARE),
        body,
    )
    .await
}

async fn upload(node: &Node, c: u64) -> StatusCode {
    let body = sealed(&node.round, c, c).into();
    upload_as(node, c, &client_token(c), body).await.0
}

async fn admin(
    node: &Node,
    method: Method,
    path: &str,
    body: Vec<u8>,
) -> (StatusCode, HeaderMap, Bytes) {
    admin_as(node, method, path, MEDIA_JSON, body).await
}

async fn admin_as(
    node: &Node,
    method: Method,
    path: &str,
    media: &str,
    body: Vec<u8>,
) -> (StatusCode, HeaderMap, Bytes) {
    let uri = format!("/rounds/{}{path}", node.round.id());
    send(node, method, &uri, Some(ADMIN), Some(media), body.into()).await
}

/// `POST /rounds/{id}/close` with `body` as a pair set.
async fn close_bytes(node: &Node, body: Vec<u8>) -> (StatusCode, HeaderMap, Bytes) {
    admin_as(node, Method::POST, "/close", MEDIA_PAIR_SET, body).await
}

async fn received(node: &Node) -> fixedpoint_shares::ShardSet {
    let (status, headers, body) = admin(node, Method::GET, "/received", vec![]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], MEDIA_PAIR_SET);
    fixedpoint_shares::ShardSet::get_decoded(&N, &body).unwrap()
}

async fn close_with(
    node: &Node,
    set: &fixedpoint_shares::ShardSet,
) -> (StatusCode, HeaderMap, Bytes) {
    close_bytes(node, set.get_encoded().unwrap()).await
}

async fn status(node: &Node) -> RoundStatus {
    let (code, _, body) = admin(node, Method::GET, "", vec![]).await;
    assert_eq!(code, StatusCode::OK);
    serde_json::from_slice(&body).unwrap()
}

/// The status code of `GET /rounds/{id}`.
async fn status_of(node: &Node, id: &str) -> StatusCode {
    let uri = format!("/rounds/{id}");
    send(node, Method::GET, &uri, Some(ADMIN), None, Body::empty())
        .await
        .0
}

async fn abort(node: &Node) -> StatusCode {
    admin(
        node,
        Method::POST,
        "/abort",
        br#"{"reason":"test"}"#.to_vec(),
    )
    .await
    .0
}

/// Uploads every client's share and closes with all of them.
async fn closed(node: &Node) {
    for c in 0..N as u64 {
        assert_eq!(upload(node, c).await, StatusCode::CREATED);
    }
    let set = received(node).await;
    assert_eq!(close_with(node, &set).await.0, StatusCode::ACCEPTED);
}

// ---- public endpoints ----

#[tokio::test]
async fn healthz_and_key_answer_without_a_token() {
    let node = node("public", |_| {}).await;
    let (s, _, body) = send(&node, Method::GET, "/healthz", None, None, Body::empty()).await;
    assert_eq!((s, &body[..]), (StatusCode::OK, &b"ok\n"[..]));
    let (s, _, body) = send(&node, Method::GET, "/key", None, None, Body::empty()).await;
    assert_eq!(s, StatusCode::OK);
    let key: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(key["public_key"], node.round.spec.node_keys[0]);
}

// ---- PUT /rounds/{id} ----

#[tokio::test]
async fn creating_a_round_again_is_200_and_changes_nothing() {
    let node = node("create-again", |_| {}).await;
    assert_eq!(create(&node, &node.round).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_round_id_that_is_not_the_configs_hash_is_400() {
    let node = node("create-id", |_| {}).await;
    let other = spec(
        8,
        N,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    );
    let (s, h, b) = put_config(
        &node,
        &node.round.id(),
        other.validate().unwrap().config_bytes().unwrap(),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(problem(&h, &b).detail.contains("SHA-256"));
}

#[tokio::test]
async fn a_round_listing_another_key_for_this_node_is_400() {
    let node = node("create-key", |_| {}).await;
    let mut keys = node.round.spec.node_keys.clone();
    keys.swap(0, 1);
    let round = spec(8, N, T, DIM, "seed", None, keys).validate().unwrap();
    let (s, h, b) = create(&node, &round).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(problem(&h, &b).detail.contains("another public key"));
}

#[tokio::test]
async fn a_malformed_config_is_400() {
    let node = node("create-bad", |_| {}).await;
    let (s, h, b) = put_config(&node, &"00".repeat(32), b"{\"round\": 1".to_vec()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:malformed");
}

#[tokio::test]
async fn a_json_config_is_415_and_a_spec_listing_its_tokens_inline_is_400() {
    let node = node("create-json", |_| {}).await;
    let round = spec(
        9,
        N,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    )
    .validate()
    .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&round.spec.canonical_json()).unwrap();
    json["client_token_sha256"] = serde_json::json!(round.spec.client_token_sha256);
    let json = serde_json::to_vec(&json).unwrap();
    let uri = format!("/rounds/{}", round.id());
    let (s, h, b) = send(
        &node,
        Method::PUT,
        &uri,
        Some(ADMIN),
        Some(MEDIA_JSON),
        json.clone().into(),
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(problem(&h, &b).detail.contains(MEDIA_ROUND_CONFIG));
    // JSON sent as a round config is not one.
    let (s, h, b) = put_config(&node, &round.id(), json.clone()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(problem(&h, &b).detail.contains("bad magic"));
    // The same JSON as a round config's spec.
    let tokens = fixedpoint_shares::wire::TokenList(round.token_hashes.clone());
    let wrapped = fixedpoint_shares::wire::encode_round_config(&json, &tokens).unwrap();
    let (s, h, b) = put_config(&node, &round.id(), wrapped).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        problem(&h, &b)
            .detail
            .contains("client_token_sha256 inline")
    );
    assert_eq!(status_of(&node, &round.id()).await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_truncated_token_list_is_400_naming_the_cause_and_creates_nothing() {
    let node = node("create-truncated", |_| {}).await;
    let round = spec(
        9,
        N,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    )
    .validate()
    .unwrap();
    let bytes = round.config_bytes().unwrap();
    let (s, h, b) = put_config(&node, &round.id(), bytes[..bytes.len() - 7].to_vec()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let detail = problem(&h, &b).detail;
    assert!(detail.contains("truncated"), "{detail}");
    assert_eq!(status_of(&node, &round.id()).await, StatusCode::NOT_FOUND);
    assert_eq!(
        put_config(&node, &round.id(), bytes).await.0,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_token_list_differing_in_one_byte_is_another_round() {
    use sha2::{Digest, Sha256};
    let node = node("create-flip", |_| {}).await;
    let round = spec(
        9,
        N,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    )
    .validate()
    .unwrap();
    let mut flipped = round.config_bytes().unwrap();
    *flipped.last_mut().unwrap() ^= 1;
    let flipped_id = hex::encode(&Sha256::digest(&flipped));
    assert_ne!(flipped_id, round.id());
    let (s, h, b) = put_config(&node, &round.id(), flipped.clone()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let detail = problem(&h, &b).detail;
    assert!(detail.contains(&flipped_id), "{detail}");
    assert_eq!(
        put_config(&node, &flipped_id, flipped).await.0,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn creating_without_a_token_is_401_and_with_a_clients_token_403() {
    let node = node("create-auth", |_| {}).await;
    let round = spec(
        8,
        N,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    )
    .validate()
    .unwrap();
    let uri = format!("/rounds/{}", round.id());
    let body = || Body::from(round.config_bytes().unwrap());
    let media = Some(MEDIA_ROUND_CONFIG);
    let (s, h, _) = send(&node, Method::PUT, &uri, None, media, body()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(h["www-authenticate"], "Bearer");
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        Some(&client_token(0)),
        media,
        body(),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_round_number_reused_with_another_config_is_409() {
    let node = node("create-reuse", |_| {}).await;
    let mut other = node.round.spec.clone();
    other.bound = 2.0;
    let (s, h, b) = create(&node, &other.validate().unwrap()).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(
        problem(&h, &b).type_uri,
        "urn:dpdist:problem:round-number-reused"
    );
}

#[tokio::test]
async fn a_config_larger_than_max_body_is_413() {
    let node = node("create-large", |o| o.max_body = 4096).await;
    let big = spec(
        8,
        200,
        T,
        DIM,
        "seed",
        None,
        node.round.spec.node_keys.clone(),
    )
    .validate()
    .unwrap();
    assert_eq!(create(&node, &big).await.0, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_config_of_another_media_type_is_415() {
    let node = node("create-media", |_| {}).await;
    let uri = format!("/rounds/{}", node.round.id());
    let body = Body::from(node.round.config_bytes().unwrap());
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        Some(ADMIN),
        Some("text/plain"),
        body,
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

// ---- GET /rounds/{id} ----

#[tokio::test]
async fn the_status_of_an_open_round_is_200() {
    let node = node("status", |_| {}).await;
    assert_eq!(upload(&node, 2).await, StatusCode::CREATED);
    let s = status(&node).await;
    assert_eq!(
        (s.state.as_str(), s.received, s.sum.as_str()),
        ("open", 1, "none")
    );
}

#[tokio::test]
async fn an_unknown_round_is_404() {
    let node = node("unknown", |_| {}).await;
    let uri = format!("/rounds/{}", "ab".repeat(32));
    let (s, h, b) = send(&node, Method::GET, &uri, Some(ADMIN), None, Body::empty()).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(problem(&h, &b).status, 404);
}

// ---- PUT /rounds/{id}/shares/{client} ----

#[tokio::test]
async fn a_share_is_201_and_the_same_share_again_200() {
    let node = node("upload", |_| {}).await;
    assert_eq!(upload(&node, 1).await, StatusCode::CREATED);
    assert_eq!(upload(&node, 1).await, StatusCode::OK);
    assert_eq!(status(&node).await.received, 1);
}

#[tokio::test]
async fn another_share_for_a_client_that_has_one_is_409() {
    let node = node("upload-conflict", |_| {}).await;
    assert_eq!(upload(&node, 1).await, StatusCode::CREATED);
    let (s, h, b) = upload_as(
        &node,
        1,
        &client_token(1),
        sealed(&node.round, 1, 99).into(),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(
        problem(&h, &b).type_uri,
        "urn:dpdist:problem:share-conflict"
    );
}

#[tokio::test]
async fn a_share_that_does_not_open_is_400() {
    let node = node("upload-garbage", |_| {}).await;
    let mut bytes = sealed(&node.round, 1, 1);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let (s, h, b) = upload_as(&node, 1, &client_token(1), bytes.into()).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(problem(&h, &b).detail.contains("sealed share"));
}

#[tokio::test]
async fn a_share_that_opens_but_belongs_to_another_slot_is_400() {
    let node = node("upload-slot", |_| {}).await;
    // Client 2's message for node 0, sealed for client 1's slot: it opens, then the core's
    // check (node 1's message would fail there) and the slot check refuse it.
    let messages = Client::new(
        &node.round.config,
        ClientId(2),
        RngSource::InsecureFixedSeed(2),
    )
    .unwrap()
    .shard(&values(2, DIM))
    .unwrap();
    for (k, why) in [(0usize, "uploaded as client 1"), (1, "share message")] {
        let bytes =
            client::seal_for(&node.round, 1, 0, &messages[k].get_encoded().unwrap()).unwrap();
        let (s, h, b) = upload_as(&node, 1, &client_token(1), bytes.into()).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
        assert!(problem(&h, &b).detail.contains(why), "{why}");
    }
    assert_eq!(status(&node).await.received, 0);
}

#[tokio::test]
async fn a_share_without_a_token_is_401_with_another_clients_token_403() {
    let node = node("upload-auth", |_| {}).await;
    let uri = format!("/rounds/{}/shares/1", node.round.id());
    let body = || Body::from(sealed(&node.round, 1, 1));
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        None,
        Some(MEDIA_SEALED_SHARE),
        body(),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(
        upload_as(&node, 1, &client_token(2), body()).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        upload_as(&node, 1, ADMIN, body()).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(status(&node).await.received, 0);
}

#[tokio::test]
async fn a_share_for_an_unknown_round_or_client_is_404() {
    let node = node("upload-404", |_| {}).await;
    let body = || Body::from(sealed(&node.round, 1, 1));
    let uri = format!("/rounds/{}/shares/1", "cd".repeat(32));
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        Some(&client_token(1)),
        Some(MEDIA_SEALED_SHARE),
        body(),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        upload_as(&node, N as u64, &client_token(1), body()).await.0,
        StatusCode::NOT_FOUND
    );
    let uri = format!("/rounds/{}/shares/x", node.round.id());
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        Some(&client_token(1)),
        Some(MEDIA_SEALED_SHARE),
        body(),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_share_after_the_deadline_is_409() {
    let node = node("upload-deadline", |_| {}).await;
    // The round's deadline is 600 s after its creation (`common::spec`).
    node.clock.advance(700_000);
    let (s, h, b) = upload_as(&node, 1, &client_token(1), sealed(&node.round, 1, 1).into()).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(
        problem(&h, &b).type_uri,
        "urn:dpdist:problem:deadline-passed"
    );
}

#[tokio::test]
async fn a_share_for_a_closed_round_is_409() {
    let node = node("upload-closed", |_| {}).await;
    for c in 0..3 {
        assert_eq!(upload(&node, c).await, StatusCode::CREATED);
    }
    let set = received(&node).await;
    assert_eq!(close_with(&node, &set).await.0, StatusCode::ACCEPTED);
    let (s, h, b) = upload_as(&node, 3, &client_token(3), sealed(&node.round, 3, 3).into()).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:round-closed");
}

#[tokio::test]
async fn a_share_for_an_aborted_round_is_409() {
    let node = node("upload-aborted", |_| {}).await;
    assert_eq!(abort(&node).await, StatusCode::ACCEPTED);
    let (s, h, b) = upload_as(&node, 1, &client_token(1), sealed(&node.round, 1, 1).into()).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:round-aborted");
}

#[tokio::test]
async fn a_share_longer_than_the_rounds_is_413_before_it_is_read() {
    let node = node("upload-large", |_| {}).await;
    let mut bytes = sealed(&node.round, 1, 1);
    bytes.push(0);
    let (s, h, b) = upload_as(&node, 1, &client_token(1), bytes.into()).await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:too-large");
}

#[tokio::test]
async fn a_share_of_another_media_type_is_415() {
    let node = node("upload-media", |_| {}).await;
    let uri = format!("/rounds/{}/shares/1", node.round.id());
    let body = Body::from(sealed(&node.round, 1, 1));
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        Some(&client_token(1)),
        Some(MEDIA_JSON),
        body,
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

/// A stalled body: what a client sends when it sends nothing after its headers.
fn stalled() -> (http_body_util::channel::Sender<Bytes, std::io::Error>, Body) {
    let (tx, body) = http_body_util::channel::Channel::<Bytes, std::io::Error>::new(1);
    (tx, Body::new(body))
}

#[tokio::test(start_paused = true)]
async fn a_share_that_does_not_arrive_in_time_is_408() {
    let node = node("upload-slow", |o| o.body_timeout = Duration::from_secs(30)).await;
    let (_tx, body) = stalled();
    let (s, h, b) = upload_as(&node, 1, &client_token(1), body).await;
    assert_eq!(s, StatusCode::REQUEST_TIMEOUT);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:body-timeout");
}

#[tokio::test]
async fn uploads_beyond_the_bytes_in_flight_are_503_with_retry_after() {
    let share_len = share_sealing::sealed_len(fixedpoint_shares::wire::HEADER_LEN + 16 + 8 * DIM);
    let node = Arc::new(node("upload-busy", |o| o.max_inflight_body = share_len).await);
    let (tx, body) = stalled();
    let first = {
        let node = node.clone();
        tokio::spawn(async move { upload_as(&node, 1, &client_token(1), body).await.0 })
    };
    // The first upload takes the whole budget, then waits for its body.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let (s, h, b) = upload_as(&node, 2, &client_token(2), sealed(&node.round, 2, 2).into()).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(h["retry-after"], "1");
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:busy");
    drop(tx);
    assert_eq!(first.await.unwrap(), StatusCode::BAD_REQUEST);
    assert_eq!(upload(&node, 2).await, StatusCode::CREATED);
}

// ---- GET /rounds/{id}/received, POST /rounds/{id}/close ----

#[tokio::test]
async fn closing_is_202_then_the_same_set_again_200() {
    let node = node("close", |_| {}).await;
    closed(&node).await;
    let set = received(&node).await;
    assert_eq!(close_with(&node, &set).await.0, StatusCode::OK);
    assert_eq!(status(&node).await.state, "closed");
}

#[tokio::test]
async fn closing_with_another_set_or_a_client_never_received_is_409() {
    let node = node("close-other", |_| {}).await;
    for c in 0..3 {
        assert_eq!(upload(&node, c).await, StatusCode::CREATED);
    }
    let mut set = received(&node).await;
    set.insert(ClientId(3), fixedpoint_shares::ShardId(3))
        .unwrap();
    let (s, h, b) = close_with(&node, &set).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(
        problem(&h, &b).type_uri,
        "urn:dpdist:problem:agreed-set-mismatch"
    );
    let set = received(&node).await;
    assert_eq!(close_with(&node, &set).await.0, StatusCode::ACCEPTED);
    let mut smaller = set.clone();
    smaller.remove(ClientId(0));
    assert_eq!(close_with(&node, &smaller).await.0, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_malformed_close_request_is_400_naming_the_cause() {
    let node = node("close-bad", |_| {}).await;
    for c in 0..N as u64 {
        assert_eq!(upload(&node, c).await, StatusCode::CREATED);
    }
    let good = received(&node).await.get_encoded().unwrap();
    let other_n = fixedpoint_shares::ShardSet::empty(N + 1)
        .get_encoded()
        .unwrap();
    let mut past_n = good.clone();
    past_n[24 + (N / 8)] |= 1 << (N % 8);
    for (body, cause) in [
        (good[..good.len() - 1].to_vec(), "truncated"),
        ([&good[..], &[0]].concat(), "trailing bytes"),
        ([b"DPDX", &good[4..]].concat(), "bad magic"),
        (other_n, "universe"),
        (past_n, "bitset"),
        (b"[".to_vec(), "truncated"),
    ] {
        let (s, h, b) = close_bytes(&node, body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{cause}");
        let p = problem(&h, &b);
        assert_eq!(p.type_uri, "urn:dpdist:problem:malformed", "{cause}");
        assert!(p.detail.contains(cause), "{cause}: {}", p.detail);
    }
    // The JSON lists of before are another media type.
    let (s, _, _) = admin(
        &node,
        Method::POST,
        "/close",
        br#"{"agreed":[0],"shards":["0000000000000001"]}"#.to_vec(),
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // None of it closed the round.
    assert_eq!(status(&node).await.state, "open");
    assert_eq!(close_bytes(&node, good).await.0, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn closing_with_more_than_t_missing_is_422() {
    let node = node("close-422", |_| {}).await;
    for c in 0..(N - T - 1) as u64 {
        assert_eq!(upload(&node, c).await, StatusCode::CREATED);
    }
    let set = received(&node).await;
    let (s, h, b) = close_with(&node, &set).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem(&h, &b).type_uri,
        "urn:dpdist:problem:too-many-dropped"
    );
    assert_eq!(status(&node).await.state, "open");
}

#[tokio::test]
async fn admin_requests_need_the_aggregators_token() {
    let node = node("admin-auth", |_| {}).await;
    for path in ["", "/received", "/sum"] {
        let uri = format!("/rounds/{}{path}", node.round.id());
        let (s, _, _) = send(&node, Method::GET, &uri, None, None, Body::empty()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
        let (s, _, _) = send(
            &node,
            Method::GET,
            &uri,
            Some(&client_token(0)),
            None,
            Body::empty(),
        )
        .await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{path}");
    }
}

// ---- POST /rounds/{id}/abort ----

#[tokio::test]
async fn aborting_is_202_then_200() {
    let node = node("abort", |_| {}).await;
    assert_eq!(abort(&node).await, StatusCode::ACCEPTED);
    assert_eq!(abort(&node).await, StatusCode::OK);
    assert_eq!(status(&node).await.state, "aborted");
}

#[tokio::test]
async fn aborting_a_closed_round_is_409() {
    let node = node("abort-closed", |_| {}).await;
    closed(&node).await;
    assert_eq!(abort(&node).await, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_malformed_abort_is_400_and_of_another_media_type_415() {
    let node = node("abort-bad", |_| {}).await;
    assert_eq!(
        admin(&node, Method::POST, "/abort", b"{}".to_vec()).await.0,
        StatusCode::BAD_REQUEST
    );
    let uri = format!("/rounds/{}/abort", node.round.id());
    let (s, _, _) = send(
        &node,
        Method::POST,
        &uri,
        Some(ADMIN),
        Some("text/plain"),
        Body::from("x"),
    )
    .await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

// ---- GET /rounds/{id}/sum ----

#[tokio::test]
async fn the_sum_of_a_closed_round_is_200_once_computed() {
    let node = node("sum", |_| {}).await;
    closed(&node).await;
    // Computed on a thread of the node's: polled as the aggregator does, at most 10 s.
    for _ in 0..2000 {
        let (s, h, body) = admin(&node, Method::GET, "/sum", vec![]).await;
        if s == StatusCode::ACCEPTED {
            assert_eq!(h["retry-after"], "1");
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        assert_eq!(s, StatusCode::OK);
        assert_eq!(h["content-type"], MEDIA_NODE_SUM);
        assert_eq!(h["content-length"], body.len().to_string().as_str());
        return;
    }
    panic!("the node sum was not computed");
}

#[tokio::test]
async fn the_sum_of_an_open_or_aborted_round_is_409() {
    let node = node("sum-409", |_| {}).await;
    let (s, h, b) = admin(&node, Method::GET, "/sum", vec![]).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:round-open");
    assert_eq!(abort(&node).await, StatusCode::ACCEPTED);
    let (s, h, b) = admin(&node, Method::GET, "/sum", vec![]).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(problem(&h, &b).type_uri, "urn:dpdist:problem:round-aborted");
}

// ---- GET /metrics ----

/// The value of the sample `name{labels}` in an exposition (0 if absent).
fn sample(text: &str, name: &str, labels: &str) -> f64 {
    let key = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

async fn metrics(node: &Node) -> String {
    let (s, h, body) = send(node, Method::GET, "/metrics", None, None, Body::empty()).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        h["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn metrics_count_uploads_conflicts_refusals_commits_and_closes() {
    let node = node("metrics", |_| {}).await;
    let route = "route=\"/rounds/{id}/shares/{client}\"";
    let responses = "dpdist_http_responses_total";
    let before = metrics(&node).await;
    assert_eq!(upload(&node, 0).await, StatusCode::CREATED);
    let (s, _, _) = upload_as(
        &node,
        0,
        &client_token(0),
        sealed(&node.round, 0, 99).into(),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let uri = format!("/rounds/{}/shares/1", node.round.id());
    let body = Body::from(sealed(&node.round, 1, 1));
    let (s, _, _) = send(
        &node,
        Method::PUT,
        &uri,
        None,
        Some(MEDIA_SEALED_SHARE),
        body,
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    for c in 1..N as u64 {
        assert_eq!(upload(&node, c).await, StatusCode::CREATED);
    }
    let set = received(&node).await;
    assert_eq!(close_with(&node, &set).await.0, StatusCode::ACCEPTED);
    let after = metrics(&node).await;
    let delta =
        |labels: &str| sample(&after, responses, labels) - sample(&before, responses, labels);
    assert_eq!(
        delta(&format!("{route},status=\"201\",cause=\"ok\"")),
        N as f64
    );
    assert_eq!(
        delta(&format!("{route},status=\"409\",cause=\"share-conflict\"")),
        1.0
    );
    assert_eq!(
        delta(&format!("{route},status=\"401\",cause=\"unauthenticated\"")),
        1.0
    );
    assert_eq!(
        delta("route=\"/rounds/{id}/close\",status=\"202\",cause=\"ok\""),
        1.0
    );
    let events =
        |text: &str, e: &str| sample(text, "dpdist_round_events_total", &format!("event=\"{e}\""));
    assert_eq!(events(&before, "created"), 1.0);
    assert_eq!(events(&after, "closed") - events(&before, "closed"), 1.0);
    // Every stored share went through a group commit (the conflict was one too).
    let commits = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("dpdist_node_commit_shares_sum "))
            .map_or(0.0, |v| v.trim().parse().unwrap())
    };
    assert_eq!(commits(&after) - commits(&before), N as f64 + 1.0);
    assert!(
        !after.contains(&node.round.id()),
        "no round id in any label"
    );
}
