//! One split of the real-data suite (docs/src/results/real-data.md): fits dpdist's default
//! regression — intercept, public ranges from a codebook, one DCA round — on a training CSV and
//! prints its test MAE and R² in the target's units, with the same model fitted NON-PRIVATE on
//! exact statistics beside it. One JSON object per line, for `scripts/real-data/run.sh`.
//!
//! ```text
//! cargo run --release --example real_data -- --train train.csv --test test.csv \
//!     --bounds scripts/real-data/bounds/wage.json --epsilon 1 --insecure-seed 7
//! ```

use blr::data::Table;
use blr::{
    BlockNoise, BlockShares, Design, Narrowing, PublicRange, RegressionConfig, SuffStats,
    fit_regression, regression_from_stats,
};
use clap::Parser;
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use projection::release::{Aggregation, DcaSettings};
use serde::Deserialize;

#[derive(Parser)]
#[command(about = "dpdist's default regression on one train/test split of a real data set")]
struct Args {
    /// Training rows (CSV with a header; every column named in the bounds file).
    #[arg(long)]
    train: std::path::PathBuf,
    /// Test rows, same columns.
    #[arg(long)]
    test: std::path::PathBuf,
    /// Public bounds (JSON: target and features, each with lower, upper and their source).
    #[arg(long)]
    bounds: std::path::PathBuf,
    /// ε of the fit.
    #[arg(long)]
    epsilon: f64,
    /// δ of the fit.
    #[arg(long, default_value_t = 1e-5)]
    delta: f64,
    /// `dca` (10 compute nodes, every record a client) or `ta` (trusted aggregator).
    #[arg(long, default_value = "dca")]
    aggregation: String,
    /// Shares of the budget for the Gram, the cross products and Σy² (three numbers summing to
    /// 1; default: the library's).
    #[arg(long, value_delimiter = ',')]
    shares: Option<Vec<f64>>,
    /// The ranges round's share of the budget and its k (`SHARE,K`; K `auto`: set by the
    /// noise), or `off`: one round on the public ranges (default: the library's).
    #[arg(long, value_delimiter = ',')]
    narrowing: Option<Vec<String>>,
    /// `off`: declare no indicator groups (each indicator a column on ±1, as before groups).
    #[arg(long)]
    groups: Option<String>,
    /// Reproducible run: all randomness from this seed (NOT for real releases).
    #[arg(long)]
    insecure_seed: Option<u64>,
}

#[derive(Deserialize)]
struct Column {
    name: String,
    lower: f64,
    upper: f64,
    /// The categorical column an indicator codes a level of (an indicator group).
    #[serde(default)]
    group: Option<String>,
}

#[derive(Deserialize)]
struct Bounds {
    target: Column,
    features: Vec<Column>,
}

fn columns(table: &Table, names: &[&str]) -> Result<(Vec<f64>, Vec<f64>), String> {
    let index: Vec<usize> = names
        .iter()
        .map(|n| {
            table
                .names
                .iter()
                .position(|c| c == n)
                .ok_or_else(|| format!("no column {n:?} in the CSV"))
        })
        .collect::<Result<_, _>>()?;
    let cols = table.names.len();
    let (t, xs) = index.split_first().expect("the target is first");
    let mut x = Vec::with_capacity(table.rows * xs.len());
    let mut y = Vec::with_capacity(table.rows);
    for row in table.values.chunks_exact(cols) {
        y.push(row[*t]);
        x.extend(xs.iter().map(|&j| row[j]));
    }
    Ok((x, y))
}

fn metrics(pred: &[f64], y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let mae = pred.iter().zip(y).map(|(p, t)| (p - t).abs()).sum::<f64>() / n;
    let sse: f64 = pred.iter().zip(y).map(|(p, t)| (p - t).powi(2)).sum();
    let sst: f64 = y.iter().map(|t| (t - mean).powi(2)).sum();
    (mae, 1.0 - sse / sst)
}

