//! The public rule a round of a `train` or `sum` job is published with.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What each participant computes in a `train` round (the round's published rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainRule {
    /// The iteration (0-based; the job round's step).
    pub iteration: u64,
    /// The public parameters the gradients are taken at: θ = (w, b), one weight per feature in
    /// the job's order, then the intercept b if the job has one.
    pub weights: Vec<f64>,
    /// C.
    pub clip_norm: f64,
    /// q.
    pub sampling_rate: f64,
}

/// What each participant computes in a `sum` round: Σ over its records of every column the
/// job reads (features then target), each mapped onto ±5 by the public bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SumRule {
    /// Columns summed (the job's features and its target).
    pub columns: usize,
}

/// The rule of a round of a `train` or `sum` job, as published (JSON, one key naming the
/// kind, so that a rule of one kind never parses as another's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
pub enum Rule {
    /// See [`TrainRule`].
    Train(TrainRule),
    /// See [`SumRule`].
    Sum(SumRule),
}

impl Rule {
    /// The published JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a rule always serialises")
    }

    /// Parses a published rule.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text)
            .map_err(|e| Error::InvalidSpec(format!("a train or sum round's rule: {e}")))
    }
}
