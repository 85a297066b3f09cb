//! Distributed private Bayesian linear regression (DCA paper, Alg. 2) against its baselines on a
//! CSV file, by Monte-Carlo cross-validation.
//!
//! `cargo run --release --example distributed_blr` runs the DCA paper's UCI protocol on the
//! bundled diabetes data (every row one client, M = 10 compute nodes). `--help` lists the options.

use std::process::ExitCode;
use std::time::Instant;

use blr::StdSource;
use blr::data::{Table, centre_and_scale_to_range, column_means, standardise};
use blr::{
    ErrorMeasure, FitConfig, Mechanism, Prior, ProjectionConfig, RoundBudget, SearchTarget,
    SplitSearchConfig, fit, fit_non_private, mae, predict, search_laplace_split,
    search_thresholds_for, spearman,
};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use projection::search::{OmegaGrid, SearchConfig};
use projection::{Aggregation, DcaSettings, StdMode, normalize_rows};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

const HELP: &str = "\
distributed_blr — private Bayesian linear regression: NP, TA, TA-proj, DDP (DCA), DDP-proj, input perturbation

USAGE: cargo run --release --example distributed_blr -- [CSV] [OPTIONS]

  CSV                     numeric CSV with a header row (default: examples/data/diabetes.csv)
  --target NAME           target column (default: target)
  --protocol dca|robust   dca (default): DCA paper UCI protocol — centred, every column scaled to a
                          range of 10, assumed bounds ±7.5, MAE-driven threshold search, 25 splits;
                          robust: robust LR protocol — x centred and rows L2-normalised (bound 1),
                          y standardised (assumed bound ±7.5), Spearman-driven search, 30 splits
  --epsilons LIST         comma-separated ε values (default: 0.5,1,2,5)
  --delta D               δ for the Gaussian mechanism (default: 1e-5)
  --mechanism gaussian|laplace
                          gaussian (default): (ε,δ) via zCDP, TA and DCA; laplace: ε-DP (robust LR
                          paper), trusted aggregator and input perturbation only
  --split P1,P2,P3        Laplace budget split over Σxx, Σxy, Σy² (default: chosen per ε on
                          auxiliary data, robust LR paper Methods 4.3; no privacy cost)
  --splits K              Monte-Carlo cross-validation splits (default: protocol's)
  --test-rows T           rows held out per split (default: 100)
  --nodes M               DCA compute nodes (default: 10)
  --max-dropped T         DCA: tolerated dropped/colluding clients (default: 0)
  --std dp|public         where the σ that scale the thresholds come from: dp = the DP marginal-std
                          round of Alg. 2 (default for dca); public = known by construction of the
                          protocol's preprocessing, no budget spent (default for robust: unit-norm
                          rows give pooled σ_x = sqrt(1/d), standardised y gives σ_y = 1)
  --std-share S           share of the budget for the DP std round (default: 0.1)
  --std-mode per-dim|pooled
                          one σ per x dimension (default) or one pooled σ for all x
  --repeats R             auxiliary data sets per grid point in the threshold search (default: 10)
  --assumed-x C           assumed bound of every x column (default: protocol's)
  --assumed-y C           assumed bound of y (default: 7.5)
  --insecure-seed N       reproducible run: ALL randomness (noise, masks, seeds) from a fixed seed.
                          Insecure — for experiments only. Default: OS randomness.
  --help                  this text
";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Protocol {
    Dca,
    Robust,
}

/// The robust LR paper's split, the starting point of the automatic split search.
const DEFAULT_SPLIT: [f64; 3] = [0.6, 0.35, 0.05];

struct Options {
    csv: String,
    target: String,
    protocol: Protocol,
    epsilons: Vec<f64>,
    delta: f64,
    mechanism: Mechanism,
    splits: Option<usize>,
    test_rows: usize,
    nodes: u16,
    max_dropped: usize,
    std_public: Option<bool>,
    std_share: f64,
    std_mode: StdMode,
    repeats: usize,
    assumed_x: Option<f64>,
    assumed_y: f64,
    seed: Option<u64>,
    /// Laplace without `--split`: choose the split per ε on auxiliary data.
    auto_split: bool,
}

