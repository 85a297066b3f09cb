//! The JSON bodies the node and the aggregator exchange: a round's status, the abort notice,
//! what the aggregator publishes. The agreed and received sets travel as pair sets of
//! `fixedpoint_shares::wire` ([`crate::MEDIA_PAIR_SET`]), not here.

use fixedpoint_shares::{ClientId, ClientSet, Release};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A round's state as `GET /rounds/{id}` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundStatus {
    /// Hex config hash.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// "open", "closed", "aborted", or "damaged" (stored state failed its integrity check:
    /// the node refuses to finalize or serve the round).
    pub state: String,
    /// Clients whose share this node holds.
    pub received: usize,
    /// "none", "computing", "ready" or "failed".
    pub sum: String,
}

/// The aggregator's notice that a round is aborted (`POST /rounds/{id}/abort`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbortRequest {
    /// Why (recorded by the node, shown in its errors).
    pub reason: String,
}

/// What the aggregator publishes for a released round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublishedRelease {
    /// Hex round id.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// The decoded sum (value units).
    pub sum: Vec<f64>,
    /// The same, exactly, in grid units.
    pub sum_units: Vec<i64>,
    /// Fixed-point fractional bits.
    pub frac_bits: u32,
    /// The agreed client set.
    pub clients: Vec<u64>,
    /// σ of the noise in `sum` (0 without noise).
    pub noise_sigma_released: f64,
    /// Privacy spent by the aggregator's accountant after this round.
    pub spent_epsilon: f64,
    /// δ part of the same.
    pub spent_delta: f64,
    /// "NON-PRIVATE: exact sum, no noise" for a round without noise; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<String>,
    /// In a verified round (`validity` in its spec): the clients every node held whose
    /// contributions failed the nodes' check, left out like dropouts; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<Vec<u64>>,
    /// In a verified round: δ_t, the probability bound on an honest noise value reaching its
    /// slice bound; the round's δ grows by (1 + e^ε)·δ_t (`verified_shares::bound::total_delta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_delta: Option<f64>,
}

/// The node list the analyst builds a round from (`GET /nodes`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NodeList {
    /// Base URLs, in node order (where clients upload).
    pub nodes: Vec<String>,
    /// Hex X25519 public keys, in node order (what the round's `node_keys` must list).
    pub node_keys: Vec<String>,
}

/// The core's [`Release`] of a round the aggregator published, checked against the round's
/// configuration.
pub fn release_of(
    published: &PublishedRelease,
    config: &fixedpoint_shares::RoundConfig,
) -> Result<Release> {
    let n = config.n_clients();
    if published.sum_units.len() != config.dim()
        || published.frac_bits != config.codec().frac_bits()
    {
        return Err(Error::Http(
            "the aggregator's release does not match the round".into(),
        ));
    }
    let ids: Vec<ClientId> = published.clients.iter().map(|&c| ClientId(c)).collect();
    let clients = ClientSet::from_ids(n, &ids)?;
    Ok(Release {
        round: config.round(),
        sum: published.sum.clone(),
        sum_units: published.sum_units.clone(),
        n_included: clients.len(),
        clients,
        n_clients: n,
        max_dropped: config.max_dropped(),
        frac_bits: published.frac_bits,
        noise: config.noise(),
        noise_sigma_released: published.noise_sigma_released,
    })
}
