//! A round's life in the store, on both backends (each backend's tests call these with its own
//! store).

use super::{AggregatorStore, LeaseTaken, RoundPhase, RoundState};

/// created → closing → released, each once: a second insert, close, abort or release changes
/// nothing; the close request and the charge are the first close's.
pub(super) fn a_round_is_closed_charged_and_released_once(s: &AggregatorStore) {
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
    assert_eq!(
        s.count_by_state().unwrap(),
        [
            (RoundPhase::Created, 0),
            (RoundPhase::Closing, 0),
            (RoundPhase::Aborting, 0),
            (RoundPhase::Aborted, 0),
            (RoundPhase::Released, 1),
            (RoundPhase::Failed, 0)
        ]
    );
}

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
