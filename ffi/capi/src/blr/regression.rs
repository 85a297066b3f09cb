//! The regression on real data (`blr::regression`): an intercept, every column's public range,
//! one Gaussian release, results in the data's units.

use blr::{Design, PublicRange, Regression, RegressionConfig, fit_regression};
use dp_noise::PrivacyLoss;
use projection::release::{Aggregation, DcaSettings};

use crate::blr::fit::check_rows;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// A fitted regression in the data's units.
pub struct dpd_regression {
    pub(crate) inner: Regression,
}

/// Fits the regression with an intercept (`intercept` = 1; 0 for `y ~ x - 1`) on `x` (n × d,
/// row-major, `x_len = n·d`) and `y[0..n]`: column j's public range is
/// `[lower_x[j], upper_x[j]]`, y's `[lower_y, upper_y]` (from a codebook or a physical limit,
/// never from the data; values outside are clipped to them). One Gaussian release at (ε, δ):
/// `n_nodes` = 0 has a trusted aggregator add the noise, `n_nodes` >= 2 runs DCA with that many
/// compute nodes (seed-compressed shares, no dropouts). Randomness from `rng`. No column is an
/// indicator group (`dpd_regression_fit_grouped` declares them).
///
/// # Safety
/// Arrays NULL only with length 0, else readable (`lower_x`, `upper_x` of length d); `rng` NULL
/// (→ error) or a live handle not used concurrently; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Data, ranges, budget, aggregation, randomness, result.
pub unsafe extern "C" fn dpd_regression_fit(
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    lower_x: *const f64,
    upper_x: *const f64,
    d: usize,
    lower_y: f64,
    upper_y: f64,
    intercept: u32,
    epsilon: f64,
    delta: f64,
    n_nodes: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_regression,
) -> dpd_status {
    ffi_entry("dpd_regression_fit", || {
        // SAFETY: the header contract is this function's.
        unsafe {
            fit(
                x, x_len, y, n, lower_x, upper_x, d, lower_y, upper_y, intercept, epsilon, delta,
                n_nodes, None, rng, out,
            )
        }
    })
}

/// As `dpd_regression_fit`, with indicator groups: `group_of[j]` (length d) is 0 for a column
/// that is not an indicator and k >= 1 for a member of group k, the indicators of one
/// categorical variable's levels (R's treatment contrasts: one column per level but the
/// reference). Group numbers are labels in any order. Each grouped column's public range must be
/// [0, 1] and its values 0 or 1, and a row sets at most one column of a group — a fact of the
/// codebook: a row that breaks it is refused (DPD_ERR_INVALID_ARGUMENT, the message names the
/// group's label, the row and the columns), nothing is released and nothing made. A group of 5 or
/// more indicators is kept 0/1 on the design and counts once in the sensitivity (smaller than
/// the same columns ungrouped, so less noise); a smaller group is mapped like any column.
/// `group_of` NULL means no groups, as `dpd_regression_fit`.
///
/// # Safety
/// As `dpd_regression_fit`; `group_of` NULL or readable for d values.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Data, ranges, groups, budget, aggregation, randomness.
pub unsafe extern "C" fn dpd_regression_fit_grouped(
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    lower_x: *const f64,
    upper_x: *const f64,
    group_of: *const u32,
    d: usize,
    lower_y: f64,
    upper_y: f64,
    intercept: u32,
    epsilon: f64,
    delta: f64,
    n_nodes: u32,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_regression,
) -> dpd_status {
    ffi_entry("dpd_regression_fit_grouped", || {
        let group_of = if group_of.is_null() {
            None
        } else {
            // SAFETY: header contract: non-NULL `group_of` is readable for d values.
            Some(unsafe { slice_in(group_of, d, "group_of")? })
        };
        // SAFETY: the rest of the header contract is `dpd_regression_fit`'s.
        unsafe {
            fit(
                x, x_len, y, n, lower_x, upper_x, d, lower_y, upper_y, intercept, epsilon, delta,
                n_nodes, group_of, rng, out,
            )
        }
    })
}

/// `group_of` (0 = none, k >= 1 = group label k) as `Design::indicator_groups`, groups in order
/// of first appearance, and each group's label.
fn indicator_groups(group_of: &[u32]) -> (Vec<Vec<usize>>, Vec<u32>) {
    blr::groups_by_label(group_of.iter().map(|&k| (k != 0).then_some(k)))
}

/// A blr error, with an indicator group named by its label in `group_of`.
fn name_group(error: blr::Error, labels: &[u32]) -> FfiError {
    match error {
        blr::Error::IndicatorGroup { group, reason } => FfiError::invalid(format!(
            "indicator group {} of `group_of`: {reason}",
            labels.get(group).copied().unwrap_or(0)
        )),
        other => other.into(),
    }
}

