use super::*;

#[test]
fn invalid_parameters_are_refused() {
    for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0, 1e-3, 1e16] {
        assert!(DiscreteGaussian::new(bad).is_err(), "sigma {bad}");
    }
    for bad in [f64::NAN, f64::NEG_INFINITY, -0.5, 0.0, 1e-12, 1e16] {
        assert!(DiscreteLaplace::new(bad).is_err(), "scale {bad}");
    }
    assert!(DiscreteGaussian::new(MIN_GAUSSIAN_SIGMA_UNITS).is_ok());
    assert!(DiscreteGaussian::new(MAX_SCALE_UNITS).is_ok());
    assert!(DiscreteLaplace::new(MIN_LAPLACE_SCALE_UNITS).is_ok());
    assert!(DiscreteLaplace::new(MAX_SCALE_UNITS).is_ok());
}

#[test]
fn dyadic_decomposition_is_exact() {
    assert_eq!(dyadic(1.0), (1, 0));
    assert_eq!(dyadic(0.75), (3, -2));
    assert_eq!(dyadic(1024.0), (1, 10));
    assert_eq!(dyadic(f64::MIN_POSITIVE / 4.0), (1, -1024));
    let x = 1234.5678_f64;
    let (m, e) = dyadic(x);
    assert_eq!(m % 2, 1);
    assert_eq!(m as f64 * 2f64.powi(e), x);
}

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::special::normal_cdf;
use crate::test_stats::{ALPHA, chi_square_p_value};

/// Bins (−∞, e₀), [e₀, e₁), …, [e_last, ∞) given by their sorted, distinct edges.
fn bin_counts(samples: &[i64], edges: &[i64]) -> Vec<u64> {
    let mut counts = vec![0u64; edges.len() + 1];
    for &x in samples {
        counts[edges.partition_point(|&e| e <= x)] += 1;
    }
    counts
}

/// Merges neighbouring bins until each expects at least `min_expected` samples.
fn merge_small_bins(
    edges: &[i64],
    probs: &[f64],
    n: usize,
    min_expected: f64,
) -> (Vec<i64>, Vec<f64>) {
    let mut out_edges = Vec::new();
    let mut out_probs = Vec::new();
    let mut acc = 0.0;
    for (i, &p) in probs.iter().enumerate() {
        acc += p;
        if acc * n as f64 >= min_expected && i < edges.len() {
            out_probs.push(acc);
            out_edges.push(edges[i]);
            acc = 0.0;
        }
    }
    // The remainder (including the last open bin) joins the last closed one if it is too small.
    if acc * (n as f64) < min_expected && !out_probs.is_empty() {
        out_edges.pop();
        *out_probs.last_mut().unwrap() += acc;
    } else {
        out_probs.push(acc);
    }
    (out_edges, out_probs)
}

/// Edges at round(scale·z) for z on an even grid in [−z_max, z_max], deduplicated.
fn grid_edges(scale: f64, z_max: f64, count: usize) -> Vec<i64> {
    let mut edges: Vec<i64> = (0..count)
        .map(|j| (scale * (-z_max + 2.0 * z_max * j as f64 / (count - 1) as f64)).round() as i64)
        .collect();
    edges.dedup();
    edges
}

/// Bin probabilities of N_ℤ(0, σ²), by direct floating-point sums of exp(−x²/2σ²) over
/// |x| ≤ 10σ + 10 (the mass beyond is below e^{−50}), normalised.
fn gaussian_probs_by_sum(sigma: f64, edges: &[i64]) -> Vec<f64> {
    let r = (10.0 * sigma).ceil() as i64 + 10;
    let mut probs = vec![0.0; edges.len() + 1];
    let mut bin = 0;
    for x in -r..=r {
        while bin < edges.len() && x >= edges[bin] {
            bin += 1;
        }
        let xf = x as f64;
        probs[bin] += (-xf * xf / (2.0 * sigma * sigma)).exp();
    }
    let z: f64 = probs.iter().sum();
    probs.iter().map(|p| p / z).collect()
}