fn parse_list(s: &str, what: &str) -> Result<Vec<f64>, String> {
    s.split(',')
        .map(|v| {
            v.trim()
                .parse::<f64>()
                .map_err(|_| format!("{what}: '{v}' is not a number"))
        })
        .collect()
}

fn parse_args() -> Result<Option<Options>, String> {
    let mut o = Options {
        csv: "examples/data/diabetes.csv".into(),
        target: "target".into(),
        protocol: Protocol::Dca,
        epsilons: vec![0.5, 1.0, 2.0, 5.0],
        delta: 1e-5,
        mechanism: Mechanism::Gaussian,
        splits: None,
        test_rows: 100,
        nodes: 10,
        max_dropped: 0,
        std_public: None,
        std_share: 0.1,
        std_mode: StdMode::PerDimension,
        repeats: 10,
        assumed_x: None,
        assumed_y: 7.5,
        seed: None,
        auto_split: false,
    };
    let mut split = None;
    let mut laplace = false;
    let mut args = std::env::args().skip(1);
    let mut positional = 0;
    while let Some(a) = args.next() {
        if a == "--help" || a == "-h" {
            return Ok(None);
        }
        if !a.starts_with("--") {
            positional += 1;
            if positional > 1 {
                return Err(format!("unexpected argument '{a}' (one CSV path only)"));
            }
            o.csv = a;
            continue;
        }
        let v = args.next().ok_or_else(|| format!("{a} needs a value"))?;
        let num = |v: &str| {
            v.parse::<f64>()
                .map_err(|_| format!("{a}: '{v}' is not a number"))
        };
        let int = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("{a}: '{v}' is not a non-negative integer"))
        };
        match a.as_str() {
            "--target" => o.target = v,
            "--protocol" => {
                o.protocol = match v.as_str() {
                    "dca" => Protocol::Dca,
                    "robust" => Protocol::Robust,
                    _ => return Err(format!("--protocol must be dca or robust, not '{v}'")),
                }
            }
            "--epsilons" => o.epsilons = parse_list(&v, "--epsilons")?,
            "--delta" => o.delta = num(&v)?,
            "--mechanism" => {
                laplace = match v.as_str() {
                    "gaussian" => false,
                    "laplace" => true,
                    _ => {
                        return Err(format!(
                            "--mechanism must be gaussian or laplace, not '{v}'"
                        ));
                    }
                }
            }
            "--split" => {
                let p = parse_list(&v, "--split")?;
                split = Some(
                    p.try_into()
                        .map_err(|_| "--split needs three numbers".to_string())?,
                );
            }
            "--splits" => o.splits = Some(int(&v)?),
            "--test-rows" => o.test_rows = int(&v)?,
            "--nodes" => {
                o.nodes = u16::try_from(int(&v)?).map_err(|_| "--nodes too large".to_string())?
            }
            "--max-dropped" => o.max_dropped = int(&v)?,
            "--std-share" => o.std_share = num(&v)?,
            "--std" => {
                o.std_public = Some(match v.as_str() {
                    "dp" => false,
                    "public" => true,
                    _ => return Err(format!("--std must be dp or public, not '{v}'")),
                })
            }
            "--std-mode" => {
                o.std_mode = match v.as_str() {
                    "per-dim" => StdMode::PerDimension,
                    "pooled" => StdMode::PooledX,
                    _ => return Err(format!("--std-mode must be per-dim or pooled, not '{v}'")),
                }
            }
            "--repeats" => o.repeats = int(&v)?,
            "--assumed-x" => o.assumed_x = Some(num(&v)?),
            "--assumed-y" => o.assumed_y = num(&v)?,
            "--insecure-seed" => {
                o.seed = Some(
                    v.parse()
                        .map_err(|_| format!("--insecure-seed: '{v}' is not an integer"))?,
                )
            }
            _ => return Err(format!("unknown option {a} (see --help)")),
        }
    }
    if laplace {
        o.auto_split = split.is_none();
        o.mechanism = Mechanism::Laplace {
            split: split.unwrap_or(DEFAULT_SPLIT),
        };
    }
    if o.epsilons.is_empty() || o.epsilons.iter().any(|e| !(e.is_finite() && *e > 0.0)) {
        return Err("every ε must be a positive number".into());
    }
    if o.splits == Some(0) || o.repeats == 0 {
        return Err("--splits and --repeats must be at least 1".into());
    }
    Ok(Some(o))
}

