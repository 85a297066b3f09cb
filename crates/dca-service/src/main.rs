//! `dpdist`: run a DCA party as a process. `dpdist node`, `dpdist aggregator`, `dpdist client
//! upload`, `dpdist round create|status|release`. See docs/http-api.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use dca_service::aggregator::Aggregator;
use dca_service::node::{NodeOptions, router, serve_tls};
use dca_service::spec::{RoundSpec, token_hash};
use dca_service::{Error, Result, hex, tls};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;

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
    /// Run the aggregator for one round: create it on the nodes, wait until every client
    /// uploaded or the deadline passed, release, print the release as JSON.
    Aggregator(RoundArgs),
    /// Client commands.
    #[command(subcommand)]
    Client(ClientCommand),
    /// Round commands (the aggregator's side, one step at a time).
    #[command(subcommand)]
    Round(RoundCommand),
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
    /// Directory of node.sqlite and node.key.
    #[arg(long)]
    data_dir: PathBuf,
    /// File holding the aggregator's bearer token.
    #[arg(long)]
    admin_token_file: PathBuf,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    max_body: usize,
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
    /// The round configuration (JSON, see docs/http-api.md).
    #[arg(long)]
    spec: PathBuf,
    /// File holding the aggregator's bearer token.
    #[arg(long)]
    admin_token_file: PathBuf,
    /// The aggregator's database.
    #[arg(long)]
    db: PathBuf,
    /// Privacy budget ε of the aggregator's accountant.
    #[arg(long, default_value_t = 1.0)]
    budget_epsilon: f64,
    /// Privacy budget δ.
    #[arg(long, default_value_t = 1e-5)]
    budget_delta: f64,
}

#[derive(Subcommand)]
enum ClientCommand {
    /// Shard a vector, seal each share to its node, upload.
    Upload {
        #[command(flatten)]
        conn: Connection,
        /// The round configuration (JSON).
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
        /// σ of the released sum's noise (omit for an exact sum).
        #[arg(long)]
        sigma: Option<f64>,
        /// ℓ2 sensitivity the σ is calibrated for.
        #[arg(long)]
        l2_sensitivity: Option<f64>,
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
        /// The round configuration (JSON).
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

fn read_trimmed(path: &PathBuf) -> Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

fn read_spec(path: &PathBuf) -> Result<RoundSpec> {
    serde_json::from_slice(&std::fs::read(path)?).map_err(|e| Error::InvalidSpec(e.to_string()))
}

fn http(conn: &Connection) -> Result<reqwest::Client> {
    tls::http_client(&std::fs::read(&conn.ca)?, 64, Duration::from_secs(60))
}

fn aggregator(args: &RoundArgs) -> Result<Aggregator> {
    Aggregator::open(
        &args.db,
        http(&args.conn)?,
        args.conn.nodes.clone(),
        read_trimmed(&args.admin_token_file)?,
        PrivacyLoss {
            epsilon: args.budget_epsilon,
            delta: args.budget_delta,
        },
    )
}

fn print_json<T: serde::Serialize>(value: &T) {
    println!("{}", serde_json::to_string(value).unwrap_or_default());
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Node(a) => {
            let tls = tls::server_config(&std::fs::read(&a.cert)?, &std::fs::read(&a.key)?)?;
            let options = NodeOptions {
                index: a.index,
                data_dir: a.data_dir.clone(),
                admin_token: read_trimmed(&a.admin_token_file)?,
                max_body: a.max_body,
            };
            let app = router(&options)?;
            let key = dca_service::node::load_or_create_key(&a.data_dir)?;
            let listener = tokio::net::TcpListener::bind(&a.listen).await?;
            println!(
                "dpdist node {} listening on {} public_key={}",
                a.index,
                listener.local_addr()?,
                hex::encode(&key.public.to_bytes())
            );
            use std::io::Write as _;
            std::io::stdout().flush()?;
            serve_tls(listener, tls, app).await
        }
        Command::Aggregator(a) => {
            let mut agg = aggregator(&a)?;
            let round = agg.create_round(read_spec(&a.spec)?).await?;
            eprintln!(
                "round {} created on {} nodes",
                round.id(),
                a.conn.nodes.len()
            );
            agg.wait_for_uploads(&round, Duration::from_millis(200))
                .await?;
            print_json(&agg.release(&round).await?);
            Ok(())
        }
        Command::Client(ClientCommand::Upload {
            conn,
            spec,
            client,
            token,
            values,
            insecure_seed,
        }) => {
            let round = read_spec(&spec)?.validate()?;
            let rng = match insecure_seed {
                Some(seed) => RngSource::InsecureFixedSeed(seed).derive(client),
                None => RngSource::Os,
            };
            dca_service::client::upload(
                &http(&conn)?,
                &round,
                &conn.nodes,
                client,
                &token,
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
            sigma,
            l2_sensitivity,
            deadline_secs,
            tokens_file,
        }) => {
            let agg = aggregator(&a)?;
            let tokens: Vec<String> = std::fs::read_to_string(&tokens_file)?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
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
                client_token_sha256: tokens.iter().map(|t| hex::encode(&token_hash(t))).collect(),
            };
            let round = agg.create_round(spec).await?;
            std::fs::write(&a.spec, round.spec.canonical_json())?;
            println!("{}", round.id());
            Ok(())
        }
        Command::Round(RoundCommand::Status(a)) => {
            let agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            print_json(&agg.statuses(&round).await?);
            Ok(())
        }
        Command::Round(RoundCommand::Simulate {
            spec,
            values_file,
            insecure_seed,
        }) => {
            let round = read_spec(&spec)?.validate()?;
            let rows = std::fs::read_to_string(&values_file)?
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
            print_json(&serde_json::json!({
                "id": round.id(),
                "round": round.spec.round,
                "sum": release.sum,
                "sum_units": release.sum_units,
                "frac_bits": release.frac_bits,
                "noise_sigma_released": release.noise_sigma_released,
            }));
            Ok(())
        }
        Command::Round(RoundCommand::Release(a)) => {
            let mut agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            print_json(&agg.release(&round).await?);
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
            eprintln!("dpdist: {e}");
            ExitCode::FAILURE
        }
    }
}