/// Bin probabilities of N_ℤ(0, σ²) for very large σ by the midpoint rule:
/// Σ_{a ≤ x < b} e^{−x²/2σ²} ≈ σ√(2π)·[Φ((b − ½)/σ) − Φ((a − ½)/σ)], with relative error
/// O(1/σ²) (Euler–Maclaurin), i.e. below 1e-20 for σ ≥ 2^32; the normaliser is σ√(2π) up
/// to a factor 1 + 2e^{−2π²σ²} (Poisson summation).
fn gaussian_probs_by_midpoint(sigma: f64, edges: &[i64]) -> Vec<f64> {
    let cdf = |e: i64| normal_cdf((e as f64 - 0.5) / sigma);
    let mut probs = Vec::with_capacity(edges.len() + 1);
    let mut prev = 0.0;
    for &e in edges {
        let c = cdf(e);
        probs.push(c - prev);
        prev = c;
    }
    probs.push(1.0 - prev);
    probs
}

fn gaussian_p_value(
    sampled_sigma: f64,
    sigma: f64,
    seed: u64,
    n: usize,
    probs_of: fn(f64, &[i64]) -> Vec<f64>,
) -> (f64, f64, usize) {
    let sampler = DiscreteGaussian::new(sampled_sigma).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut samples = vec![0i64; n];
    sampler.fill(&mut rng, &mut samples);
    let edges = grid_edges(sigma, 3.0, 39);
    let probs = probs_of(sigma, &edges);
    let (edges, probs) = merge_small_bins(&edges, &probs, n, 20.0);
    let counts = bin_counts(&samples, &edges);
    let (stat, p) = chi_square_p_value(&counts, &probs);
    (stat, p, counts.len())
}

fn check_gaussian(sigma: f64, seed: u64, n: usize, probs_of: fn(f64, &[i64]) -> Vec<f64>) {
    let (stat, p, bins) = gaussian_p_value(sigma, sigma, seed, n, probs_of);
    assert!(
        p > ALPHA,
        "sigma {sigma}: chi2 = {stat} over {bins} bins, p = {p}"
    );
}

/// The harness has power: a sampler whose σ is 3% off is rejected.
#[test]
fn chi_square_harness_rejects_wrong_sigma() {
    for (sigma, probs_of) in [
        (2.5, gaussian_probs_by_sum as fn(f64, &[i64]) -> Vec<f64>),
        (1_048_576.0, gaussian_probs_by_sum),
        (1_099_511_627_776.0, gaussian_probs_by_midpoint),
    ] {
        let (stat, p, _) = gaussian_p_value(1.03 * sigma, sigma, 7, 100_000, probs_of);
        assert!(
            p < ALPHA,
            "sigma {sigma}: a 3% error went unnoticed (chi2 = {stat}, p = {p})"
        );
    }
}

#[test]
fn discrete_gaussian_small_sigma_matches_pmf() {
    for (i, sigma) in [0.3, 1.0, 2.5, 33.37].into_iter().enumerate() {
        check_gaussian(sigma, 100 + i as u64, 100_000, gaussian_probs_by_sum);
    }
}

#[test]
fn discrete_gaussian_large_sigma_matches_pmf() {
    // 2^20 + 1/2 exercises the exact rational σ² = p/q with q = 4.
    check_gaussian(1_048_576.5, 200, 100_000, gaussian_probs_by_sum);
    check_gaussian(1_048_576.0, 201, 100_000, gaussian_probs_by_sum);
}

#[test]
fn discrete_gaussian_huge_sigma_matches_pmf() {
    check_gaussian(4_294_967_296.0, 300, 100_000, gaussian_probs_by_midpoint); // 2^32
    check_gaussian(
        1_099_511_627_776.0,
        301,
        100_000,
        gaussian_probs_by_midpoint,
    ); // 2^40
}

