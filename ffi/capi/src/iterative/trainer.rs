//! The trainer handle: public parameters, optimizer state and the Rényi-DP accountant of one
//! iterative run; steps over the clients' records, prediction and the privacy spent.

use dca_learning::{Model, Records, StepReport, Trainer};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::iterative::config::dpd_iterative_config;
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// An iterative training run in progress (or finished): its parameters θ and its accountant.
pub struct dpd_iterative_trainer {
    inner: Trainer,
}

/// What one iteration released and what the run has spent after it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct dpd_iterative_step_info {
    /// The iteration (0-based).
    pub iteration: u64,
    /// σ of the noise in the released sum (σ_client·sqrt(n_included); 0 when non-private).
    pub noise_sigma_released: f64,
    /// Clients whose shares are in the sum (sampled or not: every client takes part).
    pub n_included: usize,
    /// ε spent by the run so far (INFINITY when non-private).
    pub epsilon_spent: f64,
    /// δ spent by the run so far (0 when non-private).
    pub delta_spent: f64,
}

impl From<&StepReport> for dpd_iterative_step_info {
    fn from(r: &StepReport) -> Self {
        let (epsilon_spent, delta_spent) = r
            .spent
            .map_or((f64::INFINITY, 0.0), |s| (s.epsilon, s.delta));
        Self {
            iteration: r.iteration,
            noise_sigma_released: r.noise_sigma_released,
            n_included: r.n_included,
            epsilon_spent,
            delta_spent,
        }
    }
}

/// d, the number of features per record (θ has d or 2d values).
fn features(trainer: &Trainer) -> usize {
    match trainer.config().model {
        // With an intercept θ = (w, b) has d + 1 values.
        Model::Logistic { intercept, .. } => trainer.params().len() - usize::from(intercept),
        Model::LinearRegressionVi { .. } => trainer.params().len() / 2,
    }
}

/// Checks that θ (d or 2d values) can be allocated before the trainer allocates it, so an
/// absurd `dim` is an error instead of an aborted process.
pub(crate) fn check_dim(model: Model, dim: usize) -> FfiResult<()> {
    let n_params = match model {
        Model::Logistic { intercept, .. } => dim.checked_add(usize::from(intercept)),
        Model::LinearRegressionVi { .. } => dim.checked_mul(2),
    };
    let too_large = || {
        FfiError::new(
            dpd_status::DPD_ERR_OVERFLOW,
            format!("`dim` = {dim}: the model's parameters do not fit in memory"),
        )
    };
    // θ, the optimizer's two moment vectors and a step's gradient: ask for all four at once
    // (and let go), so that a size that could never be allocated is refused here instead of
    // aborting the process inside the trainer.
    let total = n_params
        .and_then(|p| p.checked_mul(4))
        .ok_or_else(too_large)?;
    let mut probe: Vec<f64> = Vec::new();
    probe.try_reserve_exact(total).map_err(|_| too_large())?;
    Ok(())
}

/// Creates a trainer for `n_clients` clients (one record each) with `dim` features, with the
/// settings of `config` (whose privacy must have been chosen, else `DPD_ERR_INVALID_STATE`).
/// Masks, noise and (fixed-size) batches come from `rng` — `dpd_rng_new_os` in production.
/// Errors: `DPD_ERR_INVALID_ARGUMENT` (batch > N, N − T − 1 < 1, dim = 0, public ranges
/// (`dpd_iterative_config_set_ranges`) whose count is not `dim`, ...); `rng` does not move on
/// error.
///
/// # Safety
/// `config`, `rng` NULL (→ error) or live handles (`rng` not used concurrently); `out` NULL
/// (→ error) or a writable `dpd_iterative_trainer*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_new(
    config: *const dpd_iterative_config,
    n_clients: usize,
    dim: usize,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_iterative_trainer,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for the handles.
        let (config, rng) = unsafe { (handle_ref(config, "config")?, handle_mut(rng, "rng")?) };
        let settings = config.chosen()?;
        check_dim(config.model(), dim)?;
        if let Some(ranges) = config.ranges()
            && ranges.len() != dim
        {
            return Err(FfiError::invalid(format!(
                "`n_ranges` = {} (dpd_iterative_config_set_ranges): one range per feature, \
                 `dim` = {dim}",
                ranges.len()
            )));
        }
        let inner = rng.on_next_source(|source| -> FfiResult<Trainer> {
            let trainer = Trainer::new(settings, n_clients, dim, *source)?;
            Ok(match config.ranges() {
                Some(ranges) => trainer.with_feature_ranges(ranges.to_vec())?,
                None => trainer,
            })
        })?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_iterative_trainer { inner }), "out") }
    })
}

