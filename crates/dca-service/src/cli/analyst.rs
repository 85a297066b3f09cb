//! What `dpdist blr` and `dpdist train` share: how the analyst reaches the aggregator server,
//! and how a run is reported.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dca_service::analyst::fit::NetworkTransport;
use dca_service::{Error, Result};

use crate::{https_client, secret};

/// How an analyst's job reaches the aggregator server, and how its clients upload.
#[derive(Args)]
pub struct AnalystConnection {
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
    pub async fn transport(&self) -> Result<(NetworkTransport, u16)> {
        let http = https_client(&self.ca, 64)?;
        let mut transport = NetworkTransport::new(
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

/// Prints a job's JSON report; a job whose network run differed from the in-process one fails.
pub fn print_report(report: &serde_json::Value, identical: bool, mismatch: &str) -> Result<()> {
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

/// What a run's first line says about its randomness.
pub fn seed_note(insecure_seed: Option<u64>) -> &'static str {
    if insecure_seed.is_some() {
        ", INSECURE fixed seed"
    } else {
        ""
    }
}

/// The report's `rounds`: each round the aggregator released.
pub fn rounds_report(
    releases: &[dca_service::protocol::messages::PublishedRelease],
) -> serde_json::Value {
    releases
        .iter()
        .map(|r| {
            serde_json::json!({
                "round": r.round, "id": r.id, "clients": r.clients.len(),
                "noise_sigma_released": r.noise_sigma_released,
                "aggregator_spent_epsilon": r.spent_epsilon,
            })
        })
        .collect()
}
