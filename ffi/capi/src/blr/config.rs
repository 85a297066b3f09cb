//! The settings of a private BLR fit, as a builder handle: created with the budget and the
//! public assumed bounds, then adjusted by setters (so that new settings never change an
//! existing signature).
//!
//! Defaults: trusted aggregator, Gaussian mechanism, projection (Alg. 2: DP std round of pooled σ
//! with 10% of the budget, the DCA paper's threshold grid), prior λ = λ₀ = 1, Σy² not released.

use blr::{FitConfig, Mechanism, Prior, ProjectionConfig};
use dp_noise::PrivacyLoss;
use projection::release::{Aggregation, DcaSettings};

use crate::alloc::copied;
use crate::dca::round::share_mode;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, into_handle};
use crate::privacy;
use crate::ptr::{check_out, slice_in, write_out};
use crate::status::dpd_status;

/// Settings of a private BLR fit.
pub struct dpd_blr_config {
    pub(crate) inner: FitConfig,
}

/// Creates fit settings with total budget (ε, δ) (δ is ignored by Laplace) and the public
/// assumed bounds |x_j| <= `assumed_x[j]` (j < d = `d`) and |y| <= `assumed_y`. The bounds must
/// be public knowledge, never computed from the private data.
///
/// Refused at construction, nothing created: ε outside [1e-6, 100] or δ not 0 and outside
/// [2.2e-308, 0.01] → `DPD_ERR_INVALID_PRIVACY_PARAMETER`; a NaN or infinite bound →
/// `DPD_ERR_NON_FINITE`; a bound <= 0 or d = 0 → `DPD_ERR_INVALID_ARGUMENT` (the bounds set the
/// sensitivity, so a bound that is not a positive number would void the guarantee).
///
/// # Safety
/// `assumed_x` NULL only with `d == 0`, else `d` readable doubles; `out` NULL (→ error) or a
/// writable `dpd_blr_config*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_new(
    epsilon: f64,
    delta: f64,
    assumed_x: *const f64,
    d: usize,
    assumed_y: f64,
    out: *mut *mut dpd_blr_config,
) -> dpd_status {
    ffi_entry("dpd_blr_config_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `(assumed_x, d)`.
        let assumed_x = unsafe { slice_in(assumed_x, d, "assumed_x") }?;
        let budget = PrivacyLoss::new(
            privacy::epsilon("epsilon", epsilon)?,
            privacy::delta_or_zero("delta", delta)?,
        )?;
        if assumed_x.is_empty() {
            return Err(FfiError::invalid("`d` = 0: at least one feature is needed"));
        }
        for (j, &bound) in assumed_x.iter().enumerate() {
            check_bound(&format!("assumed_x[{j}]"), bound)?;
        }
        check_bound("assumed_y", assumed_y)?;
        let inner = FitConfig {
            aggregation: Aggregation::Trusted,
            mechanism: Mechanism::Gaussian,
            budget,
            assumed_x: copied(assumed_x, "assumed bounds")?,
            assumed_y,
            projection: Some(ProjectionConfig::default()),
            prior: Prior::default(),
            with_yy: false,
        };
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_blr_config { inner }), "out") }
    })
}

/// An assumed bound must be a finite positive number.
fn check_bound(name: &str, bound: f64) -> FfiResult<()> {
    if !bound.is_finite() {
        return Err(FfiError::new(
            dpd_status::DPD_ERR_NON_FINITE,
            format!("`{name}` = {bound} is not finite: assumed bounds are finite and > 0"),
        ));
    }
    if bound <= 0.0 {
        return Err(FfiError::invalid(format!(
            "`{name}` = {bound}: assumed bounds must be > 0"
        )));
    }
    Ok(())
}

/// Runs `change` on the settings behind `config`.
///
/// # Safety
/// `config` NULL or a live handle not used concurrently.
pub(crate) unsafe fn update(
    name: &str,
    config: *mut dpd_blr_config,
    change: impl FnOnce(&mut FitConfig) -> FfiResult<()>,
) -> dpd_status {
    ffi_entry(name, || {
        // SAFETY: forwarded caller contract.
        let config = unsafe { handle_mut(config, "config") }?;
        change(&mut config.inner)
    })
}

