//! Wrapping-add kernels over `u64` slices: the inner loop of every DCA compute node.
//!
//! Three versions of `acc[i] = acc[i].wrapping_add(src[i])`, all public so they can be benchmarked
//! against each other:
//!
//! * [`add_assign_scalar`] — the plain loop, the reference the others are tested against;
//! * [`add_assign_wide`] — the same loop over `wide::u64x4` lanes, compiled for the build's
//!   baseline target (SSE2 on a default x86_64 build);
//! * [`add_assign`] — the loop compiled three times by `multiversion` (x86_64 + AVX-512F,
//!   x86_64 + AVX2, baseline) with the best clone picked once at run time from CPU feature
//!   detection, so a default build (no `-C target-cpu`) still runs AVX-512 or AVX2 code where
//!   the CPU has it. [`selected_path`] says which clone that is.
//!
//! Why the dispatched clones compile the plain loop and not the `wide` one: `wide` chooses its
//! lane representation at compile time (`cfg(target_feature = "avx2")`), and a runtime-dispatched
//! clone does not set that cfg. Compiled inside the AVX-512F clone, the `wide` loop stays two
//! 128-bit `vpaddq xmm` per `u64x4` (checked with objdump), while LLVM's auto-vectoriser turns the
//! plain loop into `vpaddq zmm` (AVX-512F clone) or `vpaddq ymm` (AVX2 clone).
//!
//! `unsafe` is forbidden in this crate. The dispatch itself (calling a `#[target_feature]`
//! function after detection) needs an `unsafe` block, which lives in `multiversion`'s macro
//! expansion: rustc does not report `unsafe_code` for code produced by an external macro, and
//! the soundness argument (the clone is only called after its features were detected) is the
//! macro's, not ours.

use multiversion::multiversion;
use multiversion::target::selected_target;
use wide::u64x4;

use crate::{Error, Result};

/// Which clone of the dispatched kernels runs on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelPath {
    /// x86_64 with AVX-512F (512-bit `zmm` registers).
    Avx512f,
    /// x86_64 with AVX2 (256-bit `ymm` registers).
    Avx2,
    /// The build's baseline target (SSE2 on x86_64, whatever the target offers elsewhere).
    Portable,
}

impl KernelPath {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            KernelPath::Avx512f => "avx512f",
            KernelPath::Avx2 => "avx2",
            KernelPath::Portable => "portable",
        }
    }
}

impl std::fmt::Display for KernelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The clone the dispatched kernels use on this CPU.
///
/// Uses the same target list and the same detection as the kernels, so it reports exactly what
/// they run.
pub fn selected_path() -> KernelPath {
    path_probe()
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn path_probe() -> KernelPath {
    let target = selected_target!();
    if target.supports_feature_str("avx512f") {
        KernelPath::Avx512f
    } else if target.supports_feature_str("avx2") {
        KernelPath::Avx2
    } else {
        KernelPath::Portable
    }
}

fn check_len(acc: usize, src: usize) -> Result<()> {
    if acc == src {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what: "kernel source",
            expected: acc,
            actual: src,
        })
    }
}

/// `acc[i] = acc[i].wrapping_add(src[i])`, one element at a time (the reference).
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn add_assign_scalar(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_add(*s);
    }
    Ok(())
}

/// `acc[i] = acc[i].wrapping_sub(src[i])`, one element at a time (the reference).
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn sub_assign_scalar(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_sub(*s);
    }
    Ok(())
}

/// `acc[i] = acc[i].wrapping_add(src[i])` over `wide::u64x4` lanes, baseline target only.
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn add_assign_wide(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    add_lanes(acc, src);
    Ok(())
}

/// `acc[i] = acc[i].wrapping_sub(src[i])` over `wide::u64x4` lanes, baseline target only.
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn sub_assign_wide(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    sub_lanes(acc, src);
    Ok(())
}

/// `acc[i] = acc[i].wrapping_add(src[i])`, runtime-dispatched (see [`selected_path`]).
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn add_assign(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    add_dispatched(acc, src);
    Ok(())
}

/// `acc[i] = acc[i].wrapping_sub(src[i])`, runtime-dispatched (see [`selected_path`]).
///
/// # Errors
/// [`Error::LengthMismatch`] if the lengths differ (nothing is written).
pub fn sub_assign(acc: &mut [u64], src: &[u64]) -> Result<()> {
    check_len(acc.len(), src.len())?;
    sub_dispatched(acc, src);
    Ok(())
}

