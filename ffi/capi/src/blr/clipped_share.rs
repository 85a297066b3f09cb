//! How much the projection clipped: the fit can release, at a share of its budget, the shares
//! of records whose y or some x the bounds clipped. Every posterior of a projected fit is the
//! posterior of the clipped records' regression; these shares say how far that is from the raw
//! data's.

use crate::blr::config::{dpd_blr_config, update};
use crate::blr::fit::dpd_blr_model;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::handle_ref;
use crate::ptr::write_out;
use crate::status::dpd_status;

/// Spends `budget_share` ∈ [0, 1) of the fit's budget on releasing the shares of clipped
/// records (read them with `dpd_blr_model_clipped_share`); 0, the default, releases none. The
/// statistics round gets what the std round and this leave, so with a DP std round the two
/// shares must add up to less than 1 (checked when fitting). Needs projection on; on any error
/// the settings are unchanged.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_clipped_share(
    config: *mut dpd_blr_config,
    budget_share: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_clipped_share", config, |c| {
            if !(0.0..1.0).contains(&budget_share) {
                return Err(FfiError::invalid(format!(
                    "`budget_share` = {budget_share}: must lie in [0, 1)"
                )));
            }
            let p = c.projection.as_mut().ok_or_else(|| {
                FfiError::invalid(
                    "projection is off: turn it on with dpd_blr_config_set_projection(config, 1) \
                     first",
                )
            })?;
            p.clipped_share_budget = budget_share;
            Ok(())
        })
    }
}

/// Writes the released share of records whose y the bounds clipped (`*out_y`), of records with
/// some clipped x (`*out_x`), and the standard deviation of the noise on each share
/// (`*out_sd`); any pointer may be NULL. The shares are noisy and clamped to [0, 1].
/// `DPD_ERR_INVALID_STATE` when the fit released none (no projection, or
/// `dpd_blr_config_set_clipped_share` not set above 0 before fitting).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_clipped_share(
    model: *const dpd_blr_model,
    out_y: *mut f64,
    out_x: *mut f64,
    out_sd: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_blr_model_clipped_share", || -> FfiResult<()> {
        // SAFETY: header contract; out-pointers are written only when non-NULL.
        unsafe {
            let model = handle_ref(model, "model")?;
            let share = model.inner.clipped.ok_or_else(|| {
                FfiError::new(
                    dpd_status::DPD_ERR_INVALID_STATE,
                    "the fit released no clipped shares: set \
                     dpd_blr_config_set_clipped_share(config, share > 0) with projection on \
                     before fitting",
                )
            })?;
            for (out, value, name) in [
                (out_y, share.y, "out_y"),
                (out_x, share.x, "out_x"),
                (out_sd, share.share_sd, "out_sd"),
            ] {
                if !out.is_null() {
                    write_out(out, value, name)?;
                }
            }
        }
        Ok(())
    })
}
