//! `dpdist node`: run a compute node.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dca_service::http::serve::serve_tls;
use dca_service::node::{NodeOptions, StoreLocation, read_verify_secret, router};
use dca_service::{Error, Result, hex};

use crate::{ServeArgs, at_path, bind, io_at, print_banner, secret, server_tls};

#[derive(Args)]
pub struct NodeArgs {
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
    /// With --store: the most connections this process keeps open to the database (at least
    /// 3; the store's writer holds one); reads and lookups beyond wait for a free one.
    #[arg(long, default_value_t = dca_service::DEFAULT_STORE_POOL_SIZE,
          value_parser = clap::value_parser!(u32).range(i64::from(dca_service::MIN_STORE_POOL_SIZE)..))]
    store_pool_size: u32,
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
    /// File holding the node operators' shared verify secret (at least 32 characters, the
    /// same on every node): needed to join rounds with a validity mode.
    #[arg(long)]
    verify_secret_file: Option<PathBuf>,
    #[command(flatten)]
    serve: ServeArgs,
}

pub async fn run(a: NodeArgs) -> Result<()> {
    let tls = server_tls(&a.cert, &a.key)?;
    let store =
        StoreLocation::parse(a.store.as_deref(), &a.data_dir)?.with_pool_size(a.store_pool_size)?;
    let options = NodeOptions {
        store: store.clone(),
        max_body: a.max_body,
        max_inflight_body: a.max_inflight_body,
        body_timeout: Duration::from_millis(a.body_timeout_ms),
        sum_lease: Duration::from_millis(a.sum_lease_ms),
        verify_secret: a
            .verify_secret_file
            .as_deref()
            .map(|path| {
                read_verify_secret(path).map_err(|e| match e {
                    Error::Io(e) => io_at(e, "--verify-secret-file", path),
                    other => other,
                })
            })
            .transpose()?,
        ..NodeOptions::new(
            a.index,
            a.data_dir.clone(),
            secret(&a.admin_token_file, "--admin-token-file")?,
        )
    };
    let app = router(&options).map_err(|e| match &store {
        StoreLocation::Postgres(_) => match e {
            // Errors of the database name it already; the key file is in --data-dir.
            Error::Io(e) => io_at(e, "--data-dir", &a.data_dir),
            other => other,
        },
        StoreLocation::Sqlite(_) => at_path(e, "--data-dir", &a.data_dir),
    })?;
    let key = dca_service::node::load_or_create_key(&a.data_dir).map_err(|e| match e {
        Error::Io(e) => io_at(e, "--data-dir", &a.data_dir),
        other => other,
    })?;
    let listener = bind(&a.listen).await?;
    print_banner(&format!(
        "dpdist node {} listening on {} public_key={}",
        a.index,
        listener.local_addr()?,
        hex::encode(&key.public.to_bytes())
    ))?;
    serve_tls(listener, tls, app, a.serve.limits()).await
}
