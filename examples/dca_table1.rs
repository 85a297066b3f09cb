//! DCA end to end on the grid of Table 1 of the DCA paper (Heikkilä et al. 2017): N clients ×
//! vector length d, M = 10 compute nodes, timed next to the paper's Spark runtimes, followed by
//! the two machine limits (streaming read bandwidth, raw AES-128-CTR keystream rate) and the
//! fraction of each that the crate's kernels reach, all measured in this one run.
//!
//! ```text
//! cargo run --release --example dca_table1 [-- --full] [--mode seed|full|both]
//!        [--max-n N] [--max-d D] [--no-limits] [--no-noise] [--figure PATH]
//! ```
//!
//! By default the grid stops at N, d ≤ 1000 and the limits use small buffers (about a minute);
//! `--full` runs the paper's whole grid up to N = 10⁵, d = 10⁴ (about ten minutes). The figure
//! (default `target/figures/dca_table1.svg`) plots every cell's seconds against N·d, next to the
//! paper's.
//!
//! A cell is one whole round through `fixedpoint_shares::simulate_round_with`: every client's
//! input (d values uniform in [-1, 1], the codec's bound) is copied from a client-specific
//! offset of an 8 MiB pool made before the grid — the data exists before the round, so the
//! round pays one copy, not a PRNG per value —,
//! encoded, split into M shares (masks from fresh OS-seeded AES-128-CTR seeds), fed to the M
//! compute nodes in bounded batches and dropped; the nodes agree on the client set, the
//! aggregator adds the node sums and decodes. The timed part includes copying the inputs.
//! Memory is O(batch · M · d + N), never O(N · d). Afterwards, untimed, the same inputs are
//! copied again and summed in plain integer arithmetic; the released sum must equal it bit for
//! bit (units and decoded f64). "cpu s" is the CPU time (all threads, user + system) of the
//! timed part: wall time >= cpu s / threads, and on a shared machine the gap is other load.
//! The "plain" column is the time of that plain pass (input copy + encoding + sum, no
//! DCA), for scale.
//!
//! The "noisy s" column runs the same cell again with distributed discrete Gaussian noise
//! (σ_total = [`NOISE_SIGMA_TOTAL`] in input units: every client adds its exact N_ℤ share);
//! that release is checked for N and d only, since the noise makes it differ from the plain sum.
//!
//! The paper's cells (Spark, 10 compute threads, mean of 5 runs) exclude encryption; ours
//! include the AES mask generation, so the comparison is conservative.

use std::error::Error;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};

use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    Client, ClientId, ComputeNode, FixedPoint, NodeIndex, RoundConfig, RoundId, RoundParams, Seed,
    ShardId, ShareMessage, ShareMode, SharePayload, keystream_backend, raw_keystream,
    simulate_round_with,
};
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

#[allow(dead_code)]
#[path = "../benches/support/limits.rs"]
mod limits;

#[allow(dead_code)] // each example uses part of the shared module
mod common;
use common::figure::{Draw, Legend, Panel, Point, Series, write_svg};

/// Compute nodes, as in the paper's Table 1.
const NODES: u16 = 10;
/// Inputs are uniform in [-BOUND, BOUND).
const BOUND: f64 = 1.0;
/// The paper's grid.
const PAPER_N: [usize; 4] = [100, 1_000, 10_000, 100_000];
const PAPER_D: [usize; 4] = [10, 100, 1_000, 10_000];
/// Table 1 of the DCA paper, seconds (rows: d, columns: N).
const PAPER_SECONDS: [[f64; 4]; 4] = [
    [1.72, 1.89, 2.99, 8.58],
    [2.03, 2.86, 12.36, 65.64],
    [3.43, 10.56, 101.2, 610.55],
    [15.30, 84.95, 994.96, 1592.29],
];
/// Seed of the simulated inputs (not secret: the data, not the masks).
const DATA_SEED: u64 = 0x7461_626c_6531;
/// σ of the total noise in the noisy column, in input units.
const NOISE_SIGMA_TOTAL: f64 = 1.0;
/// One gibibyte (the peak-memory target).
const GIB: usize = 1 << 30;

#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
enum ModeArg {
    /// Seed-compressed shares (node k ≥ 2 gets a 16-byte seed).
    Seed,
    /// Every share sent in full (the paper's protocol).
    Full,
    /// Both, one grid each.
    Both,
}

