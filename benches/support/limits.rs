//! The two machine limits the DCA kernels are judged against, measured in the same process run
//! as the kernels (the machine is small and shared, so only same-run ratios mean anything).
//!
//! * Streaming read bandwidth. Node accumulation of full shares reads each incoming share once
//!   (`acc += share`); the accumulator is d words and stays in cache for moderate d, so the
//!   compulsory traffic is the shares themselves, read once from memory. The matching limit is a
//!   read-only reduction over a buffer much larger than the last-level cache. It is measured on
//!   one thread (a compute node sums on one thread) and on the rayon pool (what the whole
//!   process can pull from memory).
//! * AES-128-CTR keystream rate. Seed expansion + accumulate is compute bound: its output never
//!   leaves L1/L2. The limit is `apply_keystream` over a small zeroed buffer that stays in L1,
//!   one thread, with the counter layout the crate uses (and the textbook one for comparison).
//!
//! Both are "best of several passes" (the capability of the machine when nobody else is
//! running); medians are printed next to them so noise is visible.

use aes::Aes128;
use aes::cipher::consts::U16;
use aes::cipher::{KeyIvInit, StreamCipher};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Bytes per second: the best and the median over the timed passes.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
    /// Fastest pass.
    pub best: f64,
    /// Median pass.
    pub median: f64,
}

impl Rate {
    /// Rates from per-pass (bytes, seconds) measurements.
    pub fn from_passes(bytes: usize, seconds: &[f64]) -> Rate {
        let mut rates: Vec<f64> = seconds.iter().map(|s| bytes as f64 / s).collect();
        rates.sort_by(f64::total_cmp);
        let best = rates.last().copied().unwrap_or(0.0);
        let median = rates.get(rates.len() / 2).copied().unwrap_or(0.0);
        Rate { best, median }
    }

    /// "best X GB/s (median Y)".
    pub fn show(&self) -> String {
        format!(
            "{:6.2} GB/s (median {:5.2})",
            self.best / 1e9,
            self.median / 1e9
        )
    }
}

/// Times `pass` (which processes `bytes` bytes) after one untimed warm-up pass, repeating until
/// at least `min_passes` passes and `min_time` have elapsed.
pub fn time_passes(
    bytes: usize,
    min_passes: usize,
    min_time: Duration,
    mut pass: impl FnMut(),
) -> Rate {
    let rates = time_interleaved(
        min_passes,
        min_time,
        &mut [(bytes, &mut || timed(&mut pass))],
    );
    rates[0]
}

/// Seconds taken by `work`.
pub fn timed(work: impl FnOnce()) -> f64 {
    let t = Instant::now();
    work();
    t.elapsed().as_secs_f64()
}

/// Runs several passes `(bytes, pass)` in turn, round after round (after one untimed warm-up
/// round), until at least `min_rounds` rounds and `min_time` have elapsed. Each pass returns
/// the seconds of its measured part (so it can restore state untimed, see [`timed`]).
///
/// Interleaving puts a kernel and its limit under the same background load, and best-of over
/// many short passes estimates what the machine does when nothing else runs: on a shared
/// machine that is far steadier than one long pass of each.
pub fn time_interleaved(
    min_rounds: usize,
    min_time: Duration,
    passes: &mut [(usize, &mut dyn FnMut() -> f64)],
) -> Vec<Rate> {
    for (_, pass) in passes.iter_mut() {
        pass();
    }
    let start = Instant::now();
    let mut seconds = vec![Vec::new(); passes.len()];
    let mut rounds = 0;
    while rounds < min_rounds || start.elapsed() < min_time {
        for ((_, pass), secs) in passes.iter_mut().zip(&mut seconds) {
            secs.push(pass());
        }
        rounds += 1;
    }
    passes
        .iter()
        .zip(&seconds)
        .map(|((bytes, _), secs)| Rate::from_passes(*bytes, secs))
        .collect()
}

/// Visits the `units` pieces of a buffer in order, one per call, starting at `start`: a pass
/// that cycles through a buffer much larger than the cache one cache-sized piece at a time.
pub struct Cursor {
    next: usize,
    units: usize,
}

impl Cursor {
    /// A cursor over `units` pieces (at least one), starting at piece `start % units`.
    pub fn new(units: usize, start: usize) -> Cursor {
        let units = units.max(1);
        Cursor {
            next: start % units,
            units,
        }
    }

    /// The piece to process now; advances to the next.
    pub fn advance(&mut self) -> usize {
        let unit = self.next;
        self.next = (self.next + 1) % self.units;
        unit
    }
}

/// Size of the buffer for the streaming-read limit: twice the last-level cache the kernel
/// reports (rounded up to a power of two), at least 256 MiB, at most 2 GiB.
pub fn streaming_buffer_bytes() -> usize {
    let llc = last_level_cache_bytes().unwrap_or(32 << 20);
    (2 * llc).next_power_of_two().clamp(256 << 20, 2 << 30)
}

/// The largest cache size listed in sysfs for cpu0, if readable.
pub fn last_level_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| {
        let text = std::fs::read_to_string(entry.ok()?.path().join("size")).ok()?;
        let text = text.trim();
        let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
        let scale = match unit {
            "K" => 1 << 10,
            "M" => 1 << 20,
            "G" => 1 << 30,
            _ => return None,
        };
        Some(digits.parse::<usize>().ok()? * scale)
    })
    .max()
}

