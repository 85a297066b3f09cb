//! A verified round's check with the aggregator as the relay (as DAP's leader): it asks every
//! node for its verifier shares of the candidate clients, combines them, and learns only which
//! contributions are valid; the valid ones, with the relay's verdicts, make the close. At
//! release it adds the nodes' field sums (libprio's unsharding) instead of DCA's Z₂⁶⁴ sums.

use fixedpoint_shares::{ClientId, Encode, ShardSet};
use verified_shares::Relay;
use verified_shares::wire::encode_verdict;

use crate::aggregator::*;
use crate::protocol::verified_close::VerifiedClose;

/// A verified round's released sum: value units, grid units, the noise's σ in it.
pub(in crate::aggregator) struct VerifiedSum {
    pub(in crate::aggregator) sum: Vec<f64>,
    pub(in crate::aggregator) sum_units: Vec<i64>,
    pub(in crate::aggregator) frac_bits: u32,
    pub(in crate::aggregator) noise_sigma_released: f64,
}

fn relay(round: &Round) -> Result<(Relay, verified_shares::ValidityBound)> {
    let validity = round
        .validity
        .as_ref()
        .ok_or_else(|| Error::InvalidSpec("the round has no validity mode".into()))?;
    Ok((Relay::new(&round.config, validity.bound)?, validity.bound))
}

impl Aggregator {
    /// Leaves out of `candidates` (the pairs every node holds) each client whose contribution
    /// fails the nodes' joint check; the close to record for the rest.
    pub(in crate::aggregator) async fn check_validity(
        &self,
        round: &Round,
        mut candidates: ShardSet,
    ) -> Result<(ShardSet, VerifiedClose)> {
        let (relay, _) = relay(round)?;
        let id = round.id();
        let clients: Vec<u64> = candidates.clients().iter().map(|c| c.0).collect();
        let per_node = self.nodes.verifier_shares(&id, &clients).await?;
        let (mut verdicts, mut invalid) = (Vec::new(), Vec::new());
        for (i, &client) in clients.iter().enumerate() {
            // A node without a share of the client, or that finds it malformed, makes it invalid.
            let shares: Option<Vec<_>> = per_node
                .iter()
                .map(|node| {
                    node[i]
                        .as_deref()
                        .and_then(|b| relay.decode_verifier_share(b).ok())
                })
                .collect();
            match shares.and_then(|shares| relay.combine(shares)) {
                Some(verdict) => verdicts.push(encode_verdict(&verdict)?),
                None => {
                    candidates.remove(ClientId(client));
                    invalid.push(client);
                }
            }
        }
        if !invalid.is_empty() {
            tracing::warn!(round = round.spec.round, id = %id, ?invalid,
                "clients left out: their contributions failed the nodes' check");
        }
        let close = VerifiedClose {
            pairs: candidates.get_encoded()?,
            verdicts,
            invalid,
        };
        Ok((candidates, close))
    }

    /// The release of a verified round from the nodes' sums over `n_valid` clients.
    pub(in crate::aggregator) fn verified_sum(
        &self,
        round: &Round,
        node_sums: &[Vec<u8>],
        n_valid: usize,
    ) -> Result<VerifiedSum> {
        let (relay, bound) = relay(round)?;
        let sums = node_sums
            .iter()
            .map(|bytes| relay.decode_sum(bytes))
            .collect::<verified_shares::Result<Vec<_>>>()?;
        let sum_units = relay.sum_units(sums, n_valid, bound)?;
        let codec = round.config.codec();
        let words: Vec<u64> = sum_units.iter().map(|&s| s as u64).collect();
        let mut sum = vec![0.0; words.len()];
        codec.decode(&words, &mut sum)?;
        let noise_sigma_released = round
            .config
            .noise()
            .map_or(0.0, |n| n.sigma_client * (n_valid as f64).sqrt());
        Ok(VerifiedSum {
            sum,
            sum_units,
            frac_bits: codec.frac_bits(),
            noise_sigma_released,
        })
    }
}
