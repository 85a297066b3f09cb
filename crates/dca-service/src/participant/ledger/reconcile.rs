//! The ledger checked against the aggregator's record of the jobs the token answered, and
//! rebuilt from that record.

use crate::protocol::job::{Answer, JobState};

use super::{Entry, Ledger, people};

/// The aggregator's record of one job, checked by the participant: ε and δ from the job's spec
/// (its hash is the job's id), each round's ρ from its config (its hash is the round's id).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedJob {
    /// Hex job id.
    pub id: String,
    /// The job's state.
    pub state: JobState,
    /// The answer the aggregator recorded.
    pub answer: Answer,
    /// The job's ε.
    pub epsilon: f64,
    /// The δ the job's noise is planned at (its δ, less a verified job's truncation).
    pub delta: f64,
    /// zCDP ρ of (ε, that δ).
    pub rho_budget: f64,
    /// The rounds that named this participant: (round id, ρ, released, in the release).
    pub rounds: Vec<RecordedRound>,
}

/// A round of a [`RecordedJob`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRound {
    /// Hex round id.
    pub id: String,
    /// Its zCDP ρ (from its config).
    pub rho: f64,
    /// It was released.
    pub released: bool,
    /// With this participant's shares.
    pub in_release: bool,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// Describes an answer for people.
fn answer_text(a: &Answer) -> String {
    if a.accept {
        format!("accepted with {} rows", a.rows)
    } else {
        "refused".into()
    }
}

/// Checks `ledger` against the aggregator's `record`; the first disagreement, named.
pub fn reconcile(ledger: &Ledger, record: &[RecordedJob]) -> std::result::Result<(), String> {
    for r in record {
        let Some(j) = ledger.jobs.get(&r.id) else {
            return Err(format!(
                "the aggregator records that this participant's token {} job {} (ε = {}), \
                 which the ledger does not hold",
                answer_text(&r.answer),
                r.id,
                people(r.epsilon)
            ));
        };
        if j.answer.accept != r.answer.accept || (r.answer.accept && j.answer.rows != r.answer.rows)
        {
            return Err(format!(
                "the ledger says this participant {} job {}, the aggregator records that it {}",
                answer_text(&j.answer),
                r.id,
                answer_text(&r.answer)
            ));
        }
        if !r.answer.accept {
            continue;
        }
        if !close(j.epsilon, r.epsilon)
            || !close(j.rho_budget, r.rho_budget)
            || j.delta.is_some_and(|d| !close(d, r.delta))
        {
            return Err(format!(
                "the ledger holds job {} at ε = {}, δ = {:?} (ρ = {}); the job's spec (whose \
                 hash is its id) says ε = {}, δ = {} (ρ = {})",
                r.id,
                people(j.epsilon),
                j.delta,
                people(j.rho_budget),
                people(r.epsilon),
                r.delta,
                people(r.rho_budget)
            ));
        }
        for round in r.rounds.iter().filter(|x| x.in_release) {
            let charged = j.rounds.get(&round.id).map(|x| x.rho);
            if !charged.is_some_and(|c| c >= round.rho * (1.0 - 1e-9)) {
                return Err(format!(
                    "round {} of job {} was released with this participant's shares (ρ = {}), \
                     but the ledger charges {} for it",
                    round.id,
                    r.id,
                    people(round.rho),
                    charged.map_or("nothing".to_string(), |c| format!("ρ = {}", people(c)))
                ));
            }
        }
        if let Some(ended) = &j.ended
            && *ended != r.state
        {
            return Err(format!(
                "the ledger says job {} ended {ended}; the aggregator says it is {}",
                r.id, r.state
            ));
        }
    }
    Ok(())
}

/// The entries of a ledger rebuilt from the aggregator's `record` (after a [`Entry::Rebuilt`]
/// naming `reason`): every answer it holds, and for an accepted job a charge for **every**
/// round that named this participant, released or not (it cannot know which it sealed for:
/// charged at sealing, the conservative rule). A job that ended is marked ended; one still
/// under way is marked stopped (it counts with its whole ε, and this participant sends nothing
/// more to it: it cannot know what it already sent).
pub fn rebuild_entries(record: &[RecordedJob], reason: &str) -> Vec<Entry> {
    let mut out = vec![Entry::Rebuilt {
        reason: reason.to_string(),
    }];
    for r in record {
        out.push(Entry::Answer {
            job: r.id.clone(),
            answer: r.answer.clone(),
            epsilon: r.epsilon,
            delta: Some(r.delta),
            rho_budget: r.rho_budget,
        });
        if r.answer.accept {
            for round in &r.rounds {
                out.push(Entry::Charge {
                    job: r.id.clone(),
                    round: round.id.clone(),
                    rho: round.rho,
                });
                if round.in_release {
                    out.push(Entry::Uploaded {
                        job: r.id.clone(),
                        round: round.id.clone(),
                    });
                }
            }
        }
        if r.state.is_live() {
            out.push(Entry::Stopped {
                job: r.id.clone(),
                reason: "the ledger was rebuilt from the aggregator's record while the job ran: \
                         this participant sends nothing more to it"
                    .into(),
            });
        } else {
            out.push(Entry::Ended {
                job: r.id.clone(),
                state: r.state,
            });
        }
    }
    out
}

/// The ledger the aggregator's `record` rebuilds (what `--rebuild-ledger-from-aggregator`
/// would write).
pub fn rebuilt_ledger(record: &[RecordedJob]) -> Ledger {
    let mut ledger = Ledger::default();
    for e in rebuild_entries(record, "") {
        // The record's entries always follow from each other (one answer per job).
        let _ = e.apply(&mut ledger);
    }
    ledger
}
