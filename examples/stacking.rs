//! Privacy-preserving logistic regression and stacking (Yao et al.): test AUC of PLR, PST-S,
//! PST-F(U) and PST-F(W) against ε on the bundled digits 0-vs-8 data and on a paper-sized
//! synthetic stand-in for MNIST 0-vs-8 after PCA, then a transfer demo (PST-H) on synthetic
//! source / target domains shaped like the paper's hospital and branches.
//!
//! Run: `cargo run --release --example stacking` (`--help`: master seed, number of splits, the
//! figure's path, by default `target/figures/stacking.svg`: AUC against ε per method and data set).
//!
//! Every fit is ε-DP for its training data (δ = 0); the privacy spent per data set is printed.
//! Randomness uses `RngSource::InsecureFixedSeed` so the tables are reproducible — an
//! experiment, not a deployment (use `RngSource::Os` there).

use std::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Parser;

use plr_stacking::{
    Dataset, FeatureGroups, PlrConfig, Recommendation, RngSource, SelectionConfig, StackingConfig,
    TransferConfig, auc, fit_plr, fit_pst_f, fit_pst_h, fit_pst_s, select_plr_or_stacking,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rand_distr::{Distribution, Normal};

#[allow(dead_code)] // each example uses part of the shared module
mod common;
use common::figure::{Legend, Panel, Point, Series, write_svg};
use common::summary::mean_sd;
use common::synthetic::{Table, bernoulli, logistic_domain, paper_synthetic};

const EPSILONS: [f64; 5] = [0.5, 1.0, 2.0, 5.0, f64::INFINITY];
const METHODS: [&str; 4] = ["PLR", "PST-S", "PST-F(U)", "PST-F(W)"];
const K: usize = 5;

/// Private logistic regression and stacking: test AUC of PLR, PST-S, PST-F(U), PST-F(W) and a
/// PST-H transfer demo.
#[derive(Parser, Debug)]
#[command(name = "stacking")]
struct Args {
    /// Master seed of data, splits and noise (an experiment: fixed seeds are insecure).
    #[arg(long, default_value_t = 2019)]
    seed: u64,
    /// Stratified 60/40 splits per data set.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..))]
    splits: u64,
    /// Where to write the SVG figure.
    #[arg(long, default_value = "target/figures/stacking.svg")]
    figure: PathBuf,
    /// Only the stacking-vs-PLR comparison at ε = 0.5, 1, 2 on two standardised data sets with
    /// unit-length rows, with the library's DP recommendation (`select_plr_or_stacking`).
    #[arg(long)]
    vs_plr: bool,
    /// With --vs-plr: α of the recommendation, the largest probability of recommending a stacked
    /// model that is no better than PLR (`SelectionConfig::false_recommendation_rate`).
    #[arg(long, default_value_t = plr_stacking::DEFAULT_FALSE_RECOMMENDATION_RATE)]
    alpha: f64,
    /// Fit every model without intercept (the papers' models; the library's default has one).
    #[arg(long)]
    no_intercept: bool,
}

/// Whether every fit has an intercept: set once from `--no-intercept` before any fit.
static INTERCEPT: AtomicBool = AtomicBool::new(true);

fn intercept() -> bool {
    INTERCEPT.load(Ordering::Relaxed)
}

/// AUCs of one data set: `auc[method][ε]` over splits, and the printed table.
struct Sweep {
    auc: Vec<Vec<Vec<f64>>>,
    table: String,
}

type Res<T> = Result<T, Box<dyn Error>>;

fn main() -> Res<()> {
    let args = Args::parse();
    let (seed, splits) = (args.seed, args.splits as usize);
    let start = Instant::now();
    INTERCEPT.store(!args.no_intercept, Ordering::Relaxed);
    println!(
        "models {} intercept",
        if intercept() { "with" } else { "without" }
    );
    if args.vs_plr {
        vs_plr(seed, splits, args.alpha)?;
        println!("total time {:.1} s", start.elapsed().as_secs_f64());
        return Ok(());
    }

    // ---- bundled digits 0 vs 8 ------------------------------------------------------------
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits_0_vs_8.csv"
    );
    let (x, y, d) = common::csv_input::read_binary_labelled(path.as_ref(), "label")?;
    let mut digits = Table { x, y, d };
    // Public bound, not a data statistic: pixels are 0..16, so (x − 8)/8 ∈ [−1, 1] and dividing
    // by √64 more gives ‖x‖ ≤ 1.
    digits.x.iter_mut().for_each(|v| *v = (*v - 8.0) / 64.0);
    // Side information for PST-F(W): a spatial prior (importance falls with distance from the
    // image centre, where 0 and 8 differ), fixed before looking at any pixel value.
    let digit_prior: Vec<f64> = (0..64)
        .map(|p| {
            let (r, c) = ((p / 8) as f64 - 3.5, (p % 8) as f64 - 3.5);
            (-(r * r + c * c) / (2.0 * 2.0 * 2.0)).exp()
        })
        .collect();
    println!(
        "digits 0 vs 8: {} rows × {} pixels (bundled, sklearn/UCI); λ = 1e-2, K = {K}",
        digits.n(),
        digits.d
    );
    let digits_sweep = sweep(&digits, &digit_prior, 1e-2, seed, splits)?;

    // ---- paper-sized synthetic set ----------------------------------------------------------
    let synthetic = paper_synthetic(5000, 100, seed)?;
    let variances: Vec<f64> = (0..100).map(|j| 1.0 / (1 + j) as f64).collect();
    println!(
        "\nsynthetic (MNIST-after-PCA stand-in): {} rows × {} features; λ = 1e-3, K = {K}",
        synthetic.n(),
        synthetic.d
    );
    let synthetic_sweep = sweep(&synthetic, &variances, 1e-3, seed + 1, splits)?;

    // ---- rows well inside the unit ball -----------------------------------------------------
    let (inside, inside_scores) = standardised_synthetic(5000, 100, seed + 3)?;
    let inside_norm = inside.mean_row_norm();
    println!(
        "\nstandardised synthetic: {} rows × {} features, mean row norm {inside_norm:.3}; \
         λ = 1e-3, K = {K}",
        inside.n(),
        inside.d
    );
    let inside_sweep = sweep(&inside, &inside_scores, 1e-3, seed + 4, splits)?;

    // ---- transfer ---------------------------------------------------------------------------
    println!("\ntransfer: hospital (source) → branches (targets)");
    let transfer_table = transfer_demo(seed + 2, splits)?;

    println!(
        "\n================ test AUC, mean ± sd over {splits} stratified 60/40 splits ================"
    );
    println!("\ndigits 0 vs 8 (n = 352, d = 64)\n{}", digits_sweep.table);
    println!("synthetic (n = 5000, d = 100)\n{}", synthetic_sweep.table);
    println!(
        "standardised synthetic (n = 5000, d = 100, mean row norm {inside_norm:.2})\n{}",
        inside_sweep.table
    );
    println!("transfer (ε_src = ε_tgt = 1)\n{transfer_table}");
    println!(
        "privacy spent: each model above is ε-DP (δ = 0) for the data set it was trained on, \
         at the ε of its column\n(PST-S/F: parallel composition over the disjoint D^l parts and \
         D^h; PST-H: ε_src for the hospital, ε_tgt for each branch).\nEach split is a separate \
         experiment on the same data: the {splits} repetitions are for averaging, not a deployment."
    );
    write_figure(
        &[
            ("digits 0 vs 8 (n = 352, d = 64)", &digits_sweep),
            ("synthetic (n = 5000, d = 100)", &synthetic_sweep),
            (
                &format!("standardised synthetic (row norm {inside_norm:.2})"),
                &inside_sweep,
            ),
        ],
        splits,
        &args.figure,
    )?;
    println!("figure: {}", args.figure.display());
    println!("total time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// AUC table of the four methods × ε for one data set.
fn sweep(
    table: &Table,
    importance_scores: &[f64],
    lambda: f64,
    seed: u64,
    splits: usize,
) -> Res<Sweep> {
    let weighted = FeatureGroups::sorted_blocks(importance_scores, K)?;
    println!(
        "  PST-F(W) groups of {:?} features, q = {:?}",
        weighted.groups().iter().map(Vec::len).collect::<Vec<_>>(),
        weighted
            .importance()
            .iter()
            .map(|q| (q * 1000.0).round() / 1000.0)
            .collect::<Vec<_>>()
    );
    // auc[method][eps] over splits
    let mut results = vec![vec![Vec::with_capacity(splits); EPSILONS.len()]; METHODS.len()];
    let progress = common::progress::bar(splits as u64, "  splits");
    for split in 0..splits {
        let split_seed = seed.wrapping_mul(1_000_003).wrapping_add(split as u64);
        let mut split_rng = ChaCha20Rng::seed_from_u64(split_seed);
        let (train_idx, test_idx) = common::split::stratified_split(&table.y, 0.6, &mut split_rng);
        let (train_x, train_y) = table.rows(&train_idx);
        let (test_x, test_y) = table.rows(&test_idx);
        let train = Dataset::from_rows(&train_x, table.d, &train_y)?;
        let uniform = FeatureGroups::random_uniform(table.d, K, &mut split_rng)?;
        for (e, &epsilon) in EPSILONS.iter().enumerate() {
            let rng = RngSource::InsecureFixedSeed(split_seed ^ ((e as u64 + 1) << 40));
            let config = StackingConfig {
                intercept: intercept(),
                ..StackingConfig::new(epsilon, lambda)
            };
            let plr = fit_plr(
                &train,
                &PlrConfig {
                    intercept: intercept(),
                    ..PlrConfig::new(epsilon, lambda)
                },
                &rng.derive(0),
            )?;
            let s = fit_pst_s(&train, K, &config, &rng.derive(1))?;
            let fu = fit_pst_f(&train, &uniform, &config, &rng.derive(2))?;
            let fw = fit_pst_f(&train, &weighted, &config, &rng.derive(3))?;
            let scores = [
                plr.model.predict_proba(&test_x)?,
                s.model.predict_proba(&test_x)?,
                fu.model.predict_proba(&test_x)?,
                fw.model.predict_proba(&test_x)?,
            ];
            for (m, p) in scores.iter().enumerate() {
                results[m][e].push(auc(p, &test_y)?);
            }
        }
        progress.set_message(format!(
            "train {} / test {} rows; AUC at ε = 1: PLR {:.3}, PST-F(W) {:.3}",
            train_idx.len(),
            test_idx.len(),
            results[0][1][split],
            results[3][1][split]
        ));
        progress.inc(1);
    }
    progress.finish_and_clear();
    let mut out = format!("{:<10}", "method");
    for &eps in &EPSILONS {
        let label = if eps.is_infinite() {
            "ε = ∞".to_string()
        } else {
            format!("ε = {eps}")
        };
        write!(out, " {label:>15}")?;
    }
    out.push('\n');
    for (m, name) in METHODS.iter().enumerate() {
        write!(out, "{name:<10}")?;
        for per_eps in &results[m] {
            let (mean, sd) = mean_sd(per_eps);
            write!(out, " {:>15}", format!("{mean:.3} ± {sd:.3}"))?;
        }
        out.push('\n');
    }
    Ok(Sweep {
        auc: results,
        table: out,
    })
}

/// One panel per data set: test AUC against ε (finite ones, log axis), mean ± sd band over the
/// splits, one line per method; the non-private PLR (ε = ∞) as a guide.
fn write_figure(sets: &[(&str, &Sweep)], splits: usize, path: &std::path::Path) -> Res<()> {
    let finite: Vec<usize> = (0..EPSILONS.len())
        .filter(|&e| EPSILONS[e].is_finite())
        .collect();
    let panels: Vec<Panel> = sets
        .iter()
        .map(|(name, sweep)| {
            let series = METHODS
                .iter()
                .enumerate()
                .map(|(m, method)| Series {
                    name: method.to_string(),
                    points: finite
                        .iter()
                        .map(|&e| {
                            let (mean, sd) = mean_sd(&sweep.auc[m][e]);
                            Point::with_band(EPSILONS[e], mean, mean - sd, mean + sd)
                        })
                        .collect(),
                    ..Series::default()
                })
                .collect();
            let guides = EPSILONS
                .iter()
                .position(|e| e.is_infinite())
                .map(|e| ("PLR, ε = ∞".to_string(), mean_sd(&sweep.auc[0][e]).0))
                .into_iter()
                .collect();
            Panel {
                title: format!("{name}: AUC, mean ± sd over {splits} splits"),
                x_label: "ε".into(),
                y_label: "test AUC".into(),
                log_x: true,
                series,
                guides,
                legend: Legend::LowerRight,
                ..Panel::default()
            }
        })
        .collect();
    write_svg(path, &panels, 3, (480, 400))?;
    Ok(())
}

/// Synthetic source (hospital) and target (branches) domains; PLR(target) vs PST-H(W/U).
fn transfer_demo(seed: u64, splits: usize) -> Res<String> {
    let d = 50;
    let branch_sizes = [300, 500, 800, 1200];
    let mut gen_rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0)?;
    // "doctors' importance": the generating weight variance of each feature
    let importance: Vec<f64> = (0..d).map(|j| 9.0 / (1 + j) as f64).collect();
    let w_source: Vec<f64> = importance
        .iter()
        .map(|v| normal.sample(&mut gen_rng) * v.sqrt())
        .collect();
    let source = logistic_domain(12_000, &w_source, &mut gen_rng)?;
    let branches: Vec<Table> = branch_sizes
        .iter()
        .map(|&n| {
            // each branch: the hospital's weights shifted by N(0, 0.5² · v_j)
            let w: Vec<f64> = w_source
                .iter()
                .zip(&importance)
                .map(|(ws, v)| ws + 0.5 * v.sqrt() * normal.sample(&mut gen_rng))
                .collect();
            logistic_domain(n, &w, &mut gen_rng)
        })
        .collect::<Res<_>>()?;
    let source_data = Dataset::from_rows(&source.x, d, &source.y)?;
    let weighted = FeatureGroups::sorted_blocks(&importance, K)?;
    let uniform = FeatureGroups::random_uniform(d, K, &mut gen_rng)?;
    let (epsilon, lambda_target) = (1.0, 0.05);
    println!(
        "  hospital n = {}, d = {d}; branches n = {branch_sizes:?}; ε_src = ε_tgt = {epsilon}, \
         λ_src = 1e-3, λ_tgt = {lambda_target} (pull towards the source model)",
        source.n()
    );
    let methods = ["PLR(target)", "PST-H(U)", "PST-H(W)"];
    let mut results = vec![vec![Vec::new(); branches.len()]; methods.len()];
    let progress = common::progress::bar(splits as u64, "  splits");
    for split in 0..splits {
        let split_seed = seed.wrapping_mul(7_000_003).wrapping_add(split as u64);
        let mut split_rng = ChaCha20Rng::seed_from_u64(split_seed);
        for (b, branch) in branches.iter().enumerate() {
            let (train_idx, test_idx) =
                common::split::stratified_split(&branch.y, 0.6, &mut split_rng);
            let (train_x, train_y) = branch.rows(&train_idx);
            let (test_x, test_y) = branch.rows(&test_idx);
            let target = Dataset::from_rows(&train_x, d, &train_y)?;
            let rng = RngSource::InsecureFixedSeed(split_seed ^ ((b as u64 + 1) << 40));
            let plr = fit_plr(
                &target,
                &PlrConfig {
                    intercept: intercept(),
                    ..PlrConfig::new(epsilon, lambda_target)
                },
                &rng.derive(0),
            )?;
            results[0][b].push(auc(&plr.model.predict_proba(&test_x)?, &test_y)?);
            for (m, groups) in [(1usize, &uniform), (2, &weighted)] {
                let config = TransferConfig {
                    epsilon_source: epsilon,
                    epsilon_target: epsilon,
                    lambda_source: 1e-3,
                    lambda_target,
                    lambda_high: 1e-2,
                    high_fraction: 0.5,
                    intercept: intercept(),
                    ranges: None,
                };
                let fit = fit_pst_h(
                    &source_data,
                    &target,
                    groups,
                    &config,
                    &rng.derive(m as u64),
                )?;
                let p = fit.target.model.predict_proba(&test_x)?;
                results[m][b].push(auc(&p, &test_y)?);
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    let mut out = format!("{:<12}", "branch (n)");
    for n in branch_sizes {
        write!(out, " {:>15}", format!("#{n}"))?;
    }
    out.push('\n');
    for (m, name) in methods.iter().enumerate() {
        write!(out, "{name:<12}")?;
        for per_branch in &results[m] {
            let (mean, sd) = mean_sd(per_branch);
            write!(out, " {:>15}", format!("{mean:.3} ± {sd:.3}"))?;
        }
        out.push('\n');
    }
    Ok(out)
}

/// The paper-sized generator with columns standardised by their public sd 1/√(1+j) and rows
/// divided by the public constant 4√d, so the mean row norm is about 0.25: rows well inside the
/// unit ball, where multiplying a group by q_k (instead of clipping it) starved PST-F.
/// PST-F(W)'s side information: the generating variance of the standardised weights,
/// Var(w_j)·Var(x_j) = 9/(1+j)².
fn standardised_synthetic(n: usize, d: usize, seed: u64) -> Res<(Table, Vec<f64>)> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0)?;
    let w: Vec<f64> = (0..d)
        .map(|j| normal.sample(&mut rng) * 3.0 / ((1 + j) as f64).sqrt())
        .collect();
    let (mut x, mut y) = (Vec::with_capacity(n * d), Vec::with_capacity(n));
    let divisor = 4.0 * (d as f64).sqrt();
    for _ in 0..n {
        let standard: Vec<f64> = (0..d).map(|_| normal.sample(&mut rng)).collect();
        let z: f64 = standard
            .iter()
            .zip(&w)
            .enumerate()
            .map(|(j, (s, wj))| s / ((1 + j) as f64).sqrt() * wj)
            .sum();
        y.push(bernoulli(&mut rng, z));
        x.extend(standard.iter().map(|s| s / divisor));
    }
    let scores = (0..d).map(|j| 9.0 / ((1 + j) as f64).powi(2)).collect();
    Ok((Table { x, y, d }, scores))
}

/// Each row divided by its own length: a per-record map, no privacy cost.
fn unit_rows(table: &mut Table) {
    for row in table.x.chunks_mut(table.d) {
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|v| *v /= norm);
        }
    }
}

