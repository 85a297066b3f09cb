//! What became of a job the participant followed, for the person who started it.

pub use crate::participant::ledger::LedgerJob;
use crate::participant::ledger::{RecordedJob, RecordedRound, people};
use crate::protocol::job::{JobState, JobStatus};

/// What became of the job a participant was told to follow.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The job's final state (done, aborted, failed or cancelled).
    pub state: JobState,
    /// Its reason, if not done.
    pub reason: Option<String>,
    /// Whether this participant took part: it accepted, never left, and its shares are in
    /// every released round that named it — and at least one such round was released.
    pub took_part: bool,
    /// Rounds released with its shares.
    pub released_rounds: usize,
    /// Rounds it was charged for (at sealing) that were never released, and their ρ: they
    /// stay charged (the conservative rule).
    pub unreleased_rounds: usize,
    /// See `unreleased_rounds`.
    pub unreleased_rho: f64,
    /// zCDP ρ its ledger charges the job in all.
    pub rho_charged: f64,
}

impl Outcome {
    /// One line for people: how the job ended and what this participant's part in it was,
    /// releases and charges told apart.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "job {}{}; this participant {}",
            self.state,
            self.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
            if self.took_part {
                format!(
                    "took part (its shares are in {} released round{})",
                    self.released_rounds,
                    if self.released_rounds == 1 { "" } else { "s" }
                )
            } else if self.released_rounds == 0 && self.rho_charged > 0.0 {
                "did not take part: no round with its shares was released".to_string()
            } else {
                "did not take part".to_string()
            }
        );
        if self.unreleased_rounds > 0 {
            out.push_str(&format!(
                "; its ledger keeps ρ = {} charged for {} round{} it sealed shares for that \
                 {} never released (charged at sealing: the conservative rule)",
                people(self.unreleased_rho),
                self.unreleased_rounds,
                if self.unreleased_rounds == 1 { "" } else { "s" },
                if self.unreleased_rounds == 1 {
                    "was"
                } else {
                    "were"
                }
            ));
        }
        out
    }
}

/// A job's outcome for the participant whose ledger holds `entry` (if any), from the
/// aggregator's record of the job (`record`, if it holds the participant's answer).
pub fn outcome_of(
    status: &JobStatus,
    entry: Option<&LedgerJob>,
    record: Option<&RecordedJob>,
) -> Outcome {
    let rounds: &[RecordedRound] = record.map_or(&[], |r| &r.rounds);
    let released_rounds = rounds.iter().filter(|r| r.in_release).count();
    let (mut unreleased_rounds, mut unreleased_rho, mut rho_charged) = (0, 0.0, 0.0);
    if let Some(j) = entry {
        rho_charged = j.rho_charged();
        for (id, charged) in &j.rounds {
            if !rounds.iter().any(|r| r.id == *id && r.released) {
                unreleased_rounds += 1;
                unreleased_rho += charged.rho;
            }
        }
    }
    let took_part = entry.is_some_and(|j| j.answer.accept && j.stopped.is_none())
        && released_rounds > 0
        && rounds.iter().filter(|r| r.released).all(|r| r.in_release);
    Outcome {
        state: status.state,
        reason: status.reason.clone(),
        took_part,
        released_rounds,
        unreleased_rounds,
        unreleased_rho,
        rho_charged,
    }
}
