//! The connection caps on loopback: one host holding more idle connections than the server's
//! whole cap does not keep another host out (127.0.0.2 stands for another host; Linux routes
//! all of 127/8 to `lo`).

use super::*;
use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::AsyncReadExt;
use tokio::net::TcpSocket;

/// A server with `limits` serving `/healthz` on 127.0.0.1; its CA (PEM) and address. It
/// serves until the test's runtime ends.
async fn server(limits: ServeLimits) -> (String, SocketAddr) {
    let (ca, cert, key) = crate::tls::tests::pki("127.0.0.1");
    let tls = crate::tls::server_config(cert.as_bytes(), key.as_bytes()).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/healthz", axum::routing::get(crate::problem::healthz));
    tokio::spawn(serve_tls(listener, tls, router, limits));
    (ca, addr)
}

/// `GET /healthz` from source address `from` on a new connection: its status (or the
/// error) and how long it took.
async fn health_from(
    ca: &str,
    addr: SocketAddr,
    from: &str,
) -> (std::result::Result<u16, String>, Duration) {
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(crate::tls::client_config(ca.as_bytes()).unwrap())
        .local_address(from.parse::<IpAddr>().unwrap())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let start = Instant::now();
    let got = http
        .get(format!("https://{addr}/healthz"))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| crate::tls::cause_chain(&e));
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

/// 127.0.0.1 opens 1,100 idle connections, more than the whole cap of 1,024 (the default
/// limits); 127.0.0.2's request is then answered 200 as quickly as before (the delay is
/// printed). Without the per-peer cap it was refused 503 (or dropped): every slot was the
/// first host's until the handshake timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_host_holding_idle_connections_does_not_keep_another_out() {
    let limits = ServeLimits::default();
    assert_eq!(limits.max_connections, 1024);
    assert_eq!(
        limits.max_connections_per_peer,
        DEFAULT_MAX_CONNECTIONS_PER_PEER
    );
    let (ca, addr) = server(limits.clone()).await;

    let (before, baseline) = health_from(&ca, addr, "127.0.0.2").await;
    assert_eq!(
        before,
        Ok(200),
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

    let (during, took) = health_from(&ca, addr, "127.0.0.2").await;
    eprintln!(
        "127.0.0.2's GET /healthz: {} ms with 127.0.0.1 holding {} idle connections, {} ms \
         before (delay {} ms)",
        took.as_millis(),
        held.len() + 1,
        baseline.as_millis(),
        took.saturating_sub(baseline).as_millis()
    );
    assert_eq!(
        during,
        Ok(200),
        "127.0.0.2 was kept out by 127.0.0.1's idle connections"
    );
    // A bound on the wait, not a timing claim: being kept out cost the handshake timeout.
    assert!(took < limits.handshake_timeout, "{took:?}");

    // The first host's slots come back as its connections close.
    drop(held);
    let mut again = Err(String::new());
    for _ in 0..50 {
        again = health_from(&ca, addr, "127.0.0.1").await.0;
        if again == Ok(200) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again, Ok(200));
}

#[test]
fn a_peers_slots_are_counted_per_address_and_given_back() {
    let slots = PeerSlots::new(2);
    let one: IpAddr = "10.0.0.1".parse().unwrap();
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    let other: IpAddr = "10.0.0.2".parse().unwrap();
    let a = slots.take(one).unwrap();
    let b = slots.take(mapped).unwrap();
    assert!(slots.take(one).is_none());
    assert!(slots.take(mapped).is_none());
    let c = slots.take(other).unwrap();
    drop(a);
    let d = slots.take(one).unwrap();
    drop((b, c, d));
    assert!(slots.open.lock().unwrap().is_empty());
}
