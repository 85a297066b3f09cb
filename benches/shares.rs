//! DCA share operations of `fixedpoint_shares`:
//!
//! * `seed expansion` — a compute node absorbing seed shares (AES-128-CTR keystream expanded
//!   and added into its accumulator) next to the raw keystream: the crate's `raw_keystream`
//!   (same key derivation per call, XOR into a buffer) and `ctr`'s `apply_keystream` on a
//!   running Ctr64BE stream (no per-call setup: the pure rate). One thread.
//!   Throughput: mask bytes (8·d per share).
//! * `client split` — one client encoding a d-vector and splitting it into M = 10 shares, seed
//!   and full mode. Throughput: the (M − 1)·8·d mask bytes generated per call.
//! * `node accumulation (full shares)` — node 0 absorbing N full shares of d words, one message
//!   at a time and as one batch (rayon pool). Throughput: the N·8·d share bytes.
//!
//! `cargo bench --bench shares` (about a minute).

use std::hint::black_box;
use std::time::Duration;

use aes::cipher::{KeyIvInit, StreamCipher};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    Client, ClientId, ComputeNode, NodeIndex, RoundConfig, RoundId, RoundParams, Seed, ShardId,
    ShareMessage, ShareMode, SharePayload, raw_keystream,
};

#[allow(dead_code)]
#[path = "support/limits.rs"]
mod limits;

const ROUND: RoundId = RoundId(1);
const NODES: u16 = 10;

fn round(n_clients: usize, n_nodes: u16, dim: usize, mode: ShareMode) -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: ROUND,
        n_clients,
        n_nodes,
        max_dropped: 0,
        dim,
        bound: 1.0,
        mode,
        noise_sigma_total: None,
        frac_bits: None,
    })
    .expect("valid benchmark round")
}

fn message(config: &RoundConfig, client: usize, node: u16, payload: SharePayload) -> ShareMessage {
    ShareMessage {
        round: ROUND,
        config: config.digest(),
        client: ClientId(client as u64),
        shard: ShardId(client as u64),
        node: NodeIndex(node),
        frac_bits: config.codec().frac_bits(),
        dim: config.dim(),
        payload,
    }
}

fn one_thread() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool")
}

fn seed_expansion(c: &mut Criterion) {
    let pool = one_thread();
    let mut group = c.benchmark_group("seed expansion, 1 thread");
    for d in [1_000usize, 10_000, 1 << 16] {
        let bytes = d * 8;
        // Enough shares per timed call (>= 4 MiB of mask) that making the node is noise.
        let per_call = (4 << 20) / bytes;
        group.throughput(Throughput::Bytes((per_call * bytes) as u64));
        let config = round(per_call, 2, d, ShareMode::Seed);
        let msgs: Vec<ShareMessage> = (0..per_call)
            .map(|i| {
                let seed = Seed::from_bytes([i as u8; 16]);
                message(&config, i, 1, SharePayload::Seed(seed))
            })
            .collect();
        group.bench_function(BenchmarkId::new("node absorbs seed shares", d), |b| {
            b.iter_batched_ref(
                || ComputeNode::new(&config, NodeIndex(1)).expect("node 1"),
                |node| {
                    pool.install(|| {
                        for msg in &msgs {
                            node.absorb(msg).expect("valid share");
                        }
                    })
                },
                BatchSize::PerIteration,
            )
        });
        let mut buf = vec![0u64; d];
        let seed = Seed::from_bytes([3; 16]);
        group.bench_function(BenchmarkId::new("raw_keystream (crate)", d), |b| {
            b.iter(|| {
                for _ in 0..per_call {
                    raw_keystream(&seed, black_box(&mut buf));
                }
            })
        });
        let mut stream = limits::Ctr64::new(&[1u8; 16].into(), &[2u8; 16].into());
        let mut bytes_buf = vec![0u8; bytes];
        group.bench_function(
            BenchmarkId::new("aes 0.8 Ctr64BE apply_keystream", d),
            |b| {
                b.iter(|| {
                    for _ in 0..per_call {
                        stream.apply_keystream(black_box(&mut bytes_buf));
                    }
                })
            },
        );
    }
    group.finish();
}

fn client_split(c: &mut Criterion) {
    let mut group = c.benchmark_group("client split, M=10");
    for d in [100usize, 10_000, 1 << 16] {
        let values: Vec<f64> = (0..d).map(|j| ((j % 201) as f64 - 100.0) / 100.0).collect();
        group.throughput(Throughput::Bytes((usize::from(NODES - 1) * d * 8) as u64));
        for (name, mode) in [("seed", ShareMode::Seed), ("full", ShareMode::Full)] {
            let config = round(1, NODES, d, mode);
            let mut client = Client::new(&config, ClientId(0), RngSource::Os).expect("client");
            // As in a round: every call reuses the previous call's share vectors.
            let mut shares = Vec::new();
            group.bench_function(BenchmarkId::new(name, d), |b| {
                b.iter(|| {
                    client
                        .shard_into(black_box(&values), &mut shares)
                        .expect("valid input")
                })
            });
        }
    }
    group.finish();
}

fn node_accumulation(c: &mut Criterion) {
    let mut group = c.benchmark_group("node accumulation (full shares)");
    for (n, d) in [
        (10_000usize, 10usize),
        (1_000, 1_000),
        (100, 10_000),
        (64, 1 << 16),
        (8, 1 << 20),
    ] {
        group.throughput(Throughput::Bytes((n * d * 8) as u64));
        let config = round(n, 2, d, ShareMode::Full);
        let msgs: Vec<ShareMessage> = (0..n)
            .map(|i| {
                let share = limits::pattern_words(d * 8)
                    .into_iter()
                    .map(|w| w ^ i as u64)
                    .collect();
                message(&config, i, 0, SharePayload::Full(share))
            })
            .collect();
        let id = format!("N={n} d={d}");
        group.bench_function(BenchmarkId::new("absorb one by one", &id), |b| {
            b.iter_batched_ref(
                || ComputeNode::new(&config, NodeIndex(0)).expect("node 0"),
                |node| {
                    for msg in &msgs {
                        node.absorb(msg).expect("valid share");
                    }
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function(BenchmarkId::new("absorb_batch", &id), |b| {
            b.iter_batched_ref(
                || ComputeNode::new(&config, NodeIndex(0)).expect("node 0"),
                |node| node.absorb_batch(&msgs).expect("valid shares"),
                BatchSize::PerIteration,
            )
        });
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
    seed_expansion(&mut c);
    client_split(&mut c);
    node_accumulation(&mut c);
    c.final_summary();
}
