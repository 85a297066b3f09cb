//! Throughput of the exact discrete Gaussian (dp-noise) next to rand_distr's continuous Normal,
//! both driven by ChaCha20. Also prints how many 64-bit random words each discrete sample
//! consumes on average.
//!
//! Run: `cargo bench --bench noise -- --warm-up-time 1 --measurement-time 3`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
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

criterion_group!(benches, bench_noise);
criterion_main!(benches);
