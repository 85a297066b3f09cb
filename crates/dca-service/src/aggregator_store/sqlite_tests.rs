//! The SQLite store's tests: the contract tests every backend passes (`*_tests.rs`), run on a
//! file, and what is SQLite's own (a restart gives up the earlier run's leases).

use std::path::Path;

use super::{AggregatorStore, AggregatorStoreLocation, JobLeaseTaken, LeaseTaken, RoundState};

fn open(path: &Path) -> AggregatorStore {
    AggregatorStore::open(&AggregatorStoreLocation::Sqlite(path.to_path_buf())).unwrap()
}

fn store(name: &str) -> AggregatorStore {
    open(&crate::scratch_dir(name).join("agg.sqlite"))
}

#[test]
fn a_round_is_closed_charged_and_released_once() {
    let s = store("aggstore-once");
    s.insert_round("r1", b"{}").unwrap();
    s.insert_round("r1", b"{}").unwrap();
    assert!(
        s.begin_close("r1", b"close", Some(0.25), |_| Ok(()))
            .unwrap()
    );
    assert!(
        !s.begin_close("r1", b"other", Some(0.25), |_| Ok(()))
            .unwrap()
    );
    assert!(!s.begin_abort("r1", "late").unwrap());
    assert_eq!(s.close_body("r1").unwrap().as_deref(), Some(&b"close"[..]));
    assert_eq!(s.charges().unwrap(), vec![0.25]);
    assert!(s.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap());
    assert!(!s.mark_released("r1", "h", 0, "{\"sum\":[2]}").unwrap());
    assert_eq!(
        s.round("r1").unwrap().unwrap().1,
        RoundState::Released("{\"sum\":[1]}".into())
    );
}

/// The release lease as on PostgreSQL (one path above the store): one holder at a time
/// until it expires, and the release recorded only by the holder or under no live lease.
#[test]
fn a_release_lease_has_one_holder_until_it_expires() {
    let s = store("aggstore-lease");
    s.insert_round("r1", b"{}").unwrap();
    assert_eq!(
        s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::NotClosing
    );
    assert!(s.begin_close("r1", b"close", None, |_| Ok(())).unwrap());
    assert_eq!(
        s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::Taken
    );
    assert_eq!(
        s.take_release_lease("r1", "B", 1_999, 2_999).unwrap(),
        LeaseTaken::HeldBy("A".into(), 2_000)
    );
    assert!(!s.mark_released("r1", "B", 1_999, "{\"sum\":[2]}").unwrap());
    assert_eq!(
        s.take_release_lease("r1", "B", 2_000, 3_000).unwrap(),
        LeaseTaken::Taken
    );
    assert!(!s.renew_release_lease("r1", "A", 4_000).unwrap());
    assert!(!s.mark_released("r1", "A", 2_100, "{\"sum\":[1]}").unwrap());
    assert!(s.renew_release_lease("r1", "B", 4_000).unwrap());
    assert_eq!(s.release_lease("r1").unwrap(), Some(("B".into(), 4_000)));
    assert!(s.mark_released("r1", "B", 2_200, "{\"sum\":[2]}").unwrap());
    assert_eq!(
        s.round("r1").unwrap().unwrap().1,
        RoundState::Released("{\"sum\":[2]}".into())
    );
}

/// Handles on one file, as processes sharing it would be.
#[test]
fn racing_handles_get_one_release_lease() {
    let path = crate::scratch_dir("aggstore-lease-race").join("agg.sqlite");
    super::release_lease_tests::racing_handles_get_one_release_lease(|| open(&path));
}

/// An earlier run's lease does not hold the restarted aggregator back.
#[test]
fn an_earlier_runs_release_lease_is_given_up_on_open() {
    let dir = crate::scratch_dir("aggstore-lease-restart");
    let first = open(&dir.join("agg.sqlite"));
    first.insert_round("r1", b"{}").unwrap();
    assert!(first.begin_close("r1", b"close", None, |_| Ok(())).unwrap());
    assert_eq!(
        first.take_release_lease("r1", "A", 1_000, 31_000).unwrap(),
        LeaseTaken::Taken
    );
    drop(first);
    let again = open(&dir.join("agg.sqlite"));
    assert_eq!(
        again.take_release_lease("r1", "B", 1_001, 31_001).unwrap(),
        LeaseTaken::Taken
    );
}

#[test]
fn a_failed_round_is_terminal() {
    super::failed_round_tests::a_failed_round_is_terminal(&store("aggstore-failed"));
}

#[test]
fn a_job_lease_has_one_holder_until_it_expires() {
    super::job_lease_tests::one_holder_until_it_expires(&store("aggstore-joblease"));
}

#[test]
fn the_job_acquirer_takes_jobs_nobody_drives() {
    super::job_lease_tests::the_acquirer_takes_jobs_nobody_drives(&store("aggstore-jobacquire"));
}

/// Handles on one file, as processes sharing it would be (the file is one process's in
/// use, but nothing is left to chance if two open it).
#[test]
fn racing_handles_get_one_job_lease_each() {
    let path = crate::scratch_dir("aggstore-joblease-race").join("agg.sqlite");
    super::job_lease_tests::racing_handles_get_one_lease_each(|| open(&path));
}

#[test]
fn a_status_write_from_a_replaced_version_changes_nothing() {
    let path = crate::scratch_dir("aggstore-job-cas").join("agg.sqlite");
    super::job_lease_tests::a_status_write_from_a_replaced_version_changes_nothing(|| open(&path));
}

/// An earlier run's job lease does not hold the restarted aggregator back; an ended job's
/// lease stays ended.
#[test]
fn an_earlier_runs_job_lease_is_given_up_on_open() {
    let dir = crate::scratch_dir("aggstore-joblease-restart");
    let first = open(&dir.join("agg.sqlite"));
    for j in ["live", "over"] {
        assert!(
            first
                .insert_job(j, b"{}", b"running", 0.1, ("", 0), |_| Ok(()))
                .unwrap()
        );
        assert_eq!(
            first.take_job_lease(j, "A", 1_000, 31_000).unwrap(),
            JobLeaseTaken::Taken
        );
    }
    first.drop_job_lease("over", "A", true).unwrap();
    drop(first);
    let again = open(&dir.join("agg.sqlite"));
    assert_eq!(
        again.acquire_job_leases("B", 1_001, 31_001, 10).unwrap(),
        vec!["live".to_string()]
    );
}

#[test]
fn damaged_rows_are_refused_when_read() {
    super::damaged_rows_tests::damaged_rows_are_refused_when_read(&store("aggstore-damage"), "");
}
