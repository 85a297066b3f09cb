//! `dpdist aggregator`: run the aggregator server. Its options are all in [`AggregatorArgs`].

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dca_service::Result;
use dca_service::http::serve::serve_tls;

use crate::{
    Connection, ServeArgs, bind, checked_budget, open_aggregator, print_banner, secret, server_tls,
};

#[derive(Args)]
pub struct AggregatorArgs {
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
    /// With --store: the most connections this process keeps open to the database (at least
    /// 3); calls beyond wait for a free one.
    #[arg(long, default_value_t = dca_service::DEFAULT_STORE_POOL_SIZE,
          value_parser = clap::value_parser!(u32).range(i64::from(dca_service::MIN_STORE_POOL_SIZE)..))]
    store_pool_size: u32,
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

pub async fn run(a: AggregatorArgs) -> Result<()> {
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
        a.store_pool_size,
    )?
    .with_release_lease(Duration::from_millis(a.release_lease_ms))?
    .with_job_lease(Duration::from_millis(a.job_lease_ms))?;
    let app = dca_service::aggregator::server::router(
        agg,
        secret(&a.analyst_token_file, "--analyst-token-file")?.expose(),
        Duration::from_millis(a.poll_ms.max(10)),
    );
    let listener = bind(&a.listen).await?;
    print_banner(&format!(
        "dpdist aggregator listening on {} ({} nodes)",
        listener.local_addr()?,
        a.conn.nodes.len()
    ))?;
    serve_tls(listener, tls, app, a.serve.limits()).await
}
