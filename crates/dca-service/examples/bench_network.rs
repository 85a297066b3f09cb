//! Load benchmark: M compute-node processes on loopback, C concurrent connections of clients
//! uploading sealed shares, then close + release; the same round in-process for the ratio.
//! Reports, never asserts.
//!
//! ```text
//! cargo build --release -p dca-service --bins --examples
//! target/release/examples/bench_network --n 10000 --dim 1000 --conns 64 --mode seed
//! ```
//! Clients run in this process (sharding + HPKE sealing on the same cores as the nodes).
//!
//! `--preseal`: every client's shares are sharded and sealed before the timed phase (on all
//! cores, printed apart), so the timed phase only sends: node capacity apart from the
//! clients' sharding and sealing (the client process still pays for TLS and HTTP).
//! `--only-node K`: the clients send only node K's shares (the other nodes idle, no release):
//! one node with about a core of its own, the client process on the other.
//! `--node-store postgres://user@host:port/name_{k}` (or the environment variable
//! DPDIST_BENCH_NODE_STORE; default `sqlite`): node k keeps its rounds in database name_k on
//! that server, made empty by the benchmark (it refuses names that exist) and dropped at the
//! end. `--replicas R` (PostgreSQL only): R node processes per node index on its database,
//! client i sending to replica i mod R (no balancer); the aggregator talks to replica 0.
//! Per node index it prints the CPU summed over the replicas, per process the peak RSS, and
//! the disk per client (SQLite file + WAL; or the database's size after the round less its
//! size when empty); for PostgreSQL also the server's CPU and the WAL it wrote.
//! Per node it prints the CPU of the upload phase alone (from `/proc/<pid>/stat` before and
//! after it) and of the whole round; the nodes' and this process's CPU in the release; and the
//! latency of the analyst's `GET /rounds/{id}` to the aggregator's router, polled during the
//! release.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dca_service::aggregator::Aggregator;
use dca_service::hex;
use dca_service::http::tls;
use dca_service::protocol::spec::{Round, RoundSpec, token_hash};
use dca_service::protocol::upload::{seal_for, upload_sealed};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode, simulate_round_with};

#[path = "bench_network/node_stores.rs"]
mod node_stores;
use node_stores::NodeStores;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn value(i: u64, j: usize) -> f64 {
    ((i.wrapping_mul(2654435761) as usize + j * 97) % 2001) as f64 / 1000.0 - 1.0
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

/// User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14 and 15).
fn cpu_seconds(pid: u32) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.split_whitespace().collect::<Vec<_>>();
            Some((rest.get(11)?.parse::<f64>().ok()? + rest.get(12)?.parse::<f64>().ok()?) / ticks)
        })
        .unwrap_or(f64::NAN)
}

/// The 1-, 5- and 15-minute load averages (the machine is shared: read the numbers with them).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn dir_bytes(dir: &PathBuf) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// One `dpdist node` process: replica `j` of node `k` in `data`.
struct NodeProcess {
    child: Killed,
    data: PathBuf,
    url: String,
}

