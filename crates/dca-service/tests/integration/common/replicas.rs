//! Node replicas for tests: several `dpdist node` processes per node index on one PostgreSQL
//! database each, with the node's HPKE key copied to every replica's data directory, and a
//! TCP load balancer on loopback in front of each node's replicas (TLS passes through it).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::*;

/// A load balancer on loopback: each connection goes to the next backend in turn that accepts
/// it (a dead replica is passed over). It serves until the test's runtime ends.
pub struct Balancer {
    pub url: String,
    backends: Arc<Mutex<Vec<String>>>,
}

impl Balancer {
    pub async fn start(backends: Vec<String>) -> Balancer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let backends = Arc::new(Mutex::new(backends));
        let shared = backends.clone();
        tokio::spawn(async move {
            let mut next = 0usize;
            while let Ok((mut inbound, _)) = listener.accept().await {
                let order: Vec<String> = {
                    let all = shared.lock().unwrap();
                    (0..all.len())
                        .map(|k| all[(next + k) % all.len()].clone())
                        .collect()
                };
                next = next.wrapping_add(1);
                tokio::spawn(async move {
                    for addr in order {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&addr).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Balancer { url, backends }
    }

    /// Adds a backend (a replica started later).
    pub fn add(&self, addr: String) {
        self.backends.lock().unwrap().push(addr);
    }
}

/// `m` nodes of `r` replicas each, every node on a PostgreSQL database of its own; replica
/// `j` of node `k` is `cluster.nodes[k * r + j]` (later replicas are appended to `extra`).
pub struct ReplicatedCluster {
    pub cluster: Cluster,
    pub replicas: usize,
    pub balancers: Vec<Balancer>,
    pub extra: Vec<NodeProcess>,
    args: Vec<String>,
}

impl ReplicatedCluster {
    /// `None` without a PostgreSQL server (said loudly; a failure under CI).
    pub async fn start(name: &str, m: u16, r: usize, args: &[&str]) -> Option<ReplicatedCluster> {
        let admin = postgres_admin_url(name)?;
        let pg = PgDatabases::create(&admin, name, m);
        let dir = scratch(&format!("{name}-replicas"));
        let certs = make_certs(&dir);
        let mut nodes = Vec::new();
        for k in 0..m {
            let key_dir = dir.join(format!("node{k}-key"));
            std::fs::create_dir_all(&key_dir).unwrap();
            dca_service::node::load_or_create_key(&key_dir).unwrap();
            for j in 0..r {
                let data = replica_dir(&dir, k, j);
                copy_key(&key_dir, &data);
                let mut node_args: Vec<&str> = args.to_vec();
                node_args.extend(["--store", pg.urls[usize::from(k)].as_str()]);
                nodes.push(NodeProcess::start_with(
                    &certs,
                    k,
                    &data,
                    "127.0.0.1:0",
                    &node_args,
                ));
            }
        }
        let mut balancers = Vec::new();
        for k in 0..usize::from(m) {
            let addrs = nodes[k * r..(k + 1) * r]
                .iter()
                .map(|n| n.addr.clone())
                .collect();
            balancers.push(Balancer::start(addrs).await);
        }
        let http = tls::http_client(&certs.ca_pem, 64, Duration::from_secs(30)).unwrap();
        Some(ReplicatedCluster {
            cluster: Cluster {
                certs,
                nodes,
                http,
                dir,
                pg: Some(pg),
            },
            replicas: r,
            balancers,
            extra: Vec::new(),
            args: args.iter().map(|a| a.to_string()).collect(),
        })
    }

    /// The balancers' URLs, one per node (what the aggregator and clients are given).
    pub fn urls(&self) -> Vec<String> {
        self.balancers.iter().map(|b| b.url.clone()).collect()
    }

    /// Replica `j` of every node, by URL.
    pub fn replica_urls(&self, j: usize) -> Vec<String> {
        (0..self.balancers.len())
            .map(|k| self.replica(k, j).url.clone())
            .collect()
    }

    pub fn replica(&self, k: usize, j: usize) -> &NodeProcess {
        if j < self.replicas {
            &self.cluster.nodes[k * self.replicas + j]
        } else {
            self.extra
                .iter()
                .filter(|n| usize::from(n.index) == k)
                .nth(j - self.replicas)
                .expect("a replica started later")
        }
    }

    pub fn replica_mut(&mut self, k: usize, j: usize) -> &mut NodeProcess {
        assert!(j < self.replicas);
        &mut self.cluster.nodes[k * self.replicas + j]
    }

    /// Starts one more replica of node `k` (on its database, with its key) and adds it to the
    /// node's balancer; it is replica `self.replicas + (earlier extras of k)`.
    pub fn start_replica(&mut self, k: u16) {
        let j = self.replicas + self.extra.iter().filter(|n| n.index == k).count();
        let data = replica_dir(&self.cluster.dir, k, j);
        copy_key(&self.cluster.dir.join(format!("node{k}-key")), &data);
        let url = self.cluster.pg.as_ref().unwrap().urls[usize::from(k)].clone();
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(["--store", url.as_str()]);
        let node = NodeProcess::start_with(&self.cluster.certs, k, &data, "127.0.0.1:0", &args);
        self.balancers[usize::from(k)].add(node.addr.clone());
        self.extra.push(node);
    }

    /// An in-process aggregator over the balancers.
    pub fn aggregator(&self, db_name: &str) -> Aggregator {
        Aggregator::open(
            &self.cluster.dir.join(db_name),
            self.cluster.http.clone(),
            self.urls(),
            ADMIN_TOKEN.to_string(),
            PrivacyLoss {
                epsilon: 10.0,
                delta: 1e-5,
            },
        )
        .unwrap()
    }

    /// The `--store` URL of node `k`'s database.
    pub fn store_url(&self, k: usize) -> String {
        self.cluster.pg.as_ref().unwrap().urls[k].clone()
    }
}

impl Drop for ReplicatedCluster {
    fn drop(&mut self) {
        for node in &mut self.extra {
            node.kill9();
        }
    }
}

fn replica_dir(dir: &Path, k: u16, j: usize) -> PathBuf {
    let data = dir.join(format!("node{k}-replica{j}"));
    std::fs::create_dir_all(&data).unwrap();
    data
}

fn copy_key(from: &Path, to: &Path) {
    let name = dca_service::node::key::KEY_FILE;
    std::fs::copy(from.join(name), to.join(name)).unwrap();
}

/// Uploads client `i`'s vector ([`values`]) to the nodes at `urls`, as [`upload_all`] does.
pub async fn upload_one(
    http: &reqwest::Client,
    round: &dca_service::protocol::spec::Round,
    urls: &[String],
    i: u64,
) -> dca_service::Result<()> {
    let v = values(i as usize, round.config.dim());
    dca_service::protocol::upload::upload(
        http,
        round,
        urls,
        i,
        &client_token(i),
        &v,
        dp_noise::rng::RngSource::InsecureFixedSeed(SEED).derive(i),
    )
    .await
}

/// The process id in a lease holder's name (a node's "pid P started …", an aggregator's
/// "pid P RANDOM").
pub fn pid_of(holder: &str) -> u32 {
    holder
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("lease holder {holder:?} names no pid"))
}
