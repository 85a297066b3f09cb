use super::*;
use crate::hex;
use crate::protocol::job::{Answer, ColumnBounds, JobKind, JobSpec, JobState, JobStatus};

fn spec() -> JobSpec {
    JobSpec {
        kind: JobKind::Blr,
        target: ColumnBounds {
            name: "y".into(),
            lo: 0.0,
            hi: 10.0,
            group: None,
        },
        features: vec![ColumnBounds {
            name: "a".into(),
            lo: -1.0,
            hi: 1.0,
            group: None,
        }],
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..4u8).map(|i| hex::encode(&[i; 32])).collect(),
        max_rows: 10,
        answer_window_ms: 1000,
        upload_window_ms: 1000,
        created_unix_ms: 1,
        public_seed: None,
        clipped_share: None,
        validity: None,
        train: None,
    }
}

fn ledger_job(epsilon: f64, rounds: &[f64], ended: Option<JobState>) -> LedgerJob {
    LedgerJob {
        answer: Answer {
            accept: true,
            rows: 1,
            reason: String::new(),
        },
        epsilon,
        rho_budget: 1.0,
        rounds: rounds
            .iter()
            .enumerate()
            .map(|(i, &rho)| {
                let round = LedgerRound {
                    rho,
                    uploaded: true,
                };
                (format!("r{i}"), round)
            })
            .collect(),
        stopped: None,
        delta: Some(1e-5),
        ended,
    }
}

/// A job under way holds its whole ε; an ended one what its rounds were charged, as ε at its
/// δ; one that ended before any round, nothing. Expected values by hand:
/// ρ = 0.01 + 0.02 = 0.03, δ = 1e-5: ε = 0.03 + 2·sqrt(0.03·ln(1e5)) = 0.03 + 2·sqrt(0.345388)
/// = 0.03 + 2·0.587697 = 1.205394.
#[test]
fn an_ended_job_gives_back_what_it_did_not_spend() {
    let mut ledger = Ledger::default();
    ledger
        .jobs
        .insert("live".into(), ledger_job(2.0, &[0.01], None));
    ledger.jobs.insert(
        "aborted".into(),
        ledger_job(2.0, &[], Some(JobState::Aborted)),
    );
    ledger.jobs.insert(
        "done".into(),
        ledger_job(2.0, &[0.01, 0.02], Some(JobState::Done)),
    );
    let done = ledger.jobs["done"].committed();
    assert!((done - 1.205394).abs() < 1e-6, "{done}");
    assert_eq!(ledger.jobs["aborted"].committed(), 0.0);
    assert_eq!(ledger.jobs["live"].committed(), 2.0);
    assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
    // Never more than the job's own ε, and a ledger without δ counts the whole ε.
    let big = ledger_job(1.0, &[0.5], Some(JobState::Done));
    assert_eq!(big.committed(), 1.0);
    let old = LedgerJob {
        delta: None,
        ..ledger_job(2.0, &[], Some(JobState::Aborted))
    };
    assert_eq!(old.committed(), 2.0);
    // A refused job holds nothing.
    let mut refused = ledger_job(2.0, &[], None);
    refused.answer.accept = false;
    ledger.jobs.insert("refused".into(), refused);
    assert!((ledger.committed() - (2.0 + done)).abs() < 1e-12);
}

/// Issue 41, item 5: the policy is checked before the rows, and a refusal (which the
/// analyst reads) names only what the job asked for, never the other columns of the rows.
#[test]
fn a_refusal_names_only_the_columns_the_job_asked_for() {
    let policy =
        Policy::parse("columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n")
            .unwrap();
    let names = ["a", "diagnosis_code", "y"].map(String::from).to_vec();
    let rows = Rows::memory(names, vec![0.1, 3.0, 1.0]).unwrap();
    assert!(decide(&policy, &rows, &spec(), 0.0).unwrap().answer.accept);
    let mut asks = spec();
    asks.features[0].name = "b".into();
    let reason = decide(&policy, &rows, &asks, 0.0).unwrap().answer.reason;
    assert!(
        reason.contains("policy does not allow") && reason.contains("\"b\""),
        "{reason}"
    );
    assert!(!reason.contains("diagnosis_code"), "{reason}");
    // Allowed by the policy, but not in the rows: still only the asked column is named.
    let allowing = Policy {
        columns: vec!["a".into(), "b".into(), "y".into()],
        ..policy
    };
    let reason = decide(&allowing, &rows, &asks, 0.0).unwrap().answer.reason;
    assert!(
        reason.contains("rows do not have") && reason.contains("\"b\""),
        "{reason}"
    );
    assert!(!reason.contains("diagnosis_code"), "{reason}");
}

