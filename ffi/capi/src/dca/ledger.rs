//! The round ids a party has taken part in (`fixedpoint_shares::RoundLedger`): a node or
//! aggregator process admits every round through its ledger, so a round id is never reused
//! with another configuration.

use fixedpoint_shares::{Admission, ConfigDigest, RoundId, RoundLedger};

use crate::dca::round::dpd_round_config;
use crate::error::FfiError;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, slice_in, slice_out, write_out};
use crate::status::dpd_status;

/// Bytes of one configuration digest in `dpd_round_ledger_entries` / `_admit_digest`.
pub const DPD_CONFIG_DIGEST_LEN: usize = 16;

/// Round id → configuration digest of the rounds a party has admitted.
pub struct dpd_round_ledger {
    pub(crate) inner: RoundLedger,
}

/// Creates an empty ledger.
///
/// # Safety
/// `out` NULL (→ `DPD_ERR_NULL_POINTER`) or a writable `dpd_round_ledger*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_ledger_new(out: *mut *mut dpd_round_ledger) -> dpd_status {
    ffi_entry("dpd_round_ledger_new", || {
        check_out(out, "out")?;
        let handle = into_handle(dpd_round_ledger {
            inner: RoundLedger::new(),
        });
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Admits the round of `config`: records its id with its configuration, or confirms it is the
/// round seen before under that id. `*out_new` (may be NULL) is 1 for a round id not seen
/// before, 0 for the same round again. A round id seen with another configuration →
/// `DPD_ERR_WRONG_ROUND` naming both digests; the ledger is unchanged. `dpd_node_new_admitted`
/// and `dpd_aggregator_new_admitted` admit and create in one call.
///
/// # Safety
/// `ledger` NULL or a live handle not used concurrently; `config` NULL or a live handle;
/// `out_new` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_ledger_admit(
    ledger: *mut dpd_round_ledger,
    config: *const dpd_round_config,
    out_new: *mut u32,
) -> dpd_status {
    ffi_entry("dpd_round_ledger_admit", || {
        // SAFETY: header contract for `ledger` and `config`.
        let (ledger, config) =
            unsafe { (handle_mut(ledger, "ledger")?, handle_ref(config, "config")?) };
        let admission = ledger.inner.admit(config.unverified()?)?;
        // SAFETY: header contract for `out_new`.
        unsafe { report_admission(admission, out_new) }
    })
}

/// The rounds `ledger` has admitted, for storage, in increasing round id: `out_rounds[i]` and
/// its configuration digest in `out_digests[16·i .. 16·i + 16]`, for at most `out_cap` entries
/// (`out_digests` holds `16·out_cap` bytes). Query-size pattern: fewer than the admitted
/// rounds → `DPD_ERR_BUFFER_TOO_SMALL` with `*out_len` = the number needed and nothing
/// written; `out_cap` 0 with both arrays NULL asks for the number alone. A host that keeps
/// these pairs (a file, a table) restores the ledger after a restart with
/// `dpd_round_ledger_admit_digest`, so that a restart does not forget which ids were used.
///
/// # Safety
/// `ledger` NULL or a live handle; `out_rounds` NULL or `out_cap` writable `uint64_t`s;
/// `out_digests` NULL or `16·out_cap` writable bytes; `out_len` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_ledger_entries(
    ledger: *const dpd_round_ledger,
    out_rounds: *mut u64,
    out_digests: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_round_ledger_entries", || {
        // SAFETY: header contract for `ledger`.
        let ledger = unsafe { handle_ref(ledger, "ledger") }?;
        let seen = ledger.inner.seen();
        // SAFETY: `out_len` NULL (refused) or writable by the header contract.
        unsafe { reserve_array(seen.len(), out_cap, out_len, "out_rounds") }?;
        let digest_bytes = out_cap.checked_mul(DPD_CONFIG_DIGEST_LEN).ok_or_else(|| {
            FfiError::invalid(format!("out_cap = {out_cap} digests do not fit in memory"))
        })?;
        // SAFETY: header contract: `out_cap` and `16·out_cap` writable elements, or NULL with 0.
        let (rounds, digests) = unsafe {
            (
                slice_out(out_rounds, out_cap, "out_rounds")?,
                slice_out(out_digests, digest_bytes, "out_digests")?,
            )
        };
        for (i, (round, digest)) in seen.iter().enumerate() {
            rounds[i] = round.0;
            digests[i * DPD_CONFIG_DIGEST_LEN..(i + 1) * DPD_CONFIG_DIGEST_LEN]
                .copy_from_slice(&digest.0);
        }
        // SAFETY: checked non-NULL by `reserve_array`, writable by the header contract.
        unsafe { write_out(out_len, seen.len(), "out_len") }
    })
}

/// Admits a round by its id and 16-byte configuration digest (`digest_len` must be 16), as
/// saved from `dpd_round_ledger_entries`: restores a ledger after a restart. Otherwise as
/// `dpd_round_ledger_admit` (`*out_new`, may be NULL; another digest under a seen id →
/// `DPD_ERR_WRONG_ROUND`, the ledger unchanged).
///
/// # Safety
/// `ledger` NULL or a live handle not used concurrently; `digest` NULL or `digest_len`
/// readable bytes; `out_new` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_ledger_admit_digest(
    ledger: *mut dpd_round_ledger,
    round: u64,
    digest: *const u8,
    digest_len: usize,
    out_new: *mut u32,
) -> dpd_status {
    ffi_entry("dpd_round_ledger_admit_digest", || {
        // SAFETY: header contract for `ledger` and `digest`.
        let (ledger, digest) = unsafe {
            (
                handle_mut(ledger, "ledger")?,
                slice_in(digest, digest_len, "digest")?,
            )
        };
        let digest: [u8; DPD_CONFIG_DIGEST_LEN] = digest.try_into().map_err(|_| {
            FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!("digest_len = {digest_len}, a configuration digest has 16 bytes"),
            )
        })?;
        let admission = ledger
            .inner
            .admit_digest(RoundId(round), ConfigDigest(digest))?;
        // SAFETY: header contract for `out_new`.
        unsafe { report_admission(admission, out_new) }
    })
}

/// `*out_new` = 1 for a new round, 0 for the same round again; nothing for a NULL `out_new`.
///
/// # Safety
/// `out_new` NULL or writable.
unsafe fn report_admission(admission: Admission, out_new: *mut u32) -> crate::error::FfiResult<()> {
    if out_new.is_null() {
        return Ok(());
    }
    // SAFETY: non-NULL, writable by the caller's contract.
    unsafe { write_out(out_new, u32::from(admission == Admission::New), "out_new") }
}

/// Frees a ledger; NULL is a no-op.
///
/// # Safety
/// `ledger` must be NULL or a handle from `dpd_round_ledger_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_ledger_free(ledger: *mut dpd_round_ledger) {
    // SAFETY: header contract.
    unsafe { free_handle(ledger) }
}
