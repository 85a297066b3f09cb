//! Calibration study of BLR credible intervals from DP statistics: naive (noise treated as data)
//! against noise-aware (`blr::noise_aware`), on synthetic data with known β.
//!
//! Run: `cargo run --release --example blr_calibration [REPLICATIONS] [SVG_PATH]`
//! (defaults 200 and `blr_calibration.svg`).
//!
//! Each replication draws β ~ N(0, I) (the model's prior, so a calibrated posterior covers at
//! the nominal rate), x ~ U(−1, 1)^10 (public bounds |x_j| ≤ 1), y = xᵀβ + N(0, 1) (public bound
//! |y| ≤ 8, 3.8 sd: clipping is rare), releases Σxxᵀ and Σxy with the Gaussian mechanism at
//! (ε, 10⁻⁵) through a trusted aggregator, and records for every coordinate of β whether the 50%
//! and 90% intervals contain it, and their widths. Fixed seeds (an experiment, not a
//! deployment).

use std::error::Error;
use std::fmt::Write as _;
use std::time::Instant;

use blr::noise_aware::{NoiseAwareOptions, StatsNoise, naive_coefficients, noise_aware_posterior};
use blr::sensitivity::rho_from_budget;
use blr::ssp::{Mechanism, RoundBudget, release_stats};
use blr::{Prior, posterior};
use dp_noise::PrivacyLoss;
use dp_noise::accountant::Accountant;
use dp_noise::rng::RngSource;
use projection::release::{Aggregation, ReleaseContext};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rand_distr::{Distribution, Normal};

const D: usize = 10;
const SIZES: [usize; 2] = [500, 5000];
const EPSILONS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];
const LEVELS: [f64; 2] = [0.5, 0.9];
const BOUND_Y: f64 = 8.0;
const DRAWS: usize = 300;

type Res<T> = Result<T, Box<dyn Error>>;

/// Coverage counts and summed widths of one (n, ε) cell, per method and level.
#[derive(Default, Clone)]
struct Cell {
    covered: [[usize; 2]; 2],
    width: [[f64; 2]; 2],
    intervals: usize,
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let reps: usize = match args.next() {
        Some(s) => s.parse().map_err(|e| format!("replications {s:?}: {e}"))?,
        None => 200,
    };
    let svg_path = args
        .next()
        .unwrap_or_else(|| "blr_calibration.svg".to_string());
    let start = Instant::now();
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
            let cell = &mut cells[s][e];
            for rep in 0..reps {
                let seed = ((s as u64) << 48) ^ ((e as u64) << 40) ^ rep as u64;
                let (x, y, beta) = draw_data(n, seed)?;
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
                let aware = noise_aware_posterior(
                    &stats,
                    noise,
                    prior,
                    NoiseAwareOptions {
                        draws: DRAWS,
                        bounds_x: Some(&bounds_x),
                    },
                    &RngSource::InsecureFixedSeed(seed ^ (2 << 60)),
                )?;
                for (l, &level) in LEVELS.iter().enumerate() {
                    let methods = [
                        naive_coefficients(&naive, level)?,
                        aware.coefficients(level)?,
                    ];
                    for (m, summaries) in methods.iter().enumerate() {
                        for (summary, &b) in summaries.iter().zip(&beta) {
                            cell.covered[m][l] +=
                                usize::from(summary.lower <= b && b <= summary.upper);
                            cell.width[m][l] += summary.upper - summary.lower;
                        }
                    }
                }
                cell.intervals += D;
            }
            println!(
                "n = {n}, ε = {epsilon}: 90% coverage naive {:.3}, noise-aware {:.3} ({reps} reps, \
                 {:.0} s so far)",
                cell.covered[0][1] as f64 / cell.intervals as f64,
                cell.covered[1][1] as f64 / cell.intervals as f64,
                start.elapsed().as_secs_f64()
            );
        }
    }
    let table = render_table(&cells, reps)?;
    println!("\n{table}");
    std::fs::write(&svg_path, render_svg(&cells))?;
    println!(
        "figure: {svg_path}; total time {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One synthetic data set with its true β.
fn draw_data(n: usize, seed: u64) -> Res<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0)?;
    let beta: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
    let (mut x, mut y) = (Vec::with_capacity(n * D), Vec::with_capacity(n));
    for _ in 0..n {
        let row: Vec<f64> = (0..D)
            .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
            .collect();
        y.push(row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() + normal.sample(&mut rng));
        x.extend(row);
    }
    Ok((x, y, beta))
}

