//! `dpdist`: run a DCA party as a process. `dpdist node`, `dpdist aggregator`, `dpdist client
//! upload`, `dpdist round create|status|release`. See docs/http-api.md.

mod cli_jobs;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use dca_service::aggregator::{Aggregator, AggregatorStoreLocation};
use dca_service::node::{NodeOptions, router};
use dca_service::secret::SecretString;
use dca_service::serve::{ServeLimits, serve_tls};
use dca_service::spec::{NON_PRIVATE_MARK, Round, RoundSpec, token_hash};
use dca_service::{Error, Result, hex, tls};
use dp_noise::rng::RngSource;
use dp_noise::{PrivacyLoss, limits};
use zeroize::Zeroizing;

#[derive(Parser)]
#[command(
    name = "dpdist",
    about = "DCA secure summation across processes over HTTPS"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a compute node.
    Node(NodeArgs),
    /// Run the aggregator server: the analyst creates rounds on it; it closes and releases (or
    /// aborts, telling the nodes) each round at its deadline or once every client reached every
    /// node, and serves the releases.
    Aggregator(AggregatorArgs),
    /// Alg. 2 over the network: the DP std round and the statistics round on the aggregator
    /// and its nodes (the N clients are tasks of this process), then the BLR fit.
    Blr(BlrArgs),
    /// Iterative private logistic regression over the network (DCA paper Sec. 4.2): every
    /// iteration is one DCA round of clipped gradients on the aggregator and its nodes (the N
    /// clients are tasks of this process), DP-SGD with Adam, an RDP accountant.
    Train(TrainArgs),
    /// Client commands.
    #[command(subcommand)]
    Client(ClientCommand),
    /// Round commands (the aggregator's side, one step at a time).
    #[command(subcommand)]
    Round(RoundCommand),
    /// Jobs on the aggregator, the analyst's side (no data file): the aggregator runs the
    /// job's rounds with the participants on its roster.
    #[command(subcommand)]
    Job(cli_jobs::JobCommand),
    /// Take part in jobs as a data holder: reads only its own rows, answers each job by its
    /// policy, keeps its own accountant, sends only sealed shares.
    Participant(cli_jobs::ParticipantArgs),
}

#[derive(Args)]
struct NodeArgs {
    /// This node's index (0..M).
    #[arg(long)]
    index: u16,
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// PEM certificate chain.
    #[arg(long)]
    cert: PathBuf,
    /// PEM private key.
    #[arg(long)]
    key: PathBuf,
    /// Directory of node.sqlite and the node's HPKE key (hpke-x25519.key, made on first start).
    #[arg(long)]
    data_dir: PathBuf,
    /// Keep rounds and shares in this PostgreSQL database (postgres://user@host:port/db)
    /// instead of node.sqlite in --data-dir; the key and spool files stay in --data-dir.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// File holding the aggregator's bearer token.
    #[arg(long)]
    admin_token_file: PathBuf,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    max_body: usize,
    /// Share bytes read at once over all uploads in flight (uploads beyond get 503).
    #[arg(long, default_value_t = 64 << 20)]
    max_inflight_body: usize,
    /// Time a client has to send a request body after its headers (ms; 408 after).
    #[arg(long, default_value_t = 30_000)]
    body_timeout_ms: u64,
    /// With --store shared by replicas: how long a replica holds a round's lease to compute
    /// its node sum between renewals (ms); a dead holder's sum is taken over after it.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(300..))]
    sum_lease_ms: u64,
    #[command(flatten)]
    serve: ServeArgs,
}

/// Connection limits of a server (node or aggregator).
#[derive(Args)]
struct ServeArgs {
    /// Connections served at once; more are answered 503 (capped below the open-file limit).
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Time a client has to send request headers; also how long an idle connection stays
    /// open (ms).
    #[arg(long, default_value_t = 30_000)]
    header_timeout_ms: u64,
}

impl ServeArgs {
    fn limits(&self) -> ServeLimits {
        ServeLimits {
            max_connections: self.max_connections,
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            ..ServeLimits::default()
        }
    }
}

#[derive(Args)]
struct AggregatorArgs {
    #[command(flatten)]
    conn: Connection,
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// PEM certificate chain of this server.
    #[arg(long)]
    cert: PathBuf,
    /// PEM private key of this server.
    #[arg(long)]
    key: PathBuf,
    /// File holding the nodes' shared secret (what the aggregator presents to them).
    #[arg(long)]
    admin_token_file: PathBuf,
    /// File holding the analyst's bearer token (what callers of this server present).
    #[arg(long)]
    analyst_token_file: PathBuf,
    /// The aggregator's SQLite database (the default store).
    #[arg(long, required_unless_present = "store", conflicts_with = "store")]
    db: Option<PathBuf>,
    /// Keep rounds, charges and jobs in this PostgreSQL database (postgres://user@host:port/db)
    /// instead of --db; aggregator processes given the same database share them.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Privacy budget ε of the aggregator's accountant.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    budget_epsilon: f64,
    /// Privacy budget δ.
    #[arg(long, default_value_t = 1e-5, allow_hyphen_values = true)]
    budget_delta: f64,
    /// How often open rounds are checked (ms).
    #[arg(long, default_value_t = 200)]
    poll_ms: u64,
    /// How long an aggregator holds a closing round's release lease between renewals (ms);
    /// with --store shared by several aggregators, a dead holder's round is taken over after it.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(300..))]
    release_lease_ms: u64,
    /// How long an aggregator holds a job's driver lease between renewals (ms); with --store
    /// shared by several aggregators, a dead driver's job is taken over after it.
    #[arg(long, default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(300..))]
    job_lease_ms: u64,
    #[command(flatten)]
    serve: ServeArgs,
}

