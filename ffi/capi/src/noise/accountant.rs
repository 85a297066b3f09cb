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

use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// A privacy budget and what has been spent of it.
pub struct dpd_accountant {
    inner: Accountant,
}

/// Creates an accountant with budget (ε, δ): ε finite and >= 0, δ ∈ [0, 1). Gaussian rounds
/// compose exactly (μ-GDP, Dong–Roth–Su 2019).
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
        let inner = Accountant::new(PrivacyLoss::new(epsilon, delta)?)?;
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
        let inner = Accountant::with_composition(
            PrivacyLoss::new(epsilon, delta)?,
            GaussianComposition::Zcdp,
        )?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_accountant { inner }), "out") }
    })
}

/// Charges `cost()` to the accountant behind `accountant`.
///
/// # Safety
/// `accountant` must be NULL or a live handle not used concurrently.
unsafe fn charge(
    name: &str,
    accountant: *mut dpd_accountant,
    cost: impl FnOnce() -> dp_noise::Result<RoundCost>,
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
/// proven for the discrete mechanism.
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
            RoundCost::gaussian(l2_sensitivity, sigma)
        })
    }
}

/// Charges a ρ-zCDP round (ρ finite and > 0).
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
            RoundCost::zcdp(rho)
        })
    }
}

/// Charges an ε-DP round (e.g. Laplace); ε = 0 is refused (`DPD_ERR_INVALID_ARGUMENT`).
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
            RoundCost::pure(epsilon)
        })
    }
}

/// Charges an (ε, δ)-DP round (basic composition); (0, 0) is refused.
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
            RoundCost::approx(epsilon, delta)
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
