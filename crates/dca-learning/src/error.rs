use dp_noise::PrivacyLoss;

/// Everything that can go wrong in `dca_learning`. An operation that returns an error has
/// changed nothing (no parameter moved, no privacy spent).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is NaN, infinite or outside its domain.
    #[error("invalid parameter {name} = {value}: must be {requirement}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value (integers converted to `f64`).
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A slice has the wrong length.
    #[error("{what}: expected length {expected}, got {actual}")]
    LengthMismatch {
        /// Which slice.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A data value is NaN or infinite.
    #[error("{what}[{index}] is NaN or infinite")]
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Position in it.
        index: usize,
    },
    /// A public feature range is not usable: an end is NaN or infinite, or lo ≥ hi.
    #[error("range of column {column}: lo = {lo}, hi = {hi}; {requirement}")]
    BadRange {
        /// 0-based column the range belongs to.
        column: usize,
        /// Lower end given.
        lo: f64,
        /// Upper end given.
        hi: f64,
        /// What the range must satisfy.
        requirement: &'static str,
    },
    /// The iteration would take the privacy loss past the budget; nothing was released or spent.
    #[error(
        "privacy budget exceeded: the iteration would bring the total to (epsilon = {}, \
         delta = {}) but the budget is (epsilon = {}, delta = {}); nothing was released",
        .would_spend.epsilon, .would_spend.delta, .budget.epsilon, .budget.delta
    )]
    BudgetExceeded {
        /// The total the iteration would have led to.
        would_spend: PrivacyLoss,
        /// The budget.
        budget: PrivacyLoss,
    },
    /// More clients dropped out than the round tolerates; nothing was released or spent.
    #[error(
        "{dropped} clients dropped out but the round tolerates at most {max_dropped}; \
         nothing was released"
    )]
    TooManyDropped {
        /// Clients missing.
        dropped: usize,
        /// T.
        max_dropped: usize,
    },
    /// The parameters became NaN or infinite (learning rate too large); nothing was changed.
    #[error(
        "parameters became non-finite at iteration {iteration} (lower the learning rate); \
         the update was not applied"
    )]
    Diverged {
        /// The iteration.
        iteration: u64,
    },
    /// From the noise / accounting layer.
    #[error("{0}")]
    Noise(#[source] dp_noise::Error),
    /// From the DCA layer.
    #[error("{0}")]
    Shares(#[from] fixedpoint_shares::Error),
}

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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// The layers below stay reachable through `source()`; a budget refusal from the noise
    /// layer keeps becoming this crate's own variant.
    #[test]
    fn wrapped_causes_are_sources() {
        let shares = Error::from(fixedpoint_shares::Error::Transport("gone".into()));
        assert_eq!(shares.to_string(), "DCA round transport: gone");
        assert_eq!(
            shares.source().map(|e| e.to_string()).as_deref(),
            Some("DCA round transport: gone")
        );
        let noise = Error::from(dp_noise::Error::OsRng("x".into()));
        assert!(matches!(noise, Error::Noise(_)));
        assert!(noise.source().is_some());
        let budget = PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let refused = Error::from(dp_noise::Error::BudgetExceeded {
            would_spend: budget,
            budget,
        });
        assert!(matches!(refused, Error::BudgetExceeded { .. }));
        assert!(refused.source().is_none());
    }
}
