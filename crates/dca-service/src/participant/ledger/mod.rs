//! A participant's ledger: what it agreed to and what it paid, kept so that deleting or editing
//! the file grants no budget.
//!
//! - **Append-only, self-checking.** `ledger.jsonl` in the state directory holds one entry per
//!   line; each line carries the SHA-256 of the line before it (a hash chain) and its own, and
//!   is fsync'd before the participant acts on it. The first entry names the participant's token
//!   (its SHA-256): a ledger copied from another participant is refused. A line whose hash does
//!   not match, a broken chain, or an entry that does not follow from the ones before (a charge
//!   for a job never answered) makes the whole ledger untrusted. A last line cut short by a
//!   crash (no newline) was never acted on, and is dropped.
//! - **Reconciled with the aggregator.** The aggregator records which jobs each token answered
//!   (`GET /participation`) and which of their rounds were released with its shares. At start
//!   and before answering a job the participant checks its ledger against that record
//!   ([`reconcile`]): every answer the aggregator holds is in the ledger with the job's own ε
//!   and δ (from the spec, whose hash is the job's id), every round released with its shares is
//!   charged, and a job the ledger says ended ended so. A ledger that is missing while the
//!   aggregator records answers, or that disagrees, stops the participant with the cause and
//!   the two ways back: restore the file, or rebuild it from the aggregator's record
//!   ([`rebuild_entries`], `--rebuild-ledger-from-aggregator`), which charges every round of
//!   every job found there that named this participant — released or not.
//! - **Charged at sealing.** A round is charged before its shares are sealed (the conservative
//!   rule: the participant cannot know whether a round it sealed for will be released). A round
//!   that was never released stays charged, and the ledger says it was not released.

mod file;
mod reconcile;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::protocol::job::participation::{ParticipatedJob, ParticipatedRound, Participation};
use crate::protocol::job::{Answer, JobState};

pub use file::{LEDGER_FILE, LEGACY_LEDGER_FILE, LedgerFile, import_legacy};
pub use reconcile::{RecordedJob, RecordedRound, rebuild_entries, rebuilt_ledger, reconcile};

/// The participant's record of what it agreed to and paid, replayed from its entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// By job id.
    pub jobs: BTreeMap<String, LedgerJob>,
}

/// One job in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerJob {
    /// The answer given.
    pub answer: Answer,
    /// The job's ε (committed when accepted).
    pub epsilon: f64,
    /// zCDP ρ the job may spend of this participant's data (from its (ε, δ)).
    pub rho_budget: f64,
    /// Rounds joined, by round id.
    pub rounds: BTreeMap<String, LedgerRound>,
    /// Why this participant stopped taking part, if it did.
    #[serde(default)]
    pub stopped: Option<String>,
    /// The δ the job's noise is planned at: its δ, less a verified job's truncation
    /// ([`crate::protocol::job::JobSpec::noise_budget`]); absent in ledgers written before it
    /// was recorded.
    #[serde(default)]
    pub delta: Option<f64>,
    /// How the job ended, once this participant saw it end.
    #[serde(default)]
    pub ended: Option<JobState>,
}

/// One round in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRound {
    /// Its charge (zCDP ρ), written before its shares were sealed.
    pub rho: f64,
    /// Every node has its share.
    pub uploaded: bool,
}

impl Ledger {
    /// ε committed to accepted jobs.
    ///
    /// A job still under way counts with its whole ε, whatever it has spent so far. A job that
    /// ended (done, aborted, cancelled) counts with what its rounds were charged when their
    /// shares were sealed — released or not: ε of their summed zCDP ρ at the job's δ
    /// (ρ + 2 sqrt(ρ ln(1/δ)), Bun–Steinke 2016 Prop. 1.3), never more than its ε — so a job
    /// aborted before its first round gives its ε back. A ledger written before jobs recorded
    /// their δ counts every job at its whole ε.
    pub fn committed(&self) -> f64 {
        self.jobs
            .values()
            .filter(|j| j.answer.accept)
            .map(LedgerJob::committed)
            .sum()
    }
}

impl LedgerJob {
    /// The ε this job holds of the participant's total (see [`Ledger::committed`]).
    pub fn committed(&self) -> f64 {
        let (Some(_), Some(delta)) = (&self.ended, self.delta) else {
            return self.epsilon;
        };
        let rho = self.rho_charged();
        if rho <= 0.0 {
            return 0.0;
        }
        dp_noise::accountant::zcdp_to_approx(rho, delta)
            .map_or(self.epsilon, |loss| loss.epsilon.min(self.epsilon))
    }

    /// zCDP ρ charged to the job's rounds (at sealing).
    pub fn rho_charged(&self) -> f64 {
        self.rounds.values().map(|r| r.rho).sum()
    }
}

