//! The private logistic learners: PLR (stacking paper Alg. 1), PST-S (Alg. 2), PST-F (Alg. 3)
//! and PST-H (Alg. 4). Each guarantees (ε, 0)-DP for its training data set; ε = INFINITY fits
//! the non-private model (for baselines only).

use plr_stacking::{
    FeatureRange, PlrConfig, StackedFit, StackingConfig, TransferConfig, fit_plr, fit_pst_f,
    fit_pst_h, fit_pst_s,
};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref, into_handle};
use crate::plr::data::{dpd_dataset, dpd_feature_groups};
use crate::plr::model::{Model, dpd_plr_model};
use crate::privacy;
use crate::ptr::{check_out, slice_in, write_out};
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
    // Kept without intercept: its output stays what it was before the intercept reached the
    // C ABI (`dpd_plr_fit_with_intercept` chooses).
    ffi_entry("dpd_plr_fit", || {
        // SAFETY: forwarded caller contract.
        unsafe { plr(dataset, epsilon, lambda, false, None, rng, out) }
    })
}

/// As `dpd_plr_fit`, with `intercept` = 1 to estimate an intercept b, P(y = 1 | x) =
/// σ(wᵀx̃ + b) (`dpd_plr_model_intercept` reads it), or 0 for none (then exactly
/// `dpd_plr_fit`). With an intercept each row is projected to ‖x̃‖ <= 1/√2 and the solver sees
/// (x̃, 1/√2), so the norm bound of the privacy calibration still holds. Any other `intercept`
/// → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn and nothing made.
///
/// # Safety
/// As `dpd_plr_fit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_fit_with_intercept(
    dataset: *const dpd_dataset,
    epsilon: f64,
    lambda: f64,
    intercept: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_fit_with_intercept", || {
        let intercept = intercept_flag(intercept)?;
        // SAFETY: forwarded caller contract.
        unsafe { plr(dataset, epsilon, lambda, intercept, None, rng, out) }
    })
}

/// As `dpd_plr_fit_with_intercept`, with public feature ranges: `lo[j] < hi[j]`, both finite,
/// one pair per feature (`n_ranges` = the data set's number of features), known without looking
/// at the private data (codebooks, physical limits). Each value is clamped into
/// [lo_j, hi_j] and mapped onto [−1, 1], φ_j(x) = (clamp(x_j, lo_j, hi_j) − m_j)/h_j with
/// centre m_j = (lo_j + hi_j)/2 and half-width h_j = (hi_j − lo_j)/2; the mapped row is then
/// projected to ‖φ(x)‖ <= r (r/√2 with an intercept), r the input radius. The fitted model
/// predicts through the same map (`dpd_plr_model_ranges` reads the ranges back;
/// `dpd_plr_model_from_weights_and_ranges` re-imports such a model). Bad ranges (a non-finite
/// end, lo >= hi) → `DPD_ERR_INVALID_ARGUMENT` naming the (0-based) column; a wrong count →
/// `DPD_ERR_INVALID_ARGUMENT` naming `n_ranges`; `lo` or `hi` NULL with `n_ranges` > 0 →
/// `DPD_ERR_NULL_POINTER`. Like a bad `intercept`, nothing is drawn from `rng` and nothing is
/// made.
///
/// # Safety
/// As `dpd_plr_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
/// `n_ranges` doubles each.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_plr_fit_with_ranges(
    dataset: *const dpd_dataset,
    epsilon: f64,
    lambda: f64,
    intercept: u32,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_fit_with_ranges", || {
        let intercept = intercept_flag(intercept)?;
        check_out(out, "out")?;
        // SAFETY: header contract for `dataset` and the range arrays.
        let (data, lo, hi) = unsafe {
            (
                handle_ref(dataset, "dataset")?,
                slice_in(lo, n_ranges, "lo")?,
                slice_in(hi, n_ranges, "hi")?,
            )
        };
        let ranges = feature_ranges(lo, hi, data.inner.n_features())?;
        // SAFETY: forwarded caller contract.
        unsafe { plr(dataset, epsilon, lambda, intercept, Some(ranges), rng, out) }
    })
}

/// Public ranges from C's parallel arrays, checked column by column (before anything is drawn),
/// so that the message names the first bad column.
pub(crate) fn feature_ranges(
    lo: &[f64],
    hi: &[f64],
    n_features: usize,
) -> FfiResult<Vec<FeatureRange>> {
    if lo.len() != n_features {
        return Err(FfiError::invalid(format!(
            "`n_ranges` = {}: one range per feature, the data has {n_features}",
            lo.len()
        )));
    }
    checked_pairs(lo, hi)
}

