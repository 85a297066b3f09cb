//! The privacy accountant handle (`dp_noise::accountant::Accountant`).
//!
//! Charge a round BEFORE releasing its output: a charge that would take the total past the
//! budget returns `DPD_ERR_BUDGET_EXCEEDED` and changes nothing, and the round must not be
//! released. Gaussian rounds compose exactly in μ-GDP (one round calibrated for (ε, δ) costs
//! exactly (ε, δ)), zCDP rounds in zCDP (a plan with any zCDP round converts its Gaussian rounds
//! through zCDP too), (ε, δ) rounds by basic composition. `dpd_accountant_new_zcdp` keeps the
//! older zCDP composition of Gaussian rounds.

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition, RoundCost};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::privacy;
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// A privacy budget and what has been spent of it.
pub struct dpd_accountant {
    inner: Accountant,
}

/// Creates an accountant with budget (ε, δ): ε ∈ [1e-6, 100], δ = 0 or δ ∈ [2.2e-308, 0.01]
/// (`DPD_ERR_INVALID_PRIVACY_PARAMETER` otherwise). Gaussian rounds compose exactly (μ-GDP,
/// Dong–Roth–Su 2019).
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_accountant*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_new(
    epsilon: f64,
    delta: f64,
    out: *mut *mut dpd_accountant,
) -> dpd_status {
    ffi_entry("dpd_accountant_new", || {
        check_out(out, "out")?;
        let inner = Accountant::new(budget(epsilon, delta)?)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_accountant { inner }), "out") }
    })
}

/// Creates an accountant with budget (ε, δ) that composes Gaussian rounds as μ²/2-zCDP and
/// converts with Bun & Steinke's bound (looser than `dpd_accountant_new`; for plans written in
/// zCDP).
///
/// # Safety
/// As `dpd_accountant_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_new_zcdp(
    epsilon: f64,
    delta: f64,
    out: *mut *mut dpd_accountant,
) -> dpd_status {
    ffi_entry("dpd_accountant_new_zcdp", || {
        check_out(out, "out")?;
        let inner =
            Accountant::with_composition(budget(epsilon, delta)?, GaussianComposition::Zcdp)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_accountant { inner }), "out") }
    })
}

/// A budget (ε, δ) in the documented ranges: ε ∈ [1e-6, 100], δ = 0 or in [2.2e-308, 0.01].
fn budget(epsilon: f64, delta: f64) -> FfiResult<PrivacyLoss> {
    Ok(PrivacyLoss::new(
        privacy::epsilon("epsilon", epsilon)?,
        privacy::delta_or_zero("delta", delta)?,
    )?)
}

/// Charges `cost()` to the accountant behind `accountant`.
///
/// # Safety
/// `accountant` must be NULL or a live handle not used concurrently.
unsafe fn charge(
    name: &str,
    accountant: *mut dpd_accountant,
    cost: impl FnOnce() -> FfiResult<RoundCost>,
) -> dpd_status {
    ffi_entry(name, || {
        // SAFETY: forwarded caller contract.
        let accountant = unsafe { handle_mut(accountant, "accountant") }?;
        accountant.inner.charge(cost()?)?;
        Ok(())
    })
}

/// Charges a Gaussian round of ℓ2-sensitivity Δ₂ and noise σ: μ = Δ₂/σ, composed exactly in
/// μ-GDP (or as ρ = μ²/2 in zCDP, see `dpd_accountant_new_zcdp`). For the discrete Gaussian of
/// DCA charge `dpd_accountant_charge_zcdp` with ρ = Δ₂²/(2σ²) in grid units: that is the bound
/// proven for the discrete mechanism. Δ₂ ∈ [1e-12, 1e12] and σ ∈ [1e-15, 1e20], else
/// `DPD_ERR_INVALID_PRIVACY_PARAMETER`.
/// `DPD_ERR_BUDGET_EXCEEDED` (nothing charged) if the total would exceed the budget.
///
/// # Safety
/// `accountant` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_charge_gaussian(
    accountant: *mut dpd_accountant,
    l2_sensitivity: f64,
    sigma: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        charge("dpd_accountant_charge_gaussian", accountant, || {
            Ok(RoundCost::gaussian(
                privacy::sensitivity("l2_sensitivity", l2_sensitivity)?,
                privacy::sigma("sigma", sigma)?,
            )?)
        })
    }
}

