//! The compute nodes' and the relay's side: verify each report on shares, add the valid ones.

use fixedpoint_shares::{ClientId, RoundConfig};
use prio::field::Field128;
use prio::vdaf::Aggregatable;
use prio::vdaf::prio3::{Prio3InputShare, Prio3PublicShare};

use crate::report::{VerifiedReport, VerifyKey, context};
use crate::validity::{RoundVdaf, ValidityBound};
use crate::{Error, Result};

/// Node k of a verified round: its half of each report's check, and its running sum of the
/// output shares of the valid reports.
pub struct VerifyingNode {
    index: usize,
    vdaf: RoundVdaf,
    verify_key: VerifyKey,
    context: Vec<u8>,
    sum: prio::vdaf::AggregateShare<Field128>,
    valid: Vec<ClientId>,
}

/// A node's state for one report between its verifier share and the relay's verdict.
pub type Pending = crate::validity::Pending;

/// A node's verifier share for one report (sent to the relay).
pub type VerifierShare = crate::validity::Share;

/// The relay's verdict on one valid report (sent back to every node).
pub type Verdict = crate::validity::Message;

impl VerifyingNode {
    /// Node `index` of the round, holding the nodes' shared `verify_key`.
    ///
    /// # Errors
    /// As the round's Prio3 instance ([`Error::InvalidParameter`] past 255 nodes).
    pub fn new(
        config: &RoundConfig,
        bound: impl Into<ValidityBound>,
        index: usize,
        verify_key: VerifyKey,
    ) -> Result<Self> {
        let vdaf = RoundVdaf::new(config, &bound.into())?;
        Ok(Self {
            index,
            sum: vdaf.aggregate_init(),
            vdaf,
            verify_key,
            context: context(config),
            valid: Vec::new(),
        })
    }

    /// This node's verifier share of `report` (its own input share). `Err` means this node
    /// already sees the report as malformed: the client is invalid.
    pub fn verify(&self, report: &VerifiedReport) -> Result<(Pending, VerifierShare)> {
        let share = report
            .input_shares
            .get(self.index)
            .ok_or(Error::Proof(format!(
                "report of client {} has no share for node {}",
                report.client, self.index
            )))?;
        self.verify_init(&report.nonce, &report.public_share, share)
    }

    pub(crate) fn verify_init(
        &self,
        nonce: &[u8; 16],
        public_share: &Prio3PublicShare<32>,
        share: &Prio3InputShare<Field128, 32>,
    ) -> Result<(Pending, VerifierShare)> {
        self.vdaf.verify_init(
            &self.verify_key,
            &self.context,
            self.index,
            nonce,
            public_share,
            share,
        )
    }

    pub(crate) fn vdaf(&self) -> &RoundVdaf {
        &self.vdaf
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Adds the report's output share once the relay found it valid.
    ///
    /// # Errors
    /// [`Error::Proof`] if the verdict does not finish the check (the client is then invalid and
    /// nothing is added).
    pub fn accept(&mut self, client: ClientId, pending: Pending, verdict: &Verdict) -> Result<()> {
        match self
            .vdaf
            .verify_next(&self.context, pending, verdict.clone())?
        {
            Some(output) => {
                self.sum.accumulate(&output)?;
                self.valid.push(client);
                Ok(())
            }
            None => Err(Error::Proof(
                "Prio3 asked for a second verification round".into(),
            )),
        }
    }

    /// The clients this node added, in order.
    pub fn valid(&self) -> &[ClientId] {
        &self.valid
    }

    /// This node's sum of output shares.
    pub fn sum(&self) -> &prio::vdaf::AggregateShare<Field128> {
        &self.sum
    }
}

/// The relay (the aggregator, as DAP's leader): combines the nodes' verifier shares of a report
/// and learns only whether it is valid.
pub struct Relay {
    vdaf: RoundVdaf,
    context: Vec<u8>,
    pub(crate) decoding_state: Pending,
}

impl Relay {
    /// The relay of the round.
    ///
    /// # Errors
    /// As the round's Prio3 instance.
    pub fn new(config: &RoundConfig, bound: impl Into<ValidityBound>) -> Result<Self> {
        let vdaf = RoundVdaf::new(config, &bound.into())?;
        Ok(Self {
            decoding_state: vdaf.decoding_state()?,
            vdaf,
            context: context(config),
        })
    }

    pub(crate) fn vdaf(&self) -> &RoundVdaf {
        &self.vdaf
    }

    /// The verdict for one report from every node's verifier share: `None` if the proof fails.
    pub fn combine(&self, shares: Vec<VerifierShare>) -> Option<Verdict> {
        self.vdaf
            .verifier_shares_to_message(&self.context, shares)
            .ok()
    }

    /// The released sum in grid units from every node's sum over `n_valid` reports:
    /// Σ_i m_i − n_valid·B (or R) per coordinate.
    ///
    /// # Errors
    /// [`Error::Proof`] if libprio refuses the shares; [`Error::SumOverflow`] if a coordinate
    /// does not fit 64 bits.
    pub fn sum_units(
        &self,
        node_sums: Vec<prio::vdaf::AggregateShare<Field128>>,
        n_valid: usize,
        bound: impl Into<ValidityBound>,
    ) -> Result<Vec<i64>> {
        let bound = bound.into();
        let shifted: Vec<u128> = self.vdaf.unshard(node_sums, n_valid)?;
        let offset = i128::from(bound.units()) * n_valid as i128;
        shifted
            .iter()
            .enumerate()
            .map(|(coordinate, &s)| {
                i64::try_from(s as i128 - offset).map_err(|_| Error::SumOverflow { coordinate })
            })
            .collect()
    }
}
