//! Bindings of `fixedpoint_shares`: the DCA secure sum (codec, kernels, round configuration,
//! client, compute node, aggregator, in-process simulation, wire inspection).

pub(crate) mod aggregator;
pub(crate) mod client;
mod codec;
mod errors;
mod kernels;
pub(crate) mod node;
pub(crate) mod node_sum;
pub(crate) mod round;
mod simulate;
mod wire;
