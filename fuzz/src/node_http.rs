//! The compute node's HTTP API in process: dca-service's own router, driven by requests built
//! from fuzz bytes without sockets (TLS and HTTP framing are rustls' and hyper's to fuzz).
//!
//! One node of each index 0 and 1 per fuzz process. Every input gets a fresh round (a new round
//! number, hence a new id), so inputs do not interact and a crash reproduces from its input
//! alone. Each record of the input (see [`crate::records`]) is one request; see [`Op`].

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Method, Request, StatusCode, header};
use dca_service::node::{NodeOptions, load_or_create_key, now_ms, router};
use dca_service::protocol::spec::{Round, RoundSpec, token_hash};
use dca_service::{MEDIA_JSON, MEDIA_PAIR_SET, MEDIA_ROUND_CONFIG, MEDIA_SEALED_SHARE, hex};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode, ShareMode};
use share_sealing::{NodeKeyPair, NodePublicKey, SealContext};
use tokio::runtime::Runtime;
use tower::ServiceExt;

use crate::{DIM, MAX_DROPPED, N_CLIENTS, N_NODES, records};

/// The bearer token of the aggregator (the nodes' admin).
pub const ADMIN_TOKEN: &str = "fuzz-admin-token";

/// Client i's bearer token.
pub fn client_token(i: u64) -> String {
    format!("fuzz-client-{i}")
}

/// What one record asks for; its body is interpreted per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `[client][seed]`: a real client's share for this node, sealed correctly.
    HonestUpload = 0,
    /// `[client][seed][xor mask…]`: a real client's share with the mask XORed into its
    /// plaintext, then sealed correctly (reaches the share decoder and the node's checks).
    MutatedUpload = 1,
    /// `[client][bytes…]`: the bytes as the sealed body.
    RawUpload = 2,
    /// `[client][token bytes…]`: an upload with a wrong token; must be 401/403/404.
    WrongToken = 3,
    /// The body as the close request's JSON.
    Close = 4,
    /// A close request with exactly what the node reports as received.
    CloseReceived = 5,
    /// `GET` sum, status and received.
    Read = 6,
    /// The body as the abort request's JSON.
    Abort = 7,
    /// The body as a round config (JSON) `PUT` at the id of the current round.
    Create = 8,
}

impl Op {
    /// The operation of a record's op byte.
    pub fn from_byte(byte: u8) -> Op {
        match byte % 9 {
            0 => Op::HonestUpload,
            1 => Op::MutatedUpload,
            2 => Op::RawUpload,
            3 => Op::WrongToken,
            4 => Op::Close,
            5 => Op::CloseReceived,
            6 => Op::Read,
            7 => Op::Abort,
            _ => Op::Create,
        }
    }
}

struct Node {
    router: Router,
    public: NodePublicKey,
}

struct Fixture {
    runtime: Runtime,
    nodes: [Node; 2],
    next_round: AtomicU64,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("dpdist-fuzz-node-{}", std::process::id()));
        let node = |index: u16| {
            let data_dir: PathBuf = base.join(format!("node{index}"));
            let _ = std::fs::remove_dir_all(&data_dir);
            let options = NodeOptions {
                max_body: 1 << 16,
                ..NodeOptions::new(index, data_dir.clone(), ADMIN_TOKEN.into())
            };
            let router = router(&options).expect("fuzz node starts");
            let public = load_or_create_key(&data_dir).expect("node key").public;
            Node { router, public }
        };
        Fixture {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime"),
            nodes: [node(0), node(1)],
            next_round: AtomicU64::new(1),
        }
    })
}

/// The fuzz round number `round` in `mode` (the fixture sizes of [`crate::fixture_config`]),
/// with node keys `keys` (index 0 and 1 are the fuzz nodes; the others are fixed keys).
pub fn fixture_spec(round: u64, mode: ShareMode, keys: [&NodePublicKey; 2]) -> RoundSpec {
    let mut node_keys: Vec<String> = keys.iter().map(|k| hex::encode(&k.to_bytes())).collect();
    for k in 2..N_NODES {
        let other = NodeKeyPair::from_secret_bytes(&[k as u8 + 1; 32]).expect("fixed key");
        node_keys.push(hex::encode(&other.public.to_bytes()));
    }
    RoundSpec {
        round,
        n_clients: N_CLIENTS,
        n_nodes: N_NODES,
        max_dropped: MAX_DROPPED,
        dim: DIM,
        bound: 1.0,
        mode: if mode == ShareMode::Seed {
            "seed"
        } else {
            "full"
        }
        .into(),
        noise_sigma_total: None,
        l2_sensitivity: None,
        frac_bits: None,
        validity: None,
        deadline_unix_ms: now_ms() + 3_600_000,
        node_keys,
        client_token_sha256: (0..N_CLIENTS as u64)
            .map(|i| hex::encode(&token_hash(&client_token(i))))
            .collect(),
    }
}

/// `None` when the token is not a valid header value (no HTTP client could send it).
fn request(
    method: Method,
    path: &str,
    token: &str,
    media: &str,
    body: Vec<u8>,
) -> Option<Request<Body>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, media)
        .body(Body::from(body))
        .ok()
}

/// Sends `req`; returns the status and body. Any 5xx is a finding: nothing a client or an
/// aggregator sends may break the node.
async fn send(router: &Router, req: Request<Body>) -> (StatusCode, Vec<u8>) {
    let what = format!("{} {}", req.method(), req.uri());
    let response = router
        .clone()
        .oneshot(req)
        .await
        .expect("infallible router");
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("response body");
    assert!(
        !status.is_server_error(),
        "{what} answered {status}: {}",
        String::from_utf8_lossy(&body)
    );
    (status, body.to_vec())
}

