//! `dpdist train`: DP-SGD logistic regression over the network, the analyst's process running
//! the N clients.

use std::path::PathBuf;

use clap::Args;
use dca_service::{Error, Result};
use dp_noise::rng::RngSource;

use super::analyst::{AnalystConnection, print_report, seed_note};
use crate::{checked_budget, read_text};

#[derive(Args)]
pub struct TrainArgs {
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
    /// L2 regularisation λ (of the weights; the intercept is not penalised).
    #[arg(long, default_value_t = 1e-2)]
    l2: f64,
    /// Fit σ(wᵀx) without the intercept b (by default P(y = 1 | x) = σ(wᵀx + b), b inside the
    /// clipped gradient): the model `dpdist train` fitted before it had intercepts, bit for bit
    /// with the same seed.
    #[arg(long)]
    no_intercept: bool,
    /// T: clients that may drop out or collude in a round.
    #[arg(long, default_value_t = 2)]
    max_dropped: usize,
    /// ALL randomness (noise, masks, sampling) from this seed — INSECURE, for reproducibility
    /// only. Also runs the same training in one process and checks that every iteration's
    /// release and the final parameters are bit-identical.
    #[arg(long)]
    insecure_seed: Option<u64>,
}

pub async fn run(a: TrainArgs) -> Result<()> {
    use dca_learning::{
        ClientSampling, Model, Optimizer, Privacy, Records, Trainer, TrainerConfig,
        calibrate_noise_multiplier, logistic_intercept_predict_proba, logistic_predict_proba,
    };
    use dca_service::analyst::train::train_over_network;

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
        model: Model::Logistic {
            l2: a.l2,
            intercept: !a.no_intercept,
        },
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
        seed_note(a.insecure_seed)
    );
    let start = std::time::Instant::now();
    let run = train_over_network(transport, trainer.clone(), records.clone(), a.iterations).await?;
    let wall = start.elapsed().as_secs_f64();
    let intercept = !a.no_intercept;
    let accuracy = |params: &[f64]| -> Result<f64> {
        let p = if intercept {
            logistic_intercept_predict_proba(params, &x)?
        } else {
            logistic_predict_proba(params, &x)?
        };
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
        // θ = (w, b): b is reported apart, so "weights" is one per feature either way.
        "weights": &run.trainer.params()[..d],
        "spent_epsilon": spent.map(|s| s.epsilon),
        "spent_delta": spent.map(|s| s.delta),
        "in_sample_accuracy": accuracy(run.trainer.params())?,
    });
    if intercept {
        report["intercept"] = run.trainer.params()[d].into();
    }
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