/// At σ = 2^40 the mean square must be σ²: Σx²/σ² ~ χ²_n (the discrete Gaussian at this σ is
/// the continuous one rounded, to far below test resolution). Laurent & Massart (2000):
/// P(χ²_n ≥ n + 2√(nx) + 2x) ≤ e^{−x} and P(χ²_n ≤ n − 2√(nx)) ≤ e^{−x}; with
/// x = ln(2/α) = 14.51 and n = 50 000: the ratio lies in [1 − 0.0482, 1 + 0.0488].
#[test]
fn discrete_gaussian_variance_at_2_pow_40() {
    let sigma = 1_099_511_627_776.0_f64;
    let sampler = DiscreteGaussian::new(sigma).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(400);
    let n = 50_000usize;
    let mut samples = vec![0i64; n];
    sampler.fill(&mut rng, &mut samples);
    let ratio = samples
        .iter()
        .map(|&x| (x as f64 / sigma).powi(2))
        .sum::<f64>()
        / n as f64;
    let x = (2.0 / ALPHA).ln();
    let nf = n as f64;
    let upper = 1.0 + (2.0 * (nf * x).sqrt() + 2.0 * x) / nf;
    let lower = 1.0 - 2.0 * (nf * x).sqrt() / nf;
    assert!(
        lower < ratio && ratio < upper,
        "mean square / sigma^2 = {ratio}, bounds [{lower}, {upper}]"
    );
}

/// The sampler's largest supported σ runs and gives values of the right size.
#[test]
fn discrete_gaussian_runs_at_max_sigma() {
    let sampler = DiscreteGaussian::new(MAX_SCALE_UNITS).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(401);
    let mut samples = vec![0i64; 1000];
    sampler.fill(&mut rng, &mut samples);
    // |x| ≤ 6σ fails with probability 2e-9 per sample.
    assert!(
        samples
            .iter()
            .all(|&x| (x as f64).abs() < 6.0 * MAX_SCALE_UNITS)
    );
    assert!(
        samples
            .iter()
            .any(|&x| (x as f64).abs() > 0.1 * MAX_SCALE_UNITS)
    );
}

/// Bin probabilities of the discrete Laplace, closed form: with r = e^{−1/b},
/// P(Y ≥ k) = P(Y ≤ −k) = r^k/(1 + r) for k ≥ 1.
fn laplace_probs(scale: f64, edges: &[i64]) -> Vec<f64> {
    let r = (-1.0 / scale).exp();
    let below = |k: i64| {
        // P(Y < k)
        if k <= 0 {
            (-((1 - k) as f64) / scale).exp() / (1.0 + r)
        } else {
            1.0 - (-(k as f64) / scale).exp() / (1.0 + r)
        }
    };
    let mut probs = Vec::with_capacity(edges.len() + 1);
    let mut prev = 0.0;
    for &e in edges {
        let c = below(e);
        probs.push(c - prev);
        prev = c;
    }
    probs.push(1.0 - prev);
    probs
}

#[test]
fn discrete_laplace_matches_pmf() {
    let cases = [0.3, 1.0, 2.5, 1000.25, 1_048_576.0, 1_099_511_627_776.0];
    for (i, scale) in cases.into_iter().enumerate() {
        let sampler = DiscreteLaplace::new(scale).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(500 + i as u64);
        let n = 100_000;
        let mut samples = vec![0i64; n];
        sampler.fill(&mut rng, &mut samples);
        let edges = grid_edges(scale, 8.0, 41);
        let probs = laplace_probs(scale, &edges);
        let (edges, probs) = merge_small_bins(&edges, &probs, n, 20.0);
        let counts = bin_counts(&samples, &edges);
        let (stat, p) = chi_square_p_value(&counts, &probs);
        assert!(
            p > ALPHA,
            "scale {scale}: chi2 = {stat} over {} bins, p = {p}",
            counts.len()
        );
    }
}

