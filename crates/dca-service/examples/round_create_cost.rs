//! What creating a round costs a compute node at N clients: the size of the `PUT /rounds/{id}`
//! body and the node's CPU time for the request (this process's, around the request: the
//! node's router driven in process; the body is built before). Reports, never asserts.
//!
//! ```text
//! cargo run -j 1 -p dca-service --example round_create_cost -- 100000
//! ```

use std::time::Instant;

use axum::body::Body;
use axum::http::{Method, Request};
use dca_service::node::{NodeOptions, router};
use dca_service::protocol::spec::{RoundSpec, token_hash};
use dca_service::secret::SecretString;
use dca_service::{MEDIA_ROUND_CONFIG, hex};
use share_sealing::NodeKeyPair;
use tower::ServiceExt;

/// This process's user + system CPU seconds (Linux, 100 ticks per second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 14 and 15 of stat(5), counted after the command name.
    (tick(11) + tick(12)) / 100.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("dpdist-round-create-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let admin = "admin-token-for-the-cost-example";
    let mut options = NodeOptions::new(0, dir.clone(), SecretString::from(admin.to_string()));
    options.max_body = 1 << 30;
    let node = router(&options).unwrap();
    let mine = dca_service::node::key::load_or_create_key(&dir)
        .unwrap()
        .public;
    let spec = RoundSpec {
        validity: None,
        round: 1,
        n_clients: n,
        n_nodes: 2,
        max_dropped: 1,
        dim: 10,
        bound: 1.0,
        mode: "seed".into(),
        noise_sigma_total: None,
        l2_sensitivity: None,
        frac_bits: None,
        deadline_unix_ms: dca_service::node::now_ms() + 3_600_000,
        node_keys: vec![
            hex::encode(&mine.to_bytes()),
            hex::encode(&NodeKeyPair::generate().public.to_bytes()),
        ],
        client_token_sha256: (0..n)
            .map(|i| hex::encode(&token_hash(&format!("t{i}"))))
            .collect(),
    };
    let round = spec.validate().unwrap();
    let body = round.config_bytes().unwrap();
    let len = body.len();
    let request = Request::builder()
        .method(Method::PUT)
        .uri(format!("/rounds/{}", round.id()))
        .header("authorization", format!("Bearer {admin}"))
        .header("content-type", MEDIA_ROUND_CONFIG)
        .body(Body::from(body))
        .unwrap();
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let response = node.oneshot(request).await.unwrap();
    let (cpu, wall) = (cpu_seconds() - cpu, wall.elapsed().as_secs_f64());
    println!(
        "N = {n}: PUT /rounds/{{id}} body {len} bytes ({:.1} per client), status {}, \
         node CPU {cpu:.2} s, wall {wall:.2} s",
        len as f64 / n as f64,
        response.status()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