/// The clients' records as the trainer wants them: `x` holds `n` rows of the trainer's d
/// features (row-major, `x_len = n·d`), `y[0..n]` the labels (logistic: 0/1 or ±1).
///
/// # Safety
/// Arrays NULL only with length 0, else readable for their lengths.
unsafe fn records(
    trainer: &Trainer,
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
) -> FfiResult<Records> {
    // SAFETY: forwarded caller contract.
    let (x, y) = unsafe { (slice_in(x, x_len, "x")?, slice_in(y, n, "y")?) };
    let d = features(trainer);
    if n.checked_mul(d) != Some(x.len()) {
        return Err(FfiError::new(
            dpd_status::DPD_ERR_LENGTH_MISMATCH,
            format!("`x` has {} values, n·d = {n}·{d}", x.len()),
        ));
    }
    Ok(Records::new(x.to_vec(), d, y.to_vec())?)
}

/// One iteration on the clients' records (`n` must equal the trainer's N): check the budget,
/// run the DCA round (clients listed in `dropped[0..n_dropped]` send nothing; at most T), update
/// θ. `*out_info` (may be NULL) describes the release. Errors: `DPD_ERR_BUDGET_EXCEEDED` or
/// `DPD_ERR_TOO_MANY_DROPPED` before anything is released or spent; `DPD_ERR_NUMERICAL` if
/// θ would become non-finite (lower the learning rate). On any error θ, the optimizer state and
/// the iteration count are unchanged.
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle not used concurrently; arrays NULL only with
/// length 0, else readable; `out_info` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Records, dropouts and the report, flat for R/Julia.
pub unsafe extern "C" fn dpd_iterative_trainer_step(
    trainer: *mut dpd_iterative_trainer,
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    dropped: *const usize,
    n_dropped: usize,
    out_info: *mut dpd_iterative_step_info,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_step", || {
        // SAFETY: header contract for the handle and the arrays.
        let (trainer, dropped) = unsafe {
            (
                handle_mut(trainer, "trainer")?,
                slice_in(dropped, n_dropped, "dropped")?,
            )
        };
        // SAFETY: header contract for the records.
        let records = unsafe { records(&trainer.inner, x, x_len, y, n) }?;
        let report = trainer.inner.step(&records, dropped)?;
        if !out_info.is_null() {
            // SAFETY: non-NULL and writable by the header contract.
            unsafe { write_out(out_info, dpd_iterative_step_info::from(&report), "out_info") }?;
        }
        Ok(())
    })
}

/// Up to `iterations` iterations without dropouts; stops early, successfully, when the next one
/// would exceed the budget. The number done is written to `*out_done` (0 when the budget was
/// already spent). Records as `dpd_iterative_trainer_step`.
///
/// # Safety
/// As `dpd_iterative_trainer_step`; `out_done` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_fit(
    trainer: *mut dpd_iterative_trainer,
    x: *const f64,
    x_len: usize,
    y: *const f64,
    n: usize,
    iterations: u64,
    out_done: *mut u64,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_fit", || {
        check_out(out_done, "out_done")?;
        // SAFETY: header contract for the handle.
        let trainer = unsafe { handle_mut(trainer, "trainer") }?;
        // SAFETY: header contract for the records.
        let records = unsafe { records(&trainer.inner, x, x_len, y, n) }?;
        let done = trainer.inner.fit(&records, iterations)?;
        // SAFETY: `out_done` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out_done, done, "out_done") }
    })
}

