//! The store's rules ([`super::rules`]) as both backends must keep them: every test runs on a
//! SQLite file and, when `DPDIST_TEST_POSTGRES` names a server, on a PostgreSQL database of
//! its own. Expected values are written out by hand.

use fixedpoint_shares::{ClientId, ClientSet};
use sha2::{Digest, Sha256};

use super::{NodeStore, PendingShare, PgLocation, RoundState, StoreLocation, UploadOutcome};
use crate::Error;

/// Runs `check` on a fresh SQLite store, then on a fresh PostgreSQL store if a server is there.
fn on_both_stores(name: &str, check: impl Fn(NodeStore)) {
    let dir = crate::scratch_dir(&format!("contract-{name}"));
    check(NodeStore::open(&StoreLocation::Sqlite(dir.join("node.sqlite"))).unwrap());
    std::fs::remove_dir_all(dir).unwrap();
    if let Some(db) = crate::db::postgres_test_db::test_db("contract", name, PgLocation::for_test) {
        check(NodeStore::open(&StoreLocation::Postgres(db.at.clone())).unwrap());
    }
}

fn sha(m: &[u8]) -> [u8; 32] {
    Sha256::digest(m).into()
}

/// A round with `n` clients whose token hash bytes are c·7 + k (mod 256).
fn create(store: &mut NodeStore, id: &[u8; 32], round: u64, n: usize) {
    let tokens: Vec<u8> = (0..n)
        .flat_map(|c| (0..32).map(move |k| (c * 7 + k) as u8))
        .collect();
    store
        .insert_round(id, round, b"{}", &mut &tokens[..], n)
        .unwrap();
}

pub(super) fn share<'a>(
    id: &'a [u8; 32],
    client: u64,
    digest: &'a [u8; 32],
    m: &'a [u8],
) -> PendingShare<'a> {
    PendingShare {
        round_id: id,
        client,
        shard: 100 + client,
        digest,
        message: m,
    }
}

fn set(universe: usize, ids: &[u64]) -> ClientSet {
    let ids: Vec<ClientId> = ids.iter().map(|&c| ClientId(c)).collect();
    ClientSet::from_ids(universe, &ids).unwrap()
}

#[test]
fn uploads_are_stored_only_while_their_round_is_open() {
    use UploadOutcome::{NotOpen, Stored};
    on_both_stores("open_only", |mut store| {
        let (open, closed, aborted, unknown) = ([1u8; 32], [2u8; 32], [3u8; 32], [4u8; 32]);
        create(&mut store, &open, 1, 4);
        create(&mut store, &closed, 2, 4);
        create(&mut store, &aborted, 3, 4);
        assert!(store.set_agreed_set(&closed, &set(4, &[])).unwrap());
        assert!(store.abort(&aborted, "too few").unwrap());
        let d = sha(b"s");
        let out = store
            .commit_uploads(&[
                share(&open, 0, &d, b"s"),
                share(&closed, 0, &d, b"s"),
                share(&aborted, 0, &d, b"s"),
                share(&unknown, 0, &d, b"s"),
                share(&open, 1, &d, b"s"),
            ])
            .unwrap();
        assert_eq!(
            out,
            [
                Stored,
                NotOpen(RoundState::Closed),
                NotOpen(RoundState::Aborted),
                NotOpen(RoundState::Unknown),
                Stored
            ]
        );
        assert_eq!(store.share(&closed, 0).unwrap(), None);
        assert_eq!(store.share(&aborted, 0).unwrap(), None);
        assert_eq!(store.share(&open, 1).unwrap().as_deref(), Some(&b"s"[..]));
    });
}