/// The same seed gives the same samples (reproducible experiments), different seeds differ.
#[test]
fn samplers_are_deterministic_given_the_rng() {
    let g = DiscreteGaussian::new(1000.5).unwrap();
    let draw = |seed| {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut out = [0i64; 16];
        g.fill(&mut rng, &mut out);
        out
    };
    assert_eq!(draw(1), draw(1));
    assert_ne!(draw(1), draw(2));
}

/// A stream filled in chunks of any size hands out exactly the draws of one `fill` of the
/// whole length (the keystream continues and the spare accepted draws of a batch come first
/// next time), so it has the sampler's law; chunks of 1, 63, 64, 65 and 1000 all agree.
#[test]
fn stream_in_chunks_is_one_fill() {
    let g = DiscreteGaussian::new(13_600_000.0).unwrap();
    let n = 10_000;
    let mut whole = vec![0i64; n];
    g.fill(&mut ChaCha20Rng::seed_from_u64(9), &mut whole);
    for chunk in [1, 63, 64, 65, 1000] {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let mut stream = g.stream(&mut rng);
        let mut chunked = vec![0i64; n];
        for part in chunked.chunks_mut(chunk) {
            stream.fill(part);
        }
        assert_eq!(chunked, whole, "chunks of {chunk}");
    }
}

/// The stream's draws in chunks of 1000 (as a client fills its vector) against the pmf.
#[test]
fn stream_draws_match_pmf() {
    let sigma = 33.37;
    let g = DiscreteGaussian::new(sigma).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(503);
    let mut stream = g.stream(&mut rng);
    let mut samples = vec![0i64; 100_000];
    for part in samples.chunks_mut(1000) {
        stream.fill(part);
    }
    let (stat, p) = p_value_of_samples(&samples, sigma);
    assert!(p > ALPHA, "chi2 = {stat}, p = {p}");
}

/// Chi-square p-value of `samples` against N_ℤ(0, σ²) (bins as in `gaussian_p_value`).
fn p_value_of_samples(samples: &[i64], sigma: f64) -> (f64, f64) {
    let edges = grid_edges(sigma, 3.0, 39);
    let probs = gaussian_probs_by_sum(sigma, &edges);
    let (edges, probs) = merge_small_bins(&edges, &probs, samples.len(), 20.0);
    chi_square_p_value(&bin_counts(samples, &edges), &probs)
}

/// The sampler with the one-word fast path switched off: every Bernoulli(exp(−γ)) goes
/// through the exact series comparison (`lazy_exp::exact_less_than_exp`), the branch the fast
/// path only rarely reaches. It must give the same distribution.
#[test]
fn discrete_gaussian_exact_comparison_path_matches_pmf() {
    use super::lazy_exp::FastPath;
    for (i, sigma) in [2.5, 1_048_576.5].into_iter().enumerate() {
        let sampler = DiscreteGaussian::new(sigma).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(500 + i as u64);
        let samples: Vec<i64> = (0..30_000)
            .map(|_| sampler.sample_with(&mut rng, &mut Default::default(), FastPath::Off))
            .collect();
        let (stat, p) = p_value_of_samples(&samples, sigma);
        assert!(p > ALPHA, "sigma {sigma}: chi2 = {stat}, p = {p}");
    }
}

/// One draw at a time (`sample`, straight from the caller's generator) has the same
/// distribution as `fill` (through the AES-CTR bulk generator).
#[test]
fn discrete_gaussian_single_draws_match_pmf() {
    let sigma = 33.37;
    let sampler = DiscreteGaussian::new(sigma).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(502);
    let samples: Vec<i64> = (0..100_000).map(|_| sampler.sample(&mut rng)).collect();
    let (stat, p) = p_value_of_samples(&samples, sigma);
    assert!(p > ALPHA, "chi2 = {stat}, p = {p}");
}

