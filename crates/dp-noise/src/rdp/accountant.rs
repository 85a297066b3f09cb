//! Running RDP totals against an (ε, δ) budget.

use super::conversion::{check_orders, default_orders, epsilon_from_rdp};
use super::subsampled::SubsampledGaussian;
use crate::{Error, PrivacyLoss, Result};

/// RDP totals over a grid of orders, and the budget they must stay within.
///
/// Usage: `accountant.try_spend(&step, 1)?; release(...)` — when `try_spend` errs nothing was
/// added and the caller must not release. The guarantee covers adaptively chosen steps (RDP
/// composes adaptively, Mironov 2017, Prop. 1).
#[derive(Debug, Clone, PartialEq)]
pub struct RdpAccountant {
    orders: Vec<f64>,
    totals: Vec<f64>,
    budget: PrivacyLoss,
    steps: u64,
}

impl RdpAccountant {
    /// An accountant with nothing spent, the [`default_orders`] and a budget (ε > 0, δ ∈ (0, 1)).
    pub fn new(budget: PrivacyLoss) -> Result<Self> {
        Self::with_orders(budget, default_orders())
    }

    /// As [`RdpAccountant::new`] with a grid of orders (each finite and > 1).
    pub fn with_orders(budget: PrivacyLoss, orders: Vec<f64>) -> Result<Self> {
        budget.validate()?;
        crate::error::open_unit("delta", budget.delta)?;
        check_orders(&orders)?;
        let totals = vec![0.0; orders.len()];
        Ok(RdpAccountant {
            orders,
            totals,
            budget,
            steps: 0,
        })
    }

    /// The (ε, δ) the totals would give after `count` more steps of `step`, without spending.
    pub fn would_spend(&self, step: &SubsampledGaussian, count: u64) -> Result<PrivacyLoss> {
        let totals = self.totals_after(step, count)?;
        let (epsilon, _) = epsilon_from_rdp(&self.orders, &totals, self.budget.delta)?;
        Ok(PrivacyLoss {
            epsilon,
            delta: self.budget.delta,
        })
    }

    /// Adds `count` steps of `step` if the total stays within the budget, and returns the new
    /// total. Otherwise returns [`Error::BudgetExceeded`] and changes nothing.
    pub fn try_spend(&mut self, step: &SubsampledGaussian, count: u64) -> Result<PrivacyLoss> {
        let totals = self.totals_after(step, count)?;
        let (epsilon, _) = epsilon_from_rdp(&self.orders, &totals, self.budget.delta)?;
        let would_spend = PrivacyLoss {
            epsilon,
            delta: self.budget.delta,
        };
        if epsilon.is_nan() || epsilon > self.budget.epsilon {
            return Err(Error::BudgetExceeded {
                would_spend,
                budget: self.budget,
            });
        }
        self.totals = totals;
        self.steps += count;
        Ok(would_spend)
    }

    /// The (ε, δ) spent so far at the budget's δ (ε = 0 before any step).
    pub fn spent(&self) -> PrivacyLoss {
        let epsilon = epsilon_from_rdp(&self.orders, &self.totals, self.budget.delta)
            .map_or(f64::INFINITY, |(e, _)| e);
        PrivacyLoss {
            epsilon,
            delta: self.budget.delta,
        }
    }

    /// ε spent so far at another δ ∈ (0, 1), and the optimal order.
    pub fn epsilon_at(&self, delta: f64) -> Result<(f64, f64)> {
        epsilon_from_rdp(&self.orders, &self.totals, delta)
    }

    /// The budget.
    pub fn budget(&self) -> PrivacyLoss {
        self.budget
    }

    /// Steps spent.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The orders and the RDP totals at them.
    pub fn totals(&self) -> (&[f64], &[f64]) {
        (&self.orders, &self.totals)
    }

    fn totals_after(&self, step: &SubsampledGaussian, count: u64) -> Result<Vec<f64>> {
        let per_step = step.rdp_orders(&self.orders)?;
        Ok(self
            .totals
            .iter()
            .zip(&per_step)
            .map(|(t, s)| t + count as f64 * s)
            .collect())
    }
}
