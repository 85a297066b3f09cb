//! Noise scales for a target privacy loss (`dp_noise::calibrate`).

use dp_noise::calibrate;

use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::privacy;
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// Runs a calibration and writes its result to `out` on success.
fn calibrated(name: &str, out: *mut f64, f: impl FnOnce() -> FfiResult<f64>) -> dpd_status {
    ffi_entry(name, || -> FfiResult<()> {
        check_out(out, "out")?;
        let value = f()?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, value, "out") }
    })
}

/// σ of the classic Gaussian mechanism: sqrt(2 ln(1.25/δ))·Δ₂/ε. Proven only for ε < 1:
/// ε >= 1 returns `DPD_ERR_INVALID_ARGUMENT` (use `dpd_gaussian_sigma_analytic`).
/// Other errors: ε <= 0, δ outside (0, 1), Δ₂ <= 0 → `DPD_ERR_INVALID_ARGUMENT`;
/// NaN/inf → `DPD_ERR_NON_FINITE`.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_gaussian_sigma_classic(
    epsilon: f64,
    delta: f64,
    l2_sensitivity: f64,
    out: *mut f64,
) -> dpd_status {
    calibrated("dpd_gaussian_sigma_classic", out, || {
        Ok(calibrate::gaussian_sigma_classic(
            privacy::epsilon("epsilon", epsilon)?,
            privacy::delta("delta", delta)?,
            privacy::sensitivity("l2_sensitivity", l2_sensitivity)?,
        )?)
    })
}

/// σ of the analytic Gaussian mechanism (Balle & Wang 2018), valid for every ε > 0: the
/// smallest σ with Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) <= δ. Errors as
/// `dpd_gaussian_sigma_classic` (without the ε < 1 restriction).
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_gaussian_sigma_analytic(
    epsilon: f64,
    delta: f64,
    l2_sensitivity: f64,
    out: *mut f64,
) -> dpd_status {
    calibrated("dpd_gaussian_sigma_analytic", out, || {
        Ok(calibrate::gaussian_sigma_analytic(
            privacy::epsilon("epsilon", epsilon)?,
            privacy::delta("delta", delta)?,
            privacy::sensitivity("l2_sensitivity", l2_sensitivity)?,
        )?)
    })
}

/// Per-client σ of distributed Gaussian noise: σ_total / sqrt(N − T − 1) (DCA paper, Thm 1),
/// for N clients of which at most T drop out or collude. N − T − 1 < 1 →
/// `DPD_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_distributed_sigma(
    sigma_total: f64,
    n_clients: usize,
    max_dropped: usize,
    out: *mut f64,
) -> dpd_status {
    calibrated("dpd_distributed_sigma", out, || {
        Ok(calibrate::distributed_sigma(
            privacy::sigma("sigma_total", sigma_total)?,
            n_clients,
            max_dropped,
        )?)
    })
}

/// Scale b = Δ₁/ε of the Laplace mechanism (ε-DP).
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_laplace_scale(
    epsilon: f64,
    l1_sensitivity: f64,
    out: *mut f64,
) -> dpd_status {
    calibrated("dpd_laplace_scale", out, || {
        Ok(calibrate::laplace_scale(
            privacy::epsilon("epsilon", epsilon)?,
            privacy::sensitivity("l1_sensitivity", l1_sensitivity)?,
        )?)
    })
}
