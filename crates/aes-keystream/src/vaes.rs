//! AES-128-CTR keystream kernels in `std::arch` intrinsics: VAES-512, VAES-256 and AES-NI.
//!
//! The one module of the crate that may use `unsafe` (the workspace lint is relaxed from
//! `forbid` to `deny` for this crate only so that this module can `allow` it; every other
//! module still refuses `unsafe`). Why it exists: the `aes` 0.8 stack encrypts at most 8
//! blocks per call with 128-bit `aesenc`, while `vaesenc` on a 512-bit register encrypts 4
//! blocks per instruction.
//!
//! Measured reason it stays (`docs/src/results/crates-vs-own.md`): RustCrypto `aes`
//! 0.9.4 has VAES-256/512 backends, but adding its `ctr` 0.10.1 keystream (Ctr64BE, written into
//! a 16 KiB buffer, then a wrapping add) into a 1 MiB `u64` slice ran at 4.3 GB/s against 22.1
//! GB/s for the VAES-512 kernel here (median of 9 interleaved rounds, two runs: 5.2× / 5.0×;
//! AMD EPYC, 2 cores, load 11, 2026-11-26); built with
//! `RUSTFLAGS=-Ctarget-feature=+aes,+avx512f,+ssse3,+vaes` (no runtime detection, so no portable
//! binary or C library) it reached 14.9 GB/s, still 1.49× slower. The bar was 1.1×. Command:
//! `cargo run --release -p aes-keystream --example vs_aes09 -- 131072 50 9`.
//!
//! The kernels here produce exactly the keystream of
//! [`crate::Aes128Ctr`]'s portable path (AES-128, 8-byte nonce ‖ 64-bit big-endian block counter),
//! which the tests check on every backend the CPU has, against the NIST SP 800-38A vectors and
//! against words pinned from the `aes` 0.8 + `ctr` 0.9 crates.
//!
//! Each kernel encrypts whole groups of counter blocks and applies them to the caller's words
//! ([`Op`]) while they are still in registers, returning how many words it handled (a
//! multiple of its group); the caller finishes the short tail on the portable path.
//!
//! The safety argument is the same everywhere and is stated once per `unsafe` block:
//! - **calls into `#[target_feature]` functions** happen only in [`run`], only for a
//!   [`Backend`] other than `Portable`, and only after [`Backend::is_supported`] confirmed the
//!   exact feature set with `is_x86_feature_detected!` in that same call ([`Backend`] is public,
//!   so a caller may name any variant; `run` trusts none of them);
//! - **loads and stores** go through `&[u64; N]` / `&mut [u64; N]` of exactly the register's
//!   width (8·N bytes), so the pointer is valid for the whole access, and the unaligned
//!   `loadu`/`storeu` forms have no alignment requirement.
#![allow(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Which keystream kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// 4 blocks per `vaesenc` on zmm registers (needs AVX-512F, AVX-512BW, VAES, AES).
    Vaes512,
    /// 2 blocks per `vaesenc` on ymm registers (needs AVX2, VAES, AES).
    Vaes256,
    /// 1 block per `aesenc` on xmm registers (needs AES-NI, SSSE3).
    AesNi,
    /// The `aes` crate's block function (its own AES-NI or constant-time bitsliced software).
    Portable,
}

impl Backend {
    /// Every backend, fastest first.
    pub const ALL: [Backend; 4] = [
        Backend::Vaes512,
        Backend::Vaes256,
        Backend::AesNi,
        Backend::Portable,
    ];

