//! The round ids a party has taken part in (`fixedpoint_shares::RoundLedger`): a node or
//! aggregator process admits every round through its ledger, so a round id is never reused
//! with another configuration.

use fixedpoint_shares::{Admission, RoundLedger};

use crate::dca::round::dpd_round_config;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

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
        let admission = ledger.inner.admit(&config.inner)?;
        if !out_new.is_null() {
            let new = u32::from(admission == Admission::New);
            // SAFETY: non-NULL, writable by the header contract.
            unsafe { write_out(out_new, new, "out_new") }?;
        }
        Ok(())
    })
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