/// One line's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// The first entry: whose ledger this is.
    Open {
        /// Hex SHA-256 of the participant's token.
        token_sha256: String,
    },
    /// The ledger was rebuilt from the aggregator's record (`--rebuild-ledger-from-aggregator`).
    Rebuilt {
        /// Why, as the participant found it.
        reason: String,
    },
    /// An answer, written before it is sent.
    Answer {
        /// Hex job id.
        job: String,
        /// The answer.
        answer: Answer,
        /// The job's ε.
        epsilon: f64,
        /// The job's δ.
        delta: Option<f64>,
        /// zCDP ρ of the job's (ε, δ).
        rho_budget: f64,
    },
    /// A round's charge, written before its shares are sealed.
    Charge {
        /// Hex job id.
        job: String,
        /// Hex round id.
        round: String,
        /// zCDP ρ.
        rho: f64,
    },
    /// Every node has the round's shares.
    Uploaded {
        /// Hex job id.
        job: String,
        /// Hex round id.
        round: String,
    },
    /// The participant left the job.
    Stopped {
        /// Hex job id.
        job: String,
        /// Why.
        reason: String,
    },
    /// The participant saw the job end.
    Ended {
        /// Hex job id.
        job: String,
        /// How it ended.
        state: JobState,
    },
}

impl Entry {
    /// Applies the entry to `ledger`; an entry that does not follow from the ones before is an
    /// error naming it.
    fn apply(&self, ledger: &mut Ledger) -> std::result::Result<(), String> {
        match self {
            Entry::Open { .. } => return Err("a second opening entry".into()),
            Entry::Rebuilt { .. } => {}
            Entry::Answer {
                job,
                answer,
                epsilon,
                delta,
                rho_budget,
            } => {
                if ledger.jobs.contains_key(job) {
                    return Err(format!("a second answer to job {job}"));
                }
                if !(epsilon.is_finite() && *epsilon > 0.0 && rho_budget.is_finite()) {
                    return Err(format!("job {job}: ε = {epsilon}, ρ = {rho_budget}"));
                }
                ledger.jobs.insert(
                    job.clone(),
                    LedgerJob {
                        answer: answer.clone(),
                        epsilon: *epsilon,
                        rho_budget: *rho_budget,
                        rounds: BTreeMap::new(),
                        stopped: None,
                        delta: *delta,
                        ended: None,
                    },
                );
            }
            Entry::Charge { job, round, rho } => {
                let j = job_of(ledger, job)?;
                if !j.answer.accept {
                    return Err(format!("a charge for job {job}, which it refused"));
                }
                if !(rho.is_finite() && *rho >= 0.0) {
                    return Err(format!("round {round}: ρ = {rho}"));
                }
                if j.rounds.contains_key(round) {
                    return Err(format!("a second charge for round {round}"));
                }
                j.rounds.insert(
                    round.clone(),
                    LedgerRound {
                        rho: *rho,
                        uploaded: false,
                    },
                );
            }
            Entry::Uploaded { job, round } => {
                job_of(ledger, job)?
                    .rounds
                    .get_mut(round)
                    .ok_or_else(|| format!("an upload to round {round}, which was never charged"))?
                    .uploaded = true;
            }
            Entry::Stopped { job, reason } => {
                job_of(ledger, job)?.stopped = Some(reason.clone());
            }
            Entry::Ended { job, state } => {
                job_of(ledger, job)?.ended = Some(*state);
            }
        }
        Ok(())
    }
}

fn job_of<'a>(ledger: &'a mut Ledger, job: &str) -> std::result::Result<&'a mut LedgerJob, String> {
    ledger
        .jobs
        .get_mut(job)
        .ok_or_else(|| format!("an entry for job {job}, which the ledger never answered"))
}

/// The entries that replay to `ledger`.
pub(super) fn entries_of(ledger: &Ledger) -> Vec<Entry> {
    let mut out = Vec::new();
    for (id, j) in &ledger.jobs {
        out.push(Entry::Answer {
            job: id.clone(),
            answer: j.answer.clone(),
            epsilon: j.epsilon,
            delta: j.delta,
            rho_budget: j.rho_budget,
        });
        for (round, r) in &j.rounds {
            out.push(Entry::Charge {
                job: id.clone(),
                round: round.clone(),
                rho: r.rho,
            });
            if r.uploaded {
                out.push(Entry::Uploaded {
                    job: id.clone(),
                    round: round.clone(),
                });
            }
        }
        if let Some(reason) = &j.stopped {
            out.push(Entry::Stopped {
                job: id.clone(),
                reason: reason.clone(),
            });
        }
        if let Some(state) = j.ended {
            out.push(Entry::Ended {
                job: id.clone(),
                state,
            });
        }
    }
    out
}

/// `x` for people: at most 4 decimals, trailing zeros dropped (9.49999999624691 → "9.5").
pub fn people(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x != 0.0 && x.abs() < 1e-3 {
        return format!("{x:.2e}");
    }
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}