#[test]
fn a_clients_share_is_stored_once_and_compared_by_its_digest() {
    use UploadOutcome::{Conflict, SameAgain, Stored};
    on_both_stores("insert_or_compare", |mut store| {
        let id = [5u8; 32];
        create(&mut store, &id, 5, 3);
        let (a, b) = (sha(b"a"), sha(b"b"));
        let out = store
            .commit_uploads(&[
                share(&id, 2, &a, b"a"),
                share(&id, 2, &a, b"a"),
                share(&id, 2, &b, b"b"),
            ])
            .unwrap();
        assert_eq!(out, [Stored, SameAgain, Conflict]);
        let out = store
            .commit_uploads(&[share(&id, 2, &b, b"b"), share(&id, 2, &a, b"a")])
            .unwrap();
        assert_eq!(out, [Conflict, SameAgain]);
        assert_eq!(store.share(&id, 2).unwrap().as_deref(), Some(&b"a"[..]));
        let mut attempts = Vec::new();
        store
            .for_each_attempt(&id, |c, s| {
                attempts.push((c, s));
                Ok(())
            })
            .unwrap();
        assert_eq!(attempts, [(2, 102)]);
    });
}

#[test]
fn an_open_round_is_aborted_once_with_its_shares_and_then_not_closed() {
    on_both_stores("abort_once", |mut store| {
        let id = [6u8; 32];
        create(&mut store, &id, 6, 4);
        let d = sha(b"s");
        store.commit_uploads(&[share(&id, 1, &d, b"s")]).unwrap();
        assert!(store.abort(&id, "too few").unwrap());
        assert_eq!(store.share(&id, 1).unwrap(), None);
        assert!(store.abort(&id, "again").unwrap());
        assert!(!store.set_agreed_set(&id, &set(4, &[1])).unwrap());
        assert_eq!(store.agreed_set(&id, 4).unwrap(), None);
        let rounds = store.rounds().unwrap();
        assert_eq!(rounds.len(), 1);
        assert_eq!(rounds[0].aborted.as_deref(), Some("too few"));
        assert!(!store.abort(&[7u8; 32], "unknown").unwrap());
    });
}

#[test]
fn an_open_round_is_closed_once_and_then_not_aborted() {
    on_both_stores("close_once", |mut store| {
        let id = [8u8; 32];
        create(&mut store, &id, 8, 4);
        assert!(store.set_agreed_set(&id, &set(4, &[0, 2])).unwrap());
        assert!(!store.set_agreed_set(&id, &set(4, &[0, 1])).unwrap());
        assert!(!store.abort(&id, "late").unwrap());
        assert_eq!(store.agreed_set(&id, 4).unwrap(), Some(set(4, &[0, 2])));
        // Ids 0 and 2 do not fit a universe of 2.
        assert!(store.agreed_set(&id, 2).is_err());
        assert_eq!(store.rounds().unwrap()[0].aborted, None);
        assert!(!store.set_agreed_set(&[9u8; 32], &set(4, &[0])).unwrap());
    });
}

#[test]
fn a_node_sum_is_stored_for_a_closed_round_only_and_with_its_digest() {
    on_both_stores("sum_closed_only", |mut store| {
        let id = [10u8; 32];
        create(&mut store, &id, 10, 2);
        let sum = b"0123456789";
        let stored = |store: &mut NodeStore, bytes: &[u8], len: u64, digest: &[u8; 32]| {
            store.set_sum_from(&id, &mut &bytes[..], len, digest)
        };
        assert!(matches!(
            stored(&mut store, sum, 10, &sha(sum)),
            Err(Error::InvalidSpec(_))
        ));
        assert!(store.set_agreed_set(&id, &set(2, &[0, 1])).unwrap());
        assert!(matches!(
            stored(&mut store, sum, 10, &sha(b"9876543210")),
            Err(Error::Integrity(_))
        ));
        assert!(matches!(
            stored(&mut store, &sum[..4], 10, &sha(&sum[..4])),
            Err(Error::Io(_))
        ));
        assert!(!store.check_sum(&id).unwrap());
        stored(&mut store, sum, 10, &sha(sum)).unwrap();
        assert!(store.check_sum(&id).unwrap());
        assert!(store.rounds().unwrap()[0].sum_stored);
        assert!(!store.check_sum(&[11u8; 32]).unwrap());
    });
}