/// How an analyst's job reaches the aggregator server, and how its clients upload.
#[derive(Args)]
struct AnalystConnection {
    /// The aggregator server's base URL.
    #[arg(long)]
    aggregator: String,
    /// PEM CA certificate the aggregator's and the nodes' certificates chain to.
    #[arg(long)]
    ca: PathBuf,
    /// File holding the analyst's bearer token.
    #[arg(long)]
    analyst_token_file: PathBuf,
    /// Clients uploading at the same time.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Seconds the clients get to upload in each round.
    #[arg(long, default_value_t = 600)]
    upload_secs: u64,
    /// Added to the job's own round ids (blr: 1, 2; train: 0, 1, …) on the aggregator, whose ids
    /// must be distinct across jobs.
    #[arg(long, default_value_t = 0)]
    round_offset: u64,
}

impl AnalystConnection {
    /// The transport of the job's rounds, and M (the aggregator's node count).
    async fn transport(&self) -> Result<(dca_service::network_fit::NetworkTransport, u16)> {
        let http = tls::http_client(&read(&self.ca, "--ca")?, 64, Duration::from_secs(60))?;
        let mut transport = dca_service::network_fit::NetworkTransport::new(
            tokio::runtime::Handle::current(),
            http,
            self.aggregator.trim_end_matches('/').to_string(),
            secret(&self.analyst_token_file, "--analyst-token-file")?,
        );
        transport.concurrency = self.concurrency;
        transport.upload_window = Duration::from_secs(self.upload_secs);
        transport.round_offset = self.round_offset;
        let m = u16::try_from(transport.node_list().await?.nodes.len())
            .map_err(|_| Error::InvalidSpec("too many nodes".into()))?;
        Ok((transport, m))
    }
}

#[derive(Args)]
struct BlrArgs {
    #[command(flatten)]
    analyst: AnalystConnection,
    /// Numeric CSV with a header row; every row is one client.
    #[arg(long, default_value = "examples/data/diabetes.csv")]
    data: PathBuf,
    /// Target column.
    #[arg(long, default_value = "target")]
    target: String,
    /// Public bounds schema (`column,lo,hi` per column, public knowledge, not computed from the
    /// rows) that scales every column; default: `<data stem>.bounds.csv` beside `--data`.
    #[arg(long)]
    bounds: Option<PathBuf>,
    /// ε of the whole fit (both rounds).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    epsilon: f64,
    /// δ of the whole fit.
    #[arg(long, default_value_t = 1e-5, allow_hyphen_values = true)]
    delta: f64,
    /// T: clients that may drop out or collude.
    #[arg(long, default_value_t = 2)]
    max_dropped: usize,
    /// full or seed.
    #[arg(long, default_value = "seed")]
    mode: String,
    /// ALL randomness (noise, masks, search) from this seed — INSECURE, anyone knowing it can
    /// unmask; for reproducibility only. Also runs the same fit in one process and checks that
    /// the released statistics are bit-identical.
    #[arg(long)]
    insecure_seed: Option<u64>,
}

#[derive(Args)]
struct TrainArgs {
    #[command(flatten)]
    analyst: AnalystConnection,
    /// Numeric CSV with a header row and a 0/1 label column; every row is one client.
    #[arg(long, default_value = "examples/data/digits_0_vs_8.csv")]
    data: PathBuf,
    /// Label column (0 or 1).
    #[arg(long, default_value = "label")]
    label: String,
    /// Public bound B on |feature|: rows are divided by B·√d, so ‖x‖ ≤ 1 (digits: 16).
    #[arg(long, default_value_t = 16.0)]
    feature_bound: f64,
    /// ε of the whole run (all iterations), accounted in Rényi DP.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    epsilon: f64,
    /// δ of the whole run.
    #[arg(long, default_value_t = 1e-5, allow_hyphen_values = true)]
    delta: f64,
    /// Iterations (one DCA round each); the noise multiplier is calibrated for them.
    #[arg(long, default_value_t = 20)]
    iterations: u64,
    /// Poisson sampling rate q (each client flips its own coin every iteration).
    #[arg(long, default_value_t = 0.2)]
    rate: f64,
    /// C: every gradient is clipped to this ℓ2 norm.
    #[arg(long, default_value_t = 1.0)]
    clip: f64,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 0.05)]
    learning_rate: f64,
    /// L2 regularisation λ.
    #[arg(long, default_value_t = 1e-2)]
    l2: f64,
    /// T: clients that may drop out or collude in a round.
    #[arg(long, default_value_t = 2)]
    max_dropped: usize,
    /// ALL randomness (noise, masks, sampling) from this seed — INSECURE, for reproducibility
    /// only. Also runs the same training in one process and checks that every iteration's
    /// release and the final parameters are bit-identical.
    #[arg(long)]
    insecure_seed: Option<u64>,
}

