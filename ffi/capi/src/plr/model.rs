//! A fitted (or imported) logistic or stacked model: prediction and export into caller
//! buffers, import from exported weights.

use plr_stacking::{LogisticModel, PrivacyLoss, StackedModel};

use crate::alloc::copied;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::status::dpd_status;

/// Which kind of model a `dpd_plr_model` holds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_plr_model_kind {
    /// One logistic model (PLR, or an imported one).
    DPD_PLR_MODEL_LOGISTIC = 0,
    /// K low-level logistic models and a high-level one (PST-S, PST-F, PST-H).
    DPD_PLR_MODEL_STACKED = 1,
}

pub(crate) enum Model {
    Logistic(LogisticModel),
    Stacked(StackedModel),
}

/// A logistic or stacked model and the privacy guarantee of its training data (if known).
pub struct dpd_plr_model {
    pub(crate) model: Model,
    pub(crate) privacy: Option<PrivacyLoss>,
}

impl dpd_plr_model {
    fn stacked(&self) -> FfiResult<&StackedModel> {
        match &self.model {
            Model::Stacked(m) => Ok(m),
            Model::Logistic(_) => Err(FfiError::invalid(
                "this is a single logistic model; it has no low-level models",
            )),
        }
    }

    fn low_level(&self, k: usize) -> FfiResult<&plr_stacking::LowLevelModel> {
        let low = self.stacked()?.low_level();
        low.get(k).ok_or_else(|| {
            FfiError::invalid(format!(
                "low-level model {k} does not exist (K = {})",
                low.len()
            ))
        })
    }

    /// The single model, or the high-level model of a stack.
    fn top(&self) -> &LogisticModel {
        match &self.model {
            Model::Logistic(m) => m,
            Model::Stacked(m) => m.high_level(),
        }
    }
}

/// Predicted probabilities P(y = 1 | x) for the rows of `x` (row-major, `x_len` a positive
/// multiple of the model's number of features), one per row into `out` (query-size pattern).
/// Rows are mapped as in training: through the public ranges when the model has them
/// (`dpd_plr_fit_with_ranges`), then projected onto the model's input ball.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
/// `out` NULL with `out_cap == 0` or `out_cap` writable doubles; `out_len` NULL (→ error) or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_predict_proba(
    model: *const dpd_plr_model,
    x: *const f64,
    x_len: usize,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_plr_model_predict_proba", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model` and `(x, x_len)`.
        let (model, x) = unsafe { (handle_ref(model, "model")?, slice_in(x, x_len, "x")?) };
        let n_features = match &model.model {
            Model::Logistic(m) => m.n_features(),
            Model::Stacked(m) => m.n_features(),
        };
        // One probability per row; a length that is not a positive multiple is refused below.
        if n_features > 0 && x.len() % n_features == 0 {
            // SAFETY: `out_len` checked non-NULL and writable by the header contract.
            unsafe { reserve_array(x.len() / n_features, out_cap, out_len, "out") }?;
        }
        let p = match &model.model {
            Model::Logistic(m) => m.predict_proba(x)?,
            Model::Stacked(m) => m.predict_proba(x)?,
        };
        // SAFETY: header contract for `(out, out_cap, out_len)`.
        unsafe { write_array(&p, out, out_cap, out_len, "out") }
    })
}

/// Describes a model: its kind (a `dpd_plr_model_kind` value), number of input features,
/// number K of low-level models (0 for a single model) and the ε of its training data's
/// guarantee (δ = 0; `INFINITY` for a non-private fit, NaN when unknown, i.e. imported).
/// Any out-pointer may be NULL.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_info(
    model: *const dpd_plr_model,
    out_kind: *mut u32,
    out_n_features: *mut usize,
    out_n_low_level: *mut usize,
    out_epsilon: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_plr_model_info", || -> FfiResult<()> {
        // SAFETY: header contract for `model`.
        let model = unsafe { handle_ref(model, "model") }?;
        let (kind, n_features, n_low) = match &model.model {
            Model::Logistic(m) => (
                dpd_plr_model_kind::DPD_PLR_MODEL_LOGISTIC,
                m.n_features(),
                0,
            ),
            Model::Stacked(m) => (
                dpd_plr_model_kind::DPD_PLR_MODEL_STACKED,
                m.n_features(),
                m.low_level().len(),
            ),
        };
        let epsilon = model.privacy.map_or(f64::NAN, |p| p.epsilon);
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_kind.is_null() {
                write_out(out_kind, kind as u32, "out_kind")?;
            }
            if !out_n_features.is_null() {
                write_out(out_n_features, n_features, "out_n_features")?;
            }
            if !out_n_low_level.is_null() {
                write_out(out_n_low_level, n_low, "out_n_low_level")?;
            }
            if !out_epsilon.is_null() {
                write_out(out_epsilon, epsilon, "out_epsilon")?;
            }
        }
        Ok(())
    })
}