/// Public ranges for DP-SGD's logistic regression, checked column by column; their count is
/// checked when the trainer learns d.
pub(crate) fn feature_ranges_checked(
    lo: &[f64],
    hi: &[f64],
) -> FfiResult<Vec<dca_learning::FeatureRange>> {
    Ok(checked_pairs(lo, hi)?
        .into_iter()
        .map(|r| dca_learning::FeatureRange { lo: r.lo, hi: r.hi })
        .collect())
}

fn checked_pairs(lo: &[f64], hi: &[f64]) -> FfiResult<Vec<FeatureRange>> {
    lo.iter()
        .zip(hi)
        .enumerate()
        .map(|(j, (&lo, &hi))| {
            if !(lo.is_finite() && hi.is_finite()) {
                return Err(FfiError::invalid(format!(
                    "range of column {j}: lo = {lo}, hi = {hi}; both ends must be finite"
                )));
            }
            if lo >= hi {
                return Err(FfiError::invalid(format!(
                    "range of column {j}: lo = {lo} >= hi = {hi}; lo must be below hi"
                )));
            }
            FeatureRange::new(lo, hi)
                .map_err(|e| FfiError::invalid(format!("range of column {j}: {e}")))
        })
        .collect()
}

/// The C flag for an intercept: 0 (none) or 1 (estimate one); anything else is refused, so
/// that a host's garbage never silently picks one.
pub(crate) fn intercept_flag(flag: u32) -> FfiResult<bool> {
    match flag {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(FfiError::invalid(format!("`intercept` = {other}: 0 or 1"))),
    }
}

/// PLR with or without intercept and public ranges (checked by the caller).
///
/// # Safety
/// As `dpd_plr_fit`.
unsafe fn plr(
    dataset: *const dpd_dataset,
    epsilon: f64,
    lambda: f64,
    intercept: bool,
    ranges: Option<Vec<FeatureRange>>,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> FfiResult<()> {
    check_out(out, "out")?;
    // SAFETY: header contract for the handles.
    let (data, rng) = unsafe { (handle_ref(dataset, "dataset")?, handle_mut(rng, "rng")?) };
    let fit = fit_plr(
        &data.inner,
        &PlrConfig {
            intercept,
            ranges,
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
    // Kept without intercept (its output is unchanged); `dpd_pst_s_fit_with_intercept` chooses.
    ffi_entry("dpd_pst_s_fit", || {
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept: false,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_s(dataset, n_parts, levels, rng, out) }
    })
}

/// As `dpd_pst_s_fit`, with `intercept` = 1 for an intercept in every low-level model and in
/// the high-level model (`dpd_plr_model_intercept` reads the high-level one, which is the
/// stack's: P(y = 1 | x) = σ(vᵀz + b) over the low-level outputs z;
/// `dpd_plr_model_low_level_intercept` reads the others), or 0 for none (then exactly
/// `dpd_pst_s_fit`). Any other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
///
/// # Safety
/// As `dpd_plr_fit`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_s_fit_with_intercept(
    dataset: *const dpd_dataset,
    n_parts: usize,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_s_fit_with_intercept", || {
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept: intercept_flag(intercept)?,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_s(dataset, n_parts, levels, rng, out) }
    })
}

/// As `dpd_pst_s_fit_with_intercept`, with public feature ranges `lo[0..n_ranges]`,
/// `hi[0..n_ranges]`, one pair per column of the data (`n_ranges` = its number of features),
/// as for `dpd_plr_fit_with_ranges`: every low-level model clamps and maps each column onto
/// [−1, 1] by its range before projecting the row onto its input ball, and predicts through the
/// same map (`dpd_plr_model_low_level_ranges` reads model k's ranges). The high-level model
/// reads the low-level outputs, which need no ranges. Bad ranges → `DPD_ERR_INVALID_ARGUMENT`
/// naming the (0-based) column, a wrong count naming `n_ranges`, `lo` or `hi` NULL with
/// `n_ranges` > 0 → `DPD_ERR_NULL_POINTER`; like a bad `intercept`, nothing is drawn from `rng`
/// and nothing is made.
///
/// # Safety
/// As `dpd_plr_fit_with_ranges`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_s_fit_with_ranges(
    dataset: *const dpd_dataset,
    n_parts: usize,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_s_fit_with_ranges", || {
        let intercept = intercept_flag(intercept)?;
        check_out(out, "out")?;
        // SAFETY: header contract for `dataset` and the range arrays.
        let ranges = unsafe { ranges_of(dataset, "dataset", lo, hi, n_ranges) }?;
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept,
            ranges: Some(ranges),
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_s(dataset, n_parts, levels, rng, out) }
    })
}

