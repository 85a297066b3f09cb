//! Iterative private learning over DCA (DCA paper Sec. 4.2) against the one-shot methods:
//! 1. logistic regression, test AUC vs ε — iterative DP-SGD through DCA (`dca-learning`), PLR by
//!    objective perturbation (trusted aggregator, `plr-stacking`) and the non-private optimum —
//!    on the paper-sized synthetic set (n = 5000, d = 100, generated as in `examples/stacking.rs`)
//!    and on the bundled digits 0-vs-8;
//! 2. Bayesian linear regression on diabetes: DP variational inference through DCA against SSP
//!    BLR through DCA (with and without the DCA paper's projection) and the non-private posterior;
//! 3. wall time per iteration at N = 10⁴ clients, d = 100, and the share of it in the DCA round.
//!
//! Run: `cargo run --release --example iterative` (digits, diabetes and the timing: about 20 s);
//! `-- --full` adds the paper-sized synthetic set (n = 5000, d = 100, 400 iterations per fit:
//! about 15 minutes on a loaded 2-core machine). `--help` for the seed and the figure's path
//! (default `target/figures/iterative.svg`: AUC and MAE against ε per method).
//! Randomness uses `RngSource::InsecureFixedSeed` so the tables are reproducible — an
//! experiment, not a deployment (use `RngSource::Os` there).
//!
//! Hyper-parameters (iterations, sampling rate, clipping bound, learning rate) are fixed by hand
//! once for all ε, not tuned per ε or on test data. The iterative fits are (ε, δ = 1e-5)-DP per
//! client (every iterate released) by the RDP accountant; PLR is pure ε-DP; SSP BLR (ε, 1e-5).

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use blr::StdSource;
use blr::data::centre_and_scale_to_range;
use blr::{FitConfig, Mechanism, Prior, ProjectionConfig, fit, fit_non_private, mae, predict};
use clap::Parser;
use dca_learning::{
    ClientSampling, Model, Optimizer, Privacy, Records, Trainer, TrainerConfig,
    calibrate_noise_multiplier, clip_to_norm, logistic_predict_proba, vi_predict_mean,
};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use plr_stacking::{Dataset, PlrConfig, auc, fit_plr};
use projection::search::{OmegaGrid, SearchConfig};
use projection::{Aggregation, DcaSettings, StdMode};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

#[allow(dead_code)] // each example uses part of the shared module
mod common;
use common::figure::{Legend, Panel, Point, Series, write_svg};
use common::summary::mean_sd;
use common::synthetic::{Table, paper_synthetic};

const EPSILONS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];
const DELTA: f64 = 1e-5;
const LR_SPLITS: usize = 3;
const BLR_SPLITS: usize = 5;

type Res<T> = Result<T, Box<dyn Error>>;

/// Iterative DP learning over DCA (DP-SGD logistic regression, DP-VI BLR) against one-shot PLR
/// and SSP BLR.
#[derive(Parser, Debug)]
#[command(name = "iterative")]
struct Args {
    /// Master seed of data, splits and noise (an experiment: fixed seeds are insecure).
    #[arg(long, default_value_t = 2019)]
    seed: u64,
    /// Also the paper-sized synthetic set (n = 5000, d = 100): about 15 more minutes.
    #[arg(long)]
    full: bool,
    /// Where to write the SVG figure.
    #[arg(long, default_value = "target/figures/iterative.svg")]
    figure: PathBuf,
}

/// One data set's scores: `values[method][ε]` over splits, and the printed table.
struct Sweep {
    names: Vec<&'static str>,
    values: Vec<Vec<Vec<f64>>>,
    table: String,
}

/// The iterative logistic-regression run: Poisson rate, iterations, C, Adam step, λ.
struct LrSetting {
    rate: f64,
    iterations: u64,
    clip: f64,
    learning_rate: f64,
    l2: f64,
}

