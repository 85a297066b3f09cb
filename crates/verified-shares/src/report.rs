//! The client side: a contribution, shifted into [0, 2B] and sharded into a Prio3 report.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, RoundConfig};
use prio::field::Field128;
use prio::vdaf::prio3::{Prio3InputShare, Prio3PublicShare};

use crate::validity::{RoundVdaf, ValidityBound};
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
    config: RoundConfig,
    bound: ValidityBound,
    vdaf: RoundVdaf,
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
        bound: impl Into<ValidityBound>,
        id: ClientId,
        rng: RngSource,
    ) -> Result<Self> {
        let bound = bound.into();
        Ok(Self {
            inner: Client::new(config, id, rng)?,
            config: config.clone(),
            vdaf: RoundVdaf::new(config, &bound)?,
            bound,
            context: context(config),
        })
    }

    /// Encodes `values` (length d, |x| ≤ bound), adds the clamped noise slice, shifts by B and
    /// shards the result with its proof.
    ///
    /// # Errors
    /// As [`Client::shard`] for bad values (nothing drawn); [`Error::Proof`] if libprio refuses.
    pub fn shard(&mut self, values: &[f64]) -> Result<VerifiedReport> {
        if let ValidityBound::L2(bound) = self.bound {
            self.check_data_norm(values, bound.data_units)?;
        }
        let words = self
            .inner
            .bounded_contribution(values, self.bound.slice_bound())?;
        let nonce = self.inner.random_bytes();
        let (public_share, input_shares) =
            self.vdaf
                .shard(&self.context, &words, self.bound.units(), &nonce)?;
        Ok(VerifiedReport {
            client: self.inner.id(),
            nonce,
            public_share,
            input_shares,
        })
    }

    /// A participant refuses a bound its data cannot meet, before drawing any noise.
    fn check_data_norm(&self, values: &[f64], data_units: u64) -> Result<()> {
        let codec = self.config.codec();
        let mut units = vec![0u64; values.len()];
        codec.encode(values, &mut units)?;
        let norm_squared: u128 = units
            .iter()
            .map(|&w| u128::from((w as i64).unsigned_abs()).pow(2))
            .sum();
        if norm_squared > u128::from(data_units).pow(2) {
            return Err(Error::DataPastBound {
                client: self.inner.id(),
                norm: (norm_squared as f64).sqrt() / codec.scale(),
                bound: data_units as f64 / codec.scale(),
            });
        }
        Ok(())
    }
}

/// Prio3's application context: binds every proof to this protocol and this round's config.
pub(crate) fn context(config: &RoundConfig) -> Vec<u8> {
    let mut ctx = b"dpdist verified-shares v1 ".to_vec();
    ctx.extend_from_slice(&config.digest().0);
    ctx
}
