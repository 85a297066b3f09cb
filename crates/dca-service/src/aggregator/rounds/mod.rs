//! Rounds on the aggregator: their life from creation to release, and the lease that lets one
//! aggregator release a round at a time.

pub(super) mod lifecycle;
mod release;
mod release_lease;