/// Copies the public parameters θ into `out` (query-size pattern): the d weights of logistic
/// regression, then its intercept b when `dpd_iterative_config_set_intercept` asked for one
/// (d + 1 values); for DP-VI BLR the 2d values (m_1..m_d, ln s_1..ln s_d) of the posterior
/// N(m, diag(s²)).
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
/// rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_params(
    trainer: *const dpd_iterative_trainer,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_params", || {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract.
        unsafe {
            let trainer = handle_ref(trainer, "trainer")?;
            write_array(trainer.inner.params(), out, out_cap, out_len, "out")
        }
    })
}

/// Copies the last iteration's released sum — Σ over the sampled, present clients of their
/// clipped gradients plus the round's noise, as every party of the DCA round saw it — into `out`
/// (query-size pattern; as many values as `dpd_iterative_trainer_params` has). Written by
/// `dpd_iterative_trainer_step` and by each iteration of `dpd_iterative_trainer_fit`; length 0
/// before the first iteration. Public information: reading it costs no privacy.
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle; `(out, out_cap, out_len)` per the output-array
/// rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_last_release(
    trainer: *const dpd_iterative_trainer,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_last_release", || {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract.
        unsafe {
            let trainer = handle_ref(trainer, "trainer")?;
            write_array(trainer.inner.last_release(), out, out_cap, out_len, "out")
        }
    })
}

/// Describes the run: iterations done, number of features d and of parameters (d, or 2d for
/// DP-VI BLR), and the noise multiplier z (0 when non-private). Any out-pointer may be NULL.
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_info(
    trainer: *const dpd_iterative_trainer,
    out_iterations: *mut u64,
    out_dim: *mut usize,
    out_n_params: *mut usize,
    out_noise_multiplier: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_info", || {
        // SAFETY: header contract.
        let trainer = &unsafe { handle_ref(trainer, "trainer") }?.inner;
        let n_params = trainer.params().len();
        let dim = features(trainer);
        let z = match trainer.config().privacy {
            dca_learning::Privacy::Private {
                noise_multiplier, ..
            } => noise_multiplier,
            dca_learning::Privacy::NonPrivate => 0.0,
        };
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_iterations.is_null() {
                write_out(out_iterations, trainer.iteration(), "out_iterations")?;
            }
            if !out_dim.is_null() {
                write_out(out_dim, dim, "out_dim")?;
            }
            if !out_n_params.is_null() {
                write_out(out_n_params, n_params, "out_n_params")?;
            }
            if !out_noise_multiplier.is_null() {
                write_out(out_noise_multiplier, z, "out_noise_multiplier")?;
            }
        }
        Ok(())
    })
}

/// The privacy the accountant has charged so far, (ε, δ): ε at the budget's δ (ε = 0 before
/// the first iteration; ε = INFINITY, δ = 0 for a non-private run). Either pointer may be NULL.
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle; each out-pointer NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_spent(
    trainer: *const dpd_iterative_trainer,
    out_epsilon: *mut f64,
    out_delta: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_spent", || {
        // SAFETY: header contract.
        let trainer = &unsafe { handle_ref(trainer, "trainer") }?.inner;
        let (epsilon, delta) = trainer
            .spent()
            .map_or((f64::INFINITY, 0.0), |s| (s.epsilon, s.delta));
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_epsilon.is_null() {
                write_out(out_epsilon, epsilon, "out_epsilon")?;
            }
            if !out_delta.is_null() {
                write_out(out_delta, delta, "out_delta")?;
            }
        }
        Ok(())
    })
}

