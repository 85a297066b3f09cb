//! Calibration study of `blr::regression`'s intervals: do the 90% intervals of
//! `Regression::confint` cover their stated estimand at their stated rate?
//!
//! Run: `cargo run --release --example regression_calibration` (`--help` for the options;
//! `--quick` is a look in a few seconds).
//!
//! Designs (three covariates each, public ranges fixed by the design, never from the data):
//!
//! - `independent`: x_j uniform on their public ranges, y linear plus Gaussian noise, y's range
//!   4.5 sd wide either side (clipping is rare);
//! - `correlated`: the same ranges and model, x̃_j = (1 − w_j)u_j + w_j s_j u_0 on the unit
//!   scale (u ~ U(−1, 1)⁴, w = (0.6, 0.6, 0.3), s = (+, −, +): a shared component as in
//!   `blr_calibration --x-mix`, correlations up to 0.69);
//! - `clipped`: heavy-tailed x (centre + 0.4·half-width·t₃) and y (linear plus 6·t₃ noise)
//!   whose public ranges clip a noticeable share of the values (printed);
//! - `skewed`: a wage-like target, y = exp(2.8 + 0.02 (age − 18) + 0.012 hours − 0.2 female +
//!   0.5 N(0, 1)) in [0, 400] (mean ≈ 55: far from the range's centre), age ~ U(18, 70) in
//!   [18, 90], hours ~ 40 + 8 N(0, 1) clamped to [0, 80], female ~ Bernoulli(0.45) in [0, 1].
//!
//! **Estimand.** Every interval is compared with the population least-squares coefficients
//! (intercept and slopes, in the data's units) of the records *clipped to the public ranges*
//! (x and y), which is what the released statistics describe: computed once per design, by this
//! example and not by the code under test, from 10⁶ fresh records of the design (a fixed seed
//! apart from the replications'). On the unclipped designs they are the model's coefficients up
//! to that sample's error; on `skewed` they are the best linear approximation of a non-linear
//! mean.
//!
//! Each cell (design, n, ε) fits `blr::fit_regression` with `RegressionConfig::new(design,
//! (ε, 10⁻⁵))` — the library's defaults (DCA unless `--trusted`; the two release the same
//! Gaussian sum) but without the ranges round (`narrowing: None`), whose narrowed ranges would
//! make the estimand differ from fit to fit — on 200 fresh data sets and records for the intercept and each slope whether
//! the 90% interval covers the estimand, the interval's width, and whether the fit fell back to
//! the constant (slope intervals NaN: counted apart, never as covered).
//!
//! `--ranges-round` runs the library's defaults as they are, ranges round included: each fit
//! clips to ranges narrowed from its own data, so each fit's estimand is the population least
//! squares of records clipped to *that fit's* ranges (`Regression::design`), computed by this
//! example from the same 10⁶-record sample per fit. Its rows also give the returned slope
//! intervals' coverage of the public ranges' estimand above and of the unclipped β (the
//! sample's least squares without clipping: what a reader may take a slope to mean), and the
//! shares the fits' ranges clip. Diagnostics per cell:
//! the estimates' mean error against the estimand in units of their mean standard error, and
//! their sd across replications against the mean standard error (1 when the errors are right).
//! Fixed seeds: an experiment, not a deployment.

use std::error::Error;
use std::time::Instant;

use blr::{Design, PublicRange, RegressionConfig, fit_regression};
use clap::Parser;
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use projection::release::Aggregation;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rand_distr::{Bernoulli, Distribution, Normal, StudentT, Uniform};
use rayon::prelude::*;

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;

const D: usize = 3;
const LEVEL: f64 = 0.9;
const DELTA: f64 = 1e-5;
const ESTIMAND_ROWS: usize = 1_000_000;
const SEED: u64 = 0x5ca1_ab1e_0040;
/// Bins of a shown fit's DP R² over its noise sd, for the pooled coverage by bin.
const R2_BINS: [f64; 5] = [2.0, 2.5, 3.0, 4.0, 6.0];

