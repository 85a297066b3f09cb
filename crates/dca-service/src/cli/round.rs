//! `dpdist round create|status|release|simulate`: the aggregator's side of one round, one step
//! at a time, on the aggregator's own store.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use dca_service::aggregator::Aggregator;
use dca_service::protocol::spec::{NON_PRIVATE_MARK, Round, RoundSpec, token_hash};
use dca_service::protocol::validity::ValiditySpec;
use dca_service::{Error, Result, hex};
use dp_noise::rng::RngSource;
use zeroize::Zeroizing;

use super::round_noise::round_noise;
use crate::{Connection, checked_budget, io_at, open_aggregator, read_spec, read_text};

#[derive(Args)]
pub struct RoundArgs {
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

// Parsed once per run: the largest variant costs a few hundred bytes of stack, once.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum RoundCommand {
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
        /// A validity mode: every client proves to the nodes that its contribution (data plus
        /// noise slice) lies within the round's bound, per coordinate (`linf`) or in L2 norm
        /// (`l2`, with --data-norm); the nodes need --verify-secret-file.
        #[arg(long, value_parser = ["linf", "l2"])]
        validity: Option<String>,
        /// With --validity: δ_t, the probability bound on an honest noise value reaching its
        /// slice bound (charged as δ).
        #[arg(long, default_value_t = 1e-9, requires = "validity")]
        truncation_delta: f64,
        /// With --validity l2: the bound on the L2 norm of a client's data vector.
        #[arg(long, requires = "validity")]
        data_norm: Option<f64>,
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
        dca_service::DEFAULT_STORE_POOL_SIZE,
    )
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

pub async fn run(command: RoundCommand) -> Result<()> {
    match command {
        RoundCommand::Create {
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
            validity,
            truncation_delta,
            data_norm,
        } => {
            let validity = match (validity.as_deref(), data_norm) {
                (None, _) => None,
                (Some("linf"), None) => Some(ValiditySpec::Linf { truncation_delta }),
                (Some("l2"), Some(data_norm)) => Some(ValiditySpec::L2 {
                    data_norm,
                    truncation_delta,
                }),
                (Some("l2"), None) => {
                    return Err(Error::InvalidSpec(
                        "--validity l2 needs --data-norm (the bound on a client's data norm)"
                            .into(),
                    ));
                }
                (Some(_), _) => {
                    return Err(Error::InvalidSpec(
                        "--data-norm is for --validity l2".into(),
                    ));
                }
            };
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
                validity,
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
        RoundCommand::Status(a) => {
            let agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            // The aggregator's record first: a failed or aborted round says why, even when a
            // node cannot be reached.
            if let Some(state) = agg.recorded_state(&round)?
                && let Some(why) = state.ended_unreleased()
            {
                eprintln!(
                    "dpdist: round {}: {}: {why}",
                    round.spec.round,
                    state.phase()
                );
            }
            print_round_json(&round, &agg.statuses(&round).await?);
            Ok(())
        }
        RoundCommand::Simulate {
            spec,
            values_file,
            insecure_seed,
        } => {
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
        RoundCommand::Release(a) => {
            let agg = aggregator(&a)?;
            let round = read_spec(&a.spec)?.validate()?;
            print_round_json(&round, &agg.release(&round).await?);
            Ok(())
        }
    }
}
