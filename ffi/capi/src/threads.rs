//! Capping the number of worker threads.
//!
//! dpdist parallelises with rayon's global pool. A host that must stay within a core budget
//! (an R session, a hospital server) calls `dpd_set_num_threads` once, before any other dpdist
//! computation; the first parallel call otherwise builds the pool with one thread per core
//! (or `RAYON_NUM_THREADS` if set).

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::ptr::write_out;
use crate::status::dpd_status;

/// The most worker threads `dpd_set_num_threads` accepts: far above any core count, far below
/// what would exhaust the process's threads or stacks.
pub const DPD_MAX_THREADS: usize = 4096;

/// Builds the global worker pool with `n` threads (`n = 0`: one per core; at most
/// `DPD_MAX_THREADS`, else `DPD_ERR_INVALID_ARGUMENT`).
///
/// Must be called before any other dpdist call that computes; the pool can be built only once
/// per process. Returns `DPD_ERR_ALREADY_INITIALIZED` (changing nothing) if it already exists,
/// because an earlier call built it, an earlier computation did, or another rayon user in the
/// same process did.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_set_num_threads(n: usize) -> dpd_status {
    ffi_entry("dpd_set_num_threads", || {
        if n > DPD_MAX_THREADS {
            return Err(FfiError::invalid(format!(
                "`n` = {n} threads: at most DPD_MAX_THREADS = {DPD_MAX_THREADS}"
            )));
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .map_err(|e| {
                FfiError::new(
                    dpd_status::DPD_ERR_ALREADY_INITIALIZED,
                    format!(
                        "the thread pool is already built with {} threads; call \
                         dpd_set_num_threads before any other dpdist computation ({e})",
                        rayon::current_num_threads()
                    ),
                )
            })
    })
}

/// Writes the number of worker threads dpdist uses (building the default pool if none exists
/// yet, after which `dpd_set_num_threads` fails).
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_num_threads(out: *mut usize) -> dpd_status {
    ffi_entry("dpd_num_threads", || -> FfiResult<()> {
        // SAFETY: header contract for `out`.
        unsafe { write_out(out, rayon::current_num_threads(), "out") }
    })
}
