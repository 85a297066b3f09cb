//! A node under hostile clients: unauthenticated bodies, oversized and slow requests, idle
//! connections, more connections than it serves. Raw TLS clients on loopback; the node process
//! is killed on drop; every wait is bounded.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use dca_service::http::tls;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

const LIMIT: Duration = Duration::from_secs(240);

/// A TLS connection to `addr` trusting the test CA.
async fn connect(certs: &Certs, addr: &str) -> TlsStream<TcpStream> {
    let config = Arc::new(tls::client_config(&certs.ca_pem).unwrap());
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap()
}

/// What the server sends until it closes the connection or `wait` passes: `None` if it said
/// nothing, else the bytes (lossy text). A reset counts as the end.
async fn read_answer(conn: &mut TlsStream<TcpStream>, wait: Duration) -> Option<String> {
    let mut got = Vec::new();
    let _ = tokio::time::timeout(wait, async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = conn.read(&mut buf).await {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    (!got.is_empty()).then(|| String::from_utf8_lossy(&got).into_owned())
}

/// True if the server closed the connection within `wait`.
async fn closed_within(conn: &mut TlsStream<TcpStream>, wait: Duration) -> bool {
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(wait, conn.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// Resident memory of a process now and at its peak (kB): VmRSS and VmHWM.
fn rss_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// 64 clients each send a 60 MB body without a valid token (half to a real round, half to an
/// unknown one): the node answers from the headers and never reads the bodies, so its peak
/// resident memory stays within 64 MiB of its idle size.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_bodies_are_never_read(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        // The 64 clients and the aggregator are all 127.0.0.1 here: the per-address cap
        // (default 64) is raised so that this stands for 64 hosts.
        let Some(cluster) =
            Cluster::start_on_with("unauth", 2, store, &["--max-connections-per-peer", "256"])
        else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let round = agg
            .create_round(spec(901, 16, 2, 1000, "seed", None, keys))
            .await
            .unwrap();
        let pid = cluster.nodes[0].child.id();
        let (idle, _) = rss_kb(pid);
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..64 {
            let certs = Certs {
                dir: cluster.certs.dir.clone(),
                ca_pem: cluster.certs.ca_pem.clone(),
            };
            let addr = cluster.nodes[0].addr.clone();
            let path = if i % 2 == 0 {
                format!("/rounds/{}/shares/0", round.id())
            } else {
                format!("/rounds/{}/shares/0", "ab".repeat(32))
            };
            tasks.spawn(async move {
                let mut conn = connect(&certs, &addr).await;
                let head = format!(
                    "PUT {path} HTTP/1.1\r\nHost: node\r\n\
                     Content-Type: application/dpdist-sealed-share\r\n\
                     Content-Length: 60000000\r\n\r\n"
                );
                conn.write_all(head.as_bytes()).await.unwrap();
                let chunk = vec![0u8; 64 << 10];
                let mut sent = 0usize;
                while sent < 60_000_000 {
                    let n = chunk.len().min(60_000_000 - sent);
                    let written =
                        tokio::time::timeout(Duration::from_secs(10), conn.write_all(&chunk[..n]))
                            .await;
                    if !matches!(written, Ok(Ok(()))) {
                        break;
                    }
                    sent += n;
                }
                sent
            });
        }
        let mut sent = Vec::new();
        while let Some(r) = tasks.join_next().await {
            sent.push(r.unwrap());
        }
        let (now, peak) = rss_kb(pid);
        let above = peak.saturating_sub(idle);
        eprintln!(
            "node RSS: idle {idle} kB, peak {peak} kB (+{above} kB), after {now} kB; \
             bytes the clients got out: min {} max {}",
            sent.iter().min().unwrap(),
            sent.iter().max().unwrap()
        );
        assert!(above < 64 << 10, "peak RSS {above} kB above idle");
        // The node still serves.
        let health = cluster
            .http
            .get(format!("{}/healthz", cluster.nodes[0].url))
            .send()
            .await
            .unwrap();
        assert!(health.status().is_success());
    })
    .await
    .expect("test exceeded its time limit");
}

/// A body declared larger than a share, one declared as 10^12 bytes, a body sent a byte at a
/// time, headers never finished, a connection left idle, and one connection more than the cap:
/// each gets an answer it can read or is closed within the configured limits.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_slow_idle_and_surplus_connections_are_answered_or_closed(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on_with(
            "hostile",
            2,
            store,
            &[
                "--max-connections",
                "8",
                "--header-timeout-ms",
                "1000",
                "--body-timeout-ms",
                "1000",
            ],
        ) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let round = agg
            .create_round(spec(902, 16, 2, 1000, "seed", None, keys))
            .await
            .unwrap();
        let (certs, addr) = (&cluster.certs, cluster.nodes[0].addr.as_str());
        let upload_head = |len: u64| {
            format!(
                "PUT /rounds/{}/shares/0 HTTP/1.1\r\nHost: node\r\n\
                 Authorization: Bearer {}\r\nContent-Type: application/dpdist-sealed-share\r\n\
                 Content-Length: {len}\r\n\r\n",
                round.id(),
                client_token(0)
            )
        };
        let wait = Duration::from_secs(10);

        // Declared larger than node 0's share (8 kB of words): 413, read by a client that
        // sends the whole body before reading.
        let mut conn = connect(certs, addr).await;
        conn.write_all(upload_head(200_000).as_bytes())
            .await
            .unwrap();
        conn.write_all(&vec![0u8; 200_000]).await.unwrap();
        let answer = read_answer(&mut conn, wait).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");

        // Declared as 10^12 bytes with 100 sent: 413 at once, not a wait for the rest.
        let mut conn = connect(certs, addr).await;
        conn.write_all(upload_head(1_000_000_000_000).as_bytes())
            .await
            .unwrap();
        conn.write_all(&[0u8; 100]).await.unwrap();
        let answer = read_answer(&mut conn, wait).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");

        // A body of the right size sent a byte every 100 ms: 408 after the body time limit.
        let share_len = share_sealing::sealed_len(fixedpoint_shares::wire::HEADER_LEN + 16 + 8000);
        let mut conn = connect(certs, addr).await;
        conn.write_all(upload_head(share_len as u64).as_bytes())
            .await
            .unwrap();
        let slow = async {
            for _ in 0..100 {
                if conn.write_all(&[0u8]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(3), slow).await;
        let answer = read_answer(&mut conn, wait).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");

        // Headers never finished, and a connection that sends nothing: closed after the
        // header time limit.
        let mut partial = connect(certs, addr).await;
        partial.write_all(b"PUT /rounds/").await.unwrap();
        let mut idle = connect(certs, addr).await;
        assert!(closed_within(&mut partial, wait).await);
        assert!(closed_within(&mut idle, wait).await);

        // Eight connections open (the cap), the ninth is told to come back.
        let mut open = Vec::new();
        for _ in 0..8 {
            open.push(connect(certs, addr).await);
        }
        let mut surplus = connect(certs, addr).await;
        let answer = read_answer(&mut surplus, wait).await.unwrap_or_default();
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
        assert!(answer.contains("Retry-After: 1"), "{answer:?}");
        // Once the idle ones are closed by the node, it serves again.
        for conn in &mut open {
            assert!(closed_within(conn, wait).await);
        }
        let health = cluster
            .http
            .get(format!("{}/healthz", cluster.nodes[0].url))
            .send()
            .await
            .unwrap();
        assert!(health.status().is_success());
    })
    .await
    .expect("test exceeded its time limit");
}

