//! The connection caps on loopback, in front of a compute node's router: one host holding more
//! idle connections than the server's whole cap does not keep another host's upload out (127.0.0.2 stands for another host; Linux routes
//! all of 127/8 to `lo`).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpSocket};

use crate::http::serve::{DEFAULT_MAX_CONNECTIONS_PER_PEER, ServeLimits, serve_tls};

/// A compute node's router (node 0 of 2, in `dir`) served with `limits` on 127.0.0.1; its CA
/// (PEM), its address and a round of 4 clients created on it. It serves until the test's
/// runtime ends.
async fn node(
    dir: &std::path::Path,
    limits: ServeLimits,
) -> (String, SocketAddr, crate::protocol::spec::Round) {
    use crate::hex;
    let (ca, cert, key) = crate::http::tls::tests::pki("127.0.0.1");
    let tls = crate::http::tls::server_config(cert.as_bytes(), key.as_bytes()).unwrap();
    let options = crate::node::NodeOptions::new(0, dir.to_path_buf(), "admin".into());
    let router = crate::node::router(&options).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_tls(listener, tls, router, limits));
    let mine = crate::node::key::load_or_create_key(dir).unwrap().public;
    let other = share_sealing::NodeKeyPair::generate().public;
    let round = crate::protocol::spec::RoundSpec {
        validity: None,
        round: 1,
        n_clients: 4,
        n_nodes: 2,
        max_dropped: 1,
        dim: 3,
        bound: 8.0,
        mode: "seed".into(),
        noise_sigma_total: None,
        l2_sensitivity: None,
        frac_bits: None,
        deadline_unix_ms: crate::node::now_ms() + 600_000,
        node_keys: vec![
            hex::encode(&mine.to_bytes()),
            hex::encode(&other.to_bytes()),
        ],
        client_token_sha256: (0..4)
            .map(|i| hex::encode(&crate::protocol::spec::token_hash(&format!("client-{i}"))))
            .collect(),
    }
    .validate()
    .unwrap();
    let r = client_from(&ca, "127.0.0.2")
        .put(format!("https://{addr}/rounds/{}", round.id()))
        .bearer_auth("admin")
        .header(reqwest::header::CONTENT_TYPE, crate::MEDIA_ROUND_CONFIG)
        .body(round.config_bytes().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::CREATED);
    (ca, addr, round)
}

/// A client trusting `ca` that connects from source address `from`, a new connection per
/// request.
fn client_from(ca: &str, from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .use_preconfigured_tls(crate::http::tls::client_config(ca.as_bytes()).unwrap())
        .local_address(from.parse::<IpAddr>().unwrap())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// Client `client`'s sealed share for node 0, uploaded from source address `from`: the status
/// (or the error) and how long the upload took.
async fn upload_from(
    ca: &str,
    addr: SocketAddr,
    round: &crate::protocol::spec::Round,
    client: u64,
    from: &str,
) -> (std::result::Result<u16, String>, Duration) {
    use fixedpoint_shares::Encode;
    let messages = fixedpoint_shares::Client::new(
        &round.config,
        fixedpoint_shares::ClientId(client),
        dp_noise::rng::RngSource::InsecureFixedSeed(41).derive(client),
    )
    .unwrap()
    .shard(&[0.5, -1.25, 2.0])
    .unwrap();
    let sealed =
        crate::protocol::upload::seal_for(round, client, 0, &messages[0].get_encoded().unwrap())
            .unwrap();
    let http = client_from(ca, from);
    let start = Instant::now();
    let got = crate::protocol::upload::put_sealed(
        &http,
        &format!("https://{addr}"),
        &round.id(),
        client,
        &format!("client-{client}"),
        sealed,
    )
    .await
    .map(|(status, _)| status.as_u16())
    .map_err(|e| e.to_string());
    (got, start.elapsed())
}

/// A TCP connection to `addr` from source address `from` that sends nothing (it would hold a
/// slot until the handshake timeout); `None` if it is not made within 2 s.
async fn idle_connection(addr: SocketAddr, from: &str) -> Option<tokio::net::TcpStream> {
    let socket = TcpSocket::new_v4().ok()?;
    socket
        .bind(SocketAddr::new(from.parse().unwrap(), 0))
        .ok()?;
    tokio::time::timeout(Duration::from_secs(2), socket.connect(addr))
        .await
        .ok()?
        .ok()
}

/// 127.0.0.1 opens 1,100 idle connections to a node, more than its whole cap of 1,024 (the
/// default limits); an upload from 127.0.0.2 is then stored (201) as quickly as one before
/// (both durations are printed). Without the per-peer cap it was refused (503, or the
/// connection dropped): every slot was the first host's until the handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_holding_idle_connections_does_not_keep_another_out() {
    let limits = ServeLimits::default();
    assert_eq!(limits.max_connections, 1024);
    assert_eq!(
        limits.max_connections_per_peer,
        DEFAULT_MAX_CONNECTIONS_PER_PEER
    );
    let dir = crate::scratch_dir("serve-per-peer");
    let (ca, addr, round) = node(&dir, limits.clone()).await;

    let (before, baseline) = upload_from(&ca, addr, &round, 0, "127.0.0.2").await;
    assert_eq!(
        before,
        Ok(201),
        "127.0.0.2 before the other host's connections"
    );

    let mut held = Vec::new();
    for _ in 0..1_100 {
        if let Some(c) = idle_connection(addr, "127.0.0.1").await {
            held.push(c);
        }
    }
    assert!(held.len() > limits.max_connections, "{} made", held.len());
    // One past the peer's cap is closed at once by the server (read sees the end).
    let mut last = held.pop().unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), last.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "a connection over the peer's cap stays open: {read:?}"
    );

    let (during, took) = upload_from(&ca, addr, &round, 1, "127.0.0.2").await;
    eprintln!(
        "127.0.0.2's upload: {} ms with 127.0.0.1 holding {} idle connections, {} ms before \
         (delay {} ms)",
        took.as_millis(),
        held.len() + 1,
        baseline.as_millis(),
        took.saturating_sub(baseline).as_millis()
    );
    assert_eq!(
        during,
        Ok(201),
        "127.0.0.2 was kept out by 127.0.0.1's idle connections"
    );
    // A bound on the wait, not a timing claim: being kept out cost the handshake timeout.
    assert!(took < limits.handshake_timeout, "{took:?}");

    // The first host's slots come back as its connections close.
    drop((held, last));
    let mut again = Err(String::new());
    for _ in 0..50 {
        again = upload_from(&ca, addr, &round, 2, "127.0.0.1").await.0;
        if again == Ok(201) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again, Ok(201));
}