/// The public ranges of C's arrays for the columns of `dataset` (checked as
/// [`feature_ranges`] does, before anything is drawn).
///
/// # Safety
/// `dataset` NULL (→ error) or a live handle; `lo` and `hi` NULL only with `n_ranges == 0`,
/// else readable for `n_ranges` doubles each.
unsafe fn ranges_of(
    dataset: *const dpd_dataset,
    name: &str,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
) -> FfiResult<Vec<FeatureRange>> {
    // SAFETY: forwarded caller contract.
    let (data, lo, hi) = unsafe {
        (
            handle_ref(dataset, name)?,
            slice_in(lo, n_ranges, "lo")?,
            slice_in(hi, n_ranges, "hi")?,
        )
    };
    feature_ranges(lo, hi, data.inner.n_features())
}

/// The parameters PST-S and PST-F share, as C passed them (the ranges already checked).
struct StackLevels {
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: bool,
    ranges: Option<Vec<FeatureRange>>,
}

impl StackLevels {
    fn config(self) -> FfiResult<StackingConfig> {
        Ok(StackingConfig {
            epsilon: privacy::epsilon_or_non_private("epsilon", self.epsilon)?,
            lambda: self.lambda,
            lambda_high: self.lambda_high,
            high_fraction: self.high_fraction,
            intercept: self.intercept,
            ranges: self.ranges,
        })
    }
}

/// PST-S with or without intercepts and ranges.
///
/// # Safety
/// As `dpd_plr_fit`.
unsafe fn pst_s(
    dataset: *const dpd_dataset,
    n_parts: usize,
    levels: StackLevels,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> FfiResult<()> {
    check_out(out, "out")?;
    // SAFETY: header contract for the handles.
    let (data, rng) = unsafe { (handle_ref(dataset, "dataset")?, handle_mut(rng, "rng")?) };
    let config = levels.config()?;
    let fit = fit_pst_s(&data.inner, n_parts, &config, &rng.next_source())?;
    // SAFETY: `out` is non-NULL (checked).
    unsafe { give(out, stacked(fit)) }
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
    // Kept without intercept (its output is unchanged); `dpd_pst_f_fit_with_intercept` chooses.
    ffi_entry("dpd_pst_f_fit", || {
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept: false,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_f(dataset, groups, levels, rng, out) }
    })
}

/// As `dpd_pst_f_fit`, with `intercept` = 1 for an intercept in every low-level model and in
/// the high-level model (read as for `dpd_pst_s_fit_with_intercept`), or 0 for none (then
/// exactly `dpd_pst_f_fit`). Any other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
///
/// # Safety
/// As `dpd_pst_f_fit`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_f_fit_with_intercept(
    dataset: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_f_fit_with_intercept", || {
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept: intercept_flag(intercept)?,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_f(dataset, groups, levels, rng, out) }
    })
}

/// As `dpd_pst_f_fit_with_intercept`, with public feature ranges, one pair per column of the
/// data, as `dpd_pst_s_fit_with_ranges`: low-level model k maps the columns of group k, in the
/// group's order, by their ranges, then projects the row to ‖φ(x_(k))‖ <= q_k (q_k/√2 with an
/// intercept), so the joint calibration's norm bound holds. Errors as for
/// `dpd_pst_s_fit_with_ranges`; nothing drawn and nothing made.
///
/// # Safety
/// As `dpd_pst_f_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
/// `n_ranges` doubles each.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_f_fit_with_ranges(
    dataset: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon: f64,
    lambda: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_f_fit_with_ranges", || {
        let intercept = intercept_flag(intercept)?;
        check_out(out, "out")?;
        // SAFETY: header contract for `dataset` and the range arrays.
        let ranges = unsafe { ranges_of(dataset, "dataset", lo, hi, n_ranges) }?;
        let levels = StackLevels {
            epsilon,
            lambda,
            lambda_high,
            high_fraction,
            intercept,
            ranges: Some(ranges),
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_f(dataset, groups, levels, rng, out) }
    })
}