/// The data after the protocol's preprocessing, plus the protocol's public bounds.
struct Prepared {
    x: Vec<f64>,
    y: Vec<f64>,
    n: usize,
    d: usize,
    assumed_x: f64,
}

fn prepare(o: &Options) -> Result<Prepared, String> {
    let text =
        std::fs::read_to_string(&o.csv).map_err(|e| format!("cannot read {}: {e}", o.csv))?;
    let table = Table::parse_csv(&text).map_err(|e| format!("{}: {e}", o.csv))?;
    let (mut x, mut y, d, _) = table
        .split_target(&o.target)
        .map_err(|e| format!("{}: {e}", o.csv))?;
    let n = table.rows;
    if n <= o.test_rows + 2 {
        return Err(format!(
            "{}: {n} rows leave no training data with {} test rows",
            o.csv, o.test_rows
        ));
    }
    // Normalisation constants come from the whole file: the papers treat the data as centred and
    // scaled beforehand (they are not part of the private computation).
    let assumed_x = match o.protocol {
        Protocol::Dca => {
            centre_and_scale_to_range(&mut x, n, d, 10.0).map_err(|e| e.to_string())?;
            centre_and_scale_to_range(&mut y, n, 1, 10.0).map_err(|e| e.to_string())?;
            7.5
        }
        Protocol::Robust => {
            let means = column_means(&x, n, d).map_err(|e| e.to_string())?;
            for row in x.chunks_exact_mut(d) {
                row.iter_mut().zip(&means).for_each(|(v, m)| *v -= m);
            }
            normalize_rows(&mut x, n, d).map_err(|e| e.to_string())?;
            standardise(&mut y, n, 1).map_err(|e| e.to_string())?;
            1.0
        }
    };
    Ok(Prepared {
        x,
        y,
        n,
        d,
        assumed_x: o.assumed_x.unwrap_or(assumed_x),
    })
}

const METHODS: [&str; 6] = ["NP", "TA", "TA-proj", "DDP", "DDP-proj", "input-pert"];

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

fn summary(values: &[f64]) -> (f64, f64, f64, f64) {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    (
        quantile(&s, 0.5),
        quantile(&s, 0.25),
        quantile(&s, 0.75),
        mean,
    )
}

/// The robust LR paper's budget-split search (Methods 4.3) for the release at total budget `eps`,
/// on auxiliary data of the training size: first (ω_x, ω_y) with the default split, then the
/// split at those multipliers. The auxiliary σ are the public ones when the protocol fixes them,
/// otherwise the public assumed bounds (no private value is used, so this costs no privacy).
fn choose_split(
    o: &Options,
    data: &Prepared,
    n_train: usize,
    eps: f64,
    projection: &ProjectionConfig,
    rng: RngSource,
) -> Result<[f64; 3], String> {
    let (sigma_x, sigma_y, budget, what) = match &projection.std_source {
        StdSource::Public { x, y } => (x.clone(), *y, eps, "public σ"),
        StdSource::DpRound => (
            vec![data.assumed_x; data.d],
            o.assumed_y,
            (1.0 - o.std_share) * eps,
            "assumed bounds as σ",
        ),
    };
    let target = SearchTarget {
        sigma_x,
        sigma_y,
        n: n_train,
        mechanism: Mechanism::Laplace {
            split: DEFAULT_SPLIT,
        },
        budget: RoundBudget::Epsilon(budget),
        aggregation: Aggregation::Trusted,
        prior: Prior::default(),
        measure: projection.measure,
    };
    let mut seeds = rng.try_rng().map_err(|e| e.to_string())?;
    let search = SearchConfig {
        seed: seeds.next_u64(),
        ..projection.search.clone()
    };
    let omega = search_thresholds_for(&target, &search).map_err(|e| e.to_string())?;
    let mut config = SplitSearchConfig {
        repeats: o.repeats,
        ..SplitSearchConfig::robust_lr(seeds.next_u64()).map_err(|e| e.to_string())?
    };
    // Σy² is not released here, so only p₁ : p₂ matters (the release rescales it to sum to 1):
    // keep one representative per ratio, the one with p₃ at the grid minimum.
    config.grid.retain(|s| (s[2] - 0.05).abs() < 1e-12);
    let choice = search_laplace_split(&target, omega.omega_x, omega.omega_y, false, &config)
        .map_err(|e| e.to_string())?;
    println!(
        "ε = {eps}: Laplace split (p₁, p₂, p₃) = ({}, {}, {}) chosen on auxiliary data ({what}, ω_x = {:.2}, ω_y = {:.2}, aux error {:.4})",
        choice.split[0],
        choice.split[1],
        choice.split[2],
        omega.omega_x,
        omega.omega_y,
        choice.error
    );
    Ok(choice.split)
}