/// The geometric magnitude of the inversion proposal: its one-word decisions (the logarithm for
/// Q, the exponential for keeping R) return what the exact comparisons return for the same
/// uniforms, word for word (10^5 first words at each t, the further words drawn from one cloned
/// stream; σ = 2^40 has a low part R of 17 bits).
#[test]
fn inversion_fast_path_agrees_with_the_exact_search() {
    use super::lazy_exp::FastPath;
    use rand_core::RngCore;
    for (i, sigma) in [
        0.4,
        2.5,
        1000.0,
        1_048_576.5,
        16_777_215.0,
        1_099_511_627_776.0,
    ]
    .into_iter()
    .enumerate()
    {
        let sampler = DiscreteGaussian::new(sigma).unwrap();
        let mut words = ChaCha20Rng::seed_from_u64(600 + i as u64);
        let mut decided = 0;
        for _ in 0..100_000 {
            let rest = ChaCha20Rng::seed_from_u64(words.next_u64());
            let first = words.next_u64();
            let mut fast_rng = Prefixed(Some(first), rest.clone());
            let mut exact_rng = Prefixed(Some(first), rest);
            let fast = sampler.magnitude_for_tests(&mut fast_rng, FastPath::On);
            let exact = sampler.magnitude_for_tests(&mut exact_rng, FastPath::Off);
            assert_eq!(fast, exact, "sigma {sigma}, first word {first:#x}");
            decided += usize::from(sampler.one_log_decided_for_tests(first));
        }
        // The one-logarithm decision must itself have decided almost every time.
        assert!(
            decided > 99_000,
            "sigma {sigma}: fast path decided {decided}"
        );
    }
}

/// The one-logarithm decision where it is hardest: first words aimed at the boundaries
/// U = exp(−(q+1)/t) between two magnitudes (128 grid points of 2^−52 around each, wider than
/// the undecided zone), for small, typical and far-tail q. Wherever the fast path decides, it
/// must return what the exact search returns for the same U; and the scan must meet both
/// decided and undecided words, or it did not reach the margin. σ < 2^24 − 1: no low part, so
/// the magnitude is the geometric part itself.
#[test]
fn inversion_fast_path_agrees_at_block_boundaries() {
    use super::lazy_exp::FastPath;
    use rand_core::RngCore;
    for (i, sigma) in [2.5, 1000.5, 1_048_576.5, 16_777_214.0]
        .into_iter()
        .enumerate()
    {
        let sampler = DiscreteGaussian::new(sigma).unwrap();
        let t = sigma.floor() + 1.0;
        let mut rest_words = ChaCha20Rng::seed_from_u64(700 + i as u64);
        let (mut decided, mut undecided) = (0, 0);
        for q in [
            0.0,
            1.0,
            7.0,
            t.floor(),
            (10.0 * t).floor(),
            (16.0 * t).floor() - 1.0,
        ] {
            let boundary = (-(q + 1.0) / t).exp();
            if boundary < 1.0 / 16_777_216.0 {
                continue; // below 2^−24 the fast path is not tried
            }
            let centre = (boundary * 18_446_744_073_709_551_616.0) as u64 & !0xfff;
            for step in -64i64..64 {
                let first =
                    centre.wrapping_add_signed(step * 4096) | (rest_words.next_u64() & 0xfff);
                let rest = ChaCha20Rng::seed_from_u64(rest_words.next_u64());
                let fast = sampler
                    .magnitude_for_tests(&mut Prefixed(Some(first), rest.clone()), FastPath::On);
                let exact =
                    sampler.magnitude_for_tests(&mut Prefixed(Some(first), rest), FastPath::Off);
                assert_eq!(fast, exact, "sigma {sigma}, q {q}, first word {first:#x}");
                if sampler.one_log_decided_for_tests(first) {
                    decided += 1;
                } else {
                    undecided += 1;
                }
            }
        }
        assert!(
            decided > 0 && undecided > 0,
            "sigma {sigma}: the scan met {decided} decided and {undecided} undecided words"
        );
    }
}

/// A generator that yields one given word, then the words of a ChaCha20 stream.
struct Prefixed(Option<u64>, ChaCha20Rng);

impl rand_core::RngCore for Prefixed {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0.take().unwrap_or_else(|| self.1.next_u64())
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.1.fill_bytes(dst)
    }
}

