//! A privacy accountant that refuses a round before anything is released.
//!
//! Usage: `accountant.charge(cost)?; release(...)` — when `charge` returns an error the state
//! is unchanged and the caller must not release.
//!
//! Composition:
//! * rounds given as (ε, δ) compose by basic composition: Σε, Σδ (Dwork & Roth 2014, Thm 3.16);
//! * Gaussian rounds ([`RoundCost::Gaussian`]: noise σ on a query of ℓ2-sensitivity Δ) are
//!   μ-GDP with μ = Δ/σ, and Gaussian mechanisms compose *exactly* as one Gaussian:
//!   μ = sqrt(Σ μᵢ²) (Dong, Roth & Su 2019, Cor. 3.3). The total μ is converted once with the
//!   exact privacy profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (ibid., Cor. 2.13; the same
//!   curve as the analytic Gaussian of Balle & Wang 2018). So one round calibrated by
//!   [`crate::calibrate::gaussian_sigma_analytic`] for (ε, δ) is charged exactly (ε, δ), and k
//!   rounds cost what their exact composition costs. This is [`GaussianComposition::Exact`],
//!   the default;
//! * ρ-zCDP rounds ([`RoundCost::Zcdp`]; e.g. the discrete Gaussian of DCA, for which the zCDP
//!   bound ρ = Δ²/(2σ²) is proven — Canonne, Kamath & Steinke 2020 — while the exact GDP curve
//!   is proven for the continuous Gaussian) add up their ρ (Bun & Steinke 2016). When any zCDP
//!   round is present, or with [`GaussianComposition::Zcdp`], the Gaussian rounds join them as
//!   μ²/2-zCDP and the total ρ is converted once: ρ-zCDP ⇒ (ρ + 2·sqrt(ρ·ln(1/δ′)), δ′)-DP
//!   (Bun & Steinke 2016, Prop. 1.3);
//! * the conversion uses the δ budget left after the (ε, δ) rounds, δ′ = δ_B − Σδ, and the
//!   result is added to the basic-composition part.
//!
//! The total is therefore (Σε + ε_Gaussian, δ_B) when there are Gaussian or zCDP rounds and
//! (Σε, Σδ) otherwise. A round is admitted iff the total after it is within the budget. A round
//! that costs nothing (ε = δ = 0) is refused rather than counted. The guarantee is for a sequence
//! of rounds whose costs do not depend on earlier noisy outputs (costs fixed in the plan of the
//! computation, as in DCA).

use crate::calibrate::ln_delta_of_scale;
use crate::error::positive_finite;
use crate::{Error, PrivacyLoss, Result};

/// Relative precision of the ε found by [`gdp_to_approx`] (rounded up, so never below the exact
/// value as evaluated). Finer than the margin by which
/// [`gaussian_sigma_analytic`](crate::calibrate::gaussian_sigma_analytic) rounds σ up, so that a
/// round calibrated for ε is never charged more than ε.
const GDP_EPSILON_RELATIVE_PRECISION: f64 = 1e-14;

/// What one round costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundCost {
    /// An (ε, δ)-DP round (Laplace rounds have δ = 0); composed by basic composition.
    Approx(PrivacyLoss),
    /// A ρ-zCDP round; composed by adding ρ.
    Zcdp {
        /// ρ > 0.
        rho: f64,
    },
    /// A Gaussian mechanism, μ-GDP with μ = Δ₂/σ; composed exactly, μ² adds up.
    Gaussian {
        /// μ > 0.
        mu: f64,
    },
}

impl RoundCost {
    /// A Gaussian round: μ = Δ₂/σ (μ-GDP, equivalently μ²/2-zCDP). Errors unless both are
    /// finite and > 0.
    pub fn gaussian(l2_sensitivity: f64, sigma: f64) -> Result<RoundCost> {
        positive_finite("l2_sensitivity", l2_sensitivity)?;
        positive_finite("sigma", sigma)?;
        let mu = positive_finite("mu = l2_sensitivity / sigma", l2_sensitivity / sigma)?;
        Ok(RoundCost::Gaussian { mu })
    }

    /// A ρ-zCDP round. Errors unless ρ is finite and > 0.
    pub fn zcdp(rho: f64) -> Result<RoundCost> {
        positive_finite("rho", rho)?;
        Ok(RoundCost::Zcdp { rho })
    }