/// `acc[i] += srcs[0][i] + srcs[1][i] + ...` (wrapping), runtime-dispatched.
///
/// Reads every source once and writes `acc` once per group of four sources instead of once per
/// source, which saves memory bandwidth when many shares are summed.
///
/// # Errors
/// [`Error::LengthMismatch`] if any source's length differs from `acc`'s (nothing is written).
pub fn add_assign_many(acc: &mut [u64], srcs: &[&[u64]]) -> Result<()> {
    for src in srcs {
        check_len(acc.len(), src.len())?;
    }
    let mut groups = srcs.chunks_exact(4);
    for g in &mut groups {
        add4_dispatched(acc, g[0], g[1], g[2], g[3]);
    }
    for src in groups.remainder() {
        add_dispatched(acc, src);
    }
    Ok(())
}

/// `acc[i] += u64::from_le_bytes(src[8i..8i + 8])` (wrapping), runtime-dispatched: adds a full
/// share straight from its wire bytes, with no intermediate vector.
///
/// # Errors
/// [`Error::LengthMismatch`] unless `src` is exactly `8 · acc.len()` bytes (nothing is written).
pub fn add_assign_le_bytes(acc: &mut [u64], src: &[u8]) -> Result<()> {
    let (words, tail) = src.as_chunks::<8>();
    if !tail.is_empty() {
        return Err(Error::LengthMismatch {
            what: "kernel source bytes",
            expected: acc.len().saturating_mul(8),
            actual: src.len(),
        });
    }
    check_len(acc.len(), words.len())?;
    add_le_dispatched(acc, words);
    Ok(())
}

/// `acc[i] -= u64::from_le_bytes(src[8i..8i + 8])` (wrapping), runtime-dispatched.
///
/// # Errors
/// As [`add_assign_le_bytes`].
pub fn sub_assign_le_bytes(acc: &mut [u64], src: &[u8]) -> Result<()> {
    let (words, tail) = src.as_chunks::<8>();
    if !tail.is_empty() {
        return Err(Error::LengthMismatch {
            what: "kernel source bytes",
            expected: acc.len().saturating_mul(8),
            actual: src.len(),
        });
    }
    check_len(acc.len(), words.len())?;
    sub_le_dispatched(acc, words);
    Ok(())
}

// The `wide` loops (baseline target).

#[inline]
fn add_lanes(acc: &mut [u64], src: &[u64]) {
    let (acc4, acc_tail) = acc.as_chunks_mut::<4>();
    let (src4, src_tail) = src.as_chunks::<4>();
    for (a, s) in acc4.iter_mut().zip(src4) {
        *a = (u64x4::new(*a) + u64x4::new(*s)).to_array();
    }
    for (a, s) in acc_tail.iter_mut().zip(src_tail) {
        *a = a.wrapping_add(*s);
    }
}

