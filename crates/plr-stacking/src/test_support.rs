//! Shared helpers for the unit tests: synthetic data and distribution functions.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rand_distr::{Distribution, Normal, StandardUniform};

use crate::data::Dataset;

/// Rows with x_j ~ N(0, scale²/(1+j)), labels ~ Bernoulli(σ(xᵀw)) for w_j ~ N(0, 9/(1+j));
/// row-major features and 0/1 labels.
pub fn synthetic(n: usize, d: usize, scale: f64, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let normal = Normal::new(0.0, 1.0).unwrap();
    let w: Vec<f64> = (0..d)
        .map(|j| normal.sample(&mut rng) * 3.0 / ((1 + j) as f64).sqrt())
        .collect();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d)
            .map(|j| normal.sample(&mut rng) * scale / ((1 + j) as f64).sqrt())
            .collect();
        let z: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() / scale;
        let u: f64 = StandardUniform.sample(&mut rng);
        y.push(if u < 1.0 / (1.0 + (-z).exp()) {
            1.0
        } else {
            0.0
        });
        x.extend(row);
    }
    (x, y)
}

/// The same as a `Dataset`.
pub fn synthetic_dataset(n: usize, d: usize, scale: f64, seed: u64) -> Dataset {
    let (x, y) = synthetic(n, d, scale, seed);
    Dataset::from_rows(&x, d, &y).unwrap()
}

/// Gamma(shape k integer, scale θ) CDF: 1 − e^{−t} Σ_{i<k} t^i/i!, t = x/θ.
pub fn gamma_cdf_integer_shape(x: f64, k: usize, theta: f64) -> f64 {
    let t = x / theta;
    let mut term = 1.0;
    let mut sum = 0.0;
    for i in 0..k {
        if i > 0 {
            term *= t / i as f64;
        }
        sum += term;
    }
    1.0 - (-t).exp() * sum
}

/// Kolmogorov–Smirnov statistic of `sample` against `cdf`.
pub fn ks_statistic(mut sample: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
    sample.sort_by(f64::total_cmp);
    let m = sample.len() as f64;
    sample
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = cdf(v);
            (f - i as f64 / m).abs().max((f - (i + 1) as f64 / m).abs())
        })
        .fold(0.0, f64::max)
}

/// KS critical value at α = 1e-6 (asymptotic: P(√m·D > t) ≈ 2e^{−2t²} ⇒ t = √(ln(2/α)/2)).
pub fn ks_critical(m: usize) -> f64 {
    ((2.0f64 / 1e-6).ln() / 2.0).sqrt() / (m as f64).sqrt()
}
