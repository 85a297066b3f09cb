//! What a participant agrees to, and its answer to a job under it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::participant::ledger::LedgerJob;
use crate::participant::ledger::people;
pub use crate::participant::rows::Rows;
use crate::protocol::job::{Answer, JobSpec};
use crate::{Error, Result};

/// What a participant agrees to (`--policy FILE`, TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The columns it may contribute (features and target); a job reading another is refused.
    pub columns: Vec<String>,
    /// The largest ε it accepts for one job.
    pub max_epsilon_per_job: f64,
    /// The most ε it spends over all the jobs it ever accepts (ε of accepted jobs add up).
    pub total_epsilon: f64,
}

impl Policy {
    /// Reads and checks a policy file.
    pub fn parse(text: &str) -> Result<Self> {
        let p: Policy =
            toml::from_str(text).map_err(|e| Error::InvalidSpec(format!("policy: {e}")))?;
        for (what, v) in [
            ("max_epsilon_per_job", p.max_epsilon_per_job),
            ("total_epsilon", p.total_epsilon),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidSpec(format!(
                    "policy: {what} = {v} must be finite and > 0"
                )));
            }
        }
        Ok(p)
    }

    /// Why this participant refuses `spec`, holding `rows` rows and having committed
    /// `committed` ε to earlier jobs; `None` if it accepts.
    pub fn refusal(&self, spec: &JobSpec, rows: usize, committed: f64) -> Option<String> {
        if let Some(c) = spec
            .features
            .iter()
            .chain([&spec.target])
            .find(|c| !self.columns.contains(&c.name))
        {
            return Some(format!(
                "the job reads column {:?}, which this participant's policy does not allow",
                c.name
            ));
        }
        if spec.epsilon > self.max_epsilon_per_job {
            return Some(format!(
                "the job's ε = {} is over this participant's max_epsilon_per_job = {}",
                people(spec.epsilon),
                people(self.max_epsilon_per_job)
            ));
        }
        if committed + spec.epsilon > self.total_epsilon * (1.0 + 1e-12) {
            return Some(format!(
                "budget exhausted: the job's ε = {} would bring this participant's total to {}, \
                 over its total_epsilon = {}",
                people(spec.epsilon),
                people(committed + spec.epsilon),
                people(self.total_epsilon)
            ));
        }
        if rows > spec.max_rows {
            return Some(format!(
                "this participant holds {rows} rows, more than the job's max_rows = {}",
                spec.max_rows
            ));
        }
        None
    }
}

/// What a participant answers to `spec`, holding `rows` under `policy`, having committed
/// `committed` ε: its policy first (columns allowed, ε, total, max_rows), then its rows (every
/// column the job reads is in them). A refusal names only what the job asked for — never a
/// column of the participant's rows the job did not ask for.
pub fn decide(policy: &Policy, rows: &Rows, spec: &JobSpec, committed: f64) -> Result<LedgerJob> {
    let refusal = policy.refusal(spec, rows.len(), committed).or_else(|| {
        spec.features
            .iter()
            .chain([&spec.target])
            .find(|c| !rows.columns().contains(&c.name))
            .map(|c| {
                format!(
                    "the job reads column {:?}, which this participant's rows do not have",
                    c.name
                )
            })
    });
    Ok(LedgerJob {
        answer: match refusal {
            None => Answer {
                accept: true,
                rows: rows.len(),
                reason: String::new(),
            },
            Some(reason) => Answer {
                accept: false,
                rows: 0,
                reason,
            },
        },
        epsilon: spec.epsilon,
        rho_budget: spec.rho()?,
        rounds: BTreeMap::new(),
        stopped: None,
        delta: Some(spec.noise_budget()?.delta),
        ended: None,
    })
}
