//! Uncertainty of a private BLR fit: the noise-aware posterior (the released statistics treated
//! as noisy observations of the true ones, `blr::noise_aware`) and, for comparison, the naive
//! Gaussian posterior that treats them as exact — posterior means, standard deviations and
//! central credible intervals for β and for predictions.

use blr::{NoiseAwarePosterior, Summary, naive_coefficients};

use crate::blr::fit::dpd_blr_model;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, slice_in, slice_out, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// The noise-aware posterior of β of a private BLR fit: a mixture of Gaussians.
pub struct dpd_blr_noise_aware {
    pub(crate) inner: NoiseAwarePosterior,
}

/// Refuses a number of draws whose mixture over d coefficients could never be allocated,
/// instead of aborting the process inside the sampler. Each draw keeps a d×d eigenbasis, two
/// d-vectors and some bookkeeping (a Mat and two Vec headers, its weights: under 16 doubles).
pub(crate) fn check_mixture_fits(d: usize, draws: usize) -> FfiResult<()> {
    let per_draw = d
        .checked_mul(d)
        .and_then(|dd| dd.checked_add(d.checked_mul(2)?))
        .and_then(|n| n.checked_add(16));
    let total = per_draw.and_then(|p| p.checked_mul(draws));
    let mut probe: Vec<f64> = Vec::new();
    if total.is_none_or(|t| probe.try_reserve_exact(t).is_err()) {
        return Err(FfiError::new(
            dpd_status::DPD_ERR_OVERFLOW,
            format!("`draws` = {draws}: the mixture of d = {d} would not fit in memory"),
        ));
    }
    Ok(())
}

/// The four parallel output arrays of a summary call.
struct SummaryOut {
    mean: *mut f64,
    sd: *mut f64,
    lower: *mut f64,
    upper: *mut f64,
    cap: usize,
    len: *mut usize,
}

impl SummaryOut {
    /// The four arrays `[mean, sd, lower, upper]` of capacity `cap` and the count's
    /// out-pointer, which must not be NULL.
    fn new(arrays: [*mut f64; 4], cap: usize, len: *mut usize) -> FfiResult<Self> {
        check_out(len, "out_len")?;
        let [mean, sd, lower, upper] = arrays;
        Ok(SummaryOut {
            mean,
            sd,
            lower,
            upper,
            cap,
            len,
        })
    }

    /// The query-size check for `needed` summaries before any work, then `summarise`, then
    /// each field of its summaries into its array and the count into `*len`.
    ///
    /// # Safety
    /// Each array NULL only with `cap == 0`, else `cap` writable doubles, not aliasing each
    /// other; `len` writable.
    unsafe fn fill(
        &self,
        needed: usize,
        summarise: impl FnOnce() -> FfiResult<Vec<Summary>>,
    ) -> FfiResult<()> {
        // SAFETY: forwarded caller contract (`len` non-NULL by construction).
        unsafe { reserve_array(needed, self.cap, self.len, "out_mean") }?;
        let summaries = summarise()?;
        // SAFETY: forwarded caller contract (distinct, writable arrays of `cap` doubles).
        let (mean, sd, lower, upper) = unsafe {
            (
                slice_out(self.mean, self.cap, "out_mean")?,
                slice_out(self.sd, self.cap, "out_sd")?,
                slice_out(self.lower, self.cap, "out_lower")?,
                slice_out(self.upper, self.cap, "out_upper")?,
            )
        };
        for (k, s) in summaries.iter().enumerate() {
            mean[k] = s.mean;
            sd[k] = s.sd;
            lower[k] = s.lower;
            upper[k] = s.upper;
        }
        // SAFETY: forwarded caller contract.
        unsafe { write_out(self.len, summaries.len(), "out_len") }
    }
}

/// The noise-aware posterior of the fit's coefficients (Bernstein & Sheldon 2019's model):
/// `draws` >= 1 draws of the latent Σxxᵀ given its released value and the public noise of the
/// fit's release (trusted aggregator, DCA or input perturbation, Gaussian or Laplace), inside
/// the box of the fit's clipping bounds, under the data-model prior (second moments B_j²/3 of
/// those bounds, their scale and the prior's degrees of freedom integrated over their
/// posterior given the release: `DPD_BLR_DOF_FROM_RELEASE`), each weighted by the likelihood of the
/// released Σxy; 1000 draws is a good default. `dpd_blr_noise_aware_from_stats` is the same for
/// statistics the host released itself. Randomness from `rng` (this is post-processing of the release:
/// it costs no privacy, and a fixed seed makes it reproducible). The prior precisions are the
/// fit's. Measured calibration and the approximations made are documented in `blr::noise_aware`.
///
/// # Safety
/// `model`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
/// (→ error) or a writable `dpd_blr_noise_aware*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_noise_aware(
    model: *const dpd_blr_model,
    draws: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_blr_noise_aware,
) -> dpd_status {
    ffi_entry("dpd_blr_model_noise_aware", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (model, rng) = unsafe { (handle_ref(model, "model")?, handle_mut(rng, "rng")?) };
        check_mixture_fits(model.inner.posterior.mean.len(), draws)?;
        let inner = rng.on_next_source(|source| {
            model
                .inner
                .noise_aware_posterior(&model.config, draws, source)
        })?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_blr_noise_aware { inner }), "out") }
    })
}