#[derive(Args, Clone)]
struct Connection {
    /// Node base URLs, comma-separated, in node order.
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<String>,
    /// PEM CA certificate the nodes' certificates chain to.
    #[arg(long)]
    ca: PathBuf,
}

#[derive(Args)]
struct RoundArgs {
    #[command(flatten)]
    conn: Connection,
    /// The round config file (`application/dpdist-round-config`, see docs/http-api.md).
    #[arg(long)]
    spec: PathBuf,
    /// File holding the aggregator's bearer token.
    #[arg(long)]
    admin_token_file: PathBuf,
    /// The aggregator's SQLite database (the default store).
    #[arg(long, required_unless_present = "store", conflicts_with = "store")]
    db: Option<PathBuf>,
    /// The aggregator's PostgreSQL database (postgres://user@host:port/db) instead of --db: the
    /// one an `aggregator --store` process keeps its rounds and charges in.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Privacy budget ε of the aggregator's accountant.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    budget_epsilon: f64,
    /// Privacy budget δ.
    #[arg(long, default_value_t = 1e-5, allow_hyphen_values = true)]
    budget_delta: f64,
}

#[derive(Subcommand)]
enum ClientCommand {
    /// Shard a vector, seal each share to its node, upload.
    Upload {
        #[command(flatten)]
        conn: Connection,
        /// The round config file, as `round create` writes it.
        #[arg(long)]
        spec: PathBuf,
        /// This client's id.
        #[arg(long)]
        client: u64,
        /// This client's bearer token.
        #[arg(long)]
        token: String,
        /// The vector, comma-separated.
        #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
        values: Vec<f64>,
        /// Derive this client's randomness from a fixed seed (as the in-process simulation
        /// does): INSECURE, anyone knowing the seed can unmask; for reproducibility only.
        #[arg(long)]
        insecure_seed: Option<u64>,
    },
}

#[derive(Subcommand)]
enum RoundCommand {
    /// Write a round configuration: fetches the nodes' public keys, hashes the tokens.
    Create {
        #[command(flatten)]
        round: RoundArgs,
        /// Numeric round id.
        #[arg(long)]
        round_number: u64,
        /// N.
        #[arg(long)]
        n_clients: usize,
        /// T.
        #[arg(long)]
        max_dropped: usize,
        /// d.
        #[arg(long)]
        dim: usize,
        /// |x| <= bound.
        #[arg(long)]
        bound: f64,
        /// full or seed.
        #[arg(long, default_value = "seed")]
        mode: String,
        /// ε of the round: σ is calibrated with the analytic Gaussian (dp-noise) for `--delta`
        /// and the ℓ2 sensitivity (`--l2-sensitivity`, default 2·bound·√dim), then split over the
        /// clients (each adds σ/√(N − T − 1)). The default is for replace-one neighbours (one
        /// client's vector replaced by another, N public), the relation `dpdist blr`, the
        /// learners and docs/src/privacy.md use; add/remove-one would need only bound·√dim.
        #[arg(long, allow_hyphen_values = true)]
        epsilon: Option<f64>,
        /// δ of the round (with `--epsilon`).
        #[arg(long, default_value_t = 1e-5, allow_hyphen_values = true)]
        delta: f64,
        /// σ of the released sum's noise, calibrated elsewhere (needs `--l2-sensitivity`).
        #[arg(long, allow_hyphen_values = true)]
        sigma: Option<f64>,
        /// ℓ2 sensitivity the σ is calibrated for (what the accountant charges).
        #[arg(long, allow_hyphen_values = true)]
        l2_sensitivity: Option<f64>,
        /// Release the EXACT sum without noise: NON-PRIVATE (marked so in every output).
        #[arg(long)]
        no_noise: bool,
        /// Seconds from now until the deadline.
        #[arg(long, default_value_t = 600)]
        deadline_secs: u64,
        /// File with one client token per line (N lines).
        #[arg(long)]
        tokens_file: PathBuf,
    },
    /// Print every node's status of the round.
    Status(RoundArgs),
    /// Close the round with the agreed set and release (once).
    Release(RoundArgs),
    /// Run the same round in one process (`simulate_round`, client i seeded from
    /// `--insecure-seed` derived at i, as `client upload --insecure-seed` does) and print its
    /// release: the reference a network run must equal bit for bit.
    Simulate {
        /// The round config file, as `round create` writes it.
        #[arg(long)]
        spec: PathBuf,
        /// One client per line, comma-separated values, line i = client i.
        #[arg(long)]
        values_file: PathBuf,
        /// The seed the clients used.
        #[arg(long)]
        insecure_seed: u64,
    },
}

