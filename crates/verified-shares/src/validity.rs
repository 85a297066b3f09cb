//! Which bound a verified round checks, and the Prio3 instance that checks it.

use fixedpoint_shares::{RoundConfig, SliceBound};
use std::io::Cursor;

use prio::codec::{CodecError, ParameterizedDecode};
use prio::field::Field128;
use prio::vdaf::prio3::{
    Prio3, Prio3InputShare, Prio3PublicShare, Prio3SumVec, Prio3VerifierMessage,
    Prio3VerifierShare, Prio3VerifyState,
};
use prio::vdaf::xof::XofTurboShake128;
use prio::vdaf::{AggregateShare, Aggregator, Client, Collector, OutputShare, VerifyTransition};
use zeroize::Zeroize;

use crate::bound::LinfBound;
use crate::l2::{L2Bound, L2BoundSumVec};
use crate::{Error, Result};

/// The bound each contribution of a verified round is proven to satisfy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValidityBound {
    /// Every coordinate within ±B (`validity = "linf"`).
    Linf(LinfBound),
    /// ‖v‖₂ ≤ R (`validity = "l2"`).
    L2(L2Bound),
}

impl ValidityBound {
    /// B or R, grid units: the shift that makes every coordinate of a contribution non-negative.
    pub fn units(&self) -> u64 {
        match self {
            ValidityBound::Linf(bound) => bound.units(),
            ValidityBound::L2(bound) => bound.units(),
        }
    }

    /// δ_t of the round's truncated noise slices.
    pub fn truncation_delta(&self) -> f64 {
        match self {
            ValidityBound::Linf(bound) => bound.truncation_delta,
            ValidityBound::L2(bound) => bound.truncation_delta,
        }
    }

    pub(crate) fn slice_bound(&self) -> SliceBound {
        match self {
            ValidityBound::Linf(bound) => SliceBound::Coordinate(bound.slice_units),
            ValidityBound::L2(bound) => SliceBound::Norm(bound.slice_units),
        }
    }
}

impl From<LinfBound> for ValidityBound {
    fn from(bound: LinfBound) -> Self {
        ValidityBound::Linf(bound)
    }
}

impl From<&LinfBound> for ValidityBound {
    fn from(bound: &LinfBound) -> Self {
        ValidityBound::Linf(*bound)
    }
}

impl From<L2Bound> for ValidityBound {
    fn from(bound: L2Bound) -> Self {
        ValidityBound::L2(bound)
    }
}

impl From<&L2Bound> for ValidityBound {
    fn from(bound: &L2Bound) -> Self {
        ValidityBound::L2(*bound)
    }
}

/// Prio3 with the L2 circuit; its algorithm id is in the VDAF draft's private-use range.
type Prio3L2 = Prio3<L2BoundSumVec, XofTurboShake128, 32>;
const PRIO3_L2_ALGORITHM_ID: u32 = 0xFFFF_0002;

pub(crate) type Pending = Prio3VerifyState<Field128, 32>;
pub(crate) type Share = Prio3VerifierShare<Field128, 32>;
pub(crate) type Message = Prio3VerifierMessage<32>;

/// The round's Prio3 instance. Both variants have the same shares, states and messages (Field128,
/// 32-byte seeds), so only the measurement's encoding differs.
#[derive(Clone, Debug)]
pub(crate) enum RoundVdaf {
    Linf(Prio3SumVec),
    L2(Prio3L2),
}

macro_rules! each {
    ($self:expr, $vdaf:ident => $body:expr) => {
        match $self {
            RoundVdaf::Linf($vdaf) => $body,
            RoundVdaf::L2($vdaf) => $body,
        }
    };
}

impl RoundVdaf {
    /// M aggregators, length d; SumVec's entries in [0, 2B] or the L2 circuit with radius R.
    pub(crate) fn new(config: &RoundConfig, bound: &ValidityBound) -> Result<Self> {
        let nodes = u8::try_from(config.n_nodes()).map_err(|_| Error::InvalidParameter {
            name: "n_nodes",
            value: f64::from(config.n_nodes()),
            requirement: "at most 255 in a verified round (Prio3's limit)",
        })?;
        let d = config.dim();
        // libprio's advice: a chunk of about sqrt(encoded length) balances proof size and work.
        let chunk = |bits: usize| ((d * bits) as f64).sqrt().ceil().max(1.0) as usize;
        match bound {
            ValidityBound::Linf(bound) => {
                let max = bound.max_measurement();
                let bits = (128 - max.leading_zeros()) as usize;
                Ok(RoundVdaf::Linf(Prio3SumVec::new_sum_vec(
                    nodes,
                    max,
                    d,
                    chunk(bits),
                )?))
            }
            ValidityBound::L2(bound) => {
                let bits = (128 - (2 * u128::from(bound.units())).leading_zeros()) as usize;
                let typ = L2BoundSumVec::new(d, bound.units(), chunk(bits))?;
                Ok(RoundVdaf::L2(Prio3L2::new(
                    nodes,
                    1,
                    PRIO3_L2_ALGORITHM_ID,
                    typ,
                )?))
            }
        }
    }

