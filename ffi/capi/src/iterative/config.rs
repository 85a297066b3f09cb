//! The settings of an iterative training run, as a builder handle: created with the model, then
//! adjusted by setters (so that new settings never change an existing signature). Every setter
//! validates its arguments and leaves the settings unchanged when it fails.
//!
//! Defaults: Poisson sampling at rate 0.05, Adam (learning rate 0.02, β₁ = 0.9, β₂ = 0.999,
//! ε̂ = 1e-8), clipping norm C = 1, M = 3 compute nodes, T = 0 dropouts. The privacy has **no**
//! default: a trainer is refused until `dpd_iterative_config_set_private` (or, for baselines,
//! `dpd_iterative_config_set_non_private`) chose it, so a run is never non-private by accident.

use dca_learning::{ClientSampling, FeatureRange, Model, Optimizer, Privacy, TrainerConfig};
use dp_noise::PrivacyLoss;

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, into_handle};
use crate::ptr::{check_out, slice_in, write_out};
use crate::status::dpd_status;

/// Settings of an iterative private training run (model, sampling, optimizer, privacy, DCA).
pub struct dpd_iterative_config {
    model: Model,
    sampling: ClientSampling,
    optimizer: Optimizer,
    clip_norm: f64,
    privacy: Option<Privacy>,
    n_nodes: u16,
    max_dropped: usize,
    /// Public feature ranges (logistic regression only); their count is checked against d
    /// when the trainer is created.
    ranges: Option<Vec<FeatureRange>>,
}

impl dpd_iterative_config {
    fn with_model(model: Model) -> FfiResult<Self> {
        model.validate()?;
        Ok(Self {
            model,
            sampling: ClientSampling::Poisson { rate: 0.05 },
            optimizer: Optimizer::adam(0.02),
            clip_norm: 1.0,
            privacy: None,
            n_nodes: 3,
            max_dropped: 0,
            ranges: None,
        })
    }

    /// The trainer's configuration with `privacy` (the chosen one, or a stand-in for
    /// calibration, which ignores it).
    pub(crate) fn trainer_config(&self, privacy: Privacy) -> TrainerConfig {
        TrainerConfig {
            model: self.model,
            sampling: self.sampling,
            clip_norm: self.clip_norm,
            privacy,
            optimizer: self.optimizer,
            n_nodes: self.n_nodes,
            max_dropped: self.max_dropped,
        }
    }

    /// The trainer's configuration; refused while the privacy has not been chosen.
    pub(crate) fn chosen(&self) -> FfiResult<TrainerConfig> {
        let privacy = self.privacy.ok_or_else(|| {
            FfiError::new(
                dpd_status::DPD_ERR_INVALID_STATE,
                "the privacy of the run is not chosen: call dpd_iterative_config_set_private \
                 (or dpd_iterative_config_set_non_private for a baseline) first",
            )
        })?;
        Ok(self.trainer_config(privacy))
    }

    pub(crate) fn model(&self) -> Model {
        self.model
    }

    pub(crate) fn ranges(&self) -> Option<&[FeatureRange]> {
        self.ranges.as_deref()
    }
}

/// A privacy budget that can be spent: ε ∈ [1e-6, 100], δ ∈ [2.2e-308, 0.01] (the header's
/// privacy-parameter ranges; `DPD_ERR_INVALID_PRIVACY_PARAMETER` outside them).
pub(crate) fn budget(epsilon: f64, delta: f64) -> FfiResult<PrivacyLoss> {
    let loss = PrivacyLoss::new(
        crate::privacy::epsilon("epsilon", epsilon)?,
        crate::privacy::delta("delta", delta)?,
    )?;
    if epsilon <= 0.0 || delta <= 0.0 {
        return Err(FfiError::invalid(format!(
            "the budget (epsilon = {epsilon}, delta = {delta}) must have epsilon > 0 and delta \
             in (0, 1)"
        )));
    }
    Ok(loss)
}

