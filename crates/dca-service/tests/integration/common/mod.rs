//! Test fixtures: fresh certificates, node processes on loopback (free ports, killed on drop),
//! an aggregator, and round specs.

#![allow(dead_code, missing_docs)]

pub mod jobs;
pub mod replicas;
#[path = "../../../src/db/postgres_test_db.rs"]
mod test_db;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dca_service::aggregator::{Aggregator, AggregatorStoreLocation};
use dca_service::hex;
use dca_service::http::tls;
use dca_service::protocol::spec::{RoundSpec, token_hash};
use dp_noise::PrivacyLoss;

pub const ADMIN_TOKEN: &str = "aggregator-secret-for-tests";

pub struct Certs {
    pub dir: PathBuf,
    pub ca_pem: Vec<u8>,
}

/// Spawns a `dpdist` server and waits (at most 60 s) for its first stdout line, "… on ADDR";
/// returns the process and ADDR. The process is killed if it does not print that in time.
pub fn spawn_with_banner(command: Command, what: &str) -> (Child, String) {
    spawn_with_banner_to(command, what, Stdio::inherit())
}

/// [`spawn_with_banner`] with the process's stderr (its log) sent to `stderr`.
pub fn spawn_with_banner_to(mut command: Command, what: &str, stderr: Stdio) -> (Child, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} did not start within 60 s");
    };
    let Some(addr) = line.split_whitespace().skip_while(|w| *w != "on").nth(1) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("unexpected banner from {what}: {line:?}")
    };
    let addr = addr.to_string();
    (child, addr)
}

/// Runs `dpdist args`, killed after `limit`: (success, stderr followed by stdout).
pub fn dpdist(args: &[&str], limit: Duration) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpdist"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dpdist runs");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("dpdist {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.success(), err.join().unwrap() + &out.join().unwrap())
}

pub use test_db::{postgres_admin_url, scratch_dir as scratch};

/// A scratch directory removed on drop.
pub struct Scratch {
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        Scratch {
            path: scratch(name),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A CA and a server certificate for 127.0.0.1 / localhost signed by it.
pub fn make_certs(dir: &Path) -> Certs {
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
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("admin.token"), ADMIN_TOKEN).unwrap();
    Certs {
        dir: dir.to_path_buf(),
        ca_pem: ca.pem().into_bytes(),
    }
}

/// Which store the node processes of a test keep their rounds and shares in. A test of both is
/// an `rstest` with the cases `sqlite` and `postgres` (the latter skips loudly without a server,
/// and fails under CI: [`postgres_admin_url`]), on a two-thread runtime unless its background
/// tasks must not run between two of its steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    /// `node.sqlite` in each node's data directory (the default).
    Sqlite,
    /// A database of its own per node on the server `DPDIST_TEST_POSTGRES` names.
    Postgres,
}

/// A scratch directory holding the operators' shared verify secret, and the node arguments
/// that give it to a node.
pub struct VerifySecret {
    dir: Scratch,
}

impl VerifySecret {
    pub fn new(name: &str) -> VerifySecret {
        let dir = Scratch::new(&format!("verify-secret-{name}"));
        std::fs::create_dir_all(&dir.path).unwrap();
        std::fs::write(
            dir.path.join("verify.secret"),
            "0123456789abcdef0123456789abcdef-test-only\n",
        )
        .unwrap();
        VerifySecret { dir }
    }

    pub fn node_args(&self) -> [String; 4] {
        [
            "--max-body".into(),
            "1048576".into(),
            "--verify-secret-file".into(),
            self.dir.path.join("verify.secret").display().to_string(),
        ]
    }
}

/// `m` nodes on `store` that share a verify secret (`None` as [`Cluster::start_on`]).
pub fn verifying_cluster(name: &str, m: u16, store: Store) -> Option<(Cluster, VerifySecret)> {
    let secret = VerifySecret::new(name);
    let args = secret.node_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Cluster::start_on_with(name, m, store, &args).map(|cluster| (cluster, secret))
}

