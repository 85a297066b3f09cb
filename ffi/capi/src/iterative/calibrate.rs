//! Rényi-DP calibration (`dp_noise::rdp`): the ε of a number of subsampled Gaussian steps, the
//! smallest noise multiplier for a target (ε, δ), and the same for the exact mechanism an
//! iterative trainer charges (DCA's sum of discrete Gaussians on its fixed-point grid).

use dca_learning::{Privacy, calibrate_noise_multiplier};
use dp_noise::PrivacyLoss;
use dp_noise::rdp::{BaseNoise, Sampling, SubsampledGaussian, default_orders, epsilon_from_rdp};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::handle_ref;
use crate::iterative::config::{budget, dpd_iterative_config};
use crate::iterative::trainer::check_dim;
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// How the records of one step are chosen, for the RDP accountant.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_sampling {
    /// Each record independently with probability q (add/remove-one neighbours;
    /// Mironov–Talwar–Zhang 2019). q = 1 is no subsampling.
    DPD_SAMPLING_POISSON = 0,
    /// A uniformly random batch of exactly m of n records, q = m/n (replace-one neighbours;
    /// Wang–Balle–Kasiviswanathan 2019, Thm 9).
    DPD_SAMPLING_WITHOUT_REPLACEMENT = 1,
}

fn sampling(kind: u32, q: f64) -> FfiResult<Sampling> {
    if !(q > 0.0 && q <= 1.0) {
        let status = if q.is_nan() {
            dpd_status::DPD_ERR_NON_FINITE
        } else {
            dpd_status::DPD_ERR_INVALID_ARGUMENT
        };
        return Err(FfiError::new(
            status,
            format!("`q` = {q}: the sampling probability must be in (0, 1]"),
        ));
    }
    const POISSON: u32 = dpd_sampling::DPD_SAMPLING_POISSON as u32;
    const WITHOUT_REPLACEMENT: u32 = dpd_sampling::DPD_SAMPLING_WITHOUT_REPLACEMENT as u32;
    match kind {
        POISSON => Ok(Sampling::Poisson { rate: q }),
        WITHOUT_REPLACEMENT => Ok(Sampling::WithoutReplacement { fraction: q }),
        other => Err(FfiError::invalid(format!(
            "`sampling` must be DPD_SAMPLING_POISSON (0) or DPD_SAMPLING_WITHOUT_REPLACEMENT (1), \
             got {other}"
        ))),
    }
}

fn steps_at_least_one(steps: u64) -> FfiResult<()> {
    if steps == 0 {
        return Err(FfiError::invalid("`steps` must be >= 1"));
    }
    Ok(())
}

/// The ε after `steps` >= 1 steps of the sampled Gaussian mechanism with noise multiplier
/// z = σ/C > 0 and sampling probability q in (0, 1] (`sampling` a `dpd_sampling` value), at
/// δ in (0, 1), by the Rényi-DP accountant over dp_accounting's grid of orders with the
/// conversion of Balle et al. 2020 (Thm 21); the order that attains it goes to `*out_order`
/// (may be NULL). Continuous Gaussian noise; for DCA's discrete sum use the trainer's own
/// accountant (`dpd_iterative_trainer_spent`).
///
/// # Safety
/// `out_epsilon` NULL (→ error) or writable; `out_order` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rdp_epsilon(
    q: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
    sampling_kind: u32,
    out_epsilon: *mut f64,
    out_order: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_rdp_epsilon", || {
        check_out(out_epsilon, "out_epsilon")?;
        steps_at_least_one(steps)?;
        let step = SubsampledGaussian {
            sampling: sampling(sampling_kind, q)?,
            noise: BaseNoise::Continuous { noise_multiplier },
        };
        step.validate()?;
        let orders = default_orders();
        let totals: Vec<f64> = step
            .rdp_orders(&orders)?
            .into_iter()
            .map(|r| r * steps as f64)
            .collect();
        let delta = crate::privacy::delta("delta", delta)?;
        let (epsilon, order) = epsilon_from_rdp(&orders, &totals, delta)?;
        // SAFETY: `out_epsilon` checked non-NULL; `out_order` written only when non-NULL; both
        // writable by the header contract.
        unsafe {
            write_out(out_epsilon, epsilon, "out_epsilon")?;
            if !out_order.is_null() {
                write_out(out_order, order, "out_order")?;
            }
        }
        Ok(())
    })
}

/// The smallest noise multiplier z = σ/C (to relative precision 1e-9, rounded up so that it
/// meets the target) for which `steps` >= 1 steps of the sampled Gaussian mechanism with
/// sampling probability q in (0, 1] stay within (ε, δ) (ε > 0, δ in (0, 1)), by bisection over
/// `dpd_rdp_epsilon`'s accountant. Errors: `DPD_ERR_INVALID_ARGUMENT`, `DPD_ERR_NUMERICAL` (no
/// z <= 1e6 suffices).
///
/// # Safety
/// `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_rdp_noise_multiplier(
    epsilon: f64,
    delta: f64,
    steps: u64,
    q: f64,
    sampling_kind: u32,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_rdp_noise_multiplier", || {
        check_out(out, "out")?;
        let target = budget(epsilon, delta)?;
        steps_at_least_one(steps)?;
        let z =
            dp_noise::rdp::calibrate_noise_multiplier(target, steps, sampling(sampling_kind, q)?)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, z, "out") }
    })
}

/// The smallest noise multiplier z for which `iterations` >= 1 iterations of a trainer with
/// `config`'s model, sampling, clipping norm and DCA settings on `n_clients` clients with `dim`
/// features stay within (ε, δ): bisection over the very mechanism the trainer charges (DCA's
/// sum of discrete Gaussians from N − T − 1 honest clients; its grid depends on z). `config`'s
/// privacy choice is ignored; pass the result to `dpd_iterative_config_set_private` with the
/// same (ε, δ).
///
/// # Safety
/// `config` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_calibrate_noise_multiplier(
    config: *const dpd_iterative_config,
    n_clients: usize,
    dim: usize,
    epsilon: f64,
    delta: f64,
    iterations: u64,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_iterative_calibrate_noise_multiplier", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handle.
        let config = unsafe { handle_ref(config, "config") }?;
        let target: PrivacyLoss = budget(epsilon, delta)?;
        steps_at_least_one(iterations)?;
        if dim == 0 {
            return Err(FfiError::invalid("`dim` must be >= 1"));
        }
        check_dim(config.model(), dim)?;
        let settings = config.trainer_config(Privacy::NonPrivate);
        let z = calibrate_noise_multiplier(&settings, n_clients, dim, target, iterations)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, z, "out") }
    })
}