fn main() -> Res<()> {
    let args = Args::parse();
    let seed = args.seed;
    let start = Instant::now();

    let synthetic = if args.full {
        let synthetic = paper_synthetic(5000, 100, seed)?;
        println!(
            "synthetic (stacking example's MNIST-after-PCA stand-in): {} rows × {} features",
            synthetic.n(),
            synthetic.d
        );
        let synthetic_setting = LrSetting {
            rate: 0.05,
            iterations: 400,
            clip: 1.0,
            learning_rate: 0.02,
            l2: 1e-3,
        };
        Some(lr_sweep(&synthetic, &synthetic_setting, seed)?)
    } else {
        println!("synthetic set skipped (--full runs it: about 15 minutes more)");
        None
    };

    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits_0_vs_8.csv"
    );
    let (x, y, d) = common::csv_input::read_binary_labelled(path.as_ref(), "label")?;
    let mut digits = Table { x, y, d };
    // Public bound: pixels are 0..16, so (x − 8)/64 gives ‖x‖ ≤ 1 (as in examples/stacking.rs).
    digits.x.iter_mut().for_each(|v| *v = (*v - 8.0) / 64.0);
    println!(
        "\ndigits 0 vs 8: {} rows × {} pixels (bundled)",
        digits.n(),
        digits.d
    );
    let digits_setting = LrSetting {
        rate: 0.2,
        iterations: 100,
        clip: 1.0,
        learning_rate: 0.05,
        l2: 1e-2,
    };
    let digits_sweep = lr_sweep(&digits, &digits_setting, seed + 1)?;

    println!("\ndiabetes: BLR by DP-VI vs SSP over DCA");
    let blr = blr_sweep(seed + 2)?;

    println!("\ntiming: N = 10^4 clients, d = 100");
    let timing = timing(seed + 3)?;

    println!(
        "\n================ test AUC, mean ± sd over {LR_SPLITS} stratified 60/40 splits ================"
    );
    if let Some(synthetic) = &synthetic {
        println!("\nsynthetic (n = 5000, d = 100)\n{}", synthetic.table);
    }
    println!("digits 0 vs 8 (n = 352, d = 64)\n{}", digits_sweep.table);
    println!(
        "================ diabetes BLR: test MAE (mean ± sd over {BLR_SPLITS} splits, 100 test rows) ================\n\n{}",
        blr.table
    );
    println!("{timing}");
    let mut panels = Vec::new();
    if let Some(synthetic) = &synthetic {
        panels.push(panel(
            "synthetic (n = 5000, d = 100): test AUC",
            "AUC",
            false,
            synthetic,
        ));
    }
    panels.push(panel(
        "digits 0 vs 8 (n = 352, d = 64): test AUC",
        "AUC",
        false,
        &digits_sweep,
    ));
    panels.push(panel(
        "diabetes BLR (DCA protocol): test MAE",
        "MAE",
        true,
        &blr,
    ));
    let columns = panels.len();
    write_svg(&args.figure, &panels, columns, (480, 400))?;
    println!("figure: {}", args.figure.display());
    println!("total time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// One panel: a sweep's scores against ε, mean ± sd band over its splits.
fn panel(title: &str, y_label: &str, log_y: bool, sweep: &Sweep) -> Panel {
    let series = sweep
        .names
        .iter()
        .enumerate()
        .map(|(m, name)| Series {
            name: name.to_string(),
            points: EPSILONS
                .iter()
                .enumerate()
                .map(|(e, &epsilon)| {
                    let (mean, sd) = mean_sd(&sweep.values[m][e]);
                    // A log axis cannot show mean − sd ≤ 0: clamp the band's bottom.
                    let lower = if log_y {
                        (mean - sd).max(mean / 10.0)
                    } else {
                        mean - sd
                    };
                    Point::with_band(epsilon, mean, lower, mean + sd)
                })
                .collect(),
            ..Series::default()
        })
        .collect();
    Panel {
        title: format!("{title}, mean ± sd"),
        x_label: "ε".into(),
        y_label: y_label.into(),
        log_x: true,
        log_y,
        series,
        legend: if log_y {
            Legend::UpperRight
        } else {
            Legend::LowerRight
        },
        ..Panel::default()
    }
}

/// AUC table of iterative DP-SGD over DCA, PLR and the non-private optimum on one data set.
fn lr_sweep(table: &Table, s: &LrSetting, seed: u64) -> Res<Sweep> {
    let names = ["iterative-DCA", "PLR", "non-private"];
    let progress = common::progress::bar((LR_SPLITS * EPSILONS.len()) as u64, "  fits");
    let mut results = vec![vec![Vec::new(); EPSILONS.len()]; names.len()];
    let mut spent = vec![(0.0f64, 0u64); EPSILONS.len()];
    let mut multipliers = vec![0.0; EPSILONS.len()];
    for split in 0..LR_SPLITS {
        let split_seed = seed.wrapping_mul(1_000_003).wrapping_add(split as u64);
        let mut split_rng = ChaCha20Rng::seed_from_u64(split_seed);
        let (train_idx, test_idx) = common::split::stratified_split(&table.y, 0.6, &mut split_rng);
        let (train_x, train_y) = table.rows(&train_idx);
        let (test_x, test_y) = table.rows(&test_idx);
        let n = train_y.len();
        let records = Records::new(train_x.clone(), table.d, train_y.clone())?;
        let dataset = Dataset::from_rows(&train_x, table.d, &train_y)?;
        let np = fit_plr(
            &dataset,
            &PlrConfig {
                intercept: false,
                ..PlrConfig::new(f64::INFINITY, s.l2)
            },
            &RngSource::InsecureFixedSeed(split_seed),
        )?;
        let np_auc = auc(&np.model.predict_proba(&test_x)?, &test_y)?;
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let rng = RngSource::InsecureFixedSeed(split_seed ^ ((e as u64 + 1) << 40));
            let plr = fit_plr(
                &dataset,
                &PlrConfig {
                    intercept: false,
                    ..PlrConfig::new(epsilon, s.l2)
                },
                &rng.derive(0),
            )?;
            results[1][e].push(auc(&plr.model.predict_proba(&test_x)?, &test_y)?);
            results[2][e].push(np_auc);

            let mut config = TrainerConfig {
                model: Model::Logistic {
                    l2: s.l2,
                    intercept: false,
                },
                sampling: ClientSampling::Poisson { rate: s.rate },
                clip_norm: s.clip,
                privacy: Privacy::NonPrivate,
                optimizer: Optimizer::adam(s.learning_rate),
                n_nodes: 2,
                max_dropped: 0,
            };
            let budget = PrivacyLoss::new(epsilon, DELTA)?;
            let z = calibrate_noise_multiplier(&config, n, table.d, budget, s.iterations)?;
            config.privacy = Privacy::Private {
                budget,
                noise_multiplier: z,
            };
            let mut trainer = Trainer::new(config, n, table.d, rng.derive(1))?;
            let done = trainer.fit(&records, s.iterations)?;
            let p = logistic_predict_proba(trainer.params(), &test_x)?;
            results[0][e].push(auc(&p, &test_y)?);
            let eps = trainer.spent().map_or(f64::NAN, |l| l.epsilon);
            spent[e] = (spent[e].0.max(eps), done);
            multipliers[e] = z;
            progress.inc(1);
        }
        progress.suspend(|| {
            println!(
                "  split {}/{LR_SPLITS}: train {n} / test {}; AUC at ε = 1: iterative {:.3}, PLR {:.3}, non-private {np_auc:.3}",
                split + 1,
                test_idx.len(),
                results[0][1][split],
                results[1][1][split],
            )
        });
    }
    progress.finish_and_clear();
    let mut out = format!(
        "iterative: Poisson q = {}, {} iterations, C = {}, Adam η = {}, λ = {}, M = 2 nodes, T = 0\n",
        s.rate, s.iterations, s.clip, s.learning_rate, s.l2
    );
    write!(out, "{:<14}", "method")?;
    for &eps in &EPSILONS {
        write!(out, " {:>15}", format!("ε = {eps}"))?;
    }
    out.push('\n');
    for (m, name) in names.iter().enumerate() {
        write!(out, "{name:<14}")?;
        for per_eps in &results[m] {
            let (mean, sd) = mean_sd(per_eps);
            write!(out, " {:>15}", format!("{mean:.3} ± {sd:.3}"))?;
        }
        out.push('\n');
    }
    write!(out, "{:<14}", "noise mult. z")?;
    for z in &multipliers {
        write!(out, " {z:>15.3}")?;
    }
    write!(out, "\n{:<14}", "ε spent (RDP)")?;
    for (eps, done) in &spent {
        write!(out, " {:>15}", format!("{eps:.4} ({done} it)"))?;
    }
    writeln!(
        out,
        "\n(iterative: (ε, δ = {DELTA}) per client, spent as reported by the accountant, max over \
         splits; PLR: (ε, 0); non-private: ε = ∞)"
    )?;
    Ok(Sweep {
        names: names.to_vec(),
        values: results,
        table: out,
    })
}

