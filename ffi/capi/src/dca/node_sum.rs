//! A compute node's output and its wire form, for the hop from a node's process to the
//! aggregator's (`fixedpoint_shares::NodeSum` with its `Encode` / `Decode`).

use fixedpoint_shares::{Decode, Encode, NodeSum};

use crate::dca::round::dpd_round_config;
use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_ref, into_handle};
use crate::ptr::{check_out, slice_in, write_array, write_out};
use crate::status::dpd_status;

/// A compute node's sum over the agreed client set, ready for the aggregator.
pub struct dpd_node_sum {
    pub(crate) inner: NodeSum,
}

/// Serialises a node sum (versioned, little-endian, magic "DPDN") into `out` (query-size
/// pattern).
///
/// # Safety
/// `sum` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL with `out_cap == 0` or
/// `out_cap` writable bytes; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_sum_to_bytes(
    sum: *const dpd_node_sum,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_node_sum_to_bytes", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `sum`.
        let sum = unsafe { handle_ref(sum, "sum") }?;
        let bytes = sum.inner.get_encoded()?;
        // SAFETY: header contract for `(out, out_cap, out_len)`.
        unsafe { write_array(&bytes, out, out_cap, out_len, "out") }
    })
}

/// Parses untrusted bytes from `dpd_node_sum_to_bytes` into a new node sum of the round
/// `config` (never crashes; sizes are taken from the round, so nothing larger than the round
/// allows is allocated). Errors: `DPD_ERR_MALFORMED` with a precise message for bad bytes,
/// `DPD_ERR_WRONG_ROUND` (another round, or the same round id under another configuration),
/// `DPD_ERR_LENGTH_MISMATCH` (another d or N).
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `bytes` NULL with `len == 0` or
/// `len` readable bytes; `out` NULL (→ error) or a writable `dpd_node_sum*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_sum_from_bytes(
    config: *const dpd_round_config,
    bytes: *const u8,
    len: usize,
    out: *mut *mut dpd_node_sum,
) -> dpd_status {
    ffi_entry("dpd_node_sum_from_bytes", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `config` and `(bytes, len)`.
        let (config, bytes) = unsafe {
            (
                handle_ref(config, "config")?,
                slice_in(bytes, len, "bytes")?,
            )
        };
        let inner = NodeSum::get_decoded(config.unverified()?, bytes)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_node_sum { inner }), "out") }
    })
}

/// Frees a node sum; NULL is a no-op.
///
/// # Safety
/// `sum` must be NULL or a handle from `dpd_node_finalize` / `dpd_node_sum_from_bytes` not
/// freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_sum_free(sum: *mut dpd_node_sum) {
    // SAFETY: header contract.
    unsafe { free_handle(sum) }
}
