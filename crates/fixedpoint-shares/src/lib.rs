//! DCA secure summation (Heikkilä et al. 2017, Sec. 4.1, Alg. 1) in fixed point over Z_2^64.
//!
//! Each of N clients encodes its vector ([`FixedPoint`]), optionally adds its share of
//! distributed discrete Gaussian noise, and splits the result into M additive shares
//! ([`Client::shard`]): masks for nodes 1..M are AES-128-CTR keystreams of fresh seeds (sent as
//! the seed in [`ShareMode::Seed`], expanded in [`ShareMode::Full`]), node 0 gets the balancing
//! share; all M messages of one sharding carry the same random [`ShardId`]. Each
//! [`ComputeNode`] sums the shares it receives, streaming; the nodes agree on the intersection
//! of the (client, shard attempt) pairs they received ([`agree`], so a client's retries are
//! never mixed); the [`Aggregator`] adds the M node sums — the masks cancel exactly — and
//! decodes a [`Release`] that states N, T and the noise. [`simulate_round`] runs all of it in
//! one process. [`wire`] is the message format ([`Encode`] / [`Decode`], decoding bounded by
//! the round's config), [`kernels`] the wrapping-add loops, [`RoundLedger`] keeps a party from
//! reusing a round id with another configuration.
//!
//! Masks come from AES-128-CTR kernels chosen at run time (the `aes-keystream` crate: VAES-512,
//! VAES-256, AES-NI, or the `aes` crate as the portable path; [`keystream_backend`] names the
//! one in use), all producing the same keystream. This crate itself forbids `unsafe`.
//!
//! The phases are named shard → absorb → agree → finalize → release (the book's "Vocabulary",
//! docs/src/architecture.md, maps them to libprio's shard / accumulate / unshard and to the C, R
//! and Julia names).
//!
//! ```
//! use dp_noise::rng::RngSource;
//! use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode, simulate_round};
//!
//! // Three clients, two compute nodes, no DP noise: the release is the exact sum.
//! let config = RoundConfig::new(&RoundParams {
//!     round: RoundId(7),
//!     n_clients: 3,
//!     n_nodes: 2,
//!     max_dropped: 0,
//!     dim: 2,
//!     bound: 1.0,
//!     mode: ShareMode::Seed,
//!     noise_sigma_total: None,
//!     frac_bits: None,
//! })?;
//! let inputs = [[0.5, -0.25], [0.25, 0.5], [-1.0, 0.125]];
//! let release = simulate_round(&config, &inputs, &[], RngSource::Os)?;
//! assert_eq!(release.sum, vec![-0.25, 0.375]);
//! # Ok::<(), fixedpoint_shares::Error>(())
//! ```

mod aggregator;
mod alloc;
mod client;
mod client_set;
mod error;
mod fixed_point;
mod ids;
pub mod kernels;
mod ledger;
mod message;
mod node;
mod prg;
mod round;
mod shard_set;
mod simulate;
mod transport;
pub mod wire;

#[cfg(test)]
mod tests;

pub use aggregator::{Aggregator, Release};
pub use client::{Client, SliceBound};
pub use client_set::ClientSet;
pub use error::Error;
pub use fixed_point::FixedPoint;
pub use ids::{ClientId, ConfigDigest, NodeIndex, RoundId, ShardId};
pub use ledger::{Admission, RoundLedger};
pub use message::{ShareMessage, SharePayload};
pub use node::{ComputeNode, NodeSum, RunningSum, check_share};
pub use prg::{Seed, keystream_backend, raw_keystream};
pub use round::{
    MAX_CLIENTS, MAX_DIM, NOISE_TAIL_FAILURE_PROBABILITY, NoiseSpec, RoundConfig, RoundParams,
    ShareMode, noise_tail,
};
pub use shard_set::{ShardSet, agree};
pub use simulate::{simulate_round, simulate_round_with};
pub use transport::{ClientVectors, DcaRound, DcaTransport, InProcess};
pub use wire::{Decode, Encode};

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
