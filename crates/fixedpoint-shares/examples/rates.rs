//! Measures the kernels and the seed-expansion path on this machine (single thread).
//!
//! `cargo run --release -p fixedpoint-shares --example rates`
//!
//! Prints: the dispatched kernel path; GB/s of the add kernels at an L1-sized and a
//! memory-sized vector; the raw AES-128-CTR keystream rate; and the rate at which a compute node
//! absorbs seed shares (expand + add), as a fraction of the raw keystream rate.

use std::hint::black_box;
use std::time::Instant;

use dp_noise::rng::RngSource;
use fixedpoint_shares::kernels::{self, selected_path};
use fixedpoint_shares::{
    Client, ClientId, ComputeNode, NodeIndex, RoundConfig, RoundId, RoundParams, Seed, ShareMode,
    raw_keystream,
};

type Kernel = fn(&mut [u64], &[u64]) -> fixedpoint_shares::Result<()>;

/// Best of `reps` timings of `f`, in seconds.
fn best<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> fixedpoint_shares::Result<()> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|_| fixedpoint_shares::Error::InvalidParameter {
            name: "threads",
            value: 1.0,
            requirement: "a rayon pool",
        })?;
    println!("dispatched kernel path: {}", selected_path());
    println!(
        "AES-128-CTR keystream kernel: {}",
        fixedpoint_shares::keystream_backend()
    );
    println!("{:<12} {:>10} {:>12}", "kernel", "words", "GB/s (r+w)");
    let kernels: [(&str, Kernel); 3] = [
        ("scalar", kernels::add_assign_scalar),
        ("wide", kernels::add_assign_wide),
        ("dispatched", kernels::add_assign),
    ];
    for words in [2048usize, 1 << 22] {
        let src: Vec<u64> = (0..words as u64).collect();
        let mut acc = vec![1u64; words];
        let iters = (1 << 26) / words;
        for (name, kernel) in kernels {
            let secs = best(5, || {
                for _ in 0..iters {
                    kernel(black_box(&mut acc), black_box(&src)).ok();
                }
            });
            // Bytes moved: read acc, read src, write acc.
            let gbs = (3 * 8 * words * iters) as f64 / secs / 1e9;
            println!("{name:<12} {words:>10} {gbs:>12.2}");
        }
    }

    // One node absorbing seed shares of d = 2^17 words (1 MiB) each, against the bare keystream
    // over the same number of bytes; measured in alternation (the machine is shared, so each
    // pair is compared and the median ratio reported).
    let (n, d) = (64usize, 1usize << 17);
    let config = RoundConfig::new(&RoundParams {
        round: RoundId(1),
        n_clients: n,
        n_nodes: 2,
        max_dropped: 0,
        dim: d,
        bound: 1.0,
        mode: ShareMode::Seed,
        noise_sigma_total: None,
        frac_bits: None,
    })?;
    let values = vec![0.5; d];
    let seeds = (0..n as u64)
        .map(|i| {
            let mut msgs = Client::new(&config, ClientId(i), RngSource::InsecureFixedSeed(i))?
                .shard(&values)?;
            Ok(msgs.swap_remove(1))
        })
        .collect::<fixedpoint_shares::Result<Vec<_>>>()?;
    let seed = Seed::from_bytes([9; 16]);
    let mut buf = vec![0u64; d];
    let bytes = (n * d * 8) as f64;
    let (mut raw_best, mut absorb_best, mut ratios) = (0.0f64, 0.0f64, Vec::new());
    for _ in 0..15 {
        let raw = best(1, || {
            for _ in 0..n {
                raw_keystream(&seed, black_box(&mut buf));
            }
        });
        let absorb = best(1, || {
            pool.install(|| {
                let mut node = ComputeNode::new(&config, NodeIndex(1)).ok();
                for msg in &seeds {
                    if let Some(node) = node.as_mut() {
                        node.absorb(msg).ok();
                    }
                }
                black_box(node);
            })
        });
        raw_best = raw_best.max(bytes / raw / 1e9);
        absorb_best = absorb_best.max(bytes / absorb / 1e9);
        ratios.push(raw / absorb);
    }
    ratios.sort_by(f64::total_cmp);
    println!("raw AES-128-CTR keystream (1 MiB buffers), 1 thread: best {raw_best:.2} GB/s");
    println!(
        "seed absorption (expand + add into a 1 MiB accumulator), 1 thread: best {absorb_best:.2} GB/s"
    );
    println!(
        "absorption / raw keystream rate: median {:.0}% (min {:.0}%, max {:.0}%) over {} alternating pairs",
        100.0 * ratios[ratios.len() / 2],
        100.0 * ratios[0],
        100.0 * ratios[ratios.len() - 1],
        ratios.len()
    );
    let batch = best(3, || {
        let mut node = ComputeNode::new(&config, NodeIndex(1)).ok();
        if let Some(node) = node.as_mut() {
            node.absorb_batch(&seeds).ok();
        }
        black_box(node);
    });
    println!(
        "seed absorption, absorb_batch on {} threads: {:.2} GB/s of mask",
        rayon::current_num_threads(),
        (n * d * 8) as f64 / batch / 1e9
    );
    client_and_node_rates()
}