/// Stacking against PLR at small ε on two standardised data sets with unit-length rows (the
/// order the examples use): test AUC of PLR, PST-S, PST-F(W) with the paper's settings, PST-F(W)
/// with a smaller high level and a larger λ there, and what `select_plr_or_stacking` recommends
/// (and the AUC of the model it recommends, trained on its own part only).
fn vs_plr(seed: u64, splits: usize, alpha: f64) -> Res<()> {
    const EPS: [f64; 3] = [0.5, 1.0, 2.0];
    // Digits: the public pixel range 0..16 mapped onto ±1, then unit rows.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits_0_vs_8.csv"
    );
    let (x, y, d) = common::csv_input::read_binary_labelled(path.as_ref(), "label")?;
    let mut digits = Table { x, y, d };
    digits.x.iter_mut().for_each(|v| *v = (*v - 8.0) / 8.0);
    unit_rows(&mut digits);
    let digit_prior: Vec<f64> = (0..64)
        .map(|p| {
            let (r, c) = ((p / 8) as f64 - 3.5, (p % 8) as f64 - 3.5);
            (-(r * r + c * c) / 8.0).exp()
        })
        .collect();
    // The paper-sized synthetic set, columns standardised by their public sd 1/√(1+j), then
    // unit rows; side information: the generating variance of the standardised weights.
    let mut synthetic = paper_synthetic(5000, 100, seed)?;
    for row in synthetic.x.chunks_mut(100) {
        for (j, v) in row.iter_mut().enumerate() {
            *v *= ((1 + j) as f64).sqrt();
        }
    }
    unit_rows(&mut synthetic);
    let synthetic_scores: Vec<f64> = (0..100).map(|j| 9.0 / ((1 + j) as f64).powi(2)).collect();
    let methods = [
        "PLR",
        "PST-S",
        "PST-F(W)",
        "PST-F(W) h0.2 λh0.1",
        "selected",
    ];
    println!(
        "stacking vs PLR: test AUC, mean ± sd over {splits} stratified 60/40 splits; K = {K}; \
         PST-* with the paper's settings (D^h = half the rows, λ_high = λ) and PST-F(W) with \
         D^h = 20% of the rows and λ_high = 0.1; 'selected' = select_plr_or_stacking(PLR vs \
         PST-F(W) h0.2 λh0.1, 20% validation rows, ε_v = ε, α = {alpha}), its recommended model's AUC \
         (each candidate trained on its own 40% of the training rows); every fit ε-DP (δ = 0)"
    );
    for (name, table, scores, lambda) in [
        (
            "digits 0 vs 8, pixels on ±1, unit rows",
            &digits,
            &digit_prior,
            1e-2,
        ),
        (
            "synthetic n = 5000, d = 100, standardised, unit rows",
            &synthetic,
            &synthetic_scores,
            1e-3,
        ),
    ] {
        let weighted = FeatureGroups::sorted_blocks(scores, K)?;
        let mut results = vec![vec![Vec::with_capacity(splits); EPS.len()]; methods.len()];
        // Per rule and ε, against the full-data winner (PLR or the tuned PST-F(W), each fitted
        // on all training rows, whichever has the higher test AUC; PLR on a tie): splits where
        // stacking is recommended, where it is recommended although the full-data stacked
        // model lost, and where the recommendation names the full-data winner. Rule 0 compares
        // the noisy margin with 0, rule 1 with the library's threshold — the same released
        // margin, so the two rules see the same noise.
        let mut stacked_recommended = [vec![0usize; EPS.len()], vec![0usize; EPS.len()]];
        let mut recommended_where_lost = [vec![0usize; EPS.len()], vec![0usize; EPS.len()]];
        let mut agrees = [vec![0usize; EPS.len()], vec![0usize; EPS.len()]];
        let mut stacking_lost = vec![0usize; EPS.len()];
        let mut thresholds = vec![0.0; EPS.len()];
        for split in 0..splits {
            let split_seed = seed.wrapping_mul(1_000_003).wrapping_add(split as u64);
            let mut split_rng = ChaCha20Rng::seed_from_u64(split_seed);
            let (train_idx, test_idx) =
                common::split::stratified_split(&table.y, 0.6, &mut split_rng);
            let (train_x, train_y) = table.rows(&train_idx);
            let (test_x, test_y) = table.rows(&test_idx);
            let train = Dataset::from_rows(&train_x, table.d, &train_y)?;
            for (e, &epsilon) in EPS.iter().enumerate() {
                let rng = RngSource::InsecureFixedSeed(split_seed ^ ((e as u64 + 1) << 40));
                let paper = StackingConfig {
                    intercept: intercept(),
                    ..StackingConfig::new(epsilon, lambda)
                };
                let tuned = StackingConfig {
                    high_fraction: 0.2,
                    lambda_high: 0.1,
                    ..paper.clone()
                };
                let plr_config = PlrConfig {
                    intercept: intercept(),
                    ..PlrConfig::new(epsilon, lambda)
                };
                let selection = select_plr_or_stacking(
                    &train,
                    &SelectionConfig {
                        false_recommendation_rate: alpha,
                        ..SelectionConfig::new(plr_config.clone(), 0.2, epsilon)
                    },
                    |part, r| fit_pst_f(part, &weighted, &tuned, r),
                    &rng.derive(4),
                )?;
                thresholds[e] = selection.threshold;
                let chosen = [
                    selection.noisy_margin > 0.0,
                    selection.recommendation == Recommendation::Stacked,
                ];
                let selected = if chosen[1] {
                    selection.stacked.model.predict_proba(&test_x)?
                } else {
                    selection.plr.model.predict_proba(&test_x)?
                };
                let predictions = [
                    fit_plr(&train, &plr_config, &rng.derive(0))?
                        .model
                        .predict_proba(&test_x)?,
                    fit_pst_s(&train, K, &paper, &rng.derive(1))?
                        .model
                        .predict_proba(&test_x)?,
                    fit_pst_f(&train, &weighted, &paper, &rng.derive(2))?
                        .model
                        .predict_proba(&test_x)?,
                    fit_pst_f(&train, &weighted, &tuned, &rng.derive(3))?
                        .model
                        .predict_proba(&test_x)?,
                    selected,
                ];
                for (m, p) in predictions.iter().enumerate() {
                    results[m][e].push(auc(p, &test_y)?);
                }
                let lost = results[3][e][split] <= results[0][e][split];
                stacking_lost[e] += usize::from(lost);
                for (rule, &stacked) in chosen.iter().enumerate() {
                    stacked_recommended[rule][e] += usize::from(stacked);
                    recommended_where_lost[rule][e] += usize::from(lost && stacked);
                    agrees[rule][e] += usize::from(lost != stacked);
                }
            }
        }
        println!(
            "\n{name} ({} rows × {} features, λ = {lambda})",
            table.n(),
            table.d
        );
        println!("| method | ε = 0.5 | ε = 1 | ε = 2 |\n| --- | --- | --- | --- |");
        for (m, method) in methods.iter().enumerate() {
            let cells: Vec<String> = results[m]
                .iter()
                .map(|v| {
                    let (mean, sd) = mean_sd(v);
                    format!("{mean:.3} ± {sd:.3}")
                })
                .collect();
            println!("| {method} | {} |", cells.join(" | "));
        }
        let cells = |counts: &[usize], of: &[usize]| -> String {
            let cells: Vec<String> = counts
                .iter()
                .zip(of)
                .map(|(c, o)| format!("{c}/{o}"))
                .collect();
            cells.join(" | ")
        };
        let all = vec![splits; EPS.len()];
        let t: Vec<String> = thresholds.iter().map(|t| format!("{t:.1}")).collect();
        println!("| threshold t on the noisy margin | {} |", t.join(" | "));
        println!(
            "| full-data PST-F(W) h0.2 λh0.1 lost to PLR | {} |",
            cells(&stacking_lost, &all)
        );
        for (rule, name) in ["margin > 0", "margin > t (recommended)"]
            .iter()
            .enumerate()
        {
            println!(
                "| {name}: stacking recommended | {} |",
                cells(&stacked_recommended[rule], &all)
            );
            println!(
                "| {name}: stacking recommended where it lost | {} |",
                cells(&recommended_where_lost[rule], &stacking_lost)
            );
            println!(
                "| {name}: agrees with the full-data winner | {} |",
                cells(&agrees[rule], &all)
            );
        }
    }
    Ok(())
}
