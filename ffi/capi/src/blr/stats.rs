//! The building blocks for hosts that run the rounds themselves: sufficient statistics of one
//! record (a DCA client's vector), the posterior from a released sum, the non-private
//! baseline, prediction with given coefficients, and the regression metrics.

use blr::{Prior, SuffStats};

use crate::alloc::zeroed;
use crate::blr::fit::check_rows;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::status::dpd_status;

pub(crate) fn with_yy(flag: u32) -> FfiResult<bool> {
    match flag {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(FfiError::invalid(format!(
            "`with_yy` must be 0 or 1, got {v}"
        ))),
    }
}

/// Writes the length of a statistics vector for d features: d(d+1)/2 entries of Σxxᵀ (packed
/// upper triangle, row-major), d of Σxy, and Σy² when `with_yy = 1`. A length that does not
/// fit a `size_t`, or whose doubles would not fit the address space, is `DPD_ERR_OVERFLOW`
/// (never a wrapped value).
///
/// # Safety
/// `out` NULL (→ error) or a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_stats_len(
    d: usize,
    with_yy_flag: u32,
    out: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_stats_len", || {
        check_out(out, "out")?;
        let len = SuffStats::checked_flat_len(d, with_yy(with_yy_flag)?)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, len, "out") }
    })
}

/// Writes one record's statistics vector `[x_j x_k (j <= k)…, x_j y…, (y²)]` (the vector a DCA
/// client contributes; clip the record to public bounds first) into `out` (query-size
/// pattern).
///
/// # Safety
/// `x_row` NULL only with `d == 0`, else `d` readable doubles; `(out, out_cap, out_len)` per
/// the output-array rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_record_stats(
    x_row: *const f64,
    d: usize,
    y: f64,
    with_yy_flag: u32,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_record_stats", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `(x_row, d)`.
        let x_row = unsafe { slice_in(x_row, d, "x_row") }?;
        let yy = with_yy(with_yy_flag)?;
        // blr::SuffStats::record_into does not check finiteness (requested); refuse here.
        if let Some(j) = x_row.iter().position(|v| !v.is_finite()) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_NON_FINITE,
                format!("x_row[{j}] = {} is not finite", x_row[j]),
            ));
        }
        if !y.is_finite() {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_NON_FINITE,
                format!("y = {y} is not finite"),
            ));
        }
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        let len = SuffStats::checked_flat_len(d, yy)?;
        unsafe { reserve_array(len, out_cap, out_len, "out") }?;
        let mut stats = zeroed::<f64>(len, "record statistics")?;
        SuffStats::record_into(x_row, y, yy, &mut stats)?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&stats, out, out_cap, out_len, "out") }
    })
}

/// The posterior mean μ = (λ₀I + λ·nxx)⁻¹ λ·nxy from a (noisy) statistics vector `stats` of
/// n records and d features (layout as `dpd_blr_record_stats`), with the precision repaired
/// so that it is at least λ₀I. Writes d coefficients into `out` (query-size pattern).
///
/// # Safety
/// `stats` NULL only with `len == 0`, else readable; `(out, out_cap, out_len)` per the
/// output-array rule.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The statistics, their shape, the prior and the output.
pub unsafe extern "C" fn dpd_blr_posterior_mean(
    stats: *const f64,
    len: usize,
    n: usize,
    d: usize,
    with_yy_flag: u32,
    lambda: f64,
    lambda0: f64,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_posterior_mean", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `(stats, len)`.
        let flat = unsafe { slice_in(stats, len, "stats") }?;
        let stats = SuffStats::from_flat(flat, d, n, with_yy(with_yy_flag)?)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(d, out_cap, out_len, "out") }?;
        let posterior = blr::posterior(&stats, Prior { lambda, lambda0 })?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&posterior.mean, out, out_cap, out_len, "out") }
    })
}

/// The non-private posterior mean (baseline) of `x` (n × d, row-major) and `y[0..n]`, d
/// coefficients into `out` (query-size pattern).
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `(out, out_cap, out_len)` per the
/// output-array rule.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The data, the prior and the output.
pub unsafe extern "C" fn dpd_blr_fit_non_private(
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    d: usize,
    lambda: f64,
    lambda0: f64,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_fit_non_private", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for the arrays.
        let (x, y) = unsafe { (slice_in(x, x_len, "x")?, slice_in(y, n, "y")?) };
        check_rows(x, n, d)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(d, out_cap, out_len, "out") }?;
        let posterior = blr::fit_non_private(x, y, n, d, Prior { lambda, lambda0 })?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&posterior.mean, out, out_cap, out_len, "out") }
    })
}

/// Evaluates a metric of `truth[0..n]` against `predicted[0..n_predicted]`.
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `out` NULL (→ error) or writable.
unsafe fn metric(
    name: &str,
    f: fn(&[f64], &[f64]) -> blr::Result<f64>,
    truth: *const f64,
    n: usize,
    predicted: *const f64,
    n_predicted: usize,
    out: *mut f64,
) -> dpd_status {
    ffi_entry(name, || {
        check_out(out, "out")?;
        // SAFETY: forwarded caller contract.
        let (truth, predicted) = unsafe {
            (
                slice_in(truth, n, "truth")?,
                slice_in(predicted, n_predicted, "predicted")?,
            )
        };
        let value = f(truth, predicted)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the caller contract.
        unsafe { write_out(out, value, "out") }
    })
}

/// Mean absolute error.
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `out` NULL (→ error) or a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_mae(
    truth: *const f64,
    n: usize,
    predicted: *const f64,
    n_predicted: usize,
    out: *mut f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe { metric("dpd_mae", blr::mae, truth, n, predicted, n_predicted, out) }
}

/// Root mean squared error.
///
/// # Safety
/// As `dpd_mae`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rmse(
    truth: *const f64,
    n: usize,
    predicted: *const f64,
    n_predicted: usize,
    out: *mut f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe { metric("dpd_rmse", blr::rmse, truth, n, predicted, n_predicted, out) }
}

/// Spearman's rank correlation (average ranks for ties; 0 for constant input).
///
/// # Safety
/// As `dpd_mae`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_spearman(
    truth: *const f64,
    n: usize,
    predicted: *const f64,
    n_predicted: usize,
    out: *mut f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        metric(
            "dpd_spearman",
            blr::spearman,
            truth,
            n,
            predicted,
            n_predicted,
            out,
        )
    }
}
