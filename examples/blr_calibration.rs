//! Calibration study of BLR credible intervals from DP statistics: naive (noise treated as data)
//! against noise-aware (`blr::noise_aware`), on synthetic data with known β.
//!
//! Run: `cargo run --release --example blr_calibration` (`--help` for the number of
//! replications and the figure's path, by default `target/figures/blr_calibration.svg`).
//!
//! Each replication draws β ~ N(0, I) (the model's prior, so a calibrated posterior covers at
//! the nominal rate), x ~ U(−1, 1)^10 (public bounds |x_j| ≤ 1), y = xᵀβ + N(0, 1) (public bound
//! |y| ≤ 8, 3.8 sd: clipping is rare), releases Σxxᵀ and Σxy with the Gaussian mechanism at
//! (ε, 10⁻⁵) through a trusted aggregator, and records for every coordinate of β whether the 50%
//! and 90% intervals contain it, and their widths. Fixed seeds (an experiment, not a
//! deployment). Methods: naive, noise-aware under the flat prior of Σxxᵀ, under the default
//! diagonal data-model prior, and under the coupled inverse-Wishart prior
//! (`LatentPrior::Wishart`, an MCMC; the mean effective sample size of each fit's importance
//! weights is printed per cell). `--x-mix W` makes the inputs correlated (a shared coordinate
//! mixed into each, with a random weight in [0, W] and sign per replication), `--x-spread`
//! makes the prior's second moments wrong, `--dof` fixes ν, `--wishart-dof` fixes ν₀.

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use blr::latent::LatentPrior;
use blr::noise_aware::{NoiseAwareOptions, StatsNoise, naive_coefficients, noise_aware_posterior};
use blr::sensitivity::rho_from_budget;
use blr::ssp::{Mechanism, RoundBudget, release_stats};
use blr::{Prior, posterior};
use clap::Parser;
use dp_noise::PrivacyLoss;
use dp_noise::accountant::Accountant;
use dp_noise::rng::RngSource;
use projection::release::{Aggregation, ReleaseContext};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rand_distr::{Distribution, Normal};

#[allow(dead_code)] // each example uses part of the shared module
mod common;
use common::figure::{Legend, Panel, Point, Series, write_svg};

const D: usize = 10;
const SIZES: [usize; 2] = [500, 5000];
const EPSILONS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];
const LEVELS: [f64; 2] = [0.5, 0.9];
const BOUND_Y: f64 = 8.0;
const DRAWS: usize = 300;

type Res<T> = Result<T, Box<dyn Error>>;

/// The methods compared: naive, noise-aware with the flat prior on Σxxᵀ (the first version),
/// noise-aware with the diagonal data-model prior (the default), noise-aware with the coupled
/// inverse-Wishart prior (`LatentPrior::Wishart`).
const METHODS: [&str; 4] = [
    "naive",
    "noise-aware, flat Σxxᵀ",
    "noise-aware",
    "noise-aware, Wishart",
];

/// Coverage counts and summed widths of one (n, ε) cell, per method and level.
#[derive(Default, Clone)]
struct Cell {
    covered: [[usize; 2]; 4],
    width: [[f64; 2]; 4],
    intervals: usize,
    /// Summed effective sample sizes of the importance weights (flat, data-model, Wishart).
    ess: [f64; 3],
}

/// Coverage of naive vs noise-aware BLR credible intervals under DP noise (synthetic data).
#[derive(Parser, Debug)]
#[command(name = "blr_calibration")]
struct Args {
    /// Replications per (n, ε) cell, each with its own β, data and noise.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    replications: u64,
    /// Where to write the SVG figure (coverage against ε).
    #[arg(long, default_value = "target/figures/blr_calibration.svg")]
    figure: PathBuf,
    /// Draw x ~ U(−s, s)^10 while the public bounds stay |x_j| ≤ 1: s < 1 makes the default
    /// data-model prior (second moments B²/3, i.e. s = 1) wrong by a factor s².
    #[arg(long, default_value_t = 1.0)]
    x_spread: f64,
    /// Correlated inputs: x_j = s·((1 − w_j)·u_j + w_j·σ_j·u_0) with u ~ U(−1, 1)^11, a random
    /// sign σ_j and a weight w_j ~ U(0, W) drawn per replication (W = this option, in [0, 1];
    /// 0 = independent coordinates). Still |x_j| ≤ s; correlations up to 1/(1 + (1/W − 1)²).
    #[arg(long, default_value_t = 0.0)]
    x_mix: f64,
    /// Degrees of freedom ν of the data-model prior (default: ν and the moments' scale
    /// integrated over their posterior given each release).
    #[arg(long)]
    dof: Option<f64>,
    /// Run only the cells with these n (comma-separated; default all of 500, 5000), for targeted
    /// runs.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Run only the cells with these ε (comma-separated; default all of 0.5, 1, 2, 5).
    #[arg(long, value_delimiter = ',')]
    epsilons: Vec<f64>,
    /// Also run the coupled inverse-Wishart prior (an MCMC per fit: the full study takes about
    /// ten times as long).
    #[arg(long)]
    wishart: bool,
    /// ν₀ of the Wishart prior (default: integrated over a grid); implies `--wishart`.
    #[arg(long)]
    wishart_dof: Option<f64>,
    /// Draws of the latent Σxxᵀ per noise-aware posterior.
    #[arg(long, default_value_t = DRAWS)]
    draws: usize,
}