fn read_spec(path: &Path) -> Result<RoundSpec> {
    dca_service::spec::decode_round_config(&read(path, "--spec")?)
        .map_err(|e| Error::InvalidSpec(format!("--spec {}: {e}", path.display())))
}

fn http(conn: &Connection) -> Result<reqwest::Client> {
    tls::http_client(&read(&conn.ca, "--ca")?, 64, Duration::from_secs(60))
}

fn aggregator(args: &RoundArgs) -> Result<Aggregator> {
    let budget = checked_budget(
        args.budget_epsilon,
        args.budget_delta,
        "--budget-epsilon/--budget-delta",
    )?;
    open_aggregator(
        args.store.as_deref(),
        args.db.as_deref(),
        &args.conn,
        &args.admin_token_file,
        budget,
    )
}

/// The aggregator on `--store URL` or `--db FILE`; a SQLite error names `--db` and its path
/// (a PostgreSQL error names the URL, without its password, already).
fn open_aggregator(
    store: Option<&str>,
    db: Option<&Path>,
    conn: &Connection,
    admin_token_file: &Path,
    budget: PrivacyLoss,
) -> Result<Aggregator> {
    let at = AggregatorStoreLocation::parse(store, db)?;
    Aggregator::open_at(
        &at,
        http(conn)?,
        conn.nodes.clone(),
        secret(admin_token_file, "--admin-token-file")?,
        budget,
    )
    .map_err(|e| match (&at, db) {
        (AggregatorStoreLocation::Sqlite(_), Some(db)) => at_path(e, "--db", db),
        _ => e,
    })
}

/// An I/O error that names the option and the path it was about.
fn io_at(e: std::io::Error, what: &str, path: &Path) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// A storage or I/O error of a store opened at `path`, naming the option and the path.
fn at_path(e: Error, what: &str, path: &Path) -> Error {
    match e {
        Error::Io(e) => io_at(e, what, path),
        Error::Storage(e) => Error::Io(std::io::Error::other(format!(
            "{what} {}: {e}",
            path.display()
        ))),
        other => other,
    }
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_at(e, what, path))
}

fn read_text(path: &Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| io_at(e, what, path))
}

fn secret(path: &Path, what: &str) -> Result<SecretString> {
    SecretString::read_file(path).map_err(|e| match e {
        Error::Io(e) => io_at(e, what, path),
        other => other,
    })
}

/// The server's TLS configuration from `--cert` and `--key`, errors naming both files.
fn server_tls(cert: &Path, key: &Path) -> Result<std::sync::Arc<rustls::ServerConfig>> {
    tls::server_config(&read(cert, "--cert")?, &read(key, "--key")?).map_err(|e| {
        Error::Tls(format!(
            "--cert {} / --key {}: {}",
            cert.display(),
            key.display(),
            e.to_string().trim_start_matches("TLS: ")
        ))
    })
}

fn print_json<T: serde::Serialize>(value: &T) {
    println!("{}", serde_json::to_string(value).unwrap_or_default());
}

/// Prints a JSON line about `round`; a round without noise gets `"privacy": "NON-PRIVATE: …"`.
fn print_round_json<T: serde::Serialize>(round: &Round, value: &T) {
    let mut value = serde_json::to_value(value).unwrap_or_default();
    if round.config.noise().is_none() {
        match value.as_object_mut() {
            Some(object) => {
                object.insert("privacy".into(), NON_PRIVATE_MARK.into());
            }
            None => value = serde_json::json!({ "privacy": NON_PRIVATE_MARK, "value": value }),
        }
    }
    print_json(&value);
}

/// The noise of `round create`: `Some((σ, Δ₂))`, or `None` for an explicit `--no-noise`. Checked
/// before anything is read or contacted.
fn round_noise(
    epsilon: Option<f64>,
    delta: f64,
    sigma: Option<f64>,
    l2_sensitivity: Option<f64>,
    no_noise: bool,
    bound: f64,
    dim: usize,
) -> Result<Option<(Option<f64>, Option<f64>)>> {
    let privacy = |e: dp_noise::Error| Error::InvalidSpec(e.to_string());
    match (epsilon, sigma, no_noise) {
        (None, None, false) => Err(Error::InvalidSpec(
            "round create needs a noise level: --epsilon E [--delta D] (σ calibrated with the \
             analytic Gaussian for ℓ2 sensitivity --l2-sensitivity, default 2·bound·√dim), or \
             --no-noise for an exact, NON-PRIVATE sum"
                .into(),
        )),
        (None, None, true) => Ok(None),
        (Some(_), Some(_), _) | (Some(_), _, true) | (_, Some(_), true) => Err(Error::InvalidSpec(
            "give only one of --epsilon, --sigma and --no-noise".into(),
        )),
        (Some(epsilon), None, false) => {
            let budget = limits::gaussian_budget(epsilon, delta).map_err(privacy)?;
            let l2 = match l2_sensitivity {
                Some(l2) => l2,
                // Replace-one (the neighbourhood used throughout): one client's vector, every
                // element in [−bound, bound], replaced by another.
                None => 2.0 * bound * (dim as f64).sqrt(),
            };
            let l2 = limits::sensitivity("l2_sensitivity", l2).map_err(privacy)?;
            let sigma =
                dp_noise::calibrate::gaussian_sigma_analytic(budget.epsilon, budget.delta, l2)
                    .map_err(privacy)?;
            eprintln!(
                "dpdist: σ = {sigma:.6} calibrated for (ε, δ) = ({}, {}), ℓ2 sensitivity {l2}{} \
                 (analytic Gaussian); each client adds σ/√(N − T − 1)",
                budget.epsilon,
                budget.delta,
                if l2_sensitivity.is_none() {
                    " (2·bound·√dim, replace-one neighbours)"
                } else {
                    ""
                }
            );
            Ok(Some((Some(sigma), Some(l2))))
        }
        (None, Some(sigma), false) => {
            let sigma = limits::sigma("sigma", sigma).map_err(privacy)?;
            let Some(l2) = l2_sensitivity else {
                return Err(Error::InvalidSpec(
                    "--sigma needs --l2-sensitivity (what the accountant charges)".into(),
                ));
            };
            let l2 = limits::sensitivity("l2_sensitivity", l2).map_err(privacy)?;
            Ok(Some((Some(sigma), Some(l2))))
        }
    }
}

