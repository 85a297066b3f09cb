//! `dpdist`: run a DCA party as a process. `dpdist node`, `dpdist aggregator`, `dpdist client
//! upload`, `dpdist round create|status|release`. See docs/http-api.md.
//!
//! This file parses the command line and dispatches; each subcommand lives in its own module
//! under `cli/`, and the helpers they share (reading the files options name, errors naming the
//! option) are here.

/// The subcommands, one module each. Private to the binary: the library is the parties, this
/// is only how a command line reaches them.
mod cli {
    pub mod aggregator;
    pub mod analyst;
    pub mod blr;
    pub mod client;
    pub mod job;
    pub mod node;
    pub mod participant;
    pub mod round;
    pub mod round_noise;
    pub mod train;
}

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use dca_service::aggregator::{Aggregator, AggregatorStoreLocation};
use dca_service::http::serve::ServeLimits;
use dca_service::http::tls;
use dca_service::protocol::spec::RoundSpec;
use dca_service::secret::SecretString;
use dca_service::{Error, Result};
use dp_noise::{PrivacyLoss, limits};

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
    Node(cli::node::NodeArgs),
    /// Run the aggregator server: the analyst creates rounds on it; it closes and releases (or
    /// aborts, telling the nodes) each round at its deadline or once every client reached every
    /// node, and serves the releases.
    Aggregator(cli::aggregator::AggregatorArgs),
    /// Alg. 2 over the network: the DP std round and the statistics round on the aggregator
    /// and its nodes (the N clients are tasks of this process), then the BLR fit.
    Blr(cli::blr::BlrArgs),
    /// Iterative private logistic regression over the network (DCA paper Sec. 4.2): every
    /// iteration is one DCA round of clipped gradients on the aggregator and its nodes (the N
    /// clients are tasks of this process), DP-SGD with Adam, an RDP accountant.
    Train(cli::train::TrainArgs),
    /// Client commands.
    #[command(subcommand)]
    Client(cli::client::ClientCommand),
    /// Round commands (the aggregator's side, one step at a time).
    #[command(subcommand)]
    Round(cli::round::RoundCommand),
    /// Jobs on the aggregator, the analyst's side (no data file): the aggregator runs the
    /// job's rounds with the participants on its roster.
    #[command(subcommand)]
    Job(cli::job::JobCommand),
    /// Take part in jobs as a data holder: reads only its own rows, answers each job by its
    /// policy, keeps its own accountant, sends only sealed shares.
    Participant(cli::participant::ParticipantArgs),
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Node(a) => cli::node::run(a).await,
        Command::Aggregator(a) => cli::aggregator::run(a).await,
        Command::Blr(a) => cli::blr::run(a).await,
        Command::Train(a) => cli::train::run(a).await,
        Command::Client(c) => cli::client::run(c).await,
        Command::Round(c) => cli::round::run(c).await,
        Command::Job(c) => cli::job::run(c).await,
        Command::Participant(a) => cli::participant::run(a).await,
    }
}

/// Connection limits of a server (node or aggregator).
#[derive(Args)]
struct ServeArgs {
    /// Connections served at once; more are answered 503 (capped below the open-file limit).
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Connections open at once from one peer IP address; more from it are closed at once
    /// (so that one host cannot hold every connection slot).
    #[arg(long, default_value_t = dca_service::http::serve::DEFAULT_MAX_CONNECTIONS_PER_PEER)]
    max_connections_per_peer: usize,
    /// Time a client has to send request headers; also how long an idle connection stays
    /// open (ms).
    #[arg(long, default_value_t = 30_000)]
    header_timeout_ms: u64,
}

impl ServeArgs {
    fn limits(&self) -> ServeLimits {
        ServeLimits {
            max_connections: self.max_connections,
            max_connections_per_peer: self.max_connections_per_peer,
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            ..ServeLimits::default()
        }
    }
}

/// How the aggregator's side reaches the nodes.
#[derive(Args, Clone)]
struct Connection {
    /// Node base URLs, comma-separated, in node order.
    #[arg(long, value_delimiter = ',')]
    nodes: Vec<String>,
    /// PEM CA certificate the nodes' certificates chain to.
    #[arg(long)]
    ca: PathBuf,
}

fn read_spec(path: &Path) -> Result<RoundSpec> {
    dca_service::protocol::spec::decode_round_config(&read(path, "--spec")?)
        .map_err(|e| Error::InvalidSpec(format!("--spec {}: {e}", path.display())))
}

fn http(conn: &Connection) -> Result<reqwest::Client> {
    https_client(&conn.ca, 64)
}

/// An HTTPS client trusting the CA certificate in `--ca` (`pool` idle connections per host).
fn https_client(ca: &Path, pool: usize) -> Result<reqwest::Client> {
    tls::http_client(&read(ca, "--ca")?, pool, Duration::from_secs(60))
}

/// The aggregator on `--store URL` or `--db FILE`; a SQLite error names `--db` and its path
/// (a PostgreSQL error names the URL, without its password, already).
fn open_aggregator(
    store: Option<&str>,
    db: Option<&Path>,
    conn: &Connection,
    admin_token_file: &Path,
    budget: PrivacyLoss,
    pool_size: u32,
) -> Result<Aggregator> {
    let at = AggregatorStoreLocation::parse(store, db)?.with_pool_size(pool_size)?;
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

/// The (ε, δ) of a job or a budget, checked by dp-noise's one validation before any work.
fn checked_budget(epsilon: f64, delta: f64, what: &str) -> Result<PrivacyLoss> {
    limits::gaussian_budget(epsilon, delta).map_err(|e| Error::InvalidSpec(format!("{what}: {e}")))
}

/// Binds a server's `--listen` address, an error naming it.
async fn bind(listen: &str) -> Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| io_at(e, "--listen", Path::new(listen)))
}

/// Prints a server's banner and flushes it: whoever started the process reads the address from
/// it before the first request.
fn print_banner(banner: &str) -> Result<()> {
    use std::io::Write as _;
    println!("{banner}");
    std::io::stdout().flush()?;
    Ok(())
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