fn main() -> Res<()> {
    let args = Args::parse();
    let reps = args.replications as usize;
    let start = Instant::now();
    let run_wishart = args.wishart || args.wishart_dof.is_some();
    let methods_run = if run_wishart { 4 } else { 3 };
    let progress =
        common::progress::bar((SIZES.len() * EPSILONS.len() * reps) as u64, "replications");
    let bounds_x = [1.0; D];
    let prior = Prior::default();
    let mut cells = vec![vec![Cell::default(); EPSILONS.len()]; SIZES.len()];
    for (s, &n) in SIZES.iter().enumerate() {
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let budget = PrivacyLoss {
                epsilon,
                delta: 1e-5,
            };
            let rho = rho_from_budget(budget)?;
            let noise = StatsNoise::of_release(
                &bounds_x,
                BOUND_Y,
                false,
                Mechanism::Gaussian,
                RoundBudget::Rho(rho),
            )?;
            let selected = |list: &[f64], v: f64| list.is_empty() || list.contains(&v);
            let sizes: Vec<f64> = args.sizes.iter().map(|&v| v as f64).collect();
            if !selected(&sizes, n as f64) || !selected(&args.epsilons, epsilon) {
                progress.inc(reps as u64);
                continue;
            }
            let cell = &mut cells[s][e];
            for rep in 0..reps {
                let seed = ((s as u64) << 48) ^ ((e as u64) << 40) ^ rep as u64;
                let (x, y, beta) = draw_data(n, args.x_spread, args.x_mix, seed)?;
                let mut accountant = Accountant::new(budget)?;
                let stats = release_stats(
                    &x,
                    &y,
                    n,
                    &bounds_x,
                    BOUND_Y,
                    false,
                    Mechanism::Gaussian,
                    RoundBudget::Rho(rho),
                    ReleaseContext {
                        aggregation: Aggregation::Trusted,
                        round: 0,
                        rng: RngSource::InsecureFixedSeed(seed ^ (1 << 60)),
                        accountant: &mut accountant,
                    },
                )?;
                let naive = posterior(&stats, prior)?;
                let aware = |latent| {
                    noise_aware_posterior(
                        &stats,
                        noise,
                        prior,
                        NoiseAwareOptions {
                            draws: args.draws,
                            bounds_x: Some(&bounds_x),
                            latent,
                        },
                        &RngSource::InsecureFixedSeed(seed ^ (2 << 60)),
                    )
                };
                let flat = aware(LatentPrior::Flat)?;
                let data_model = aware(LatentPrior::DataModel {
                    second_moments: None,
                    dof: args.dof,
                })?;
                let wishart = if run_wishart {
                    Some(aware(LatentPrior::Wishart {
                        second_moments: None,
                        dof: args.wishart_dof,
                    })?)
                } else {
                    None
                };
                for (l, &level) in LEVELS.iter().enumerate() {
                    let mut methods = vec![
                        naive_coefficients(&naive, level)?,
                        flat.coefficients(level)?,
                        data_model.coefficients(level)?,
                    ];
                    if let Some(w) = &wishart {
                        methods.push(w.coefficients(level)?);
                    }
                    for (m, summaries) in methods.iter().enumerate() {
                        for (summary, &b) in summaries.iter().zip(&beta) {
                            cell.covered[m][l] +=
                                usize::from(summary.lower <= b && b <= summary.upper);
                            cell.width[m][l] += summary.upper - summary.lower;
                        }
                    }
                }
                cell.intervals += D;
                cell.ess[0] += flat.effective_sample_size;
                cell.ess[1] += data_model.effective_sample_size;
                cell.ess[2] += wishart.as_ref().map_or(0.0, |w| w.effective_sample_size);
                progress.inc(1);
            }
            let wishart_part = if run_wishart {
                format!(
                    ", Wishart {:.3} (mean ESS of its weights {:.0})",
                    cell.covered[3][1] as f64 / cell.intervals as f64,
                    cell.ess[2] / reps as f64
                )
            } else {
                String::new()
            };
            progress.suspend(|| {
                println!(
                    "n = {n}, ε = {epsilon}: 90% coverage naive {:.3}, flat {:.3}, noise-aware \
                     {:.3}{wishart_part}; mean ESS of the weights flat {:.0}, noise-aware {:.0} \
                     ({reps} reps, {:.0} s so far)",
                    cell.covered[0][1] as f64 / cell.intervals as f64,
                    cell.covered[1][1] as f64 / cell.intervals as f64,
                    cell.covered[2][1] as f64 / cell.intervals as f64,
                    cell.ess[0] / reps as f64,
                    cell.ess[1] / reps as f64,
                    start.elapsed().as_secs_f64()
                )
            });
        }
    }
    progress.finish_and_clear();
    let table = render_table(&cells, reps, &args, methods_run)?;
    println!("\n{table}");
    if args.sizes.is_empty() && args.epsilons.is_empty() {
        write_figure(&cells, reps, &args.figure, methods_run)?;
        println!("figure: {}", args.figure.display());
    } else {
        println!("no figure: only some cells were run");
    }
    println!("total time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// One synthetic data set with its true β (x ~ U(−spread, spread)^D).
fn draw_data(n: usize, spread: f64, mix: f64, seed: u64) -> Res<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    if !(0.0..=1.0).contains(&mix) {
        return Err(format!("--x-mix must be in [0, 1], got {mix}").into());
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0)?;
    let uniform =
        |rng: &mut ChaCha20Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let beta: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
    // Per replication: how much of the shared u_0 each coordinate carries, and with which sign
    // (nothing drawn when W = 0, so the independent study's data stay as they were).
    let weights: Vec<f64> = if mix > 0.0 {
        (0..D)
            .map(|_| {
                let w = mix * (uniform(&mut rng) + 1.0) / 2.0;
                if rng.next_u64() & 1 == 1 { -w } else { w }
            })
            .collect()
    } else {
        vec![0.0; D]
    };
    let (mut x, mut y) = (Vec::with_capacity(n * D), Vec::with_capacity(n));
    for _ in 0..n {
        let shared = if mix > 0.0 { uniform(&mut rng) } else { 0.0 };
        let row: Vec<f64> = weights
            .iter()
            .map(|&w| ((1.0 - w.abs()) * uniform(&mut rng) + w * shared) * spread)
            .collect();
        y.push(row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() + normal.sample(&mut rng));
        x.extend(row);
    }
    Ok((x, y, beta))
}