/// DCA end to end on the DCA paper's Table 1 grid, then the machine's limits.
#[derive(Parser, Debug)]
#[command(name = "dca_table1")]
struct Options {
    /// The paper's whole grid (N up to 10⁵, d up to 10⁴) and full-size limit buffers; about ten
    /// minutes. Default: N, d ≤ 1000 and small buffers.
    #[arg(long)]
    full: bool,
    /// Share mode(s) to time.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    mode: ModeArg,
    /// Largest N to run (accepts 1e5, 100_000).
    #[arg(long, value_parser = parse_count)]
    max_n: Option<usize>,
    /// Largest d to run.
    #[arg(long, value_parser = parse_count)]
    max_d: Option<usize>,
    /// Skip the streaming-read / keystream limit measurements.
    #[arg(long)]
    no_limits: bool,
    /// Skip the noisy re-run of each cell.
    #[arg(long)]
    no_noise: bool,
    /// Shares at hand for the timed `absorb_batch` (default 8 with `--full`, 2 without). Its
    /// ceiling against the streaming read of the k shares is k/(k+1) once the accumulator is
    /// out of cache.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    absorb_batch: Option<u16>,
    /// Where to write the SVG figure (seconds against N·d).
    #[arg(long, default_value = "target/figures/dca_table1.svg")]
    figure: PathBuf,
}

impl Options {
    fn modes(&self) -> Vec<ShareMode> {
        match self.mode {
            ModeArg::Seed => vec![ShareMode::Seed],
            ModeArg::Full => vec![ShareMode::Full],
            ModeArg::Both => vec![ShareMode::Seed, ShareMode::Full],
        }
    }

    /// The grid's bounds: the flags, capped at 1000 unless `--full`.
    fn max_n_d(&self) -> (usize, usize) {
        let cap = if self.full { usize::MAX } else { 1_000 };
        (
            self.max_n.unwrap_or(usize::MAX).min(cap),
            self.max_d.unwrap_or(usize::MAX).min(cap),
        )
    }
}

/// Accepts "100000", "1e5", "100_000".
fn parse_count(text: &str) -> Result<usize, String> {
    let clean = text.replace('_', "");
    let parsed = match clean.split_once(['e', 'E']) {
        Some((m, e)) => m
            .parse::<usize>()
            .ok()
            .zip(e.parse::<u32>().ok())
            .and_then(|(m, e)| 10usize.checked_pow(e).and_then(|p| m.checked_mul(p))),
        None => clean.parse().ok(),
    };
    parsed.ok_or(format!("not a count: {text:?}"))
}

/// CPU seconds (user + system, all threads) this process has used so far, from
/// /proc/self/stat (clock ticks, assumed 100 per second as on every Linux target we run).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The 1-minute load average (how busy the shared machine was), if readable.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or("?".into())
}

fn mode_name(mode: ShareMode) -> &'static str {
    match mode {
        ShareMode::Seed => "seed",
        ShareMode::Full => "full",
    }
}

/// Values in the pool the simulated inputs are cut from (8 MiB).
const POOL_VALUES: usize = 1 << 20;

/// The pool of simulated input values, uniform in [-BOUND, BOUND), made once per process
/// (before any cell is timed: see `main`).
fn input_pool() -> &'static [f64] {
    static POOL: OnceLock<Vec<f64>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(DATA_SEED);
        (0..POOL_VALUES)
            .map(|_| {
                let unit = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                (2.0 * unit - 1.0) * BOUND
            })
            .collect()
    })
}

/// Client i's input: d consecutive values of the pool (wrapping around) from an offset that
/// depends on i. A client's data exists before a round; cutting it from a pool costs one copy,
/// where running a PRNG over every value inside the timed round would charge DCA for data
/// synthesis (ChaCha8 per value was 23% of the whole grid's CPU profile, `perf record`).
fn client_input(i: usize, out: &mut [f64]) {
    let pool = input_pool();
    let mut at = ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) % pool.len() as u64) as usize;
    let mut out = out;
    while !out.is_empty() {
        let n = out.len().min(pool.len() - at);
        let (head, tail) = out.split_at_mut(n);
        head.copy_from_slice(&pool[at..at + n]);
        out = tail;
        at = 0;
    }
}

/// Σ_i encode(input_i) in plain i64 arithmetic (the codec guarantees N·bound·2^f < 2^63, so
/// checked adds never fail on a valid round), copying the inputs again. Parallel over clients.
fn plain_sum(codec: &FixedPoint, n: usize, d: usize) -> Result<Vec<i64>, String> {
    (0..n)
        .into_par_iter()
        .try_fold(
            || (vec![0.0; d], vec![0i64; d]),
            |(mut values, mut acc), i| {
                client_input(i, &mut values);
                for (a, x) in acc.iter_mut().zip(&values) {
                    let units = codec.encode_value(*x).map_err(|e| e.to_string())?;
                    *a = a.checked_add(units).ok_or("plain sum overflowed i64")?;
                }
                Ok((values, acc))
            },
        )
        .map(|r| r.map(|(_, acc)| acc))
        .try_reduce(
            || vec![0i64; d],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x = x.checked_add(*y).ok_or("plain sum overflowed i64")?;
                }
                Ok(a)
            },
        )
}

