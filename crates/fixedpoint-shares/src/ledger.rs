//! The round ids a party has taken part in, so that an id is never reused with another
//! configuration.
//!
//! Why: the masks of a round are domain-separated by the round id (see `prg`). Two rounds under
//! one id but different parameters are two different rounds whose messages could be confused,
//! and with a deterministic (insecure, test-only) seed they would even reuse masks, letting node
//! 0 alone recover z − z′. A node or aggregator admits each round through its ledger first;
//! messages additionally carry [`crate::RoundConfig::digest`], so bytes of the old round are
//! refused by the new one even where no ledger is kept. A party that keeps a ledger creates its
//! nodes and aggregators through it ([`RoundLedger::compute_node`], [`RoundLedger::aggregator`]).

use std::collections::HashMap;

use crate::ids::{ConfigDigest, NodeIndex, RoundId};
use crate::round::RoundConfig;
use crate::{Aggregator, ComputeNode, Error, Result};

/// What [`RoundLedger::admit`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The round id was not seen before; it is now recorded with this configuration.
    New,
    /// The round id was seen before with exactly this configuration (the same round again,
    /// e.g. a restarted party).
    Again,
}

/// Round id → configuration digest of every round a party has admitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundLedger {
    seen: HashMap<RoundId, ConfigDigest>,
}

impl RoundLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ledger holding already-seen (round id, config digest) pairs, e.g. loaded from storage.
    ///
    /// # Errors
    /// [`Error::RoundIdReused`] if the same id appears with two digests.
    pub fn from_seen(seen: impl IntoIterator<Item = (RoundId, ConfigDigest)>) -> Result<Self> {
        let mut ledger = Self::new();
        for (round, digest) in seen {
            ledger.admit_digest(round, digest)?;
        }
        Ok(ledger)
    }

    /// Records `config`'s round, or confirms it is the round seen before under that id.
    ///
    /// # Errors
    /// [`Error::RoundIdReused`] if the id was seen with another configuration; the ledger is
    /// unchanged.
    pub fn admit(&mut self, config: &RoundConfig) -> Result<Admission> {
        self.admit_digest(config.round(), config.digest())
    }

    /// As [`RoundLedger::admit`], from the id and digest alone.
    ///
    /// # Errors
    /// As [`RoundLedger::admit`].
    pub fn admit_digest(&mut self, round: RoundId, digest: ConfigDigest) -> Result<Admission> {
        match self.seen.get(&round) {
            None => {
                self.seen.insert(round, digest);
                Ok(Admission::New)
            }
            Some(seen) if *seen == digest => Ok(Admission::Again),
            Some(seen) => Err(Error::RoundIdReused {
                round,
                seen: *seen,
                got: digest,
            }),
        }
    }

    /// Compute node `node` of `config`'s round, admitted through this ledger: the node is
    /// created first and the round recorded only if that succeeds, so a failed creation leaves
    /// the ledger unchanged.
    ///
    /// # Errors
    /// [`ComputeNode::new`]'s errors; [`Error::RoundIdReused`] if the round id was seen with
    /// another configuration (nothing created, the ledger unchanged).
    pub fn compute_node(&mut self, config: &RoundConfig, node: NodeIndex) -> Result<ComputeNode> {
        let created = ComputeNode::new(config, node)?;
        self.admit(config)?;
        Ok(created)
    }

    /// The aggregator of `config`'s round, admitted through this ledger (as
    /// [`RoundLedger::compute_node`]).
    ///
    /// # Errors
    /// [`Aggregator::new`]'s errors; [`Error::RoundIdReused`] as for a node.
    pub fn aggregator(&mut self, config: &RoundConfig) -> Result<Aggregator> {
        let created = Aggregator::new(config)?;
        self.admit(config)?;
        Ok(created)
    }

    /// The recorded (round id, config digest) pairs, in increasing round id (for storage).
    pub fn seen(&self) -> Vec<(RoundId, ConfigDigest)> {
        let mut all: Vec<_> = self.seen.iter().map(|(r, d)| (*r, *d)).collect();
        all.sort_unstable();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RoundParams, ShareMode};

    fn config(round: u64, dim: usize) -> RoundConfig {
        RoundConfig::new(&RoundParams {
            round: RoundId(round),
            n_clients: 4,
            n_nodes: 2,
            max_dropped: 1,
            dim,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: None,
            frac_bits: None,
        })
        .unwrap()
    }

    #[test]
    fn a_round_id_is_refused_with_another_config_and_the_ledger_is_unchanged() {
        let mut ledger = RoundLedger::new();
        assert_eq!(ledger.admit(&config(5, 3)).unwrap(), Admission::New);
        assert_eq!(ledger.admit(&config(5, 3)).unwrap(), Admission::Again);
        assert_eq!(ledger.admit(&config(6, 4)).unwrap(), Admission::New);
        let before = ledger.clone();
        let err = ledger.admit(&config(5, 4)).unwrap_err();
        assert!(matches!(
            err,
            Error::RoundIdReused {
                round: RoundId(5),
                ..
            }
        ));
        assert!(err.to_string().contains("round id 5"), "{err}");
        assert_eq!(ledger, before);
        // Persisted and restored: the same answers.
        let mut restored = RoundLedger::from_seen(ledger.seen()).unwrap();
        assert_eq!(restored.admit(&config(5, 3)).unwrap(), Admission::Again);
        assert!(restored.admit(&config(6, 3)).is_err());
        let d = config(1, 1).digest();
        let e = config(1, 2).digest();
        assert!(RoundLedger::from_seen([(RoundId(1), d), (RoundId(1), e)]).is_err());
    }

    #[test]
    fn nodes_and_aggregators_made_through_the_ledger_refuse_a_reused_round_id() {
        let mut ledger = RoundLedger::new();
        assert!(ledger.compute_node(&config(9, 3), NodeIndex(0)).is_ok());
        assert!(ledger.compute_node(&config(9, 3), NodeIndex(1)).is_ok());
        assert!(ledger.aggregator(&config(9, 3)).is_ok());
        let before = ledger.clone();
        assert!(matches!(
            ledger.compute_node(&config(9, 4), NodeIndex(0)),
            Err(Error::RoundIdReused { .. })
        ));
        assert!(matches!(
            ledger.aggregator(&config(9, 4)),
            Err(Error::RoundIdReused { .. })
        ));
        // A node that cannot be created records nothing.
        assert!(matches!(
            ledger.compute_node(&config(10, 3), NodeIndex(2)),
            Err(Error::UnknownNode { .. })
        ));
        assert_eq!(ledger, before);
        assert_eq!(ledger.admit(&config(10, 4)).unwrap(), Admission::New);
    }
}