/// Hands new settings to C.
///
/// # Safety
/// `out` NULL (→ error) or writable.
unsafe fn give(
    out: *mut *mut dpd_iterative_config,
    make: impl FnOnce() -> FfiResult<dpd_iterative_config>,
) -> FfiResult<()> {
    check_out(out, "out")?;
    let config = make()?;
    // SAFETY: forwarded caller contract.
    unsafe { write_out(out, into_handle(config), "out") }
}

/// Settings for logistic regression without intercept (`dpd_iterative_config_set_intercept`
/// adds one): per-client loss ln(1 + exp(−y·wᵀx)), labels in {0, 1} or {−1, +1}, public penalty
/// (`l2`/2)‖w‖² with `l2` >= 0 — the objective of PLR without its noise.
///
/// # Safety
/// `out` NULL (→ `DPD_ERR_NULL_POINTER`) or a writable `dpd_iterative_config*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_new_logistic(
    l2: f64,
    out: *mut *mut dpd_iterative_config,
) -> dpd_status {
    ffi_entry("dpd_iterative_config_new_logistic", || {
        // SAFETY: forwarded caller contract.
        unsafe {
            give(out, || {
                dpd_iterative_config::with_model(Model::Logistic {
                    l2,
                    intercept: false,
                })
            })
        }
    })
}

/// Settings for Bayesian linear regression by DP variational inference: y ~ N(xᵀβ, 1/λ),
/// β ~ N(0, I/λ₀), mean-field Gaussian posterior N(m, diag(s²)) with parameters θ = (m, ln s)
/// of length 2d. `noise_precision` = λ > 0, `prior_precision` = λ₀ > 0.
///
/// # Safety
/// As `dpd_iterative_config_new_logistic`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_new_blr_vi(
    noise_precision: f64,
    prior_precision: f64,
    out: *mut *mut dpd_iterative_config,
) -> dpd_status {
    ffi_entry("dpd_iterative_config_new_blr_vi", || {
        // SAFETY: forwarded caller contract.
        unsafe {
            give(out, || {
                dpd_iterative_config::with_model(Model::LinearRegressionVi {
                    noise_precision,
                    prior_precision,
                })
            })
        }
    })
}

/// Runs `change` on the settings behind `config`.
///
/// # Safety
/// `config` NULL or a live handle not used concurrently.
unsafe fn update(
    name: &str,
    config: *mut dpd_iterative_config,
    change: impl FnOnce(&mut dpd_iterative_config) -> FfiResult<()>,
) -> dpd_status {
    ffi_entry(name, || {
        // SAFETY: forwarded caller contract.
        let config = unsafe { handle_mut(config, "config") }?;
        change(config)
    })
}

/// Logistic regression only: `intercept` = 1 estimates an intercept b beside the weights, so
/// P(y = 1 | x) = σ(wᵀx + b); 0 leaves it out (the default of
/// `dpd_iterative_config_new_logistic`). With it θ has d + 1 values, b last
/// (`dpd_iterative_trainer_params`), b is inside each record's clipped gradient (the clip norm
/// bounds ‖(gradient of w, gradient of b)‖, so the noise and the accounting are unchanged) and
/// is not penalised by `l2`. Errors: `DPD_ERR_INVALID_ARGUMENT` (`intercept` not 0 or 1),
/// `DPD_ERR_INVALID_STATE` (the settings are not logistic regression's); unchanged on error.
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_intercept(
    config: *mut dpd_iterative_config,
    intercept: u32,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_intercept", config, |c| {
            let wanted = match intercept {
                0 => false,
                1 => true,
                other => {
                    return Err(FfiError::invalid(format!("`intercept` = {other}: 0 or 1")));
                }
            };
            match &mut c.model {
                Model::Logistic { intercept, .. } => {
                    *intercept = wanted;
                    Ok(())
                }
                Model::LinearRegressionVi { .. } => Err(FfiError::new(
                    dpd_status::DPD_ERR_INVALID_STATE,
                    "an intercept is an option of logistic regression only; these settings \
                     are for DP-VI Bayesian linear regression",
                )),
            }
        })
    }
}