/// Coverage of `blr::regression`'s 90% intervals on synthetic designs with a known estimand.
#[derive(Parser, Debug)]
#[command(name = "regression_calibration")]
struct Args {
    /// Replications per (design, n, ε) cell.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    replications: u64,
    /// Sizes n (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10000])]
    sizes: Vec<usize>,
    /// Budgets ε (comma-separated; δ = 10⁻⁵).
    #[arg(long, value_delimiter = ',', default_values_t = [0.5f64, 1.0, 2.0])]
    epsilons: Vec<f64>,
    /// Designs (comma-separated): independent, correlated, clipped, skewed.
    #[arg(long, value_delimiter = ',', default_values_t = ["independent".to_string(), "correlated".to_string(), "clipped".to_string(), "skewed".to_string()])]
    designs: Vec<String>,
    /// A trusted aggregator instead of the default DCA round (same Gaussian sum; faster).
    #[arg(long)]
    trusted: bool,
    /// A look in seconds: 20 replications, n = 10⁴, ε = 1, a trusted aggregator, 10⁵ rows for
    /// the estimand.
    #[arg(long)]
    quick: bool,
    /// Print one line per coefficient and cell (coverage, width, bias and spread diagnostics).
    #[arg(long)]
    detail: bool,
    /// The library's default configuration, ranges round included: each fit's estimand is the
    /// clipped regression on that fit's narrowed ranges (`Regression::design`), recomputed per
    /// fit from the estimand's sample; coverage of the public ranges' estimand and of the
    /// unclipped β is reported beside it.
    #[arg(long)]
    ranges_round: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Independent,
    Correlated,
    Clipped,
    Skewed,
}

