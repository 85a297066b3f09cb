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
//!
//! `--x-from-prior latent|gaussian|clipped|clipped-after-y` is a simulation-based calibration
//! (Cook, Gelman & Rubin 2006; Talts et al. 2018): every replication draws its data from the
//! default data-model prior itself (see the option's help), so the noise-aware intervals must
//! cover at the nominal rate on average. Tables print the replication-level standard error of
//! each coverage (the D coefficients of a replication are correlated); `--log` writes one CSV
//! line per replication (the drawn κ, ν and each method's covered counts) for stratified
//! summaries.
//!
//! The default and Wishart fits use the library's adaptive draws (`blr::AdaptiveDraws`: more
//! draws where the importance weights degenerate; `--min-ess-fraction 0` turns them off, and
//! reproduces the earlier runs); the flat prior always makes exactly `--draws`. Each cell prints
//! how many default fits had ESS < 10% of `--draws` from their first batch and after the adaptive
//! draws. `--summary` writes the default method's coverage per cell, and `--combine` draws one
//! figure from several such summaries (e.g. the SBC modes beside the fixed designs).

use std::error::Error;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use blr::latent::{LatentPrior, data_model_grid, entry_prior};
use blr::noise_aware::{
    AdaptiveDraws, EntryNoise, NoiseAwareOptions, StatsNoise, naive_coefficients,
    noise_aware_posterior,
};
use blr::sensitivity::rho_from_budget;
use blr::ssp::{Mechanism, RoundBudget, release_stats};
use blr::{
    FitConfig, Prior, ProjectionConfig, SuffStats, fit_non_private, packed_index, packed_len,
    posterior,
};
use clap::{Parser, ValueEnum};
use dp_noise::PrivacyLoss;
use dp_noise::accountant::Accountant;
use dp_noise::rng::RngSource;
use projection::release::{Aggregation, ReleaseContext};
use projection::search::SearchConfig;
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
    /// Summed squares of each replication's coverage (fraction of its D intervals): the
    /// replication-level standard error (the D coefficients of a replication are correlated).
    covered_sq: [[f64; 2]; 4],
    width: [[f64; 2]; 4],
    intervals: usize,
    replications: usize,
    /// Summed diagnostics of the simulation-based calibration's data (see `PriorDraw`).
    sbc: SbcDiagnostics,
    /// Summed effective sample sizes of the importance weights (flat, data-model, Wishart).
    ess: [f64; 3],
    /// The default (data-model) fits: how many had an effective sample size below 10% of
    /// `--draws` from their first batch alone (what a fit without adaptive draws reports) and
    /// after the adaptive draws; the D × covered count of the 90% intervals of the former; the
    /// summed draws made.
    low_ess_initial: usize,
    /// `--projection`: summed shares of clipped y values and of rows with a clipped x (exact,
    /// a NON-PRIVATE diagnostic of the study), and the noise-aware fits' covered counts of the
    /// clipped-data regression's coefficients per level.
    clipped_y: f64,
    clipped_x: f64,
    covered_clipped: [usize; 2],
    low_ess_final: usize,
    low_ess_covered: usize,
    draws_used: usize,
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
    /// Correlated design with a fixed condition number κ of E[xxᵀ]: x = L·u/c with
    /// u ~ U(−1, 1)^10, L = Q·diag(κ^(−k/18))·Qᵀ (k = 0..9, so the eigenvalues of E[xxᵀ] ∝ LLᵀ
    /// run geometrically from 1 to 1/κ), Q a random rotation per replication and c the largest
    /// row sum of |L|, so |x_j| ≤ 1 holds without clipping. Excludes `--x-mix`.
    #[arg(long)]
    x_condition: Option<f64>,
    /// Fit through `blr::fit` with `ProjectionConfig::default()` (DP pooled std round, threshold
    /// search with `--search-repeats` auxiliary data sets) from the public bounds |x_j| ≤ 1,
    /// |y| ≤ 8, then the noise-aware posterior of that fit; coverage is reported for the true β
    /// and for the clipped-data regression's coefficients (least squares of clip(y) on clip(x)
    /// over 50 000 further records of the same design, clipped at the fit's bounds).
    #[arg(long)]
    projection: bool,
    /// With `--projection`: the noise-aware posterior in the units of the fit's bounds (x/B_x,
    /// y/B_y, so the prior N(0, I) is on the coefficients of the clipped regression scaled to
    /// the unit box), its intervals scaled back by B_y/B_x. Needs equal bounds on every x_j.
    #[arg(long)]
    bound_units: bool,
    /// Auxiliary data sets per grid point of `--projection`'s threshold search.
    #[arg(long, default_value_t = 3)]
    search_repeats: usize,
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
    /// Simulation-based calibration: each replication draws its data from the default
    /// data-model prior itself instead of a fixed design (κ, ν uniform on the prior's grid,
    /// β ~ N(0, I)). `latent`: Σxxᵀ drawn from exactly the posterior's prior of the latent
    /// statistics (independent Gaussian entries truncated to their boxes, joint draw redone
    /// until positive definite) and Σxy | Σxxᵀ, β ~ N(Σxxᵀβ, Σxxᵀ) — no records, checks the
    /// implementation; `gaussian`: the records' second-moment matrix M = κ·W/ν with
    /// W ~ Wishart(ν, diag(m)) (redrawn until M_jj ≤ B_j²), x ~ N(0, M) not clipped — checks
    /// the CLT and the diagonal approximation; `clipped`: the same x clipped to the bounds,
    /// y = xᵀβ + N(0, 1) from the clipped x, released by the library's Gaussian mechanism
    /// (|y| ≤ 8 clipped too) — bounded records whose realised second moments are not the drawn
    /// ones (printed per cell); `clipped-after-y`: y from the unclipped x, then x clipped — the
    /// regression model no longer holds for the released records (what clipping does to data).
    #[arg(long, value_enum)]
    x_from_prior: Option<FromPrior>,
    /// Write one CSV line per replication here (n, ε, replication, log2 κ and log10 ν of a
    /// prior draw, then per method the number of the D coefficients its 50% and 90% intervals
    /// cover, and the ESS of each noise-aware fit's weights), for stratified summaries.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Adaptive draws of the noise-aware fits (`blr::AdaptiveDraws`): draw more while the
    /// effective sample size is below this fraction of `--draws` (0 = off: exactly `--draws`).
    #[arg(long, default_value_t = AdaptiveDraws::default().min_ess_fraction)]
    min_ess_fraction: f64,
    /// Adaptive draws: at most this many times `--draws` in total.
    #[arg(long, default_value_t = AdaptiveDraws::default().max_factor)]
    max_draws_factor: usize,
    /// Write the default noise-aware method's coverage per cell and level here (CSV: n, ε,
    /// level, coverage, replication-level s.e.), for `--combine`.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Draw no study: read `LABEL=PATH` summaries written by `--summary` (several runs, e.g.
    /// the fixed designs and the simulation-based calibration) and write one figure of their
    /// noise-aware coverage against ε per level and n, ± 2 s.e., to `--figure`.
    #[arg(long, value_delimiter = ',')]
    combine: Vec<String>,
}