/// Exports the weights of a single model, or of the high-level model of a stack (one per
/// low-level model), into `out` (query-size pattern), and its input radius r (rows are
/// projected to ‖x‖ <= r before wᵀx; to ‖x‖ <= r/√2 when the model has an intercept, which
/// `dpd_plr_model_intercept` reads) into `*out_input_radius` (may be NULL). A model fitted
/// with public ranges (`dpd_plr_fit_with_ranges`) applies wᵀ to the mapped row φ(x), not to x:
/// its weights and radius alone do not describe it, `dpd_plr_model_ranges` gives the ranges,
/// and only `dpd_plr_model_from_weights_and_ranges` re-imports it faithfully (the other
/// `from_weights` functions make a model without ranges).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
/// rule; `out_input_radius` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_weights(
    model: *const dpd_plr_model,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    out_input_radius: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_plr_model_weights", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model`.
        let top = unsafe { handle_ref(model, "model") }?.top();
        // SAFETY: header contract for the outputs.
        unsafe {
            write_array(top.weights(), out, out_cap, out_len, "out")?;
            if !out_input_radius.is_null() {
                write_out(out_input_radius, top.input_radius(), "out_input_radius")?;
            }
        }
        Ok(())
    })
}

/// Exports low-level model `k` (0..K) of a stack: the indices of the input features it reads
/// into `out_features` (query-size pattern on `features_cap`, length written to
/// `*out_n_features`), its weights into `out_weights` (same length; `weights_cap` must be at
/// least that) and its input radius into `*out_input_radius` (may be NULL). A single model →
/// `DPD_ERR_INVALID_ARGUMENT`. On `DPD_ERR_BUFFER_TOO_SMALL` only `*out_n_features` is written.
/// A stack fitted with public ranges applies the weights to the mapped row φ(x_(k)):
/// `dpd_plr_model_low_level_ranges` gives the ranges of model k's features.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; output arrays NULL only with capacity 0, else
/// writable for their capacities; `out_n_features` NULL (→ error) or writable;
/// `out_input_radius` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Two parallel output arrays and the radius in one call.
pub unsafe extern "C" fn dpd_plr_model_low_level(
    model: *const dpd_plr_model,
    k: usize,
    out_features: *mut u64,
    features_cap: usize,
    out_weights: *mut f64,
    weights_cap: usize,
    out_n_features: *mut usize,
    out_input_radius: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_plr_model_low_level", || -> FfiResult<()> {
        check_out(out_n_features, "out_n_features")?;
        // SAFETY: header contract for `model`.
        let low = unsafe { handle_ref(model, "model") }?.low_level(k)?;
        let features: Vec<u64> = low.features.iter().map(|&j| j as u64).collect();
        let cap = features_cap.min(weights_cap);
        // SAFETY: header contract for the outputs; the smaller capacity bounds both arrays,
        // so a too-small weights buffer is reported before anything is written.
        unsafe {
            write_array(&features, out_features, cap, out_n_features, "out_features")?;
            let mut n = 0;
            write_array(
                low.model.weights(),
                out_weights,
                weights_cap,
                &mut n,
                "out_weights",
            )?;
            if !out_input_radius.is_null() {
                write_out(
                    out_input_radius,
                    low.model.input_radius(),
                    "out_input_radius",
                )?;
            }
        }
        Ok(())
    })
}

/// Imports a single logistic model from exported weights `weights[0..d]` and input radius r > 0
/// (its privacy guarantee is unknown to the library: `dpd_plr_model_info` reports ε = NaN).
///
/// # Safety
/// `weights` NULL only with `d == 0`, else readable; `out` NULL (→ error) or a writable
/// `dpd_plr_model*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_from_weights(
    weights: *const f64,
    d: usize,
    input_radius: f64,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_model_from_weights", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `(weights, d)`.
        let weights = unsafe { slice_in(weights, d, "weights") }?;
        let model = LogisticModel::new(copied(weights, "weights")?, input_radius)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { give_imported(out, model) }
    })
}

/// The intercept b of a single model, or of the high-level model of a stack (the stack's
/// intercept: P(y = 1 | x) = σ(vᵀz + b) over the low-level outputs z), into `*out`. In margin
/// units: P(y = 1 | x) = σ(wᵀx̃ + b), x̃ the row projected to ‖x̃‖ <= r/√2 (r the input radius
/// of `dpd_plr_model_weights`; for a model with public ranges the row is first mapped as
/// `dpd_plr_model_ranges` describes, and b is the margin at the ranges' centres). A model
/// fitted or imported without intercept → `DPD_ERR_INVALID_STATE` (its margin is wᵀx̃ alone),
/// `*out` untouched.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_intercept(
    model: *const dpd_plr_model,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_plr_model_intercept", || -> FfiResult<()> {
        check_out(out, "out")?;
        // SAFETY: header contract for `model`.
        let top = unsafe { handle_ref(model, "model") }?.top();
        let b = intercept_of(top, "this model")?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, b, "out") }
    })
}

