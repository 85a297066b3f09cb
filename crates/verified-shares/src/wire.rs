//! The bytes a verified round sends between processes: a client's share for one node, a node's
//! verifier share for the relay, the relay's verdict for the nodes, a node's sum. Each is
//! libprio's own encoding (draft-irtf-cfrg-vdaf), decoded with the round's Prio3 instance; the
//! round, the client and the node are bound by the channel (the sealed share's context, the
//! request's path), so none of them is repeated here.

use std::io::Cursor;

use fixedpoint_shares::{ClientId, RoundConfig};
use prio::codec::{CodecError, Decode, Encode, ParameterizedDecode};
use prio::field::Field128;
use prio::field::FieldElement;
use prio::vdaf::AggregateShare;
use prio::vdaf::prio3::{Prio3InputShare, Prio3PublicShare};

use crate::report::{VerifiedReport, context};
use crate::validity::{RoundVdaf, ValidityBound};
use crate::verify::{Pending, Relay, Verdict, VerifierShare, VerifyingNode};
use crate::{Error, Result};

/// One node's part of a report: the nonce, the public share and that node's input share.
#[derive(Clone, Debug)]
pub struct NodeShare {
    /// The report's nonce; its first 8 bytes name the attempt (a client that shards again draws
    /// another nonce).
    pub nonce: [u8; 16],
    public_share: Prio3PublicShare<32>,
    input_share: Prio3InputShare<Field128, 32>,
}

impl NodeShare {
    /// The attempt this share belongs to: the nonce's first 8 bytes, little-endian.
    pub fn attempt(&self) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.nonce[..8]);
        u64::from_le_bytes(word)
    }
}

fn codec(e: CodecError) -> Error {
    Error::Proof(format!("encoding: {e}"))
}

/// Decodes all of `bytes` as one `T` (trailing bytes refused).
fn decode_exact<P, T: ParameterizedDecode<P>>(param: &P, bytes: &[u8]) -> Result<T> {
    let mut cursor = Cursor::new(bytes);
    let value = T::decode_with_param(param, &mut cursor).map_err(codec)?;
    if cursor.position() as usize != bytes.len() {
        return Err(Error::Proof(format!(
            "{} bytes after the end of the message",
            bytes.len() - cursor.position() as usize
        )));
    }
    Ok(value)
}

impl VerifiedReport {
    /// Node `node`'s message: nonce ‖ public share ‖ its input share.
    ///
    /// # Errors
    /// [`Error::Proof`] if the report has no share for `node`.
    pub fn node_message(&self, node: usize) -> Result<Vec<u8>> {
        let share = self.input_shares.get(node).ok_or(Error::Proof(format!(
            "report of client {} has no share for node {node}",
            self.client
        )))?;
        let mut out = self.nonce.to_vec();
        self.public_share.encode(&mut out).map_err(codec)?;
        share.encode(&mut out).map_err(codec)?;
        Ok(out)
    }
}

/// The exact length of each node's message in a round with this bound (node 0's carries the
/// field vector and its proof share, every other node's two seeds), measured on a report of the
/// zero vector: libprio gives the lengths only through its encodings. Costs one proof.
///
/// # Errors
/// As the round's Prio3 instance.
pub fn node_message_lens(
    config: &RoundConfig,
    bound: impl Into<ValidityBound>,
) -> Result<Vec<usize>> {
    let bound = bound.into();
    let vdaf = RoundVdaf::new(config, &bound)?;
    let zeros = vec![0u64; config.dim()];
    let (public_share, input_shares) =
        vdaf.shard(&context(config), &zeros, bound.units(), &[0; 16])?;
    let public_len = public_share.get_encoded().map_err(codec)?.len();
    input_shares
        .iter()
        .map(|share| Ok(16 + public_len + share.get_encoded().map_err(codec)?.len()))
        .collect()
}

