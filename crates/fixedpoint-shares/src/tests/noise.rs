//! Noisy rounds: the release carries discrete Gaussian noise of variance N·σ_client², and the
//! shares still cancel bit-exactly because the noise is part of the encoded value.

use dp_noise::calibrate::distributed_sigma;
use dp_noise::rng::RngSource;

use super::{expand, params, quantise};
use crate::{
    Aggregator, Client, ClientId, ClientSet, ComputeNode, NodeIndex, RoundConfig, RoundParams,
    ShareMode, simulate_round,
};

/// Φ⁻¹(1 − 1e-6/2): two-sided normal critical value at α = 1e-6.
const Z_TWO_SIDED: f64 = 4.891_638_475_714_779;

/// Wilson–Hilferty chi-square quantile with k degrees of freedom at normal quantile z.
fn chi2_quantile(k: f64, z: f64) -> f64 {
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + z * a.sqrt()).powi(3)
}

fn noisy(n: usize, t: usize, d: usize, mode: ShareMode) -> RoundConfig {
    RoundConfig::new(&RoundParams {
        noise_sigma_total: Some(1.0),
        ..params(n, 3, t, d, mode)
    })
    .unwrap()
}

fn inputs(n: usize, d: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| {
            (0..d)
                .map(|j| ((i * 31 + j * 7) % 50) as f64 / 10.0 - 2.5)
                .collect()
        })
        .collect()
}

#[test]
fn release_noise_has_mean_zero_and_variance_n_sigma_client_squared() {
    let (n, t, d) = (20usize, 2usize, 50usize);
    let rounds = if cfg!(debug_assertions) { 40 } else { 1000 };
    let config = noisy(n, t, d, ShareMode::Seed);
    let spec = config.noise().unwrap();
    // σ_client = 1/sqrt(20 − 2 − 1) = 1/sqrt(17) = 0.242535625.
    assert!((spec.sigma_client - 0.242_535_625).abs() < 1e-9);
    assert_eq!(spec.sigma_client, distributed_sigma(1.0, n, t).unwrap());
    let f = config.codec().frac_bits();
    let x = inputs(n, d);
    let exact: Vec<i128> = (0..d)
        .map(|j| x.iter().map(|row| quantise(row[j], f)).sum())
        .collect();
    let sd = spec.sigma_client * (n as f64).sqrt();
    let mut z = Vec::with_capacity(rounds * d);
    for r in 0..rounds {
        let release = simulate_round(
            &config,
            &x,
            &[],
            RngSource::InsecureFixedSeed(1000 + r as u64),
        )
        .unwrap();
        assert!((release.noise_sigma_released - sd).abs() < 1e-12);
        for (s, e) in release.sum_units.iter().zip(&exact) {
            // Σ η in grid units, exactly; then in units of the expected standard deviation.
            let eta = (i128::from(*s) - e) as f64 / config.codec().scale();
            z.push(eta / sd);
        }
    }
    let k = z.len() as f64;
    let mean = z.iter().sum::<f64>() / k;
    let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0);
    // Mean: sqrt(k)·mean ~ N(0, 1).
    assert!(
        mean.abs() * k.sqrt() < Z_TWO_SIDED,
        "mean {mean} over {k} samples"
    );
    // Variance: (k − 1)·s² ~ χ²(k − 1) for Gaussian noise; two-sided at α = 1e-6.
    // (k = 2000 in debug: bounds ≈ [0.853, 1.162]; k = 50000 in release: ≈ [0.969, 1.031].)
    let lo = chi2_quantile(k - 1.0, -Z_TWO_SIDED) / (k - 1.0);
    let hi = chi2_quantile(k - 1.0, Z_TWO_SIDED) / (k - 1.0);
    assert!(
        lo < var && var < hi,
        "variance ratio {var} outside [{lo}, {hi}]"
    );
}

#[test]
fn noisy_shares_cancel_exactly_and_the_noise_stays_in_its_tail() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let (n, t, d) = (9usize, 1usize, 30usize);
        let config = noisy(n, t, d, mode);
        let f = config.codec().frac_bits();
        let spec = config.noise().unwrap();
        let x = inputs(n, d);
        let mut nodes: Vec<ComputeNode> = (0..3)
            .map(|k| ComputeNode::new(&config, NodeIndex(k)).unwrap())
            .collect();
        let mut total_noise = vec![0i128; d];
        let mut nonzero = 0;
        for (i, row) in x.iter().enumerate() {
            let msgs = Client::new(
                &config,
                ClientId(i as u64),
                RngSource::InsecureFixedSeed(i as u64),
            )
            .unwrap()
            .shard(row)
            .unwrap();
            // The client's M shares sum to enc(z_i) + η_i; recover η_i.
            let mut sum = vec![0u64; d];
            for msg in &msgs {
                crate::kernels::add_assign(&mut sum, &expand(msg)).unwrap();
            }
            for (j, s) in sum.iter().enumerate() {
                let eta = i128::from(*s as i64) - quantise(row[j], f);
                // Each client's noise is far inside the per-round tail (~10σ√N).
                assert!((eta as f64).abs() < spec.tail * config.codec().scale());
                nonzero += usize::from(eta != 0);
                total_noise[j] += eta;
            }
            for (node, msg) in nodes.iter_mut().zip(&msgs) {
                node.absorb(msg).unwrap();
            }
        }
        assert!(nonzero > n * d / 2, "noise was not added");
        let agreed = nodes[0].received().clone();
        assert_eq!(agreed.clients(), &ClientSet::full(n));
        let mut agg = Aggregator::new(&config).unwrap();
        for node in &nodes {
            agg.add(&node.finalize(&agreed).unwrap()).unwrap();
        }
        let release = agg.release().unwrap();
        for j in 0..d {
            let exact: i128 = x.iter().map(|row| quantise(row[j], f)).sum();
            assert_eq!(
                i128::from(release.sum_units[j]),
                exact + total_noise[j],
                "{mode:?} {j}"
            );
        }
        assert_eq!(release.noise, Some(spec));
    }
}