    /// Whether this CPU can run the backend.
    pub fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Backend::Vaes512 => {
                    is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                        && is_x86_feature_detected!("vaes")
                        && is_x86_feature_detected!("aes")
                        && is_x86_feature_detected!("avx2")
                }
                Backend::Vaes256 => {
                    is_x86_feature_detected!("avx2")
                        && is_x86_feature_detected!("vaes")
                        && is_x86_feature_detected!("aes")
                }
                Backend::AesNi => {
                    is_x86_feature_detected!("aes") && is_x86_feature_detected!("ssse3")
                }
                Backend::Portable => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Backend::Portable
        }
    }

    /// The backends this CPU supports, fastest first (always ends with `Portable`).
    pub fn available() -> Vec<Backend> {
        Self::ALL.into_iter().filter(|b| b.is_supported()).collect()
    }

    /// The backend's name for benchmark output: "vaes512", "vaes256", "aesni" or "portable".
    pub fn name(self) -> &'static str {
        match self {
            Backend::Vaes512 => "vaes512",
            Backend::Vaes256 => "vaes256",
            Backend::AesNi => "aesni",
            Backend::Portable => "portable",
        }
    }

    /// The fastest supported backend, detected once per process.
    pub fn detect() -> Backend {
        static DETECTED: std::sync::OnceLock<Backend> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            Self::ALL
                .into_iter()
                .find(|b| b.is_supported())
                .unwrap_or(Backend::Portable)
        })
    }
}