/// Diabetes, the DCA paper's UCI protocol (centred, each column scaled to a range of 10,
/// assumed bounds ±7.5): DP-VI over DCA vs SSP over DCA (DDP, DDP-proj) vs non-private.
fn blr_sweep(seed: u64) -> Res<Sweep> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/diabetes.csv");
    let table = common::csv_input::read_numeric(path.as_ref())?;
    let (mut x, mut y, d, _) = table.split_target("target")?;
    let n = table.rows;
    centre_and_scale_to_range(&mut x, n, d, 10.0)?;
    centre_and_scale_to_range(&mut y, n, 1, 10.0)?;
    let test_rows = 100;
    let n_train = n - test_rows;
    let names = ["DP-VI (DCA)", "SSP DDP", "SSP DDP-proj", "non-private"];
    let mut maes = vec![vec![Vec::new(); EPSILONS.len()]; names.len()];
    let mut vi_spent = vec![0.0f64; EPSILONS.len()];
    let grid = OmegaGrid::dca();
    let projection = ProjectionConfig {
        std_source: StdSource::DpRound,
        std_share: 0.1,
        std_mode: StdMode::PerDimension,
        std_floor: 0.5,
        search: SearchConfig {
            grid_x: grid.clone(),
            grid_y: grid,
            repeats: 10,
            ..SearchConfig::dca(0)
        },
        measure: blr::ErrorMeasure::Mae,
        clipped_share_budget: 0.0,
    };
    let dca = Aggregation::Distributed(DcaSettings {
        n_nodes: 2,
        max_dropped: 0,
        ..DcaSettings::default()
    });
    // DP-VI: C = 10 on the 2d-vector of ELBO gradients, q = 0.2, 200 iterations, Adam η = 0.05.
    let (vi_rate, vi_iters, vi_clip, vi_eta) = (0.2, 200u64, 10.0, 0.05);
    let mut split_rng = ChaCha20Rng::seed_from_u64(seed);
    let progress = common::progress::bar((BLR_SPLITS * EPSILONS.len()) as u64, "  fits");
    for split in 0..BLR_SPLITS {
        let mut idx: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            idx.swap(i, (split_rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let take = |rows: &[usize]| -> (Vec<f64>, Vec<f64>) {
            (
                rows.iter()
                    .flat_map(|&r| x[r * d..(r + 1) * d].iter().copied())
                    .collect(),
                rows.iter().map(|&r| y[r]).collect(),
            )
        };
        let (xt, yt) = take(&idx[test_rows..]);
        let (xs, ys) = take(&idx[..test_rows]);
        let np = fit_non_private(&xt, &yt, n_train, d, Prior::default())?;
        let np_mae = mae(&ys, &predict(&np.mean, &xs, test_rows)?)?;
        let records = Records::new(xt.clone(), d, yt.clone())?;
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let rng = RngSource::InsecureFixedSeed(seed ^ ((split * 16 + e) as u64 + 1) << 32);
            let budget = PrivacyLoss::new(epsilon, DELTA)?;
            for (m, proj) in [(1, false), (2, true)] {
                let config = FitConfig {
                    aggregation: dca,
                    mechanism: Mechanism::Gaussian,
                    budget,
                    assumed_x: vec![7.5; d],
                    assumed_y: 7.5,
                    projection: proj.then(|| projection.clone()),
                    prior: Prior::default(),
                    with_yy: false,
                };
                let f = fit(&xt, &yt, n_train, d, &config, rng.derive(m as u64))?;
                maes[m][e].push(mae(&ys, &predict(&f.posterior.mean, &xs, test_rows)?)?);
            }
            let mut config = TrainerConfig {
                model: Model::LinearRegressionVi {
                    noise_precision: 1.0,
                    prior_precision: 1.0,
                },
                sampling: ClientSampling::Poisson { rate: vi_rate },
                clip_norm: vi_clip,
                privacy: Privacy::NonPrivate,
                optimizer: Optimizer::adam(vi_eta),
                n_nodes: 2,
                max_dropped: 0,
            };
            let z = calibrate_noise_multiplier(&config, n_train, d, budget, vi_iters)?;
            config.privacy = Privacy::Private {
                budget,
                noise_multiplier: z,
            };
            let mut trainer = Trainer::new(config, n_train, d, rng.derive(9))?;
            trainer.fit(&records, vi_iters)?;
            let pred = vi_predict_mean(trainer.params(), &xs)?;
            maes[0][e].push(mae(&ys, &pred)?);
            vi_spent[e] = vi_spent[e].max(trainer.spent().map_or(f64::NAN, |l| l.epsilon));
            maes[3][e].push(np_mae);
            progress.inc(1);
        }
    }
    progress.finish_and_clear();
    let mut out = format!(
        "n = {n_train} train rows (one client each), d = {d}; DP-VI: Poisson q = {vi_rate}, {vi_iters} \
         iterations, C = {vi_clip}, Adam η = {vi_eta}; SSP: Gaussian over DCA, bounds ±7.5\n"
    );
    write!(out, "{:<14}", "method")?;
    for &eps in &EPSILONS {
        write!(out, " {:>15}", format!("ε = {eps}"))?;
    }
    out.push('\n');
    for (m, name) in names.iter().enumerate() {
        write!(out, "{name:<14}")?;
        for per_eps in &maes[m] {
            let (mean, sd) = mean_sd(per_eps);
            write!(out, " {:>15}", format!("{mean:.3} ± {sd:.3}"))?;
        }
        out.push('\n');
    }
    write!(out, "{:<14}", "DP-VI ε spent")?;
    for eps in &vi_spent {
        write!(out, " {eps:>15.4}")?;
    }
    writeln!(out, "\n(all private fits (ε, δ = {DELTA}))")?;
    Ok(Sweep {
        names: names.to_vec(),
        values: maes,
        table: out,
    })
}

