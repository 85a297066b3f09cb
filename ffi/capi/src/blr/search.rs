//! The threshold search of Alg. 2 step 3 on its own, for hosts that run the std round
//! themselves (or have public standard deviations): given σ̂ and the fit settings, choose the
//! projection multipliers (ω_x, ω_y) on auxiliary data. Touches only synthetic data, so it
//! costs no privacy.

use blr::{ErrorMeasure, SearchTarget};
use projection::search::SearchConfig;
use rand_core::RngCore;

use crate::alloc::copied;
use crate::blr::config::dpd_blr_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref};
use crate::ptr::{check_out, slice_in, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// What the threshold search minimises on the auxiliary data.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_blr_error_measure {
    /// Mean absolute error (DCA paper).
    DPD_BLR_ERROR_MAE = 0,
    /// Root mean squared error.
    DPD_BLR_ERROR_RMSE = 1,
    /// Minus Spearman's rank correlation (robust LR paper).
    DPD_BLR_ERROR_SPEARMAN = 2,
}

fn error_measure(measure: u32) -> FfiResult<ErrorMeasure> {
    use dpd_blr_error_measure as M;
    match measure {
        v if v == M::DPD_BLR_ERROR_MAE as u32 => Ok(ErrorMeasure::Mae),
        v if v == M::DPD_BLR_ERROR_RMSE as u32 => Ok(ErrorMeasure::Rmse),
        v if v == M::DPD_BLR_ERROR_SPEARMAN as u32 => Ok(ErrorMeasure::Spearman),
        v => Err(FfiError::invalid(format!(
            "`measure` = {v}: use a DPD_BLR_ERROR_* value (0..=2)"
        ))),
    }
}

/// Chooses the projection multipliers for a statistics release of n records with standard
/// deviations `sigma_x[0..d]` (per x dimension) and `sigma_y`, imitating the release `config`
/// describes (mechanism, aggregation, prior, and the statistics round's share of the budget as
/// `dpd_blr_fit` would spend it: (1 − 0.1) of it with projection on, all of it with projection
/// off), minimising `measure` (`DPD_BLR_ERROR_*`) over the DCA paper's grid (20 points in
/// [0.1, 2.1] each, 10 auxiliary data sets, mean error). The clipping bounds are then
/// B_j = ω_x·σ_j and B_y = ω_y·σ_y.
///
/// The auxiliary data are seeded from `rng` (the seed is not secret: nothing private is drawn).
/// Writes ω_x, ω_y and the chosen point's mean error (`out_error` may be NULL) only on success.
///
/// # Safety
/// `sigma_x` NULL only with `d == 0`, else `d` readable doubles; `config`, `rng` NULL (→ error)
/// or live handles (`rng` not used concurrently); `out_omega_x`, `out_omega_y` NULL (→ error)
/// or writable; `out_error` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The σ estimates, the settings, randomness, results.
pub unsafe extern "C" fn dpd_blr_search_thresholds(
    sigma_x: *const f64,
    d: usize,
    sigma_y: f64,
    n: usize,
    config: *const dpd_blr_config,
    measure: u32,
    rng: *mut dpd_rng,
    out_omega_x: *mut f64,
    out_omega_y: *mut f64,
    out_error: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_blr_search_thresholds", || {
        check_out(out_omega_x, "out_omega_x")?;
        check_out(out_omega_y, "out_omega_y")?;
        // SAFETY: header contract for the array and the handles.
        let (sigma_x, config, rng) = unsafe {
            (
                slice_in(sigma_x, d, "sigma_x")?,
                handle_ref(config, "config")?,
                handle_mut(rng, "rng")?,
            )
        };
        let c = &config.inner;
        if c.assumed_x.len() != d {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!(
                    "`sigma_x` has {d} values, the config's assumed bounds {}",
                    c.assumed_x.len()
                ),
            ));
        }
        // The search reports these as invalid parameters; the ABI's convention is NON_FINITE.
        if let Some(j) = sigma_x.iter().position(|v| !v.is_finite()) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_NON_FINITE,
                format!("sigma_x[{j}] = {} is not finite", sigma_x[j]),
            ));
        }
        if !sigma_y.is_finite() {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_NON_FINITE,
                format!("sigma_y = {sigma_y} is not finite"),
            ));
        }
        let target = SearchTarget {
            sigma_x: copied(sigma_x, "feature standard deviations")?,
            sigma_y,
            n,
            mechanism: c.mechanism,
            budget: blr::stats_round_budget(c)?,
            aggregation: c.aggregation,
            prior: c.prior,
            measure: error_measure(measure)?,
        };
        // The first word of a fresh child generator: deterministic for a fixed-seed rng.
        let search = SearchConfig::dca(rng.next_source().try_rng()?.next_u64());
        let choice = blr::search_thresholds_for(&target, &search)?;
        // SAFETY: the out-pointers are non-NULL (checked) or, for `out_error`, tested here;
        // writable by the header contract.
        unsafe {
            write_out(out_omega_x, choice.omega_x, "out_omega_x")?;
            write_out(out_omega_y, choice.omega_y, "out_omega_y")?;
            if !out_error.is_null() {
                write_out(out_error, choice.error, "out_error")?;
            }
        }
        Ok(())
    })
}
