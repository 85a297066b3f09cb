//! The final step of DCA: add the M node sums, cancel the masks, decode.

use crate::client_set::ClientSet;
use crate::ids::{NodeIndex, RoundId};
use crate::kernels;
use crate::node::{NodeSum, check_missing};
use crate::round::{NoiseSpec, RoundConfig};
use crate::shard_set::ShardSet;
use crate::{Error, Result};

/// A released sum and the guarantee it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// The round.
    pub round: RoundId,
    /// The decoded sum Σ_i (z_i + η_i), value units.
    pub sum: Vec<f64>,
    /// The same sum exactly, in grid units (value·2^frac_bits).
    pub sum_units: Vec<i64>,
    /// The clients included (the agreed set).
    pub clients: ClientSet,
    /// N: registered clients.
    pub n_clients: usize,
    /// Clients included in the sum.
    pub n_included: usize,
    /// T: the dropouts/colluders the round tolerates (and the noise was calibrated for).
    pub max_dropped: usize,
    /// Fixed-point fractional bits.
    pub frac_bits: u32,
    /// The round's distributed noise, if any.
    pub noise: Option<NoiseSpec>,
    /// Standard deviation of the noise actually in `sum` (value units, per coordinate):
    /// σ_client·sqrt(n_included) if every included client is honest; 0 without noise.
    pub noise_sigma_released: f64,
}

/// Collects the M node sums of a round.
pub struct Aggregator {
    config: RoundConfig,
    acc: Vec<u64>,
    seen: Vec<bool>,
    agreed: Option<ShardSet>,
}

impl Aggregator {
    /// An aggregator for the round.
    ///
    /// # Errors
    /// [`Error::Allocation`] if the d-word accumulator cannot be allocated.
    pub fn new(config: &RoundConfig) -> Result<Self> {
        Ok(Self {
            config: config.clone(),
            acc: crate::alloc::zeroed(config.dim(), "aggregator accumulator")?,
            seen: vec![false; usize::from(config.n_nodes())],
            agreed: None,
        })
    }

    /// Adds one node's sum.
    ///
    /// # Errors
    /// [`Error::WrongRound`], [`Error::WrongConfig`], [`Error::UnknownNode`],
    /// [`Error::DuplicateNodeSum`], [`Error::WrongFracBits`], [`Error::LengthMismatch`],
    /// [`Error::ClientSetMismatch`] (a client set different from the first sum's),
    /// [`Error::AttemptMismatch`] (the same clients but another shard attempt of one: its masks
    /// would not cancel); the aggregator is unchanged.
    pub fn add(&mut self, s: &NodeSum) -> Result<()> {
        let c = &self.config;
        if s.round != c.round() {
            return Err(Error::WrongRound {
                expected: c.round(),
                got: s.round,
            });
        }
        if s.config != c.digest() {
            return Err(Error::WrongConfig {
                round: s.round,
                expected: c.digest(),
                got: s.config,
            });
        }
        let Some(&seen) = self.seen.get(usize::from(s.node.0)) else {
            return Err(Error::UnknownNode {
                node: s.node,
                n_nodes: c.n_nodes(),
            });
        };
        if seen {
            return Err(Error::DuplicateNodeSum { node: s.node });
        }
        if s.frac_bits != c.codec().frac_bits() {
            return Err(Error::WrongFracBits {
                expected: c.codec().frac_bits(),
                got: s.frac_bits,
            });
        }
        if s.agreed.universe() != c.n_clients() {
            return Err(Error::ClientSetMismatch { node: s.node });
        }
        if let Some(first) = &self.agreed {
            if first.clients() != s.agreed.clients() {
                return Err(Error::ClientSetMismatch { node: s.node });
            }
            if let Some((client, _)) = first
                .iter()
                .zip(s.agreed.iter())
                .find_map(|(a, b)| (a != b).then_some(a))
            {
                return Err(Error::AttemptMismatch {
                    node: s.node,
                    client,
                });
            }
        }
        kernels::add_assign(&mut self.acc, &s.sum).map_err(|_| Error::LengthMismatch {
            what: "node sum",
            expected: c.dim(),
            actual: s.sum.len(),
        })?;
        self.seen[usize::from(s.node.0)] = true;
        if self.agreed.is_none() {
            self.agreed = Some(s.agreed.clone());
        }
        Ok(())
    }

    /// Decodes the sum once every node's sum is in.
    ///
    /// # Errors
    /// [`Error::MissingNodeSums`]; [`Error::TooManyDropped`] if more than T clients are
    /// missing (nothing is released).
    pub fn release(&self) -> Result<Release> {
        let have = self.seen.iter().filter(|&&s| s).count();
        let clients = match &self.agreed {
            Some(set) if have == self.seen.len() => set.clients(),
            _ => {
                return Err(Error::MissingNodeSums {
                    have,
                    need: self.seen.len(),
                });
            }
        };
        check_missing(clients, &self.config)?;
        let codec = self.config.codec();
        let mut sum = vec![0.0; self.acc.len()];
        codec.decode(&self.acc, &mut sum)?;
        let noise = self.config.noise();
        let n_included = clients.len();
        Ok(Release {
            round: self.config.round(),
            sum,
            sum_units: self.acc.iter().map(|&s| s as i64).collect(),
            clients: clients.clone(),
            n_clients: self.config.n_clients(),
            n_included,
            max_dropped: self.config.max_dropped(),
            frac_bits: codec.frac_bits(),
            noise,
            noise_sigma_released: noise
                .map_or(0.0, |n| n.sigma_client * (n_included as f64).sqrt()),
        })
    }

    /// Nodes whose sums are in.
    pub fn received_nodes(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        self.seen
            .iter()
            .enumerate()
            .filter(|(_, s)| **s)
            .map(|(i, _)| NodeIndex(i as u16))
    }
}
