//! Rounds on the aggregator.

mod release_lease;