/// PST-F with or without intercepts and ranges.
///
/// # Safety
/// As `dpd_pst_f_fit`.
unsafe fn pst_f(
    dataset: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    levels: StackLevels,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> FfiResult<()> {
    check_out(out, "out")?;
    // SAFETY: header contract for the handles.
    let (data, groups, rng) = unsafe {
        (
            handle_ref(dataset, "dataset")?,
            handle_ref(groups, "groups")?,
            handle_mut(rng, "rng")?,
        )
    };
    let config = levels.config()?;
    let fit = fit_pst_f(&data.inner, &groups.inner, &config, &rng.next_source())?;
    // SAFETY: `out` is non-NULL (checked).
    unsafe { give(out, stacked(fit)) }
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
    // Kept without intercept (its output is unchanged); `dpd_pst_h_fit_with_intercept` chooses.
    ffi_entry("dpd_pst_h_fit", || {
        let transfer = Transfer {
            epsilon_source,
            epsilon_target,
            lambda_source,
            lambda_target,
            lambda_high,
            high_fraction,
            intercept: false,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_h(source, target, groups, transfer, rng, out) }
    })
}

/// As `dpd_pst_h_fit`, with `intercept` = 1 for an intercept in every source model, every
/// low-level model and the high-level model (each target low-level model's intercept is pulled
/// towards its source model's like its weights), or 0 for none (then exactly `dpd_pst_h_fit`).
/// The returned target stack's intercepts are read as for `dpd_pst_s_fit_with_intercept`. Any
/// other `intercept` → `DPD_ERR_INVALID_ARGUMENT`, nothing drawn.
///
/// # Safety
/// As `dpd_pst_h_fit`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_h_fit_with_intercept(
    source: *const dpd_dataset,
    target: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon_source: f64,
    epsilon_target: f64,
    lambda_source: f64,
    lambda_target: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_h_fit_with_intercept", || {
        let transfer = Transfer {
            epsilon_source,
            epsilon_target,
            lambda_source,
            lambda_target,
            lambda_high,
            high_fraction,
            intercept: intercept_flag(intercept)?,
            ranges: None,
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_h(source, target, groups, transfer, rng, out) }
    })
}

/// As `dpd_pst_h_fit_with_intercept`, with public feature ranges, one pair per column (the
/// source and the target have the same columns; `n_ranges` = the target's number of features),
/// as `dpd_pst_f_fit_with_ranges`: every source model and every target low-level model maps the
/// columns of its group by their ranges, so a source model's weights are read on the target's
/// scale. Errors as for `dpd_pst_s_fit_with_ranges`; nothing drawn and nothing made.
///
/// # Safety
/// As `dpd_pst_h_fit`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable for
/// `n_ranges` doubles each.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The learner's parameters, flat for R/Julia.
pub unsafe extern "C" fn dpd_pst_h_fit_with_ranges(
    source: *const dpd_dataset,
    target: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    epsilon_source: f64,
    epsilon_target: f64,
    lambda_source: f64,
    lambda_target: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: u32,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_pst_h_fit_with_ranges", || {
        let intercept = intercept_flag(intercept)?;
        check_out(out, "out")?;
        // SAFETY: header contract for `target` and the range arrays.
        let ranges = unsafe { ranges_of(target, "target", lo, hi, n_ranges) }?;
        let transfer = Transfer {
            epsilon_source,
            epsilon_target,
            lambda_source,
            lambda_target,
            lambda_high,
            high_fraction,
            intercept,
            ranges: Some(ranges),
        };
        // SAFETY: forwarded caller contract.
        unsafe { pst_h(source, target, groups, transfer, rng, out) }
    })
}

/// The parameters of PST-H, as C passed them (the ranges already checked).
struct Transfer {
    epsilon_source: f64,
    epsilon_target: f64,
    lambda_source: f64,
    lambda_target: f64,
    lambda_high: f64,
    high_fraction: f64,
    intercept: bool,
    ranges: Option<Vec<FeatureRange>>,
}

/// PST-H with or without intercepts and ranges.
///
/// # Safety
/// As `dpd_pst_h_fit`.
unsafe fn pst_h(
    source: *const dpd_dataset,
    target: *const dpd_dataset,
    groups: *const dpd_feature_groups,
    transfer: Transfer,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_plr_model,
) -> FfiResult<()> {
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
        epsilon_source: privacy::epsilon_or_non_private("epsilon_source", transfer.epsilon_source)?,
        epsilon_target: privacy::epsilon_or_non_private("epsilon_target", transfer.epsilon_target)?,
        lambda_source: transfer.lambda_source,
        lambda_target: transfer.lambda_target,
        lambda_high: transfer.lambda_high,
        high_fraction: transfer.high_fraction,
        intercept: transfer.intercept,
        ranges: transfer.ranges,
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
}