#[inline]
fn sub_lanes(acc: &mut [u64], src: &[u64]) {
    let (acc4, acc_tail) = acc.as_chunks_mut::<4>();
    let (src4, src_tail) = src.as_chunks::<4>();
    for (a, s) in acc4.iter_mut().zip(src4) {
        *a = (u64x4::new(*a) - u64x4::new(*s)).to_array();
    }
    for (a, s) in acc_tail.iter_mut().zip(src_tail) {
        *a = a.wrapping_sub(*s);
    }
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn add_dispatched(acc: &mut [u64], src: &[u64]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_add(*s);
    }
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn sub_dispatched(acc: &mut [u64], src: &[u64]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_sub(*s);
    }
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn add_le_dispatched(acc: &mut [u64], src: &[[u8; 8]]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_add(u64::from_le_bytes(*s));
    }
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn sub_le_dispatched(acc: &mut [u64], src: &[[u8; 8]]) {
    for (a, s) in acc.iter_mut().zip(src) {
        *a = a.wrapping_sub(u64::from_le_bytes(*s));
    }
}

#[multiversion(targets("x86_64+avx512f", "x86_64+avx2"))]
fn add4_dispatched(acc: &mut [u64], s0: &[u64], s1: &[u64], s2: &[u64], s3: &[u64]) {
    for ((((a, x0), x1), x2), x3) in acc.iter_mut().zip(s0).zip(s1).zip(s2).zip(s3) {
        *a = a
            .wrapping_add(*x0)
            .wrapping_add(*x1)
            .wrapping_add(*x2)
            .wrapping_add(*x3);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn byte_kernels_match_the_word_kernels() {
        for len in [0usize, 1, 3, 8, 33, 1000] {
            let acc0: Vec<u64> = (0..len as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect();
            let src: Vec<u64> = (0..len as u64).map(|i| u64::MAX - i * 977).collect();
            let bytes: Vec<u8> = src.iter().flat_map(|w| w.to_le_bytes()).collect();
            let (mut a, mut b) = (acc0.clone(), acc0.clone());
            super::add_assign_le_bytes(&mut a, &bytes).unwrap();
            super::add_assign_scalar(&mut b, &src).unwrap();
            assert_eq!(a, b, "len {len}");
            super::sub_assign_le_bytes(&mut a, &bytes).unwrap();
            assert_eq!(a, acc0, "len {len}");
        }
        let mut acc = vec![0u64; 2];
        assert!(super::add_assign_le_bytes(&mut acc, &[0u8; 15]).is_err());
        assert!(super::add_assign_le_bytes(&mut acc, &[0u8; 24]).is_err());
        assert!(super::sub_assign_le_bytes(&mut acc, &[0u8; 17]).is_err());
        assert_eq!(acc, [0, 0]);
    }

    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    use super::*;

    type Kernel = fn(&mut [u64], &[u64]) -> Result<()>;

    /// Random words with the extremes mixed in, so carries out of bit 63 are exercised.
    fn words(rng: &mut ChaCha20Rng, len: usize) -> Vec<u64> {
        (0..len)
            .map(|i| match i % 5 {
                0 => u64::MAX - (rng.next_u64() & 3),
                1 => 1u64 << 63,
                _ => rng.next_u64(),
            })
            .collect()
    }

    /// Checks `kernel` against element-wise u128 arithmetic mod 2^64 for every length 0..=257 at
    /// every start offset 0..8 of both buffers, and that it leaves the bytes around the slice alone.
    fn check_against_u128(kernel: Kernel, subtract: bool) {
        let mut rng = ChaCha20Rng::seed_from_u64(0x6b65726e);
        for len in 0..=257usize {
            for (acc_off, src_off) in (0..8).map(|o| (o, (o * 3) % 8)) {
                let acc_buf = words(&mut rng, len + 16);
                let src_buf = words(&mut rng, len + 16);
                let mut got = acc_buf.clone();
                kernel(
                    &mut got[acc_off..acc_off + len],
                    &src_buf[src_off..src_off + len],
                )
                .unwrap();
                let mut want = acc_buf.clone();
                for i in 0..len {
                    let (a, s) = (want[acc_off + i] as u128, src_buf[src_off + i] as u128);
                    let r = if subtract {
                        a + (1u128 << 64) - s
                    } else {
                        a + s
                    };
                    want[acc_off + i] = (r % (1u128 << 64)) as u64;
                }
                assert_eq!(got, want, "len {len} offsets {acc_off}/{src_off}");
            }
        }
    }

    #[test]
    fn every_add_kernel_matches_the_reference_at_all_lengths_and_offsets() {
        check_against_u128(add_assign_scalar, false);
        check_against_u128(add_assign_wide, false);
        check_against_u128(add_assign, false);
        check_against_u128(|a, s| add_assign_many(a, &[s]), false);
    }

    #[test]
    fn every_sub_kernel_matches_the_reference_at_all_lengths_and_offsets() {
        check_against_u128(sub_assign_scalar, true);
        check_against_u128(sub_assign_wide, true);
        check_against_u128(sub_assign, true);
    }

    #[test]
    fn add_many_equals_repeated_adds_for_every_source_count() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for n_src in 0..=9 {
            for len in [0usize, 1, 7, 64, 257] {
                let acc0 = words(&mut rng, len);
                let srcs: Vec<Vec<u64>> = (0..n_src).map(|_| words(&mut rng, len)).collect();
                let refs: Vec<&[u64]> = srcs.iter().map(Vec::as_slice).collect();
                let mut got = acc0.clone();
                add_assign_many(&mut got, &refs).unwrap();
                let mut want = acc0;
                for s in &srcs {
                    add_assign_scalar(&mut want, s).unwrap();
                }
                assert_eq!(got, want, "{n_src} sources, len {len}");
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_errors_and_write_nothing() {
        let kernels: [Kernel; 6] = [
            add_assign_scalar,
            add_assign_wide,
            add_assign,
            sub_assign_scalar,
            sub_assign_wide,
            sub_assign,
        ];
        for kernel in kernels {
            let mut acc = [1u64, 2, 3];
            let err = kernel(&mut acc, &[1, 1]).unwrap_err();
            assert!(matches!(
                err,
                Error::LengthMismatch {
                    expected: 3,
                    actual: 2,
                    ..
                }
            ));
            assert_eq!(acc, [1, 2, 3]);
        }
        let mut acc = [1u64, 2, 3];
        assert!(add_assign_many(&mut acc, &[&[1, 1, 1], &[1, 1, 1], &[1]]).is_err());
        assert_eq!(acc, [1, 2, 3]);
    }

    #[test]
    fn selected_path_matches_the_cpu() {
        let path = selected_path();
        #[cfg(target_arch = "x86_64")]
        {
            let want = if std::arch::is_x86_feature_detected!("avx512f") {
                KernelPath::Avx512f
            } else if std::arch::is_x86_feature_detected!("avx2") {
                KernelPath::Avx2
            } else {
                KernelPath::Portable
            };
            assert_eq!(path, want);
        }
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(path, KernelPath::Portable);
        assert!(!path.name().is_empty());
    }
}