/// Databases made for one test (one per node), dropped with their connections on drop. The
/// blocking PostgreSQL client runs on threads of its own: the tests call this from async code.
pub struct PgDatabases {
    admin: String,
    /// `dpdist_{test}_{pid}`: the start of every database name of the test.
    prefix: String,
    dbs: Vec<test_db::TestDb<()>>,
    /// The `--store` URL of each database, in order.
    pub urls: Vec<String>,
    /// The aggregators' databases, by the name of the store they stand for, made when first
    /// asked for ([`PgDatabases::aggregator_url`]).
    aggregators: std::sync::Mutex<Vec<(String, test_db::TestDb<()>)>>,
}

impl PgDatabases {
    /// `m` fresh databases named after `test` and this process.
    pub fn create(admin: &str, test: &str, m: u16) -> PgDatabases {
        let prefix = format!("dpdist_{test}_{}", std::process::id());
        let dbs: Vec<test_db::TestDb<()>> = (0..m)
            .map(|k| test_db::TestDb::create(admin, &format!("{prefix}_{k}")))
            .collect();
        PgDatabases {
            admin: admin.to_string(),
            prefix,
            urls: dbs.iter().map(|db| db.url().to_string()).collect(),
            dbs,
            aggregators: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The `--store` URL of the aggregator database standing for the SQLite file `db_name`:
    /// made on the first call, the same database on every later one (a restarted aggregator,
    /// or a second aggregator process given the same name, shares it).
    pub fn aggregator_url(&self, db_name: &str) -> String {
        let name = format!("{}_agg_{db_name}", self.prefix);
        let mut made = self.aggregators.lock().unwrap();
        if let Some((_, db)) = made.iter().find(|(n, _)| *n == name) {
            return db.url().to_string();
        }
        let db = test_db::TestDb::create(&self.admin, &name);
        let url = db.url().to_string();
        made.push((name, db));
        url
    }
}

/// `--max-connections-per-peer 1024` unless `args` set it: on loopback every client, node,
/// aggregator and participant of a test is 127.0.0.1, standing for many hosts, and a test's
/// bursts (200 concurrent uploads, an aggregator polling meanwhile) would meet the default cap
/// of one address (64) meant for one real host. The per-address cap itself is tested in
/// `serve::tests`.
pub fn many_hosts(args: &[&str]) -> Vec<&'static str> {
    if args.contains(&"--max-connections-per-peer") {
        vec![]
    } else {
        vec!["--max-connections-per-peer", "1024"]
    }
}

/// A node process; killed (SIGKILL) and reaped on drop, so no test leaves one behind.
pub struct NodeProcess {
    pub child: Child,
    pub url: String,
    pub addr: String,
    pub index: u16,
    pub data_dir: PathBuf,
    /// The arguments it was started with beyond the usual ones (a restart gets them again).
    pub args: Vec<String>,
}

impl NodeProcess {
    /// Starts node `index` listening on `listen` (use "127.0.0.1:0" for a free port).
    pub fn start(certs: &Certs, index: u16, data_dir: &Path, listen: &str) -> NodeProcess {
        Self::start_with(certs, index, data_dir, listen, &["--max-body", "1048576"])
    }

    /// Starts node `index` with `args` added to the command line.
    pub fn start_with(
        certs: &Certs,
        index: u16,
        data_dir: &Path,
        listen: &str,
        args: &[&str],
    ) -> NodeProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dpdist"));
        command
            .arg("node")
            .args(["--index", &index.to_string(), "--listen", listen])
            .arg("--cert")
            .arg(certs.dir.join("server.pem"))
            .arg("--key")
            .arg(certs.dir.join("server.key"))
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--admin-token-file")
            .arg(certs.dir.join("admin.token"))
            .args(args)
            .args(many_hosts(args));
        let (child, addr) = spawn_with_banner(command, &format!("node {index}"));
        NodeProcess {
            child,
            url: format!("https://{addr}"),
            addr,
            index,
            data_dir: data_dir.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// kill -9.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub struct Cluster {
    pub certs: Certs,
    pub nodes: Vec<NodeProcess>,
    pub http: reqwest::Client,
    pub dir: PathBuf,
    /// The nodes' databases when they keep their state in PostgreSQL (dropped after them).
    pub pg: Option<PgDatabases>,
}

impl Cluster {
    pub fn start(name: &str, m: u16) -> Cluster {
        Self::start_with(name, m, &["--max-body", "1048576"])
    }

