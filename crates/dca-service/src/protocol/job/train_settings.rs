//! A `train` job's settings (`[train]` in its spec).

use dca_learning::{Model, Optimizer};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Most iterations of one `train` job (its rounds are numbered by 24 bits of the job's rounds).
pub const MAX_ITERATIONS: u64 = 1 << 24;

/// A `train` job's DP-SGD settings (`[train]` in a job file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainSettings {
    /// DCA rounds, one per iteration.
    pub iterations: u64,
    /// C: each record's gradient is scaled down to ℓ2 norm ≤ C.
    pub clip_norm: f64,
    /// q: each record is in an iteration's batch with probability q, by its own coin.
    pub sampling_rate: f64,
    /// The optimizer's step size η.
    pub learning_rate: f64,
    /// "adam" or "sgd".
    pub optimizer: String,
    /// λ ≥ 0 of the public regulariser (λ/2)‖w‖² (the intercept is not penalised).
    #[serde(default)]
    pub l2: f64,
    /// Estimate an intercept b: θ = (w, b), b last, inside the clipped gradient
    /// (dca-learning's `Model::logistic`). On when absent. The canonical JSON holds the field
    /// only when it is false, so that a job written before the field existed keeps its id (and
    /// now means a job with an intercept), and `intercept = true` written out is the same job.
    #[serde(
        default = "intercept_by_default",
        skip_serializing_if = "is_intercept_on"
    )]
    pub intercept: bool,
}

fn intercept_by_default() -> bool {
    true
}

// serde's `skip_serializing_if` passes a reference.
fn is_intercept_on(intercept: &bool) -> bool {
    *intercept
}

impl TrainSettings {
    pub(crate) fn validate(&self, mode: &str) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidSpec(format!("job: train.{m}")));
        if !(1..=MAX_ITERATIONS).contains(&self.iterations) {
            return bad(format!(
                "iterations = {} must be from 1 to {MAX_ITERATIONS}",
                self.iterations
            ));
        }
        for (what, v) in [
            ("clip_norm", self.clip_norm),
            ("learning_rate", self.learning_rate),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("{what} = {v} must be finite and > 0"));
            }
        }
        if !(self.sampling_rate > 0.0 && self.sampling_rate <= 1.0) {
            return bad(format!(
                "sampling_rate = {} must be in (0, 1]",
                self.sampling_rate
            ));
        }
        if !(self.l2.is_finite() && self.l2 >= 0.0) {
            return bad(format!("l2 = {} must be finite and ≥ 0", self.l2));
        }
        if !matches!(self.optimizer.as_str(), "adam" | "sgd") {
            return bad(format!(
                "optimizer {:?} must be \"adam\" or \"sgd\"",
                self.optimizer
            ));
        }
        if mode != "seed" {
            return Err(Error::InvalidSpec(format!(
                "job: a train job's rounds are seed-compressed (mode \"seed\"), not {:?}",
                mode
            )));
        }
        Ok(())
    }

    /// The job's model: logistic regression with the job's ridge, with or without intercept.
    pub fn model(&self) -> Model {
        Model::Logistic {
            l2: self.l2,
            intercept: self.intercept,
        }
    }

    /// Length of θ, a round's dimension: one weight per feature, and b if the job has one.
    pub fn n_params(&self, features: usize) -> usize {
        self.model().n_params(features)
    }

    pub(super) fn optimizer(&self) -> Optimizer {
        if self.optimizer == "sgd" {
            Optimizer::Sgd {
                learning_rate: self.learning_rate,
            }
        } else {
            Optimizer::adam(self.learning_rate)
        }
    }
}