/// The intercept of low-level model `k` (0..K) of a stack into `*out` (margin units, as
/// `dpd_plr_model_intercept`). A single model → `DPD_ERR_INVALID_ARGUMENT`; a stack fitted
/// without intercepts → `DPD_ERR_INVALID_STATE`; `*out` untouched on any error.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_low_level_intercept(
    model: *const dpd_plr_model,
    k: usize,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_plr_model_low_level_intercept", || -> FfiResult<()> {
        check_out(out, "out")?;
        // SAFETY: header contract for `model`.
        let low = unsafe { handle_ref(model, "model") }?.low_level(k)?;
        let b = intercept_of(&low.model, &format!("low-level model {k}"))?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, b, "out") }
    })
}

/// The model's intercept, or the status that says it has none.
fn intercept_of(model: &LogisticModel, what: &str) -> FfiResult<f64> {
    model.intercept().ok_or_else(|| {
        FfiError::new(
            dpd_status::DPD_ERR_INVALID_STATE,
            format!("{what} has no intercept (fitted or imported without one)"),
        )
    })
}

/// Imports a single logistic model with an intercept from exported weights `weights[0..d]`, its
/// intercept b (`dpd_plr_model_intercept`) and input radius r > 0: P(y = 1 | x) = σ(wᵀx̃ + b),
/// x̃ the row projected to ‖x̃‖ <= r/√2 — the model `dpd_plr_fit_with_intercept` fitted. Privacy
/// unknown (ε = NaN), as `dpd_plr_model_from_weights`. Errors: `DPD_ERR_NON_FINITE` (a weight,
/// b or r), `DPD_ERR_INVALID_ARGUMENT` (d = 0, r < 0); nothing made.
///
/// # Safety
/// As `dpd_plr_model_from_weights`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_from_weights_and_intercept(
    weights: *const f64,
    d: usize,
    intercept: f64,
    input_radius: f64,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_model_from_weights_and_intercept", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `(weights, d)`.
        let weights = unsafe { slice_in(weights, d, "weights") }?;
        let model = LogisticModel::with_input_map(
            copied(weights, "weights")?,
            Some(intercept),
            input_radius,
            None,
        )?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { give_imported(out, model) }
    })
}

/// The public ranges a single model (or the high-level model of a stack) maps its inputs from:
/// `lo[j]` into `out_lo`, `hi[j]` into `out_hi`, one pair per feature (query-size pattern on
/// `cap`, the capacity of each array; the length is written to `*out_len`). The model predicts
/// σ(wᵀx̃ + b) with x̃ the row φ(x), φ_j(x) = (clamp(x_j, lo_j, hi_j) − m_j)/h_j (m_j the
/// centre, h_j the half-width of range j), projected to ‖x̃‖ <= r (r/√2 with an intercept). A
/// model fitted or imported without ranges → `DPD_ERR_INVALID_STATE` (its rows are projected
/// as they are), nothing written.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `out_lo`, `out_hi` NULL only with `cap == 0`,
/// else writable for `cap` doubles; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_ranges(
    model: *const dpd_plr_model,
    out_lo: *mut f64,
    out_hi: *mut f64,
    cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_plr_model_ranges", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model`.
        let model = unsafe { handle_ref(model, "model") }?;
        let what = match model.model {
            Model::Logistic(_) => "this model",
            Model::Stacked(_) => {
                "the high-level model of a stack (it reads the low-level outputs; \
                 `dpd_plr_model_low_level_ranges` reads a low-level model's ranges)"
            }
        };
        // SAFETY: forwarded header contract for the outputs.
        unsafe { write_ranges(model.top(), what, out_lo, out_hi, cap, out_len) }
    })
}

/// The public ranges low-level model `k` (0..K) of a stack maps its inputs from, one pair per
/// feature it reads, in the order of its feature indices (`dpd_plr_model_low_level`):
/// `lo` into `out_lo`, `hi` into `out_hi` (query-size pattern on `cap`, the capacity of each
/// array; the length is written to `*out_len`). Model k predicts from φ(x_(k)), each of its
/// columns mapped as `dpd_plr_model_ranges` describes, projected to its input ball. A single
/// model → `DPD_ERR_INVALID_ARGUMENT`; a stack fitted without ranges →
/// `DPD_ERR_INVALID_STATE`; nothing written on any error.
///
/// # Safety
/// As `dpd_plr_model_ranges`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_low_level_ranges(
    model: *const dpd_plr_model,
    k: usize,
    out_lo: *mut f64,
    out_hi: *mut f64,
    cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_plr_model_low_level_ranges", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model`.
        let low = unsafe { handle_ref(model, "model") }?.low_level(k)?;
        let what = format!("low-level model {k}");
        // SAFETY: forwarded header contract for the outputs.
        unsafe { write_ranges(&low.model, &what, out_lo, out_hi, cap, out_len) }
    })
}