/// Median of `reps` timings of `f`, in seconds (the machine is shared: medians, not bests).
fn median<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The client's codec + full-mode split and the batched full-share absorption at a large d.
fn client_and_node_rates() -> fixedpoint_shares::Result<()> {
    let params = |n_clients, dim, mode| RoundParams {
        round: RoundId(1),
        n_clients,
        n_nodes: 10,
        max_dropped: 0,
        dim,
        bound: 1.0,
        mode,
        noise_sigma_total: None,
        frac_bits: None,
    };
    let d = 1usize << 16;
    let values: Vec<f64> = (0..d).map(|j| (j as f64 * 0.37).sin()).collect();
    let codec = RoundConfig::new(&params(8, d, ShareMode::Full))?.codec();
    let mut out = vec![0u64; d];
    let secs = median(21, || {
        for _ in 0..16 {
            codec.encode(black_box(&values), black_box(&mut out)).ok();
        }
    });
    println!(
        "encode (check + round), 1 thread: median {:.2} Gvalues/s",
        (16 * d) as f64 / secs / 1e9
    );
    for mode in [ShareMode::Full, ShareMode::Seed] {
        let config = RoundConfig::new(&params(8, d, mode))?;
        // The round's loop: each client shards into the previous one's share vectors.
        let mut shares = Vec::new();
        let secs = median(21, || {
            for i in 0..4 {
                let c = Client::new(&config, ClientId(i), RngSource::InsecureFixedSeed(i));
                black_box(c.and_then(|mut c| c.shard_into(&values, &mut shares)).ok());
            }
        });
        println!(
            "client shard, {mode:?} mode, M = 10, d = 2^16, 1 thread: median {:.2} ms per client",
            secs / 4.0 * 1e3
        );
    }
    // Node 0 of a full-mode round absorbing a batch of 8 shares of d = 2^22 words (32 MiB each);
    // client 8's share is absorbed first, untimed, so the accumulator's pages are faulted in.
    let (n, d) = (8usize, 1usize << 22);
    let config = RoundConfig::new(&params(n + 1, d, ShareMode::Full))?;
    let share = |i: u64| fixedpoint_shares::ShareMessage {
        round: RoundId(1),
        config: config.digest(),
        client: ClientId(i),
        shard: fixedpoint_shares::ShardId(i),
        node: NodeIndex(0),
        frac_bits: config.codec().frac_bits(),
        dim: d,
        payload: fixedpoint_shares::SharePayload::Full(vec![i; d]),
    };
    let msgs: Vec<_> = (0..n as u64).map(share).collect();
    let warm = share(n as u64);
    let mut times = Vec::new();
    for _ in 0..7 {
        let mut node = ComputeNode::new(&config, NodeIndex(0))?;
        node.absorb(&warm)?;
        let t = Instant::now();
        node.absorb_batch(black_box(&msgs))?;
        times.push(t.elapsed().as_secs_f64());
        black_box(node);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "absorb_batch, 8 full shares of d = 2^22, {} threads: median {:.2} GB/s of shares",
        rayon::current_num_threads(),
        (n * d * 8) as f64 / times[times.len() / 2] / 1e9
    );
    Ok(())
}