/// `dpdist node --config FILE`: the file's options are used (a PostgreSQL `store` among them),
/// the command line's win, and `GET /metrics` answers on the node it started.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_starts_from_a_config_file_and_the_command_line_wins(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let pg = match store {
            Store::Sqlite => None,
            Store::Postgres => {
                let Some(admin) = postgres_admin_url("config-node") else {
                    return;
                };
                Some(PgDatabases::create(&admin, "config_node", 1))
            }
        };
        let dir = Scratch::new(&format!("config-node-{store:?}"));
        let certs = make_certs(&dir.path);
        let config = dir.path.join("node.toml");
        let store_line = pg
            .as_ref()
            .map(|pg| format!("store = {:?}\n", pg.urls[0]))
            .unwrap_or_default();
        std::fs::write(
            &config,
            format!(
                "index = 2\nlisten = \"127.0.0.1:0\"\ncert = {:?}\nkey = {:?}\ndata_dir = {:?}\n\
                 admin_token_file = {:?}\nmax_connections = 16\n{store_line}",
                certs.dir.join("server.pem"),
                certs.dir.join("server.key"),
                dir.path.join("data"),
                certs.dir.join("admin.token"),
            ),
        )
        .unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dpdist"));
        command
            .args(["node", "--config"])
            .arg(&config)
            .args(["--index", "1"]);
        let (child, addr) = spawn_with_banner(command, "node from a config file");
        // Killed and reaped on drop, also if an assertion fails.
        let _node = NodeProcess {
            child,
            url: format!("https://{addr}"),
            addr: addr.clone(),
            index: 1,
            data_dir: dir.path.join("data"),
            args: Vec::new(),
        };
        let http = tls::http_client(&certs.ca_pem, 4, Duration::from_secs(10)).unwrap();
        let key: serde_json::Value = http
            .get(format!("https://{addr}/key"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            key["node"], 1,
            "--index on the command line wins over the file's 2"
        );
        let metrics = http
            .get(format!("https://{addr}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(metrics.contains("dpdist_http_responses_total"), "{metrics}");
        assert_eq!(
            dir.path.join("data/node.sqlite").exists(),
            pg.is_none(),
            "the file's store is the one the node opened"
        );
    })
    .await
    .expect("test exceeded its time limit");
}
