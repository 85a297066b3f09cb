//! The private logistic learners: PLR (stacking paper Alg. 1), PST-S (Alg. 2), PST-F (Alg. 3)
//! and PST-H (Alg. 4). Each guarantees (ε, 0)-DP for its training data set; ε = INFINITY fits
//! the non-private model (for baselines only).

use plr_stacking::{
    PlrConfig, StackedFit, StackingConfig, TransferConfig, fit_plr, fit_pst_f, fit_pst_h, fit_pst_s,
};

use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref, into_handle};
use crate::plr::data::{dpd_dataset, dpd_feature_groups};
use crate::plr::model::{Model, dpd_plr_model};
use crate::privacy;
use crate::ptr::{check_out, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// Hands a fitted model to C.
///
/// # Safety
/// `out` must be non-NULL (checked by the caller) and writable.
unsafe fn give(out: *mut *mut dpd_plr_model, model: dpd_plr_model) -> FfiResult<()> {
    // SAFETY: forwarded caller contract.
    unsafe { write_out(out, into_handle(model), "out") }
}

fn stacked(fit: StackedFit) -> dpd_plr_model {
    dpd_plr_model {
        model: Model::Stacked(fit.model),
        privacy: Some(fit.privacy),
    }
}

/// Fits PLR by objective perturbation: ε ∈ [1e-6, 100] (or INFINITY; otherwise
/// `DPD_ERR_INVALID_PRIVACY_PARAMETER`), λ > 0. Rows are projected to
/// ‖x‖ <= 1. Errors: `DPD_ERR_INVALID_ARGUMENT` (ε, λ), `DPD_ERR_NUMERICAL` (no convergence).
///
/// # Safety
/// `dataset`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
/// (→ error) or a writable `dpd_plr_model*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_fit(
    dataset: *const dpd_dataset,
    epsilon: f64,
    lambda: f64,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_fit", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (data, rng) = unsafe { (handle_ref(dataset, "dataset")?, handle_mut(rng, "rng")?) };
        let fit = fit_plr(
            &data.inner,
            // No intercept: the C ABI's model export (weights, input radius) has no place
            // for one yet.
            &PlrConfig {
                intercept: false,
                ..PlrConfig::new(privacy::epsilon_or_non_private("epsilon", epsilon)?, lambda)
            },
            &rng.next_source(),
        )?;
        let model = dpd_plr_model {
            model: Model::Logistic(fit.model),
            privacy: Some(fit.privacy),
        };
        // SAFETY: `out` is non-NULL (checked).
        unsafe { give(out, model) }
    })
}

/// Fits PST-S: the low-level share (1 − `high_fraction`) of the rows cut into `n_parts` >= 1
/// disjoint parts, a PLR (λ = `lambda`) on each, and a PLR (λ = `lambda_high`) on the rest over
/// the low-level outputs. `high_fraction` in (0, 1); the paper uses 0.5.
///
/// # Safety
/// As `dpd_plr_fit`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_s_fit(
    dataset: *const dpd_dataset,
    n_parts: usize,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_s_fit", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (data, rng) = unsafe { (handle_ref(dataset, "dataset")?, handle_mut(rng, "rng")?) };
        let config = StackingConfig {
            epsilon: privacy::epsilon_or_non_private("epsilon", epsilon)?,
            lambda,
            lambda_high,
            high_fraction,
            // No intercept: the C ABI's model export has no place for one yet.
            intercept: false,
        };
        let fit = fit_pst_s(&data.inner, n_parts, &config, &rng.next_source())?;
        // SAFETY: `out` is non-NULL (checked).
        unsafe { give(out, stacked(fit)) }
    })
}

/// Fits PST-F: one low-level PLR per feature group (rows of group k scaled to ‖x_(k)‖ <= q_k,
/// jointly calibrated) and a high-level PLR over their outputs. Parameters as `dpd_pst_s_fit`.
///
/// # Safety
/// As `dpd_plr_fit`; `groups` NULL (→ error) or a live handle.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_f_fit(
    dataset: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_f_fit", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (data, groups, rng) = unsafe {
            (
                handle_ref(dataset, "dataset")?,
                handle_ref(groups, "groups")?,
                handle_mut(rng, "rng")?,
            )
        };
        let config = StackingConfig {
            epsilon: privacy::epsilon_or_non_private("epsilon", epsilon)?,
            lambda,
            lambda_high,
            high_fraction,
            // No intercept: the C ABI's model export has no place for one yet.
            intercept: false,
        };
        let fit = fit_pst_f(&data.inner, &groups.inner, &config, &rng.next_source())?;
        // SAFETY: `out` is non-NULL (checked).
        unsafe { give(out, stacked(fit)) }
    })
}

/// Fits PST-H (transfer): per-group source models on `source` at ε_source, then PST-F on
/// `target` at ε_target with each low-level model pulled towards its source model (strength
/// `lambda_target`). Returns the target's stacked model; its `dpd_plr_model_info` ε is the
/// target's guarantee (the source data has (ε_source, 0)-DP).
///
/// # Safety
/// As `dpd_pst_f_fit`, with two data sets.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_h_fit(
    source: *const dpd_dataset,
    target: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon_source: f64,
    epsilon_target: f64,
    lambda_source: f64,
    lambda_target: f64,
    lambda_high: f64,
    high_fraction: f64,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_h_fit", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (source, target, groups, rng) = unsafe {
            (
                handle_ref(source, "source")?,
                handle_ref(target, "target")?,
                handle_ref(groups, "groups")?,
                handle_mut(rng, "rng")?,
            )
        };
        let config = TransferConfig {
            epsilon_source: privacy::epsilon_or_non_private("epsilon_source", epsilon_source)?,
            epsilon_target: privacy::epsilon_or_non_private("epsilon_target", epsilon_target)?,
            lambda_source,
            lambda_target,
            lambda_high,
            high_fraction,
            // No intercept: the C ABI's model export has no place for one yet.
            intercept: false,
        };
        let fit = fit_pst_h(
            &source.inner,
            &target.inner,
            &groups.inner,
            &config,
            &rng.next_source(),
        )?;
        // SAFETY: `out` is non-NULL (checked).
        unsafe { give(out, stacked(fit.target)) }
    })
}