#[test]
fn token_hashes_come_back_in_client_order_and_a_refused_round_leaves_none() {
    on_both_stores("tokens", |mut store| {
        use std::io::Read;
        let id = [12u8; 32];
        // Two full chunks of 16 hashes and one of a single hash.
        create(&mut store, &id, 12, 33);
        let hash_of = |c: usize| -> [u8; 32] { std::array::from_fn(|k| (c * 7 + k) as u8) };
        let mut back = Vec::new();
        store
            .token_chunks(&id)
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back.len(), 33 * 32);
        assert_eq!(back[32 * 17..32 * 18], hash_of(17));
        // A round number taken already: refused, and nothing of the refused round is stored.
        assert!(
            store
                .insert_round(&[13u8; 32], 12, b"{}", &mut &back[..], 33)
                .is_err()
        );
        back.clear();
        store
            .token_chunks(&[13u8; 32])
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back.is_empty());
        assert_eq!(store.round_by_number(12).unwrap(), Some(id));
    });
}

#[test]
fn each_named_transaction_is_counted_in_the_metrics() {
    on_both_stores("metrics", |mut store| {
        let metrics = crate::http::metrics::Metrics::new();
        store = store.counted_in(metrics.clone());
        let id = [14u8; 32];
        create(&mut store, &id, 14, 2);
        let d = sha(b"s");
        store.commit_uploads(&[share(&id, 0, &d, b"s")]).unwrap();
        store.commit_uploads(&[share(&id, 1, &d, b"s")]).unwrap();
        assert!(
            store
                .set_sum_from(&id, &mut &b"x"[..], 1, &sha(b"x"))
                .is_err()
        );
        let text = metrics.encode();
        for line in [
            "dpdist_node_store_transactions_total{name=\"create_round\",outcome=\"ok\"} 1",
            "dpdist_node_store_transactions_total{name=\"commit_uploads\",outcome=\"ok\"} 2",
            "dpdist_node_store_transactions_total{name=\"store_sum\",outcome=\"error\"} 1",
            "dpdist_node_store_transaction_seconds_count{name=\"commit_uploads\",outcome=\"ok\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    });
}

/// Stored, the same again (also within one batch), a conflict: nothing but the first
/// share of each client is kept.
pub(super) fn check_upload_outcomes(store: &mut NodeStore) {
    use UploadOutcome::{Conflict, SameAgain, Stored};
    let (id, other_round) = ([5u8; 32], [6u8; 32]);
    store.insert_round(&id, 5, b"{}", &mut &[][..], 0).unwrap();
    store
        .insert_round(&other_round, 6, b"{}", &mut &[][..], 0)
        .unwrap();
    // Overflows SQLite's page and is stored out of line by PostgreSQL, as a full share is.
    let big = vec![7u8; 200_000];
    let (big_d, seed_d, other_d, x_d) = (sha(&big), sha(b"seed"), sha(b"other"), sha(b"x"));
    let out = store
        .commit_uploads(&[
            share(&id, 0, &big_d, &big),
            share(&id, 1, &seed_d, b"seed"),
            share(&id, 1, &seed_d, b"seed"),
            share(&id, 1, &other_d, b"other"),
            share(&other_round, 1, &other_d, b"other"),
        ])
        .unwrap();
    assert_eq!(out, [Stored, Stored, SameAgain, Conflict, Stored]);
    let out = store
        .commit_uploads(&[share(&id, 0, &big_d, &big), share(&id, 0, &x_d, b"x")])
        .unwrap();
    assert_eq!(out, [SameAgain, Conflict]);
    assert_eq!(store.share(&id, 0).unwrap().as_deref(), Some(&big[..]));
    assert_eq!(store.share(&id, 1).unwrap().as_deref(), Some(&b"seed"[..]));
    assert_eq!(
        store.share(&other_round, 1).unwrap().as_deref(),
        Some(&b"other"[..])
    );
    let mut seen = Vec::new();
    store
        .for_each_share(&id, |c, shard, m| {
            seen.push((c, shard, m.len()));
            Ok(())
        })
        .unwrap();
    // The shard attempts as the test's shares carry them: 100 + client.
    assert_eq!(seen, [(0, Some(100), big.len()), (1, Some(101), 4)]);
}

#[test]
fn duplicate_uploads_are_the_same_again_or_a_conflict() {
    on_both_stores("duplicates", |mut store| check_upload_outcomes(&mut store));
}
