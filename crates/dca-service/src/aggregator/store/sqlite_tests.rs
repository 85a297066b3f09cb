//! The SQLite store's tests: the contract tests every backend passes (`*_tests.rs`), run on a
//! file, and what is SQLite's own (a restart gives up the earlier run's leases).

use std::path::Path;

use super::{AggregatorStore, AggregatorStoreLocation, JobLeaseTaken, LeaseTaken};

fn open(path: &Path) -> AggregatorStore {
    AggregatorStore::open(&AggregatorStoreLocation::Sqlite(path.to_path_buf())).unwrap()
}

fn store(name: &str) -> AggregatorStore {
    open(&crate::scratch_dir(name).join("agg.sqlite"))
}

#[test]
fn a_round_is_closed_charged_and_released_once() {
    super::round_tests::a_round_is_closed_charged_and_released_once(&store("aggstore-once"));
}

#[test]
fn a_release_lease_has_one_holder_until_it_expires() {
    super::release_lease_tests::one_holder_until_it_expires(&store("aggstore-lease"));
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
    super::round_tests::a_failed_round_is_terminal(&store("aggstore-failed"));
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
    super::damaged_rows_tests::damaged_rows_are_refused_when_read(&store("aggstore-damage"));
}
