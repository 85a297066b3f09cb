//! The noise-aware posterior from statistics the host released itself (e.g. by its own DCA
//! rounds): the released vector, its shape, the public description of its noise, the bounds and
//! the priors in; the same `dpd_blr_noise_aware` handle as `dpd_blr_model_noise_aware` out.

use blr::{EntryNoise, LatentPrior, NoiseAwareOptions, Prior, StatsNoise, SuffStats};

use crate::blr::fit::dpd_blr_model;
use crate::blr::noise_aware::{check_mixture_fits, dpd_blr_noise_aware};
use crate::blr::stats::with_yy;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, slice_in, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// Pass as `dof` to integrate the degrees of freedom of the data-model prior, and a common scale
/// of its second moments, over their posterior given the released Σxxᵀ (what
/// `dpd_blr_model_noise_aware` does; `blr::latent`).
pub const DPD_BLR_DOF_FROM_RELEASE: f64 = 0.0;

/// The distribution of the noise on each entry of a block of released statistics.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dpd_noise_kind {
    /// N(0, sd²): the parameter is the standard deviation (DCA: σ·sqrt(N / (N − T − 1))).
    DPD_NOISE_GAUSSIAN = 0,
    /// Laplace(0, b): the parameter is the scale b.
    DPD_NOISE_LAPLACE = 1,
}

/// The public noise of a released statistics vector: one distribution for the d(d+1)/2 entries
/// of Σxxᵀ and one for the d entries of Σxy. Kinds are `dpd_noise_kind` values; a parameter of
/// 0 means that block carries no noise.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct dpd_blr_stats_noise {
    /// `dpd_noise_kind` of the Σxxᵀ entries.
    pub xx_kind: u32,
    /// Its standard deviation (Gaussian) or scale (Laplace), finite and >= 0.
    pub xx: f64,
    /// `dpd_noise_kind` of the Σxy entries.
    pub xy_kind: u32,
    /// Its standard deviation (Gaussian) or scale (Laplace), finite and >= 0.
    pub xy: f64,
}

fn entry_noise(kind: u32, parameter: f64, name: &str) -> FfiResult<EntryNoise> {
    use dpd_noise_kind as K;
    match kind {
        k if k == K::DPD_NOISE_GAUSSIAN as u32 => Ok(EntryNoise::Gaussian { sd: parameter }),
        k if k == K::DPD_NOISE_LAPLACE as u32 => Ok(EntryNoise::Laplace { scale: parameter }),
        other => Err(FfiError::invalid(format!(
            "`{name}` = {other}: use a DPD_NOISE_* value (0..=1)"
        ))),
    }
}

fn block(noise: EntryNoise) -> (u32, f64) {
    match noise {
        EntryNoise::Gaussian { sd } => (dpd_noise_kind::DPD_NOISE_GAUSSIAN as u32, sd),
        EntryNoise::Laplace { scale } => (dpd_noise_kind::DPD_NOISE_LAPLACE as u32, scale),
    }
}

/// Writes the public noise of the model's released statistics (`dpd_blr_model_stats`): the
/// calibrated noise of its statistics round as the fit's aggregation adds it (trusted
/// aggregator: one draw; DCA: σ·sqrt(N/(N − T − 1)); input perturbation: the sum of N draws).
///
/// # Safety
/// `model` NULL (→ error) or a live handle; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_model_stats_noise(
    model: *const dpd_blr_model,
    out: *mut dpd_blr_stats_noise,
) -> dpd_status {
    ffi_entry("dpd_blr_model_stats_noise", || {
        check_out(out, "out")?;
        // SAFETY: header contract.
        let model = unsafe { handle_ref(model, "model") }?;
        let noise = model.inner.stats_noise(&model.config)?;
        let ((xx_kind, xx), (xy_kind, xy)) = (block(noise.xx), block(noise.xy));
        let described = dpd_blr_stats_noise {
            xx_kind,
            xx,
            xy_kind,
            xy,
        };
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, described, "out") }
    })
}

/// The noise-aware posterior of β from a released statistics vector `stats` (layout as
/// `dpd_blr_record_stats`; Σy², present iff `with_yy = 1`, is not used) of `n` records and `d`
/// features whose noise is `*noise`, with the bounds `bounds_x[0..d]` every record was clipped
/// to (NULL with `bounds_len = 0`: none; then `second_moments` is required), the data-model
/// prior of the latent Σxxᵀ — per-feature second moments E[x_j²] `second_moments[0..d]` (NULL
/// with length 0: B_j²/3 from the bounds) known to `dof` > 0 records' worth, or
/// `DPD_BLR_DOF_FROM_RELEASE` (0) to integrate ν and the moments' scale over their posterior
/// given the release (the default) — the prior precisions `lambda` (noise) and `lambda0`
/// (coefficients), and `draws` >= 1 draws from `rng` (post-processing of the release: no
/// privacy cost; a fixed seed makes it reproducible). With the statistics, noise, bounds and
/// priors of a model and `DPD_BLR_DOF_FROM_RELEASE`, the result equals `dpd_blr_model_noise_aware`'s
/// for the same rng state. On any error nothing is created and `*out` is untouched.
///
/// # Safety
/// Arrays NULL only with length 0, else readable; `noise` NULL (→ error) or readable; `rng`
/// NULL (→ error) or a live handle not used concurrently; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // The release, its noise, bounds, priors and sampler.
pub unsafe extern "C" fn dpd_blr_noise_aware_from_stats(
    stats: *const f64,
    stats_len: usize,
    n: usize,
    d: usize,
    with_yy_flag: u32,
    noise: *const dpd_blr_stats_noise,
    bounds_x: *const f64,
    bounds_len: usize,
    second_moments: *const f64,
    second_moments_len: usize,
    dof: f64,
    lambda: f64,
    lambda0: f64,
    draws: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_blr_noise_aware,
) -> dpd_status {
    ffi_entry("dpd_blr_noise_aware_from_stats", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the arrays, `noise` and `rng`.
        let (flat, bounds, moments, noise, rng) = unsafe {
            (
                slice_in(stats, stats_len, "stats")?,
                slice_in(bounds_x, bounds_len, "bounds_x")?,
                slice_in(second_moments, second_moments_len, "second_moments")?,
                *noise.as_ref().ok_or_else(|| FfiError::null("noise"))?,
                handle_mut(rng, "rng")?,
            )
        };
        let stats = SuffStats::from_flat(flat, d, n, with_yy(with_yy_flag)?)?;
        let noise = StatsNoise {
            xx: entry_noise(noise.xx_kind, noise.xx, "noise->xx_kind")?,
            xy: entry_noise(noise.xy_kind, noise.xy, "noise->xy_kind")?,
        };
        check_mixture_fits(d, draws)?;
        let options = NoiseAwareOptions {
            draws,
            bounds_x: (!bounds.is_empty()).then_some(bounds),
            latent: LatentPrior::DataModel {
                second_moments: (!moments.is_empty()).then_some(moments),
                // Exactly 0 selects the estimate; anything else (negative, NaN) is checked.
                dof: (dof != DPD_BLR_DOF_FROM_RELEASE).then_some(dof),
            },
            // The library's default (adaptive draws on); not exposed in the C ABI.
            adaptive: NoiseAwareOptions::default().adaptive,
        };
        let prior = Prior { lambda, lambda0 };
        let inner = rng.on_next_source(|source| {
            blr::noise_aware_posterior(&stats, noise, prior, options, source)
        })?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_blr_noise_aware { inner }), "out") }
    })
}
