//! The wrapping-add kernels over u64 lanes (`fixedpoint_shares::kernels`), exposed for
//! benchmarking from other languages.

use std::ffi::c_char;

use fixedpoint_shares::kernels::{self, KernelPath};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::ptr::{slice_in, slice_out};
use crate::status::dpd_status;

/// The implementation the dispatched kernels run on this CPU.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_kernel_path {
    /// The build's baseline target (SSE2 on x86_64).
    DPD_KERNEL_PATH_PORTABLE = 0,
    /// x86_64 AVX2.
    DPD_KERNEL_PATH_AVX2 = 1,
    /// x86_64 AVX-512F.
    DPD_KERNEL_PATH_AVX512F = 2,
}

/// Which implementation `dpd_wrapping_add_u64` / `dpd_wrapping_sub_u64` use on this CPU.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_kernel_selected_path() -> dpd_kernel_path {
    // Detection cannot panic, but nothing may cross the ABI: fall back to the baseline name.
    std::panic::catch_unwind(|| match kernels::selected_path() {
        KernelPath::Avx512f => dpd_kernel_path::DPD_KERNEL_PATH_AVX512F,
        KernelPath::Avx2 => dpd_kernel_path::DPD_KERNEL_PATH_AVX2,
        _ => dpd_kernel_path::DPD_KERNEL_PATH_PORTABLE,
    })
    .unwrap_or(dpd_kernel_path::DPD_KERNEL_PATH_PORTABLE)
}

/// A short static name ("portable", "avx2", "avx512f") for a `dpd_kernel_path` value;
/// "unknown" for any other number. Never free it.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_kernel_path_name(path: u32) -> *const c_char {
    let name = match path {
        0 => c"portable",
        1 => c"avx2",
        2 => c"avx512f",
        _ => c"unknown",
    };
    name.as_ptr()
}

type Kernel = fn(&mut [u64], &[u64]) -> fixedpoint_shares::Result<()>;

/// Runs `kernel` on `acc[0..len]` and `src[0..len]` after checking they do not overlap (Rust
/// may not hold `&mut` and `&` to the same memory).
///
/// # Safety
/// `acc`/`src` NULL only with `len == 0`, else `len` writable/readable `uint64_t`.
unsafe fn run(
    name: &str,
    kernel: Kernel,
    acc: *mut u64,
    src: *const u64,
    len: usize,
) -> dpd_status {
    ffi_entry(name, || -> FfiResult<()> {
        if len > 0 && !acc.is_null() && !src.is_null() {
            let (a, s) = (acc as usize, src as usize);
            let bytes = len.saturating_mul(size_of::<u64>());
            if a < s.saturating_add(bytes) && s < a.saturating_add(bytes) {
                return Err(FfiError::invalid("`acc` and `src` overlap"));
            }
        }
        // SAFETY: header contract; the two ranges are disjoint (checked above).
        let (acc, src) = unsafe { (slice_out(acc, len, "acc")?, slice_in(src, len, "src")?) };
        kernel(acc, src)?;
        Ok(())
    })
}

/// `acc[i] = acc[i] + src[i] mod 2^64` for i < len, on the fastest path this CPU supports
/// (see `dpd_kernel_selected_path`). `acc` and `src` must not overlap
/// (→ `DPD_ERR_INVALID_ARGUMENT`).
///
/// # Safety
/// `acc` must be NULL with `len == 0` or point to `len` writable `uint64_t`; `src` likewise
/// readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_wrapping_add_u64(
    acc: *mut u64,
    src: *const u64,
    len: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe { run("dpd_wrapping_add_u64", kernels::add_assign, acc, src, len) }
}

/// As `dpd_wrapping_add_u64`, one element at a time (the reference implementation).
///
/// # Safety
/// As `dpd_wrapping_add_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_wrapping_add_u64_scalar(
    acc: *mut u64,
    src: *const u64,
    len: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        run(
            "dpd_wrapping_add_u64_scalar",
            kernels::add_assign_scalar,
            acc,
            src,
            len,
        )
    }
}

/// As `dpd_wrapping_add_u64`, with portable 4-lane SIMD (`wide::u64x4`) and no dispatch.
///
/// # Safety
/// As `dpd_wrapping_add_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_wrapping_add_u64_wide(
    acc: *mut u64,
    src: *const u64,
    len: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        run(
            "dpd_wrapping_add_u64_wide",
            kernels::add_assign_wide,
            acc,
            src,
            len,
        )
    }
}

/// `acc[i] = acc[i] − src[i] mod 2^64` for i < len (dispatched like `dpd_wrapping_add_u64`).
///
/// # Safety
/// As `dpd_wrapping_add_u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_wrapping_sub_u64(
    acc: *mut u64,
    src: *const u64,
    len: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe { run("dpd_wrapping_sub_u64", kernels::sub_assign, acc, src, len) }
}
