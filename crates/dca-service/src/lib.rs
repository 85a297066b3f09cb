//! DCA (Heikkilä et al. 2017, Alg. 1) as separate processes over HTTPS: compute nodes, an
//! aggregator and clients, with the failure behaviour such a system is judged by.
//!
//! One module per role; the roles meet only in [`protocol`]:
//!
//! * [`protocol`]: what every party agrees on — the round spec (its config's SHA-256 is the
//!   round's resource id, so a round id binds its whole configuration), the messages, the
//!   upload of sealed shares, and jobs with their kinds.
//! * [`node`]: a compute node. Shares arrive HPKE-sealed (`share-sealing`), are opened and
//!   checked, and are committed to its store (WAL, group commit) before the node answers 2xx;
//!   exactly once under retries; the running sum is derived state rebuilt on restart.
//! * [`aggregator`]: decides the agreed client set (intersection of the nodes' received sets),
//!   sends the same set to every node, collects the M node sums, releases, charges its
//!   accountant, and records all of it so that it never releases twice; its `server` closes and
//!   releases (or aborts, telling the nodes) every round at its deadline or once complete, and
//!   drives the jobs.
//! * [`participant`]: a data holder that answers jobs under its own policy and ledger and sends
//!   only sealed shares.
//! * [`analyst`]: Alg. 2 (DP std round, statistics round, BLR fit) and DP-SGD with their DCA
//!   rounds run on the aggregator server and the nodes.
//! * [`http`]: TLS 1.3 only (rustls, `ring` provider), serving with limits, problem documents.
//! * [`secret`]: bearer tokens held so that they are wiped on drop, compared in constant time
//!   and never printed.
//!
//! The HTTP API is documented in `docs/http-api.md`.
//!
//! A round is named by the hash of its whole configuration, so parties that disagree on any
//! field (here, the clipping bound) are talking about different rounds:
//!
//! ```
//! use dca_service::hex;
//! use dca_service::protocol::spec::{RoundSpec, token_hash};
//! use share_sealing::NodeKeyPair;
//!
//! let keys: Vec<String> =
//!     (0..3).map(|_| hex::encode(&NodeKeyPair::generate().public.to_bytes())).collect();
//! let spec = RoundSpec {
//!     validity: None,
//!     round: 1,
//!     n_clients: 2,
//!     n_nodes: 3,
//!     max_dropped: 0,
//!     dim: 4,
//!     bound: 1.0,
//!     mode: "seed".into(),
//!     noise_sigma_total: None,
//!     l2_sensitivity: None,
//!     frac_bits: None,
//!     deadline_unix_ms: 1_900_000_000_000,
//!     node_keys: keys,
//!     client_token_sha256: vec![hex::encode(&token_hash("a")), hex::encode(&token_hash("b"))],
//! };
//! let round = spec.clone().validate()?;
//! // What travels (`application/dpdist-round-config`); its SHA-256 is the round id.
//! let config = round.config_bytes()?;
//! assert_eq!(dca_service::protocol::spec::decode_round_config(&config)?, spec);
//! let wider = RoundSpec { bound: 2.0, ..spec }.validate()?;
//! assert_eq!(round.id().len(), 64);
//! assert_ne!(round.id(), wider.id());
//! # Ok::<(), dca_service::Error>(())
//! ```

#[cfg(feature = "server")]
pub mod aggregator;
pub mod analyst;
pub mod clock;
#[cfg(feature = "server")]
pub mod config_file;
#[cfg(feature = "server")]
mod db;
mod error;
pub mod hex;
pub mod http;
#[cfg(feature = "server")]
mod lease;
#[cfg(feature = "server")]
pub mod node;
pub mod participant;
pub mod protocol;
pub mod secret;

#[cfg(test)]
pub(crate) use db::postgres_test_db::scratch_dir;

#[cfg(feature = "server")]
pub use db::{DEFAULT_STORE_POOL_SIZE, MIN_STORE_POOL_SIZE};
pub use error::Error;

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Media type of a sealed share (request body of `PUT /rounds/{id}/shares/{client}`).
pub const MEDIA_SEALED_SHARE: &str = "application/dpdist-sealed-share";
/// Media type of a node sum (response of `GET /rounds/{id}/sum`).
pub const MEDIA_NODE_SUM: &str = "application/dpdist-node-sum";
/// Media type of statuses, job specs and the other small bodies.
pub const MEDIA_JSON: &str = "application/json";
/// Media type of a round config (`PUT /rounds/{id}` on node and aggregator): its JSON spec,
/// then its client token list, in the binary codec of `fixedpoint_shares::wire`.
pub const MEDIA_ROUND_CONFIG: &str = "application/dpdist-round-config";
/// Media type of a set of (client, shard attempt) pairs in the binary codec of
/// `fixedpoint_shares::wire` (a node's received set, the agreed set of a close request).
pub const MEDIA_PAIR_SET: &str = "application/dpdist-pair-set";