/// Issue 41, item 8: the numbers of a refusal are rounded for people.
#[test]
fn a_refusal_rounds_its_numbers_for_people() {
    let policy =
        Policy::parse("columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n")
            .unwrap();
    let why = policy.refusal(&spec(), 1, 8.49999999624691).unwrap();
    assert!(
        why.contains("total to 9.5,") && !why.contains("9.4999"),
        "{why}"
    );
}

/// Issue 41, item 6: a job cancelled before the round this participant sealed for was
/// released: it did not take part, and the round stays charged; a job released with its
/// shares: it took part.
#[test]
fn took_part_means_a_released_round_holds_its_shares() {
    let status = |state: JobState| JobStatus {
        state,
        ..JobStatus::default()
    };
    let entry = ledger_job(1.0, &[0.01], Some(JobState::Cancelled));
    let record = |released: bool| RecordedJob {
        id: "j".into(),
        state: JobState::Cancelled,
        answer: entry.answer.clone(),
        epsilon: 1.0,
        delta: 1e-5,
        rho_budget: 1.0,
        rounds: vec![RecordedRound {
            id: "r0".into(),
            rho: 0.01,
            released,
            in_release: released,
        }],
    };
    let cancelled = outcome_of(
        &status(JobState::Cancelled),
        Some(&entry),
        Some(&record(false)),
    );
    assert!(!cancelled.took_part);
    assert_eq!(
        (cancelled.released_rounds, cancelled.unreleased_rounds),
        (0, 1)
    );
    let said = cancelled.describe();
    assert!(
        said.contains("did not take part") && said.contains("charged at sealing"),
        "{said}"
    );
    let done = outcome_of(&status(JobState::Done), Some(&entry), Some(&record(true)));
    assert!(done.took_part && done.unreleased_rounds == 0, "{done:?}");
    assert!(done.describe().contains("this participant took part"));
}

#[test]
fn the_policy_refuses_columns_epsilon_total_and_rows_beyond_it() {
    let policy =
        Policy::parse("columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1.0\ntotal_epsilon = 2.5\n")
            .unwrap();
    assert_eq!(policy.refusal(&spec(), 10, 0.0), None);
    assert_eq!(policy.refusal(&spec(), 10, 1.5), None);
    let total = policy.refusal(&spec(), 10, 2.0).unwrap();
    assert!(
        total.contains("budget exhausted") && total.contains("3"),
        "{total}"
    );
    let eps = policy
        .refusal(
            &JobSpec {
                epsilon: 1.5,
                ..spec()
            },
            1,
            0.0,
        )
        .unwrap();
    assert!(eps.contains("max_epsilon_per_job"), "{eps}");
    let mut other = spec();
    other.features[0].name = "b".into();
    assert!(policy.refusal(&other, 1, 0.0).unwrap().contains("\"b\""));
    assert!(
        policy
            .refusal(&spec(), 11, 0.0)
            .unwrap()
            .contains("max_rows")
    );
    for bad in [
        "columns = []\nmax_epsilon_per_job = 0\ntotal_epsilon = 1\n",
        "columns = []\nmax_epsilon_per_job = 1\n",
        "columns = []\nmax_epsilon_per_job = 1\ntotal_epsilon = 1\nextra = 2\n",
    ] {
        assert!(Policy::parse(bad).is_err(), "{bad}");
    }
}
