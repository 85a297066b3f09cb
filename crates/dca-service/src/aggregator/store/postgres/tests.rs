//! Tests of the PostgreSQL aggregator store against a real server: `DPDIST_TEST_POSTGRES` is
//! the URL of a database whose user may create databases (`scripts/pg-start.sh` makes one).
//! Each test works in a database of its own, dropped at the end. Without the variable the
//! tests say so loudly and pass, except under CI (`CI` set), where they fail.

use super::*;
use crate::aggregator::store::{
    AggregatorStore, AggregatorStoreLocation, LeaseTaken, RoundPhase, RoundState,
};

/// A database made for one test (see [`crate::db::postgres_test_db`]).
pub(crate) type TestDb = crate::db::postgres_test_db::TestDb<AggregatorPgLocation>;

impl TestDb {
    /// Where the aggregator finds the database.
    pub(crate) fn location(&self) -> AggregatorStoreLocation {
        AggregatorStoreLocation::Postgres(self.at.clone())
    }
}

/// A fresh database for the test `name`, or `None` (after saying so) without a server.
pub(crate) fn test_db(name: &str) -> Option<TestDb> {
    crate::db::postgres_test_db::test_db("aggunit", name, AggregatorPgLocation::for_test)
}

fn open(db: &TestDb) -> AggregatorStore {
    AggregatorStore::open(&AggregatorStoreLocation::Postgres(db.at.clone())).unwrap()
}

fn any_budget(_: &crate::aggregator::store::Charges) -> Result<()> {
    Ok(())
}

#[test]
fn a_round_is_closed_charged_and_released_once() {
    let Some(db) = test_db("once") else { return };
    crate::aggregator::store::round_tests::a_round_is_closed_charged_and_released_once(&open(&db));
}

/// A second process's handle sees the round the first created, cannot close or charge it
/// again once the first did, and cannot release it again.
#[test]
fn a_second_handle_cannot_charge_or_release_a_round_again() {
    let Some(db) = test_db("second") else { return };
    let (first, second) = (open(&db), open(&db));
    first.insert_round("r1", b"{\"spec\":1}").unwrap();
    let (spec, state) = second.round("r1").unwrap().unwrap();
    assert_eq!(
        (&spec[..], state),
        (&b"{\"spec\":1}"[..], RoundState::Created)
    );
    assert!(
        first
            .begin_close("r1", b"agreed", Some(0.5), any_budget)
            .unwrap()
    );
    assert!(
        !second
            .begin_close("r1", b"other", Some(0.5), any_budget)
            .unwrap()
    );
    assert_eq!(
        second.close_body("r1").unwrap().as_deref(),
        Some(&b"agreed"[..])
    );
    assert_eq!(second.charges().unwrap(), vec![0.5]);
    assert!(second.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap());
    assert!(!first.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap());
    assert_eq!(first.charges().unwrap(), vec![0.5]);
}