/// Wall time per iteration at N = 10⁴, d = 100, and the time of the clients' gradient work
/// alone (every client computing and clipping its gradient, in parallel), to see how much of an
/// iteration the DCA round (shares, noise, node sums, release) takes.
fn timing(seed: u64) -> Res<String> {
    let (n, d, iters) = (10_000usize, 100usize, 5u64);
    let table = paper_synthetic(n, d, seed)?;
    let records = Records::new(table.x.clone(), d, table.y.clone())?;
    let mut config = TrainerConfig {
        model: Model::Logistic {
            l2: 1e-3,
            intercept: false,
        },
        sampling: ClientSampling::Poisson { rate: 0.01 },
        clip_norm: 1.0,
        privacy: Privacy::NonPrivate,
        optimizer: Optimizer::adam(0.02),
        n_nodes: 2,
        max_dropped: 10,
    };
    let budget = PrivacyLoss::new(1.0, DELTA)?;
    let z = calibrate_noise_multiplier(&config, n, d, budget, 1000)?;
    config.privacy = Privacy::Private {
        budget,
        noise_multiplier: z,
    };
    let mut trainer = Trainer::new(config, n, d, RngSource::InsecureFixedSeed(seed))?;
    trainer.step(&records, &[])?; // warm-up (thread pool, allocations)
    let t = Instant::now();
    for _ in 0..iters {
        trainer.step(&records, &[])?;
    }
    let per_iter = t.elapsed().as_secs_f64() / iters as f64;
    // The gradient work if every client were sampled (an upper bound on it: with q = 0.01 only
    // ~100 clients compute a gradient, the rest send zeros).
    let params = trainer.params().to_vec();
    let t = Instant::now();
    for _ in 0..iters {
        let total: f64 = (0..n)
            .into_par_iter()
            .map(|i| {
                let mut g = vec![0.0; d];
                config
                    .model
                    .record_gradient(&params, records.x(i), records.y(i), &mut g);
                clip_to_norm(&mut g, 1.0);
                g[0]
            })
            .sum();
        std::hint::black_box(total);
    }
    let grad = t.elapsed().as_secs_f64() / iters as f64;
    let threads = rayon::current_num_threads();
    Ok(format!(
        "================ timing (N = {n}, d = {d}, M = 2, T = 10, Poisson q = 0.01, {threads} threads, \
         mean of {iters} iterations) ================\n\
         wall time per iteration        {:.1} ms\n\
         all N clients' clipped gradients alone {:.2} ms (upper bound on the gradient work)\n\
         DCA round share of an iteration  >= {:.1} %\n",
        1e3 * per_iter,
        1e3 * grad,
        100.0 * (1.0 - grad / per_iter)
    ))
}