/// The magnitude has P(K = k) = e^{−k/t}(1 − e^{−1/t}), on both paths (chi-square, α = 1e-6):
/// t = 3 bin by bin, t = 2^20 + 1 in bins of width t/4.
#[test]
fn inversion_magnitude_is_geometric() {
    use super::lazy_exp::FastPath;
    for (i, (sigma, width, fast, n)) in [
        (2.5, 1u64, FastPath::On, 200_000usize),
        (2.5, 1, FastPath::Off, 20_000),
        (1_048_576.5, 262_144, FastPath::On, 200_000),
        (1_048_576.5, 262_144, FastPath::Off, 20_000),
        (1_099_511_627_776.0, 1 << 38, FastPath::On, 200_000),
        (1_099_511_627_776.0, 1 << 38, FastPath::Off, 20_000),
    ]
    .into_iter()
    .enumerate()
    {
        let sampler = DiscreteGaussian::new(sigma).unwrap();
        let t = sigma.floor() + 1.0;
        let mut rng = ChaCha20Rng::seed_from_u64(700 + i as u64);
        let bins = 40u64;
        let indices: Vec<i64> = (0..n)
            .map(|_| (sampler.magnitude_for_tests(&mut rng, fast) / width).min(bins) as i64)
            .collect();
        // P(K ≥ j·w) = e^{−j·w/t}; bin j < 40 is [j·w, (j+1)·w), bin 40 the rest.
        let tail = |j: u64| (-((j * width) as f64) / t).exp();
        let mut probs: Vec<f64> = (0..bins).map(|j| tail(j) - tail(j + 1)).collect();
        probs.push(tail(bins));
        let edges: Vec<i64> = (1..=bins as i64).collect();
        let (edges, probs) = merge_small_bins(&edges, &probs, n, 20.0);
        let (stat, p) = chi_square_p_value(&bin_counts(&indices, &edges), &probs);
        assert!(p > ALPHA, "sigma {sigma} {fast:?}: chi2 = {stat}, p = {p}");
    }
}

/// The batched `fill` with every magnitude and acceptance decided by the exact comparisons
/// (the branches its one-word tests reach only rarely) has the same distribution.
#[test]
fn batched_fill_exact_paths_match_pmf() {
    use super::lazy_exp::FastPath;
    for (i, sigma) in [0.3, 2.5, 1_048_576.5].into_iter().enumerate() {
        let sampler = DiscreteGaussian::new(sigma).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(800 + i as u64);
        let mut samples = vec![0i64; 10_000];
        sampler.fill_for_tests(&mut rng, &mut samples, FastPath::Off);
        let (stat, p) = p_value_of_samples(&samples, sigma);
        assert!(p > ALPHA, "sigma {sigma}: chi2 = {stat}, p = {p}");
    }
}

/// For t ≥ 2^24 the magnitude's low bits come from the rejection-sampled part R, whose law
/// exp(−r/t) on {0..2^s − 1} is uniform to within 2^−23 here (t = 2^40 + 1, s = 17): the last
/// three bits must be uniform (chi-square, α = 1e-6) on both paths.
#[test]
fn inversion_low_bits_are_uniform() {
    use super::lazy_exp::FastPath;
    let sampler = DiscreteGaussian::new(1_099_511_627_776.0).unwrap();
    for (i, (fast, n)) in [(FastPath::On, 80_000usize), (FastPath::Off, 16_000)]
        .into_iter()
        .enumerate()
    {
        let mut rng = ChaCha20Rng::seed_from_u64(900 + i as u64);
        let mut counts = vec![0u64; 8];
        for _ in 0..n {
            counts[(sampler.magnitude_for_tests(&mut rng, fast) % 8) as usize] += 1;
        }
        let (stat, p) = chi_square_p_value(&counts, &[0.125; 8]);
        assert!(
            p > ALPHA,
            "{fast:?}: chi2 = {stat}, p = {p}, counts {counts:?}"
        );
    }
}
