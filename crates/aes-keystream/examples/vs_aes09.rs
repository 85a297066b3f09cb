//! GB/s of adding AES-128-CTR keystream words into a `u64` slice (what `Op::Add` does when a
//! node expands a seed share): this crate's kernels (`Backend::detect`) against RustCrypto
//! `aes` 0.9 + `ctr` 0.10 (`CtrCore<Aes128, Ctr64BE>`) writing keystream blocks into a 4 or
//! 16 KiB buffer (L1-resident), then a wrapping add (AVX-512 / AVX2 through multiversion).
//! Also the `ctr` keystream alone and `aes` 0.9's `encrypt_blocks` alone (no counter, no add).
//! The methods alternate inside each round; medians over rounds. Checks first that both give
//! the same words. Reports, never asserts.
//!
//! ```text
//! cargo run --release -p aes-keystream --example vs_aes09 -- [WORDS] [REPS] [ROUNDS]
//! cargo run --release -p aes-keystream --example vs_aes09 -- 131072 50 9
//! ```
use aes_keystream::{Aes128Ctr, Backend, Op};
use ctr010::cipher::{KeyIvInit, StreamCipherCore};
use std::time::Instant;

type Core = ctr010::CtrCore<aes09::Aes128, ctr010::flavors::Ctr64BE>;
type Block = ctr010::cipher::Block<Core>;

#[multiversion::multiversion(targets("x86_64+avx512f+avx512bw+avx2", "x86_64+avx2"))]
fn add_words(acc: &mut [u64], blocks: &[Block]) {
    for (pair, b) in acc.chunks_exact_mut(2).zip(blocks) {
        pair[0] = pair[0].wrapping_add(u64::from_le_bytes(b[..8].try_into().unwrap()));
        pair[1] = pair[1].wrapping_add(u64::from_le_bytes(b[8..].try_into().unwrap()));
    }
}

fn crate_add<const BLOCKS: usize>(key: [u8; 16], nonce: [u8; 8], first: u64, acc: &mut [u64]) {
    let mut iv = [0u8; 16];
    iv[..8].copy_from_slice(&nonce);
    iv[8..].copy_from_slice(&first.to_be_bytes());
    let mut core = Core::new(&key.into(), &iv.into());
    let mut buf = [Block::default(); BLOCKS];
    for chunk in acc.chunks_mut(2 * BLOCKS) {
        let nb = chunk.len() / 2; // even lengths only in this bench
        core.write_keystream_blocks(&mut buf[..nb]);
        add_words(chunk, &buf[..nb]);
    }
}

fn ks_only<const BLOCKS: usize>(key: [u8; 16], nonce: [u8; 8], words: usize) -> u8 {
    let mut iv = [0u8; 16];
    iv[..8].copy_from_slice(&nonce);
    let mut core = Core::new(&key.into(), &iv.into());
    let mut buf = [Block::default(); BLOCKS];
    let mut x = 0u8;
    for _ in 0..words / (2 * BLOCKS) {
        core.write_keystream_blocks(&mut buf);
        x ^= buf[BLOCKS - 1][0];
    }
    x
}

fn blocks_only<const BLOCKS: usize>(key: [u8; 16], words: usize) -> u8 {
    use aes09::cipher::{BlockCipherEncrypt, KeyInit};
    let c = aes09::Aes128::new(&key.into());
    let mut buf = [Block::default(); BLOCKS];
    let mut x = 0u8;
    for _ in 0..words / (2 * BLOCKS) {
        c.encrypt_blocks(&mut buf);
        x ^= buf[BLOCKS - 1][0];
    }
    x
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let words: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(1 << 17);
    let reps: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(50);
    let rounds: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(9);
    let key = *b"any 16-byte key!";
    let nonce = *b"nonce-01";
    let own = Aes128Ctr::new(key, nonce);
    // Correctness: same words.
    let mut a = vec![7u64; words];
    let mut b = vec![7u64; words];
    own.apply(3, Op::Add(&mut a));
    crate_add::<256>(key, nonce, 3, &mut b);
    assert_eq!(a, b, "keystreams differ");
    let mut acc = vec![1u64; words];
    let gb = (words * 8 * reps) as f64 / 1e9;
    let mut cols: Vec<(&str, Vec<f64>)> = vec![
        ("own", vec![]),
        ("crate 4KiB", vec![]),
        ("crate 16KiB", vec![]),
        ("own/crate16 ratio", vec![]),
        ("ctr keystream only 16K", vec![]),
        ("aes encrypt_blocks 16K", vec![]),
    ];
    for _ in 0..rounds {
        let t = Instant::now();
        for r in 0..reps {
            own.apply(r as u64 * 1_000_000, Op::Add(&mut acc));
        }
        let o = gb / t.elapsed().as_secs_f64();
        let t = Instant::now();
        for r in 0..reps {
            crate_add::<256>(key, nonce, r as u64 * 1_000_000, &mut acc);
        }
        let c4 = gb / t.elapsed().as_secs_f64();
        let t = Instant::now();
        for r in 0..reps {
            crate_add::<1024>(key, nonce, r as u64 * 1_000_000, &mut acc);
        }
        let c16 = gb / t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut x = 0;
        for _ in 0..reps {
            x ^= ks_only::<1024>(key, nonce, words);
        }
        cols[4].1.push(gb / t.elapsed().as_secs_f64());
        let t = Instant::now();
        for _ in 0..reps {
            x ^= blocks_only::<1024>(key, words);
        }
        cols[5].1.push(gb / t.elapsed().as_secs_f64());
        std::hint::black_box(x);
        cols[0].1.push(o);
        cols[1].1.push(c4);
        cols[2].1.push(c16);
        cols[3].1.push(o / c16);
    }
    std::hint::black_box(&acc);
    println!(
        "backend {:?}, {} words ({} KiB), {reps} reps x {rounds} rounds interleaved",
        Backend::detect(),
        words,
        words * 8 / 1024
    );
    for (n, v) in &cols {
        let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = v.iter().cloned().fold(0.0, f64::max);
        println!(
            "  {n:<18} median {:6.2}  (min {min:.2}, max {max:.2})",
            median(v.clone())
        );
    }
}
