//! The aggregator's privacy budget. Its accountant keeps no state of its own: it is the
//! charges recorded in the store, replayed, so that processes sharing the store check each
//! charge against the same record, in the transaction that records it, and never overspend
//! between them.

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition, RoundCost};

use crate::aggregator::store::Charges;
use crate::{Error, Result};

/// The whole budget of a deployment, (ε, δ).
#[derive(Debug, Clone, Copy)]
pub(in crate::aggregator) struct Budget(PrivacyLoss);

impl Budget {
    /// `limit`, checked against the charges recorded so far.
    pub(in crate::aggregator) fn checked(limit: PrivacyLoss, recorded: &Charges) -> Result<Self> {
        replay(limit, recorded)?;
        Ok(Budget(limit))
    }

    /// The privacy the `recorded` charges spent.
    pub(in crate::aggregator) fn spent(&self, recorded: &Charges) -> Result<PrivacyLoss> {
        Ok(replay(self.0, recorded)?.spent())
    }

    /// Whether a charge of zCDP `rho` (and a verified round's `truncation_delta`) fits on top
    /// of the recorded charges it is given: the accountant replays them with this one.
    pub(in crate::aggregator) fn fits(
        &self,
        rho: f64,
        truncation_delta: f64,
    ) -> impl Fn(&Charges) -> Result<()> + Send + 'static {
        let budget = self.0;
        move |charges| {
            let mut with_this = charges.clone();
            with_this.rho.push(rho);
            with_this.truncation_delta += truncation_delta;
            replay(budget, &with_this).map(drop)
        }
    }
}

/// An accountant with `budget` that has paid `charges` (the recorded ones: rounds, and jobs'
/// reservations as they stand).
pub(in crate::aggregator) fn replay(budget: PrivacyLoss, charges: &Charges) -> Result<Accountant> {
    // A DCA release carries a sum of discrete Gaussians, not a continuous Gaussian: the exact
    // μ-GDP curve is proven only for the latter, while zCDP holds for the sum too
    // (Kairouz–Liu–Steinke 2021, Thm 1; see `round_rho`). So rounds compose in zCDP here, as
    // in the in-process BLR pipeline.
    let mut accountant =
        Accountant::with_composition(budget, GaussianComposition::Zcdp).map_err(Error::Budget)?;
    for &rho in &charges.rho {
        if rho > 0.0 {
            let cost = RoundCost::zcdp(rho).map_err(Error::Budget)?;
            accountant.charge(cost).map_err(Error::Budget)?;
        }
    }
    if charges.truncation_delta > 0.0 {
        charge_truncation(&mut accountant, charges.truncation_delta)?;
    }
    Ok(accountant)
}

/// Charges the verified rounds' truncation: their clamped noise equals the unclamped noise
/// except on an event of probability ≤ δ_t each, so the rounds as run are within total
/// variation Σδ_t of rounds the zCDP charges bound, and (ε, δ′) becomes
/// (ε, δ′ + (1 + e^ε)·Σδ_t) (`verified_shares::bound::total_delta`). The accountant converts
/// ρ at δ′ = budget δ − D for a charge D of δ alone; the D charged is the smallest found with
/// (1 + e^ε(δ_B − D))·Σδ_t ≤ D, by iterating from D = 0 (ε grows with D, so the iterates
/// increase; a few steps for δ_t ≪ δ). Over the budget: refused as any charge is.
fn charge_truncation(accountant: &mut Accountant, sum_delta_t: f64) -> Result<()> {
    let mut charged = 0.0;
    for _ in 0..64 {
        let mut trial = accountant.clone();
        if charged > 0.0 {
            let cost = RoundCost::approx(0.0, charged).map_err(Error::Budget)?;
            trial.charge(cost).map_err(Error::Budget)?;
        }
        let needed = (1.0 + trial.spent().epsilon.exp()) * sum_delta_t;
        if needed <= charged {
            *accountant = trial;
            return Ok(());
        }
        // A hair above what is needed, so that the next step can confirm it.
        charged = needed * (1.0 + 1e-9);
    }
    Err(Error::Budget(dp_noise::Error::InvalidParameter {
        name: "truncation delta",
        value: sum_delta_t,
        requirement: "small enough that (1 + e^ε)·Σδ_t settles within the budget's δ",
    }))
}