/// A buffer of `bytes / 8` words with a non-trivial pattern (every page really backed).
pub fn pattern_words(bytes: usize) -> Vec<u64> {
    (0..(bytes / 8) as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect()
}

/// Wrapping sum of every word, with eight independent accumulators so the loop is bound by
/// loads, not by the add latency chain. The result must be consumed (`black_box`).
pub fn read_reduce(words: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    let mut chunks = words.chunks_exact(8);
    for chunk in &mut chunks {
        for (a, w) in acc.iter_mut().zip(chunk) {
            *a = a.wrapping_add(*w);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0u64, |s, w| s.wrapping_add(*w));
    acc.iter().fold(tail, |s, a| s.wrapping_add(*a))
}

/// `read_reduce` split over the rayon pool in 1 MiB pieces.
pub fn par_read_reduce(words: &[u64]) -> u64 {
    words
        .par_chunks(1 << 17)
        .map(read_reduce)
        .reduce(|| 0, u64::wrapping_add)
}

/// Streaming read bandwidth over `words`, on one thread and on the rayon pool.
pub struct ReadBandwidth {
    /// Size of the buffer read.
    pub bytes: usize,
    /// One thread.
    pub single: Rate,
    /// The rayon pool.
    pub pool: Rate,
    /// Threads in the rayon pool.
    pub pool_threads: usize,
}

/// Bytes per timed piece of the streaming-read passes (many pieces cycle through the buffer).
pub const READ_UNIT: usize = 16 << 20;

/// Measures [`ReadBandwidth`] over `words` (allocate it with [`pattern_words`] and
/// [`streaming_buffer_bytes`]): [`READ_UNIT`]-sized pieces, visited in order so each piece comes
/// from memory (the two passes start half a buffer apart), one thread and pool interleaved.
pub fn streaming_read(words: &[u64]) -> ReadBandwidth {
    let pieces: Vec<&[u64]> = words.chunks(READ_UNIT / 8).collect();
    let bytes = std::mem::size_of_val(pieces[0]);
    let mut single_at = Cursor::new(pieces.len(), 0);
    let mut pool_at = Cursor::new(pieces.len(), pieces.len() / 2);
    let rates = time_interleaved(
        pieces.len(),
        Duration::from_secs(2),
        &mut [
            (bytes, &mut || {
                let piece = pieces[single_at.advance()];
                timed(|| {
                    std::hint::black_box(read_reduce(std::hint::black_box(piece)));
                })
            }),
            (bytes, &mut || {
                let piece = pieces[pool_at.advance()];
                timed(|| {
                    std::hint::black_box(par_read_reduce(std::hint::black_box(piece)));
                })
            }),
        ],
    );
    ReadBandwidth {
        bytes: std::mem::size_of_val(words),
        single: rates[0],
        pool: rates[1],
        pool_threads: rayon::current_num_threads(),
    }
}

/// AES-128-CTR with a 64-bit big-endian counter under a 64-bit nonce: the layout
/// fixedpoint-shares expands masks with, so this is its limit.
pub type Ctr64 = ctr::Ctr64BE<Aes128>;
/// AES-128-CTR with a 128-bit big-endian counter (the textbook layout), for comparison.
pub type Ctr128 = ctr::Ctr128BE<Aes128>;

/// Bytes per keystream call in [`keystream_rate`]: small enough to stay in L1.
pub const KEYSTREAM_CHUNK: usize = 16 << 10;

/// One pass of the raw keystream of cipher `C` on one thread: `apply_keystream` on a zeroed
/// [`KEYSTREAM_CHUNK`]-byte buffer, repeated for `bytes` bytes. Returns the pass.
pub fn keystream_pass<C: KeyIvInit<KeySize = U16, IvSize = U16> + StreamCipher>(
    bytes: usize,
) -> impl FnMut() {
    let mut cipher = C::new(&[0x5a; 16].into(), &[0xa5; 16].into());
    let mut buf = vec![0u8; KEYSTREAM_CHUNK];
    move || {
        // Zeroed once; XOR costs the same on any contents, and re-zeroing would add a pass
        // that is not part of the keystream.
        for _ in 0..bytes / KEYSTREAM_CHUNK {
            cipher.apply_keystream(std::hint::black_box(&mut buf));
        }
        std::hint::black_box(&buf);
    }
}

/// Raw keystream rate of cipher `C` on one thread (see [`keystream_pass`]), 64 MiB per pass.
pub fn keystream_rate<C: KeyIvInit<KeySize = U16, IvSize = U16> + StreamCipher>() -> Rate {
    let bytes = 64 << 20;
    time_passes(
        bytes,
        5,
        Duration::from_millis(400),
        keystream_pass::<C>(bytes),
    )
}

/// Peak resident set size of this process so far (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// Current resident set size (`VmRSS`), in bytes.
pub fn rss_bytes() -> Option<u64> {
    proc_status_kib("VmRSS:").map(|kib| kib * 1024)
}

fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Resets the peak-RSS mark to the current RSS (Linux >= 4.0: write "5" to clear_refs), so a
/// later [`peak_rss_bytes`] covers only what follows. Returns false if the kernel refused.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