impl Kind {
    fn parse(s: &str) -> Res<Kind> {
        Ok(match s {
            "independent" => Kind::Independent,
            "correlated" => Kind::Correlated,
            "clipped" => Kind::Clipped,
            "skewed" => Kind::Skewed,
            other => return Err(format!("unknown design {other}").into()),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Independent => "independent",
            Kind::Correlated => "correlated",
            Kind::Clipped => "clipped",
            Kind::Skewed => "skewed",
        }
    }

    fn design(self) -> Design {
        let r = |a, b| PublicRange::new(a, b).expect("a valid range");
        match self {
            Kind::Independent | Kind::Correlated => Design::new(
                vec![r(0.0, 10.0), r(-5.0, 5.0), r(18.0, 80.0)],
                r(-20.0, 90.0),
            ),
            Kind::Clipped => Design::new(
                vec![r(0.0, 10.0), r(-5.0, 5.0), r(18.0, 80.0)],
                r(5.0, 65.0),
            ),
            Kind::Skewed => Design::new(
                vec![r(18.0, 90.0), r(0.0, 80.0), r(0.0, 1.0)],
                r(0.0, 400.0),
            ),
        }
        .expect("a valid design")
    }

    /// n raw records (row-major x, y), unclipped.
    fn draw(self, n: usize, rng: &mut ChaCha20Rng) -> (Vec<f64>, Vec<f64>) {
        let design = self.design();
        let unit = Uniform::<f64>::new_inclusive(-1.0, 1.0).expect("a valid range");
        let normal = Normal::<f64>::new(0.0, 1.0).expect("a valid sd");
        let t3 = StudentT::new(3.0).expect("valid degrees of freedom");
        let female = Bernoulli::new(0.45).expect("a valid probability");
        let mut x = Vec::with_capacity(n * D);
        let mut y = Vec::with_capacity(n);
        let linear = |r: &[f64]| 10.0 + 2.0 * r[0] - 1.5 * r[1] + 0.3 * r[2];
        for _ in 0..n {
            let row: [f64; D] = match self {
                Kind::Independent => {
                    std::array::from_fn(|j| design.x[j].from_unit(unit.sample(rng)))
                }
                Kind::Correlated => {
                    const W: [f64; D] = [0.6, 0.6, 0.3];
                    const S: [f64; D] = [1.0, -1.0, 1.0];
                    let u0 = unit.sample(rng);
                    std::array::from_fn(|j| {
                        let u = unit.sample(rng);
                        design.x[j].from_unit((1.0 - W[j]) * u + W[j] * S[j] * u0)
                    })
                }
                Kind::Clipped => {
                    std::array::from_fn(|j| design.x[j].from_unit(0.4 * t3.sample(rng)))
                }
                Kind::Skewed => [
                    18.0 + 52.0 * (0.5 + 0.5 * unit.sample(rng)),
                    (40.0 + 8.0 * normal.sample(rng)).clamp(0.0, 80.0),
                    f64::from(u8::from(female.sample(rng))),
                ],
            };
            let v = match self {
                Kind::Independent | Kind::Correlated => linear(&row) + 8.0 * normal.sample(rng),
                Kind::Clipped => linear(&row) + 6.0 * t3.sample(rng),
                Kind::Skewed => (2.8 + 0.02 * (row[0] - 18.0) + 0.012 * row[1] - 0.2 * row[2]
                    + 0.5 * normal.sample(rng))
                .exp(),
            };
            x.extend_from_slice(&row);
            y.push(v);
        }
        (x, y)
    }
}

/// Least squares with intercept of y on x (both clipped to the design's ranges) in the data's
/// units: (intercept, slopes), and the shares of clipped y values and rows with a clipped x.
fn clipped_least_squares(design: &Design, x: &[f64], y: &[f64]) -> (Vec<f64>, f64, f64) {
    let x_bounds: [(f64, f64); D] = std::array::from_fn(|j| (design.x[j].lower, design.x[j].upper));
    least_squares(&x_bounds, (design.y.lower, design.y.upper), x, y)
}

/// Least squares with intercept of y on x, each value clamped to its (lower, upper) (infinite
/// bounds: unclipped), as [`clipped_least_squares`].
fn least_squares(
    x_bounds: &[(f64, f64); D],
    y_bounds: (f64, f64),
    x: &[f64],
    y: &[f64],
) -> (Vec<f64>, f64, f64) {
    let n = y.len() as f64;
    let clip_x = |row: &[f64]| -> [f64; D] {
        std::array::from_fn(|j| row[j].clamp(x_bounds[j].0, x_bounds[j].1))
    };
    let clip_y = |v: f64| v.clamp(y_bounds.0, y_bounds.1);
    let mut mean = [0.0; D];
    let mut mean_y = 0.0;
    let (mut clipped_y, mut clipped_x) = (0usize, 0usize);
    for (row, v) in x.chunks_exact(D).zip(y) {
        let c = clip_x(row);
        clipped_x += usize::from(c.iter().zip(row).any(|(a, b)| a != b));
        clipped_y += usize::from(clip_y(*v) != *v);
        mean.iter_mut().zip(&c).for_each(|(m, v)| *m += v / n);
        mean_y += clip_y(*v) / n;
    }
    let mut a = [[0.0; D]; D];
    let mut b = [0.0; D];
    for (row, v) in x.chunks_exact(D).zip(y) {
        let c = clip_x(row);
        let dy = clip_y(*v) - mean_y;
        for j in 0..D {
            let dj = c[j] - mean[j];
            b[j] += dj * dy;
            for k in 0..D {
                a[j][k] += dj * (c[k] - mean[k]);
            }
        }
    }
    let slopes = solve(a, b);
    let intercept = mean_y - slopes.iter().zip(&mean).map(|(s, m)| s * m).sum::<f64>();
    let mut theta = vec![intercept];
    theta.extend_from_slice(&slopes);
    (theta, clipped_y as f64 / n, clipped_x as f64 / n)
}

/// Gaussian elimination with partial pivoting (a D × D system, well conditioned here).
fn solve(mut a: [[f64; D]; D], mut b: [f64; D]) -> [f64; D] {
    for col in 0..D {
        let pivot = (col..D)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .expect("a non-empty range");
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..D {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (v, p) in a[row].iter_mut().zip(pivot_row).skip(col) {
                *v -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut out = [0.0; D];
    for row in (0..D).rev() {
        let s: f64 = (row + 1..D).map(|k| a[row][k] * out[k]).sum();
        out[row] = (b[row] - s) / a[row][row];
    }
    out
}

/// One replication's outcome per coefficient (intercept first).
#[derive(Clone, Debug)]
struct Outcome {
    fallback: bool,
    /// The estimand this fit's intervals are for (the public ranges' one without the ranges
    /// round).
    estimand: Vec<f64>,
    /// Whether each finite interval covers the public ranges' estimand, and the unclipped β.
    vs_public: Vec<Option<bool>>,
    vs_beta: Vec<Option<bool>>,
    /// Shares of y values and of rows with an x clipped by this fit's ranges (estimand sample).
    clipped: (f64, f64),
    /// Some((covered, width, estimate, std error)) when the interval is finite.
    coef: Vec<Option<(bool, f64, f64, f64)>>,
    /// The fit's ridge was above 0 (the released centred Gram's λ_min below the noise's edge).
    ridged: bool,
    /// The fit's DP R² over its noise sd.
    r2_ratio: f64,
}

/// Per cell and coefficient sums.
#[derive(Clone, Debug, Default)]
struct Coef {
    covered: usize,
    finite: usize,
    width: f64,
    error: f64,
    error_sq: f64,
    se: f64,
    /// Sums of the per-fit estimand (it moves with the ranges round's ranges).
    estimand: f64,
    estimand_sq: f64,
}

fn main() -> Res<()> {
    let mut args = Args::parse();
    let mut estimand_rows = ESTIMAND_ROWS;
    if args.quick {
        args.replications = 20;
        args.sizes = vec![10_000];
        args.epsilons = vec![1.0];
        args.trusted = true;
        estimand_rows = 100_000;
    }
    let kinds: Vec<Kind> = args
        .designs
        .iter()
        .map(|s| Kind::parse(s))
        .collect::<Res<_>>()?;
    let start = Instant::now();
    println!(
        "regression_calibration: {} replications per cell, 90% intervals, δ = {DELTA:e}, {} \
         aggregation, {}; estimand from {estimand_rows} fresh clipped records per design \
         (NON-PRIVATE: the study's ground truth)",
        args.replications,
        if args.trusted { "trusted" } else { "DCA" },
        if args.ranges_round {
            "the default ranges round (estimand per fit, on its narrowed ranges)"
        } else {
            "one round on the public ranges (narrowing: None)"
        }
    );
    let mut summary = Vec::new();
    let mut by_ratio = [(0usize, 0usize); R2_BINS.len() + 1];
    for (k, kind) in kinds.iter().enumerate() {
        let design = kind.design();
        let mut rng = ChaCha20Rng::seed_from_u64(SEED ^ (0xe57 << 32) ^ k as u64);
        let (big_x, big_y) = kind.draw(estimand_rows, &mut rng);
        let (truth, clipped_y, clipped_x) = clipped_least_squares(&design, &big_x, &big_y);
        let unbounded = (f64::NEG_INFINITY, f64::INFINITY);
        let (beta, _, _) = least_squares(&[unbounded; D], unbounded, &big_x, &big_y);
        let rounded = |v: &[f64]| {
            v.iter()
                .map(|v| (v * 1e4).round() / 1e4)
                .collect::<Vec<_>>()
        };
        println!(
            "\n{}: estimand (intercept, slopes) = {:?}; clipped y {:.1}%, rows with a clipped x \
             {:.1}%; unclipped β = {:?}",
            kind.name(),
            rounded(&truth),
            100.0 * clipped_y,
            100.0 * clipped_x,
            rounded(&beta),
        );
        for &n in &args.sizes {
            for &epsilon in &args.epsilons {
                let budget = PrivacyLoss {
                    epsilon,
                    delta: DELTA,
                };
                // Without the ranges round the estimand is the regression clipped to the public
                // ranges, the same in every fit; with it (the default) each fit clips to ranges
                // drawn from its data, and its estimand is recomputed below.
                let mut config = RegressionConfig::new(design.clone(), budget);
                if !args.ranges_round {
                    config.narrowing = None;
                }
                if args.trusted {
                    config.aggregation = Aggregation::Trusted;
                }
                let outcomes: Vec<Outcome> = (0..args.replications)
                    .into_par_iter()
                    .map(|rep| -> Res<Outcome> {
                        let tag = ((k as u64) << 48)
                            ^ ((n as u64) << 24)
                            ^ ((epsilon * 16.0) as u64) << 16
                            ^ rep;
                        let mut rng = ChaCha20Rng::seed_from_u64(SEED ^ tag);
                        let (x, y) = kind.draw(n, &mut rng);
                        let fit = fit_regression(
                            &x,
                            &y,
                            &config,
                            RngSource::InsecureFixedSeed(SEED ^ tag ^ 0xf17),
                        )?;
                        let fallback = fit.coefficients.iter().all(|b| *b == 0.0)
                            && fit.std_errors()[1..].iter().all(|s| s.is_nan());
                        let ci = fit.confint(LEVEL)?;
                        let est = std::iter::once(fit.intercept)
                            .chain(fit.coefficients.iter().copied())
                            .collect::<Vec<_>>();
                        let se = fit.std_errors();
                        let (estimand, clip_y, clip_x) = if args.ranges_round {
                            clipped_least_squares(&fit.design, &big_x, &big_y)
                        } else {
                            (truth.clone(), clipped_y, clipped_x)
                        };
                        let finite =
                            |(lo, hi): &(f64, f64)| lo.is_finite() && hi.is_finite() && !fallback;
                        let coef = ci
                            .iter()
                            .zip(&estimand)
                            .zip(est.iter().zip(&se))
                            .map(|(((lo, hi), t), (e, s))| {
                                finite(&(*lo, *hi))
                                    .then(|| (*lo <= *t && *t <= *hi, hi - lo, *e, *s))
                            })
                            .collect();
                        let covers = |target: &[f64]| -> Vec<Option<bool>> {
                            ci.iter()
                                .zip(target)
                                .map(|(c, t)| finite(c).then_some(c.0 <= *t && *t <= c.1))
                                .collect()
                        };
                        Ok(Outcome {
                            fallback,
                            vs_public: covers(&truth),
                            vs_beta: covers(&beta),
                            estimand,
                            clipped: (clip_y, clip_x),
                            coef,
                            ridged: fit.ridge > 0.0,
                            r2_ratio: fit.r_squared.unwrap_or(f64::NAN) / fit.r_squared_sd,
                        })
                    })
                    .collect::<Res<_>>()?;
                for o in outcomes.iter().filter(|o| !o.fallback) {
                    let bin = R2_BINS.iter().take_while(|b| o.r2_ratio >= **b).count();
                    for c in &o.coef[1..] {
                        by_ratio[bin].0 += 1;
                        by_ratio[bin].1 += usize::from(c.is_some_and(|c| c.0));
                    }
                }
                let reps = outcomes.len();
                let fallbacks = outcomes.iter().filter(|o| o.fallback).count();
                let mut coefs = vec![Coef::default(); D + 1];
                for o in &outcomes {
                    for ((c, t), out) in coefs.iter_mut().zip(&o.estimand).zip(&o.coef) {
                        c.estimand += t;
                        c.estimand_sq += t * t;
                        if let Some((cov, w, e, s)) = out {
                            c.finite += 1;
                            c.covered += usize::from(*cov);
                            c.width += w;
                            c.error += e - t;
                            c.error_sq += (e - t).powi(2);
                            c.se += s;
                        }
                    }
                }
                // Coverage over all replications (a fallback's slopes are not covered), with
                // its binomial standard error; the slopes pooled with the replication-level
                // standard error (a replication's three slopes are correlated).
                let rate = |c: &Coef| c.covered as f64 / reps as f64;
                let binom = |p: f64| (p * (1.0 - p) / reps as f64).sqrt();
                let per_rep: Vec<f64> = outcomes
                    .iter()
                    .map(|o| {
                        o.coef[1..]
                            .iter()
                            .filter(|c| c.is_some_and(|c| c.0))
                            .count() as f64
                            / D as f64
                    })
                    .collect();
                let pooled = per_rep.iter().sum::<f64>() / reps as f64;
                let shown = reps - fallbacks;
                // Among the fits that returned slope intervals, and among those with a ridge.
                let shown_rate = per_rep.iter().sum::<f64>() / shown.max(1) as f64;
                let ridged: Vec<f64> = outcomes
                    .iter()
                    .zip(&per_rep)
                    .filter(|(o, _)| o.ridged && !o.fallback)
                    .map(|(_, v)| *v)
                    .collect();
                let pooled_se = (per_rep.iter().map(|v| (v - pooled).powi(2)).sum::<f64>()
                    / (reps as f64 * (reps as f64 - 1.0).max(1.0)))
                .sqrt();
                let row = CellRow {
                    design: kind.name(),
                    n,
                    epsilon,
                    intercept: rate(&coefs[0]),
                    intercept_se: binom(rate(&coefs[0])),
                    slopes: pooled,
                    slopes_se: pooled_se,
                    slope_min: coefs[1..].iter().map(rate).fold(f64::INFINITY, f64::min),
                    slope_max: coefs[1..]
                        .iter()
                        .map(rate)
                        .fold(f64::NEG_INFINITY, f64::max),
                    fallbacks,
                    shown_rate,
                    ridged: ridged.len(),
                    ridged_rate: ridged.iter().sum::<f64>() / ridged.len().max(1) as f64,
                    // Mean width of each slope's interval relative to |its estimand|.
                    rel_width: coefs[1..]
                        .iter()
                        .zip(&truth[1..])
                        .map(|(c, t)| c.width / c.finite.max(1) as f64 / t.abs())
                        .sum::<f64>()
                        / D as f64,
                    intercept_width: coefs[0].width / coefs[0].finite.max(1) as f64,
                    ranges: args.ranges_round.then(|| {
                        // Slopes of the fits that gave them, against the other two targets.
                        let pooled = |pick: fn(&Outcome) -> &Vec<Option<bool>>| {
                            let slopes = outcomes.iter().flat_map(|o| pick(o)[1..].iter());
                            let (hits, total) = slopes
                                .flatten()
                                .fold((0usize, 0usize), |(h, t), c| (h + usize::from(*c), t + 1));
                            hits as f64 / total.max(1) as f64
                        };
                        let mean = |f: fn(&Outcome) -> f64| {
                            outcomes.iter().map(f).sum::<f64>() / reps as f64
                        };
                        RangesColumns {
                            vs_public: pooled(|o| &o.vs_public),
                            vs_beta: pooled(|o| &o.vs_beta),
                            clipped_y: mean(|o| o.clipped.0),
                            clipped_x: mean(|o| o.clipped.1),
                        }
                    }),
                };
                println!("{}", row.line());
                if args.detail {
                    for (j, c) in coefs.iter().enumerate() {
                        let f = c.finite.max(1) as f64;
                        let mean_se = c.se / f;
                        let bias = c.error / f;
                        let sd = (c.error_sq / f - bias * bias).max(0.0).sqrt();
                        // The estimand's mean over the fits, and its sd across them (0 without
                        // the ranges round) over the mean standard error.
                        let t = c.estimand / reps as f64;
                        let t_sd = (c.estimand_sq / reps as f64 - t * t).max(0.0).sqrt();
                        println!(
                            "    {:<10} estimand {t:>10.4} (sd/se {:>5.2})  covered {:.3} ± {:.3} \
                             of {} finite  width {:>9.4}  mean error/se {:>6.2}  sd/se {:>5.2}",
                            if j == 0 {
                                "intercept".to_string()
                            } else {
                                format!("x{j}")
                            },
                            t_sd / mean_se,
                            rate(c),
                            binom(rate(c)),
                            c.finite,
                            c.width / f,
                            bias / mean_se,
                            sd / mean_se,
                        );
                    }
                }
                summary.push(row);
            }
        }
    }
    println!(
        "\n90% coverage of the stated estimand (population least squares of the clipped \
         records), {} replications per cell; slopes pooled ± replication-level s.e.; a fit \
         that fell back to the constant counts as not covered; width of a slope's interval \
         relative to |its estimand|, averaged over the slopes:\n",
        args.replications
    );
    let (extra_head, extra_rule) = if args.ranges_round {
        (
            " of those, public ranges' estimand | of those, unclipped β | y clipped | rows with \
             an x clipped |",
            " --- | --- | --- | --- |",
        )
    } else {
        ("", "")
    };
    println!(
        "| design | n | ε | intercept | slopes | slopes (min–max) | fell back | slopes, of \
         the fits that gave them | ridged | intercept width | slope width ÷ abs(estimand) \
         |{extra_head}"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |{extra_rule}");
    for r in &summary {
        println!("{}", r.markdown());
    }
    println!(
        "\nSlope coverage of the fits that gave slopes, pooled over the cells, by their DP R² / its noise sd:"
    );
    for (i, (total, covered)) in by_ratio.iter().enumerate() {
        let lo = if i == 0 {
            f64::NEG_INFINITY
        } else {
            R2_BINS[i - 1]
        };
        let hi = R2_BINS.get(i).copied().unwrap_or(f64::INFINITY);
        if *total > 0 {
            let p = *covered as f64 / *total as f64;
            println!("  [{lo}, {hi}): {p:.3} of {total} slope intervals");
        }
    }
    println!(
        "\n{} fits in {:.1} s. Privacy: each fit spends its own (ε, {DELTA:e}) on its own \
         synthetic data set; the estimand and the clipped shares are NON-PRIVATE.",
        summary.len() as u64 * args.replications,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

struct CellRow {
    design: &'static str,
    n: usize,
    epsilon: f64,
    intercept: f64,
    intercept_se: f64,
    slopes: f64,
    slopes_se: f64,
    slope_min: f64,
    slope_max: f64,
    fallbacks: usize,
    shown_rate: f64,
    ridged: usize,
    ridged_rate: f64,
    rel_width: f64,
    intercept_width: f64,
    ranges: Option<RangesColumns>,
}

/// With the ranges round: returned slope intervals' coverage of the public ranges' estimand and
/// of the unclipped β, and the mean shares the fits' ranges clip.
struct RangesColumns {
    vs_public: f64,
    vs_beta: f64,
    clipped_y: f64,
    clipped_x: f64,
}

impl CellRow {
    fn line(&self) -> String {
        format!(
            "  n = {:>5}, ε = {:<3}: intercept {:.3} ± {:.3}, slopes {:.3} ± {:.3} ({:.3}–{:.3}), \
             fell back {}, slopes among shown {:.3}, ridged {} (covering {:.3}), \
             widths {:.3} / {:.2}",
            self.n,
            self.epsilon,
            self.intercept,
            self.intercept_se,
            self.slopes,
            self.slopes_se,
            self.slope_min,
            self.slope_max,
            self.fallbacks,
            self.shown_rate,
            self.ridged,
            self.ridged_rate,
            self.intercept_width,
            self.rel_width
        ) + &self.ranges.as_ref().map_or_else(String::new, |r| {
            format!(
                ", returned slopes cover the public ranges' estimand {:.3}, unclipped β {:.3}; \
                 clipped y {:.1}%, rows with a clipped x {:.1}%",
                r.vs_public,
                r.vs_beta,
                100.0 * r.clipped_y,
                100.0 * r.clipped_x
            )
        })
    }

    fn markdown(&self) -> String {
        let extra = self.ranges.as_ref().map_or_else(String::new, |r| {
            format!(
                " {:.3} | {:.3} | {:.1}% | {:.1}% |",
                r.vs_public,
                r.vs_beta,
                100.0 * r.clipped_y,
                100.0 * r.clipped_x
            )
        });
        format!(
            "| {} | {} | {} | {:.3} ± {:.3} | {:.3} ± {:.3} | {:.3}–{:.3} | {} | {:.3} | {} | {:.3} | {:.2} |{extra}",
            self.design,
            self.n,
            self.epsilon,
            self.intercept,
            self.intercept_se,
            self.slopes,
            self.slopes_se,
            self.slope_min,
            self.slope_max,
            self.fallbacks,
            self.shown_rate,
            self.ridged,
            self.intercept_width,
            self.rel_width
        )
    }
}