fn render_table(cells: &[Vec<Cell>], reps: usize, args: &Args, methods: usize) -> Res<String> {
    let mut out = format!(
        "coverage of the credible intervals for each of the {D} coefficients ({reps} replications \
         per cell, {} intervals; x ~ U(−{s}, {s}), mixed with a shared coordinate up to W = {w}, \
         bounds 1; data-model prior ν = {dof}; Wishart ν₀ = {wdof}), mean width in brackets\n\n",
        reps * D,
        wdof = match (methods > 3, args.wishart_dof) {
            (false, _) => "not run (--wishart)".to_string(),
            (true, None) => "integrated over its grid".to_string(),
            (true, Some(v)) => v.to_string(),
        },
        s = args.x_spread,
        w = args.x_mix,
        dof = args
            .dof
            .map_or("from each release".to_string(), |v| v.to_string()),
    );
    out.push_str("| n | ε |");
    for level in ["50%", "90%"] {
        for method in &METHODS[..methods] {
            write!(out, " {method} {level} |")?;
        }
    }
    writeln!(out, "\n| --- | --- |{}", " --- |".repeat(2 * methods))?;
    for (s, &n) in SIZES.iter().enumerate() {
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let c = &cells[s][e];
            let k = c.intervals as f64;
            write!(out, "| {n} | {epsilon} |")?;
            for l in 0..2 {
                for m in 0..methods {
                    write!(
                        out,
                        " {:.3} ({:.2}) |",
                        c.covered[m][l] as f64 / k,
                        c.width[m][l] / k
                    )?;
                }
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// Coverage against ε, one panel per interval level (rows: 90%, 50%) and n (columns): naive
/// and noise-aware, with the nominal level as a guide and, for 90%, the 88–92% target shaded.
fn write_figure(
    cells: &[Vec<Cell>],
    reps: usize,
    path: &std::path::Path,
    methods: usize,
) -> Res<()> {
    let mut panels = Vec::new();
    for l in [1, 0] {
        for (s, &n) in SIZES.iter().enumerate() {
            let series = (0..methods)
                .rev()
                .map(|m| (m, METHODS[m]))
                .map(|(m, name)| Series {
                    name: name.to_string(),
                    points: EPSILONS
                        .iter()
                        .enumerate()
                        .map(|(e, &epsilon)| {
                            let c = &cells[s][e];
                            Point::new(epsilon, c.covered[m][l] as f64 / c.intervals as f64)
                        })
                        .collect(),
                    ..Series::default()
                })
                .collect();
            let level = LEVELS[l];
            panels.push(Panel {
                title: format!(
                    "{:.0}% intervals, n = {n}, d = {D} ({reps} reps × {D} coefficients)",
                    level * 100.0
                ),
                x_label: "ε".into(),
                y_label: "empirical coverage".into(),
                log_x: true,
                y_range: Some((0.0, 1.0)),
                series,
                guides: vec![(format!("nominal {level}"), level)],
                // Legends where the curves are not: between naive and noise-aware at 90%, above
                // both at 50%.
                target: (l == 1).then(|| ("target 0.88–0.92".to_string(), 0.88, 0.92)),
                legend: if l == 1 {
                    Legend::MiddleRight
                } else {
                    Legend::UpperRight
                },
                ..Panel::default()
            });
        }
    }
    write_svg(path, &panels, 2, (520, 360))?;
    Ok(())
}