/// What a simulation-based calibration replication draws from the prior (`--x-from-prior`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FromPrior {
    Latent,
    Gaussian,
    Clipped,
    ClippedAfterY,
}

/// Summed per-replication diagnostics of the prior draws of a cell.
#[derive(Default, Clone, Copy, Debug)]
struct SbcDiagnostics {
    /// Joint draws rejected (not positive definite / a second moment above B²) per accepted one.
    rejected: f64,
    /// Mean over j of (Σxxᵀ)_jj / (n M_jj): the realised diagonal against the drawn moments.
    diagonal_ratio: f64,
    /// Mean over j < k of |(Σxxᵀ)_jk / n − M_jk| / √(M_jj M_kk): realised correlations' error.
    off_diagonal_error: f64,
    /// Same, of the realised Σxxᵀ/n with x unclipped (so clipping's share can be read off).
    off_diagonal_error_unclipped: f64,
    /// Fraction of the x coordinates the clipping changed.
    clipped: f64,
    /// log10 ν of the draw (mean over replications).
    log_dof: f64,
    /// log2 κ of the draw (mean over replications).
    log_kappa: f64,
}

fn main() -> Res<()> {
    let args = Args::parse();
    if args.x_condition.is_some() && (args.x_mix > 0.0 || args.x_from_prior.is_some()) {
        return Err("--x-condition excludes --x-mix and --x-from-prior".into());
    }
    if args.bound_units && !args.projection {
        return Err("--bound-units needs --projection".into());
    }
    if args.projection && args.x_from_prior.is_some() {
        return Err("--projection excludes --x-from-prior".into());
    }
    if !args.combine.is_empty() {
        return combine_summaries(&args.combine, &args.figure);
    }
    let adaptive = if args.min_ess_fraction > 0.0 {
        Some(AdaptiveDraws {
            min_ess_fraction: args.min_ess_fraction,
            max_factor: args.max_draws_factor,
        })
    } else {
        None
    };
    let reps = args.replications as usize;
    let start = Instant::now();
    let run_wishart = args.wishart || args.wishart_dof.is_some();
    let methods_run = if run_wishart { 4 } else { 3 };
    let progress =
        common::progress::bar((SIZES.len() * EPSILONS.len() * reps) as u64, "replications");
    let bounds_x = [1.0; D];
    let prior = Prior::default();
    let mut cells = vec![vec![Cell::default(); EPSILONS.len()]; SIZES.len()];
    let mut log = match &args.log {
        Some(path) => {
            let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
            write!(file, "n,epsilon,replication,log2_kappa,log10_dof")?;
            for method in ["naive", "flat", "noise_aware", "wishart"]
                .iter()
                .take(methods_run)
            {
                write!(file, ",{method}_50,{method}_90")?;
            }
            writeln!(
                file,
                ",ess_flat,ess_noise_aware,ess_wishart,initial_ess_noise_aware,draws_noise_aware"
            )?;
            Some(file)
        }
        None => None,
    };
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
                let release = |x: &[f64], y: &[f64]| -> Res<SuffStats> {
                    let mut accountant = Accountant::new(budget)?;
                    Ok(release_stats(
                        x,
                        y,
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
                    )?)
                };
                let mut noise = noise;
                let mut fit_bounds = bounds_x.to_vec();
                let mut fit_bounds_y = BOUND_Y;
                let mut clipped_target: Option<Vec<f64>> = None;
                let (stats, beta, draw_kappa, draw_dof) = match args.x_from_prior {
                    None if args.projection => {
                        const FRESH: usize = 50_000;
                        let (x, y, beta) = match args.x_condition {
                            Some(kappa) => draw_conditioned(n + FRESH, kappa, seed)?,
                            None => draw_data(n + FRESH, args.x_spread, args.x_mix, seed)?,
                        };
                        let (x, fresh_x) = x.split_at(n * D);
                        let (y, fresh_y) = y.split_at(n);
                        let config = FitConfig {
                            aggregation: Aggregation::Trusted,
                            mechanism: Mechanism::Gaussian,
                            budget,
                            assumed_x: bounds_x.to_vec(),
                            assumed_y: BOUND_Y,
                            projection: Some(ProjectionConfig {
                                search: SearchConfig {
                                    repeats: args.search_repeats,
                                    ..SearchConfig::dca(0)
                                },
                                ..ProjectionConfig::default()
                            }),
                            prior,
                            with_yy: false,
                        };
                        let fit = blr::fit(
                            x,
                            y,
                            n,
                            D,
                            &config,
                            RngSource::InsecureFixedSeed(seed ^ (3 << 60)),
                        )?;
                        noise = fit.stats_noise(&config)?;
                        fit_bounds = fit.bounds_x.clone();
                        fit_bounds_y = fit.bound_y;
                        let outside =
                            |row: &[f64]| row.iter().zip(&fit_bounds).any(|(v, b)| v.abs() > *b);
                        cell.clipped_y +=
                            y.iter().filter(|v| v.abs() > fit.bound_y).count() as f64 / n as f64;
                        cell.clipped_x +=
                            x.chunks_exact(D).filter(|r| outside(r)).count() as f64 / n as f64;
                        let clip = |v: f64, b: f64| v.clamp(-b, b);
                        let cx: Vec<f64> = fresh_x
                            .chunks_exact(D)
                            .flat_map(|r| {
                                r.iter()
                                    .zip(&fit_bounds)
                                    .map(|(v, b)| clip(*v, *b))
                                    .collect::<Vec<_>>()
                            })
                            .collect();
                        let cy: Vec<f64> = fresh_y.iter().map(|v| clip(*v, fit.bound_y)).collect();
                        clipped_target = Some(fit_non_private(&cx, &cy, FRESH, D, prior)?.mean);
                        (fit.stats, beta, f64::NAN, f64::NAN)
                    }
                    None => {
                        let (x, y, beta) = match args.x_condition {
                            Some(kappa) => draw_conditioned(n, kappa, seed)?,
                            None => draw_data(n, args.x_spread, args.x_mix, seed)?,
                        };
                        (release(&x, &y)?, beta, f64::NAN, f64::NAN)
                    }
                    Some(mode) => {
                        let draw = draw_from_prior(n, mode, noise, &bounds_x, seed)?;
                        add_diagnostics(&mut cell.sbc, &draw.diagnostics);
                        let stats = match draw.data {
                            PriorData::Records { x, y } => release(&x, &y)?,
                            PriorData::Released(stats) => stats,
                        };
                        let (kappa, dof) = (
                            2f64.powf(draw.diagnostics.log_kappa),
                            10f64.powf(draw.diagnostics.log_dof),
                        );
                        (stats, draw.beta, kappa, dof)
                    }
                };
                let mut stats = stats;
                let mut back = 1.0;
                if args.bound_units && clipped_target.is_some() {
                    let bx = fit_bounds[0];
                    if fit_bounds.iter().any(|b| (b - bx).abs() > 1e-12 * bx) {
                        return Err("--bound-units needs equal bounds on every x_j".into());
                    }
                    let by = fit_bounds_y;
                    stats.xx.iter_mut().for_each(|v| *v /= bx * bx);
                    stats.xy.iter_mut().for_each(|v| *v /= bx * by);
                    noise = StatsNoise {
                        xx: scaled_noise(noise.xx, 1.0 / (bx * bx)),
                        xy: scaled_noise(noise.xy, 1.0 / (bx * by)),
                    };
                    fit_bounds = vec![1.0; D];
                    back = by / bx;
                }
                let naive = posterior(&stats, prior)?;
                // The flat prior (the first version, kept for comparison) always makes exactly
                // `--draws` draws, so its columns stay as they were; the data-model and Wishart
                // fits use the library's adaptive draws (`--min-ess-fraction`).
                let aware = |latent, adaptive| {
                    noise_aware_posterior(
                        &stats,
                        noise,
                        prior,
                        NoiseAwareOptions {
                            draws: args.draws,
                            bounds_x: Some(&fit_bounds),
                            latent,
                            adaptive,
                        },
                        &RngSource::InsecureFixedSeed(seed ^ (2 << 60)),
                    )
                };
                let flat = aware(LatentPrior::Flat, None)?;
                let data_model = aware(
                    LatentPrior::DataModel {
                        second_moments: None,
                        dof: args.dof,
                    },
                    adaptive,
                )?;
                let wishart = if run_wishart {
                    Some(aware(
                        LatentPrior::Wishart {
                            second_moments: None,
                            dof: args.wishart_dof,
                        },
                        adaptive,
                    )?)
                } else {
                    None
                };
                let mut rep_covered = [[0usize; 2]; 4];
                for (l, &level) in LEVELS.iter().enumerate() {
                    let mut methods = vec![
                        naive_coefficients(&naive, level)?,
                        flat.coefficients(level)?,
                        data_model.coefficients(level)?,
                    ];
                    if let Some(w) = &wishart {
                        methods.push(w.coefficients(level)?);
                    }
                    for m in methods.iter_mut().flatten() {
                        (m.lower, m.upper) = (m.lower * back, m.upper * back);
                    }
                    if let Some(target) = &clipped_target {
                        cell.covered_clipped[l] += methods[2]
                            .iter()
                            .zip(target)
                            .filter(|(s, b)| s.lower <= **b && **b <= s.upper)
                            .count();
                    }
                    for (m, summaries) in methods.iter().enumerate() {
                        let mut covered = 0;
                        for (summary, &b) in summaries.iter().zip(&beta) {
                            covered += usize::from(summary.lower <= b && b <= summary.upper);
                            cell.width[m][l] += summary.upper - summary.lower;
                        }
                        cell.covered[m][l] += covered;
                        rep_covered[m][l] = covered;
                        cell.covered_sq[m][l] += (covered as f64 / D as f64).powi(2);
                    }
                }
                cell.intervals += D;
                cell.replications += 1;
                if let Some(file) = log.as_mut() {
                    write!(
                        file,
                        "{n},{epsilon},{rep},{},{}",
                        draw_kappa.log2(),
                        draw_dof.log10()
                    )?;
                    for covered in &rep_covered[..methods_run] {
                        write!(file, ",{},{}", covered[0], covered[1])?;
                    }
                    writeln!(
                        file,
                        ",{},{},{},{},{}",
                        flat.effective_sample_size,
                        data_model.effective_sample_size,
                        wishart
                            .as_ref()
                            .map_or(f64::NAN, |w| w.effective_sample_size),
                        data_model.initial_effective_sample_size,
                        data_model.draws_used
                    )?;
                }
                let low = 0.1 * args.draws as f64;
                if data_model.initial_effective_sample_size < low {
                    cell.low_ess_initial += 1;
                    cell.low_ess_covered += rep_covered[2][1];
                }
                cell.low_ess_final += usize::from(data_model.effective_sample_size < low);
                cell.draws_used += data_model.draws_used;
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
            if args.x_from_prior.is_some() {
                let r = reps as f64;
                let g = &cell.sbc;
                progress.suspend(|| {
                    println!(
                        "n = {n}, ε = {epsilon}: prior draws: {:.2} rejected per accepted, mean \
                         log10 ν {:.2}, mean log2 κ {:.2}, realised/drawn diagonal {:.3}, |realised − drawn| \
                         correlation {:.4} (unclipped x {:.4}), clipped coordinates {:.4}",
                        g.rejected / r,
                        g.log_dof / r,
                        g.log_kappa / r,
                        g.diagonal_ratio / r,
                        g.off_diagonal_error / r,
                        g.off_diagonal_error_unclipped / r,
                        g.clipped / r
                    )
                });
            }
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
                );
                if args.projection {
                    println!(
                        "n = {n}, ε = {epsilon}: projection: clipped y {:.1}%, rows with a \
                         clipped x {:.1}% (exact, a NON-PRIVATE diagnostic); noise-aware \
                         coverage of the clipped-data regression's coefficients 50% {:.3}, \
                         90% {:.3}",
                        100.0 * cell.clipped_y / reps as f64,
                        100.0 * cell.clipped_x / reps as f64,
                        cell.covered_clipped[0] as f64 / cell.intervals as f64,
                        cell.covered_clipped[1] as f64 / cell.intervals as f64
                    );
                }
                println!(
                    "n = {n}, ε = {epsilon}: noise-aware fits with ESS < {:.0}: {} from the first \
                     {} draws, {} after adaptive draws (mean draws {:.0}); the former's 90% \
                     coverage {:.3}",
                    0.1 * args.draws as f64,
                    cell.low_ess_initial,
                    args.draws,
                    cell.low_ess_final,
                    cell.draws_used as f64 / reps as f64,
                    cell.low_ess_covered as f64 / (D * cell.low_ess_initial).max(1) as f64
                );
            });
        }
    }
    progress.finish_and_clear();
    if let Some(mut file) = log {
        file.flush()?;
    }
    let table = render_table(&cells, reps, &args, methods_run)?;
    println!("\n{table}");
    print_low_ess(&cells, args.draws);
    if let Some(path) = &args.summary {
        write_summary(&cells, path)?;
        println!("summary: {}", path.display());
    }
    if args.sizes.is_empty() && args.epsilons.is_empty() {
        write_figure(&cells, reps, &args.figure, methods_run)?;
        println!("figure: {}", args.figure.display());
    } else {
        println!("no figure: only some cells were run");
    }
    println!("total time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// `noise` on statistics multiplied by `factor`.
fn scaled_noise(noise: EntryNoise, factor: f64) -> EntryNoise {
    match noise {
        EntryNoise::Gaussian { sd } => EntryNoise::Gaussian { sd: sd * factor },
        EntryNoise::Laplace { scale } => EntryNoise::Laplace {
            scale: scale * factor,
        },
    }
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

/// One data set of the `--x-condition` design with its true β (see the option's help).
fn draw_conditioned(n: usize, kappa: f64, seed: u64) -> Res<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    if !(kappa.is_finite() && kappa >= 1.0) {
        return Err(format!("--x-condition must be finite and ≥ 1, got {kappa}").into());
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0)?;
    let uniform =
        |rng: &mut ChaCha20Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let beta: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
    // A random rotation: Gram–Schmidt on Gaussian columns.
    let mut q = vec![[0.0f64; D]; D];
    for k in 0..D {
        let mut v: [f64; D] = std::array::from_fn(|_| normal.sample(&mut rng));
        for prev in &q[..k] {
            let dot: f64 = v.iter().zip(prev).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(prev).for_each(|(a, b)| *a -= dot * b);
        }
        let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        q[k] = v.map(|a| a / norm);
    }
    // L = Q diag(s) Qᵀ with s_k = κ^(−k/(2(D−1))): LLᵀ has eigenvalues s_k² from 1 to 1/κ.
    let s: Vec<f64> = (0..D)
        .map(|k| kappa.powf(-(k as f64) / (2.0 * (D - 1) as f64)))
        .collect();
    let mut l = [[0.0f64; D]; D];
    for (i, row) in l.iter_mut().enumerate() {
        for (j, entry) in row.iter_mut().enumerate() {
            *entry = (0..D).map(|k| q[k][i] * s[k] * q[k][j]).sum();
        }
    }
    let c = l
        .iter()
        .map(|row| row.iter().map(|a| a.abs()).sum::<f64>())
        .fold(0.0f64, f64::max);
    let (mut x, mut y) = (Vec::with_capacity(n * D), Vec::with_capacity(n));
    for _ in 0..n {
        let u: [f64; D] = std::array::from_fn(|_| uniform(&mut rng));
        let row: Vec<f64> = l
            .iter()
            .map(|r| r.iter().zip(&u).map(|(a, b)| a * b).sum::<f64>() / c)
            .collect();
        y.push(row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() + normal.sample(&mut rng));
        x.extend(row);
    }
    Ok((x, y, beta))
}

/// The data of one simulation-based calibration replication.
enum PriorData {
    /// Records to release through the library's mechanism.
    Records { x: Vec<f64>, y: Vec<f64> },
    /// Statistics already released (the model's Gaussian noise added here).
    Released(SuffStats),
}

/// One replication drawn from the default data-model prior (`--x-from-prior`).
struct PriorDraw {
    beta: Vec<f64>,
    data: PriorData,
    diagnostics: SbcDiagnostics,
}

fn add_diagnostics(sum: &mut SbcDiagnostics, one: &SbcDiagnostics) {
    sum.rejected += one.rejected;
    sum.diagonal_ratio += one.diagonal_ratio;
    sum.off_diagonal_error += one.off_diagonal_error;
    sum.off_diagonal_error_unclipped += one.off_diagonal_error_unclipped;
    sum.clipped += one.clipped;
    sum.log_dof += one.log_dof;
    sum.log_kappa += one.log_kappa;
}

/// Lower Cholesky factor of the symmetric D × D `a` (row-major), `None` unless positive definite.
fn cholesky(a: &[f64]) -> Option<Vec<f64>> {
    let mut l = vec![0.0; D * D];
    for i in 0..D {
        for j in 0..=i {
            let s: f64 = a[i * D + j] - (0..j).map(|k| l[i * D + k] * l[j * D + k]).sum::<f64>();
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return None;
                }
                l[i * D + i] = s.sqrt();
            } else {
                l[i * D + j] = s / l[j * D + j];
            }
        }
    }
    Some(l)
}

