//! A privacy accountant that refuses a round before anything is released.
//!
//! Usage: `accountant.charge(cost)?; release(...)` — when `charge` returns an error the state
//! is unchanged and the caller must not release.
//!
//! Composition:
//! * rounds given as (ε, δ) compose by basic composition: Σε, Σδ (Dwork & Roth 2014, Thm 3.16);
//! * Gaussian rounds are charged in zero-concentrated DP (Bun & Steinke 2016): a Gaussian of
//!   standard deviation σ on a query of ℓ2-sensitivity Δ is ρ-zCDP with ρ = Δ²/(2σ²) (the same
//!   holds for the discrete Gaussian, Canonne, Kamath & Steinke 2020), and ρ's add up;
//! * the total ρ is converted once, with the δ budget left after the (ε, δ) rounds:
//!   ρ-zCDP ⇒ (ρ + 2·sqrt(ρ·ln(1/δ′)), δ′)-DP for every δ′ > 0 (Bun & Steinke 2016, Prop. 1.3),
//!   and added to the basic-composition part.
//!
//! The total is therefore (Σε + ε_zCDP(Σρ, δ_B − Σδ), δ_B) when there are Gaussian rounds and
//! (Σε, Σδ) otherwise. A round is admitted iff the total after it is within the budget. The
//! guarantee is for a sequence of rounds whose costs do not depend on earlier noisy outputs
//! (costs fixed in the plan of the computation, as in DCA).

use crate::error::positive_finite;
use crate::{Error, PrivacyLoss, Result};

/// What one round costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundCost {
    /// An (ε, δ)-DP round (Laplace rounds have δ = 0); composed by basic composition.
    Approx(PrivacyLoss),
    /// A ρ-zCDP round (Gaussian noise); composed by adding ρ.
    Zcdp {
        /// ρ > 0.
        rho: f64,
    },
}

impl RoundCost {
    /// A Gaussian round: ρ = Δ₂²/(2σ²). Errors unless both are finite and > 0.
    pub fn gaussian(l2_sensitivity: f64, sigma: f64) -> Result<RoundCost> {
        positive_finite("l2_sensitivity", l2_sensitivity)?;
        positive_finite("sigma", sigma)?;
        let rho = l2_sensitivity * l2_sensitivity / (2.0 * sigma * sigma);
        RoundCost::zcdp(rho)
    }

    /// A ρ-zCDP round. Errors unless ρ is finite and > 0.
    pub fn zcdp(rho: f64) -> Result<RoundCost> {
        positive_finite("rho", rho)?;
        Ok(RoundCost::Zcdp { rho })
    }

    /// An ε-DP round (e.g. Laplace). Errors unless ε is finite and ≥ 0.
    pub fn pure(epsilon: f64) -> Result<RoundCost> {
        Ok(RoundCost::Approx(PrivacyLoss::new(epsilon, 0.0)?))
    }

    /// An (ε, δ)-DP round. Errors unless ε ≥ 0 finite and δ ∈ [0, 1).
    pub fn approx(epsilon: f64, delta: f64) -> Result<RoundCost> {
        Ok(RoundCost::Approx(PrivacyLoss::new(epsilon, delta)?))
    }

    fn validate(&self) -> Result<()> {
        match self {
            RoundCost::Approx(loss) => loss.validate(),
            RoundCost::Zcdp { rho } => positive_finite("rho", *rho).map(|_| ()),
        }
    }
}

/// Converts ρ-zCDP to (ε, δ)-DP: ε = ρ + 2·sqrt(ρ·ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
/// Errors unless ρ ≥ 0 is finite and δ ∈ (0, 1).
pub fn zcdp_to_approx(rho: f64, delta: f64) -> Result<PrivacyLoss> {
    if !(rho.is_finite() && rho >= 0.0) {
        return Err(Error::InvalidParameter {
            name: "rho",
            value: rho,
            requirement: "finite and >= 0",
        });
    }
    crate::error::open_unit("delta", delta)?;
    PrivacyLoss::new(rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt(), delta)
}

/// Tracks the privacy spent against a fixed budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Accountant {
    budget: PrivacyLoss,
    approx_epsilon: f64,
    approx_delta: f64,
    rho: f64,
    rounds: usize,
}

impl Accountant {
    /// An accountant with nothing spent. Errors unless the budget is a valid (ε, δ).
    pub fn new(budget: PrivacyLoss) -> Result<Accountant> {
        budget.validate()?;
        Ok(Accountant {
            budget,
            approx_epsilon: 0.0,
            approx_delta: 0.0,
            rho: 0.0,
            rounds: 0,
        })
    }

    /// The budget.
    pub fn budget(&self) -> PrivacyLoss {
        self.budget
    }

    /// The total privacy loss of the rounds charged so far.
    pub fn spent(&self) -> PrivacyLoss {
        // The stored state was admitted, so the total is computable.
        self.total(self.approx_epsilon, self.approx_delta, self.rho)
            .unwrap_or(self.budget)
    }

    /// The summed ρ of the zCDP rounds charged so far.
    pub fn rho_spent(&self) -> f64 {
        self.rho
    }

    /// Number of rounds charged so far.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The total loss if `cost` were charged now, or the refusal `charge` would return.
    /// Changes nothing.
    pub fn check(&self, cost: RoundCost) -> Result<PrivacyLoss> {
        cost.validate()?;
        let (eps, delta, rho) = match cost {
            RoundCost::Approx(loss) => (
                self.approx_epsilon + loss.epsilon,
                self.approx_delta + loss.delta,
                self.rho,
            ),
            RoundCost::Zcdp { rho } => (self.approx_epsilon, self.approx_delta, self.rho + rho),
        };
        let refused = |would_spend| Error::BudgetExceeded {
            would_spend,
            budget: self.budget,
        };
        let total = self.total(eps, delta, rho).map_err(|_| {
            refused(PrivacyLoss {
                epsilon: f64::INFINITY,
                delta,
            })
        })?;
        if total.epsilon <= self.budget.epsilon && total.delta <= self.budget.delta {
            Ok(total)
        } else {
            Err(refused(total))
        }
    }

    /// Charges `cost` if the total stays within the budget and returns the new total;
    /// otherwise returns [`Error::BudgetExceeded`] and changes nothing. Call it BEFORE
    /// releasing the round's output.
    pub fn charge(&mut self, cost: RoundCost) -> Result<PrivacyLoss> {
        let total = self.check(cost)?;
        match cost {
            RoundCost::Approx(loss) => {
                self.approx_epsilon += loss.epsilon;
                self.approx_delta += loss.delta;
            }
            RoundCost::Zcdp { rho } => self.rho += rho,
        }
        self.rounds += 1;
        Ok(total)
    }

    /// The composed loss of the given sums; errors if zCDP rounds leave no δ to convert with.
    fn total(&self, eps: f64, delta: f64, rho: f64) -> Result<PrivacyLoss> {
        if rho == 0.0 {
            return Ok(PrivacyLoss {
                epsilon: eps,
                delta,
            });
        }
        let converted = zcdp_to_approx(rho, self.budget.delta - delta)?;
        Ok(PrivacyLoss {
            epsilon: eps + converted.epsilon,
            delta: self.budget.delta,
        })
    }
}
