//! Where randomness comes from at the ABI: a `dpd_rng` handle wrapping
//! `dp_noise::rng::RngSource`.
//!
//! Production code creates it with `dpd_rng_new_os` (ChaCha20 keyed from the OS CSPRNG). The
//! only way to get a reproducible generator is `dpd_rng_new_insecure_fixed_seed`, whose name
//! says what it is: whoever knows the seed can recompute every mask and every noise value.

use dp_noise::rng::RngSource;

use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, into_handle};
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// A source of randomness. Every call that consumes randomness draws a fresh, independent
/// child stream from it; with a fixed seed the sequence of calls is reproducible.
pub struct dpd_rng {
    source: RngSource,
    next_stream: u64,
}

impl dpd_rng {
    /// The next independent child source (Os stays Os; a fixed seed derives a new fixed seed).
    pub(crate) fn next_source(&mut self) -> RngSource {
        let child = self.source.derive(self.next_stream);
        self.next_stream = self.next_stream.wrapping_add(1);
        child
    }

    /// Runs `f` on the next child source and moves past it only when `f` succeeds, so a call
    /// refused for its inputs leaves the generator where it was.
    pub(crate) fn on_next_source<T, E>(
        &mut self,
        f: impl FnOnce(&RngSource) -> Result<T, E>,
    ) -> Result<T, E> {
        let value = f(&self.source.derive(self.next_stream))?;
        self.next_stream = self.next_stream.wrapping_add(1);
        Ok(value)
    }
}

fn new_rng(source: RngSource, out: *mut *mut dpd_rng) -> FfiResult<()> {
    check_out(out, "out")?;
    let handle = into_handle(dpd_rng {
        source,
        next_stream: 0,
    });
    // SAFETY: `out` is non-NULL (checked) and, by the header contract, writable.
    unsafe { write_out(out, handle, "out") }
}

/// Creates a generator keyed from the operating system's CSPRNG — the one to use in
/// production. Free it with `dpd_rng_free`.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_rng*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rng_new_os(out: *mut *mut dpd_rng) -> dpd_status {
    ffi_entry("dpd_rng_new_os", || new_rng(RngSource::Os, out))
}

/// Creates a deterministic generator from `seed`. INSECURE: for tests and reproducible
/// experiments only — anyone who knows the seed can unmask every share and remove every noise
/// value drawn from it. Free it with `dpd_rng_free`.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_rng*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rng_new_insecure_fixed_seed(
    seed: u64,
    out: *mut *mut dpd_rng,
) -> dpd_status {
    ffi_entry("dpd_rng_new_insecure_fixed_seed", || {
        new_rng(RngSource::InsecureFixedSeed(seed), out)
    })
}

/// Frees a generator; NULL is a no-op.
///
/// # Safety
/// `rng` must be NULL or a handle from `dpd_rng_new_*` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rng_free(rng: *mut dpd_rng) {
    // SAFETY: header contract.
    unsafe { free_handle(rng) }
}