/// Runs `work` while a progress bar (hidden when stderr is not a terminal) follows `done`.
fn with_progress<T>(label: &str, total: usize, done: &AtomicUsize, work: impl FnOnce() -> T) -> T {
    let bar = common::progress::bar(total as u64, label);
    let (stop, stopped) = mpsc::channel::<()>();
    let ticker = bar.clone();
    let out = std::thread::scope(|s| {
        s.spawn(move || {
            while let Err(RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(200))
            {
                ticker.set_position(done.load(Ordering::Relaxed) as u64);
            }
        });
        let out = work();
        drop(stop);
        out
    });
    bar.finish_and_clear();
    out
}

struct Cell {
    mode: ShareMode,
    n: usize,
    d: usize,
    seconds: f64,
    /// CPU seconds of the timed part (all threads).
    cpu: Option<f64>,
    plain_seconds: f64,
    /// The same round with noise (when measured): wall and CPU seconds.
    noisy_seconds: Option<f64>,
    noisy_cpu: Option<f64>,
    paper: f64,
    exact: bool,
}

fn run_cell(
    mode: ShareMode,
    n: usize,
    d: usize,
    paper: f64,
    noise: bool,
) -> Result<Cell, Box<dyn Error>> {
    let config = round_config(1, n, NODES, d, mode)?;
    let done = AtomicUsize::new(0);
    let label = format!("{} N={n} d={d}", mode_name(mode));
    let cpu_start = cpu_seconds();
    let start = Instant::now();
    let release = with_progress(&label, n, &done, || {
        simulate_round_with(
            &config,
            |i, out| {
                client_input(i, out);
                done.fetch_add(1, Ordering::Relaxed);
                Ok(())
            },
            &[],
            RngSource::Os,
        )
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu_start).map(|(end, start)| end - start);

    let codec = config.codec();
    let start = Instant::now();
    let want = plain_sum(&codec, n, d)?;
    let plain_seconds = start.elapsed().as_secs_f64();
    let exact = release.n_included == n
        && release.sum_units == want
        && release.sum.len() == d
        && release
            .sum
            .iter()
            .zip(&want)
            .all(|(got, w)| got.to_bits() == codec.decode_value(*w as u64).to_bits());
    let (noisy_seconds, noisy_cpu) = if noise {
        let mut params = round_params(2, n, NODES, d, mode);
        params.noise_sigma_total = Some(NOISE_SIGMA_TOTAL);
        let config = RoundConfig::new(&params)?;
        let cpu_start = cpu_seconds();
        let start = Instant::now();
        let release = with_progress(&format!("{label} noisy"), n, &done, || {
            simulate_round_with(
                &config,
                |i, out| {
                    client_input(i, out);
                    Ok(())
                },
                &[],
                RngSource::Os,
            )
        })?;
        let seconds = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds().zip(cpu_start).map(|(end, start)| end - start);
        if release.n_included != n || release.sum.len() != d || release.noise.is_none() {
            return Err(format!("{label}: the noisy release is malformed").into());
        }
        (Some(seconds), cpu)
    } else {
        (None, None)
    };
    Ok(Cell {
        mode,
        n,
        d,
        seconds,
        cpu,
        plain_seconds,
        noisy_seconds,
        noisy_cpu,
        paper,
        exact,
    })
}

fn print_cell(c: &Cell) {
    println!(
        "{:<5} {:>7} {:>6} {:>10.3} {:>8} {:>9.3} {:>10} {:>9.2} {:>9.1}x  {}",
        mode_name(c.mode),
        c.n,
        c.d,
        c.seconds,
        c.cpu.map(|x| format!("{x:.2}")).unwrap_or("?".into()),
        c.plain_seconds,
        c.noisy_seconds
            .map(|x| format!("{x:.3}"))
            .unwrap_or("-".into()),
        c.paper,
        c.paper / c.seconds,
        if c.exact { "exact" } else { "MISMATCH" }
    );
}

/// Table 1's layout: rows d, columns N, "seconds (speed-up)".
fn print_grid(mode: ShareMode, cells: &[Cell]) {
    println!(
        "\n{} mode, seconds (speed-up over the paper):",
        mode_name(mode)
    );
    print!("{:>8}", "");
    for n in PAPER_N {
        print!(" {:>19}", format!("N={n}"));
    }
    println!();
    for d in PAPER_D {
        print!("{:>8}", format!("d={d}"));
        for n in PAPER_N {
            match cells
                .iter()
                .find(|c| c.mode == mode && c.n == n && c.d == d)
            {
                Some(c) => print!(
                    " {:>19}",
                    format!("{:.3} ({:.0}x)", c.seconds, c.paper / c.seconds)
                ),
                None => print!(" {:>19}", "-"),
            }
        }
        println!();
    }
}

/// Seconds against N·d on log-log axes: each share mode's cells, and the paper's Spark times for
/// the same cells.
fn write_figure(cells: &[Cell], path: &std::path::Path) -> Result<(), Box<dyn Error>> {
    let mut series: Vec<Series> = [ShareMode::Seed, ShareMode::Full]
        .into_iter()
        .filter(|&mode| cells.iter().any(|c| c.mode == mode))
        .map(|mode| Series {
            name: format!("dpdist, {} shares", mode_name(mode)),
            points: cells
                .iter()
                .filter(|c| c.mode == mode)
                .map(|c| Point::new((c.n * c.d) as f64, c.seconds))
                .collect(),
            draw: Draw::Markers,
            ..Series::default()
        })
        .collect();
    let mut paper: Vec<&Cell> = cells.iter().filter(|c| c.mode == cells[0].mode).collect();
    paper.sort_by_key(|c| (c.n * c.d, c.n));
    series.push(Series {
        name: "paper (Spark, full shares)".into(),
        points: paper
            .iter()
            .map(|c| Point::new((c.n * c.d) as f64, c.paper))
            .collect(),
        draw: Draw::Markers,
        ..Series::default()
    });
    let panel = Panel {
        title: format!(
            "DCA round, M = {NODES} nodes: seconds against N·d ({} threads)",
            rayon::current_num_threads()
        ),
        x_label: "N·d (clients × vector length)".into(),
        y_label: "seconds".into(),
        log_x: true,
        log_y: true,
        series,
        legend: Legend::UpperLeft,
        ..Panel::default()
    };
    write_svg(path, &[panel], 1, (720, 480))?;
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

fn one_thread_pool() -> Result<rayon::ThreadPool, Box<dyn Error>> {
    Ok(rayon::ThreadPoolBuilder::new().num_threads(1).build()?)
}

fn round_params(round: u64, n: usize, nodes: u16, d: usize, mode: ShareMode) -> RoundParams {
    RoundParams {
        round: RoundId(round),
        n_clients: n,
        n_nodes: nodes,
        max_dropped: 0,
        dim: d,
        bound: BOUND,
        mode,
        noise_sigma_total: None,
        frac_bits: None,
    }
}

fn round_config(
    round: u64,
    n: usize,
    nodes: u16,
    d: usize,
    mode: ShareMode,
) -> Result<RoundConfig, Box<dyn Error>> {
    Ok(RoundConfig::new(&round_params(round, n, nodes, d, mode))?)
}

fn share(config: &RoundConfig, client: usize, node: u16, payload: SharePayload) -> ShareMessage {
    ShareMessage {
        round: config.round(),
        config: config.digest(),
        client: ClientId(client as u64),
        shard: ShardId(client as u64),
        node: NodeIndex(node),
        frac_bits: config.codec().frac_bits(),
        dim: config.dim(),
        payload,
    }
}

/// `n` full shares of `d` words for node 0 of a two-node round (distinct pattern per share).
fn full_shares(n: usize, d: usize) -> Result<(RoundConfig, Vec<ShareMessage>), Box<dyn Error>> {
    let config = round_config(2, n, 2, d, ShareMode::Full)?;
    let msgs = (0..n)
        .map(|i| {
            let words = (0..d as u64)
                .map(|j| (j ^ ((i as u64) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            share(&config, i, 0, SharePayload::Full(words))
        })
        .collect();
    Ok((config, msgs))
}

fn full_words(msg: &ShareMessage) -> &[u64] {
    match &msg.payload {
        SharePayload::Full(words) => words,
        SharePayload::Seed(_) => &[],
    }
}

/// Absorbs `msgs` into `node` one at a time (or as one batch), timed, then retracts them
/// again untimed so the same node and shares can be used for the next pass.
fn absorb_timed(node: &mut ComputeNode, msgs: &[ShareMessage], batch: bool) -> f64 {
    let seconds = limits::timed(|| {
        if batch {
            node.absorb_batch(msgs).expect("valid shares");
        } else {
            for msg in msgs {
                node.absorb(msg).expect("valid share");
            }
        }
    });
    for msg in msgs {
        node.retract(msg).expect("absorbed above");
    }
    seconds
}

fn percent(x: f64, of: f64) -> String {
    format!("{:5.1}%", 100.0 * x / of)
}

/// Prints one "what / rate / limit / ratio" line; returns the ratio.
fn ratio_line(what: &str, rate: limits::Rate, limit: limits::Rate) -> f64 {
    println!(
        "  {what:<46} {}   limit {}   {}",
        rate.show(),
        limit.show(),
        percent(rate.best, limit.best)
    );
    rate.best / limit.best
}

/// Bytes per timed piece of the node-accumulation passes.
const NODE_UNIT: usize = 16 << 20;

/// Node accumulation of full shares against the streaming read of the very same share buffers
/// (one thread against one thread, the pool against the pool), interleaved, in pieces of
/// [`NODE_UNIT`] bytes (at least one share) cycling through the whole buffer so the shares come
/// from memory; the five passes start a fifth of the buffer apart. The nodes are reused (shares
/// are retracted again untimed), so their accumulators are warm, as in a long round.
///
/// `absorb_batch` is timed on groups of at least `batch` shares (as many as a node has at hand
/// when uploads arrive faster than it absorbs them), against a pool read of the same groups;
/// the buffer grows to hold two such groups when `batch` shares do not fit in it.
fn node_accumulation_vs_read(buffer: usize, batch: usize) -> Result<Vec<String>, Box<dyn Error>> {
    let one = one_thread_pool()?;
    let threads = rayon::current_num_threads();
    let mut misses = Vec::new();
    for log_d in [16u32, 20, 24] {
        let d = 1usize << log_d;
        let count = (buffer / (d * 8)).max(2 * batch);
        let (config, msgs) = full_shares(count, d)?;
        let groups: Vec<&[ShareMessage]> = msgs.chunks((NODE_UNIT / (d * 8)).max(1)).collect();
        let bytes = groups[0].len() * d * 8;
        let batches: Vec<&[ShareMessage]> = msgs.chunks(groups[0].len().max(batch)).collect();
        let batch_bytes = batches[0].len() * d * 8;
        let spacing = (groups.len() / 5).max(1);
        let mut at: Vec<limits::Cursor> = (0..4)
            .map(|p| limits::Cursor::new(groups.len(), p * spacing))
            .chain((0..2).map(|p| limits::Cursor::new(batches.len(), p * batches.len() / 2)))
            .collect();
        let [
            at_read_1,
            at_absorb_1,
            at_read_pool,
            at_absorb_pool,
            at_read_batch,
            at_batch,
        ] = &mut at[..]
        else {
            unreachable!("six cursors")
        };
        let mut node_1 = ComputeNode::new(&config, NodeIndex(0))?;
        let mut node_pool = ComputeNode::new(&config, NodeIndex(0))?;
        let mut node_batch = ComputeNode::new(&config, NodeIndex(0))?;
        let rates = limits::time_interleaved(
            groups.len().max(5),
            Duration::from_secs(4),
            &mut [
                (bytes, &mut || {
                    let group = groups[at_read_1.advance()];
                    limits::timed(|| {
                        let sum = group.iter().fold(0u64, |s, m| {
                            s.wrapping_add(limits::read_reduce(full_words(m)))
                        });
                        std::hint::black_box(sum);
                    })
                }),
                (bytes, &mut || {
                    let group = groups[at_absorb_1.advance()];
                    one.install(|| absorb_timed(&mut node_1, group, false))
                }),
                (bytes, &mut || {
                    let group = groups[at_read_pool.advance()];
                    limits::timed(|| {
                        let sum = group
                            .par_iter()
                            .map(|m| limits::par_read_reduce(full_words(m)))
                            .reduce(|| 0, u64::wrapping_add);
                        std::hint::black_box(sum);
                    })
                }),
                (bytes, &mut || {
                    absorb_timed(&mut node_pool, groups[at_absorb_pool.advance()], false)
                }),
                (batch_bytes, &mut || {
                    let group = batches[at_read_batch.advance()];
                    limits::timed(|| {
                        let sum = group
                            .par_iter()
                            .map(|m| limits::par_read_reduce(full_words(m)))
                            .reduce(|| 0, u64::wrapping_add);
                        std::hint::black_box(sum);
                    })
                }),
                (batch_bytes, &mut || {
                    absorb_timed(&mut node_batch, batches[at_batch.advance()], true)
                }),
            ],
        );
        println!(
            "d = 2^{log_d}: {count} shares ({:.0} MiB), timed {} at a time ({} for the batch)",
            mib((count * d * 8) as u64),
            groups[0].len(),
            batches[0].len()
        );
        let lines = [
            (
                "absorb one by one, 1 thread".to_string(),
                rates[1],
                rates[0],
            ),
            (
                format!("absorb one by one, pool ({threads} thr)"),
                rates[3],
                rates[2],
            ),
            (
                format!("absorb_batch({}), pool ({threads} thr)", batches[0].len()),
                rates[5],
                rates[4],
            ),
        ];
        for (what, rate, limit) in lines {
            if ratio_line(&what, rate, limit) < 0.9 {
                misses.push(format!("d=2^{log_d} {what}"));
            }
        }
        // The limit reads the k shares only; absorbing them must also read the accumulator
        // (d words, out of cache once the shares have streamed through) and write it back.
        let k = batches[0].len() as f64;
        println!(
            "  (absorb_batch's ceiling against that limit: k/(k+1) = {:.1}% with the accumulator's \
             read, k/(k+2) = {:.1}% if its write costs as much; k = {k})",
            100.0 * k / (k + 1.0),
            100.0 * k / (k + 2.0)
        );
    }
    Ok(misses)
}

/// Seed expansion + accumulate (a compute node absorbing seed shares, one thread) and the
/// client split against the crate's raw keystream (the dispatched AES kernel), interleaved in
/// passes of `per_pass` bytes (all of it stays in L1/L2). Returns the worst node ratio and the
/// keystream rate.
fn seed_expansion_vs_keystream(per_pass: usize) -> Result<(f64, limits::Rate), Box<dyn Error>> {
    let one = one_thread_pool()?;
    let mut seed_nodes = [10_000usize, 1 << 16]
        .into_iter()
        .map(|d| {
            let n = (per_pass / (d * 8)).max(1);
            let config = round_config(3, n, 2, d, ShareMode::Seed)?;
            let msgs: Vec<ShareMessage> = (0..n)
                .map(|i| {
                    share(
                        &config,
                        i,
                        1,
                        SharePayload::Seed(Seed::from_bytes([i as u8; 16])),
                    )
                })
                .collect();
            let node = ComputeNode::new(&config, NodeIndex(1))?;
            Ok((d, n * d * 8, node, msgs))
        })
        .collect::<Result<Vec<_>, Box<dyn Error>>>()?;
    let d_split = 10_000;
    let split_calls = (per_pass / (d_split * 8 * usize::from(NODES - 1))).max(1);
    let split_bytes = split_calls * d_split * 8 * usize::from(NODES - 1);
    let mut values = vec![0.0; d_split];
    client_input(0, &mut values);
    let mut clients = [ShareMode::Seed, ShareMode::Full]
        .into_iter()
        .map(|mode| {
            let config = round_config(4, 1, NODES, d_split, mode)?;
            Ok(Client::new(&config, ClientId(0), RngSource::Os)?)
        })
        .collect::<Result<Vec<_>, Box<dyn Error>>>()?;
    let [seed_client, full_client] = &mut clients[..] else {
        unreachable!("two modes")
    };
    // As in a round, each split reuses the previous split's share vectors.
    let (mut seed_shares, mut full_shares) = (Vec::new(), Vec::new());
    let [(d0, b0, node0, m0), (d1, b1, node1, m1)] = &mut seed_nodes[..] else {
        unreachable!("two sizes")
    };
    let raw_seed = Seed::from_bytes([7; 16]);
    // 16 KiB calls: the keystream stays in L1, so this is the rate of the AES kernel itself.
    let mut raw_buf = vec![0u64; 2048];
    let raw_calls = (per_pass / (raw_buf.len() * 8)).max(1);
    let raw_bytes = raw_calls * raw_buf.len() * 8;
    let mut keystream = limits::keystream_pass::<limits::Ctr64>(per_pass);
    let rates = limits::time_interleaved(
        7,
        Duration::from_secs(4),
        &mut [
            (per_pass, &mut || limits::timed(&mut keystream)),
            (*b0, &mut || one.install(|| absorb_timed(node0, m0, false))),
            (*b1, &mut || one.install(|| absorb_timed(node1, m1, false))),
            (raw_bytes, &mut || {
                limits::timed(|| {
                    for _ in 0..raw_calls {
                        raw_keystream(&raw_seed, std::hint::black_box(&mut raw_buf));
                    }
                })
            }),
            (split_bytes, &mut || {
                limits::timed(|| {
                    for _ in 0..split_calls {
                        seed_client
                            .shard_into(&values, &mut seed_shares)
                            .expect("valid input");
                        std::hint::black_box(&seed_shares);
                    }
                })
            }),
            (split_bytes, &mut || {
                limits::timed(|| {
                    for _ in 0..split_calls {
                        full_client
                            .shard_into(&values, &mut full_shares)
                            .expect("valid input");
                        std::hint::black_box(&full_shares);
                    }
                })
            }),
        ],
    );
    let limit = rates[3];
    println!(
        "  {:<46} {}",
        format!(
            "raw_keystream (crate, {}), 16 KiB calls (the limit)",
            keystream_backend()
        ),
        limit.show()
    );
    ratio_line("aes 0.8 + ctr 0.9 Ctr64BE, 16 KiB calls", rates[0], limit);
    let worst = ratio_line(
        &format!("node absorbs seed shares, d={d0}"),
        rates[1],
        limit,
    )
    .min(ratio_line(
        &format!("node absorbs seed shares, d={d1}"),
        rates[2],
        limit,
    ));
    ratio_line(
        &format!("client split (seed), d={d_split}, M={NODES}, mask B"),
        rates[4],
        limit,
    );
    ratio_line(
        &format!("client split (full), d={d_split}, M={NODES}, mask B"),
        rates[5],
        limit,
    );
    Ok((worst, limit))
}

fn measure_limits(
    quick: bool,
    absorb_batch: Option<u16>,
    largest_seed_cell: Option<f64>,
) -> Result<(), Box<dyn Error>> {
    let buffer = if quick {
        256 << 20
    } else {
        limits::streaming_buffer_bytes()
    };
    println!(
        "\n== Limits, measured now (best of many short interleaved passes; medians in parentheses) =="
    );
    println!(
        "last-level cache reported by sysfs: {}",
        limits::last_level_cache_bytes()
            .map(|b| format!("{:.0} MiB", mib(b as u64)))
            .unwrap_or("unknown".into())
    );
    let words = limits::pattern_words(buffer);
    let read = limits::streaming_read(&words);
    drop(words);
    println!(
        "streaming read, {:.0} MiB contiguous buffer, 1 thread:           {}",
        mib(read.bytes as u64),
        read.single.show()
    );
    println!(
        "streaming read, {:.0} MiB contiguous buffer, rayon pool ({} thr): {}",
        mib(read.bytes as u64),
        read.pool_threads,
        read.pool.show()
    );
    let ks64 = limits::keystream_rate::<limits::Ctr64>();
    let ks128 = limits::keystream_rate::<limits::Ctr128>();
    println!(
        "AES-128-CTR keystream, Ctr64BE (the crate's layout), 1 thread:  {}",
        ks64.show()
    );
    println!(
        "AES-128-CTR keystream, Ctr128BE (for comparison), 1 thread:     {}",
        ks128.show()
    );

    println!(
        "\n== Node accumulation of full shares vs streaming read of the same share buffers (interleaved) =="
    );
    let batch = absorb_batch.map_or(if quick { 2 } else { 8 }, usize::from);
    let full_misses = node_accumulation_vs_read(buffer, batch)?;
    println!(
        "\n== Seed expansion + accumulate vs raw AES-128-CTR keystream, 1 thread (interleaved) =="
    );
    let (worst_seed, keystream) = seed_expansion_vs_keystream(8 << 20)?;
    if let Some(seconds) = largest_seed_cell {
        // Seed mode: every client expands M − 1 masks and every node k ≥ 1 expands them again.
        let bytes = 2.0 * 100_000.0 * f64::from(NODES - 1) * 10_000.0 * 8.0;
        let threads = rayon::current_num_threads() as f64;
        let floor = bytes / (threads * keystream.best);
        println!(
            "\ntarget: largest seed cell <= 1.5x the {threads}-thread keystream floor ({:.0} GB at {:.2} GB/s per thread = {floor:.2} s): {seconds:.2} s = {:.2}x -> {}",
            bytes / 1e9,
            keystream.best / 1e9,
            seconds / floor,
            if seconds <= 1.5 * floor {
                "met"
            } else {
                "MISSED"
            }
        );
    }

    if full_misses.is_empty() {
        println!(
            "\ntarget: node accumulation >= 90% of streaming read for d >= 2^16: met on every line"
        );
    } else {
        println!(
            "\ntarget: node accumulation >= 90% of streaming read for d >= 2^16: MISSED for {}",
            full_misses.join("; ")
        );
    }
    println!(
        "target: seed expansion + accumulate >= 85% of raw keystream: worst {:.1}% -> {}",
        100.0 * worst_seed,
        if worst_seed >= 0.85 { "met" } else { "MISSED" }
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let options = Options::parse();
    let (max_n, max_d) = options.max_n_d();
    input_pool(); // made before any timing
    let wall = Instant::now();
    println!(
        "DCA, Table 1 grid: M = {NODES} compute nodes, inputs uniform in [-{BOUND}, {BOUND}), rayon threads = {}, kernel path = {}, load average {}",
        rayon::current_num_threads(),
        fixedpoint_shares::kernels::selected_path(),
        load_average()
    );
    println!(
        "{:<5} {:>7} {:>6} {:>10} {:>8} {:>9} {:>10} {:>9} {:>10}  check",
        "mode", "N", "d", "seconds", "cpu s", "plain s", "noisy s", "paper s", "speed-up"
    );
    let mut cells = Vec::new();
    for mode in options.modes() {
        for (row, &d) in PAPER_D.iter().enumerate() {
            for (col, &n) in PAPER_N.iter().enumerate() {
                if n > max_n || d > max_d {
                    continue;
                }
                let cell = run_cell(mode, n, d, PAPER_SECONDS[row][col], !options.no_noise)?;
                print_cell(&cell);
                cells.push(cell);
            }
        }
    }
    for mode in options.modes() {
        print_grid(mode, &cells);
    }
    write_figure(&cells, &options.figure)?;
    println!("\nfigure: {}", options.figure.display());
    let grid_peak = limits::peak_rss_bytes();
    let all_exact = cells.iter().all(|c| c.exact);
    println!(
        "\nall {} cells bit-exact against the plain sum: {}",
        cells.len(),
        if all_exact { "yes" } else { "NO" }
    );
    println!(
        "peak RSS (VmHWM) after the grid: {}",
        grid_peak
            .map(|b| format!("{:.1} MiB", mib(b)))
            .unwrap_or("unavailable".into())
    );
    if let Some(big) = cells
        .iter()
        .find(|c| c.mode == ShareMode::Seed && c.n == 100_000 && c.d == 10_000)
    {
        let speedup = big.paper / big.seconds;
        let peak_ok = grid_peak.is_some_and(|b| b < GIB as u64);
        println!(
            "target: largest cell (seed, N=1e5, d=1e4) >= 50x faster than 1592.29 s with peak < 1 GiB: {:.2} s = {speedup:.0}x, peak {} -> {}",
            big.seconds,
            grid_peak
                .map(|b| format!("{:.0} MiB", mib(b)))
                .unwrap_or("?".into()),
            if speedup >= 50.0 && peak_ok {
                "met"
            } else {
                "MISSED"
            }
        );
        if let Some(noisy) = big.noisy_seconds {
            println!(
                "target: noisy largest cell <= 2x the noiseless one: {noisy:.2} s = {:.2}x -> {}",
                noisy / big.seconds,
                if noisy <= 2.0 * big.seconds {
                    "met"
                } else {
                    "MISSED"
                }
            );
            if let (Some(noisy_cpu), Some(cpu)) = (big.noisy_cpu, big.cpu) {
                println!(
                    "        CPU seconds (all threads): {noisy_cpu:.1} noisy, {cpu:.1} noiseless = {:.2}x",
                    noisy_cpu / cpu
                );
            }
        }
        if let Some(cpu) = big.cpu {
            let threads = rayon::current_num_threads() as f64;
            println!(
                "        its CPU time was {cpu:.1} s: about {:.1} s wall ({:.0}x) if all {threads} threads had a core to themselves (perfect overlap assumed; not measured)",
                cpu / threads,
                big.paper / (cpu / threads)
            );
        }
    }
    println!(
        "grid wall time: {:.1} s (load average now {})",
        wall.elapsed().as_secs_f64(),
        load_average()
    );
    if !options.no_limits {
        let largest_seed_cell = cells
            .iter()
            .find(|c| c.mode == ShareMode::Seed && c.n == 100_000 && c.d == 10_000)
            .map(|c| c.seconds);
        measure_limits(!options.full, options.absorb_batch, largest_seed_cell)?;
        println!(
            "\npeak RSS (VmHWM) at exit, including the limit buffers: {}",
            limits::peak_rss_bytes()
                .map(|b| format!("{:.1} MiB", mib(b)))
                .unwrap_or("unavailable".into())
        );
    }
    println!("total wall time: {:.1} s", wall.elapsed().as_secs_f64());
    if all_exact {
        Ok(())
    } else {
        Err("a cell's release differs from the plain sum".into())
    }
}