/// The fit behind both entry points.
///
/// # Safety
/// `dpd_regression_fit`'s header contract.
#[allow(clippy::too_many_arguments)]
unsafe fn fit(
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    lower_x: *const f64,
    upper_x: *const f64,
    d: usize,
    lower_y: f64,
    upper_y: f64,
    intercept: u32,
    epsilon: f64,
    delta: f64,
    n_nodes: u32,
    group_of: Option<&[u32]>,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_regression,
) -> FfiResult<()> {
    check_out(out, "out")?;
    // SAFETY: header contract for the arrays and the handle.
    let (x, y, lower_x, upper_x, rng) = unsafe {
        (
            slice_in(x, x_len, "x")?,
            slice_in(y, n, "y")?,
            slice_in(lower_x, d, "lower_x")?,
            slice_in(upper_x, d, "upper_x")?,
            handle_mut(rng, "rng")?,
        )
    };
    check_rows(x, n, d)?;
    let intercept = match intercept {
        0 => false,
        1 => true,
        other => return Err(FfiError::invalid(format!("`intercept` = {other}: 0 or 1"))),
    };
    let aggregation = match n_nodes {
        0 => Aggregation::Trusted,
        1 => {
            return Err(FfiError::invalid(
                "`n_nodes` = 1: 0 (trusted aggregator) or >= 2 (DCA)",
            ));
        }
        m => Aggregation::Distributed(DcaSettings {
            n_nodes: u16::try_from(m)
                .map_err(|_| FfiError::invalid(format!("`n_nodes` = {m}: need 2..=65535")))?,
            ..DcaSettings::default()
        }),
    };
    let ranges = lower_x
        .iter()
        .zip(upper_x)
        .map(|(lo, hi)| PublicRange::new(*lo, *hi))
        .collect::<blr::Result<Vec<_>>>()?;
    let mut design = Design::new(ranges, PublicRange::new(lower_y, upper_y)?)?;
    design.intercept = intercept;
    if let Some(group_of) = group_of {
        let (groups, labels) = indicator_groups(group_of);
        design.indicator_groups = groups;
        // Refused here, before any randomness is drawn: a malformed group, or a row that sets
        // two levels of one group or a value other than 0 and 1 (the blr error's text).
        design
            .validate()
            .and_then(|()| design.check_rows(x))
            .map_err(|e| name_group(e, &labels))?;
    }
    let config = RegressionConfig {
        aggregation,
        ..RegressionConfig::new(design, PrivacyLoss { epsilon, delta })
    };
    let inner = fit_regression(x, y, &config, rng.next_source())?;
    // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
    unsafe { write_out(out, into_handle(dpd_regression { inner }), "out") }
}

/// Copies (intercept, slope_1, …, slope_d) in the data's units into `out` (query-size
/// pattern; d + 1 values). Without an intercept the first value is the one the ranges' centres
/// fix.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
/// rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_coefficients(
    model: *const dpd_regression,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_regression_coefficients", || -> FfiResult<()> {
        // SAFETY: header contract.
        unsafe {
            let fit = &handle_ref(model, "model")?.inner;
            let values: Vec<f64> = std::iter::once(fit.intercept)
                .chain(fit.coefficients.iter().copied())
                .collect();
            write_array(&values, out, out_cap, out_len, "out")
        }
    })
}

/// Copies the standard errors of (intercept, slopes) into `out` (query-size pattern; NaN for
/// slopes of a fit that is the constant predictor).
///
/// # Safety
/// As `dpd_regression_coefficients`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_std_errors(
    model: *const dpd_regression,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_regression_std_errors", || -> FfiResult<()> {
        // SAFETY: header contract.
        unsafe {
            let fit = &handle_ref(model, "model")?.inner;
            write_array(&fit.std_errors(), out, out_cap, out_len, "out")
        }
    })
}

/// Predictions for the rows of `x` (row-major, raw values in the data's units, `x_len` a
/// multiple of d), one per row into `out` (query-size pattern).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
/// `(out, out_cap, out_len)` per the output-array rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_predict(
    model: *const dpd_regression,
    x: *const f64,
    x_len: usize,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_regression_predict", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `model` and `(x, x_len)`.
        let (fit, x) = unsafe { (&handle_ref(model, "model")?.inner, slice_in(x, x_len, "x")?) };
        let d = fit.design.columns();
        check_rows(x, x.len() / d, d)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(x.len() / d, out_cap, out_len, "out") }?;
        let predictions = fit.predict(x)?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&predictions, out, out_cap, out_len, "out") }
    })
}

/// Writes the fit's DP adjusted R² (NaN when the release leaves none), the constant predictor
/// it is measured against and the residual sd, in the data's units; each pointer may be NULL.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_fit_quality(
    model: *const dpd_regression,
    out_r_squared: *mut f64,
    out_constant: *mut f64,
    out_residual_sd: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_regression_fit_quality", || -> FfiResult<()> {
        // SAFETY: header contract; out-pointers are written only when non-NULL.
        unsafe {
            let fit = &handle_ref(model, "model")?.inner;
            for (ptr, value, name) in [
                (
                    out_r_squared,
                    fit.r_squared.unwrap_or(f64::NAN),
                    "out_r_squared",
                ),
                (out_constant, fit.constant, "out_constant"),
                (out_residual_sd, fit.residual_sd, "out_residual_sd"),
            ] {
                if !ptr.is_null() {
                    write_out(ptr, value, name)?;
                }
            }
        }
        Ok(())
    })
}

