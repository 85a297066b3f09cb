use std::path::Path;

use super::*;

fn answer(accept: bool) -> Answer {
    Answer {
        accept,
        rows: usize::from(accept),
        reason: if accept { String::new() } else { "no".into() },
    }
}

fn accepted(job: &str) -> Entry {
    Entry::Answer {
        job: job.into(),
        answer: answer(true),
        epsilon: 1.0,
        delta: Some(1e-5),
        rho_budget: 0.02,
    }
}

fn charged(job: &str, round: &str, rho: f64) -> Entry {
    Entry::Charge {
        job: job.into(),
        round: round.into(),
        rho,
    }
}

/// A ledger of one job, one round charged and uploaded, the job ended.
fn written(dir: &Path) -> LedgerFile {
    let mut f = LedgerFile::create(dir, "me").unwrap();
    f.append(accepted("j")).unwrap();
    f.append(charged("j", "r", 0.01)).unwrap();
    f.append(Entry::Uploaded {
        job: "j".into(),
        round: "r".into(),
    })
    .unwrap();
    f.append(Entry::Ended {
        job: "j".into(),
        state: JobState::Done,
    })
    .unwrap();
    f
}

fn error_of(dir: &Path) -> String {
    LedgerFile::read(dir).unwrap_err().to_string()
}