impl NodeProcess {
    /// Starts node `k` on `data` (its store there, or at `store`), waiting until it listens.
    fn start(bin: &Path, dir: &Path, k: u16, data: PathBuf, store: Option<&str>) -> NodeProcess {
        // DPDIST_BENCH_NODE_WRAPPER="heaptrack -o /tmp/hn{k}" runs every node under a profiler
        // ({k} = the node's index); its stdout lines before the node's own are skipped.
        let wrapper: Vec<String> = std::env::var("DPDIST_BENCH_NODE_WRAPPER")
            .map(|w| {
                w.split_whitespace()
                    .map(|a| a.replace("{k}", &k.to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        command
            .args(["node", "--index", &k.to_string(), "--listen", "127.0.0.1:0"])
            .arg("--cert")
            .arg(dir.join("server.pem"))
            .arg("--key")
            .arg(dir.join("server.key"))
            .arg("--data-dir")
            .arg(&data)
            .arg("--admin-token-file")
            .arg(dir.join("admin.token"))
            // Every client of the bench is this one process on 127.0.0.1: the cap of one
            // address (default 64) would meet its --conns plus the aggregator's connections.
            .args(["--max-connections-per-peer", "1024"]);
        if let Some(url) = store {
            command.args(["--store", url]);
        }
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap_or_else(|e| {
            panic!(
                "{}: {e} (build it: cargo build --release -p dca-service --bins)",
                bin.display()
            )
        });
        let mut line = String::new();
        use std::io::BufRead;
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        while !line.starts_with("dpdist node") {
            line.clear();
            if out.read_line(&mut line).unwrap() == 0 {
                panic!("node {k} ended before it listened");
            }
        }
        // Keep draining the pipe (a profiler may print more).
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let addr = line
            .split_whitespace()
            .skip_while(|w| *w != "on")
            .nth(1)
            .unwrap()
            .to_string();
        NodeProcess {
            child: Killed(child),
            data,
            url: format!("https://{addr}"),
        }
    }
}

/// CPU seconds used so far by the replicas of one node, summed.
fn replicas_cpu_seconds(replicas: &[NodeProcess]) -> f64 {
    replicas.iter().map(|p| cpu_seconds(p.child.0.id())).sum()
}

/// Client `i`'s shares, each sealed to its node (index k = node k); with `only`, the other
/// nodes' entries are left empty.
fn shard_and_seal(round: &Round, i: u64, seed: u64, only: Option<usize>) -> Vec<Vec<u8>> {
    let values: Vec<f64> = (0..round.config.dim()).map(|j| value(i, j)).collect();
    let msgs = Client::new(
        &round.config,
        ClientId(i),
        RngSource::InsecureFixedSeed(seed).derive(i),
    )
    .unwrap()
    .shard(&values)
    .unwrap();
    msgs.iter()
        .enumerate()
        .map(|(k, msg)| {
            if only.is_some_and(|o| o != k) {
                return Vec::new();
            }
            seal_for(round, i, k as u16, &Encode::get_encoded(msg).unwrap()).unwrap()
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let n: usize = arg("--n", "10000").parse().unwrap();
    let dim: usize = arg("--dim", "1000").parse().unwrap();
    let conns: usize = arg("--conns", "64").parse().unwrap();
    let m: u16 = arg("--nodes", "3").parse().unwrap();
    let mode = arg("--mode", "seed");
    let replicas: usize = arg("--replicas", "1").parse().unwrap();
    assert!(replicas >= 1, "--replicas must be at least 1");
    let preseal = std::env::args().any(|a| a == "--preseal");
    let only_node: Option<usize> = std::env::args()
        .any(|a| a == "--only-node")
        .then(|| arg("--only-node", "0").parse().unwrap());
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("dpdist");
    let dir = std::env::temp_dir().join(format!("dpdist-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Fresh certificates.
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    std::fs::write(dir.join("server.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("admin.token"), "bench-admin").unwrap();

    let template = std::env::args()
        .any(|a| a == "--node-store")
        .then(|| arg("--node-store", "sqlite"))
        .or_else(|| std::env::var("DPDIST_BENCH_NODE_STORE").ok())
        .unwrap_or_else(|| "sqlite".into());
    let stores = NodeStores::open(&template, m, replicas).unwrap_or_else(|e| {
        eprintln!("bench_network: {e}");
        let _ = std::fs::remove_dir_all(&dir);
        std::process::exit(2)
    });

    // nodes[k][j]: replica j of node k, every replica with a copy of the node's key.
    let mut nodes: Vec<Vec<NodeProcess>> = Vec::new();
    for k in 0..m {
        let key_dir = dir.join(format!("node{k}-key"));
        std::fs::create_dir_all(&key_dir).unwrap();
        dca_service::node::load_or_create_key(&key_dir).unwrap();
        let replicas_of_k = (0..replicas)
            .map(|j| {
                let data = dir.join(format!("node{k}-replica{j}"));
                std::fs::create_dir_all(&data).unwrap();
                let key_file = dca_service::node::key::KEY_FILE;
                std::fs::copy(key_dir.join(key_file), data.join(key_file)).unwrap();
                NodeProcess::start(&bin, &dir, k, data, stores.url(k))
            })
            .collect();
        nodes.push(replicas_of_k);
    }
    let urls: Vec<String> = nodes.iter().map(|r| r[0].url.clone()).collect();
    let replica_urls: Arc<Vec<Vec<String>>> = Arc::new(
        nodes
            .iter()
            .map(|r| r.iter().map(|p| p.url.clone()).collect())
            .collect(),
    );
    let pg = match &stores {
        NodeStores::Postgres(pg) => Some(pg.as_ref()),
        NodeStores::Sqlite => None,
    };
    let http = tls::http_client(ca.pem().as_bytes(), conns, Duration::from_secs(120)).unwrap();
    // The bench's aggregator; opened again on the same store for the analyst's router.
    let open_aggregator = || {
        Aggregator::open(
            &dir.join("agg.sqlite"),
            http.clone(),
            urls.clone(),
            "bench-admin",
            PrivacyLoss {
                epsilon: 1.0,
                delta: 1e-5,
            },
        )
        .unwrap()
    };
    let agg = open_aggregator();
    let spec = RoundSpec {
        validity: None,
        round: 1,
        n_clients: n,
        n_nodes: m,
        max_dropped: 0,
        dim,
        bound: 1.0,
        mode: mode.clone(),
        noise_sigma_total: None,
        l2_sensitivity: None,
        frac_bits: None,
        deadline_unix_ms: dca_service::node::now_ms() + 3_600_000,
        node_keys: agg.node_keys().await.unwrap(),
        client_token_sha256: (0..n)
            .map(|i| hex::encode(&token_hash(&format!("t{i}"))))
            .collect(),
    };
    let round = Arc::new(agg.create_round(spec).await.unwrap());
    let seed = 99;

    // --preseal: shard and seal everything now, outside the timed phase, on every core.
    let sealed_all: Option<Arc<Vec<Vec<Vec<u8>>>>> = preseal.then(|| {
        let t = Instant::now();
        let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
        let chunk = n.div_ceil(threads).max(1);
        let parts: Vec<Vec<Vec<Vec<u8>>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .step_by(chunk)
                .map(|lo| {
                    let round = round.clone();
                    s.spawn(move || {
                        (lo..(lo + chunk).min(n))
                            .map(|i| shard_and_seal(&round, i as u64, seed, only_node))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: Vec<Vec<Vec<u8>>> = parts.into_iter().flatten().collect();
        eprintln!(
            "presealed {n} clients x {m} shares in {:.1} s ({threads} threads, before the timed phase)",
            t.elapsed().as_secs_f64()
        );
        Arc::new(all)
    });

    let load_before = load_average();
    let cpu_before: Vec<f64> = nodes.iter().map(|r| replicas_cpu_seconds(r)).collect();
    let server_cpu_before = pg.and_then(|pg| pg.server_cpu_seconds());
    let wal_before = pg.map(|pg| pg.wal_position().unwrap());
    eprintln!(
        "uploading N = {n}, d = {dim}, M = {m}, {mode} mode, {conns} connections{}, nodes on {}, {replicas} replica(s) each ...",
        if preseal { ", presealed" } else { "" },
        if pg.is_some() { "PostgreSQL" } else { "SQLite" }
    );
    let next = Arc::new(AtomicU64::new(0));
    let bytes_sent = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..conns {
        let (http, round, replica_urls, next, bytes_sent, sealed_all) = (
            http.clone(),
            round.clone(),
            replica_urls.clone(),
            next.clone(),
            bytes_sent.clone(),
            sealed_all.clone(),
        );
        workers.spawn(async move {
            let id = round.id();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n as u64 {
                    return;
                }
                let fresh;
                let sealed: &[Vec<u8>] = match &sealed_all {
                    Some(all) => &all[i as usize],
                    None => {
                        fresh = shard_and_seal(&round, i, seed, only_node);
                        &fresh
                    }
                };
                let token = format!("t{i}");
                for (k, sealed) in sealed.iter().enumerate() {
                    if only_node.is_some_and(|o| o != k) {
                        continue;
                    }
                    bytes_sent.fetch_add(sealed.len() as u64, Ordering::Relaxed);
                    let to = &replica_urls[k][i as usize % replica_urls[k].len()];
                    upload_sealed(&http, to, &id, i, &token, sealed)
                        .await
                        .unwrap();
                }
                if i > 0 && i % (n as u64 / 10).max(1) == 0 {
                    eprintln!("  {i} clients, {:.1} s", start.elapsed().as_secs_f64());
                }
            }
        });
    }
    while let Some(r) = workers.join_next().await {
        r.unwrap();
    }
    let upload_s = start.elapsed().as_secs_f64();
    let cpu_upload: Vec<f64> = nodes
        .iter()
        .zip(&cpu_before)
        .map(|(r, before)| replicas_cpu_seconds(r) - before)
        .collect();
    let server_cpu_upload = server_cpu_before
        .zip(pg.and_then(|pg| pg.server_cpu_seconds()))
        .map(|(before, after)| after - before);
    let wal_upload = wal_before.map(|before| pg.unwrap().wal_position().unwrap() - before);
    let load_after_upload = load_average();
    if let Some(k) = only_node {
        let cpu = cpu_upload.get(k).copied().unwrap_or(f64::NAN);
        println!(
            "only node {k} was sent shares: N = {n}, d = {dim}, M = {m}, {mode} mode, {conns} connections{}: upload phase {upload_s:.1} s, {:.0} uploads/s, node {k} CPU {cpu:.1} s ({:.0} uploads per node-CPU-second); no release",
            if preseal { ", presealed" } else { "" },
            n as f64 / upload_s,
            n as f64 / cpu
        );
        if let Some(server) = server_cpu_upload {
            println!("PostgreSQL server CPU in the upload phase: {server:.1} s");
        }
        println!(
            "load average (1, 5, 15 min): {load_before} before the uploads, {load_after_upload} after them"
        );
        drop(nodes);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // The analyst's view during the release: the aggregator's router (a second handle on the
    // same store, its closing task idle) on loopback, polled with `GET /rounds/{id}` while the
    // release runs; each request's latency is recorded.
    let analyst = open_aggregator();
    let app = dca_service::aggregator::server::router(
        analyst,
        "bench-analyst",
        Duration::from_secs(24 * 3600),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let analyst_url = format!(
        "http://{}/rounds/{}",
        listener.local_addr().unwrap(),
        round.id()
    );
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let probing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let probe = {
        let (probing, http) = (probing.clone(), http.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while probing.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = http
                    .get(&analyst_url)
                    .bearer_auth("bench-analyst")
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
                r.bytes().await.unwrap();
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            latencies
        })
    };
    let cpu_before_release: Vec<f64> = nodes.iter().map(|r| replicas_cpu_seconds(r)).collect();
    let server_cpu_before_release = pg.and_then(|pg| pg.server_cpu_seconds());
    let own_cpu_before_release = cpu_seconds(std::process::id());
    let t = Instant::now();
    let release = agg.release(&round).await.unwrap();
    let release_s = t.elapsed().as_secs_f64();
    let own_cpu_release = cpu_seconds(std::process::id()) - own_cpu_before_release;
    let cpu_release: Vec<f64> = nodes
        .iter()
        .zip(&cpu_before_release)
        .map(|(r, before)| replicas_cpu_seconds(r) - before)
        .collect();
    let server_cpu_release = server_cpu_before_release
        .zip(pg.and_then(|pg| pg.server_cpu_seconds()))
        .map(|(before, after)| after - before);
    probing.store(false, Ordering::Relaxed);
    let mut latencies = probe.await.unwrap();
    server.abort();
    latencies.sort_by(f64::total_cmp);
    let pick = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    println!(
        "analyst GET /rounds/{{id}} during the release ({release_s:.2} s): {} requests, median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        latencies.len(),
        pick(0.5),
        pick(0.9),
        pick(1.0)
    );
    println!(
        "release CPU: nodes {} s, aggregator (this process, the probe included) {own_cpu_release:.2} s",
        cpu_release
            .iter()
            .map(|c| format!("{c:.2}"))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    if let Some(server) = server_cpu_release {
        println!("release CPU of the PostgreSQL server: {server:.2} s");
    }

    let t = Instant::now();
    let local = simulate_round_with(
        &round.config,
        |i, out| {
            out.iter_mut()
                .enumerate()
                .for_each(|(j, o)| *o = value(i as u64, j));
            Ok(())
        },
        &[],
        RngSource::InsecureFixedSeed(seed),
    )
    .unwrap();
    let local_s = t.elapsed().as_secs_f64();
    assert_eq!(
        local.sum_units, release.sum_units,
        "network and in-process releases differ"
    );

    println!(
        "| N | d | M | mode | conns | upload phase s | uploads/s per node | MB/s sealed in (all nodes) | release s | in-process s | ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {n} | {dim} | {m} | {mode} | {conns} | {upload_s:.1} | {:.0} | {:.1} | {release_s:.2} | {local_s:.2} | {:.0}x |",
        n as f64 / upload_s,
        bytes_sent.load(Ordering::Relaxed) as f64 / 1e6 / upload_s,
        (upload_s + release_s) / local_s
    );
    let db_sizes = pg.map(|pg| pg.sizes().unwrap());
    for (k, replicas_of_k) in nodes.iter().enumerate() {
        let cpu = replicas_cpu_seconds(replicas_of_k);
        let rss = replicas_of_k
            .iter()
            .map(|p| format!("{:.1}", peak_rss_kib(p.child.0.id()) as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(" / ");
        let files: u64 = replicas_of_k.iter().map(|p| dir_bytes(&p.data)).sum();
        let disk = match (pg, &db_sizes) {
            (Some(pg), Some(sizes)) => {
                let (size, empty) = (sizes[k], pg.baseline_bytes[k]);
                let grown = size.saturating_sub(empty);
                format!(
                    "database {:.1} MiB less {:.1} MiB when empty = {:.1} MiB ({:.0} B per client; {:.0} B with the baseline), data dirs {files} B",
                    size as f64 / 1048576.0,
                    empty as f64 / 1048576.0,
                    grown as f64 / 1048576.0,
                    grown as f64 / n as f64,
                    size as f64 / n as f64
                )
            }
            _ => format!(
                "SQLite + WAL {:.1} MiB ({:.0} B per client)",
                files as f64 / 1048576.0,
                files as f64 / n as f64
            ),
        };
        println!(
            "node {k} ({} replica(s)): CPU {cpu:.1} s for the round, {:.1} s in the upload phase ({:.0} uploads per node-CPU-second), peak RSS {rss} MiB, disk: {disk}",
            replicas_of_k.len(),
            cpu_upload[k],
            n as f64 / cpu_upload[k],
        );
    }
    if pg.is_some() {
        let nodes_cpu: f64 = cpu_upload.iter().sum();
        match server_cpu_upload {
            Some(server) => println!(
                "PostgreSQL server CPU: {server:.1} s in the upload phase, {:.2} s in the release; upload phase, nodes and server together: {:.1} s for {m} x {n} uploads = {:.0} uploads per CPU-second (nodes alone {:.0})",
                server_cpu_release.unwrap_or(f64::NAN),
                nodes_cpu + server,
                (usize::from(m) * n) as f64 / (nodes_cpu + server),
                (usize::from(m) * n) as f64 / nodes_cpu
            ),
            None => println!(
                "PostgreSQL server CPU: not measured (its data directory's postmaster.pid is not readable here)"
            ),
        }
        if let Some(wal) = wal_upload {
            println!(
                "PostgreSQL WAL written in the upload phase (whole server): {:.1} MiB ({:.0} B per upload)",
                wal / 1048576.0,
                wal / (usize::from(m) * n) as f64
            );
        }
    }
    println!("released sum identical to the in-process round (sum_units compared)");
    println!(
        "load average (1, 5, 15 min): {load_before} before the uploads, {load_after_upload} after them, {} at the end; {} cores",
        load_average(),
        std::thread::available_parallelism().map_or(0, |p| p.get())
    );
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}