    /// An ε-DP round (e.g. Laplace). Errors unless ε is finite and ≥ 0 (a charge of ε = 0 is
    /// refused by the accountant).
    pub fn pure(epsilon: f64) -> Result<RoundCost> {
        Ok(RoundCost::Approx(PrivacyLoss::new(epsilon, 0.0)?))
    }

    /// An (ε, δ)-DP round. Errors unless ε ≥ 0 finite and δ ∈ [0, 1).
    pub fn approx(epsilon: f64, delta: f64) -> Result<RoundCost> {
        Ok(RoundCost::Approx(PrivacyLoss::new(epsilon, delta)?))
    }

    /// Errors unless the cost is valid and not zero: a round that costs nothing is almost
    /// always a caller's mistake (a sensitivity or ε left at 0), and counting it would make
    /// [`Accountant::rounds`] lie.
    fn validate(&self) -> Result<()> {
        match self {
            RoundCost::Approx(loss) => {
                loss.validate()?;
                if loss.epsilon == 0.0 && loss.delta == 0.0 {
                    return Err(Error::InvalidParameter {
                        name: "round cost",
                        value: 0.0,
                        requirement: "epsilon > 0 or delta > 0 (a round that costs nothing is not charged)",
                    });
                }
                Ok(())
            }
            RoundCost::Zcdp { rho } => positive_finite("rho", *rho).map(|_| ()),
            RoundCost::Gaussian { mu } => positive_finite("mu", *mu).map(|_| ()),
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

/// Converts μ-GDP to (ε, δ)-DP exactly: the smallest ε ≥ 0 with
/// Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) ≤ δ (Dong, Roth & Su 2019, Cor. 2.13), found by bisection
/// to relative precision 1e-14 and rounded up. Errors unless μ > 0 is finite and δ ∈ (0, 1).
pub fn gdp_to_approx(mu: f64, delta: f64) -> Result<PrivacyLoss> {
    positive_finite("mu", mu)?;
    crate::error::open_unit("delta", delta)?;
    let ln_delta = delta.ln();
    // A Gaussian of σ = Δ/μ: the analytic-Gaussian curve at scale s = σ/Δ = 1/μ.
    let scale = 1.0 / mu;
    let private_enough = |epsilon: f64| ln_delta_of_scale(epsilon, scale) <= ln_delta;
    if private_enough(0.0) {
        return PrivacyLoss::new(0.0, delta);
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while !private_enough(hi) {
        lo = hi;
        hi *= 2.0;
        if !hi.is_finite() {
            return Err(Error::CalibrationFailed {
                reason: "no finite epsilon reaches the requested delta",
            });
        }
    }
    while hi - lo > GDP_EPSILON_RELATIVE_PRECISION * hi {
        let mid = 0.5 * (lo + hi);
        if private_enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    PrivacyLoss::new(hi, delta)
}

/// How an [`Accountant`] composes [`RoundCost::Gaussian`] rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GaussianComposition {
    /// Exactly, in μ-GDP (the default): a round calibrated for (ε, δ) costs exactly (ε, δ).
    #[default]
    Exact,
    /// As μ²/2-zCDP rounds, converted with Bun & Steinke's bound (looser; the accounting of
    /// dpdist before μ-GDP, kept for comparison and for plans written against it).
    Zcdp,
}

/// Tracks the privacy spent against a fixed budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Accountant {
    budget: PrivacyLoss,
    composition: GaussianComposition,
    approx_epsilon: f64,
    approx_delta: f64,
    rho: f64,
    mu_squared: f64,
    rounds: usize,
}

/// The sums the total is computed from.
#[derive(Debug, Clone, Copy)]
struct Spent {
    approx_epsilon: f64,
    approx_delta: f64,
    rho: f64,
    mu_squared: f64,
}

impl Accountant {
    /// An accountant with nothing spent that composes Gaussian rounds exactly (μ-GDP).
    /// Errors unless the budget is a valid (ε, δ).
    pub fn new(budget: PrivacyLoss) -> Result<Accountant> {
        Accountant::with_composition(budget, GaussianComposition::Exact)
    }

    /// An accountant with nothing spent and the given composition of Gaussian rounds.
    pub fn with_composition(
        budget: PrivacyLoss,
        composition: GaussianComposition,
    ) -> Result<Accountant> {
        budget.validate()?;
        Ok(Accountant {
            budget,
            composition,
            approx_epsilon: 0.0,
            approx_delta: 0.0,
            rho: 0.0,
            mu_squared: 0.0,
            rounds: 0,
        })
    }

    /// How Gaussian rounds are composed.
    pub fn composition(&self) -> GaussianComposition {
        self.composition
    }

    fn spent_sums(&self) -> Spent {
        Spent {
            approx_epsilon: self.approx_epsilon,
            approx_delta: self.approx_delta,
            rho: self.rho,
            mu_squared: self.mu_squared,
        }
    }

    /// The budget.
    pub fn budget(&self) -> PrivacyLoss {
        self.budget
    }

    /// The total privacy loss of the rounds charged so far.
    pub fn spent(&self) -> PrivacyLoss {
        // The stored state was admitted, so the total is computable.
        self.total(self.spent_sums()).unwrap_or(self.budget)
    }

    /// The zCDP ρ of the zCDP and Gaussian rounds charged so far (a Gaussian round of μ counts
    /// μ²/2).
    pub fn rho_spent(&self) -> f64 {
        self.rho + 0.5 * self.mu_squared
    }

    /// The composed μ = sqrt(Σ μᵢ²) of the Gaussian rounds charged so far.
    pub fn mu_spent(&self) -> f64 {
        self.mu_squared.sqrt()
    }

    /// Number of rounds charged so far.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The total loss if `cost` were charged now, or the refusal `charge` would return.
    /// Changes nothing.
    pub fn check(&self, cost: RoundCost) -> Result<PrivacyLoss> {
        cost.validate()?;
        let mut after = self.spent_sums();
        match cost {
            RoundCost::Approx(loss) => {
                after.approx_epsilon += loss.epsilon;
                after.approx_delta += loss.delta;
            }
            RoundCost::Zcdp { rho } => after.rho += rho,
            RoundCost::Gaussian { mu } => after.mu_squared += mu * mu,
        }
        let refused = |would_spend| Error::BudgetExceeded {
            would_spend,
            budget: self.budget,
        };
        let total = self.total(after).map_err(|_| {
            refused(PrivacyLoss {
                epsilon: f64::INFINITY,
                delta: after.approx_delta,
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
            RoundCost::Gaussian { mu } => self.mu_squared += mu * mu,
        }
        self.rounds += 1;
        Ok(total)
    }

    /// The composed loss of the given sums; errors if Gaussian or zCDP rounds leave no δ to
    /// convert with.
    fn total(&self, spent: Spent) -> Result<PrivacyLoss> {
        if spent.rho == 0.0 && spent.mu_squared == 0.0 {
            return Ok(PrivacyLoss {
                epsilon: spent.approx_epsilon,
                delta: spent.approx_delta,
            });
        }
        let delta_left = self.budget.delta - spent.approx_delta;
        let exact = self.composition == GaussianComposition::Exact && spent.rho == 0.0;
        let converted = if exact {
            gdp_to_approx(spent.mu_squared.sqrt(), delta_left)?
        } else {
            zcdp_to_approx(spent.rho + 0.5 * spent.mu_squared, delta_left)?
        };
        Ok(PrivacyLoss {
            epsilon: spent.approx_epsilon + converted.epsilon,
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
        let mut acc = Accountant::with_composition(
            PrivacyLoss::new(3.3, 1e-5).unwrap(),
            GaussianComposition::Zcdp,
        )
        .unwrap();
        let round = RoundCost::gaussian(1.0, 5.0).unwrap();
        assert_eq!(round, RoundCost::Gaussian { mu: 0.2 });
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

    // Reference values of δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), computed with mpmath at
    // 30 digits (an implementation independent of this crate's erfc):
    //   mp.mp.dps = 30; Phi = lambda x: mp.ncdf(x)
    //   d = lambda e, m: Phi(-e/m + m/2) - mp.e**e * Phi(-e/m - m/2)
    const GDP_PROFILE: [(f64, f64, f64); 3] = [
        // (μ, ε, δ)
        (1.0, 1.0, 0.126_936_737_506_643_95),
        (0.5, 0.5, 0.052_440_323_287_669_66),
        (2.0, 3.0, 0.183_813_076_544_472_16),
    ];

    #[test]
    fn gdp_conversion_inverts_the_exact_privacy_profile() {
        for (mu, epsilon, delta) in GDP_PROFILE {
            let loss = gdp_to_approx(mu, delta).unwrap();
            assert!(
                (loss.epsilon - epsilon).abs() <= 1e-9 * epsilon,
                "μ = {mu}: ε = {} vs {epsilon}",
                loss.epsilon
            );
            assert_eq!(loss.delta, delta);
        }
        // A tiny μ meets a large δ already at ε = 0: δ(0) = 2Φ(μ/2) − 1 ≈ 0.0399 for μ = 0.1.
        assert_eq!(gdp_to_approx(0.1, 0.05).unwrap().epsilon, 0.0);
        assert!(gdp_to_approx(0.0, 1e-5).is_err());
        assert!(gdp_to_approx(1.0, 0.0).is_err());
        assert!(gdp_to_approx(f64::NAN, 1e-5).is_err());
    }

    #[test]
    fn one_round_calibrated_for_epsilon_is_charged_exactly_epsilon() {
        // The over-charge this replaces: σ calibrated for (1, 1e-5) was charged ε = 1.32 via zCDP.
        for (epsilon, delta, l2) in [(1.0, 1e-5, 1.0), (0.3, 1e-6, 2.5), (4.0, 1e-8, 0.1)] {
            let sigma = crate::calibrate::gaussian_sigma_analytic(epsilon, delta, l2).unwrap();
            let mut acc = Accountant::new(PrivacyLoss::new(epsilon, delta).unwrap()).unwrap();
            let spent = acc.charge(RoundCost::gaussian(l2, sigma).unwrap()).unwrap();
            assert!(
                spent.epsilon <= epsilon,
                "{spent:?} over ({epsilon}, {delta})"
            );
            assert!(
                spent.epsilon >= epsilon * (1.0 - 1e-9),
                "{spent:?} vs {epsilon}"
            );
            assert_eq!(spent.delta, delta);
            let mut zcdp = Accountant::with_composition(
                PrivacyLoss::new(100.0, delta).unwrap(),
                GaussianComposition::Zcdp,
            )
            .unwrap();
            let loose = zcdp
                .charge(RoundCost::gaussian(l2, sigma).unwrap())
                .unwrap();
            assert!(
                loose.epsilon > spent.epsilon * 1.05,
                "zCDP is looser: {loose:?}"
            );
        }
    }

    #[test]
    fn gaussian_rounds_compose_exactly_as_one_gaussian() {
        // Four rounds of μ = 0.5 are one round of μ = sqrt(4·0.25) = 1: the first profile value.
        let (mu, epsilon, delta) = GDP_PROFILE[0];
        let mut acc = Accountant::new(PrivacyLoss::new(3.0, delta).unwrap()).unwrap();
        for _ in 0..4 {
            acc.charge(RoundCost::gaussian(1.0, 2.0).unwrap()).unwrap();
        }
        assert!((acc.mu_spent() - mu).abs() < 1e-15);
        assert!((acc.spent().epsilon - epsilon).abs() <= 1e-9);
        assert!((acc.rho_spent() - 0.5).abs() < 1e-15);
        assert_eq!(acc.rounds(), 4);
        // A zCDP round in the plan moves every Gaussian round to the zCDP conversion:
        // ρ = 0.5 + 0.01, δ′ = δ.
        acc.charge(RoundCost::zcdp(0.01).unwrap()).unwrap();
        let expected = zcdp_to_approx(0.51, delta).unwrap().epsilon;
        assert!((acc.spent().epsilon - expected).abs() < 1e-12);
    }

    #[test]
    fn zero_cost_rounds_are_refused_not_counted() {
        let mut acc = Accountant::new(PrivacyLoss::new(1.0, 1e-5).unwrap()).unwrap();
        let before = acc.clone();
        for zero in [
            RoundCost::pure(0.0).unwrap(),
            RoundCost::approx(0.0, 0.0).unwrap(),
        ] {
            assert!(matches!(
                acc.charge(zero),
                Err(Error::InvalidParameter { .. })
            ));
        }
        assert!(acc.charge(RoundCost::Gaussian { mu: 0.0 }).is_err());
        assert_eq!(acc, before);
        // (0, δ) rounds are not free and are counted.
        acc.charge(RoundCost::approx(0.0, 1e-6).unwrap()).unwrap();
        assert_eq!(acc.rounds(), 1);
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
