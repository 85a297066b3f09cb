use crate::PrivacyLoss;

/// Everything that can go wrong in `dp_noise`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is NaN, infinite or outside its domain.
    #[error("invalid parameter {name} = {value}: must be {requirement}")]
    InvalidParameter {
        /// The parameter's name as in the function signature.
        name: &'static str,
        /// The value that was passed (integers converted to `f64`).
        value: f64,
        /// What the value must satisfy.
        requirement: &'static str,
    },
    /// The classic Gaussian mechanism is proven only for ε < 1.
    #[error(
        "the classic Gaussian mechanism is proven only for epsilon < 1 (got {epsilon}); \
         use calibrate::gaussian_sigma_analytic (Balle & Wang 2018), valid for every epsilon > 0"
    )]
    ClassicGaussianNeedsEpsilonBelowOne {
        /// The ε that was passed.
        epsilon: f64,
    },
    /// Distributed noise needs at least one honest client besides the one observed:
    /// N − T − 1 ≥ 1.
    #[error("distributed noise needs N - T - 1 >= 1, got N = {n_clients}, T = {max_dropped}")]
    TooFewHonestClients {
        /// N, the number of clients.
        n_clients: usize,
        /// T, the number of clients that may drop out or collude.
        max_dropped: usize,
    },
    /// The round would take the total privacy loss past the budget; nothing was spent.
    #[error(
        "privacy budget exceeded: the round would bring the total to (epsilon = {}, delta = {}) \
         but the budget is (epsilon = {}, delta = {}); nothing was spent",
        .would_spend.epsilon, .would_spend.delta, .budget.epsilon, .budget.delta
    )]
    BudgetExceeded {
        /// The total loss the round would have led to.
        would_spend: PrivacyLoss,
        /// The budget.
        budget: PrivacyLoss,
    },
    /// A numerical search found no answer in the range of `f64`.
    #[error("calibration failed: {reason}")]
    CalibrationFailed {
        /// Why.
        reason: &'static str,
    },
    /// The operating system's random number generator failed.
    #[error("the OS random number generator failed: {0}")]
    OsRng(String),
}

/// Checks `value` is finite and > 0.
pub(crate) fn positive_finite(name: &'static str, value: f64) -> crate::Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            requirement: "finite and > 0",
        })
    }
}

/// Checks `value` is in the open interval (0, 1).
pub(crate) fn open_unit(name: &'static str, value: f64) -> crate::Result<f64> {
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(Error::InvalidParameter {
            name,
            value,
            requirement: "in the open interval (0, 1)",
        })
    }
}
