//! A round's release lease on both backends (each backend's tests call these with its store,
//! or with a way to open another handle on it, as another process would).

use std::sync::Barrier;

use super::{AggregatorStore, LeaseTaken, RoundState};

/// Every handle tries to take round `r1`'s lease for itself (`H0`, `H1`, …) at `now_ms`,
/// all at once; what each was told.
fn race(handles: &[AggregatorStore], now_ms: u64, until_ms: u64) -> Vec<LeaseTaken> {
    let barrier = Barrier::new(handles.len());
    std::thread::scope(|scope| {
        let racers: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    h.take_release_lease("r1", &format!("H{i}"), now_ms, until_ms)
                        .unwrap()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// The one winner of a race, after checking that every other racer was told it holds the
/// lease until `until_ms`.
fn one_winner(outcomes: &[LeaseTaken], until_ms: u64) -> String {
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i] == LeaseTaken::Taken)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = format!("H{}", winners[0]);
    for (i, outcome) in outcomes.iter().enumerate() {
        if i != winners[0] {
            assert_eq!(
                *outcome,
                LeaseTaken::HeldBy(winner.clone(), until_ms),
                "H{i}"
            );
        }
    }
    winner
}

/// Racers for a closing round's first lease (no lease row yet), then for the same lease once
/// it expired (its row there): each time exactly one holder, and only that holder records
/// the release.
pub(super) fn racing_handles_get_one_release_lease(open: impl Fn() -> AggregatorStore) {
    let first = open();
    first.insert_round("r1", b"{}").unwrap();
    assert!(first.begin_close("r1", b"close", None, |_| Ok(())).unwrap());
    // All opened before the race (a SQLite handle gives up the leases in its file on open).
    let handles: Vec<AggregatorStore> = (0..8).map(|_| open()).collect();
    let earlier = one_winner(&race(&handles, 1_000, 31_000), 31_000);
    assert_eq!(
        first.release_lease("r1").unwrap(),
        Some((earlier.clone(), 31_000))
    );
    let winner = one_winner(&race(&handles, 31_000, 61_000), 61_000);
    assert_eq!(
        first.release_lease("r1").unwrap(),
        Some((winner.clone(), 61_000))
    );
    if earlier != winner {
        assert!(!first.mark_released("r1", &earlier, 31_500, "{}").unwrap());
    }
    assert!(first.mark_released("r1", &winner, 31_500, "{}").unwrap());
}

/// One holder at a time until its lease expires; the release recorded only by the holder or
/// under no live lease; a holder whose lease was taken over can no longer renew it; a round
/// that is not closing has no lease to take.
pub(super) fn one_holder_until_it_expires(s: &AggregatorStore) {
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
