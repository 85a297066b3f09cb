//! Where the standard deviations that scale the projection thresholds come from (Alg. 2 step 2):
//! a DP round (pooled or per-dimension σ, with an explicit share of the budget) or values that
//! are public by construction.

use blr::{ProjectionConfig, StdSource};
use projection::marginal_std::StdMode;

use crate::blr::config::{dpd_blr_config, update};
use crate::error::{FfiError, FfiResult};
use crate::ptr::slice_in;
use crate::status::dpd_status;

/// Which standard deviations the DP std round estimates.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dpd_blr_std_mode {
    /// One σ shared by all x dimensions (2 released numbers; the default).
    DPD_BLR_STD_POOLED = 0,
    /// One σ per x dimension (d + 1 released numbers; the DCA paper's choice).
    DPD_BLR_STD_PER_DIMENSION = 1,
}

fn std_mode(mode: u32) -> FfiResult<StdMode> {
    use dpd_blr_std_mode as M;
    match mode {
        v if v == M::DPD_BLR_STD_POOLED as u32 => Ok(StdMode::PooledX),
        v if v == M::DPD_BLR_STD_PER_DIMENSION as u32 => Ok(StdMode::PerDimension),
        v => Err(FfiError::invalid(format!(
            "`mode` = {v}: use a DPD_BLR_STD_* value (0..=1)"
        ))),
    }
}

/// The projection settings to change; an error when projection is off, since the standard
/// deviations only scale its thresholds.
fn projection_of(config: &mut blr::FitConfig) -> FfiResult<&mut ProjectionConfig> {
    config.projection.as_mut().ok_or_else(|| {
        FfiError::invalid(
            "projection is off: turn it on with dpd_blr_config_set_projection(config, 1) first",
        )
    })
}

/// Estimates the standard deviations with the DP std round: `mode` a `dpd_blr_std_mode`, and
/// `budget_share` ∈ (0, 1) the fraction of the fit's budget it spends (the statistics round gets
/// the rest). The default is `DPD_BLR_STD_POOLED` with share 0.1. Needs projection on; on any
/// error the settings are unchanged.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_dp_std(
    config: *mut dpd_blr_config,
    mode: u32,
    budget_share: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_dp_std", config, |c| {
            let mode = std_mode(mode)?;
            if !(budget_share > 0.0 && budget_share < 1.0) {
                return Err(FfiError::invalid(format!(
                    "`budget_share` = {budget_share}: must lie in (0, 1)"
                )));
            }
            let p = projection_of(c)?;
            p.std_source = StdSource::DpRound;
            p.std_mode = mode;
            p.std_share = budget_share;
            Ok(())
        })
    }
}

/// Uses standard deviations that are public by construction (`x_std[0..d]` per x dimension, d
/// as given to `dpd_blr_config_new`, and `y_std`), e.g. after a preprocessing that fixes them
/// (unit-norm rows have pooled σ = sqrt(1/d); a standardised y has σ = 1). No budget is spent
/// on them, so they must never be computed from the private data. All must be finite and > 0.
/// Needs projection on; on any error the settings are unchanged.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`; `x_std` NULL only with `d == 0`, else `d` readable doubles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_public_std(
    config: *mut dpd_blr_config,
    x_std: *const f64,
    d: usize,
    y_std: f64,
) -> dpd_status {
    // SAFETY: header contract for `(x_std, d)`; a NULL/length error is reported by `update`.
    let x_std = unsafe { slice_in(x_std, d, "x_std") };
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_public_std", config, |c| {
            let x_std = x_std?;
            if d != c.assumed_x.len() {
                return Err(FfiError::invalid(format!(
                    "{d} x standard deviations for {} dimensions",
                    c.assumed_x.len()
                )));
            }
            let bad = x_std
                .iter()
                .chain(std::iter::once(&y_std))
                .position(|s| !(s.is_finite() && *s > 0.0));
            if let Some(i) = bad {
                let what = if i < d {
                    format!("x_std[{i}] = {}", x_std[i])
                } else {
                    format!("y_std = {y_std}")
                };
                return Err(FfiError::invalid(format!(
                    "{what}: standard deviations must be finite and > 0"
                )));
            }
            let p = projection_of(c)?;
            p.std_source = StdSource::Public {
                x: x_std.to_vec(),
                y: y_std,
            };
            Ok(())
        })
    }
}
