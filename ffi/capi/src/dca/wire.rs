//! Inspecting wire bytes without a node: lets a router or a log see what a message is.

use fixedpoint_shares::wire::{PayloadView, ShareView};

use crate::dca::round::dpd_share_mode;
use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::ptr::{check_out, slice_in, write_out};
use crate::status::dpd_status;

/// The header fields of a share message.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct dpd_wire_header {
    /// Round id.
    pub round: u64,
    /// Sending client's id.
    pub client: u64,
    /// The sharding attempt (the same in all M messages of one `dpd_client_shard`).
    pub shard: u64,
    /// Vector length d.
    pub dim: u64,
    /// Receiving compute node.
    pub node: u32,
    /// Fixed-point fractional bits.
    pub frac_bits: u32,
    /// Payload kind: `DPD_SHARE_MODE_FULL` (a d-vector) or `DPD_SHARE_MODE_SEED` (a 16-byte seed).
    pub kind: dpd_share_mode,
}

/// Parses untrusted bytes as a share message (every field and the exact length are checked;
/// never crashes; nothing is allocated) and writes its header. No round is needed: this is for
/// routers and logs, a node checks the message against its round when absorbing it.
/// `DPD_ERR_MALFORMED` with a precise message when the bytes are not a valid message.
///
/// # Safety
/// `bytes` NULL with `len == 0` or `len` readable bytes; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_wire_inspect(
    bytes: *const u8,
    len: usize,
    out: *mut dpd_wire_header,
) -> dpd_status {
    ffi_entry("dpd_wire_inspect", || -> FfiResult<()> {
        check_out(out, "out")?;
        // SAFETY: header contract for `(bytes, len)`.
        let message = ShareView::inspect(unsafe { slice_in(bytes, len, "bytes") }?)?;
        let header = dpd_wire_header {
            round: message.round.0,
            client: message.client.0,
            shard: message.shard.0,
            dim: message.dim as u64,
            node: u32::from(message.node.0),
            frac_bits: message.frac_bits,
            kind: match message.payload {
                PayloadView::Seed(_) => dpd_share_mode::DPD_SHARE_MODE_SEED,
                PayloadView::Words(_) | PayloadView::Bytes(_) => {
                    dpd_share_mode::DPD_SHARE_MODE_FULL
                }
            },
        };
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, header, "out") }
    })
}