impl VerifyingNode {
    /// This node's share of a report, as [`VerifiedReport::node_message`] wrote it.
    ///
    /// # Errors
    /// [`Error::Proof`] if the bytes are not exactly such a message.
    pub fn decode_share(&self, bytes: &[u8]) -> Result<NodeShare> {
        let nonce: [u8; 16] = bytes
            .get(..16)
            .and_then(|n| n.try_into().ok())
            .ok_or(Error::Proof("share message shorter than its nonce".into()))?;
        let mut cursor = Cursor::new(&bytes[16..]);
        let public_share = self
            .vdaf()
            .decode_public_share(&mut cursor)
            .map_err(codec)?;
        let input_share = self
            .vdaf()
            .decode_input_share(self.index(), &mut cursor)
            .map_err(codec)?;
        if cursor.position() as usize != bytes.len() - 16 {
            return Err(Error::Proof("bytes after the end of the share".into()));
        }
        Ok(NodeShare {
            nonce,
            public_share,
            input_share,
        })
    }

    /// This node's verifier share of the report `share` belongs to (see [`VerifyingNode::verify`]).
    ///
    /// # Errors
    /// [`Error::Proof`]: this node already sees the share as malformed (the client is invalid).
    pub fn verify_share(&self, share: &NodeShare) -> Result<(Pending, VerifierShare)> {
        self.verify_init(&share.nonce, &share.public_share, &share.input_share)
    }

    /// The relay's verdict for a report this node holds in state `pending`.
    ///
    /// # Errors
    /// [`Error::Proof`] if the bytes are not a verdict of this round.
    pub fn decode_verdict(&self, pending: &Pending, bytes: &[u8]) -> Result<Verdict> {
        decode_exact(pending, bytes)
    }

    /// Adds a report accepted by the relay; as [`VerifyingNode::accept`].
    ///
    /// # Errors
    /// As [`VerifyingNode::accept`].
    pub fn accept_share(
        &mut self,
        client: ClientId,
        share: &NodeShare,
        verdict: &[u8],
    ) -> Result<()> {
        let (pending, _) = self.verify_share(share)?;
        let verdict = self.decode_verdict(&pending, verdict)?;
        self.accept(client, pending, &verdict)
    }

    /// This node's sum of output shares, encoded.
    pub fn encoded_sum(&self) -> Result<Vec<u8>> {
        self.sum().get_encoded().map_err(codec)
    }
}

/// A verifier share's bytes.
///
/// # Errors
/// [`Error::Proof`] if libprio cannot encode it.
pub fn encode_verifier_share(share: &VerifierShare) -> Result<Vec<u8>> {
    share.get_encoded().map_err(codec)
}

/// A verdict's bytes (the joint randomness seed the nodes check).
///
/// # Errors
/// [`Error::Proof`] if libprio cannot encode it.
pub fn encode_verdict(verdict: &Verdict) -> Result<Vec<u8>> {
    verdict.get_encoded().map_err(codec)
}

impl Relay {
    /// A node's verifier share from its bytes.
    ///
    /// # Errors
    /// [`Error::Proof`] if the bytes are not a verifier share of this round.
    pub fn decode_verifier_share(&self, bytes: &[u8]) -> Result<VerifierShare> {
        decode_exact(&self.decoding_state, bytes)
    }

    /// A node's sum from its bytes ([`VerifyingNode::encoded_sum`]).
    ///
    /// # Errors
    /// [`Error::Proof`] if the bytes are not a sum of this round.
    pub fn decode_sum(&self, bytes: &[u8]) -> Result<AggregateShare<Field128>> {
        let len = self.vdaf().output_len();
        if bytes.len() != len * Field128::ENCODED_SIZE {
            return Err(Error::Proof(format!(
                "a node sum of {} bytes, not {}",
                bytes.len(),
                len * Field128::ENCODED_SIZE
            )));
        }
        let mut cursor = Cursor::new(bytes);
        let entries = (0..len)
            .map(|_| Field128::decode(&mut cursor))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(codec)?;
        Ok(AggregateShare::from(entries))
    }
}
