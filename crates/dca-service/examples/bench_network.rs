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
//! `--validity linf|l2` (default off): a verified round (truncation δ 1e-9; for l2 the data norm
//! bound·sqrt(d), which every input here meets), nodes started with a verify secret, clients
//! sealing Prio3 shares. A verified node checks proofs at the close (`/verify`, then the close's
//! second check and sum), not at upload, so node CPU per upload is printed for the upload phase
//! and for the release apart. Then, in this process, on one thread, in thread CPU time: libprio's own
//! `Prio3SumVec` prepare per report (verify_init + verify_next of one node) at the round's d and
//! bit width (those of its L∞ bound when the mode is off), the node's steps on this round's
//! sealed shares one by one (HPKE open, decode, verifier share, the close's check and add), and
//! the ratio node CPU per upload / libprio prepare per report. Reports, never asserts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dca_service::aggregator::Aggregator;
use dca_service::hex;
use dca_service::http::tls;
use dca_service::protocol::spec::{Round, RoundSpec, token_hash};
use dca_service::protocol::upload::{seal_for, seal_shares, upload_sealed};
use dca_service::protocol::validity::ValiditySpec;
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
    fn start(
        bin: &Path,
        dir: &Path,
        k: u16,
        data: PathBuf,
        store: Option<&str>,
        verify_secret: Option<&Path>,
    ) -> NodeProcess {
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
        if let Some(file) = verify_secret {
            command.arg("--verify-secret-file").arg(file);
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
    if round.validity.is_some() {
        let rng = RngSource::InsecureFixedSeed(seed).derive(i);
        let mut sealed = seal_shares(round, i, &values, rng).unwrap();
        for (k, s) in sealed.iter_mut().enumerate() {
            if only.is_some_and(|o| o != k) {
                s.clear();
            }
        }
        return sealed;
    }
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
    let validity = match arg("--validity", "off").as_str() {
        "off" => None,
        "linf" => Some(ValiditySpec::Linf {
            truncation_delta: 1e-9,
        }),
        // Every input coordinate is within ±bound (1), so ‖x‖₂ ≤ sqrt(d).
        "l2" => Some(ValiditySpec::L2 {
            data_norm: (dim as f64).sqrt(),
            truncation_delta: 1e-9,
        }),
        other => panic!("--validity {other}: off, linf or l2"),
    };
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
    let verify_secret = validity.is_some().then(|| {
        let file = dir.join("verify.secret");
        std::fs::write(&file, "bench-only-verify-secret-0123456789abcdef").unwrap();
        file
    });

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
    // Kept for opening sealed shares in the in-process costs after the round.
    let mut node_key_pairs = Vec::new();
    for k in 0..m {
        let key_dir = dir.join(format!("node{k}-key"));
        std::fs::create_dir_all(&key_dir).unwrap();
        node_key_pairs.push(dca_service::node::load_or_create_key(&key_dir).unwrap());
        let replicas_of_k = (0..replicas)
            .map(|j| {
                let data = dir.join(format!("node{k}-replica{j}"));
                std::fs::create_dir_all(&data).unwrap();
                let key_file = dca_service::node::key::KEY_FILE;
                std::fs::copy(key_dir.join(key_file), data.join(key_file)).unwrap();
                NodeProcess::start(&bin, &dir, k, data, stores.url(k), verify_secret.as_deref())
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
        validity,
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
        "uploading N = {n}, d = {dim}, M = {m}, {mode} mode{}, {conns} connections{}, nodes on {}, {replicas} replica(s) each ...",
        validity_label(validity.as_ref()),
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
    assert!(
        release.invalid.as_ref().is_none_or(Vec::is_empty),
        "honest clients found invalid: {:?}",
        release.invalid
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
    in_process_costs(&round, &node_key_pairs, seed, &cpu_upload, &cpu_release, n);
    println!(
        "load average (1, 5, 15 min): {load_before} before the uploads, {load_after_upload} after them, {} at the end; {} cores",
        load_average(),
        std::thread::available_parallelism().map_or(0, |p| p.get())
    );
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

fn validity_label(validity: Option<&ValiditySpec>) -> &'static str {
    match validity {
        None => "",
        Some(ValiditySpec::Linf { .. }) => ", verified (L∞)",
        Some(ValiditySpec::L2 { .. }) => ", verified (L2)",
    }
}

/// Reports per in-process pass; each measurement repeats passes for at least [`MIN_CPU_S`] of
/// thread CPU, [`REPS`] times, and keeps the median.
const REPORTS: usize = 16;
const REPS: usize = 3;
/// `/proc/thread-self/schedstat` advances in scheduler ticks here, not nanoseconds: a window of
/// 0.1 s keeps a tick's error to a few per cent.
const MIN_CPU_S: f64 = 0.1;

/// CPU seconds of the calling thread so far (the first field of `/proc/thread-self/schedstat`):
/// on a shared machine wall time would count the other users.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}

/// Thread CPU time per report of `f` (one pass over [`REPORTS`] reports): median of [`REPS`]
/// windows of at least [`MIN_CPU_S`] each.
fn per_report(mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..REPS)
        .map(|_| {
            let start = thread_cpu_seconds();
            let mut passes = 0;
            loop {
                f();
                passes += 1;
                let used = thread_cpu_seconds() - start;
                if used >= MIN_CPU_S {
                    return used / (passes * REPORTS) as f64;
                }
            }
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// libprio's `Prio3SumVec` prepare of one report by node `node` (its verify_init, then
/// verify_next with the combined message; the message is the relay's work, made outside the
/// timing), with the instance a verified round of this d and bound builds: M aggregators,
/// entries in [0, 2B], chunk sqrt(d·bits).
fn libprio_prepare(round: &Round, bound: verified_shares::ValidityBound, node: usize) -> f64 {
    use prio::vdaf::prio3::Prio3SumVec;
    use prio::vdaf::{Aggregatable, Aggregator as _, Client as _, VerifyTransition};
    let dim = round.config.dim();
    let m = round.node_keys.len();
    let max_measurement = 2 * u128::from(bound.units());
    let bits = (128 - max_measurement.leading_zeros()) as usize;
    let chunk = ((dim * bits) as f64).sqrt().ceil() as usize;
    let prio = Prio3SumVec::new_sum_vec(m as u8, max_measurement, dim, chunk).unwrap();
    let measurement = vec![max_measurement / 2; dim];
    let key = [7u8; 32];
    let reports: Vec<_> = (0..REPORTS)
        .map(|i| {
            let nonce = [i as u8; 16];
            let (public, shares) = prio.shard(b"bench", &measurement, &nonce).unwrap();
            let message = prio
                .verifier_shares_to_message(
                    b"bench",
                    &(),
                    (0..m).map(|k| {
                        prio.verify_init(&key, b"bench", k, &(), &nonce, &public, &shares[k])
                            .unwrap()
                            .1
                    }),
                )
                .unwrap();
            (nonce, public, shares, message)
        })
        .collect();
    let mut sum = prio.aggregate_init(&());
    per_report(|| {
        for (nonce, public, shares, message) in &reports {
            let (state, _) = prio
                .verify_init(&key, b"bench", node, &(), nonce, public, &shares[node])
                .unwrap();
            match prio.verify_next(b"bench", state, message.clone()).unwrap() {
                VerifyTransition::Finish(out) => sum.accumulate(&out).unwrap(),
                VerifyTransition::Continue(..) => unreachable!("one round"),
            }
        }
    })
}

/// What a node spends per upload, measured in this process on one thread after the round, next
/// to libprio's prepare at the same d and bit width; and the ratio of the node CPU per upload
/// measured over the network (upload phase + release) to that prepare.
fn in_process_costs(
    round: &Round,
    keys: &[share_sealing::NodeKeyPair],
    seed: u64,
    cpu_upload: &[f64],
    cpu_release: &[f64],
    n: usize,
) {
    use verified_shares::wire::encode_verdict;
    use verified_shares::{Relay, VerifyingNode};
    let m = round.node_keys.len();
    let bound = match &round.validity {
        Some(v) => v.bound,
        None => verified_shares::LinfBound::new(&round.config, 1e-9)
            .unwrap()
            .into(),
    };
    let bits = (128 - (2 * u128::from(bound.units())).leading_zeros()) as usize;
    let sealed: Vec<Vec<Vec<u8>>> = (0..REPORTS as u64)
        .map(|i| shard_and_seal(round, i, seed, None))
        .collect();
    let ctx = |i: u64, k: usize| share_sealing::SealContext {
        round: round.spec.round,
        config_hash: round.hash,
        client: i,
        node: k as u16,
    };
    let opened: Vec<Vec<Vec<u8>>> = sealed
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (0..m)
                .map(|k| share_sealing::open(&keys[k].secret, &ctx(i as u64, k), &s[k]).unwrap())
                .collect()
        })
        .collect();
    // A fixed key: the nodes' own is derived from their secret, and the cost does not depend on
    // it.
    let verdicts: Option<Vec<Vec<u8>>> = round.validity.as_ref().map(|_| {
        let relay = Relay::new(&round.config, bound).unwrap();
        let nodes: Vec<_> = (0..m)
            .map(|k| VerifyingNode::new(&round.config, bound, k, [7u8; 32]).unwrap())
            .collect();
        opened
            .iter()
            .map(|msgs| {
                let shares = nodes
                    .iter()
                    .zip(msgs)
                    .map(|(node, msg)| {
                        node.verify_share(&node.decode_share(msg).unwrap())
                            .unwrap()
                            .1
                    })
                    .collect();
                encode_verdict(&relay.combine(shares).unwrap()).unwrap()
            })
            .collect()
    });
    println!(
        "in process, one thread's CPU time per report (median of {REPS} windows of at least {MIN_CPU_S} s over {REPORTS} reports), this round's shares; libprio Prio3SumVec at d = {}, {bits} bits per entry, chunk {}:",
        round.config.dim(),
        ((round.config.dim() * bits) as f64).sqrt().ceil()
    );
    for k in 0..m.min(2) {
        let prio = libprio_prepare(round, bound, k);
        let open = per_report(|| {
            for (i, s) in sealed.iter().enumerate() {
                share_sealing::open(&keys[k].secret, &ctx(i as u64, k), &s[k]).unwrap();
            }
        });
        let steps = match &verdicts {
            Some(verdicts) => {
                let mut node = VerifyingNode::new(&round.config, bound, k, [7u8; 32]).unwrap();
                let decode = per_report(|| {
                    for msgs in &opened {
                        node.decode_share(&msgs[k]).unwrap();
                    }
                });
                let shares: Vec<_> = opened
                    .iter()
                    .map(|msgs| node.decode_share(&msgs[k]).unwrap())
                    .collect();
                let verify = per_report(|| {
                    for share in &shares {
                        node.verify_share(share).unwrap();
                    }
                });
                let accept = per_report(|| {
                    for (i, (share, verdict)) in shares.iter().zip(verdicts).enumerate() {
                        node.accept_share(ClientId(i as u64), share, verdict)
                            .unwrap();
                    }
                });
                // A node decodes each share three times (upload, /verify, close).
                let model = open + 3.0 * decode + verify + accept;
                format!(
                    "decode {:.0} µs, verifier share (verify_init) {:.0} µs, close's check and add (verify_init + verify_next) {:.0} µs; open + 3 decodes + verifier share + check and add = {:.0} µs = {:.2}x libprio",
                    decode * 1e6,
                    verify * 1e6,
                    accept * 1e6,
                    model * 1e6,
                    model / prio
                )
            }
            None => "mode off: no proof to check".to_string(),
        };
        let (up, rel) = (cpu_upload[k] / n as f64, cpu_release[k] / n as f64);
        println!(
            "node {k} ({}): libprio prepare {:.0} µs per report; HPKE open {:.0} µs, {steps}",
            if k == 0 { "field vector" } else { "seeds" },
            prio * 1e6,
            open * 1e6,
        );
        println!(
            "node {k}: network CPU per upload {:.0} µs in the upload phase + {:.0} µs in the release = {:.0} µs = {:.2}x libprio's prepare (upload phase alone {:.2}x, release alone {:.2}x)",
            up * 1e6,
            rel * 1e6,
            (up + rel) * 1e6,
            (up + rel) / prio,
            up / prio,
            rel / prio
        );
        println!(
            "SUMMARY validity={} d={} n={n} node={k} upload_us={:.1} release_us={:.1} total_us={:.1} prio_us={:.1} ratio={:.3} open_us={:.1} steps=[{steps}]",
            match round.validity.as_ref().map(|v| v.bound) {
                None => "off",
                Some(verified_shares::ValidityBound::Linf(_)) => "linf",
                Some(verified_shares::ValidityBound::L2(_)) => "l2",
            },
            round.config.dim(),
            up * 1e6,
            rel * 1e6,
            (up + rel) * 1e6,
            prio * 1e6,
            (up + rel) / prio,
            open * 1e6,
        );
    }
}
