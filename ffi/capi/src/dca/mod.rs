//! Bindings of `fixedpoint_shares`: the DCA secure sum (codec, kernels, round configuration,
//! client, compute node, aggregator, in-process simulation, wire inspection), and of
//! `share_sealing` (HPKE sealing of a share to its compute node).

pub(crate) mod aggregator;
pub(crate) mod client;
pub(crate) mod codec;
mod errors;
pub(crate) mod kernels;
pub(crate) mod ledger;
pub(crate) mod node;
pub(crate) mod node_sum;
pub(crate) mod round;
pub(crate) mod seal;
pub(crate) mod simulate;
pub(crate) mod verified;
pub(crate) mod wire;
