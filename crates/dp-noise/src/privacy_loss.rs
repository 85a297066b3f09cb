use crate::{Error, Result};

/// An (ε, δ) differential-privacy guarantee or budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivacyLoss {
    /// ε ≥ 0.
    pub epsilon: f64,
    /// δ ∈ [0, 1).
    pub delta: f64,
}

impl PrivacyLoss {
    /// A validated (ε, δ): ε finite and ≥ 0, δ in [0, 1).
    pub fn new(epsilon: f64, delta: f64) -> Result<Self> {
        let loss = PrivacyLoss { epsilon, delta };
        loss.validate()?;
        Ok(loss)
    }

    /// Checks the fields (they are public, so a value may have been built by hand).
    pub fn validate(&self) -> Result<()> {
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "epsilon",
                value: self.epsilon,
                requirement: "finite and >= 0",
            });
        }
        if !(self.delta >= 0.0 && self.delta < 1.0) {
            return Err(Error::InvalidParameter {
                name: "delta",
                value: self.delta,
                requirement: "in [0, 1)",
            });
        }
        Ok(())
    }
}
