//! The Rust side of the peer comparisons in `benches/peers/` (numpy, diffprivlib). Not a
//! criterion bench: each subcommand times one computation and prints its median, to be run next
//! to the matching Python script on the same machine in the same session.
//!
//! ```text
//! RAYON_NUM_THREADS=1 cargo bench --bench peers -- gram 100000 1000
//! python3 benches/peers/plr_data.py 50000 100 /tmp/plr.bin
//! RAYON_NUM_THREADS=1 cargo bench --bench peers -- plr /tmp/plr.bin 50000 100 1.0
//! ```
//!
//! `noise σ count`: `DiscreteGaussian::fill` of `count` samples (ChaCha20 as the caller's
//! generator), median of 5, in samples per second.
//! `gram n d`: `blr::stats::SuffStats::compute` (XᵀX by a symmetric rank-n update, Σxy, Σy²) on
//! an n×d matrix uniform in [-1, 1), median of 3 (peer: `gram.py`, numpy `X.T @ X`).
//! `plr file n d ε`: `plr_stacking::fit_plr` with λ = 1/n (diffprivlib's default C = 1 in the
//! averaged-loss form) on the data of `plr_data.py`, median of 5 fits with fresh noise and their
//! mean test AUC (peer: `plr_diffprivlib.py`).

use std::error::Error;
use std::time::Instant;

use blr::stats::SuffStats;
use plr_stacking::{Dataset, PlrConfig, RngSource, auc, fit_plr};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

type Res<T> = Result<T, Box<dyn Error>>;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Res<T> {
    let text = args.get(i).ok_or(format!("missing {what}"))?;
    let number: f64 = text.parse().map_err(|_| format!("{what}: not a number"))?;
    format!("{number}")
        .parse::<T>()
        .map_err(|_| format!("{what}: bad value {text}").into())
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn gram(args: &[String]) -> Res<()> {
    let (n, d): (usize, usize) = (arg(args, 1, "n")?, arg(args, 2, "d")?);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let unit = |r: &mut ChaCha8Rng| (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    let x: Vec<f64> = (0..n * d).map(|_| unit(&mut rng)).collect();
    let y: Vec<f64> = (0..n).map(|_| unit(&mut rng)).collect();
    let mut times = Vec::new();
    let mut trace = 0.0;
    for _ in 0..3 {
        let t = Instant::now();
        let stats = SuffStats::compute(&x, &y, n, d)?;
        times.push(t.elapsed().as_secs_f64());
        trace = (0..d)
            .map(|j| stats.xx[blr::stats::packed_index(j, j, d)])
            .sum();
    }
    println!(
        "dpdist SuffStats::compute n={n} d={d}, {} rayon threads: median {:.3} s, trace {trace:.6e}",
        rayon::current_num_threads(),
        median(times)
    );
    Ok(())
}

fn plr(args: &[String]) -> Res<()> {
    let path = args.get(1).ok_or("missing file")?;
    let (n, d): (usize, usize) = (arg(args, 2, "n")?, arg(args, 3, "d")?);
    let epsilon: f64 = args.get(4).ok_or("missing ε")?.parse()?;
    let bytes = std::fs::read(path)?;
    let values: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    if values.len() != 2 * (n * d + n) {
        return Err(format!(
            "{path}: {} values, expected {}",
            values.len(),
            2 * (n * d + n)
        )
        .into());
    }
    let (train_x, rest) = values.split_at(n * d);
    let (train_y, rest) = rest.split_at(n);
    let (test_x, test_y) = rest.split_at(n * d);
    let train = Dataset::from_rows(train_x, d, train_y)?;
    let config = PlrConfig {
        intercept: false,
        ..PlrConfig::new(epsilon, 1.0 / n as f64)
    };
    let (mut times, mut aucs) = (Vec::new(), Vec::new());
    for seed in 0..5 {
        let t = Instant::now();
        let fit = fit_plr(&train, &config, &RngSource::InsecureFixedSeed(seed))?;
        times.push(t.elapsed().as_secs_f64());
        aucs.push(auc(&fit.model.decision_function(test_x)?, test_y)?);
    }
    println!(
        "dpdist fit_plr eps={epsilon} lambda=1/n n={n} d={d}: median fit {:.1} ms, mean test AUC {:.4}",
        median(times) * 1e3,
        aucs.iter().sum::<f64>() / aucs.len() as f64
    );
    Ok(())
}

fn noise(args: &[String]) -> Res<()> {
    let sigma: f64 = args.get(1).ok_or("missing σ")?.parse()?;
    let count: usize = arg(args, 2, "count")?;
    let sampler = dp_noise::discrete::DiscreteGaussian::new(sigma)?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    let mut out = vec![0i64; count];
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        sampler.fill(&mut rng, &mut out);
        times.push(t.elapsed().as_secs_f64());
    }
    let mean_square = out.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / count as f64;
    println!(
        "DiscreteGaussian::fill sigma={sigma} count={count}: median {:.1} M samples/s (mean square / sigma^2 = {:.3})",
        count as f64 / median(times) / 1e6,
        mean_square / (sigma * sigma)
    );
    Ok(())
}

fn main() -> Res<()> {
    // `cargo bench` appends `--bench`; ignore flags.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.first().map(String::as_str) {
        Some("gram") => gram(&args),
        Some("plr") => plr(&args),
        Some("noise") => noise(&args),
        _ => Err(
            "usage: peers gram N D | peers plr FILE N D EPSILON | peers noise SIGMA COUNT".into(),
        ),
    }
}
