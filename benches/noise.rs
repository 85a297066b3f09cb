//! Throughput of the exact discrete Gaussian (dp-noise) next to rand_distr's continuous Normal,
//! both driven by ChaCha20. Also prints how many 64-bit random words each discrete sample
//! consumes on average.
//!
//! Also the cost of a DCA client that adds its slice of distributed discrete Gaussian noise
//! (d = 10⁴) next to a noiseless one, so the price of the noise is visible as a ratio.
//!
//! Run: `cargo bench --bench noise -- --warm-up-time 1 --measurement-time 3`

use criterion::{BenchmarkId, Criterion, Throughput};
use dp_noise::discrete::{DiscreteGaussian, DiscreteLaplace};
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::hint::black_box;

const BATCH: usize = 1024;
const SIGMAS: [(u32, f64); 3] = [(10, 1024.0), (20, 1_048_576.0), (32, 4_294_967_296.0)];

/// Counts the words drawn from the wrapped generator.
struct Counting {
    inner: ChaCha20Rng,
    words: u64,
}

impl RngCore for Counting {
    fn next_u32(&mut self) -> u32 {
        self.words += 1;
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.words += 1;
        self.inner.next_u64()
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.words += dst.len().div_ceil(8) as u64;
        self.inner.fill_bytes(dst)
    }
}

impl CryptoRng for Counting {}

fn report_random_words() {
    println!("random words (u32/u64 draws) per sample, 100000 samples each:");
    for (log2, sigma) in SIGMAS.iter().copied().chain([(40, 1_099_511_627_776.0)]) {
        let g = DiscreteGaussian::new(sigma).expect("valid sigma");
        let l = DiscreteLaplace::new(sigma).expect("valid scale");
        let mut rng = Counting {
            inner: ChaCha20Rng::seed_from_u64(1),
            words: 0,
        };
        let mut out = vec![0i64; 100_000];
        g.fill(&mut rng, &mut out);
        let gw = rng.words as f64 / out.len() as f64;
        rng.words = 0;
        l.fill(&mut rng, &mut out);
        let lw = rng.words as f64 / out.len() as f64;
        println!("  sigma = 2^{log2}: discrete Gaussian {gw:.2}, discrete Laplace {lw:.2}");
    }
}

fn bench_noise(c: &mut Criterion) {
    report_random_words();
    let mut group = c.benchmark_group("noise");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (log2, sigma) in SIGMAS {
        let g = DiscreteGaussian::new(sigma).expect("valid sigma");
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let mut out = vec![0i64; BATCH];
        group.bench_function(
            BenchmarkId::new("discrete_gaussian", format!("2^{log2}")),
            |b| {
                b.iter(|| {
                    g.fill(&mut rng, &mut out);
                    black_box(&out);
                })
            },
        );
        let l = DiscreteLaplace::new(sigma).expect("valid scale");
        group.bench_function(
            BenchmarkId::new("discrete_laplace", format!("2^{log2}")),
            |b| {
                b.iter(|| {
                    l.fill(&mut rng, &mut out);
                    black_box(&out);
                })
            },
        );
        let normal = Normal::new(0.0, sigma).expect("valid sigma");
        let mut outf = vec![0f64; BATCH];
        group.bench_function(
            BenchmarkId::new("rand_distr_normal", format!("2^{log2}")),
            |b| {
                b.iter(|| {
                    for x in outf.iter_mut() {
                        *x = normal.sample(&mut rng);
                    }
                    black_box(&outf);
                })
            },
        );
    }
    group.finish();
}

/// One client's `shard` (encode, optional noise, split into M = 10 shares, seed mode) at
/// d = 10⁴, with and without distributed discrete Gaussian noise.
fn bench_noisy_client(c: &mut Criterion) {
    use dp_noise::rng::RngSource;
    use fixedpoint_shares::{Client, ClientId, RoundConfig, RoundId, RoundParams, ShareMode};

    const DIM: usize = 10_000;
    let values: Vec<f64> = (0..DIM)
        .map(|j| ((j % 200) as f64 - 100.0) / 101.0)
        .collect();
    let mut group = c.benchmark_group("dca_client_d1e4");
    group.throughput(Throughput::Elements(DIM as u64));
    for (name, sigma_total) in [("noiseless", None), ("noisy", Some(1.0))] {
        let params = RoundParams {
            round: RoundId(1),
            n_clients: 1000,
            n_nodes: 10,
            max_dropped: 10,
            dim: DIM,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: sigma_total,
            frac_bits: None,
        };
        let config = RoundConfig::new(&params).expect("valid round parameters");
        let mut client = Client::new(&config, ClientId(0), RngSource::InsecureFixedSeed(3))
            .expect("valid client");
        group.bench_function(name, |b| {
            b.iter(|| black_box(client.shard(black_box(&values)).expect("in-bound values")))
        });
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_noise(&mut c);
    bench_noisy_client(&mut c);
    c.final_summary();
}
