//! Noise samplers writing into caller buffers (`dp_noise::{discrete, continuous, objective}`).
//!
//! Each fills exactly `len` elements of `out` from a fresh child stream of `rng`. Parameters are
//! validated before anything is drawn or written; `out` may be NULL only when `len == 0`.

use dp_noise::discrete::{DiscreteGaussian, DiscreteLaplace};
use dp_noise::{continuous, objective};

use crate::alloc::zeroed;
use crate::guard::ffi_entry;
use crate::handle::handle_mut;
use crate::privacy;
use crate::ptr::slice_out;
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// Fills `out[0..len]` with exact discrete Gaussian samples N_Z(0, σ²) (Canonne, Kamath &
/// Steinke 2020), σ in integer units, σ ∈ [2^-8, 2^52]. Invalid σ → `DPD_ERR_INVALID_ARGUMENT`
/// (`DPD_ERR_NON_FINITE` for NaN/inf).
///
/// # Safety
/// `rng` must be NULL or a live `dpd_rng` not used concurrently; `out` must be NULL with
/// `len == 0` or point to `len` writable `int64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_sample_discrete_gaussian(
    rng: *mut dpd_rng,
    sigma_units: f64,
    out: *mut i64,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_sample_discrete_gaussian", || {
        // SAFETY: header contract for `rng` and `(out, len)`.
        let (rng, out) = unsafe { (handle_mut(rng, "rng")?, slice_out(out, len, "out")?) };
        let sampler = DiscreteGaussian::new(sigma_units)?;
        sampler.fill(&mut rng.next_source().try_rng()?, out);
        Ok(())
    })
}

/// Fills `out[0..len]` with exact discrete Laplace samples, P(y) ∝ exp(−|y|/b), b in integer
/// units, b ∈ [2^-32, 2^52].
///
/// # Safety
/// As `dpd_sample_discrete_gaussian`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_sample_discrete_laplace(
    rng: *mut dpd_rng,
    scale_units: f64,
    out: *mut i64,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_sample_discrete_laplace", || {
        // SAFETY: header contract for `rng` and `(out, len)`.
        let (rng, out) = unsafe { (handle_mut(rng, "rng")?, slice_out(out, len, "out")?) };
        let sampler = DiscreteLaplace::new(scale_units)?;
        sampler.fill(&mut rng.next_source().try_rng()?, out);
        Ok(())
    })
}

/// Fills `out[0..len]` with N(0, σ²) floating-point samples (trusted-aggregator path; DCA
/// clients use the exact discrete sampler instead). σ must be finite and > 0.
///
/// # Safety
/// `rng` as `dpd_sample_discrete_gaussian`; `out` must be NULL with `len == 0` or point to
/// `len` writable `double`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_sample_gaussian(
    rng: *mut dpd_rng,
    sigma: f64,
    out: *mut f64,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_sample_gaussian", || {
        // SAFETY: header contract for `rng` and `(out, len)`.
        let (rng, out) = unsafe { (handle_mut(rng, "rng")?, slice_out(out, len, "out")?) };
        // Sample into a scratch buffer so that `out` is untouched if the sampler refuses.
        let mut scratch = zeroed::<f64>(len, "sample buffer")?;
        let sigma = privacy::sigma("sigma", sigma)?;
        continuous::fill_gaussian(&mut rng.next_source().try_rng()?, sigma, &mut scratch)?;
        out.copy_from_slice(&scratch);
        Ok(())
    })
}

/// Fills `out[0..len]` with Laplace(0, b) floating-point samples. b must be finite and > 0.
///
/// # Safety
/// As `dpd_sample_gaussian`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_sample_laplace(
    rng: *mut dpd_rng,
    scale: f64,
    out: *mut f64,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_sample_laplace", || {
        // SAFETY: header contract for `rng` and `(out, len)`.
        let (rng, out) = unsafe { (handle_mut(rng, "rng")?, slice_out(out, len, "out")?) };
        let mut scratch = zeroed::<f64>(len, "sample buffer")?;
        let scale = privacy::sigma("scale", scale)?;
        continuous::fill_laplace(&mut rng.next_source().try_rng()?, scale, &mut scratch)?;
        out.copy_from_slice(&scratch);
        Ok(())
    })
}

/// Fills `out[0..d]` with an objective-perturbation noise vector b of density
/// ∝ exp(−ε′‖b‖/2): ‖b‖ ~ Gamma(d, 2/ε′), direction uniform on the sphere. d >= 1, ε′ > 0.
///
/// # Safety
/// As `dpd_sample_gaussian` with `len = d`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_sample_objective_perturbation(
    rng: *mut dpd_rng,
    epsilon_prime: f64,
    out: *mut f64,
    d: usize,
) -> dpd_status {
    ffi_entry("dpd_sample_objective_perturbation", || {
        // SAFETY: header contract for `rng` and `(out, d)`.
        let (rng, out) = unsafe { (handle_mut(rng, "rng")?, slice_out(out, d, "out")?) };
        let mut scratch = zeroed::<f64>(d, "sample buffer")?;
        objective::fill_objective_perturbation(
            &mut rng.next_source().try_rng()?,
            privacy::epsilon("epsilon_prime", epsilon_prime)?,
            &mut scratch,
        )?;
        out.copy_from_slice(&scratch);
        Ok(())
    })
}