/// Packed upper triangle → full row-major D × D.
fn unpack(packed: &[f64]) -> Vec<f64> {
    let mut full = vec![0.0; D * D];
    for j in 0..D {
        for k in j..D {
            let v = packed[packed_index(j, k, D)];
            full[j * D + k] = v;
            full[k * D + j] = v;
        }
    }
    full
}

/// Realised-against-drawn moments: (mean of A_jj/(n M_jj), mean over j < k of
/// |A_jk/n − M_jk| / √(M_jj M_kk)).
fn moment_errors(a: &[f64], m: &[f64], n: usize) -> (f64, f64) {
    let n = n as f64;
    let diagonal = (0..D)
        .map(|j| a[j * D + j] / (n * m[j * D + j]))
        .sum::<f64>()
        / D as f64;
    let mut off = 0.0;
    for j in 0..D {
        for k in j + 1..D {
            off += (a[j * D + k] / n - m[j * D + k]).abs() / (m[j * D + j] * m[k * D + k]).sqrt();
        }
    }
    (diagonal, off / (D * (D - 1) / 2) as f64)
}

/// One replication of the simulation-based calibration: hyperparameters (κ, ν) uniform on the
/// default prior's grid (second moments m_j = B_j²/3 = 1/3), β ~ N(0, I), then the data by
/// `mode` (see `--x-from-prior`). Σxxᵀ's and Σxy's release noise is `noise` (Gaussian).
fn draw_from_prior(
    n: usize,
    mode: FromPrior,
    noise: StatsNoise,
    bounds_x: &[f64],
    seed: u64,
) -> Res<PriorDraw> {
    let sd = |e: EntryNoise| match e {
        EntryNoise::Gaussian { sd } => Ok(sd),
        EntryNoise::Laplace { .. } => Err("the calibration study uses Gaussian noise"),
    };
    let (sd_xx, sd_xy) = (sd(noise.xx)?, sd(noise.xy)?);
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (3 << 60));
    let normal = Normal::new(0.0, 1.0)?;
    let uniform = |rng: &mut ChaCha20Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let beta: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
    let moments: Vec<f64> = bounds_x.iter().map(|b| b * b / 3.0).collect();
    let grid = data_model_grid(&moments, Some(bounds_x));
    let nf = n as f64;
    let mut diagnostics = SbcDiagnostics::default();
    let pick = |rng: &mut ChaCha20Rng| {
        let i = ((uniform(rng) * grid.len() as f64) as usize).min(grid.len() - 1);
        grid[i]
    };
    if mode == FromPrior::Latent {
        // Σxxᵀ from exactly the posterior's prior: independent Gaussian entries, each truncated
        // to its box (by rejection, as the posterior's draws), the joint draw redone until
        // positive definite (a Gram matrix of n > d records in general position).
        let (a, l, kappa, dof) = loop {
            let (kappa, dof) = pick(&mut rng);
            let scaled: Vec<f64> = moments.iter().map(|m| kappa * m).collect();
            let mut packed = vec![0.0; packed_len(D)];
            for j in 0..D {
                for k in j..D {
                    let (mean, var) = entry_prior(j, k, nf, &scaled, dof);
                    let top = nf * bounds_x[j] * bounds_x[k];
                    let lo = if j == k { 0.0 } else { -top };
                    let mut v = mean;
                    for _ in 0..1000 {
                        v = mean + var.sqrt() * normal.sample(&mut rng);
                        if (lo..=top).contains(&v) {
                            break;
                        }
                    }
                    packed[packed_index(j, k, D)] = v.clamp(lo, top);
                }
            }
            let a = unpack(&packed);
            match cholesky(&a) {
                Some(l) => break (a, l, kappa, dof),
                None => diagnostics.rejected += 1.0,
            }
        };
        // Σxy | Σxxᵀ, β ~ N(Σxxᵀβ, Σxxᵀ/λ), λ = 1: exact for y = xᵀβ + N(0, 1) given the records.
        let xi: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
        let xy: Vec<f64> = (0..D)
            .map(|j| {
                (0..D).map(|k| a[j * D + k] * beta[k]).sum::<f64>()
                    + (0..=j).map(|k| l[j * D + k] * xi[k]).sum::<f64>()
            })
            .collect();
        let m: Vec<f64> = (0..D * D)
            .map(|i| {
                if i / D == i % D {
                    kappa * moments[i / D]
                } else {
                    0.0
                }
            })
            .collect();
        let (ratio, off) = moment_errors(&a, &m, n);
        diagnostics.diagonal_ratio = ratio;
        diagnostics.off_diagonal_error = off;
        diagnostics.off_diagonal_error_unclipped = off;
        diagnostics.log_dof = dof.log10();
        diagnostics.log_kappa = kappa.log2();
        let mut xx = vec![0.0; packed_len(D)];
        for j in 0..D {
            for k in j..D {
                xx[packed_index(j, k, D)] = a[j * D + k] + sd_xx * normal.sample(&mut rng);
            }
        }
        let xy = xy
            .iter()
            .map(|v| v + sd_xy * normal.sample(&mut rng))
            .collect();
        let stats = SuffStats {
            d: D,
            n,
            xx,
            xy,
            yy: 0.0,
        };
        return Ok(PriorDraw {
            beta,
            data: PriorData::Released(stats),
            diagnostics,
        });
    }
    // The records' second-moment matrix M = κ·W/ν, W ~ Wishart(ν, diag(m)) by Bartlett's
    // decomposition (mean κ·diag(m), Var M_jk = κ²(m_j m_k + [j = k] m_j²)/ν: the moments the
    // posterior's prior gives), redrawn until every M_jj ≤ B_j² (bounded records).
    let (m, kappa, dof) = loop {
        let (kappa, dof) = pick(&mut rng);
        let mut z = vec![0.0; D * D];
        for i in 0..D {
            z[i * D + i] = rand_distr::ChiSquared::new(dof - i as f64)?
                .sample(&mut rng)
                .sqrt();
            for j in 0..i {
                z[i * D + j] = normal.sample(&mut rng);
            }
        }
        let mut m = vec![0.0; D * D];
        for i in 0..D {
            for j in 0..D {
                let zz: f64 = (0..D).map(|k| z[i * D + k] * z[j * D + k]).sum();
                m[i * D + j] = kappa * (moments[i] * moments[j]).sqrt() * zz / dof;
            }
        }
        if (0..D).all(|j| m[j * D + j] <= bounds_x[j] * bounds_x[j]) {
            break (m, kappa, dof);
        }
        diagnostics.rejected += 1.0;
    };
    diagnostics.log_dof = dof.log10();
    diagnostics.log_kappa = kappa.log2();
    let c = cholesky(&m).ok_or("drawn second-moment matrix not positive definite")?;
    let (mut x, mut y) = (Vec::with_capacity(n * D), Vec::with_capacity(n));
    let mut clipped_x = Vec::with_capacity(if mode == FromPrior::Gaussian {
        0
    } else {
        n * D
    });
    let mut changed = 0usize;
    for _ in 0..n {
        let g: Vec<f64> = (0..D).map(|_| normal.sample(&mut rng)).collect();
        let row: Vec<f64> = (0..D)
            .map(|j| (0..=j).map(|k| c[j * D + k] * g[k]).sum())
            .collect();
        let e = normal.sample(&mut rng);
        if mode == FromPrior::Gaussian {
            y.push(row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() + e);
        } else {
            let clipped: Vec<f64> = row
                .iter()
                .zip(bounds_x)
                .map(|(v, b)| v.clamp(-b, *b))
                .collect();
            changed += row.iter().zip(&clipped).filter(|(a, b)| a != b).count();
            // `clipped`: y from the records as released (the regression model holds, only the
            // second moments move); `clipped-after-y`: y from the unclipped x.
            let source = if mode == FromPrior::Clipped {
                &clipped
            } else {
                &row
            };
            y.push(source.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>() + e);
            clipped_x.extend(clipped);
        }
        x.extend(row);
    }
    let unclipped = SuffStats::compute(&x, &y, n, D)?;
    let (_, off_unclipped) = moment_errors(&unpack(&unclipped.xx), &m, n);
    diagnostics.off_diagonal_error_unclipped = off_unclipped;
    if mode == FromPrior::Gaussian {
        let (ratio, off) = moment_errors(&unpack(&unclipped.xx), &m, n);
        diagnostics.diagonal_ratio = ratio;
        diagnostics.off_diagonal_error = off;
        let mut stats = unclipped;
        stats
            .xx
            .iter_mut()
            .for_each(|v| *v += sd_xx * normal.sample(&mut rng));
        stats
            .xy
            .iter_mut()
            .for_each(|v| *v += sd_xy * normal.sample(&mut rng));
        return Ok(PriorDraw {
            beta,
            data: PriorData::Released(stats),
            diagnostics,
        });
    }
    let x = clipped_x;
    diagnostics.clipped = changed as f64 / (n * D) as f64;
    let clipped = SuffStats::compute(&x, &y, n, D)?;
    let (ratio, off) = moment_errors(&unpack(&clipped.xx), &m, n);
    diagnostics.diagonal_ratio = ratio;
    diagnostics.off_diagonal_error = off;
    Ok(PriorDraw {
        beta,
        data: PriorData::Records { x, y },
        diagnostics,
    })
}

