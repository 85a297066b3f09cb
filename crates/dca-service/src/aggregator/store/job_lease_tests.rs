//! The rules of a job's driver lease, checked on both backends (each backend's tests call
//! these with its own store).

use std::sync::Barrier;

use super::{AggregatorStore, JobLeaseTaken, JobWrite, job_sha256};

fn new_job(s: &AggregatorStore, id: &str) {
    assert!(
        s.insert_job(id, b"{}", b"answering", 0.1, ("", 0), |_| Ok(()))
            .unwrap()
    );
}

/// One holder at a time until its lease expires; a holder whose lease was taken over can
/// neither renew it nor write or settle the job; an ended job is taken by nobody.
pub(super) fn one_holder_until_it_expires(s: &AggregatorStore) {
    new_job(s, "j1");
    assert_eq!(s.job_lease("j1").unwrap(), Some((String::new(), 0, false)));
    assert_eq!(
        s.take_job_lease("j1", "A", 1_000, 2_000).unwrap(),
        JobLeaseTaken::Taken
    );
    assert_eq!(
        s.take_job_lease("j1", "B", 1_999, 2_999).unwrap(),
        JobLeaseTaken::HeldBy("A".into(), 2_000)
    );
    assert!(!s.renew_job_lease("j1", "B", 5_000).unwrap());
    assert_eq!(
        s.set_job_status("j1", None, b"by B", Some(("B", 1_999)))
            .unwrap(),
        JobWrite::Refused
    );
    assert_eq!(
        s.set_job_status("j1", None, b"by A", Some(("A", 1_999)))
            .unwrap(),
        JobWrite::Written(())
    );
    assert!(
        s.acquire_job_leases("B", 1_999, 2_999, 10)
            .unwrap()
            .is_empty()
    );
    // A's lease expires unrenewed: B takes it, and A is shut out.
    assert_eq!(
        s.take_job_lease("j1", "B", 2_000, 3_000).unwrap(),
        JobLeaseTaken::Taken
    );
    assert!(!s.renew_job_lease("j1", "A", 4_000).unwrap());
    assert_eq!(
        s.set_job_status("j1", None, b"late A", Some(("A", 2_100)))
            .unwrap(),
        JobWrite::Refused
    );
    assert_eq!(
        s.settle_job("j1", None, Some(("A", 2_100)), |_| Ok(
            b"ended by A".to_vec()
        ))
        .unwrap(),
        JobWrite::Refused
    );
    assert_eq!(s.job("j1").unwrap().unwrap().1, b"by A");
    assert!(s.renew_job_lease("j1", "B", 4_000).unwrap());
    assert_eq!(
        s.settle_job("j1", None, Some(("B", 2_200)), |_| Ok(b"done".to_vec()))
            .unwrap(),
        JobWrite::Written(0.0)
    );
    assert_eq!(s.job("j1").unwrap().unwrap().1, b"done");
    assert_eq!(s.job_lease("j1").unwrap(), Some(("B".into(), 4_000, true)));
    // Ended: nobody takes it, even once the lease expired; its driver writes nothing more.
    assert_eq!(
        s.take_job_lease("j1", "C", 9_000, 10_000).unwrap(),
        JobLeaseTaken::Ended
    );
    assert!(
        s.acquire_job_leases("C", 9_000, 10_000, 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.set_job_status("j1", None, b"after the end", Some(("B", 2_300)))
            .unwrap(),
        JobWrite::Refused
    );
    assert_eq!(
        s.take_job_lease("no-such-job", "C", 9_000, 10_000).unwrap(),
        JobLeaseTaken::Ended
    );
}

/// The acquirer takes the jobs nobody drives (no live lease, not ended), at most `limit`,
/// oldest first; a lease given up is taken at once; only its holder gives a lease up.
pub(super) fn the_acquirer_takes_jobs_nobody_drives(s: &AggregatorStore) {
    for j in ["j1", "j2", "j3"] {
        new_job(s, j);
    }
    assert_eq!(
        s.take_job_lease("j2", "A", 1_000, 5_000).unwrap(),
        JobLeaseTaken::Taken
    );
    assert_eq!(
        s.acquire_job_leases("B", 1_000, 6_000, 1).unwrap(),
        vec!["j1".to_string()]
    );
    assert_eq!(
        s.acquire_job_leases("B", 1_000, 6_000, 10).unwrap(),
        vec!["j3".to_string()]
    );
    assert!(
        s.acquire_job_leases("C", 1_000, 6_000, 10)
            .unwrap()
            .is_empty()
    );
    s.drop_job_lease("j2", "B", true).unwrap();
    assert_eq!(s.job_lease("j2").unwrap(), Some(("A".into(), 5_000, false)));
    s.drop_job_lease("j2", "A", false).unwrap();
    assert_eq!(
        s.acquire_job_leases("C", 1_000, 7_000, 10).unwrap(),
        vec!["j2".to_string()]
    );
    // j1's driver found it over: given up for good.
    s.drop_job_lease("j1", "B", true).unwrap();
    assert_eq!(
        s.acquire_job_leases("D", 99_000, 100_000, 10).unwrap(),
        vec!["j2".to_string(), "j3".to_string()]
    );
}

/// Handles (as processes would) racing for one job's lease: exactly one gets it. Racing
/// acquirers get distinct jobs, every free one taken once.
pub(super) fn racing_handles_get_one_lease_each(open: impl Fn() -> AggregatorStore) {
    let first = open();
    new_job(&first, "j");
    let free: Vec<String> = (0..6).map(|k| format!("k{k}")).collect();
    for k in &free {
        new_job(&first, k);
    }
    // All opened before the race (a SQLite handle gives up the leases in its file on open).
    let handles: Vec<AggregatorStore> = (0..8).map(|_| open()).collect();
    let barrier = Barrier::new(handles.len());
    let outcomes: Vec<JobLeaseTaken> = std::thread::scope(|scope| {
        let racers: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    h.take_job_lease("j", &format!("H{i}"), 1_000, 60_000)
                        .unwrap()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i] == JobLeaseTaken::Taken)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = format!("H{}", winners[0]);
    for o in &outcomes {
        assert!(
            *o == JobLeaseTaken::Taken || *o == JobLeaseTaken::HeldBy(winner.clone(), 60_000),
            "{outcomes:?}"
        );
    }
    let taken: Vec<Vec<String>> = std::thread::scope(|scope| {
        let racers: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    h.acquire_job_leases(&format!("H{i}"), 1_000, 60_000, 2)
                        .unwrap()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut all: Vec<String> = taken.concat();
    all.sort();
    assert_eq!(all, free, "{taken:?}");
}

/// A status write is a compare-and-swap on the job's row: a write made from a version another
/// handle (another process) has replaced since is refused, and nothing is lost.
pub(super) fn a_status_write_from_a_replaced_version_changes_nothing(
    open: impl Fn() -> AggregatorStore,
) {
    let (a, b) = (open(), open());
    new_job(&a, "j1");
    let read = a.job("j1").unwrap().unwrap();
    let version = job_sha256("j1", &read.0, &read.1);
    // B changes the job after A read it.
    assert_eq!(
        b.set_job_status("j1", Some(&version), b"by B", None)
            .unwrap(),
        JobWrite::Written(())
    );
    assert_eq!(
        a.set_job_status("j1", Some(&version), b"by A", None)
            .unwrap(),
        JobWrite::Changed
    );
    assert_eq!(
        a.settle_job("j1", Some(&version), None, |_| Ok(b"ended by A".to_vec()))
            .unwrap(),
        JobWrite::Changed
    );
    assert_eq!(a.job("j1").unwrap().unwrap().1, b"by B");
    let now = job_sha256("j1", &read.0, b"by B");
    assert_eq!(
        a.set_job_status("j1", Some(&now), b"by A", None).unwrap(),
        JobWrite::Written(())
    );
    assert_eq!(b.job("j1").unwrap().unwrap().1, b"by A");
}