/// Posterior summaries of the coefficients β_1..β_d: means into `out_mean`, standard deviations
/// into `out_sd`, and the central credible interval at `level` in (0, 1) (e.g. 0.9) into
/// `out_lower` / `out_upper`. The four arrays share the capacity `out_cap` and the query-size
/// pattern (the length d goes to `*out_len`).
///
/// # Safety
/// `posterior` NULL (→ error) or a live handle; the four arrays NULL only with `out_cap == 0`,
/// else `out_cap` writable doubles each, not overlapping; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Four parallel output arrays.
pub unsafe extern "C" fn dpd_blr_noise_aware_coefficients(
    posterior: *const dpd_blr_noise_aware,
    level: f64,
    out_mean: *mut f64,
    out_sd: *mut f64,
    out_lower: *mut f64,
    out_upper: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_noise_aware_coefficients", || {
        let out = SummaryOut::new([out_mean, out_sd, out_lower, out_upper], out_cap, out_len)?;
        // SAFETY: header contract.
        let posterior = &unsafe { handle_ref(posterior, "posterior") }?.inner;
        // SAFETY: header contract for the arrays and `out_len`.
        unsafe { out.fill(posterior.mean.len(), || Ok(posterior.coefficients(level)?)) }
    })
}

/// Posterior summaries of predictions for the rows of `x` (row-major, `x_len` a positive
/// multiple of d): with `observation = 0` of the mean response xᵀβ, with `observation = 1` of a
/// new observation xᵀβ + e (adds the noise variance 1/λ). Outputs as
/// `dpd_blr_noise_aware_coefficients`, one per row.
///
/// # Safety
/// As `dpd_blr_noise_aware_coefficients`; `x` NULL only with `x_len == 0`, else readable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Rows, options and four parallel output arrays.
pub unsafe extern "C" fn dpd_blr_noise_aware_predict(
    posterior: *const dpd_blr_noise_aware,
    x: *const f64,
    x_len: usize,
    observation: u32,
    level: f64,
    out_mean: *mut f64,
    out_sd: *mut f64,
    out_lower: *mut f64,
    out_upper: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_noise_aware_predict", || {
        let out = SummaryOut::new([out_mean, out_sd, out_lower, out_upper], out_cap, out_len)?;
        // SAFETY: header contract for the handle and `(x, x_len)`.
        let (posterior, x) = unsafe {
            (
                &handle_ref(posterior, "posterior")?.inner,
                slice_in(x, x_len, "x")?,
            )
        };
        let observation = match observation {
            0 => false,
            1 => true,
            other => {
                return Err(FfiError::invalid(format!(
                    "`observation` must be 0 (mean response) or 1 (new observation), got {other}"
                )));
            }
        };
        let d = posterior.mean.len();
        if d == 0 || x.is_empty() || !x.len().is_multiple_of(d) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!(
                    "`x` has {} values: need a positive multiple of d = {d}",
                    x.len()
                ),
            ));
        }
        let summarise = || {
            x.chunks_exact(d)
                .map(|row| posterior.predict(row, observation, level))
                .collect::<blr::Result<Vec<_>>>()
                .map_err(FfiError::from)
        };
        // SAFETY: header contract for the arrays and `out_len`.
        unsafe { out.fill(x.len() / d, summarise) }
    })
}

/// Describes the posterior: the number of coefficients d and the effective sample size of its
/// importance weights, (Σw)²/Σw² (at most the draws used: a fit whose first `draws` give an
/// ESS below 10% of them draws more, doubling up to 16 × `draws`; a value still far below the
/// draws means few draws carry the posterior — use more). Either pointer may be NULL.
///
/// # Safety
/// `posterior` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_noise_aware_info(
    posterior: *const dpd_blr_noise_aware,
    out_d: *mut usize,
    out_effective_sample_size: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_blr_noise_aware_info", || {
        // SAFETY: header contract.
        let posterior = &unsafe { handle_ref(posterior, "posterior") }?.inner;
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_d.is_null() {
                write_out(out_d, posterior.mean.len(), "out_d")?;
            }
            if !out_effective_sample_size.is_null() {
                write_out(
                    out_effective_sample_size,
                    posterior.effective_sample_size,
                    "out_effective_sample_size",
                )?;
            }
        }
        Ok(())
    })
}

/// Frees a noise-aware posterior; NULL is a no-op.
///
/// # Safety
/// `posterior` must be NULL or a handle from `dpd_blr_model_noise_aware` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_noise_aware_free(posterior: *mut dpd_blr_noise_aware) {
    // SAFETY: header contract.
    unsafe { free_handle(posterior) }
}

/// The naive posterior's summaries of β (the released statistics treated as exact, as
/// `dpd_blr_model_mean` does): means, standard deviations and central intervals at `level`,
/// outputs as `dpd_blr_noise_aware_coefficients`. At small ε these intervals are too narrow;
/// they are here for comparison.
///
/// # Safety
/// `model` NULL (→ error) or a live handle; outputs as `dpd_blr_noise_aware_coefficients`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Four parallel output arrays.
pub unsafe extern "C" fn dpd_blr_model_coefficients(
    model: *const dpd_blr_model,
    level: f64,
    out_mean: *mut f64,
    out_sd: *mut f64,
    out_lower: *mut f64,
    out_upper: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_blr_model_coefficients", || {
        let out = SummaryOut::new([out_mean, out_sd, out_lower, out_upper], out_cap, out_len)?;
        // SAFETY: header contract.
        let posterior = &unsafe { handle_ref(model, "model") }?.inner.posterior;
        // SAFETY: header contract for the arrays and `out_len`.
        unsafe {
            out.fill(posterior.mean.len(), || {
                Ok(naive_coefficients(posterior, level)?)
            })
        }
    })
}