/// Logistic regression only: public feature ranges, `lo[j] < hi[j]` both finite, one pair per
/// feature (`n_ranges` must equal the trainer's d, checked by `dpd_iterative_trainer_new`),
/// known without looking at the data. Each record's x_j is clamped into [lo_j, hi_j] and mapped
/// onto [−1, 1] — (clamp(x_j) − (lo_j + hi_j)/2) / ((hi_j − lo_j)/2), the map of
/// `dpd_plr_fit_with_ranges` — before its gradient is computed and clipped; the map is public
/// and per record, so the noise and the accounting are unchanged. θ is on the mapped scale;
/// `dpd_iterative_trainer_predict` maps raw rows the same way. `n_ranges` = 0 (`lo`, `hi` may
/// be NULL) removes the ranges. Errors: `DPD_ERR_INVALID_ARGUMENT` naming the first bad 0-based
/// column, `DPD_ERR_NULL_POINTER` (`lo` or `hi` NULL with `n_ranges` > 0),
/// `DPD_ERR_INVALID_STATE` (the settings are not logistic regression's); unchanged on error.
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `lo` and
/// `hi` NULL only with `n_ranges == 0`, else readable for `n_ranges` doubles each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_ranges(
    config: *mut dpd_iterative_config,
    lo: *const f64,
    hi: *const f64,
    n_ranges: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_ranges", config, |c| {
            // Inside the caller's `unsafe`: `(lo, n_ranges)` and `(hi, n_ranges)` readable.
            let (lo, hi) = (slice_in(lo, n_ranges, "lo")?, slice_in(hi, n_ranges, "hi")?);
            if let Model::LinearRegressionVi { .. } = c.model {
                return Err(FfiError::new(
                    dpd_status::DPD_ERR_INVALID_STATE,
                    "public feature ranges are an option of logistic regression only; these \
                     settings are for DP-VI Bayesian linear regression",
                ));
            }
            c.ranges = if n_ranges == 0 {
                None
            } else {
                Some(crate::plr::fit::feature_ranges_checked(lo, hi)?)
            };
            Ok(())
        })
    }
}

/// Poisson sampling: every client joins each iteration's batch independently with probability
/// `rate` in (0, 1], flipping its own coin (nobody, not even the trainer, learns the batch).
/// Guarantee for add/remove-one client. The released sum is divided by rate·N.
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_poisson(
    config: *mut dpd_iterative_config,
    rate: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_poisson", config, |c| {
            if !(rate > 0.0 && rate <= 1.0) {
                let status = if rate.is_nan() {
                    dpd_status::DPD_ERR_NON_FINITE
                } else {
                    dpd_status::DPD_ERR_INVALID_ARGUMENT
                };
                return Err(FfiError::new(
                    status,
                    format!("`rate` = {rate}: must be in (0, 1]"),
                ));
            }
            c.sampling = ClientSampling::Poisson { rate };
            Ok(())
        })
    }
}

/// Fixed-size sampling: the trainer draws exactly `batch` >= 1 of the N clients uniformly
/// without replacement each iteration (`batch` <= N is checked when the trainer is created).
/// Guarantee for replace-one client, against everyone but the trainer (which knows the batch;
/// use Poisson sampling when the trainer is not trusted).
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_fixed_size(
    config: *mut dpd_iterative_config,
    batch: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_fixed_size", config, |c| {
            if batch == 0 {
                return Err(FfiError::invalid("`batch` must be >= 1"));
            }
            c.sampling = ClientSampling::FixedSize { batch };
            Ok(())
        })
    }
}

