//! Tests of the PostgreSQL node store against a real server: `DPDIST_TEST_POSTGRES` is the URL
//! of a database whose user may create databases (`scripts/pg-start.sh` makes one). Each test
//! works in a database of its own, dropped at the end. Without the variable the tests say so
//! loudly and pass, except under CI (`CI` set), where they fail.

use super::*;
use crate::Error;
use crate::node::store::{
    AttemptReader, NodeStore, PendingShare, StoreLocation, TokenLookup, UploadOutcome,
};
use fixedpoint_shares::ClientId;
use postgres::NoTls;
use readers::SUM_PIECE;
use sha2::{Digest, Sha256};

/// A database made for one test (see [`crate::db::postgres_test_db`]).
pub(super) type TestDb = crate::db::postgres_test_db::TestDb<PgLocation>;

/// A fresh database for the test `name`, or `None` (after saying so) without a server.
pub(super) fn test_db(name: &str) -> Option<TestDb> {
    crate::db::postgres_test_db::test_db("unit", name, PgLocation::for_test)
}

pub(super) fn sha(m: &[u8]) -> [u8; 32] {
    Sha256::digest(m).into()
}

pub(super) fn share<'a>(
    id: &'a [u8; 32],
    client: u64,
    digest: &'a [u8; 32],
    message: &'a [u8],
) -> PendingShare<'a> {
    PendingShare {
        round_id: id,
        client,
        shard: 0x0123_4567_89ab_cdef ^ client,
        digest,
        message,
    }
}

/// Hashes 0..n, 32 bytes each: byte k of client c's hash is c·7 + k (mod 256).
pub(super) fn token_hashes(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|c| (0..32).map(move |k| (c * 7 + k) as u8))
        .collect()
}

pub(super) fn store_with_round(db: &TestDb, id: &[u8; 32], round: u64, n: usize) -> NodeStore {
    let mut store = NodeStore::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    store
        .insert_round(id, round, b"{\"spec\":1}", &mut &token_hashes(n)[..], n)
        .unwrap();
    store
}

/// Close is a compare-and-swap: the first closes, a second is refused, as is an abort; an
/// upload after close is refused in its transaction, and nothing of it is stored.
#[test]
fn close_is_a_compare_and_swap_and_uploads_after_it_are_refused() {
    let Some(db) = test_db("close_cas") else {
        return;
    };
    let (id, unknown) = ([6u8; 32], [9u8; 32]);
    let mut store = store_with_round(&db, &id, 2, 10);
    let d = sha(b"a");
    assert_eq!(
        store.commit_uploads(&[share(&id, 3, &d, b"a")]).unwrap(),
        [UploadOutcome::Stored]
    );
    let agreed = ClientSet::from_ids(10, &[ClientId(3)]).unwrap();
    assert!(store.set_agreed_set(&id, &agreed).unwrap());
    assert!(!store.set_agreed_set(&id, &agreed).unwrap());
    assert!(!store.abort(&id, "late").unwrap());
    assert_eq!(
        store
            .commit_uploads(&[share(&id, 4, &d, b"a"), share(&unknown, 0, &d, b"a")])
            .unwrap(),
        [
            UploadOutcome::NotOpen(RoundState::Closed),
            UploadOutcome::NotOpen(RoundState::Unknown)
        ]
    );
    assert_eq!(store.share(&id, 4).unwrap(), None);
    assert_eq!(store.agreed_set(&id, 10).unwrap(), Some(agreed));
    // A second process's view: the round is closed, not aborted.
    let mut again = NodeStore::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    let rounds = again.rounds().unwrap();
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].aborted, None);
}

/// Abort is a compare-and-swap from open too: its shares go, uploads are refused after it,
/// a second abort is accepted (idempotent), a close is refused.
#[test]
fn abort_deletes_the_shares_and_refuses_what_follows() {
    let Some(db) = test_db("abort") else { return };
    let id = [7u8; 32];
    let mut store = store_with_round(&db, &id, 3, 4);
    let d = sha(b"s");
    store.commit_uploads(&[share(&id, 0, &d, b"s")]).unwrap();
    assert!(store.abort(&id, "too few").unwrap());
    assert!(store.abort(&id, "again").unwrap());
    assert_eq!(store.share(&id, 0).unwrap(), None);
    assert_eq!(
        store.commit_uploads(&[share(&id, 1, &d, b"s")]).unwrap(),
        [UploadOutcome::NotOpen(RoundState::Aborted)]
    );
    let agreed = ClientSet::from_ids(4, &[]).unwrap();
    assert!(!store.set_agreed_set(&id, &agreed).unwrap());
    let rounds = store.rounds().unwrap();
    assert_eq!(rounds[0].aborted.as_deref(), Some("too few"));
}

