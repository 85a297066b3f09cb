//! `dpdist participant`: take part in jobs as a data holder.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dca_service::participant::{Participant, Policy};
use dca_service::{Error, Result};

use crate::{https_client, read_text, secret};

#[derive(Args)]
pub struct ParticipantArgs {
    /// The aggregator server's base URL.
    #[arg(long)]
    aggregator: String,
    /// PEM CA certificate the aggregator's and the nodes' certificates chain to.
    #[arg(long)]
    ca: PathBuf,
    /// File holding this participant's bearer token (the analyst lists its SHA-256).
    #[arg(long)]
    token_file: PathBuf,
    /// This participant's rows (CSV with a header naming the columns).
    #[arg(long)]
    data: PathBuf,
    /// What it agrees to (TOML: columns, max_epsilon_per_job, total_epsilon).
    #[arg(long)]
    policy: PathBuf,
    /// Its ledger and its sealed attempts.
    #[arg(long)]
    state_dir: PathBuf,
    /// Follow only this job and exit when it ends (exit status 0 if it is done).
    #[arg(long)]
    job: Option<String>,
    /// Milliseconds between looks at the aggregator.
    #[arg(long, default_value_t = 500)]
    poll_ms: u64,
    /// Draw noise and masks from this seed, as the in-process pipeline with the same seed
    /// does — NON-PRIVATE: anyone knowing the seed can unmask; for reproducible tests only.
    #[arg(long)]
    insecure_seed: Option<u64>,
}

pub async fn run(a: ParticipantArgs) -> Result<()> {
    let rows = dca_service::participant::Rows::csv(&a.data)?;
    let policy = Policy::parse(&read_text(&a.policy, "--policy")?)
        .map_err(|e| Error::InvalidSpec(format!("--policy {}: {e}", a.policy.display())))?;
    if a.insecure_seed.is_some() {
        tracing::warn!(
            "NON-PRIVATE: --insecure-seed draws this participant's noise and masks from a \
             fixed seed; anyone knowing it can unmask its shares"
        );
    }
    let participant = Participant {
        aggregator: a.aggregator,
        http: https_client(&a.ca, 8)?,
        token: secret(&a.token_file, "--token-file")?,
        rows,
        policy,
        state_dir: a.state_dir,
        insecure_seed: a.insecure_seed,
        poll: Duration::from_millis(a.poll_ms.max(10)),
    };
    println!(
        "dpdist participant: {} rows, waiting for jobs",
        participant.rows.len()
    );
    let outcome = participant.run(a.job.as_deref()).await?;
    println!(
        "job {}{}; this participant {}",
        outcome.state,
        outcome
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default(),
        if outcome.took_part {
            "took part"
        } else {
            "did not take part"
        }
    );
    if outcome.state == "done" {
        Ok(())
    } else {
        Err(Error::Job(format!("the job ended {}", outcome.state)))
    }
}