/// One fuzz input: `[selector][records…]`; selector bit 0 = share mode (as
/// [`crate::mode_from`]), bit 1 = which node (0 or 1).
pub fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let fixture = fixture();
    let mode = crate::mode_from(selector);
    let index = u16::from(selector >> 1 & 1);
    let node = &fixture.nodes[usize::from(index)];
    let round_number = fixture.next_round.fetch_add(1, Ordering::Relaxed);
    let spec = fixture_spec(
        round_number,
        mode,
        [&fixture.nodes[0].public, &fixture.nodes[1].public],
    );
    let round: Round = spec.clone().validate().expect("the fixture spec is valid");
    let base = format!("/rounds/{}", round.id());
    let admin_as = |method: Method, suffix: &str, media: &str, body: Vec<u8>| {
        request(method, &format!("{base}{suffix}"), ADMIN_TOKEN, media, body)
            .expect("the admin's requests are well-formed")
    };
    let admin =
        |method: Method, suffix: &str, body: Vec<u8>| admin_as(method, suffix, MEDIA_JSON, body);
    fixture.runtime.block_on(async {
        let config = round.config_bytes().expect("the fixture round holds its tokens");
        let created = send(
            &node.router,
            admin_as(Method::PUT, "", MEDIA_ROUND_CONFIG, config),
        )
        .await;
        assert!(created.0.is_success(), "fixture round refused: {created:?}");
        for (op_byte, body) in records(rest) {
            let op = Op::from_byte(op_byte);
            match op {
                Op::HonestUpload | Op::MutatedUpload | Op::RawUpload | Op::WrongToken => {
                    let Some((&client, tail)) = body.split_first() else {
                        continue;
                    };
                    let client = u64::from(client % (N_CLIENTS as u8 + 1)); // N itself: unknown
                    let sealed = match op {
                        Op::RawUpload | Op::WrongToken => tail.to_vec(),
                        _ => match client_share(&round, index, client, tail, op) {
                            Some(plain) => seal(&round, node, index, client, &plain),
                            None => continue,
                        },
                    };
                    let token = if op == Op::WrongToken {
                        String::from_utf8_lossy(tail).into_owned()
                    } else {
                        client_token(client)
                    };
                    let path = format!("{base}/shares/{client}");
                    let before = send(&node.router, admin(Method::GET, "/received", vec![])).await;
                    let Some(req) = request(Method::PUT, &path, &token, MEDIA_SEALED_SHARE, sealed)
                    else {
                        continue;
                    };
                    let (status, _) = send(&node.router, req).await;
                    if op == Op::WrongToken && token != client_token(client) {
                        assert!(
                            matches!(status.as_u16(), 400 | 401 | 403 | 404),
                            "a wrong token got {status}"
                        );
                    }
                    if status.is_client_error() {
                        let after =
                            send(&node.router, admin(Method::GET, "/received", vec![])).await;
                        assert_eq!(
                            before, after,
                            "a refused upload ({status}) changed the node"
                        );
                    }
                }
                Op::Close => {
                    let close = admin_as(Method::POST, "/close", MEDIA_PAIR_SET, body.to_vec());
                    send(&node.router, close).await;
                }
                Op::CloseReceived => {
                    let (status, received) =
                        send(&node.router, admin(Method::GET, "/received", vec![])).await;
                    if status.is_success() {
                        // The received set is a pair set: closed with as it came.
                        let close = admin_as(Method::POST, "/close", MEDIA_PAIR_SET, received);
                        send(&node.router, close).await;
                    }
                }
                Op::Read => {
                    for suffix in ["/sum", "", "/received"] {
                        send(&node.router, admin(Method::GET, suffix, vec![])).await;
                    }
                }
                Op::Abort => {
                    send(&node.router, admin(Method::POST, "/abort", body.to_vec())).await;
                }
                Op::Create => {
                    send(&node.router, admin(Method::PUT, "", body.to_vec())).await;
                }
            }
        }
    });
}

/// A real client's message for node `index` of `round` (values and attempt from `seed`), the
/// mask of a [`Op::MutatedUpload`] XORed in. `None` for an unknown client or an empty body.
fn client_share(round: &Round, index: u16, client: u64, tail: &[u8], op: Op) -> Option<Vec<u8>> {
    let (&seed, mask) = tail.split_first()?;
    let mut sharer = Client::new(
        &round.config,
        ClientId(client),
        RngSource::InsecureFixedSeed(u64::from(seed)),
    )
    .ok()?;
    let values: Vec<f64> = (0..DIM)
        .map(|j| f64::from(seed.wrapping_add(j as u8)) / 256.0)
        .collect();
    let messages = sharer.shard(&values).expect("in-range values shard");
    let mut plain = messages[usize::from(index)]
        .get_encoded()
        .expect("a fresh message encodes");
    if op == Op::MutatedUpload {
        for (byte, m) in plain.iter_mut().zip(mask) {
            *byte ^= m;
        }
    }
    Some(plain)
}

fn seal(round: &Round, node: &Node, index: u16, client: u64, plain: &[u8]) -> Vec<u8> {
    let ctx = SealContext {
        round: round.spec.round,
        config_hash: round.hash,
        client,
        node: index,
    };
    share_sealing::seal(&node.public, &ctx, plain).expect("sealing to a valid key")
}