#[test]
fn the_chain_replays_what_was_appended_and_refuses_edits_removals_and_strangers() {
    let dir = crate::scratch_dir("ledger-chain");
    let f = written(&dir);
    let read = LedgerFile::read(&dir).unwrap().unwrap();
    assert_eq!(read.ledger, f.ledger);
    assert_eq!((read.entries, read.head.clone()), (5, f.head.clone()));
    assert!(read.ledger.jobs["j"].rounds["r"].uploaded);
    read.check_owner("me").unwrap();
    let other = read.check_owner("someone-else").unwrap_err().to_string();
    assert!(other.contains("another token"), "{other}");
    // An entry that does not follow from the ones before is refused, nothing written.
    let mut f = read;
    let e = f.append(charged("k", "r", 0.1)).unwrap_err().to_string();
    assert!(e.contains("never answered"), "{e}");
    let e = f.append(charged("j", "r", 0.1)).unwrap_err().to_string();
    assert!(e.contains("second charge"), "{e}");
    assert_eq!(LedgerFile::read(&dir).unwrap().unwrap().entries, 5);

    let path = LedgerFile::path_in(&dir);
    let text = std::fs::read_to_string(&path).unwrap();
    // An edited value.
    std::fs::write(&path, text.replace("\"epsilon\":1.0", "\"epsilon\":0.0")).unwrap();
    assert!(
        error_of(&dir).contains("line 2's content does not match its hash (the entry was edited)")
    );
    // A line removed (the charge).
    let lines: Vec<&str> = text.lines().collect();
    let without: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&path, without).unwrap();
    assert!(
        error_of(&dir).contains("hash chain is broken"),
        "{}",
        error_of(&dir)
    );
    // Emptied, or not a ledger at all.
    std::fs::write(&path, "").unwrap();
    assert!(error_of(&dir).contains("no opening entry"));
    std::fs::write(&path, "{\"jobs\":{}}\n").unwrap();
    assert!(error_of(&dir).contains("line 1 is not a ledger entry"));
    // A last line cut short by a crash is dropped (and cut off the file), the rest kept.
    std::fs::write(&path, format!("{text}{{\"seq\":5,\"prev")).unwrap();
    let mut read = LedgerFile::read(&dir).unwrap().unwrap();
    assert_eq!(read.entries, 5);
    // Reading changes nothing; the next append cuts the torn line off first.
    assert!(std::fs::read_to_string(&path).unwrap().ends_with("\"prev"));
    read.append(accepted("k")).unwrap();
    let after = LedgerFile::read(&dir).unwrap().unwrap();
    assert_eq!(after.entries, 6);
    assert!(after.ledger.jobs.contains_key("k"));
    assert!(std::fs::read_to_string(&path).unwrap().starts_with(&text));
    // A line appended by someone else meanwhile is not cut off: the file changed in use.
    let mut stale = LedgerFile::read(&dir).unwrap().unwrap();
    let mut other = LedgerFile::read(&dir).unwrap().unwrap();
    other.append(accepted("l")).unwrap();
    let e = stale.append(accepted("m")).unwrap_err().to_string();
    assert!(e.contains("changed on disk"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn recorded(state: JobState, rounds: Vec<RecordedRound>) -> RecordedJob {
    RecordedJob {
        id: "j".into(),
        state,
        answer: answer(true),
        epsilon: 1.0,
        delta: 1e-5,
        rho_budget: 0.02,
        rounds,
    }
}

fn round(id: &str, released: bool) -> RecordedRound {
    RecordedRound {
        id: id.into(),
        rho: 0.01,
        released,
        in_release: released,
    }
}

/// What the aggregator's record catches that the chain cannot (a ledger rewritten with
/// its hashes recomputed, or deleted): a missing answer, another ε, a released round not
/// charged, another end.
#[test]
fn reconciling_names_what_the_ledger_lacks_or_changed() {
    let dir = crate::scratch_dir("ledger-reconcile");
    let ledger = written(&dir).ledger;
    let _ = std::fs::remove_dir_all(&dir);
    let record = vec![recorded(JobState::Done, vec![round("r", true)])];
    reconcile(&ledger, &record).unwrap();
    // Rounds it sealed for that were never released are fine either way.
    reconcile(
        &ledger,
        &[recorded(JobState::Done, vec![round("r", false)])],
    )
    .unwrap();

    let e = reconcile(&Ledger::default(), &record).unwrap_err();
    assert!(e.contains("does not hold"), "{e}");
    let mut cheaper = ledger.clone();
    cheaper.jobs.get_mut("j").unwrap().epsilon = 0.0;
    let e = reconcile(&cheaper, &record).unwrap_err();
    assert!(e.contains("ε = 0") && e.contains("says ε = 1"), "{e}");
    let mut uncharged = ledger.clone();
    uncharged.jobs.get_mut("j").unwrap().rounds.clear();
    let e = reconcile(&uncharged, &record).unwrap_err();
    assert!(e.contains("charges nothing"), "{e}");
    let e = reconcile(
        &ledger,
        &[recorded(JobState::Cancelled, vec![round("r", true)])],
    )
    .unwrap_err();
    assert!(e.contains("ended done"), "{e}");
    let mut refused = record.clone();
    refused[0].answer = answer(false);
    let e = reconcile(&ledger, &refused).unwrap_err();
    assert!(e.contains("aggregator records that it refused"), "{e}");
}

/// A rebuilt ledger charges every round that named the participant, released or not, keeps
/// a job still running at its whole ε, and agrees with the record it came from.
#[test]
fn a_rebuilt_ledger_charges_every_round_that_named_the_participant() {
    let mut running = recorded(JobState::Running, vec![round("a", true), round("b", false)]);
    running.id = "live".into();
    let record = vec![
        recorded(JobState::Cancelled, vec![round("r", false)]),
        running,
    ];
    let ledger = rebuilt_ledger(&record);
    reconcile(&ledger, &record).unwrap();
    assert_eq!(ledger.jobs["j"].rho_charged(), 0.01);
    assert!(ledger.jobs["j"].committed() > 0.0);
    assert_eq!(ledger.jobs["live"].rho_charged(), 0.02);
    assert_eq!(ledger.jobs["live"].committed(), 1.0);
    assert!(ledger.jobs["live"].stopped.is_some());
    let dir = crate::scratch_dir("ledger-rebuild");
    let mut f = LedgerFile::create(&dir, "me").unwrap();
    for e in rebuild_entries(&record, "it was missing") {
        f.append(e).unwrap();
    }
    let read = LedgerFile::read(&dir).unwrap().unwrap();
    assert!(read.rebuilt);
    assert_eq!(read.ledger, ledger);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_ledger_of_an_earlier_version_is_imported_once() {
    let dir = crate::scratch_dir("ledger-legacy");
    let ledger = written(&crate::scratch_dir("ledger-legacy-src")).ledger;
    std::fs::write(
        dir.join(LEGACY_LEDGER_FILE),
        serde_json::to_vec_pretty(&ledger).unwrap(),
    )
    .unwrap();
    let f = import_legacy(&dir, "me").unwrap().unwrap();
    assert_eq!(f.ledger, ledger);
    assert!(!dir.join(LEGACY_LEDGER_FILE).exists());
    assert!(import_legacy(&dir, "me").unwrap().is_none());
    assert_eq!(LedgerFile::read(&dir).unwrap().unwrap().ledger, ledger);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn numbers_are_rounded_for_people() {
    assert_eq!(people(9.49999999624691), "9.5");
    assert_eq!(people(1.5), "1.5");
    assert_eq!(people(2.0), "2");
    assert_eq!(people(0.0229), "0.0229");
    assert_eq!(people(0.000123), "1.23e-4");
    assert_eq!(people(-0.00001), "-1.00e-5");
    assert_eq!(people(0.0), "0");
}
