//! Damaged rows on both backends (each backend's tests call this with its own store): every kind of row whose content no longer matches its SHA-256
//! is refused when read, and nothing is decided from it.

use super::{AggregatorStore, RoundPhase, RoundState};
use crate::Error;

fn integrity<T: std::fmt::Debug>(outcome: crate::Result<T>) {
    assert!(matches!(outcome, Err(Error::Integrity(_))), "{outcome:?}");
}

pub(super) fn damaged_rows_are_refused_when_read(s: &AggregatorStore) {
    let damage = |sql: &str| s.damage(sql).unwrap();
    s.insert_round("r1", b"{}").unwrap();
    assert!(
        s.begin_close("r1", b"close", Some(0.25), |_| Ok(()))
            .unwrap()
    );
    assert!(s.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap());
    damage("UPDATE agg_rounds SET detail = '{\"sum\":[9]}' WHERE id = 'r1'");
    integrity(s.round("r1"));
    integrity(s.specs_in(&[RoundPhase::Released]));
    damage("UPDATE agg_charges SET rho = 0.125 WHERE id = 'r1'");
    integrity(s.charges());
    // A charge that cannot be read is no charge the budget can be checked against.
    s.insert_round("r2", b"{}").unwrap();
    integrity(s.begin_close("r2", b"close", Some(0.25), |_| Ok(())));
    assert_eq!(s.round("r2").unwrap().unwrap().1, RoundState::Created);
    damage("UPDATE agg_closes SET body = sha256 WHERE id = 'r1'");
    integrity(s.close_body("r1"));

    damage("DELETE FROM agg_charges");
    assert!(
        s.insert_job("j", b"{}", b"running", 0.5, ("", 0), |_| Ok(()))
            .unwrap()
    );
    s.link_round("r3", "j").unwrap();
    s.record_answer("j", 2, b"yes").unwrap();
    damage("UPDATE agg_jobs SET status = sha256 WHERE id = 'j'");
    integrity(s.job("j"));
    integrity(s.jobs());
    damage("UPDATE agg_answers SET answer = sha256 WHERE job = 'j'");
    integrity(s.answer_of("j", 2));
    integrity(s.answers("j"));
    damage("UPDATE agg_job_rounds SET rho = 0.5 WHERE round = 'r3'");
    integrity(s.job_of_round("r3"));
    // A job round's cost that cannot be read is no cost its reservation can be checked against.
    s.insert_round("r4", b"{}").unwrap();
    s.link_round("r4", "j").unwrap();
    integrity(s.begin_close_job_round("r4", b"close", "j", 0.1));
    assert_eq!(s.round("r4").unwrap().unwrap().1, RoundState::Created);
}