/// What to do with keystream words `k[j]` (word j = bytes 8j..8j+8 of the keystream, LE).
pub enum Op<'a> {
    /// `out[j] = k[j]`.
    Store(&'a mut [u64]),
    /// `acc[j] += k[j]` (wrapping).
    Add(&'a mut [u64]),
    /// `acc[j] -= k[j]` (wrapping).
    Sub(&'a mut [u64]),
    /// `acc[j] ^= k[j]`.
    Xor(&'a mut [u64]),
    /// `mask[j] = k[j]`, `balancing[j] -= k[j]`; both slices have the same length.
    Split {
        /// Receives the keystream words.
        mask: &'a mut [u64],
        /// Has the keystream words subtracted.
        balancing: &'a mut [u64],
    },
}

impl Op<'_> {
    /// Number of words the operation covers.
    pub(crate) fn len(&self) -> usize {
        match self {
            Op::Store(a) | Op::Add(a) | Op::Sub(a) | Op::Xor(a) => a.len(),
            Op::Split { mask, balancing } => mask.len().min(balancing.len()),
        }
    }

    /// The same operation on words `from..`.
    pub(crate) fn tail(&mut self, from: usize) -> Op<'_> {
        match self {
            Op::Store(a) => Op::Store(&mut a[from..]),
            Op::Add(a) => Op::Add(&mut a[from..]),
            Op::Sub(a) => Op::Sub(&mut a[from..]),
            Op::Xor(a) => Op::Xor(&mut a[from..]),
            Op::Split { mask, balancing } => Op::Split {
                mask: &mut mask[from..],
                balancing: &mut balancing[from..],
            },
        }
    }

    /// Applies keystream words `ks` to words `at..at + ks.len()` (scalar; the SIMD kernels
    /// do the same per register).
    pub(crate) fn apply_words(&mut self, at: usize, ks: &[u64]) {
        match self {
            Op::Store(a) => a[at..at + ks.len()].copy_from_slice(ks),
            Op::Add(a) => a[at..at + ks.len()]
                .iter_mut()
                .zip(ks)
                .for_each(|(a, k)| *a = a.wrapping_add(*k)),
            Op::Sub(a) => a[at..at + ks.len()]
                .iter_mut()
                .zip(ks)
                .for_each(|(a, k)| *a = a.wrapping_sub(*k)),
            Op::Xor(a) => a[at..at + ks.len()]
                .iter_mut()
                .zip(ks)
                .for_each(|(a, k)| *a ^= *k),
            Op::Split { mask, balancing } => {
                mask[at..at + ks.len()].copy_from_slice(ks);
                balancing[at..at + ks.len()]
                    .iter_mut()
                    .zip(ks)
                    .for_each(|(b, k)| *b = b.wrapping_sub(*k));
            }
        }
    }
}

/// Runs the SIMD kernel of `backend` over the longest prefix of `op` it handles (whole
/// groups of blocks), the keystream starting at block `first_block` of AES-128-CTR under
/// `key` with the 8-byte `nonce`; returns the number of words done (even). `Portable` and
/// unsupported backends do nothing and return 0.
pub(crate) fn run(
    backend: Backend,
    key: &[u8; 16],
    nonce: [u8; 8],
    first_block: u64,
    op: &mut Op<'_>,
) -> usize {
    if !backend.is_supported() {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    match backend {
        // SAFETY: `is_supported` just confirmed avx512f, avx512bw, vaes, aes and avx2.
        Backend::Vaes512 => unsafe { x86::vaes512(key, nonce, first_block, op) },
        // SAFETY: `is_supported` just confirmed avx2, vaes and aes.
        Backend::Vaes256 => unsafe { x86::vaes256(key, nonce, first_block, op) },
        // SAFETY: `is_supported` just confirmed aes and ssse3.
        Backend::AesNi => unsafe { x86::aesni(key, nonce, first_block, op) },
        Backend::Portable => 0,
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (key, nonce, first_block, op);
        0
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    /// Blocks in flight per loop step: enough independent `aesenc` chains to hide latency.
    const VECTORS: usize = 8;

    /// Byte indices that reverse each 8-byte half of a 16-byte block (`pshufb` control): the
    /// counter is kept as native integers in the high half and stored big-endian.
    const SWAP_HALVES: [u8; 16] = [7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8];

    /// The 11 round keys of AES-128 (FIPS 197 key expansion with `aeskeygenassist`).
    #[target_feature(enable = "aes")]
    fn expand_key(key: &[u8; 16]) -> [__m128i; 11] {
        #[inline]
        #[target_feature(enable = "aes")]
        fn next(prev: __m128i, assist: __m128i) -> __m128i {
            // w'[i] = w[0] ^ .. ^ w[i] ^ SubWord(RotWord(w[3])) ^ rcon: prefix XOR in two shifts.
            let t = _mm_shuffle_epi32::<0xff>(assist);
            let k = _mm_xor_si128(prev, _mm_slli_si128::<4>(prev));
            let k = _mm_xor_si128(k, _mm_slli_si128::<8>(k));
            _mm_xor_si128(k, t)
        }
        let mut rk = [_mm_setzero_si128(); 11];
        rk[0] = load128(key);
        macro_rules! round {
            ($i:literal, $rcon:literal) => {
                rk[$i] = next(rk[$i - 1], _mm_aeskeygenassist_si128::<$rcon>(rk[$i - 1]));
            };
        }
        round!(1, 0x01);
        round!(2, 0x02);
        round!(3, 0x04);
        round!(4, 0x08);
        round!(5, 0x10);
        round!(6, 0x20);
        round!(7, 0x40);
        round!(8, 0x80);
        round!(9, 0x1b);
        round!(10, 0x36);
        rk
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load128(bytes: &[u8; 16]) -> __m128i {
        // SAFETY: `bytes` is 16 readable bytes; `loadu` needs no alignment.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    /// The nonce as the low 64-bit lane such that reversing its bytes restores `nonce`.
    fn nonce_lane(nonce: [u8; 8]) -> i64 {
        u64::from_be_bytes(nonce) as i64
    }

    // ---- VAES-512: 4 blocks per register, 8 registers (32 blocks, 64 words) per step ----

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load512(words: &[u64; 8]) -> __m512i {
        // SAFETY: `words` is 64 readable bytes; `loadu` needs no alignment.
        unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store512(words: &mut [u64; 8], v: __m512i) {
        // SAFETY: `words` is 64 writable bytes; `storeu` needs no alignment.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "aes,avx2,avx512f,avx512bw,vaes")]
    pub(super) fn vaes512(
        key: &[u8; 16],
        nonce: [u8; 8],
        first_block: u64,
        op: &mut Op<'_>,
    ) -> usize {
        const WORDS: usize = VECTORS * 8;
        let rk128 = expand_key(key);
        let mut rk = [_mm512_setzero_si512(); 11];
        for (wide, k) in rk.iter_mut().zip(rk128) {
            *wide = _mm512_broadcast_i32x4(k);
        }
        let swap = _mm512_broadcast_i32x4(load128(&SWAP_HALVES));
        let n = nonce_lane(nonce);
        let c = first_block as i64;
        let mut ctr = _mm512_set_epi64(c + 3, n, c + 2, n, c + 1, n, c, n);
        let step = _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0);
        let steps = op.len() / WORDS;
        for s in 0..steps {
            let mut x = [_mm512_setzero_si512(); VECTORS];
            for v in &mut x {
                *v = _mm512_xor_si512(_mm512_shuffle_epi8(ctr, swap), rk[0]);
                ctr = _mm512_add_epi64(ctr, step);
            }
            for round_key in &rk[1..10] {
                for v in &mut x {
                    *v = _mm512_aesenc_epi128(*v, *round_key);
                }
            }
            for v in &mut x {
                *v = _mm512_aesenclast_epi128(*v, rk[10]);
            }
            let range = s * WORDS..(s + 1) * WORDS;
            match op {
                Op::Store(out) => {
                    for (o, k) in out[range].as_chunks_mut::<8>().0.iter_mut().zip(x) {
                        store512(o, k);
                    }
                }
                Op::Add(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<8>().0.iter_mut().zip(x) {
                        store512(a, _mm512_add_epi64(load512(a), k));
                    }
                }
                Op::Sub(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<8>().0.iter_mut().zip(x) {
                        store512(a, _mm512_sub_epi64(load512(a), k));
                    }
                }
                Op::Xor(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<8>().0.iter_mut().zip(x) {
                        store512(a, _mm512_xor_si512(load512(a), k));
                    }
                }
                Op::Split { mask, balancing } => {
                    let masks = mask[range.clone()].as_chunks_mut::<8>().0.iter_mut();
                    let bals = balancing[range].as_chunks_mut::<8>().0.iter_mut();
                    for ((m, b), k) in masks.zip(bals).zip(x) {
                        store512(m, k);
                        store512(b, _mm512_sub_epi64(load512(b), k));
                    }
                }
            }
        }
        steps * WORDS
    }

    // ---- VAES-256: 2 blocks per register, 8 registers (16 blocks, 32 words) per step ----

    #[inline]
    #[target_feature(enable = "avx")]
    fn load256(words: &[u64; 4]) -> __m256i {
        // SAFETY: `words` is 32 readable bytes; `loadu` needs no alignment.
        unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "avx")]
    fn store256(words: &mut [u64; 4], v: __m256i) {
        // SAFETY: `words` is 32 writable bytes; `storeu` needs no alignment.
        unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "aes,avx2,vaes")]
    pub(super) fn vaes256(
        key: &[u8; 16],
        nonce: [u8; 8],
        first_block: u64,
        op: &mut Op<'_>,
    ) -> usize {
        const WORDS: usize = VECTORS * 4;
        let rk128 = expand_key(key);
        let mut rk = [_mm256_setzero_si256(); 11];
        for (wide, k) in rk.iter_mut().zip(rk128) {
            *wide = _mm256_broadcastsi128_si256(k);
        }
        let swap = _mm256_broadcastsi128_si256(load128(&SWAP_HALVES));
        let n = nonce_lane(nonce);
        let c = first_block as i64;
        let mut ctr = _mm256_set_epi64x(c + 1, n, c, n);
        let step = _mm256_set_epi64x(2, 0, 2, 0);
        let steps = op.len() / WORDS;
        for s in 0..steps {
            let mut x = [_mm256_setzero_si256(); VECTORS];
            for v in &mut x {
                *v = _mm256_xor_si256(_mm256_shuffle_epi8(ctr, swap), rk[0]);
                ctr = _mm256_add_epi64(ctr, step);
            }
            for round_key in &rk[1..10] {
                for v in &mut x {
                    *v = _mm256_aesenc_epi128(*v, *round_key);
                }
            }
            for v in &mut x {
                *v = _mm256_aesenclast_epi128(*v, rk[10]);
            }
            let range = s * WORDS..(s + 1) * WORDS;
            match op {
                Op::Store(out) => {
                    for (o, k) in out[range].as_chunks_mut::<4>().0.iter_mut().zip(x) {
                        store256(o, k);
                    }
                }
                Op::Add(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<4>().0.iter_mut().zip(x) {
                        store256(a, _mm256_add_epi64(load256(a), k));
                    }
                }
                Op::Sub(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<4>().0.iter_mut().zip(x) {
                        store256(a, _mm256_sub_epi64(load256(a), k));
                    }
                }
                Op::Xor(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<4>().0.iter_mut().zip(x) {
                        store256(a, _mm256_xor_si256(load256(a), k));
                    }
                }
                Op::Split { mask, balancing } => {
                    let masks = mask[range.clone()].as_chunks_mut::<4>().0.iter_mut();
                    let bals = balancing[range].as_chunks_mut::<4>().0.iter_mut();
                    for ((m, b), k) in masks.zip(bals).zip(x) {
                        store256(m, k);
                        store256(b, _mm256_sub_epi64(load256(b), k));
                    }
                }
            }
        }
        steps * WORDS
    }

    // ---- AES-NI: 1 block per register, 8 registers (8 blocks, 16 words) per step ----

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load_pair(words: &[u64; 2]) -> __m128i {
        // SAFETY: `words` is 16 readable bytes; `loadu` needs no alignment.
        unsafe { _mm_loadu_si128(words.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn store_pair(words: &mut [u64; 2], v: __m128i) {
        // SAFETY: `words` is 16 writable bytes; `storeu` needs no alignment.
        unsafe { _mm_storeu_si128(words.as_mut_ptr().cast(), v) }
    }

    #[target_feature(enable = "aes,ssse3")]
    pub(super) fn aesni(
        key: &[u8; 16],
        nonce: [u8; 8],
        first_block: u64,
        op: &mut Op<'_>,
    ) -> usize {
        const WORDS: usize = VECTORS * 2;
        let rk = expand_key(key);
        let swap = load128(&SWAP_HALVES);
        let mut ctr = _mm_set_epi64x(first_block as i64, nonce_lane(nonce));
        let step = _mm_set_epi64x(1, 0);
        let steps = op.len() / WORDS;
        for s in 0..steps {
            let mut x = [_mm_setzero_si128(); VECTORS];
            for v in &mut x {
                *v = _mm_xor_si128(_mm_shuffle_epi8(ctr, swap), rk[0]);
                ctr = _mm_add_epi64(ctr, step);
            }
            for round_key in &rk[1..10] {
                for v in &mut x {
                    *v = _mm_aesenc_si128(*v, *round_key);
                }
            }
            for v in &mut x {
                *v = _mm_aesenclast_si128(*v, rk[10]);
            }
            let range = s * WORDS..(s + 1) * WORDS;
            match op {
                Op::Store(out) => {
                    for (o, k) in out[range].as_chunks_mut::<2>().0.iter_mut().zip(x) {
                        store_pair(o, k);
                    }
                }
                Op::Add(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<2>().0.iter_mut().zip(x) {
                        store_pair(a, _mm_add_epi64(load_pair(a), k));
                    }
                }
                Op::Sub(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<2>().0.iter_mut().zip(x) {
                        store_pair(a, _mm_sub_epi64(load_pair(a), k));
                    }
                }
                Op::Xor(acc) => {
                    for (a, k) in acc[range].as_chunks_mut::<2>().0.iter_mut().zip(x) {
                        store_pair(a, _mm_xor_si128(load_pair(a), k));
                    }
                }
                Op::Split { mask, balancing } => {
                    let masks = mask[range.clone()].as_chunks_mut::<2>().0.iter_mut();
                    let bals = balancing[range].as_chunks_mut::<2>().0.iter_mut();
                    for ((m, b), k) in masks.zip(bals).zip(x) {
                        store_pair(m, k);
                        store_pair(b, _mm_sub_epi64(load_pair(b), k));
                    }
                }
            }
        }
        steps * WORDS
    }
}