fn render_table(cells: &[Vec<Cell>], reps: usize, args: &Args, methods: usize) -> Res<String> {
    let mut out = format!(
        "coverage of the credible intervals for each of the {D} coefficients ({reps} replications \
         per cell, {} intervals; x ~ U(−{s}, {s}), mixed with a shared coordinate up to W = {w}, \
         bounds 1; data-model prior ν = {dof}; Wishart ν₀ = {wdof}), ± the replication-level standard error, mean width in brackets; data: {data}{cond}{proj}\n\n",
        reps * D,
        proj = if args.projection {
            format!(
                ", fitted through blr::fit with ProjectionConfig::default() ({} search repeats): \
                 coverage of the unclipped β",
                args.search_repeats
            )
        } else {
            String::new()
        },
        cond = args.x_condition.map_or(String::new(), |k| format!(
            ", correlated design with condition number {k:e} (--x-condition)"
        )),
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
        data = match args.x_from_prior {
            None => "fixed design".to_string(),
            Some(mode) => format!("drawn from the prior (--x-from-prior {mode:?})"),
        },
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
            if c.replications == 0 {
                continue; // not selected by --sizes / --epsilons
            }
            let k = c.intervals as f64;
            write!(out, "| {n} | {epsilon} |")?;
            for l in 0..2 {
                for m in 0..methods {
                    let r = c.replications as f64;
                    let mean = c.covered[m][l] as f64 / k;
                    let se = if c.replications > 1 {
                        ((c.covered_sq[m][l] - r * mean * mean) / (r - 1.0) / r)
                            .max(0.0)
                            .sqrt()
                    } else {
                        f64::NAN
                    };
                    write!(out, " {mean:.3} ± {se:.3} ({:.2}) |", c.width[m][l] / k)?;
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

/// Totals over the cells of the low-ESS counts (noise-aware, default prior).
fn print_low_ess(cells: &[Vec<Cell>], draws: usize) {
    let (mut fits, mut initial, mut last, mut covered, mut used) = (0, 0, 0, 0, 0);
    for c in cells.iter().flatten() {
        fits += c.replications;
        initial += c.low_ess_initial;
        last += c.low_ess_final;
        covered += c.low_ess_covered;
        used += c.draws_used;
    }
    if fits == 0 {
        return;
    }
    println!(
        "noise-aware fits with ESS < {:.0}: {initial} of {fits} ({:.2}%) from the first {draws} \
         draws, {last} ({:.2}%) after adaptive draws; mean draws {:.1}; 90% coverage of the \
         former fits {:.3} ({} intervals)",
        0.1 * draws as f64,
        100.0 * initial as f64 / fits as f64,
        100.0 * last as f64 / fits as f64,
        used as f64 / fits as f64,
        covered as f64 / (D * initial).max(1) as f64,
        D * initial
    );
}

/// The replication-level standard error of a coverage (see `render_table`).
fn coverage_se(c: &Cell, m: usize, l: usize) -> f64 {
    let r = c.replications as f64;
    let mean = c.covered[m][l] as f64 / c.intervals as f64;
    if c.replications > 1 {
        ((c.covered_sq[m][l] - r * mean * mean) / (r - 1.0) / r)
            .max(0.0)
            .sqrt()
    } else {
        f64::NAN
    }
}

/// `--summary`: the default noise-aware method's coverage per run cell and level.
fn write_summary(cells: &[Vec<Cell>], path: &std::path::Path) -> Res<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = String::from("n,epsilon,level,coverage,se\n");
    for (s, &n) in SIZES.iter().enumerate() {
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let c = &cells[s][e];
            if c.replications == 0 {
                continue;
            }
            for (l, &level) in LEVELS.iter().enumerate() {
                let mean = c.covered[2][l] as f64 / c.intervals as f64;
                writeln!(
                    out,
                    "{n},{epsilon},{level},{mean:.6},{:.6}",
                    coverage_se(c, 2, l)
                )?;
            }
        }
    }
    std::fs::write(path, out)?;
    Ok(())
}

/// `--combine`: one figure of several runs' summaries (noise-aware coverage ± 2 s.e. against ε,
/// panels 90% / 50% × n).
fn combine_summaries(specs: &[String], figure: &std::path::Path) -> Res<()> {
    // (label, rows of (n, ε, level, coverage, se))
    let mut runs = Vec::new();
    for spec in specs {
        let (label, path) = spec
            .split_once('=')
            .ok_or_else(|| format!("--combine wants LABEL=PATH, got {spec:?}"))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read summary {path:?}: {e}"))?;
        let mut rows = Vec::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            let fields: Vec<f64> = line
                .split(',')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{path}:{}: {e}", i + 1))?;
            if fields.len() != 5 {
                return Err(format!("{path}:{}: expected 5 fields", i + 1).into());
            }
            rows.push((fields[0], fields[1], fields[2], fields[3], fields[4]));
        }
        runs.push((label.to_string(), rows));
    }
    let mut panels = Vec::new();
    for l in [1, 0] {
        let level = LEVELS[l];
        for &n in &SIZES {
            let series = runs
                .iter()
                .map(|(label, rows)| Series {
                    name: label.clone(),
                    points: rows
                        .iter()
                        .filter(|r| r.0 == n as f64 && r.2 == level)
                        .map(|r| Point::with_band(r.1, r.3, r.3 - 2.0 * r.4, r.3 + 2.0 * r.4))
                        .collect(),
                    ..Series::default()
                })
                .collect();
            let (lo, hi) = if l == 1 { (0.7, 1.0) } else { (0.3, 0.7) };
            panels.push(Panel {
                title: format!(
                    "noise-aware {:.0}% intervals, n = {n}, d = {D} (± 2 s.e.)",
                    level * 100.0
                ),
                x_label: "ε".into(),
                y_label: "empirical coverage".into(),
                log_x: true,
                y_range: Some((lo, hi)),
                series,
                guides: vec![(format!("nominal {level}"), level)],
                target: (l == 1).then(|| ("target 0.88–0.92".to_string(), 0.88, 0.92)),
                legend: Legend::LowerRight,
                ..Panel::default()
            });
        }
    }
    write_svg(figure, &panels, 2, (520, 360))?;
    println!("figure: {}", figure.display());
    Ok(())
}