    /// A cluster whose nodes get `args` on their command line.
    pub fn start_with(name: &str, m: u16, args: &[&str]) -> Cluster {
        Self::start_on_with(name, m, Store::Sqlite, args).expect("SQLite needs no server")
    }

    /// A cluster whose nodes keep their state in `store`; `None` if that is PostgreSQL and no
    /// server is given (said loudly; a failure under CI).
    pub fn start_on(name: &str, m: u16, store: Store) -> Option<Cluster> {
        Self::start_on_with(name, m, store, &["--max-body", "1048576"])
    }

    /// [`Self::start_on`] with `args` on the nodes' command line.
    pub fn start_on_with(name: &str, m: u16, store: Store, args: &[&str]) -> Option<Cluster> {
        let (name, pg) = match store {
            Store::Sqlite => (name.to_string(), None),
            Store::Postgres => {
                let admin = postgres_admin_url(name)?;
                (
                    format!("{name}-pg"),
                    Some(PgDatabases::create(&admin, name, m)),
                )
            }
        };
        let dir = scratch(&name);
        let certs = make_certs(&dir);
        let nodes = (0..m)
            .map(|k| {
                let data = dir.join(format!("node{k}"));
                std::fs::create_dir_all(&data).unwrap();
                let mut node_args: Vec<&str> = args.to_vec();
                if let Some(pg) = &pg {
                    node_args.extend(["--store", pg.urls[usize::from(k)].as_str()]);
                }
                NodeProcess::start_with(&certs, k, &data, "127.0.0.1:0", &node_args)
            })
            .collect();
        let http = tls::http_client(&certs.ca_pem, 64, Duration::from_secs(30)).unwrap();
        Some(Cluster {
            certs,
            nodes,
            http,
            dir,
            pg,
        })
    }

    /// kill -9 of node `k` (if still running) and a start on the address, data directory and
    /// store it had.
    pub fn restart(&mut self, k: usize) {
        let node = &mut self.nodes[k];
        node.kill9();
        let (addr, data, args) = (node.addr.clone(), node.data_dir.clone(), node.args.clone());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.nodes[k] = NodeProcess::start_with(&self.certs, k as u16, &data, &addr, &args);
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url.clone()).collect()
    }

    /// Where an aggregator over this cluster keeps its state: the SQLite file `db_name` in
    /// the cluster's directory, or, when the nodes are on PostgreSQL, the database standing
    /// for it.
    pub fn aggregator_store(&self, db_name: &str) -> AggregatorStoreLocation {
        match &self.pg {
            None => AggregatorStoreLocation::Sqlite(self.dir.join(db_name)),
            Some(pg) => AggregatorStoreLocation::parse(Some(&pg.aggregator_url(db_name)), None)
                .expect("a PostgreSQL URL"),
        }
    }