/// Predictions for the rows of `x` (row-major, `x_len` a positive multiple of d), one per row
/// into `out` (query-size pattern): P(y = 1 | x) = σ(wᵀx), or σ(wᵀx + b) with an intercept, for
/// logistic regression, the posterior mean xᵀm for DP-VI BLR. With public ranges
/// (`dpd_iterative_config_set_ranges`) each raw row is first clamped and mapped as the records
/// were in training. Uses only θ, which is public: costs no privacy.
///
/// # Safety
/// `trainer` NULL (→ error) or a live handle; `x` NULL only with `x_len == 0`, else readable;
/// `(out, out_cap, out_len)` per the output-array rule.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_predict(
    trainer: *const dpd_iterative_trainer,
    x: *const f64,
    x_len: usize,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_iterative_trainer_predict", || {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for the handle and `(x, x_len)`.
        let (trainer, x) = unsafe {
            (
                &handle_ref(trainer, "trainer")?.inner,
                slice_in(x, x_len, "x")?,
            )
        };
        let d = features(trainer);
        if d == 0 || x.is_empty() || !x.len().is_multiple_of(d) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!(
                    "`x` has {} values: need a positive multiple of d = {d}",
                    x.len()
                ),
            ));
        }
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(x.len() / d, out_cap, out_len, "out") }?;
        let predictions = trainer.predict(x)?;
        // SAFETY: header contract for the output array.
        unsafe { write_array(&predictions, out, out_cap, out_len, "out") }
    })
}

/// Frees a trainer; NULL is a no-op.
///
/// # Safety
/// `trainer` must be NULL or a handle from `dpd_iterative_trainer_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_iterative_trainer_free(trainer: *mut dpd_iterative_trainer) {
    // SAFETY: header contract.
    unsafe { free_handle(trainer) }
}

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};

    use super::*;
    use crate::iterative::config::*;
    use crate::rng::{dpd_rng_free, dpd_rng_new_insecure_fixed_seed};

    /// A trainer refused for its ranges' count leaves the generator where it was: a private
    /// step from it then releases, noise included, exactly what a step from a fresh generator
    /// of the same seed releases.
    #[test]
    fn a_refused_range_count_does_not_move_the_generator() {
        let (lo, hi) = ([0.0, -2.0], [10.0, 2.0]);
        let x = [2.5, 3.0, 12.5, -1.0, 1.0, 0.0];
        let y = [1.0, 0.0, 1.0];
        // SAFETY: every pointer is a live local or a handle made here.
        unsafe {
            let mut config = null_mut();
            assert_eq!(
                dpd_iterative_config_new_logistic(0.0, &mut config),
                dpd_status::DPD_OK
            );
            assert_eq!(
                dpd_iterative_config_set_ranges(config, lo.as_ptr(), hi.as_ptr(), 2),
                dpd_status::DPD_OK
            );
            assert_eq!(
                dpd_iterative_config_set_private(config, 5.0, 1e-5, 1.0),
                dpd_status::DPD_OK
            );
            let release = |refuse_first: bool| {
                let mut rng = null_mut();
                assert_eq!(
                    dpd_rng_new_insecure_fixed_seed(17, &mut rng),
                    dpd_status::DPD_OK
                );
                let mut trainer = null_mut();
                if refuse_first {
                    assert_eq!(
                        dpd_iterative_trainer_new(config, 3, 3, rng, &mut trainer),
                        dpd_status::DPD_ERR_INVALID_ARGUMENT
                    );
                    assert!(trainer.is_null());
                }
                assert_eq!(
                    dpd_iterative_trainer_new(config, 3, 2, rng, &mut trainer),
                    dpd_status::DPD_OK
                );
                assert_eq!(
                    dpd_iterative_trainer_step(
                        trainer,
                        x.as_ptr(),
                        6,
                        y.as_ptr(),
                        3,
                        null(),
                        0,
                        null_mut()
                    ),
                    dpd_status::DPD_OK
                );
                let released = (*trainer).inner.last_release().to_vec();
                dpd_iterative_trainer_free(trainer);
                dpd_rng_free(rng);
                released
            };
            assert_eq!(release(true), release(false));
            dpd_iterative_config_free(config);
        }
    }
}
