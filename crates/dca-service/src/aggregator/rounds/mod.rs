//! Rounds on the aggregator: one driven from creation to release, and the rounds as recorded.

pub(super) mod recorded;
mod run;
mod verified;
