//! Tests of the PostgreSQL node store when the server fails a transaction or cuts its
//! connections: retried transactions, and connections opened again (see [`super::tests`] for
//! how they find a server).

use super::tests::{sha, share, store_with_round, test_db, token_hashes};
use super::*;
use crate::Error;
use crate::db::postgres_tx::MAX_ATTEMPTS;
use crate::node::store::{AttemptReader, StoreLocation, TokenLookup, UploadOutcome};
use fixedpoint_shares::ClientId;
use postgres::Transaction;

/// A transaction failing with a serialization failure or a deadlock is tried again, at most
/// [`MAX_ATTEMPTS`] times in all, and then fails naming the SQLSTATE; any other error is
/// returned at once.
#[test]
fn serialization_failures_and_deadlocks_are_retried_a_bounded_number_of_times() {
    let Some(db) = test_db("retry") else { return };
    let mut c = db.at.connect().unwrap();
    let raise =
        |code: &str| format!("DO $$ BEGIN RAISE EXCEPTION 'test' USING ERRCODE = '{code}'; END $$");
    for code in ["40001", "40P01"] {
        let mut tries = 0;
        let out = in_tx(&mut c, IsolationLevel::ReadCommitted, |tx| {
            tries += 1;
            if tries < 3 {
                tx.batch_execute(&raise(code))?;
            }
            Ok(tries)
        });
        assert_eq!(out.unwrap(), 3, "{code}");
        let mut tries = 0;
        match in_tx(&mut c, IsolationLevel::ReadCommitted, |tx| {
            tries += 1;
            tx.batch_execute(&raise(code))?;
            Ok(())
        }) {
            Err(Error::Postgres(m)) => assert!(m.contains(code), "{m}"),
            other => panic!("{code}: {other:?}"),
        }
        assert_eq!(tries, MAX_ATTEMPTS, "{code}");
    }
    let mut tries = 0;
    match in_tx(&mut c, IsolationLevel::ReadCommitted, |tx| {
        tries += 1;
        tx.batch_execute(&raise("23505"))?;
        Ok(())
    }) {
        Err(Error::Postgres(m)) => assert!(m.contains("23505"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(tries, 1);
}

/// A read cut by a lost connection: it worked (the connection was found closed before the
/// read and opened again) or it failed with an error naming the lost connection.
fn worked_or_named_the_cut<T: std::fmt::Debug + PartialEq>(got: Result<T>, want: T) {
    match got {
        Ok(v) => assert_eq!(v, want),
        Err(e) => {
            let said = e.to_string();
            assert!(
                said.contains("57P01") || said.contains("closed"),
                "the error does not name the lost connection: {said}"
            );
        }
    }
}

/// The store actor's connection and the read connections (token lookups, received set) keep
/// working after the server terminated them: a transaction cut before its commit is run again
/// on a new connection, a read of a few rows (a token lookup, a count) is made again, a
/// streamed read fails once at most, naming the cause, and the next call works.
#[test]
fn the_store_and_its_readers_connect_again_after_their_connections_are_cut() {
    use UploadOutcome::Stored;
    let Some(db) = test_db("reconnect") else {
        return;
    };
    let (id, n) = ([12u8; 32], 40);
    let mut store = store_with_round(&db, &id, 1, n);
    let mut lookup = TokenLookup::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    let mut reader = AttemptReader::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    let hash_of = |c: usize| <[u8; 32]>::try_from(&token_hashes(n)[c * 32..c * 32 + 32]).unwrap();
    let d = sha(b"share");
    assert_eq!(
        store
            .commit_uploads(&[share(&id, 0, &d, b"share")])
            .unwrap(),
        [Stored]
    );
    assert_eq!(lookup.token_hash(&id, 3).unwrap(), Some(hash_of(3)));
    assert_eq!(reader.with_attempts(&id, |it| it.count()).unwrap(), 1);

    assert!(db.cut_connections() >= 3, "the three connections were open");
    assert_eq!(
        store
            .commit_uploads(&[share(&id, 1, &d, b"share")])
            .unwrap(),
        [Stored]
    );
    assert_eq!(lookup.token_hash(&id, 5).unwrap(), Some(hash_of(5)));
    worked_or_named_the_cut(reader.with_attempts(&id, |it| it.count()), 2);
    assert_eq!(reader.with_attempts(&id, |it| it.count()).unwrap(), 2);

    assert!(db.cut_connections() >= 3);
    // A read of a few rows is made again on a new connection.
    assert_eq!(store.shared().unwrap().count_shares(&id).unwrap(), 2);
    let mut received = Vec::new();
    worked_or_named_the_cut(reader.write_received(&id, n, &mut received), ());
    received.clear();
    reader.write_received(&id, n, &mut received).unwrap();
    assert!(!received.is_empty());

    // A close (compare-and-swap) whose connection was cut while the store was idle.
    assert!(db.cut_connections() >= 1);
    let agreed = ClientSet::from_ids(n, &[ClientId(0), ClientId(1)]).unwrap();
    assert!(store.set_agreed_set(&id, &agreed).unwrap());
    assert_eq!(
        store.shared().unwrap().round_state(&id).unwrap().state,
        RoundState::Closed
    );
    assert_eq!(lookup.token_hash(&id, 7).unwrap(), Some(hash_of(7)));
}

/// A transaction whose connection is lost before its COMMIT was sent is rolled back by the
/// server and run again on a new connection; one whose connection is lost at its COMMIT is not
/// run again (it may have committed) and its error says the outcome is unknown.
#[test]
fn a_transaction_cut_before_its_commit_runs_again_and_one_cut_at_its_commit_does_not() {
    let Some(db) = test_db("cut_commit") else {
        return;
    };
    let mut conn = db.at.connect().unwrap();
    conn.client()
        .unwrap()
        .batch_execute("CREATE TABLE cut (k INTEGER PRIMARY KEY)")
        .unwrap();
    let terminate = |pid: i32| -> bool {
        db.admin()
            .query_one("SELECT pg_terminate_backend($1, 5000)", &[&pid])
            .unwrap()
            .get(0)
    };
    let own_pid = |tx: &mut Transaction<'_>| -> std::result::Result<i32, TxError> {
        Ok(tx.query_one("SELECT pg_backend_pid()", &[])?.get(0))
    };

    let mut tries = 0;
    in_tx(&mut conn, IsolationLevel::ReadCommitted, |tx| {
        tries += 1;
        tx.execute("INSERT INTO cut VALUES (1)", &[])?;
        if tries == 1 {
            assert!(terminate(own_pid(tx)?));
            tx.execute("INSERT INTO cut VALUES (2)", &[])?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(tries, 2);

    let mut tries = 0;
    let err = in_tx(&mut conn, IsolationLevel::ReadCommitted, |tx| {
        tries += 1;
        tx.execute("INSERT INTO cut VALUES (3)", &[])?;
        assert!(terminate(own_pid(tx)?));
        Ok(())
    })
    .unwrap_err();
    assert_eq!(tries, 1, "a transaction cut at its commit was run again");
    assert!(err.to_string().contains("unknown"), "{err}");

    // The next call connects again; the first transaction's first try left nothing, and the
    // server never received the second one's COMMIT.
    let rows: Vec<i32> = conn
        .client()
        .unwrap()
        .query("SELECT k FROM cut ORDER BY k", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, [1]);
}
