//! `dpdist client upload`: one client's shares, sealed and uploaded.

use std::path::PathBuf;

use clap::Subcommand;
use dca_service::Result;
use dca_service::protocol::spec::NON_PRIVATE_MARK;
use dca_service::secret::SecretString;
use dp_noise::rng::RngSource;

use crate::{Connection, http, read_spec};

#[derive(Subcommand)]
pub enum ClientCommand {
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

pub async fn run(command: ClientCommand) -> Result<()> {
    let ClientCommand::Upload {
        conn,
        spec,
        client,
        token,
        values,
        insecure_seed,
    } = command;
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
    dca_service::protocol::upload::upload(
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