    /// Shards the contribution (grid units, two's complement) shifted by `shift`.
    pub(crate) fn shard(
        &self,
        context: &[u8],
        contribution: &[u64],
        shift: u64,
        nonce: &[u8; 16],
    ) -> Result<(Prio3PublicShare<32>, Vec<Prio3InputShare<Field128, 32>>)> {
        match self {
            RoundVdaf::Linf(vdaf) => {
                let shift = i128::from(shift);
                let mut measurement: Vec<u128> = contribution
                    .iter()
                    .map(|&w| (i128::from(w as i64) + shift) as u128)
                    .collect();
                let sharded = vdaf.shard(context, &measurement, nonce);
                measurement.zeroize();
                Ok(sharded?)
            }
            RoundVdaf::L2(vdaf) => {
                // The circuit shifts by R itself.
                let mut measurement: Vec<i64> = contribution.iter().map(|&w| w as i64).collect();
                let sharded = vdaf.shard(context, &measurement, nonce);
                measurement.zeroize();
                Ok(sharded?)
            }
        }
    }

    pub(crate) fn verify_init(
        &self,
        verify_key: &[u8; 32],
        context: &[u8],
        index: usize,
        nonce: &[u8; 16],
        public_share: &Prio3PublicShare<32>,
        share: &Prio3InputShare<Field128, 32>,
    ) -> Result<(Pending, Share)> {
        Ok(each!(self, vdaf => vdaf.verify_init(
            verify_key, context, index, &(), nonce, public_share, share
        ))?)
    }

    pub(crate) fn verifier_shares_to_message(
        &self,
        context: &[u8],
        shares: Vec<Share>,
    ) -> Result<Message> {
        Ok(each!(self, vdaf => vdaf.verifier_shares_to_message(context, &(), shares))?)
    }

    /// The report's output share; `None` if Prio3 asks for another verification round (it never
    /// does for these one-round circuits).
    pub(crate) fn verify_next(
        &self,
        context: &[u8],
        pending: Pending,
        message: Message,
    ) -> Result<Option<OutputShare<Field128>>> {
        Ok(
            each!(self, vdaf => match vdaf.verify_next(context, pending, message)? {
                VerifyTransition::Finish(output) => Some(output),
                VerifyTransition::Continue(..) => None,
            }),
        )
    }

    pub(crate) fn decode_public_share(
        &self,
        bytes: &mut Cursor<&[u8]>,
    ) -> std::result::Result<Prio3PublicShare<32>, CodecError> {
        each!(self, vdaf => Prio3PublicShare::decode_with_param(vdaf, bytes))
    }

    pub(crate) fn decode_input_share(
        &self,
        node: usize,
        bytes: &mut Cursor<&[u8]>,
    ) -> std::result::Result<Prio3InputShare<Field128, 32>, CodecError> {
        each!(self, vdaf => Prio3InputShare::decode_with_param(&(vdaf, node), bytes))
    }

    /// A verify state to decode verifier shares with: libprio reads only the verifier's length
    /// and whether joint randomness is used from it, which are the same for every report, so the
    /// relay (which verifies nothing itself) decodes a helper's state from zero seeds.
    pub(crate) fn decoding_state(&self) -> Result<Pending> {
        let zeros = [0u8; 64];
        let mut cursor = Cursor::new(&zeros[..]);
        each!(self, vdaf => Prio3VerifyState::decode_with_param(&(vdaf, 1), &mut cursor))
            .map_err(|e| Error::Proof(format!("verify state template: {e}")))
    }

    /// Entries of an output share (and of a node's sum).
    pub(crate) fn output_len(&self) -> usize {
        each!(self, vdaf => vdaf.output_len())
    }

    pub(crate) fn aggregate_init(&self) -> AggregateShare<Field128> {
        each!(self, vdaf => vdaf.aggregate_init(&()))
    }

    /// Σ over `n_valid` reports of the shifted entries.
    pub(crate) fn unshard(
        &self,
        node_sums: Vec<AggregateShare<Field128>>,
        n_valid: usize,
    ) -> Result<Vec<u128>> {
        Ok(each!(self, vdaf => vdaf.unshard(&(), node_sums, n_valid))?)
    }
}
