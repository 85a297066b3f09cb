//! The client side: a contribution, shifted into [0, 2B] and sharded into a Prio3 report.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, RoundConfig};
use prio::field::Field128;
use prio::vdaf::Client as _;
use prio::vdaf::prio3::{Prio3InputShare, Prio3PublicShare, Prio3SumVec};
use zeroize::Zeroize;

use crate::bound::LinfBound;
use crate::{Error, Result};

/// Prio3's verify key: shared by the compute nodes, secret from clients and the relay.
pub type VerifyKey = [u8; 32];

/// One client's verified contribution: a Prio3 report (node 0's share is the field vector and its
/// proof share, node k ≥ 1's a seed).
#[derive(Clone, Debug)]
pub struct VerifiedReport {
    /// The client.
    pub client: ClientId,
    /// The report's nonce (public, unique per report).
    pub nonce: [u8; 16],
    /// The public share (Prio3's joint-randomness parts).
    pub public_share: Prio3PublicShare<32>,
    /// One input share per compute node.
    pub input_shares: Vec<Prio3InputShare<Field128, 32>>,
}

/// A client of a verified round.
pub struct VerifiedClient {
    inner: Client,
    bound: LinfBound,
    vdaf: Prio3SumVec,
    context: Vec<u8>,
}

impl VerifiedClient {
    /// Client `id` of the round; `rng` as for [`fixedpoint_shares::Client::new`] (its noise draws
    /// are the same, so a verified round with the insecure seed releases the same sum).
    ///
    /// # Errors
    /// As [`Client::new`]; [`Error::InvalidParameter`] if the round has more than 255 nodes.
    pub fn new(
        config: &RoundConfig,
        bound: LinfBound,
        id: ClientId,
        rng: RngSource,
    ) -> Result<Self> {
        Ok(Self {
            inner: Client::new(config, id, rng)?,
            bound,
            vdaf: sum_vec(config, &bound)?,
            context: context(config),
        })
    }

    /// Encodes `values` (length d, |x| ≤ bound), adds the clamped noise slice, shifts by B and
    /// shards the result with its proof.
    ///
    /// # Errors
    /// As [`Client::shard`] for bad values (nothing drawn); [`Error::Proof`] if libprio refuses.
    pub fn shard(&mut self, values: &[f64]) -> Result<VerifiedReport> {
        let words = self.inner.contribution(values, self.bound.slice_units)?;
        let shift = i128::from(self.bound.units());
        let mut measurement: Vec<u128> = words
            .iter()
            .map(|&w| (i128::from(w as i64) + shift) as u128)
            .collect();
        let nonce = self.inner.random_bytes();
        let sharded = self.vdaf.shard(&self.context, &measurement, &nonce);
        measurement.zeroize();
        let (public_share, input_shares) = sharded?;
        Ok(VerifiedReport {
            client: self.inner.id(),
            nonce,
            public_share,
            input_shares,
        })
    }
}

/// The Prio3SumVec instance of a round: M aggregators, entries in [0, 2B], length d.
pub(crate) fn sum_vec(config: &RoundConfig, bound: &LinfBound) -> Result<Prio3SumVec> {
    let nodes = u8::try_from(config.n_nodes()).map_err(|_| Error::InvalidParameter {
        name: "n_nodes",
        value: f64::from(config.n_nodes()),
        requirement: "at most 255 in a verified round (Prio3's limit)",
    })?;
    let max = bound.max_measurement();
    let bits = (128 - max.leading_zeros()) as usize;
    // libprio's advice: a chunk of about sqrt(encoded length) balances proof size and work.
    let chunk = ((config.dim() * bits) as f64).sqrt().ceil().max(1.0) as usize;
    Ok(Prio3SumVec::new_sum_vec(nodes, max, config.dim(), chunk)?)
}

/// Prio3's application context: binds every proof to this protocol and this round's config.
pub(crate) fn context(config: &RoundConfig) -> Vec<u8> {
    let mut ctx = b"dpdist verified-shares v1 ".to_vec();
    ctx.extend_from_slice(&config.digest().0);
    ctx
}
