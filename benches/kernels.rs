//! The wrapping-add kernels of `fixedpoint_shares::kernels` — scalar reference, `wide` lanes
//! (baseline target), runtime-dispatched (AVX-512F / AVX2 / baseline) — at 2^10 .. 2^24 words,
//! next to a read-only reduction over the same source buffer (the streaming-read limit at that
//! size, from `support/limits.rs`).
//!
//! Throughput is the bytes of the source (the share being absorbed) per call, so the kernel and
//! the read-only line are directly comparable: `acc += src` must read src once, and also reads
//! and writes acc, which is free while acc sits in cache and costs 2x more traffic once it
//! does not (2^22 and 2^24 words are 32 and 128 MiB per buffer).
//!
//! `cargo bench --bench kernels` (about a minute).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use fixedpoint_shares::kernels;

#[allow(dead_code)]
#[path = "support/limits.rs"]
mod limits;

type Kernel = fn(&mut [u64], &[u64]) -> fixedpoint_shares::Result<()>;

const KERNELS: [(&str, Kernel); 3] = [
    ("scalar", kernels::add_assign_scalar),
    ("wide", kernels::add_assign_wide),
    ("dispatched", kernels::add_assign),
];

fn add_assign(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!(
        "add_assign (dispatched = {})",
        kernels::selected_path()
    ));
    for log_len in (10..=24).step_by(2) {
        let len = 1usize << log_len;
        let src = limits::pattern_words(len * 8);
        let mut acc = vec![1u64; len];
        group.throughput(Throughput::Bytes((len * 8) as u64));
        for (name, kernel) in KERNELS {
            group.bench_function(BenchmarkId::new(name, format!("2^{log_len}")), |b| {
                b.iter(|| kernel(black_box(&mut acc), black_box(&src)))
            });
        }
        group.bench_function(
            BenchmarkId::new("read-only reduce (limit)", format!("2^{log_len}")),
            |b| b.iter(|| limits::read_reduce(black_box(&src))),
        );
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

fn main() {
    let mut c = config().configure_from_args();
    add_assign(&mut c);
    c.final_summary();
}
