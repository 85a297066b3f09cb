//! Bindings of `fixedpoint_shares`: the DCA secure sum (codec, kernels, round configuration,
//! client, compute node, aggregator, in-process simulation, wire inspection).

mod aggregator;
mod client;
mod codec;
mod errors;
mod kernels;
mod node;
mod node_sum;
mod round;
mod simulate;
mod wire;