/// The (ε, δ) of a job or a budget, checked by dp-noise's one validation before any work.
fn checked_budget(epsilon: f64, delta: f64, what: &str) -> Result<PrivacyLoss> {
    limits::gaussian_budget(epsilon, delta).map_err(|e| Error::InvalidSpec(format!("{what}: {e}")))
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Job(c) => cli_jobs::job(c).await,
        Command::Participant(a) => cli_jobs::participant(a).await,
        Command::Node(a) => {
            let tls = server_tls(&a.cert, &a.key)?;
            let store = dca_service::node::StoreLocation::parse(a.store.as_deref(), &a.data_dir)?;
            let options = NodeOptions {
                store: store.clone(),
                max_body: a.max_body,
                max_inflight_body: a.max_inflight_body,
                body_timeout: Duration::from_millis(a.body_timeout_ms),
                sum_lease: Duration::from_millis(a.sum_lease_ms),
                ..NodeOptions::new(
                    a.index,
                    a.data_dir.clone(),
                    secret(&a.admin_token_file, "--admin-token-file")?,
                )
            };
            let app = router(&options).map_err(|e| match &store {
                dca_service::node::StoreLocation::Postgres(_) => match e {
                    // Errors of the database name it already; the key file is in --data-dir.
                    Error::Io(e) => io_at(e, "--data-dir", &a.data_dir),
                    other => other,
                },
                dca_service::node::StoreLocation::Sqlite(_) => {
                    at_path(e, "--data-dir", &a.data_dir)
                }
            })?;
            let key = dca_service::node::load_or_create_key(&a.data_dir).map_err(|e| match e {
                Error::Io(e) => io_at(e, "--data-dir", &a.data_dir),
                other => other,
            })?;
            let listener = tokio::net::TcpListener::bind(&a.listen)
                .await
                .map_err(|e| io_at(e, "--listen", Path::new(&a.listen)))?;
            println!(
                "dpdist node {} listening on {} public_key={}",
                a.index,
                listener.local_addr()?,
                hex::encode(&key.public.to_bytes())
            );
            use std::io::Write as _;
            std::io::stdout().flush()?;
            serve_tls(listener, tls, app, a.serve.limits()).await
        }
        Command::Aggregator(a) => {
            let budget = checked_budget(
                a.budget_epsilon,
                a.budget_delta,
                "--budget-epsilon/--budget-delta",
            )?;
            let tls = server_tls(&a.cert, &a.key)?;
            let agg = open_aggregator(
                a.store.as_deref(),
                a.db.as_deref(),
                &a.conn,
                &a.admin_token_file,
                budget,
            )?
            .with_release_lease(Duration::from_millis(a.release_lease_ms))?
            .with_job_lease(Duration::from_millis(a.job_lease_ms))?;
            let app = dca_service::aggregator_server::router(
                agg,
                secret(&a.analyst_token_file, "--analyst-token-file")?.expose(),
                Duration::from_millis(a.poll_ms.max(10)),
            );
            let listener = tokio::net::TcpListener::bind(&a.listen)
                .await
                .map_err(|e| io_at(e, "--listen", Path::new(&a.listen)))?;
            println!(
                "dpdist aggregator listening on {} ({} nodes)",
                listener.local_addr()?,
                a.conn.nodes.len()
            );
            use std::io::Write as _;
            std::io::stdout().flush()?;
            serve_tls(listener, tls, app, a.serve.limits()).await
        }
        Command::Blr(a) => blr_job(a).await,
        Command::Train(a) => train_job(a).await,
        Command::Client(ClientCommand::Upload {
            conn,
            spec,
            client,
            token,
            values,
            insecure_seed,
        }) => {
            let token = SecretString::new(token);
            let round = read_spec(&spec)?.validate()?;
            if round.config.noise().is_none() {
                eprintln!(
                    "dpdist: client {client}: round {}: {NON_PRIVATE_MARK}",
                    round.spec.round
                );
            }
            let rng = match insecure_seed {
                Some(seed) => RngSource::InsecureFixedSeed(seed).derive(client),
                None => RngSource::Os,
            };
            dca_service::client::upload(
                &http(&conn)?,
                &round,
                &conn.nodes,
                client,
                token.expose(),
                &values,
                rng,
            )
            .await
        }
        Command::Round(RoundCommand::Create {
            round: a,
            round_number,
            n_clients,
            max_dropped,
            dim,
            bound,
            mode,
            epsilon,
            delta,
            sigma,
            l2_sensitivity,
            no_noise,
            deadline_secs,
            tokens_file,
        }) => {
            let noise = round_noise(epsilon, delta, sigma, l2_sensitivity, no_noise, bound, dim)?;
            let (sigma, l2_sensitivity) = noise.unwrap_or((None, None));
            if noise.is_none() {
                eprintln!("dpdist: round {round_number}: {NON_PRIVATE_MARK}");
            }
            let agg = aggregator(&a)?;
            // Only the hashes leave this block; the tokens' text is wiped.
            let token_hashes: Vec<String> =
                Zeroizing::new(read_text(&tokens_file, "--tokens-file")?)
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|t| hex::encode(&token_hash(t)))
                    .collect();
            let spec = RoundSpec {
                round: round_number,
                n_clients,
                n_nodes: u16::try_from(a.conn.nodes.len())
                    .map_err(|_| Error::InvalidSpec("too many nodes".into()))?,
                max_dropped,
                dim,
                bound,
                mode,
                noise_sigma_total: sigma,
                l2_sensitivity,
                frac_bits: None,
                deadline_unix_ms: dca_service::node::now_ms() + deadline_secs * 1000,
                node_keys: agg.node_keys().await?,
                client_token_sha256: token_hashes,
            };
            let round = agg.create_round(spec).await?;
            std::fs::write(&a.spec, round.config_bytes()?)
                .map_err(|e| io_at(e, "--spec", &a.spec))?;
            match round.config.noise() {
                Some(_) => println!("{}", round.id()),
                None => println!("{} {NON_PRIVATE_MARK}", round.id()),
            }
            Ok(())
        }
        Command::Round(RoundCommand::Status(a)) => {
            let agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            print_round_json(&round, &agg.statuses(&round).await?);
            Ok(())
        }
        Command::Round(RoundCommand::Simulate {
            spec,
            values_file,
            insecure_seed,
        }) => {
            let round = read_spec(&spec)?.validate()?;
            let rows = read_text(&values_file, "--values-file")?
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| {
                    l.split(',')
                        .map(|v| {
                            v.trim()
                                .parse::<f64>()
                                .map_err(|e| Error::InvalidSpec(format!("{values_file:?}: {e}")))
                        })
                        .collect::<Result<Vec<f64>>>()
                })
                .collect::<Result<Vec<_>>>()?;
            let release = fixedpoint_shares::simulate_round(
                &round.config,
                &rows,
                &[],
                RngSource::InsecureFixedSeed(insecure_seed),
            )?;
            print_round_json(
                &round,
                &serde_json::json!({
                    "id": round.id(),
                    "round": round.spec.round,
                    "sum": release.sum,
                    "sum_units": release.sum_units,
                    "frac_bits": release.frac_bits,
                    "noise_sigma_released": release.noise_sigma_released,
                }),
            );
            Ok(())
        }
        Command::Round(RoundCommand::Release(a)) => {
            let agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            print_round_json(&round, &agg.release(&round).await?);
            Ok(())
        }
    }
}

