//! A round's validity mode: each participant proves to the nodes, on its shares, that its
//! contribution (its data plus its noise slice) lies within the bound the round's sensitivity
//! assumed ([`verified_shares`]). Off unless the spec says `validity`.

use std::sync::OnceLock;

use fixedpoint_shares::RoundConfig;
use serde::{Deserialize, Serialize};
use verified_shares::{L2Bound, LinfBound, ValidityBound};

use crate::{Error, Result};

/// The `validity` of a round spec or a job file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ValiditySpec {
    /// Every coordinate within ±(the codec's bound + the slice bound).
    Linf {
        /// δ_t: the probability bound on an honest noise value reaching the slice bound, added
        /// to the round's δ as `verified_shares::bound::total_delta` says.
        truncation_delta: f64,
    },
    /// ‖contribution‖₂ ≤ `data_norm` + the slice's norm bound.
    L2 {
        /// Bound on the L2 norm of a participant's data vector (value units); a participant
        /// whose data are longer refuses to take part.
        data_norm: f64,
        /// δ_t, as for `linf`.
        truncation_delta: f64,
    },
}

/// A round's checked validity mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Validity {
    /// The bound every contribution is proven to satisfy.
    pub bound: ValidityBound,
    /// The exact length of each node's share message, measured on first use: it costs a proof,
    /// which only a node needs (every party validates round specs, some of them often).
    message_lens: OnceLock<Vec<usize>>,
}

impl Validity {
    /// The exact length of node `node`'s share message in the round with configuration
    /// `config` (the one this was checked for).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] if the round's Prio3 instance cannot shard (never for a checked
    /// round) or it has no node `node`.
    pub fn message_len(&self, config: &RoundConfig, node: usize) -> Result<usize> {
        let lens = match self.message_lens.get() {
            Some(lens) => lens,
            None => {
                let lens = verified_shares::node_message_lens(config, self.bound)
                    .map_err(|e| Error::InvalidSpec(format!("validity: {e}")))?;
                self.message_lens.get_or_init(|| lens)
            }
        };
        lens.get(node)
            .copied()
            .ok_or_else(|| Error::InvalidSpec(format!("no node {node} in the round")))
    }
}

impl ValiditySpec {
    /// The bound of a round with DCA configuration `config`.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] naming the parameter out of range.
    pub fn check(&self, config: &RoundConfig) -> Result<Validity> {
        let invalid = |e: verified_shares::Error| Error::InvalidSpec(format!("validity: {e}"));
        let bound: ValidityBound = match *self {
            ValiditySpec::Linf { truncation_delta } => LinfBound::new(config, truncation_delta)
                .map_err(invalid)?
                .into(),
            ValiditySpec::L2 {
                data_norm,
                truncation_delta,
            } => L2Bound::for_round(config, data_norm, truncation_delta)
                .map_err(invalid)?
                .into(),
        };
        Ok(Validity {
            bound,
            message_lens: OnceLock::new(),
        })
    }
}