    pub fn aggregator(&self, db_name: &str) -> Aggregator {
        Aggregator::open_at(
            &self.aggregator_store(db_name),
            self.http.clone(),
            self.urls(),
            ADMIN_TOKEN.to_string(),
            PrivacyLoss {
                epsilon: 10.0,
                delta: 1e-5,
            },
        )
        .unwrap()
    }
}

impl Drop for Cluster {
    /// Stops every node, then removes the scratch directory (certificates, stores).
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill9();
        }
        drop(self.pg.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn client_token(i: u64) -> String {
    format!("client-token-{i}")
}

pub fn spec(
    round: u64,
    n: usize,
    t: usize,
    dim: usize,
    mode: &str,
    sigma: Option<f64>,
    node_keys: Vec<String>,
) -> RoundSpec {
    RoundSpec {
        validity: None,
        round,
        n_clients: n,
        n_nodes: node_keys.len() as u16,
        max_dropped: t,
        dim,
        bound: 8.0,
        mode: mode.to_string(),
        noise_sigma_total: sigma,
        l2_sensitivity: sigma.map(|_| 1.0),
        frac_bits: None,
        deadline_unix_ms: dca_service::node::now_ms() + 600_000,
        node_keys,
        client_token_sha256: (0..n as u64)
            .map(|i| hex::encode(&token_hash(&client_token(i))))
            .collect(),
    }
}

/// Client i's vector: deterministic, within the bound, with fractional parts.
pub fn values(i: usize, dim: usize) -> Vec<f64> {
    (0..dim)
        .map(|j| (((i * 31 + j * 17) % 29) as f64 - 14.0) * 0.513 + 0.001 * i as f64)
        .collect()
}

pub const ANALYST_TOKEN: &str = "analyst-secret-for-tests";

/// A `dpdist aggregator` server process over the cluster's nodes; killed and reaped on drop.
pub struct AggregatorProcess {
    pub child: Child,
    pub url: String,
}

impl AggregatorProcess {
    pub fn start(cluster: &Cluster, db_name: &str, budget_epsilon: f64) -> AggregatorProcess {
        Self::start_on(cluster, db_name, budget_epsilon, "127.0.0.1:0")
    }

    /// Starts the aggregator listening on `listen` (a restart on the address it had).
    pub fn start_on(
        cluster: &Cluster,
        db_name: &str,
        budget_epsilon: f64,
        listen: &str,
    ) -> AggregatorProcess {
        Self::start_with_nodes(cluster, db_name, budget_epsilon, listen, &cluster.urls())
    }

    /// Starts the aggregator with `nodes` as its node URLs (e.g. a proxy in front of one).
    pub fn start_with_nodes(
        cluster: &Cluster,
        db_name: &str,
        budget_epsilon: f64,
        listen: &str,
        nodes: &[String],
    ) -> AggregatorProcess {
        Self::start_with_args(cluster, db_name, budget_epsilon, listen, nodes, &[])
    }

    /// [`Self::start_with_nodes`] with `args` added to the command line.
    pub fn start_with_args(
        cluster: &Cluster,
        db_name: &str,
        budget_epsilon: f64,
        listen: &str,
        nodes: &[String],
        args: &[&str],
    ) -> AggregatorProcess {
        Self::start_logged(
            cluster,
            db_name,
            budget_epsilon,
            listen,
            nodes,
            args,
            Stdio::inherit(),
        )
    }

    /// [`Self::start_with_args`] with the aggregator's log (stderr) sent to `log`.
    pub fn start_logged(
        cluster: &Cluster,
        db_name: &str,
        budget_epsilon: f64,
        listen: &str,
        nodes: &[String],
        args: &[&str],
        log: Stdio,
    ) -> AggregatorProcess {
        std::fs::write(cluster.dir.join("analyst.token"), ANALYST_TOKEN).unwrap();
        let certs = &cluster.certs;
        let mut command = Command::new(env!("CARGO_BIN_EXE_dpdist"));
        command
            .arg("aggregator")
            .args(["--listen", listen, "--poll-ms", "50"])
            .arg("--cert")
            .arg(certs.dir.join("server.pem"))
            .arg("--key")
            .arg(certs.dir.join("server.key"))
            .arg("--ca")
            .arg(certs.dir.join("ca.pem"))
            .args(["--nodes", &nodes.join(",")])
            .arg("--admin-token-file")
            .arg(certs.dir.join("admin.token"))
            .arg("--analyst-token-file")
            .arg(cluster.dir.join("analyst.token"))
            .args(aggregator_store_args(cluster, db_name))
            .args(["--budget-epsilon", &budget_epsilon.to_string()])
            .args(["--budget-delta", "1e-4"])
            .args(args)
            .args(many_hosts(args));
        let (child, addr) = spawn_with_banner_to(command, "the aggregator", log);
        AggregatorProcess {
            child,
            url: format!("https://{addr}"),
        }
    }
}

/// `f` on a connection to the cluster's PostgreSQL aggregator database `db_name` (on a thread
/// of its own: the blocking client must not run on the test's async threads).
pub fn in_aggregator_db<T: Send + 'static>(
    cluster: &Cluster,
    db_name: &str,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    let url = cluster.pg.as_ref().unwrap().aggregator_url(db_name);
    std::thread::spawn(move || f(&mut postgres::Client::connect(&url, postgres::NoTls).unwrap()))
        .join()
        .unwrap()
}

/// `--db FILE`, or `--store URL` when the cluster's nodes are on PostgreSQL.
pub fn aggregator_store_args(cluster: &Cluster, db_name: &str) -> Vec<std::ffi::OsString> {
    match cluster.aggregator_store(db_name) {
        AggregatorStoreLocation::Sqlite(path) => vec!["--db".into(), path.into()],
        AggregatorStoreLocation::Postgres(_) => {
            let url = cluster.pg.as_ref().unwrap().aggregator_url(db_name);
            vec!["--store".into(), url.into()]
        }
    }
}

impl Drop for AggregatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixed seed of the clients' randomness in these tests (NOT for production).
pub const SEED: u64 = 20260;

/// Clients `clients` of `round` upload their vectors ([`values`]) to every node, concurrently.
pub async fn upload_all(
    cluster: &Cluster,
    round: &dca_service::protocol::spec::Round,
    clients: impl Iterator<Item = u64>,
) {
    let urls = cluster.urls();
    let mut tasks = tokio::task::JoinSet::new();
    for i in clients {
        let http = cluster.http.clone();
        let round = round.clone();
        let urls = urls.clone();
        tasks.spawn(async move {
            let v = values(i as usize, round.config.dim());
            dca_service::protocol::upload::upload(
                &http,
                &round,
                &urls,
                i,
                &client_token(i),
                &v,
                dp_noise::rng::RngSource::InsecureFixedSeed(SEED).derive(i),
            )
            .await
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap().unwrap();
    }
}

/// The in-process release of `round` without the `dropped` clients, from the same inputs and
/// client randomness as [`upload_all`].
pub fn in_process(
    round: &dca_service::protocol::spec::Round,
    dropped: &[u64],
) -> fixedpoint_shares::Release {
    let inputs: Vec<Vec<f64>> = (0..round.config.n_clients())
        .map(|i| values(i, round.config.dim()))
        .collect();
    let dropped: Vec<fixedpoint_shares::ClientId> = dropped
        .iter()
        .map(|&i| fixedpoint_shares::ClientId(i))
        .collect();
    fixedpoint_shares::simulate_round(
        &round.config,
        &inputs,
        &dropped,
        dp_noise::rng::RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap()
}

pub fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A plain-HTTP proxy on loopback in front of `target` (a node): forwards every request, except
/// that it answers those whose path `fails` picks with 502 itself (the request is lost on the
/// way). Returns the proxy's base URL; it serves until the test's runtime ends.
pub async fn failing_proxy(
    http: reqwest::Client,
    target: String,
    fails: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> String {
    proxy(http, target, move |path| {
        fails(path).then_some((
            reqwest::StatusCode::BAD_GATEWAY,
            "dropped by the test proxy",
        ))
    })
    .await
}

/// A plain-HTTP proxy on loopback in front of `target` (a node): every request's path is first
/// shown to `answer`, which may answer it itself with a status and a body; the others are
/// forwarded. Returns the proxy's base URL; it serves until the test's runtime
/// ends.
pub async fn proxy(
    http: reqwest::Client,
    target: String,
    answer: impl Fn(&str) -> Option<(reqwest::StatusCode, &'static str)> + Send + Sync + 'static,
) -> String {
    proxy_by_method(http, target, move |_, path| answer(path)).await
}

/// [`proxy`] whose `answer` is shown each request's method too.
pub async fn proxy_by_method(
    http: reqwest::Client,
    target: String,
    answer: impl Fn(&reqwest::Method, &str) -> Option<(reqwest::StatusCode, &'static str)>
    + Send
    + Sync
    + 'static,
) -> String {
    use axum::body::Body;
    use axum::http::Request;
    use axum::response::{IntoResponse, Response};
    let answer = std::sync::Arc::new(answer);
    let app = axum::Router::new().fallback(move |request: Request<Body>| {
        let (http, target, answer) = (http.clone(), target.clone(), answer.clone());
        async move {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path().to_string();
            if let Some(answered) = answer(&parts.method, &path) {
                return answered.into_response();
            }
            let body = axum::body::to_bytes(body, 64 << 20).await.unwrap();
            let mut forward = http.request(parts.method, format!("{target}{path}"));
            for name in ["authorization", "content-type"] {
                if let Some(v) = parts.headers.get(name) {
                    forward = forward.header(name, v);
                }
            }
            let answer = forward.body(body).send().await.unwrap();
            let status = answer.status();
            let content_type = answer.headers().get("content-type").cloned();
            let bytes = answer.bytes().await.unwrap();
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            if let Some(v) = content_type {
                response.headers_mut().insert("content-type", v);
            }
            response
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