/// Uploads racing a close from another connection: every upload answered "stored" is in the
/// store, every other one was refused as closed, none that began after the close returned was
/// stored, and the shares the store holds are exactly the stored ones.
#[test]
fn uploads_racing_a_close_are_either_stored_or_refused() {
    let Some(db) = test_db("race") else { return };
    let id = [8u8; 32];
    let n = 400u64;
    drop(store_with_round(&db, &id, 4, n as usize));
    let at = StoreLocation::Postgres(db.at.clone());
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let uploader = {
        let (at, closed) = (at.clone(), closed.clone());
        std::thread::spawn(move || {
            let mut store = NodeStore::open(&at).unwrap();
            let mut stored = Vec::new();
            let d = sha(b"m");
            for batch in (0..n).collect::<Vec<_>>().chunks(8) {
                let pending: Vec<_> = batch.iter().map(|&c| share(&id, c, &d, b"m")).collect();
                let after_close = closed.load(std::sync::atomic::Ordering::SeqCst);
                for (c, o) in batch.iter().zip(store.commit_uploads(&pending).unwrap()) {
                    match o {
                        UploadOutcome::Stored if after_close => {
                            panic!("client {c} stored after the close")
                        }
                        UploadOutcome::Stored => stored.push(*c),
                        UploadOutcome::NotOpen(RoundState::Closed) => {}
                        other => panic!("client {c}: {other:?}"),
                    }
                }
            }
            stored
        })
    };
    let mut closer = NodeStore::open(&at).unwrap();
    // Closed once some uploads are in (bounded: 2000 polls of 5 ms).
    for _ in 0..2000 {
        let mut held = 0;
        closer
            .for_each_attempt(&id, |_, _| {
                held += 1;
                Ok(())
            })
            .unwrap();
        if held > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let empty = ClientSet::from_ids(n as usize, &[]).unwrap();
    assert!(closer.set_agreed_set(&id, &empty).unwrap());
    closed.store(true, std::sync::atomic::Ordering::SeqCst);
    let stored = uploader.join().unwrap();
    let mut held = Vec::new();
    closer
        .for_each_attempt(&id, |c, _| {
            held.push(c);
            Ok(())
        })
        .unwrap();
    assert_eq!(held, stored);
    assert!(!stored.is_empty());
}

/// What is written comes back: token hashes (streamed and looked up), the agreed set, the
/// received set's JSON (what serde writes for the same lists), the node sum streamed in pieces
/// and checked; a damaged sum is refused.
#[test]
fn round_data_comes_back_as_written() {
    let Some(db) = test_db("round_trip") else {
        return;
    };
    let id = [10u8; 32];
    let n = 1000;
    let mut store = store_with_round(&db, &id, 5, n);
    let mut tokens = Vec::new();
    std::io::Read::read_to_end(&mut store.token_chunks(&id).unwrap(), &mut tokens).unwrap();
    assert_eq!(tokens, token_hashes(n));
    assert_eq!(store.round_by_number(5).unwrap(), Some(id));
    assert_eq!(store.round_by_number(6).unwrap(), None);
    let d = sha(b"x");
    let clients = [999u64, 0, 17, 500];
    let batch: Vec<_> = clients.iter().map(|&c| share(&id, c, &d, b"x")).collect();
    store.commit_uploads(&batch).unwrap();
    let mut reader = AttemptReader::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    let mut got = Vec::new();
    reader.write_received(&id, n, &mut got).unwrap();
    let mut sorted = clients;
    sorted.sort();
    // The documented pair-set layout, written out here: header, bitset, shard ids ascending.
    let mut want = b"DPDP\x01\0\0\0".to_vec();
    want.extend_from_slice(&(n as u64).to_le_bytes());
    want.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
    let mut words = vec![0u64; n.div_ceil(64)];
    for &c in &sorted {
        words[c as usize / 64] |= 1 << (c % 64);
    }
    want.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    want.extend(
        sorted
            .iter()
            .flat_map(|c| (0x0123_4567_89ab_cdef ^ c).to_le_bytes()),
    );
    assert_eq!(got, want);
    // A stored client at or beyond the round's N is an error, not a wrong set.
    assert!(reader.write_received(&id, 999, &mut Vec::new()).is_err());
    let pairs = reader
        .with_attempts(&id, |it| it.collect::<Vec<_>>())
        .unwrap();
    assert_eq!(pairs.len(), 4);
    assert_eq!(pairs[0], (0, 0x0123_4567_89ab_cdef));
    let mut lookup = TokenLookup::open(&StoreLocation::Postgres(db.at.clone())).unwrap();
    assert_eq!(
        lookup.token_hash(&id, 999).unwrap(),
        Some(<[u8; 32]>::try_from(&token_hashes(n)[999 * 32..]).unwrap())
    );
    assert_eq!(lookup.token_hash(&id, 1000).unwrap(), None);

    let agreed = ClientSet::from_ids(n, &[ClientId(0), ClientId(17), ClientId(999)]).unwrap();
    // A sum before close is refused.
    let sum: Vec<u8> = (0..(3 * SUM_PIECE + 5))
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    assert!(
        store
            .set_sum_from(&id, &mut &sum[..], sum.len() as u64, &sha(&sum))
            .is_err()
    );
    assert!(store.set_agreed_set(&id, &agreed).unwrap());
    assert_eq!(store.agreed_set(&id, n).unwrap(), Some(agreed));
    assert!(matches!(
        store.set_sum_from(&id, &mut &sum[..], sum.len() as u64, &sha(&sum[1..])),
        Err(Error::Integrity(_))
    ));
    assert!(!store.check_sum(&id).unwrap());
    store
        .set_sum_from(&id, &mut &sum[..], sum.len() as u64, &sha(&sum))
        .unwrap();
    assert!(store.check_sum(&id).unwrap());
    let at = reader.checked_sum_blob(&id).unwrap().unwrap();
    assert_eq!(at.len(), sum.len() as u64);
    let mut out = Vec::new();
    reader.write_sum(&at, &mut out).unwrap();
    assert_eq!(out, sum);
    // One flipped byte in the stored sum: the check refuses it.
    let mut direct = db.at.config().connect(NoTls).unwrap();
    direct
        .execute(
            "UPDATE node_round_sums SET sum = set_byte(sum, 7, get_byte(sum, 7) # 1)",
            &[],
        )
        .unwrap();
    assert!(matches!(store.check_sum(&id), Err(Error::Integrity(_))));
    assert!(matches!(
        reader.checked_sum_blob(&id),
        Err(Error::Integrity(_))
    ));
}

/// The migrations applied are recorded; opening again applies nothing; a store migrated by a
/// newer version is refused with a message that says so.
#[test]
fn the_schema_version_is_stored_and_a_newer_one_is_refused() {
    let Some(db) = test_db("schema") else { return };
    let at = StoreLocation::Postgres(db.at.clone());
    drop(NodeStore::open(&at).unwrap());
    drop(NodeStore::open(&at).unwrap());
    let mut c = db.at.config().connect(NoTls).unwrap();
    let applied: Vec<i32> = c
        .query(
            "SELECT version FROM node_schema_history ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(applied, [1, 2]);
    c.execute(
        "INSERT INTO node_schema_history (version, name, applied_on, checksum)
         VALUES (99, 'later', '2030-01-01T00:00:00Z', '1')",
        &[],
    )
    .unwrap();
    match NodeStore::open(&at) {
        Err(Error::Schema(m)) => assert!(m.contains("V99__later") && m.contains("newer"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a store of schema version 99 was opened"),
    }
}

/// A URL that is not PostgreSQL's, one without a database, and a server that is not there:
/// errors that say which, with the password left out.
#[test]
fn bad_urls_and_unreachable_servers_are_named() {
    for (url, says) in [
        ("mysql://u@127.0.0.1/db", "not a PostgreSQL URL"),
        ("postgres://u:hunter2@127.0.0.1:5432", "names no database"),
        ("postgres://u:hunter2@127.0.0.1:notaport/db", "--store"),
    ] {
        match PgLocation::parse(url) {
            Err(Error::Postgres(m)) => {
                assert!(m.contains(says), "{url}: {m}");
                assert!(!m.contains("hunter2"), "{m}");
            }
            Err(e) => panic!("{url}: {e}"),
            Ok(_) => panic!("{url} parsed"),
        }
    }
    // A loopback port nothing listens on (bound, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let at = PgLocation::parse(&format!("postgres://u:hunter2@127.0.0.1:{port}/db")).unwrap();
    assert_eq!(
        at.to_string(),
        format!("postgres://u:***@127.0.0.1:{port}/db")
    );
    match NodeStore::open(&StoreLocation::Postgres(at)) {
        Err(Error::Postgres(m)) => {
            assert!(
                m.contains("cannot connect") && m.contains(&port.to_string()),
                "{m}"
            );
            assert!(!m.contains("hunter2"), "{m}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("connected to a port nothing listens on"),
    }
}

/// The node sum's lease: of two handles (two replicas) racing for it from threads of their own,
/// exactly one wins; the loser cannot store a sum, and takes the lease over only once it has
/// expired, after which the first holder can neither renew it nor store its sum.
#[test]
fn two_replicas_race_for_a_sum_lease_one_wins_and_a_stale_lease_is_taken_over() {
    let Some(db) = test_db("sum_lease") else {
        return;
    };
    let id = [11u8; 32];
    let n = 8;
    let mut store = store_with_round(&db, &id, 1, n);
    let (d, m) = (sha(b"m"), b"m".to_vec());
    store.commit_uploads(&[share(&id, 2, &d, &m)]).unwrap();
    let at = StoreLocation::Postgres(db.at.clone());
    // Not closed yet: nobody takes it.
    assert!(!store.take_sum_lease(&id, "early", 1_000, 2_000).unwrap());
    assert!(
        store
            .set_agreed_set(&id, &ClientSet::from_ids(n, &[ClientId(2)]).unwrap())
            .unwrap()
    );
    for attempt in 0..5 {
        let race_id = [20 + attempt as u8; 32];
        let mut s = store_with_round(&db, &race_id, 10 + attempt, n);
        assert!(
            s.set_agreed_set(&race_id, &ClientSet::from_ids(n, &[]).unwrap())
                .unwrap()
        );
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let won: Vec<bool> = ["a", "b"]
            .map(|holder| {
                let (at, barrier) = (at.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut s = NodeStore::open(&at).unwrap();
                    barrier.wait();
                    s.take_sum_lease(&race_id, holder, 1_000, 31_000).unwrap()
                })
            })
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    }
    assert!(store.take_sum_lease(&id, "a", 1_000, 31_000).unwrap());
    // Held: another replica is refused until the expiry; the holder takes it again (renews).
    assert!(!store.take_sum_lease(&id, "b", 30_999, 60_999).unwrap());
    assert!(store.take_sum_lease(&id, "a", 2_000, 32_000).unwrap());
    let lease = store.shared().unwrap().sum_lease(&id).unwrap();
    assert_eq!(lease, Some(("a".to_string(), 32_000)));
    let metrics = crate::http::metrics::Metrics::new();
    let mut reader_b = PgReader::open(&db.at).unwrap();
    assert!(
        !super::super::store_sum_under_lease(
            &mut reader_b,
            &metrics,
            &id,
            "b",
            b"sum",
            &sha(b"sum")
        )
        .unwrap()
    );
    assert!(!reader_b.renew_sum_lease(&id, "b", 90_000).unwrap());
    // "a" died: at its expiry "b" takes over; "a" can then neither renew nor store.
    assert!(store.take_sum_lease(&id, "b", 32_000, 62_000).unwrap());
    let mut reader_a = PgReader::open(&db.at).unwrap();
    assert!(!reader_a.renew_sum_lease(&id, "a", 90_000).unwrap());
    assert!(
        !super::super::store_sum_under_lease(
            &mut reader_a,
            &metrics,
            &id,
            "a",
            b"stale",
            &sha(b"stale")
        )
        .unwrap()
    );
    assert!(
        super::super::store_sum_under_lease(
            &mut reader_b,
            &metrics,
            &id,
            "b",
            b"sum",
            &sha(b"sum")
        )
        .unwrap()
    );
    assert!(store.check_sum(&id).unwrap());
    let Some(pg) = store.shared() else {
        unreachable!()
    };
    let state = pg.round_state(&id).unwrap();
    assert_eq!((state.state, state.sum_stored), (RoundState::Closed, true));
    // Stored: no lease is given any more, however late.
    assert!(!store.take_sum_lease(&id, "c", 100_000, 130_000).unwrap());
    let mut sum = Vec::new();
    let mut reader = AttemptReader::open(&at).unwrap();
    let blob = reader.checked_sum_blob(&id).unwrap().unwrap();
    reader.write_sum(&blob, &mut sum).unwrap();
    assert_eq!(sum, b"sum");
}