async fn blr_job(a: BlrArgs) -> Result<()> {
    use dca_service::network_fit::{dca_blr_config, fit_over_network, prepare_csv};
    let mode = match a.mode.as_str() {
        "seed" => fixedpoint_shares::ShareMode::Seed,
        "full" => fixedpoint_shares::ShareMode::Full,
        other => return Err(Error::InvalidSpec(format!("--mode {other}: seed or full"))),
    };
    let budget = checked_budget(a.epsilon, a.delta, "--epsilon/--delta")?;
    let bounds_path = a
        .bounds
        .clone()
        .unwrap_or_else(|| blr::public_bounds::schema_path(&a.data));
    let prepared = prepare_csv(
        &read_text(&a.data, "--data")?,
        &a.target,
        &read_text(&bounds_path, "--bounds")?,
    )
    .map_err(|e| {
        Error::InvalidSpec(format!(
            "--data {} with --bounds {}: {e}",
            a.data.display(),
            bounds_path.display()
        ))
    })?;
    let (x, y, n, d, clipped) = (
        prepared.x,
        prepared.y,
        prepared.n,
        prepared.d,
        prepared.clipped,
    );
    let (transport, m) = a.analyst.transport().await?;
    let config = dca_blr_config(d, m, a.max_dropped, mode, budget);
    let rng = match a.insecure_seed {
        Some(seed) => RngSource::InsecureFixedSeed(seed),
        None => RngSource::Os,
    };
    eprintln!(
        "{}: columns scaled by the public bounds in {} (no privacy cost){}",
        a.data.display(),
        bounds_path.display(),
        if clipped > 0 {
            format!(", {clipped} value(s) clipped to their public range")
        } else {
            String::new()
        }
    );
    eprintln!(
        "{}: {n} clients, d = {d}; Alg. 2 over the network on M = {m} nodes, T = {}, {} mode, (ε, δ) = ({}, {}){}",
        a.data.display(),
        a.max_dropped,
        a.mode,
        a.epsilon,
        a.delta,
        if a.insecure_seed.is_some() {
            ", INSECURE fixed seed"
        } else {
            ""
        }
    );
    let start = std::time::Instant::now();
    let (fit, transport) =
        fit_over_network(transport, x.clone(), y.clone(), d, config.clone(), rng).await?;
    let wall = start.elapsed().as_secs_f64();
    let std = fit.std.as_ref();
    let omega = fit.thresholds.as_ref();
    let pred = blr::predict(&fit.posterior.mean, &x, n)?;
    let np = blr::fit_non_private(&x, &y, n, d, blr::Prior::default())?;
    let np_pred = blr::predict(&np.mean, &x, n)?;
    let stats_noise = transport
        .releases
        .last()
        .map_or(0.0, |r| r.noise_sigma_released);
    let warning = blr::noise_dominance_warning(&fit.stats, stats_noise, n, a.epsilon);
    if let Some(w) = &warning {
        eprintln!("dpdist: WARNING: {w}");
    }
    let mut report = serde_json::json!({
        "clients": n,
        "dim": d,
        "nodes": m,
        "wall_seconds": wall,
        "warning": warning,
        "rounds": transport.releases.iter().map(|r| serde_json::json!({
            "round": r.round, "id": r.id, "clients": r.clients.len(),
            "noise_sigma_released": r.noise_sigma_released,
            "aggregator_spent_epsilon": r.spent_epsilon,
        })).collect::<Vec<_>>(),
        "std_x": std.map(|s| s.x.clone()),
        "std_y": std.map(|s| s.y),
        "omega_x": omega.map(|o| o.omega_x),
        "omega_y": omega.map(|o| o.omega_y),
        "bounds_x": fit.bounds_x,
        "bound_y": fit.bound_y,
        "posterior_mean": fit.posterior.mean,
        "fit_spent_epsilon": fit.spent.epsilon,
        "fit_spent_delta": fit.spent.delta,
        "in_sample_mae": blr::mae(&y, &pred)?,
        "in_sample_mae_non_private": blr::mae(&y, &np_pred)?,
    });
    let mut identical = true;
    if a.insecure_seed.is_some() {
        let (xl, yl) = (x.clone(), y.clone());
        let local = tokio::task::spawn_blocking(move || blr::fit(&xl, &yl, n, d, &config, rng))
            .await
            .map_err(|e| Error::Http(format!("in-process fit: {e}")))??;
        let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        identical = bits(&local.stats.to_flat(false)) == bits(&fit.stats.to_flat(false))
            && local.std.as_ref().map(|s| bits(&s.x)) == std.map(|s| bits(&s.x))
            && bits(&local.posterior.mean) == bits(&fit.posterior.mean);
        report["statistics_bit_identical_to_in_process"] = identical.into();
    }
    print_report(
        &report,
        identical,
        "the network fit's statistics differ from the in-process fit's",
    )
}

