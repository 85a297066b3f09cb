//! Jobs: a learning task the analyst creates on the aggregator and the aggregator drives,
//! round after round, with the data holders as the DCA clients. The analyst states only public
//! things — the kind, the columns with their public bounds, (ε, δ), T, the roster of
//! participants (hashes of their tokens) — and reads only what is released; each participant
//! reads the job, checks it against its own policy, answers, and computes its contribution to
//! every round from its own rows.
//!
//! A job's id is the SHA-256 of its canonical JSON, as a round's is: a participant that accepts
//! job `id` has accepted exactly these parameters.

pub mod blr_fit;
pub mod kind;
pub mod noise_plan;
pub mod participation;
pub mod regression;
pub mod round_rule;
mod spec;
mod status;
pub mod sum;
pub mod train;
pub mod train_settings;
pub mod view;

pub use kind::JobKind;
pub use spec::{ColumnBounds, JobSpec, MAX_ROSTER, columns_of};
pub use status::{
    Answer, AnswerCounts, JobClippedShare, JobResult, JobRound, JobState, JobStatus, JobView,
};

#[cfg(test)]
mod kind_tests;
#[cfg(test)]
mod rule_tests;
#[cfg(test)]
pub(crate) mod tests;
