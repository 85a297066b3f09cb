//! Verified contributions for DCA rounds: each client proves to the compute nodes, on its secret
//! shares, that the vector it contributes — its encoded data plus its own slice of the
//! distributed noise — has every coordinate within the bound the round's sensitivity assumed.
//! A client whose proof fails is left out of the sum like a dropout and named; the round releases
//! over the valid clients if at most T are missing (invalid or dropped).
//!
//! The proof system is libprio's `Prio3SumVec` (an FLP over Field128, draft-irtf-cfrg-vdaf):
//! coordinate j of client i is sent as m_ij = v_ij + B ∈ [0, 2B] where v_ij = enc(x_ij) + η_ij in
//! grid units and B = the codec's bound on |enc(x)| plus the slice bound τ ([`LinfBound`]).
//! Node 0 receives the field vector and its proof share, the other nodes a seed each (Prio3's
//! seed-compressed helper shares). The relay (the aggregator) combines the nodes' verifier shares
//! and learns valid or not; the nodes add the output shares of valid clients; the release is
//! Σ_i m_i − n_valid·B, the same integer sum DCA's Z₂⁶⁴ shares give when no slice was clamped.
//!
//! What the mode guarantees: a participant moves each coordinate of the release by at most B
//! units (its share of the sensitivity, as the round assumed), whatever it sends. What it does not:
//! a compute node can still lie about its own verifier or output share (it can make a valid
//! client look invalid, or shift the sum); privacy rests on DCA's assumptions as before.
//!
//! Privacy cost of the truncation: every honest noise value is clamped into [−τ, τ]
//! ([`bound::slice_bound_units`]); the clamped mechanism differs from the unclamped one only when
//! some value reaches τ, which happens with probability at most δ_t ([`bound::truncation_delta`]),
//! so an (ε, δ) guarantee becomes (ε, δ + (1 + e^ε)·δ_t) ([`bound::total_delta`]).
//!
//! The L2 mode ([`L2Bound`], [`l2`]) proves ‖v‖₂ ≤ R instead, R = the job's bound on the data's
//! norm plus a slice bound τ₂; an honest slice longer than τ₂ is scaled back to it. Every function
//! taking a bound takes either ([`ValidityBound`]).
//!
//! ```
//! use dp_noise::rng::RngSource;
//! use fixedpoint_shares::{ClientId, RoundConfig, RoundId, RoundParams, ShareMode};
//! use verified_shares::{LinfBound, VerifiedReport, simulate_verified_round};
//!
//! let config = RoundConfig::new(&RoundParams {
//!     round: RoundId(1),
//!     n_clients: 4,
//!     n_nodes: 2,
//!     max_dropped: 1,
//!     dim: 3,
//!     bound: 1.0,
//!     mode: ShareMode::Seed,
//!     noise_sigma_total: None, // exact sums, to show the arithmetic
//!     frac_bits: Some(10),
//! })?;
//! let bound = LinfBound::new(&config, 1e-9)?;
//! let inputs = vec![vec![0.5, -1.0, 0.25]; 4];
//! // Client 2 inflates its first coordinate by 1000 units on node 0's share.
//! let cheat = |r: &mut VerifiedReport| {
//!     if r.client == ClientId(2) {
//!         if let prio::vdaf::prio3::Prio3InputShare::Leader { measurement_share, .. } =
//!             &mut r.input_shares[0]
//!         {
//!             measurement_share[0] += prio::field::Field128::from(1000u128);
//!         }
//!     }
//! };
//! let out = simulate_verified_round(
//!     &config, bound, &inputs, &[], Some(&cheat), RngSource::InsecureFixedSeed(7),
//! )?;
//! assert_eq!(out.invalid, vec![ClientId(2)]);
//! assert_eq!(out.release.sum, vec![1.5, -3.0, 0.75]); // the three honest clients
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bound;
mod error;
pub mod l2;
pub mod report;
pub mod simulate;
mod validity;
pub mod verify;
pub mod wire;

pub use bound::LinfBound;
pub use error::Error;
pub use l2::L2Bound;
pub use report::{VerifiedClient, VerifiedReport};
pub use simulate::{VerifiedRelease, simulate_verified_round};
pub use validity::ValidityBound;
pub use verify::{Relay, VerifyingNode};
pub use wire::{NodeShare, node_message_lens};

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