/// Plain SGD: θ ← θ − `learning_rate`·g (learning rate > 0).
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_sgd(
    config: *mut dpd_iterative_config,
    learning_rate: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_sgd", config, |c| {
            let optimizer = Optimizer::Sgd { learning_rate };
            optimizer.validate()?;
            c.optimizer = optimizer;
            Ok(())
        })
    }
}

/// Adam with bias correction: learning rate > 0, β₁ and β₂ in [0, 1), `epsilon` > 0 (the
/// denominator's constant, not a privacy parameter).
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_adam(
    config: *mut dpd_iterative_config,
    learning_rate: f64,
    beta1: f64,
    beta2: f64,
    epsilon: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_adam", config, |c| {
            let optimizer = Optimizer::Adam {
                learning_rate,
                beta1,
                beta2,
                epsilon,
            };
            optimizer.validate()?;
            c.optimizer = optimizer;
            Ok(())
        })
    }
}

/// C > 0: every client's gradient is scaled to ℓ2 norm <= C (ignored by a non-private run).
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_clip_norm(
    config: *mut dpd_iterative_config,
    clip_norm: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_clip_norm", config, |c| {
            positive(clip_norm, "clip_norm")?;
            c.clip_norm = clip_norm;
            Ok(())
        })
    }
}

/// Each iteration is one DCA round with `n_nodes` >= 2 compute nodes that tolerates at most
/// `max_dropped` missing or colluding clients (its noise is calibrated so that the N − T − 1
/// honest shares alone carry σ_total; N − T − 1 >= 1 is checked when the trainer is created).
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_dca(
    config: *mut dpd_iterative_config,
    n_nodes: u32,
    max_dropped: usize,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_dca", config, |c| {
            c.n_nodes = u16::try_from(n_nodes)
                .ok()
                .filter(|&m| m >= 2)
                .ok_or_else(|| {
                    FfiError::invalid(format!("`n_nodes` = {n_nodes}: need 2..=65535"))
                })?;
            c.max_dropped = max_dropped;
            Ok(())
        })
    }
}

/// A private run: every round adds noise σ_total = `noise_multiplier`·C per coordinate and is
/// charged to a Rényi-DP accountant with budget (ε, δ) (ε > 0, δ in (0, 1)); an iteration that
/// would exceed it is refused before anything is released. `noise_multiplier` z > 0 — get the
/// smallest z that lasts a planned number of iterations from
/// `dpd_iterative_calibrate_noise_multiplier`.
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_private(
    config: *mut dpd_iterative_config,
    epsilon: f64,
    delta: f64,
    noise_multiplier: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_private", config, |c| {
            let budget = budget(epsilon, delta)?;
            positive(noise_multiplier, "noise_multiplier")?;
            c.privacy = Some(Privacy::Private {
                budget,
                noise_multiplier,
            });
            Ok(())
        })
    }
}

/// A non-private run (no noise, no clipping, ε = ∞) over the same DCA rounds: for baselines and
/// tests only.
///
/// # Safety
/// As `dpd_iterative_config_set_poisson`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_set_non_private(
    config: *mut dpd_iterative_config,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        update("dpd_iterative_config_set_non_private", config, |c| {
            c.privacy = Some(Privacy::NonPrivate);
            Ok(())
        })
    }
}

/// Frees settings; NULL is a no-op.
///
/// # Safety
/// `config` must be NULL or a handle from a `dpd_iterative_config_new_*` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_config_free(config: *mut dpd_iterative_config) {
    // SAFETY: header contract.
    unsafe { free_handle(config) }
}

/// Checks a finite positive scalar.
fn positive(value: f64, name: &str) -> FfiResult<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else if value.is_finite() {
        Err(FfiError::invalid(format!(
            "`{name}` = {value}: must be > 0"
        )))
    } else {
        Err(FfiError::new(
            dpd_status::DPD_ERR_NON_FINITE,
            format!("`{name}` = {value}: must be finite and > 0"),
        ))
    }
}
