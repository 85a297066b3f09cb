//! The Gamma-prior variant (robust LR paper eq. 6–7) fitted by coordinate ascent from a
//! released statistics vector that carries Σy².

use blr::{CaviOptions, GammaPrior, SuffStats};

use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::status::dpd_status;

/// The precisions' posterior of a Gamma-prior fit and how the coordinate ascent ended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct dpd_blr_cavi_info {
    /// Shape of q(λ) (noise precision).
    pub lambda_shape: f64,
    /// Rate of q(λ); E[λ] = shape / rate.
    pub lambda_rate: f64,
    /// Shape of q(λ₀) (coefficient precision).
    pub lambda0_shape: f64,
    /// Rate of q(λ₀).
    pub lambda0_rate: f64,
    /// Sweeps run.
    pub iterations: usize,
    /// 1 if the relative change of E[λ] and E[λ₀] fell below the tolerance, else 0.
    pub converged: u32,
}

/// Fits λ ~ Gamma(a, b), λ₀ ~ Gamma(a0, b0) (shape, rate; the paper uses 2 for all four),
/// β | λ₀ ~ N(0, λ₀⁻¹I), y ~ N(xᵀβ, λ⁻¹) to the statistics vector `stats` of n records and d
/// features, laid out as `dpd_blr_record_stats` with `with_yy = 1` (so `len` = d(d+1)/2 + d + 1).
/// Stops after `max_iter` sweeps or when E[λ], E[λ₀] change by less than `tol` relatively
/// (the library's defaults are 1000 and 1e-12). Writes the mean of q(β) (d values, query-size
/// pattern) and, when `info` is non-NULL, the precisions' posterior.
///
/// # Safety
/// `stats` NULL only with `len == 0`, else readable; `(out_mean, out_cap, out_len)` per the
/// output-array rule; `info` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The statistics, the priors, the stopping rule, results.
pub unsafe extern "C" fn dpd_blr_fit_gamma_prior(
    stats: *const f64,
    len: usize,
    n: usize,
    d: usize,
    a: f64,
    b: f64,
    a0: f64,
    b0: f64,
    max_iter: usize,
    tol: f64,
    out_mean: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    info: *mut dpd_blr_cavi_info,
) -> dpd_status {
    ffi_entry("dpd_blr_fit_gamma_prior", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `(stats, len)`.
        let flat = unsafe { slice_in(stats, len, "stats") }?;
        let stats = SuffStats::from_flat(flat, d, n, true)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(d, out_cap, out_len, "out_mean") }?;
        let fit = blr::fit_gamma_prior(
            &stats,
            GammaPrior { a, b, a0, b0 },
            CaviOptions { max_iter, tol },
        )?;
        // SAFETY: header contract for the outputs; `info` is written only when non-NULL and
        // only after the mean was written.
        unsafe {
            write_array(&fit.mean, out_mean, out_cap, out_len, "out_mean")?;
            if !info.is_null() {
                let summary = dpd_blr_cavi_info {
                    lambda_shape: fit.lambda_shape_rate.0,
                    lambda_rate: fit.lambda_shape_rate.1,
                    lambda0_shape: fit.lambda0_shape_rate.0,
                    lambda0_rate: fit.lambda0_shape_rate.1,
                    iterations: fit.iterations,
                    converged: u32::from(fit.converged),
                };
                write_out(info, summary, "info")?;
            }
        }
        Ok(())
    })
}