fn run() -> Result<(), String> {
    let a = Args::parse();
    let read = |p: &std::path::Path| -> Result<Table, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        Table::parse_csv(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let bounds: Bounds = serde_json::from_str(
        &std::fs::read_to_string(&a.bounds).map_err(|e| format!("{}: {e}", a.bounds.display()))?,
    )
    .map_err(|e| format!("{}: {e}", a.bounds.display()))?;
    let names: Vec<&str> = std::iter::once(bounds.target.name.as_str())
        .chain(bounds.features.iter().map(|c| c.name.as_str()))
        .collect();
    let (x, y) = columns(&read(&a.train)?, &names)?;
    let (x_test, y_test) = columns(&read(&a.test)?, &names)?;
    let range =
        |c: &Column| PublicRange::new(c.lower, c.upper).map_err(|e| format!("{}: {e}", c.name));
    let mut design = Design::new(
        bounds
            .features
            .iter()
            .map(range)
            .collect::<Result<_, _>>()?,
        range(&bounds.target)?,
    )
    .map_err(|e| e.to_string())?;
    match a.groups.as_deref() {
        None => {
            design.indicator_groups =
                blr::groups_by_label(bounds.features.iter().map(|c| c.group.as_deref())).0
        }
        Some("off") => {}
        Some(other) => return Err(format!("--groups {other:?}: expected off")),
    }
    design
        .validate()
        .map_err(|e| format!("{}: {e}", a.bounds.display()))?;
    if let Some(s) = &a.shares {
        if s.len() != 3 {
            return Err(format!("--shares: 3 numbers, got {}", s.len()));
        }
        design.shares = BlockShares {
            gram: s[0],
            cross: s[1],
            yy: s[2],
        };
        design.validate().map_err(|e| format!("--shares: {e}"))?;
    }
    let aggregation = match a.aggregation.as_str() {
        "dca" => Aggregation::Distributed(DcaSettings::default()),
        "ta" => Aggregation::Trusted,
        other => return Err(format!("--aggregation {other:?}: expected dca or ta")),
    };
    let mut config = RegressionConfig {
        aggregation,
        ..RegressionConfig::new(
            design.clone(),
            PrivacyLoss {
                epsilon: a.epsilon,
                delta: a.delta,
            },
        )
    };
    match a.narrowing.as_deref() {
        None => {}
        Some([off]) if off == "off" => config.narrowing = None,
        Some([share, spreads]) => {
            let number = |v: &str| {
                v.parse::<f64>()
                    .map_err(|e| format!("--narrowing {v:?}: {e}"))
            };
            config.narrowing = Some(Narrowing {
                share: number(share)?,
                spreads: (spreads != "auto").then(|| number(spreads)).transpose()?,
            });
        }
        Some(other) => return Err(format!("--narrowing: `off` or SHARE,K, got {other:?}")),
    }
    let rng = a
        .insecure_seed
        .map_or(RngSource::Os, RngSource::InsecureFixedSeed);
    let fit = fit_regression(&x, &y, &config, rng).map_err(|e| e.to_string())?;
    let (mae, r2) = metrics(&fit.predict(&x_test).map_err(|e| e.to_string())?, &y_test);
    println!(
        "{}",
        serde_json::json!({
            "method": "dpdist",
            "epsilon": fit.spent.epsilon,
            "delta": fit.spent.delta,
            "test_mae": mae,
            "test_r2": r2,
            "dp_r2": fit.r_squared,
            "ridge": fit.ridge,
            "warning": (!fit.warnings.is_empty()).then(|| fit.warnings.join("; ")),
        })
    );
    // The same model on the exact statistics of the design the fit used (the ranges round's
    // narrowed ranges): what the statistics round's noise costs.
    let design = &fit.design;
    let z = design.rows(&x).map_err(|e| e.to_string())?;
    let t: Vec<f64> = y.iter().map(|v| design.y.to_unit(*v)).collect();
    let exact = SuffStats::compute(&z, &t, y.len(), design.width()).map_err(|e| e.to_string())?;
    let np = regression_from_stats(design, &exact, BlockNoise::NONE, config.prior_precision)
        .map_err(|e| e.to_string())?;
    let (mae, r2) = metrics(&np.predict(&x_test).map_err(|e| e.to_string())?, &y_test);
    println!(
        "{}",
        serde_json::json!({
            "method": "NON-PRIVATE dpdist (exact statistics)",
            "test_mae": mae,
            "test_r2": r2,
            "dp_r2": np.r_squared,
        })
    );
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
