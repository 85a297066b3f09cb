//! Parameter updates from a (noisy) gradient: plain SGD and Adam. Both use only public state
//! (the released gradients), so they cost no privacy.

use crate::{Error, Result};

/// The update rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Optimizer {
    /// θ ← θ − η·g.
    Sgd {
        /// η > 0.
        learning_rate: f64,
    },
    /// Adam (Kingma & Ba 2015) with bias correction.
    Adam {
        /// η > 0.
        learning_rate: f64,
        /// β₁ ∈ [0, 1) (0.9 is usual).
        beta1: f64,
        /// β₂ ∈ [0, 1) (0.999 is usual).
        beta2: f64,
        /// ε̂ > 0 in the denominator (1e-8 is usual).
        epsilon: f64,
    },
}

impl Optimizer {
    /// Adam with the usual β₁ = 0.9, β₂ = 0.999, ε̂ = 1e-8.
    pub fn adam(learning_rate: f64) -> Self {
        Optimizer::Adam {
            learning_rate,
            beta1: 0.9,
            beta2: 0.999,
            epsilon: 1e-8,
        }
    }

    /// Checks the hyper-parameters.
    pub fn validate(&self) -> Result<()> {
        let unit = |name, v: f64| {
            if (0.0..1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::InvalidParameter {
                    name,
                    value: v,
                    requirement: "in [0, 1)",
                })
            }
        };
        match *self {
            Optimizer::Sgd { learning_rate } => {
                crate::error::positive_finite("learning_rate", learning_rate)?;
            }
            Optimizer::Adam {
                learning_rate,
                beta1,
                beta2,
                epsilon,
            } => {
                crate::error::positive_finite("learning_rate", learning_rate)?;
                unit("beta1", beta1)?;
                unit("beta2", beta2)?;
                crate::error::positive_finite("epsilon", epsilon)?;
            }
        }
        Ok(())
    }
}

/// Adam's moments (empty for SGD) and the step count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OptimizerState {
    m: Vec<f64>,
    v: Vec<f64>,
    t: u64,
}

impl OptimizerState {
    /// The state before the first step, from two zeroed vectors of θ's length (allocated by
    /// the caller, fallibly).
    pub(crate) fn new(m: Vec<f64>, v: Vec<f64>) -> Self {
        OptimizerState { m, v, t: 0 }
    }

    /// The parameters after one update with gradient `g`, and the state after it; `self` and
    /// `params` are not modified (the caller commits only a finite result).
    pub(crate) fn propose(
        &self,
        optimizer: &Optimizer,
        params: &[f64],
        g: &[f64],
    ) -> (Vec<f64>, OptimizerState) {
        match *optimizer {
            Optimizer::Sgd { learning_rate } => (
                params
                    .iter()
                    .zip(g)
                    .map(|(p, g)| p - learning_rate * g)
                    .collect(),
                OptimizerState {
                    t: self.t + 1,
                    ..self.clone()
                },
            ),
            Optimizer::Adam {
                learning_rate,
                beta1,
                beta2,
                epsilon,
            } => {
                let t = self.t + 1;
                let m: Vec<f64> = self
                    .m
                    .iter()
                    .zip(g)
                    .map(|(m, g)| beta1 * m + (1.0 - beta1) * g)
                    .collect();
                let v: Vec<f64> = self
                    .v
                    .iter()
                    .zip(g)
                    .map(|(v, g)| beta2 * v + (1.0 - beta2) * g * g)
                    .collect();
                let c1 = 1.0 - beta1.powf(t as f64);
                let c2 = 1.0 - beta2.powf(t as f64);
                let new = params
                    .iter()
                    .zip(m.iter().zip(&v))
                    .map(|(p, (m, v))| p - learning_rate * (m / c1) / ((v / c2).sqrt() + epsilon))
                    .collect();
                (new, OptimizerState { m, v, t })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adam's first step moves each coordinate by ≈ η·sign(g) (bias correction makes
    /// m̂ = g, v̂ = g²); SGD by η·g.
    #[test]
    fn first_steps_match_hand_computation() {
        let s = OptimizerState::new(vec![0.0; 2], vec![0.0; 2]);
        let (p, _) = s.propose(&Optimizer::adam(0.1), &[1.0, 1.0], &[4.0, -0.5]);
        assert!(
            (p[0] - 0.9).abs() < 1e-8 && (p[1] - 1.1).abs() < 1e-7,
            "{p:?}"
        );
        let (p, st) = s.propose(
            &Optimizer::Sgd { learning_rate: 0.1 },
            &[1.0, 1.0],
            &[4.0, -0.5],
        );
        assert_eq!(p, vec![0.6, 1.05]);
        assert_eq!(st.t, 1);
        assert!(Optimizer::Sgd { learning_rate: 0.0 }.validate().is_err());
        assert!(
            Optimizer::Adam {
                learning_rate: 0.1,
                beta1: 1.0,
                beta2: 0.9,
                epsilon: 1e-8
            }
            .validate()
            .is_err()
        );
    }
}