fn run(o: &Options) -> Result<(), String> {
    let data = prepare(o)?;
    let (n, d) = (data.n, data.d);
    let splits = o.splits.unwrap_or(match o.protocol {
        Protocol::Dca => 25,
        Protocol::Robust => 30,
    });
    let n_train = n - o.test_rows;
    let root = match o.seed {
        Some(s) => RngSource::InsecureFixedSeed(s),
        None => RngSource::Os,
    };
    let (grid, measure) = match o.protocol {
        Protocol::Dca => (OmegaGrid::dca(), ErrorMeasure::Mae),
        Protocol::Robust => (OmegaGrid::robust_lr(), ErrorMeasure::Spearman),
    };
    let public = o.std_public.unwrap_or(o.protocol == Protocol::Robust);
    if public && o.protocol != Protocol::Robust {
        return Err(
            "--std public needs --protocol robust (only its preprocessing fixes the σ)".into(),
        );
    }
    let std_source = if public {
        StdSource::Public {
            x: vec![(1.0 / d as f64).sqrt(); d],
            y: 1.0,
        }
    } else {
        StdSource::DpRound
    };
    let projection = ProjectionConfig {
        std_source,
        std_share: o.std_share,
        std_mode: o.std_mode,
        std_floor: 0.5,
        search: SearchConfig {
            grid_x: grid.clone(),
            grid_y: grid,
            repeats: o.repeats,
            ..SearchConfig::dca(0)
        },
        measure,
    };
    let dca = Aggregation::Distributed(DcaSettings {
        compute_nodes: o.nodes,
        max_dropped: o.max_dropped,
        ..DcaSettings::default()
    });
    let gaussian = o.mechanism == Mechanism::Gaussian;
    println!(
        "data {} ({n} rows, d = {d}, target '{}'), protocol {:?}, {splits} splits of {n_train} train / {} test rows",
        o.csv, o.target, o.protocol, o.test_rows
    );
    println!(
        "mechanism {}, assumed bounds x ±{}, y ±{}, std {}, DCA: {} clients, M = {} nodes, T = {}{}",
        if o.auto_split {
            "Laplace (split chosen per ε on auxiliary data)".to_string()
        } else {
            format!("{:?}", o.mechanism)
        },
        data.assumed_x,
        o.assumed_y,
        if public {
            "public (no budget)".to_string()
        } else {
            format!(
                "by DP round, share {} of the budget, {:?}",
                o.std_share, o.std_mode
            )
        },
        n_train,
        o.nodes,
        o.max_dropped,
        if o.seed.is_some() {
            ", INSECURE fixed seed"
        } else {
            ""
        }
    );
    let mechanisms = o
        .epsilons
        .iter()
        .enumerate()
        .map(|(e, &eps)| {
            if !o.auto_split {
                return Ok(o.mechanism);
            }
            let split = choose_split(
                o,
                &data,
                n_train,
                eps,
                &projection,
                root.derive(u64::MAX - e as u64),
            )?;
            Ok(Mechanism::Laplace { split })
        })
        .collect::<Result<Vec<_>, String>>()?;
    // results[e][m] = (MAEs, Spearmans) over splits; spent[e][m].
    let mut maes = vec![vec![Vec::new(); METHODS.len()]; o.epsilons.len()];
    let mut rhos = maes.clone();
    let mut spent: Vec<Vec<Option<PrivacyLoss>>> =
        vec![vec![None; METHODS.len()]; o.epsilons.len()];
    let mut split_rng =
        ChaCha20Rng::seed_from_u64(o.seed.unwrap_or_else(|| RngSource::Os.rng().next_u64()));
    let start = Instant::now();
    for s in 0..splits {
        let mut idx: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            idx.swap(i, (split_rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let take = |rows: &[usize]| -> (Vec<f64>, Vec<f64>) {
            let x = rows
                .iter()
                .flat_map(|&r| data.x[r * d..(r + 1) * d].iter().copied())
                .collect();
            (x, rows.iter().map(|&r| data.y[r]).collect())
        };
        let (xt, yt) = take(&idx[o.test_rows..]);
        let (xs, ys) = take(&idx[..o.test_rows]);
        let score = |beta: &[f64]| -> Result<(f64, f64), String> {
            let pred = predict(beta, &xs, o.test_rows).map_err(|e| e.to_string())?;
            Ok((
                mae(&ys, &pred).map_err(|e| e.to_string())?,
                spearman(&ys, &pred).map_err(|e| e.to_string())?,
            ))
        };
        let np =
            fit_non_private(&xt, &yt, n_train, d, Prior::default()).map_err(|e| e.to_string())?;
        let np_score = score(&np.mean)?;
        for (e, &eps) in o.epsilons.iter().enumerate() {
            maes[e][0].push(np_score.0);
            rhos[e][0].push(np_score.1);
            for (m, method) in METHODS.iter().enumerate().skip(1) {
                let (aggregation, proj) = match *method {
                    "TA" => (Aggregation::Trusted, false),
                    "TA-proj" => (Aggregation::Trusted, true),
                    "DDP" => (dca, false),
                    "DDP-proj" => (dca, true),
                    _ => (Aggregation::InputPerturbation, false),
                };
                if !gaussian && matches!(aggregation, Aggregation::Distributed(_)) {
                    continue;
                }
                let config = FitConfig {
                    aggregation,
                    mechanism: mechanisms[e],
                    budget: PrivacyLoss {
                        epsilon: eps,
                        delta: if gaussian { o.delta } else { 0.0 },
                    },
                    assumed_x: vec![data.assumed_x; d],
                    assumed_y: o.assumed_y,
                    projection: proj.then(|| projection.clone()),
                    prior: Prior::default(),
                    with_yy: false,
                };
                let stream = ((s * o.epsilons.len() + e) * METHODS.len() + m) as u64;
                let f = fit(&xt, &yt, n_train, d, &config, root.derive(stream))
                    .map_err(|e| format!("{method} at ε = {eps}: {e}"))?;
                let (a, r) = score(&f.posterior.mean)?;
                maes[e][m].push(a);
                rhos[e][m].push(r);
                spent[e][m] = Some(f.spent);
            }
        }
        eprintln!(
            "split {}/{splits} done ({:.1} s)",
            s + 1,
            start.elapsed().as_secs_f64()
        );
    }
    for (e, &eps) in o.epsilons.iter().enumerate() {
        println!();
        println!(
            "ε = {eps}{}",
            if gaussian {
                format!(", δ = {}", o.delta)
            } else {
                " (pure ε-DP)".into()
            }
        );
        println!(
            "{:<11} {:>10} {:>21} {:>8} {:>8} {:>17}   privacy spent (ε, δ)",
            "method", "MAE median", "MAE IQR", "ρ mean", "ρ median", "ρ IQR"
        );
        for (m, method) in METHODS.iter().enumerate() {
            if maes[e][m].is_empty() {
                continue;
            }
            let (am, a1, a3, _) = summary(&maes[e][m]);
            let (rm, r1, r3, rmean) = summary(&rhos[e][m]);
            let spent = match spent[e][m] {
                None => "— (non-private)".to_string(),
                Some(p) => format!("({:.4}, {:.1e})", p.epsilon, p.delta),
            };
            println!(
                "{method:<11} {am:>10.4} {:>21} {rmean:>8.3} {rm:>8.3} {:>17}   {spent}",
                format!("[{a1:.4}, {a3:.4}]"),
                format!("[{r1:.3}, {r3:.3}]")
            );
        }
    }
    println!("\ntotal time {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    match parse_args() {
        Ok(None) => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Ok(Some(o)) => match run(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("error: {e}\n(see --help)");
            ExitCode::from(2)
        }
    }
}