/// Eight handles race to close eight rounds at ρ = 0.25 each against a budget of ρ = 1 as
/// recorded: exactly four are charged, whatever the interleaving. All start together and the
/// budget check dawdles, so that without the budget's lock several checks would read the same
/// charges.
#[test]
fn racing_handles_never_overspend_the_budget() {
    let Some(db) = test_db("race") else { return };
    let setup = open(&db);
    for k in 0..8 {
        setup.insert_round(&format!("r{k}"), b"{}").unwrap();
    }
    let start = std::sync::Barrier::new(8);
    let outcomes: Vec<bool> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..8)
            .map(|k| {
                let (db, start) = (&db, &start);
                scope.spawn(move || {
                    let store = open(db);
                    start.wait();
                    let within_one = |charges: &crate::aggregator::store::Charges| {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        if charges.rho.iter().sum::<f64>() + 0.25 <= 1.0 {
                            Ok(())
                        } else {
                            Err(Error::InvalidSpec("over budget".into()))
                        }
                    };
                    match store.begin_close(&format!("r{k}"), b"agreed", Some(0.25), within_one) {
                        Ok(recorded) => recorded,
                        Err(Error::InvalidSpec(_)) => false,
                        Err(e) => panic!("round r{k}: {e}"),
                    }
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(outcomes.iter().filter(|&&charged| charged).count(), 4);
    assert_eq!(setup.charges().unwrap(), vec![0.25; 4]);
    let counts = setup.count_by_state().unwrap();
    assert!(counts.contains(&(RoundPhase::Closing, 4)), "{counts:?}");
    assert!(counts.contains(&(RoundPhase::Created, 4)), "{counts:?}");
}

/// A job's reservation is checked in the closing transaction against its rounds as recorded:
/// two handles closing two rounds of a job that can pay for one charge one.
#[test]
fn a_job_round_past_its_reservation_is_refused_and_changes_nothing() {
    let Some(db) = test_db("job") else { return };
    let (first, second) = (open(&db), open(&db));
    assert!(
        first
            .insert_job("j", b"spec", b"status", 0.3, ("", 0), any_budget)
            .unwrap()
    );
    assert!(
        !second
            .insert_job("j", b"spec", b"status", 0.3, ("", 0), any_budget)
            .unwrap()
    );
    for round in ["a", "b"] {
        first.link_round(round, "j").unwrap();
        first.insert_round(round, b"{}").unwrap();
    }
    assert_eq!(second.job_of_round("b").unwrap().as_deref(), Some("j"));
    assert!(
        first
            .begin_close_job_round("a", b"agreed", "j", 0.2)
            .unwrap()
    );
    assert!(matches!(
        second.begin_close_job_round("b", b"agreed", "j", 0.2),
        Err(Error::JobBudget { .. })
    ));
    assert_eq!(second.round("b").unwrap().unwrap().1, RoundState::Created);
    assert_eq!(second.close_body("b").unwrap(), None);
    let spent = second
        .settle_job("j", None, None, |spent| Ok(format!("{spent}").into_bytes()))
        .unwrap();
    assert_eq!(spent, crate::aggregator::store::JobWrite::Written(0.2));
    assert_eq!(first.job("j").unwrap().unwrap().1, b"0.2");
    assert_eq!(first.charges().unwrap(), vec![0.2]);
}

#[test]
fn a_reservation_the_budget_cannot_pay_changes_nothing() {
    let Some(db) = test_db("refused") else { return };
    let s = open(&db);
    let refuse =
        |_: &crate::aggregator::store::Charges| Err(Error::InvalidSpec("over budget".into()));
    assert!(
        s.insert_job("j", b"spec", b"status", 0.3, ("", 0), refuse)
            .is_err()
    );
    assert_eq!(s.job("j").unwrap(), None);
    assert_eq!(s.charges().unwrap(), Vec::<f64>::new());
}

#[test]
fn answers_are_given_once() {
    let Some(db) = test_db("answers") else { return };
    let (first, second) = (open(&db), open(&db));
    assert_eq!(first.record_answer("j", 3, b"yes").unwrap(), b"yes");
    assert_eq!(second.record_answer("j", 3, b"no").unwrap(), b"yes");
    assert_eq!(second.record_answer("j", 1, b"no").unwrap(), b"no");
    assert_eq!(
        first.answers("j").unwrap(),
        vec![(1, b"no".to_vec()), (3, b"yes".to_vec())]
    );
}

#[test]
fn damaged_rows_are_refused_when_read() {
    let Some(db) = test_db("damage") else { return };
    crate::aggregator::store::damaged_rows_tests::damaged_rows_are_refused_when_read(&open(&db));
}

#[test]
fn tables_of_a_newer_version_are_refused() {
    let Some(db) = test_db("newer") else { return };
    drop(open(&db));
    let mut c = db.at.0.connect_alone().unwrap();
    c.client()
        .unwrap()
        .batch_execute(
            "INSERT INTO agg_schema_history (version, name, applied_on, checksum)
             VALUES (99, 'later', '2030-01-01T00:00:00Z', '1')",
        )
        .unwrap();
    drop(c);
    let e = AggregatorStore::open(&AggregatorStoreLocation::Postgres(db.at.clone()))
        .err()
        .expect("a newer schema refused");
    assert!(
        matches!(&e, Error::Schema(m) if m.contains("V99__later") && m.contains("newer dpdist")),
        "{e}"
    );
}

/// A closing round `r1` in a fresh store (no charge).
fn closing_round(s: &AggregatorStore) {
    s.insert_round("r1", b"{}").unwrap();
    assert!(s.begin_close("r1", b"close", None, any_budget).unwrap());
}

#[test]
fn racing_handles_get_one_release_lease() {
    let Some(db) = test_db("leaserace") else {
        return;
    };
    crate::aggregator::store::release_lease_tests::racing_handles_get_one_release_lease(|| {
        open(&db)
    });
}

#[test]
fn a_release_lease_has_one_holder_until_it_expires() {
    let Some(db) = test_db("leaseonce") else {
        return;
    };
    crate::aggregator::store::release_lease_tests::one_holder_until_it_expires(&open(&db));
}

/// A live lease is its holder's until it expires (renewals move the expiry); from the expiry
/// on, another handle takes it, and the old holder can no longer renew it.
#[test]
fn an_expired_release_lease_is_taken_by_the_other() {
    let Some(db) = test_db("leaseexpiry") else {
        return;
    };
    let (a, b) = (open(&db), open(&db));
    closing_round(&a);
    assert_eq!(
        a.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::Taken
    );
    assert_eq!(
        b.take_release_lease("r1", "B", 1_999, 2_999).unwrap(),
        LeaseTaken::HeldBy("A".into(), 2_000)
    );
    assert!(a.renew_release_lease("r1", "A", 3_000).unwrap());
    assert_eq!(
        b.take_release_lease("r1", "B", 2_500, 3_500).unwrap(),
        LeaseTaken::HeldBy("A".into(), 3_000)
    );
    // The holder asking again keeps it (its own pass and an analyst's request share it).
    assert_eq!(
        a.take_release_lease("r1", "A", 2_600, 3_600).unwrap(),
        LeaseTaken::Taken
    );
    assert_eq!(
        b.take_release_lease("r1", "B", 3_600, 4_600).unwrap(),
        LeaseTaken::Taken
    );
    assert!(!a.renew_release_lease("r1", "A", 5_000).unwrap());
    assert_eq!(
        b.release_lease("r1").unwrap(),
        Some(("B".to_string(), 4_600))
    );
    // A lease given up expires at once.
    b.drop_release_lease("r1", "B").unwrap();
    assert_eq!(
        a.take_release_lease("r1", "A", 3_700, 4_700).unwrap(),
        LeaseTaken::Taken
    );
}

/// The release is recorded only by the lease's holder, or by anyone once no lease is live; a
/// holder whose lease was taken over records nothing, and the round stays closing for the new
/// holder, who records it once.
#[test]
fn a_holder_whose_release_lease_was_taken_cannot_mark_released() {
    let Some(db) = test_db("leaserelease") else {
        return;
    };
    let (a, b) = (open(&db), open(&db));
    closing_round(&a);
    assert_eq!(
        a.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::Taken
    );
    assert!(!b.mark_released("r1", "B", 1_500, "{\"sum\":[2]}").unwrap());
    assert_eq!(
        b.take_release_lease("r1", "B", 2_000, 3_000).unwrap(),
        LeaseTaken::Taken
    );
    assert!(!a.mark_released("r1", "A", 2_100, "{\"sum\":[1]}").unwrap());
    assert_eq!(a.round("r1").unwrap().unwrap().1, RoundState::Closing);
    assert!(b.mark_released("r1", "B", 2_200, "{\"sum\":[2]}").unwrap());
    assert!(!b.mark_released("r1", "B", 2_300, "{\"sum\":[3]}").unwrap());
    assert_eq!(
        a.round("r1").unwrap().unwrap().1,
        RoundState::Released("{\"sum\":[2]}".into())
    );
    // Nothing left to drive: a released round's lease is nobody's to take.
    assert_eq!(
        a.take_release_lease("r1", "A", 9_000, 10_000).unwrap(),
        LeaseTaken::NotClosing
    );
}

/// Only a closing round has a release lease: not one still collecting, nor an aborted one.
#[test]
fn only_a_closing_round_has_a_release_lease() {
    let Some(db) = test_db("leasestate") else {
        return;
    };
    let s = open(&db);
    s.insert_round("r1", b"{}").unwrap();
    assert_eq!(
        s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::NotClosing
    );
    assert!(s.begin_abort("r1", "test").unwrap());
    assert_eq!(
        s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::NotClosing
    );
    assert_eq!(
        s.take_release_lease("nope", "A", 1_000, 2_000).unwrap(),
        LeaseTaken::NotClosing
    );
    assert_eq!(s.release_lease("r1").unwrap(), None);
}

/// The store's one connection, cut by the server between any two calls, is opened again by
/// the next: every call is a transaction, cut before its commit and run again, so none fails;
/// the round is still closed, charged and released once.
#[test]
fn the_store_connects_again_after_its_connection_is_cut() {
    let Some(db) = test_db("reconnect") else {
        return;
    };
    let s = open(&db);
    s.insert_round("r1", b"{}").unwrap();
    assert_eq!(db.cut_connections(), 1);
    assert_eq!(s.round("r1").unwrap().unwrap().1, RoundState::Created);
    assert_eq!(db.cut_connections(), 1);
    assert!(
        s.begin_close("r1", b"close", Some(0.5), any_budget)
            .unwrap()
    );
    assert_eq!(db.cut_connections(), 1);
    assert!(
        !s.begin_close("r1", b"close", Some(0.5), any_budget)
            .unwrap()
    );
    assert_eq!(db.cut_connections(), 1);
    assert_eq!(
        s.take_release_lease("r1", "h", 1_000, 5_000).unwrap(),
        LeaseTaken::Taken
    );
    assert_eq!(db.cut_connections(), 1);
    assert!(s.mark_released("r1", "h", 2_000, "{\"sum\":[1]}").unwrap());
    assert_eq!(db.cut_connections(), 1);
    assert!(!s.mark_released("r1", "h", 2_000, "{\"sum\":[2]}").unwrap());
    assert_eq!(s.charges().unwrap(), vec![0.5]);
    assert_eq!(
        s.round("r1").unwrap().unwrap().1,
        RoundState::Released("{\"sum\":[1]}".into())
    );
}

#[test]
fn a_job_lease_has_one_holder_until_it_expires() {
    let Some(db) = test_db("joblease") else {
        return;
    };
    crate::aggregator::store::job_lease_tests::one_holder_until_it_expires(&open(&db));
}

#[test]
fn the_job_acquirer_takes_jobs_nobody_drives() {
    let Some(db) = test_db("jobacquire") else {
        return;
    };
    crate::aggregator::store::job_lease_tests::the_acquirer_takes_jobs_nobody_drives(&open(&db));
}

#[test]
fn racing_handles_get_one_job_lease_each() {
    let Some(db) = test_db("joblease_race") else {
        return;
    };
    crate::aggregator::store::job_lease_tests::racing_handles_get_one_lease_each(|| open(&db));
}

#[test]
fn a_status_write_from_a_replaced_version_changes_nothing() {
    let Some(db) = test_db("job_cas") else {
        return;
    };
    crate::aggregator::store::job_lease_tests::a_status_write_from_a_replaced_version_changes_nothing(
        || open(&db),
    );
}

#[test]
fn a_failed_round_is_terminal() {
    let Some(db) = test_db("failed_round") else {
        return;
    };
    crate::aggregator::store::round_tests::a_failed_round_is_terminal(&open(&db));
}