/// Writes a model's ranges into two parallel arrays, or says that it has none.
///
/// # Safety
/// `out_lo`, `out_hi` NULL only with `cap == 0`, else writable for `cap` doubles; `out_len`
/// non-NULL (checked by the caller) and writable.
unsafe fn write_ranges(
    model: &LogisticModel,
    what: &str,
    out_lo: *mut f64,
    out_hi: *mut f64,
    cap: usize,
    out_len: *mut usize,
) -> FfiResult<()> {
    let ranges = model.ranges().ok_or_else(|| {
        FfiError::new(
            dpd_status::DPD_ERR_INVALID_STATE,
            format!("{what} has no public ranges (fitted or imported without them)"),
        )
    })?;
    let lo: Vec<f64> = ranges.iter().map(|r| r.lo).collect();
    let hi: Vec<f64> = ranges.iter().map(|r| r.hi).collect();
    // SAFETY: caller contract for the outputs; both arrays have capacity `cap`, so a too-small
    // buffer is reported before anything is written.
    unsafe {
        reserve_array(lo.len(), cap, out_len, "out_lo")?;
        let mut n = 0;
        write_array(&hi, out_hi, cap, &mut n, "out_hi")?;
        write_array(&lo, out_lo, cap, out_len, "out_lo")
    }
}

/// Imports a single logistic model with public ranges from exported parts: weights
/// `weights[0..d]`, `intercept` = 1 with its intercept `b` or 0 for none (then `b` must be 0),
/// the ranges `lo[0..n_ranges]`, `hi[0..n_ranges]` (`dpd_plr_model_ranges`; `n_ranges` = d) and
/// input radius r — the model `dpd_plr_fit_with_ranges` fitted. Privacy unknown (ε = NaN), as
/// `dpd_plr_model_from_weights`. Errors: `DPD_ERR_NON_FINITE` (a weight, b or r),
/// `DPD_ERR_INVALID_ARGUMENT` (d = 0, r < 0, `intercept` not 0 or 1, b ≠ 0 without intercept,
/// bad ranges as for `dpd_plr_fit_with_ranges`, naming the column); nothing made.
///
/// # Safety
/// As `dpd_plr_model_from_weights`; `lo` and `hi` NULL only with `n_ranges == 0`, else readable
/// for `n_ranges` doubles each.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The model's parts, flat for R/Julia.
pub unsafe extern "C" fn dpd_plr_model_from_weights_and_ranges(
    weights: *const f64,
    d: usize,
    intercept: u32,
    b: f64,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
    input_radius: f64,
    out: *mut *mut dpd_plr_model,
) -> dpd_status {
    ffi_entry("dpd_plr_model_from_weights_and_ranges", || {
        check_out(out, "out")?;
        let intercept = match (crate::plr::fit::intercept_flag(intercept)?, b) {
            (true, b) => Some(b),
            (false, 0.0) => None,
            (false, b) => {
                return Err(FfiError::invalid(format!(
                    "`b` = {b} with `intercept` = 0: a model without intercept has b = 0"
                )));
            }
        };
        // SAFETY: header contract for the input arrays.
        let (weights, lo, hi) = unsafe {
            (
                slice_in(weights, d, "weights")?,
                slice_in(lo, n_ranges, "lo")?,
                slice_in(hi, n_ranges, "hi")?,
            )
        };
        let ranges = crate::plr::fit::feature_ranges(lo, hi, d)?;
        let model = LogisticModel::with_input_map(
            copied(weights, "weights")?,
            intercept,
            input_radius,
            Some(ranges),
        )?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { give_imported(out, model) }
    })
}

/// Hands a model imported from exported parts (privacy unknown) to C.
///
/// # Safety
/// `out` must be non-NULL (checked by the caller) and writable.
unsafe fn give_imported(out: *mut *mut dpd_plr_model, model: LogisticModel) -> FfiResult<()> {
    let handle = into_handle(dpd_plr_model {
        model: Model::Logistic(model),
        privacy: None,
    });
    // SAFETY: forwarded caller contract.
    unsafe { write_out(out, handle, "out") }
}

/// Frees a model; NULL is a no-op.
///
/// # Safety
/// `model` must be NULL or a model handle not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_plr_model_free(model: *mut dpd_plr_model) {
    // SAFETY: header contract.
    unsafe { free_handle(model) }
}