async fn train_job(a: TrainArgs) -> Result<()> {
    use dca_learning::{
        ClientSampling, Model, Optimizer, Privacy, Records, Trainer, TrainerConfig,
        calibrate_noise_multiplier, logistic_predict_proba,
    };
    use dca_service::network_train::train_over_network;

    let budget = checked_budget(a.epsilon, a.delta, "--epsilon/--delta")?;
    let table = blr::data::Table::parse_csv(&read_text(&a.data, "--data")?)
        .map_err(|e| Error::InvalidSpec(format!("--data {}: {e}", a.data.display())))?;
    let (mut x, y, d, _) = table.split_target(&a.label)?;
    if let Some(row) = y.iter().position(|&v| v != 0.0 && v != 1.0) {
        return Err(Error::InvalidSpec(format!(
            "{}: data row {}: label {} is not 0 or 1",
            a.data.display(),
            row + 1,
            y[row]
        )));
    }
    if !(a.feature_bound.is_finite() && a.feature_bound > 0.0) {
        return Err(Error::InvalidSpec(
            "--feature-bound must be finite and > 0".into(),
        ));
    }
    // A per-record map with a public constant: costs no privacy, keeps ‖x‖ ≤ 1 for in-range rows.
    let divisor = a.feature_bound * (d as f64).sqrt();
    x.iter_mut().for_each(|v| *v /= divisor);
    let n = y.len();
    let records = Records::new(x.clone(), d, y.clone())?;

    let (transport, m) = a.analyst.transport().await?;
    let mut config = TrainerConfig {
        model: Model::Logistic { l2: a.l2 },
        sampling: ClientSampling::Poisson { rate: a.rate },
        clip_norm: a.clip,
        privacy: Privacy::NonPrivate,
        optimizer: Optimizer::adam(a.learning_rate),
        n_nodes: m,
        max_dropped: a.max_dropped,
    };
    let z = calibrate_noise_multiplier(&config, n, d, budget, a.iterations)?;
    config.privacy = Privacy::Private {
        budget,
        noise_multiplier: z,
    };
    let rng = match a.insecure_seed {
        Some(seed) => RngSource::InsecureFixedSeed(seed),
        None => RngSource::Os,
    };
    let trainer = Trainer::new(config, n, d, rng)?;
    eprintln!(
        "{}: {n} clients, d = {d}; {} DP-SGD iterations over the network on M = {m} nodes, T = {}, \
         q = {}, C = {}, noise multiplier z = {z:.3}, (ε, δ) = ({}, {}){}",
        a.data.display(),
        a.iterations,
        a.max_dropped,
        a.rate,
        a.clip,
        a.epsilon,
        a.delta,
        if a.insecure_seed.is_some() {
            ", INSECURE fixed seed"
        } else {
            ""
        }
    );
    let start = std::time::Instant::now();
    let run = train_over_network(transport, trainer.clone(), records.clone(), a.iterations).await?;
    let wall = start.elapsed().as_secs_f64();
    let accuracy = |w: &[f64]| -> Result<f64> {
        let p = logistic_predict_proba(w, &x)?;
        let right = p
            .iter()
            .zip(&y)
            .filter(|(p, y)| (**p >= 0.5) == (**y == 1.0))
            .count();
        Ok(right as f64 / n as f64)
    };
    let spent = run.trainer.spent();
    let mut report = serde_json::json!({
        "clients": n,
        "dim": d,
        "nodes": m,
        "noise_multiplier": z,
        "iterations": run.steps.len(),
        "wall_seconds": wall,
        "seconds_per_iteration": wall / run.steps.len().max(1) as f64,
        "rounds": run.transport.releases.iter().map(|r| serde_json::json!({
            "round": r.round, "clients": r.clients.len(),
            "noise_sigma_released": r.noise_sigma_released,
            "aggregator_spent_epsilon": r.spent_epsilon,
        })).collect::<Vec<_>>(),
        "weights": run.trainer.params(),
        "spent_epsilon": spent.map(|s| s.epsilon),
        "spent_delta": spent.map(|s| s.delta),
        "in_sample_accuracy": accuracy(run.trainer.params())?,
    });
    let mut identical = true;
    if a.insecure_seed.is_some() {
        let done = run.steps.len();
        let local = tokio::task::spawn_blocking(move || {
            let mut local = trainer;
            (0..done)
                .map(|_| local.step(&records, &[]))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map(|steps| (steps, local))
        })
        .await
        .map_err(|e| Error::Http(format!("in-process training: {e}")))?;
        let (steps, local) = local?;
        let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        identical = steps.len() == run.steps.len()
            && steps
                .iter()
                .zip(&run.steps)
                .all(|(l, r)| bits(&l.released_sum) == bits(&r.released_sum))
            && bits(local.params()) == bits(run.trainer.params());
        report["releases_bit_identical_to_in_process"] = identical.into();
    }
    print_report(
        &report,
        identical,
        "the network training's releases differ from the in-process trainer's",
    )
}

