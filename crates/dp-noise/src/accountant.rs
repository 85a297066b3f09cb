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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn zcdp_composition_of_gaussian_rounds_matches_hand_computation() {
        // Ten rounds of Δ = 1, σ = 5: ρ = 1/(2·25) = 0.02 each, Σρ = 0.2.
        // δ = 1e-5: ln(1/δ) = 11.512925465; ρ·ln = 2.302585093; sqrt = 1.517427129;
        // ε = 0.2 + 2·1.517427129 = 3.234854259.
        let mut acc = Accountant::new(PrivacyLoss::new(3.3, 1e-5).unwrap()).unwrap();
        let round = RoundCost::gaussian(1.0, 5.0).unwrap();
        assert_eq!(round, RoundCost::Zcdp { rho: 0.02 });
        for _ in 0..10 {
            acc.charge(round).unwrap();
        }
        assert!(close(acc.rho_spent(), 0.2));
        let spent = acc.spent();
        assert!(close(spent.epsilon, 3.234_854_258_770_293), "{spent:?}");
        assert_eq!(spent.delta, 1e-5);
        assert_eq!(acc.rounds(), 10);

        // An eleventh round: Σρ = 0.22, ln·ρ = 2.532843602, sqrt = 1.591491000,
        // ε = 0.22 + 3.182981999 = 3.402981999 > 3.3 — refused, nothing changes.
        let before = acc.clone();
        let err = acc.charge(round).unwrap_err();
        match err {
            Error::BudgetExceeded {
                would_spend,
                budget,
            } => {
                assert!(close(would_spend.epsilon, 3.402_981_999_505_150_2));
                assert_eq!(budget, PrivacyLoss::new(3.3, 1e-5).unwrap());
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(acc, before);
    }

    #[test]
    fn basic_composition_adds_epsilons_and_deltas() {
        let mut acc = Accountant::new(PrivacyLoss::new(1.0, 1e-6).unwrap()).unwrap();
        acc.charge(RoundCost::pure(0.25).unwrap()).unwrap();
        acc.charge(RoundCost::approx(0.5, 4e-7).unwrap()).unwrap();
        let spent = acc.spent();
        assert!(close(spent.epsilon, 0.75));
        assert!(close(spent.delta, 4e-7));
        // 0.75 + 0.3 = 1.05 > 1: refused, unchanged.
        let before = acc.clone();
        assert!(matches!(
            acc.charge(RoundCost::pure(0.3).unwrap()),
            Err(Error::BudgetExceeded { .. })
        ));
        assert_eq!(acc, before);
        // δ over budget: 4e-7 + 7e-7 > 1e-6.
        assert!(acc.charge(RoundCost::approx(0.1, 7e-7).unwrap()).is_err());
        assert_eq!(acc, before);
        // Exactly filling the budget is allowed.
        acc.charge(RoundCost::pure(0.25).unwrap()).unwrap();
        assert!(close(acc.spent().epsilon, 1.0));
    }

    #[test]
    fn mixed_rounds_convert_zcdp_with_the_remaining_delta() {
        // One (0.1, 1e-6) round plus Σρ = 0.2 under δ_B = 1e-5: δ′ = 9e-6,
        // ln(1/δ′) = 11.618285981, ρ·ln = 2.323657196, sqrt = 1.524354682,
        // ε = 0.1 + 0.2 + 3.048709364 = 3.348709364.
        let mut acc = Accountant::new(PrivacyLoss::new(4.0, 1e-5).unwrap()).unwrap();
        acc.charge(RoundCost::approx(0.1, 1e-6).unwrap()).unwrap();
        acc.charge(RoundCost::zcdp(0.2).unwrap()).unwrap();
        let spent = acc.spent();
        assert!(
            close(spent.epsilon, 0.1 + 3.248_709_363_731_224),
            "{spent:?}"
        );
        assert_eq!(spent.delta, 1e-5);
    }

    #[test]
    fn check_is_a_dry_run() {
        let acc = Accountant::new(PrivacyLoss::new(1.0, 1e-5).unwrap()).unwrap();
        let before = acc.clone();
        let total = acc.check(RoundCost::pure(0.5).unwrap()).unwrap();
        assert_eq!(total, PrivacyLoss::new(0.5, 0.0).unwrap());
        assert_eq!(acc, before);
        assert_eq!(acc.spent(), PrivacyLoss::new(0.0, 0.0).unwrap());
    }

    #[test]
    fn gaussian_rounds_need_a_delta_budget() {
        let mut acc = Accountant::new(PrivacyLoss::new(10.0, 0.0).unwrap()).unwrap();
        assert!(matches!(
            acc.charge(RoundCost::zcdp(1e-6).unwrap()),
            Err(Error::BudgetExceeded { .. })
        ));
        assert_eq!(acc.rounds(), 0);
    }

    #[test]
    fn invalid_costs_and_budgets_are_refused() {
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            assert!(PrivacyLoss::new(bad, 1e-5).is_err());
            assert!(RoundCost::pure(bad).is_err());
            assert!(RoundCost::zcdp(bad).is_err());
            assert!(RoundCost::gaussian(bad, 1.0).is_err());
            assert!(RoundCost::gaussian(1.0, bad).is_err());
        }
        assert!(RoundCost::zcdp(0.0).is_err());
        assert!(RoundCost::gaussian(0.0, 1.0).is_err());
        for bad_delta in [f64::NAN, 1.0, -1e-9] {
            assert!(PrivacyLoss::new(1.0, bad_delta).is_err());
            assert!(RoundCost::approx(1.0, bad_delta).is_err());
        }
        // Public fields can be set by hand; the accountant validates them.
        let bad = PrivacyLoss {
            epsilon: f64::NAN,
            delta: 0.0,
        };
        assert!(Accountant::new(bad).is_err());
        let mut acc = Accountant::new(PrivacyLoss::new(1.0, 1e-5).unwrap()).unwrap();
        assert!(acc.charge(RoundCost::Approx(bad)).is_err());
        assert!(acc.charge(RoundCost::Zcdp { rho: -1.0 }).is_err());
        assert_eq!(acc.rounds(), 0);
        assert!(zcdp_to_approx(0.1, 0.0).is_err());
        assert!(zcdp_to_approx(f64::NAN, 1e-5).is_err());
    }
}
