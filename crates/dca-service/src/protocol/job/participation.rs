//! `GET /participation`: what the aggregator recorded of a participant's jobs, which the
//! participant checks its ledger against.

use serde::{Deserialize, Serialize};

use super::{Answer, JobState};

/// `GET /participation`: the jobs whose roster lists the caller's token and that it answered,
/// as the aggregator recorded them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Participation {
    /// Oldest first.
    pub jobs: Vec<ParticipatedJob>,
}

/// One job the token answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParticipatedJob {
    /// Hex job id.
    pub id: String,
    /// The job's state.
    pub state: JobState,
    /// The answer the aggregator recorded.
    pub answer: Answer,
    /// The job's rounds that named the token as a client.
    pub rounds: Vec<ParticipatedRound>,
}

/// A round that named the token as a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParticipatedRound {
    /// Hex round id.
    pub id: String,
    /// The round was released.
    pub released: bool,
    /// The token's shares are in the release (its client is in the agreed set).
    pub in_release: bool,
}