/// Prints a job's JSON report; a job whose network run differed from the in-process one fails.
fn print_report(report: &serde_json::Value, identical: bool, mismatch: &str) -> Result<()> {
    println!(
        "{}",
        serde_json::to_string_pretty(report).unwrap_or_default()
    );
    if identical {
        Ok(())
    } else {
        Err(Error::InvalidSpec(mismatch.into()))
    }
}

fn main() -> ExitCode {
    let args = match dca_service::config_file::merge_config_file(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("dpdist: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cli = Cli::parse_from(args);
    // Logs go to stderr (stdout carries the banner and the JSON results); RUST_LOG filters,
    // DPDIST_LOG_FORMAT=json makes one JSON object per line.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    if std::env::var("DPDIST_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dpdist: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let e = e.to_string();
            eprintln!("dpdist: {e}{}", hint(&e));
            ExitCode::FAILURE
        }
    }
}

/// How to fix an error whose message alone does not say it.
fn hint(message: &str) -> &'static str {
    if message.contains("already used with another configuration")
        || message.contains("round number exists with another configuration")
    {
        "\nhint: round numbers are unique per aggregator. `dpdist blr` and `dpdist train` number \
         their rounds from --round-offset (blr: offset + 1, offset + 2; train: offset + 0, 1, …): \
         pass a --round-offset past the numbers used before; `dpdist round create` takes another \
         --round-number"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::hint;

    #[test]
    fn a_reused_round_number_says_how_to_fix_it() {
        let aggregator = "invalid round spec: round number 2 was already used with another \
                          configuration (round 3fa2)";
        assert!(hint(aggregator).contains("--round-offset"));
        assert!(hint(aggregator).contains("--round-number"));
        let node = "HTTP: 409: this round number exists with another configuration";
        assert!(hint(node).contains("--round-offset"));
        assert_eq!(hint("TLS: no certificate"), "");
    }
}
