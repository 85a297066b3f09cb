//! A round whose release became impossible, on both backends (each backend's tests call this
//! with its own store).

use super::{AggregatorStore, LeaseTaken, RoundPhase, RoundState};

/// closing → failed with the cause, by the holder of the release lease (or under no live
/// lease) only; a failed round is terminal: never released, aborted or leased again, and its
/// charge stays.
pub(super) fn a_failed_round_is_terminal(s: &AggregatorStore) {
    s.insert_round("r1", b"{}").unwrap();
    assert!(!s.mark_failed("r1", "A", 1_000, "not closing yet").unwrap());
    assert!(
        s.begin_close("r1", b"close", Some(0.25), |_| Ok(()))
            .unwrap()
    );
    assert_eq!(
        s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::Taken
    );
    assert!(!s.mark_failed("r1", "B", 1_500, "not B's").unwrap());
    assert!(s.mark_failed("r1", "A", 1_500, "node 0: damaged").unwrap());
    assert_eq!(
        s.round("r1").unwrap().unwrap().1,
        RoundState::Failed("node 0: damaged".into())
    );
    assert!(!s.mark_failed("r1", "A", 1_600, "again").unwrap());
    assert!(!s.mark_released("r1", "A", 1_600, "{\"sum\":[1]}").unwrap());
    assert!(!s.begin_abort("r1", "late").unwrap());
    assert_eq!(
        s.take_release_lease("r1", "B", 9_000, 10_000).unwrap(),
        LeaseTaken::NotClosing
    );
    assert!(s.ids_in(&RoundPhase::LIVE).unwrap().is_empty());
    assert_eq!(s.charges().unwrap(), vec![0.25]);
    let counts = s.count_by_state().unwrap();
    assert!(counts.contains(&(RoundPhase::Failed, 1)), "{counts:?}");
}