/// Charges a ρ-zCDP round, ρ ∈ [5e-13, 5000] (ε_min²/2 to ε_max²/2; a zero-cost charge is
/// refused with `DPD_ERR_INVALID_PRIVACY_PARAMETER`).
///
/// # Safety
/// As `dpd_accountant_charge_gaussian`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_charge_zcdp(
    accountant: *mut dpd_accountant,
    rho: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        charge("dpd_accountant_charge_zcdp", accountant, || {
            Ok(RoundCost::zcdp(privacy::rho("rho", rho)?)?)
        })
    }
}

/// Charges an ε-DP round (e.g. Laplace), ε ∈ [1e-6, 100]; ε = 0 (a zero-cost charge) and
/// anything else outside the range is refused (`DPD_ERR_INVALID_PRIVACY_PARAMETER`).
///
/// # Safety
/// As `dpd_accountant_charge_gaussian`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_charge_pure(
    accountant: *mut dpd_accountant,
    epsilon: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        charge("dpd_accountant_charge_pure", accountant, || {
            Ok(RoundCost::pure(privacy::epsilon("epsilon", epsilon)?)?)
        })
    }
}

/// Charges an (ε, δ)-DP round (basic composition): ε = 0 or in [1e-6, 100], δ = 0 or in
/// [2.2e-308, 0.01], not both 0 (a zero-cost charge); otherwise
/// `DPD_ERR_INVALID_PRIVACY_PARAMETER`.
///
/// # Safety
/// As `dpd_accountant_charge_gaussian`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_charge_approx(
    accountant: *mut dpd_accountant,
    epsilon: f64,
    delta: f64,
) -> dpd_status {
    // SAFETY: forwarded caller contract.
    unsafe {
        charge("dpd_accountant_charge_approx", accountant, || {
            let epsilon = privacy::epsilon_or_zero("epsilon", epsilon)?;
            let delta = privacy::delta_or_zero("delta", delta)?;
            if epsilon == 0.0 && delta == 0.0 {
                return Err(FfiError::new(
                    dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
                    "a charge of (epsilon, delta) = (0, 0) costs nothing and is refused: \
                     epsilon in {0} ∪ [1e-6, 100], delta in {0} ∪ [2.2e-308, 0.01], not both 0",
                ));
            }
            Ok(RoundCost::approx(epsilon, delta)?)
        })
    }
}

/// Writes the total (ε, δ) spent so far and the number of rounds charged. Any of the three
/// out-pointers may be NULL (that value is then not reported).
///
/// # Safety
/// `accountant` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; each out-pointer
/// must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_spent(
    accountant: *const dpd_accountant,
    out_epsilon: *mut f64,
    out_delta: *mut f64,
    out_rounds: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_accountant_spent", || -> FfiResult<()> {
        // SAFETY: header contract for `accountant`.
        let accountant = unsafe { handle_ref(accountant, "accountant") }?;
        let spent = accountant.inner.spent();
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_epsilon.is_null() {
                write_out(out_epsilon, spent.epsilon, "out_epsilon")?;
            }
            if !out_delta.is_null() {
                write_out(out_delta, spent.delta, "out_delta")?;
            }
            if !out_rounds.is_null() {
                write_out(out_rounds, accountant.inner.rounds(), "out_rounds")?;
            }
        }
        Ok(())
    })
}

/// Frees an accountant; NULL is a no-op.
///
/// # Safety
/// `accountant` must be NULL or a handle from `dpd_accountant_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_accountant_free(accountant: *mut dpd_accountant) {
    // SAFETY: header contract.
    unsafe { free_handle(accountant) }
}
