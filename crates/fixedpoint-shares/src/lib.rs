//! DCA secure summation (Heikkilä et al. 2017, Sec. 4.1, Alg. 1) in fixed point over Z_2^64.
//!
//! Each of N clients encodes its vector ([`FixedPoint`]), optionally adds its share of
//! distributed discrete Gaussian noise, and splits the result into M additive shares
//! ([`Client::shard`]): masks for nodes 1..M are AES-128-CTR keystreams of fresh seeds (sent as
//! the seed in [`ShareMode::Seed`], expanded in [`ShareMode::Full`]), node 0 gets the balancing
//! share. Each [`ComputeNode`] sums the shares it receives, streaming; the nodes agree on the
//! intersection of the client sets they received ([`agree`]); the [`Aggregator`] adds the M
//! node sums — the masks cancel exactly — and decodes a [`Release`] that states N, T and the
//! noise. [`simulate_round`] runs all of it in one process. [`wire`] is the message format,
//! [`kernels`] the wrapping-add loops.
//!
//! Phase names follow libprio: client shards, nodes aggregate, the collector unshards.

mod aggregator;
mod client;
mod client_set;
mod error;
mod fixed_point;
mod ids;
pub mod kernels;
mod message;
mod node;
mod prg;
mod round;
mod simulate;
pub mod wire;

#[cfg(test)]
mod tests;

pub use aggregator::{Aggregator, Release};
pub use client::Client;
pub use client_set::{ClientSet, agree};
pub use error::Error;
pub use fixed_point::FixedPoint;
pub use ids::{ClientId, NodeIndex, RoundId};
pub use message::{ShareMessage, SharePayload};
pub use node::{ComputeNode, NodeSum};
pub use prg::{Seed, raw_keystream};
pub use round::{
    MAX_CLIENTS, MAX_DIM, NOISE_TAIL_FAILURE_PROBABILITY, NoiseSpec, RoundConfig, RoundParams,
    ShareMode, noise_tail,
};
pub use simulate::{simulate_round, simulate_round_with};

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
