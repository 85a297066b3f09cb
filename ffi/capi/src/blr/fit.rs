//! The private BLR fit (DCA paper Alg. 2, or plain SSP without projection) and the fitted
//! model.

use blr::Fit;

use crate::blr::config::dpd_blr_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// A fitted private BLR model: the posterior from the released statistics and what it cost.
pub struct dpd_blr_model {
    pub(crate) inner: Fit,
    /// The settings of the fit (what the noise-aware posterior needs to describe the noise).
    pub(crate) config: blr::FitConfig,
}

/// Checks `x` holds n·d values.
pub(crate) fn check_rows(x: &[f64], n: usize, d: usize) -> FfiResult<()> {
    if n.checked_mul(d) == Some(x.len()) {
        Ok(())
    } else {
        Err(FfiError::new(
            dpd_status::DPD_ERR_LENGTH_MISMATCH,
            format!("`x` has {} values, n·d = {n}·{d}", x.len()),
        ))
    }
}

/// Fits BLR privately on `x` (n × d, row-major, `x_len = n·d`) and `y[0..n]` with `config`;
/// the accountant charges the budget before anything is released. Randomness (noise, masks,
/// the auxiliary data of the threshold search) comes from `rng`.
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `config`, `rng` NULL (→ error) or live
/// handles (`rng` not used concurrently); `out` NULL (→ error) or a writable `dpd_blr_model*`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Data, settings, randomness, result.
pub unsafe extern "C" fn dpd_blr_fit(
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    d: usize,
    config: *const dpd_blr_config,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_blr_model,
) -> dpd_status {
    ffi_entry("dpd_blr_fit", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the arrays and handles.
        let (x, y, config, rng) = unsafe {
            (
                slice_in(x, x_len, "x")?,
                slice_in(y, n, "y")?,
                handle_ref(config, "config")?,
                handle_mut(rng, "rng")?,
            )
        };
        check_rows(x, n, d)?;
        let inner = blr::fit(x, y, n, d, &config.inner, rng.next_source())?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe {
            write_out(
                out,
                into_handle(dpd_blr_model {
                    inner,
                    config: config.inner.clone(),
                }),
                "out",
            )
        }
    })
}

/// Copies the posterior mean μ (d coefficients) into `out` (query-size pattern).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
/// rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_mean(
    model: *const dpd_blr_model,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_model_mean", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract.
        unsafe {
            let model = handle_ref(model, "model")?;
            write_array(&model.inner.posterior.mean, out, out_cap, out_len, "out")
        }
    })
}

/// Writes the privacy the accountant charged for the fit, (ε, δ); either pointer may be NULL.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_spent(
    model: *const dpd_blr_model,
    out_epsilon: *mut f64,
    out_delta: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_blr_model_spent", || -> FfiResult<()> {
        // SAFETY: header contract; out-pointers are written only when non-NULL.
        unsafe {
            let spent = handle_ref(model, "model")?.inner.spent;
            if !out_epsilon.is_null() {
                write_out(out_epsilon, spent.epsilon, "out_epsilon")?;
            }
            if !out_delta.is_null() {
                write_out(out_delta, spent.delta, "out_delta")?;
            }
        }
        Ok(())
    })
}

/// Copies the clipping bounds the statistics round used (B_j per x dimension, query-size
/// pattern into `out_bounds_x`) and B_y into `*out_bound_y` (may be NULL). With projection
/// these are ω·σ̂ from the threshold search, else the assumed bounds.
///
/// # Safety
/// As `dpd_blr_model_mean`; `out_bound_y` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_bounds(
    model: *const dpd_blr_model,
    out_bounds_x: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    out_bound_y: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_blr_model_bounds", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract; `out_bound_y` is written only when non-NULL.
        unsafe {
            let fit = &handle_ref(model, "model")?.inner;
            write_array(
                &fit.bounds_x,
                out_bounds_x,
                out_cap,
                out_len,
                "out_bounds_x",
            )?;
            if !out_bound_y.is_null() {
                write_out(out_bound_y, fit.bound_y, "out_bound_y")?;
            }
        }
        Ok(())
    })
}

/// Predictions ŷ = xᵀμ for the rows of `x` (row-major, `x_len` a multiple of d), one per row
/// into `out` (query-size pattern).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
/// `(out, out_cap, out_len)` per the output-array rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_predict(
    model: *const dpd_blr_model,
    x: *const f64,
    x_len: usize,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_model_predict", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model` and `(x, x_len)`.
        let (model, x) = unsafe { (handle_ref(model, "model")?, slice_in(x, x_len, "x")?) };
        let beta = &model.inner.posterior.mean;
        let n = x.len() / beta.len().max(1);
        check_rows(x, n, beta.len())?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(n, out_cap, out_len, "out") }?;
        let predictions = blr::predict(beta, x, n)?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&predictions, out, out_cap, out_len, "out") }
    })
}

/// Copies the released (noisy) statistics vector (layout as `dpd_blr_record_stats`, with Σy²
/// iff the config set `dpd_blr_config_set_release_yy`) into `out` (query-size pattern); feed
/// it to `dpd_blr_posterior_mean` or `dpd_blr_fit_gamma_prior`. Already private: no extra cost.
///
/// # Safety
/// As `dpd_blr_model_mean`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_stats(
    model: *const dpd_blr_model,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_model_stats", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract.
        unsafe {
            let model = handle_ref(model, "model")?;
            let flat = model.inner.stats.to_flat(model.config.with_yy);
            write_array(&flat, out, out_cap, out_len, "out")
        }
    })
}

/// Frees a fitted model; NULL is a no-op.
///
/// # Safety
/// `model` must be NULL or a handle from `dpd_blr_fit` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_free(model: *mut dpd_blr_model) {
    // SAFETY: header contract.
    unsafe { free_handle(model) }
}
