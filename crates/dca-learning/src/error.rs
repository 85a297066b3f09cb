use std::fmt;

use dp_noise::PrivacyLoss;

/// Everything that can go wrong in `dca_learning`. An operation that returns an error has
/// changed nothing (no parameter moved, no privacy spent).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is NaN, infinite or outside its domain.
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value (integers converted to `f64`).
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A slice has the wrong length.
    LengthMismatch {
        /// Which slice.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A data value is NaN or infinite.
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Position in it.
        index: usize,
    },
    /// The iteration would take the privacy loss past the budget; nothing was released or spent.
    BudgetExceeded {
        /// The total the iteration would have led to.
        would_spend: PrivacyLoss,
        /// The budget.
        budget: PrivacyLoss,
    },
    /// More clients dropped out than the round tolerates; nothing was released or spent.
    TooManyDropped {
        /// Clients missing.
        dropped: usize,
        /// T.
        max_dropped: usize,
    },
    /// The parameters became NaN or infinite (learning rate too large); nothing was changed.
    Diverged {
        /// The iteration.
        iteration: u64,
    },
    /// From the noise / accounting layer.
    Noise(dp_noise::Error),
    /// From the DCA layer.
    Shares(fixedpoint_shares::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParameter {
                name,
                value,
                requirement,
            } => write!(
                f,
                "invalid parameter {name} = {value}: must be {requirement}"
            ),
            Error::LengthMismatch {
                what,
                expected,
                actual,
            } => write!(f, "{what}: expected length {expected}, got {actual}"),
            Error::NonFinite { what, index } => {
                write!(f, "{what}[{index}] is NaN or infinite")
            }
            Error::BudgetExceeded {
                would_spend,
                budget,
            } => write!(
                f,
                "privacy budget exceeded: the iteration would bring the total to (epsilon = {}, \
                 delta = {}) but the budget is (epsilon = {}, delta = {}); nothing was released",
                would_spend.epsilon, would_spend.delta, budget.epsilon, budget.delta
            ),
            Error::TooManyDropped {
                dropped,
                max_dropped,
            } => write!(
                f,
                "{dropped} clients dropped out but the round tolerates at most {max_dropped}; \
                 nothing was released"
            ),
            Error::Diverged { iteration } => write!(
                f,
                "parameters became non-finite at iteration {iteration} (lower the learning rate); \
                 the update was not applied"
            ),
            Error::Noise(e) => write!(f, "{e}"),
            Error::Shares(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<dp_noise::Error> for Error {
    fn from(e: dp_noise::Error) -> Self {
        match e {
            dp_noise::Error::BudgetExceeded {
                would_spend,
                budget,
            } => Error::BudgetExceeded {
                would_spend,
                budget,
            },
            e => Error::Noise(e),
        }
    }
}

impl From<fixedpoint_shares::Error> for Error {
    fn from(e: fixedpoint_shares::Error) -> Self {
        Error::Shares(e)
    }
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
