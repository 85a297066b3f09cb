//! `dpdist blr`: Alg. 2 over the network, the analyst's process running the N clients; with
//! `--regression`, the regression with an intercept in the data's units (`blr::regression`)
//! instead.

use std::path::PathBuf;

use clap::Args;
use dca_service::{Error, Result};
use dp_noise::rng::RngSource;

use super::analyst::{AnalystConnection, print_report, rounds_report, seed_note};
use crate::{checked_budget, read_text};

#[derive(Args)]
pub struct BlrArgs {
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
    /// Fit the regression a statistician expects instead of Alg. 2: an intercept, every column
    /// mapped by its public range in `--bounds` (clipped to it, never centred on 0), the ranges
    /// round, then the design's statistics; a `--bounds` schema with the header
    /// `column,lo,hi,group` names each indicator's categorical in its fourth cell (indicator
    /// groups). The report's `regression` is what `dpdist job predict --result` reads.
    #[arg(long)]
    regression: bool,
}

impl BlrArgs {
    /// The run's first line: the data, the model, the parties, the budget.
    fn announce(&self, n: usize, d: usize, m: u16, model: &str) {
        eprintln!(
            "{}: {n} clients, d = {d}; {model} over the network on M = {m} nodes, T = {}, {} \
             mode, (ε, δ) = ({}, {}){}",
            self.data.display(),
            self.max_dropped,
            self.mode,
            self.epsilon,
            self.delta,
            seed_note(self.insecure_seed)
        );
    }
}

pub async fn run(a: BlrArgs) -> Result<()> {
    use dca_service::analyst::fit::{dca_blr_config, fit_over_network, prepare_csv};
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
    if a.regression {
        return run_regression(a, mode, budget, bounds_path).await;
    }
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
    a.announce(n, d, m, "Alg. 2");
    let start = std::time::Instant::now();
    let (fit, transport) =
        fit_over_network(transport, x.clone(), y.clone(), d, config.clone(), rng).await?;
    let wall = start.elapsed().as_secs_f64();
    let std = fit.std.as_ref();
    let omega = fit.thresholds.as_ref();
    let pred = blr::predict(&fit.posterior.mean, &x, n)?;
    let np = blr::fit_non_private(&x, &y, n, d, blr::Prior::default())?;
    let np_pred = blr::predict(&np.mean, &x, n)?;
    // The baseline every fit must beat: the training mean of y as every prediction.
    let training_mean = y.iter().sum::<f64>() / n as f64;
    let constant_mae = blr::mae(&y, &vec![training_mean; n])?;
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
        "rounds": rounds_report(&transport.releases),
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
        "in_sample_mae_constant_non_private": constant_mae,
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

/// `dpdist blr --regression`: `blr::fit_regression_held` with the rows of `--data` as the
/// clients (one row each, raw: the design maps them by their public ranges).
async fn run_regression(
    a: BlrArgs,
    mode: fixedpoint_shares::ShareMode,
    budget: dp_noise::PrivacyLoss,
    bounds_path: PathBuf,
) -> Result<()> {
    use projection::holders::{Grouping, Holders};
    let at = |e: String| {
        Error::InvalidSpec(format!(
            "--data {} with --bounds {}: {e}",
            a.data.display(),
            bounds_path.display()
        ))
    };
    let table = blr::data::Table::parse_csv(&read_text(&a.data, "--data")?)
        .map_err(|e| at(e.to_string()))?;
    let (x, y, d, names) = table
        .split_target(&a.target)
        .map_err(|e| at(e.to_string()))?;
    let schema = blr::public_bounds::PublicBounds::parse(&read_text(&bounds_path, "--bounds")?)
        .map_err(at)?;
    let range = |name: &str| -> Result<blr::PublicRange> {
        let (lo, hi) = schema.of(name).map_err(at)?;
        blr::PublicRange::new(lo, hi).map_err(|e| at(format!("column {name:?}: {e}")))
    };
    let mut design = blr::Design::new(
        names.iter().map(|n| range(n)).collect::<Result<_>>()?,
        range(&a.target)?,
    )?;
    if let Some(g) = schema.group_of(&a.target) {
        return Err(at(format!(
            "the target {:?} names indicator group {g:?}: groups are for features",
            a.target
        )));
    }
    design.indicator_groups = schema.indicator_groups(&names);
    design
        .validate()
        .map_err(|e| at(format!("indicator groups {:?}: {e}", schema.groups)))?;
    let (mut transport, m) = a.analyst.transport().await?;
    let config = blr::RegressionConfig {
        aggregation: projection::Aggregation::Distributed(projection::DcaSettings {
            n_nodes: m,
            max_dropped: a.max_dropped,
            mode,
        }),
        ..blr::RegressionConfig::new(design, budget)
    };
    let rng = match a.insecure_seed {
        Some(seed) => RngSource::InsecureFixedSeed(seed),
        None => RngSource::Os,
    };
    let n = y.len();
    a.announce(n, d, m, "regression with an intercept");
    let start = std::time::Instant::now();
    let (xs, ys, c) = (x.clone(), y.clone(), config.clone());
    let (fit, transport) = tokio::task::spawn_blocking(move || -> Result<_> {
        let holders = Holders::Here {
            x: &xs,
            y: &ys,
            d,
            grouping: Grouping::OneRowEach,
        };
        let fit = blr::fit_regression_held(&holders, &c, rng, &mut transport)?;
        Ok((fit, transport))
    })
    .await
    .map_err(|e| Error::Http(format!("fit task: {e}")))??;
    let wall = start.elapsed().as_secs_f64();
    for w in &fit.warnings {
        eprintln!("dpdist: WARNING: {w}");
    }
    let features: Vec<&str> = names.iter().map(String::as_str).collect();
    let result = dca_service::protocol::job::regression::RegressionResult::of_columns(
        &features, &a.target, &fit,
    );
    let mut report = serde_json::json!({
        "clients": n,
        "dim": d,
        "nodes": m,
        "wall_seconds": wall,
        "rounds": rounds_report(&transport.releases),
        "regression": result,
    });
    let mut identical = true;
    if a.insecure_seed.is_some() {
        let local = tokio::task::spawn_blocking(move || blr::fit_regression(&x, &y, &config, rng))
            .await
            .map_err(|e| Error::Http(format!("in-process fit: {e}")))??;
        identical = dca_service::protocol::job::regression::RegressionResult::of_columns(
            &features, &a.target, &local,
        ) == result;
        report["bit_identical_to_in_process"] = identical.into();
    }
    print_report(
        &report,
        identical,
        "the network regression differs from the in-process fit",
    )
}