/// Writes the privacy the accountant charged, (ε, δ); either pointer may be NULL.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_spent(
    model: *const dpd_regression,
    out_epsilon: *mut f64,
    out_delta: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_regression_spent", || -> FfiResult<()> {
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

/// Copies the fit's warnings (UTF-8, one per line, no terminating NUL; empty when there are
/// none) into `out` (query-size pattern, in bytes): a fit no better than the constant, noise
/// that dominates the statistics.
///
/// # Safety
/// As `dpd_regression_coefficients`, for bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_warnings(
    model: *const dpd_regression,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_regression_warnings", || -> FfiResult<()> {
        // SAFETY: header contract.
        unsafe {
            let text = handle_ref(model, "model")?.inner.warnings.join("\n");
            write_array(text.as_bytes(), out, out_cap, out_len, "out")
        }
    })
}

/// Frees a fitted regression; NULL is a no-op.
///
/// # Safety
/// `model` must be NULL or a handle from `dpd_regression_fit` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_regression_free(model: *mut dpd_regression) {
    // SAFETY: header contract.
    unsafe { free_handle(model) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{dpd_rng_free, dpd_rng_new_insecure_fixed_seed};

    #[test]
    fn group_labels_become_groups_in_order_of_first_appearance() {
        let (groups, labels) = indicator_groups(&[0, 9, 2, 9, 0, 2, 2]);
        assert_eq!(groups, vec![vec![1, 3], vec![2, 5, 6]]);
        assert_eq!(labels, vec![9, 2]);
        let error = name_group(
            blr::Error::IndicatorGroup {
                group: 1,
                reason: "row 3: columns 2 and 5 are both 1".into(),
            },
            &labels,
        );
        assert_eq!(error.status, dpd_status::DPD_ERR_INVALID_ARGUMENT);
        assert!(
            error
                .message
                .contains("indicator group 2 of `group_of`: row 3")
        );
    }

    #[test]
    fn a_fit_through_the_abi_gives_the_libraries_coefficients_and_refuses_bad_input() {
        // y = 2 + 3x on 2000 x in [0, 100) within public ranges [0, 100] and [0, 400].
        let x: Vec<f64> = (0..2000).map(|i| f64::from(i) / 20.0).collect();
        let y: Vec<f64> = x.iter().map(|v| 2.0 + 3.0 * v).collect();
        let mut rng = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        assert_eq!(
            unsafe { dpd_rng_new_insecure_fixed_seed(5, &mut rng) },
            dpd_status::DPD_OK
        );
        let fit = |lower_x: f64, intercept: u32, n_nodes: u32| {
            let mut model = std::ptr::null_mut();
            // SAFETY: arrays of the lengths given, live rng, valid out-pointer.
            let status = unsafe {
                dpd_regression_fit(
                    x.as_ptr(),
                    2000,
                    y.as_ptr(),
                    2000,
                    &lower_x,
                    &100.0,
                    1,
                    0.0,
                    400.0,
                    intercept,
                    50.0,
                    1e-5,
                    n_nodes,
                    rng,
                    &mut model,
                )
            };
            (status, model)
        };
        let (status, model) = fit(0.0, 1, 3);
        assert_eq!(status, dpd_status::DPD_OK);
        let mut out = [0.0; 2];
        let mut len = 0;
        // SAFETY: live handle, arrays of capacity 2.
        unsafe {
            assert_eq!(
                dpd_regression_coefficients(model, out.as_mut_ptr(), 2, &mut len),
                dpd_status::DPD_OK
            );
            assert_eq!(len, 2);
            assert!(
                (out[1] - 3.0).abs() < 0.1 && (out[0] - 2.0).abs() < 5.0,
                "{out:?}"
            );
            let row = [50.0];
            let mut p = [0.0];
            assert_eq!(
                dpd_regression_predict(model, row.as_ptr(), 1, p.as_mut_ptr(), 1, &mut len),
                dpd_status::DPD_OK
            );
            assert!((p[0] - 152.0).abs() < 5.0, "{p:?}");
            let mut r2 = 0.0;
            assert_eq!(
                dpd_regression_fit_quality(
                    model,
                    &mut r2,
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ),
                dpd_status::DPD_OK
            );
            assert!(r2 > 0.9, "{r2}");
            let mut bytes = [0u8; 4];
            assert_eq!(
                dpd_regression_warnings(model, bytes.as_mut_ptr(), 4, &mut len),
                dpd_status::DPD_OK
            );
            assert_eq!(len, 0);
            dpd_regression_free(model);
        }
        // A reversed range, a bad intercept flag and one node are refused with nothing made.
        for (lower_x, intercept, n_nodes) in [(200.0, 1, 0), (0.0, 2, 0), (0.0, 1, 1)] {
            let (status, model) = fit(lower_x, intercept, n_nodes);
            assert_eq!(status, dpd_status::DPD_ERR_INVALID_ARGUMENT);
            assert!(model.is_null());
        }
        // SAFETY: live handle freed once.
        unsafe { dpd_rng_free(rng) };
    }
}