fn render_table(cells: &[Vec<Cell>], reps: usize) -> Res<String> {
    let mut out = format!(
        "coverage of the credible intervals for each of the {D} coefficients ({reps} replications \
         per cell, {} intervals), mean width in brackets\n\n",
        reps * D
    );
    writeln!(
        out,
        "| n | ε | naive 50% | noise-aware 50% | naive 90% | noise-aware 90% |"
    )?;
    writeln!(out, "| --- | --- | --- | --- | --- | --- |")?;
    for (s, &n) in SIZES.iter().enumerate() {
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let c = &cells[s][e];
            let k = c.intervals as f64;
            write!(out, "| {n} | {epsilon} |")?;
            for l in 0..2 {
                for m in 0..2 {
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

/// Coverage of the 90% intervals against ε (log axis), one panel per n: naive and noise-aware,
/// with the nominal 0.9 and the 88–92% target band. Hand-written SVG (no plotting dependency).
fn render_svg(cells: &[Vec<Cell>]) -> String {
    let (panel_w, panel_h, margin) = (360.0, 260.0, 50.0);
    let width = SIZES.len() as f64 * (panel_w + margin) + margin;
    let height = panel_h + 2.0 * margin + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" \
         fill=\"white\"/>\n"
    );
    let x_of = |epsilon: f64, left: f64| {
        let (lo, hi) = (0.5f64.ln(), 5.0f64.ln());
        left + (epsilon.ln() - lo) / (hi - lo) * panel_w
    };
    let y_of = |coverage: f64| margin + (1.0 - coverage) * panel_h;
    for (s, &n) in SIZES.iter().enumerate() {
        let left = margin + s as f64 * (panel_w + margin);
        svg += &format!(
            "<rect x=\"{left}\" y=\"{margin}\" width=\"{panel_w}\" height=\"{panel_h}\" \
             fill=\"none\" stroke=\"black\"/>\n<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">\
             n = {n}, d = {D}: coverage of 90% intervals</text>\n",
            left + panel_w / 2.0,
            margin - 10.0
        );
        svg += &format!(
            "<rect x=\"{left}\" y=\"{}\" width=\"{panel_w}\" height=\"{}\" fill=\"#cfe8cf\"/>\n",
            y_of(0.92),
            y_of(0.88) - y_of(0.92)
        );
        for tick in [0.0, 0.25, 0.5, 0.75, 0.9, 1.0] {
            svg += &format!(
                "<line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ccc\"/>\n\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{tick}</text>\n",
                left + panel_w,
                left - 4.0,
                y_of(tick) + 4.0,
                y = y_of(tick)
            );
        }
        for &epsilon in &EPSILONS {
            svg += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ε = {epsilon}</text>\n",
                x_of(epsilon, left),
                margin + panel_h + 16.0
            );
        }
        for (m, (colour, name)) in [("#d62728", "naive"), ("#1f77b4", "noise-aware")]
            .iter()
            .enumerate()
        {
            let points: Vec<String> = EPSILONS
                .iter()
                .enumerate()
                .map(|(e, &epsilon)| {
                    let c = &cells[s][e];
                    format!(
                        "{:.1},{:.1}",
                        x_of(epsilon, left),
                        y_of(c.covered[m][1] as f64 / c.intervals as f64)
                    )
                })
                .collect();
            svg += &format!(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>\n",
                points.join(" ")
            );
            for p in &points {
                let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
                svg += &format!("<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{colour}\"/>\n");
            }
            svg += &format!(
                "<text x=\"{}\" y=\"{}\" fill=\"{colour}\">{name}</text>\n",
                left + 10.0,
                margin + panel_h - 10.0 - 16.0 * m as f64
            );
        }
    }
    svg += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">green band: target 0.88–0.92</text>\n</svg>\n",
        width / 2.0,
        height - 8.0
    );
    svg
}