/// Who adds the noise: a trusted aggregator (`dpd_blr_config_new`'s default).
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_trusted(config: *mut dpd_blr_config) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_trusted", config, |c| {
            c.aggregation = Aggregation::Trusted;
            Ok(())
        })
    }
}

/// Who adds the noise: the clients, through DCA with `n_nodes` >= 2 compute nodes, at most
/// `max_dropped` missing or colluding clients, masks sent as `mode` (`DPD_SHARE_MODE_*`).
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_distributed(
    config: *mut dpd_blr_config,
    n_nodes: u32,
    max_dropped: usize,
    mode: u32,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_distributed", config, |c| {
            let n_nodes = u16::try_from(n_nodes)
                .ok()
                .filter(|&m| m >= 2)
                .ok_or_else(|| {
                    FfiError::invalid(format!("`n_nodes` = {n_nodes}: need 2..=65535"))
                })?;
            c.aggregation = Aggregation::Distributed(DcaSettings {
                n_nodes,
                max_dropped,
                mode: share_mode(mode)?,
            });
            Ok(())
        })
    }
}

/// Who adds the noise: every client its own full noise (input perturbation; the weakest
/// baseline).
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_input_perturbation(
    config: *mut dpd_blr_config,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_input_perturbation", config, |c| {
            c.aggregation = Aggregation::InputPerturbation;
            Ok(())
        })
    }
}

/// Uses Laplace noise (pure ε-DP, robust LR paper) with the budget split (p₁, p₂, p₃) over
/// Σxxᵀ, Σxy, Σy² (positive, summing to 1; the paper's optimum is (0.6, 0.35, 0.05)).
/// Validated when fitting.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_laplace(
    config: *mut dpd_blr_config,
    p1: f64,
    p2: f64,
    p3: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_laplace", config, |c| {
            c.mechanism = Mechanism::Laplace {
                split: [p1, p2, p3],
            };
            Ok(())
        })
    }
}

/// Turns the projection of Alg. 2 (DP std round + threshold search on auxiliary data) on
/// (`enabled = 1`, the default) or off (`0`: statistics at the assumed bounds, whole budget).
/// Turning it on when it is already on keeps its settings (`dpd_blr_config_set_dp_std`,
/// `dpd_blr_config_set_public_std`).
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_projection(
    config: *mut dpd_blr_config,
    enabled: u32,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_projection", config, |c| {
            c.projection = match enabled {
                0 => None,
                1 => Some(c.projection.take().unwrap_or_default()),
                v => {
                    return Err(FfiError::invalid(format!(
                        "`enabled` must be 0 or 1, got {v}"
                    )));
                }
            };
            Ok(())
        })
    }
}

/// Sets the model's fixed precisions: noise λ > 0 and prior λ₀ > 0 (both 1 by default).
/// Validated when fitting.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_prior(
    config: *mut dpd_blr_config,
    lambda: f64,
    lambda0: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_prior", config, |c| {
            c.prior = Prior { lambda, lambda0 };
            Ok(())
        })
    }
}

/// Also releases Σy² in the statistics round (`enabled = 1`; default `0`), which the
/// Gamma-prior fit (`dpd_blr_fit_gamma_prior`) needs. Costs no extra budget: the sensitivity
/// and the noise account for the extra coordinate.
///
/// # Safety
/// As `dpd_blr_config_set_trusted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_set_release_yy(
    config: *mut dpd_blr_config,
    enabled: u32,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_blr_config_set_release_yy", config, |c| {
            c.with_yy = match enabled {
                0 => false,
                1 => true,
                v => {
                    return Err(FfiError::invalid(format!(
                        "`enabled` must be 0 or 1, got {v}"
                    )));
                }
            };
            Ok(())
        })
    }
}

/// Frees fit settings; NULL is a no-op.
///
/// # Safety
/// `config` must be NULL or a handle from `dpd_blr_config_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_blr_config_free(config: *mut dpd_blr_config) {
    // SAFETY: header contract.
    unsafe { free_handle(config) }
}
