//! Tests of the SQLite node store.

use super::super::contract_tests::{check_upload_outcomes, share};
use super::super::layout::HASHES_PER_CHUNK;
use super::super::{NodeStore, PendingShare, StoreLocation};
use super::*;
use SqliteAttemptReader as AttemptReader;
use SqliteTokenLookup as TokenLookup;
use sha2::{Digest, Sha256};

fn open(path: &Path) -> NodeStore {
    NodeStore::open(&StoreLocation::Sqlite(path.to_path_buf())).unwrap()
}

fn temp_db(name: &str) -> std::path::PathBuf {
    crate::scratch_dir(&format!("store-{name}")).join("node.sqlite")
}

/// The agreed set and the node sum written piece by piece (blob I/O) are the bytes the
/// whole-blob writes stored (ids big-endian, ascending); the sum goes to a row of its own
/// and leaves the agreed set's row as it was; it streams back from a read-only connection,
/// also after a second write; a source shorter than declared stores nothing; the attempts come back as an
/// iterator in client order.
#[test]
fn agreed_set_and_sum_are_written_and_read_in_pieces() {
    let path = temp_db("blobs");
    let mut store = open(&path);
    let (a, b) = ([5u8; 32], [6u8; 32]);
    store.insert_round(&a, 1, b"{}", &mut &[][..], 0).unwrap();
    store.insert_round(&b, 2, b"{}", &mut &[][..], 0).unwrap();
    let ids = [0u64, 3, 64, 65, 199_999];
    let set = ClientSet::from_ids(200_000, &ids.map(fixedpoint_shares::ClientId)).unwrap();
    store.set_agreed_set(&a, &set).unwrap();
    let want: Vec<u8> = ids.iter().flat_map(|c| c.to_be_bytes()).collect();
    let stored_agreed = |store: &NodeStore| -> Vec<u8> {
        store
            .sqlite()
            .conn
            .query_row(
                "SELECT agreed FROM node_round_state WHERE id = ?1",
                params![&a[..]],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(stored_agreed(&store), want);
    assert_eq!(store.agreed_set(&a, 200_000).unwrap().as_ref(), Some(&set));
    assert_eq!(store.agreed_set(&b, 200_000).unwrap(), None);
    let stored = store.rounds().unwrap();
    assert!(!stored.iter().any(|r| r.sum_stored));
    let sum: Vec<u8> = (0..200_003u32).map(|i| (i * 31 % 256) as u8).collect();
    let state_row = |store: &NodeStore| -> (i64, Option<usize>) {
        store
            .sqlite()
            .conn
            .query_row(
                "SELECT rowid, length(agreed) FROM node_round_state WHERE id = ?1",
                params![&a[..]],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    let before = state_row(&store);
    // A first sum, then the one kept: a second write replaces the first.
    let sha = |b: &[u8]| -> [u8; 32] { Sha256::digest(b).into() };
    store
        .set_sum_from(&a, &mut &sum[1..], sum.len() as u64 - 1, &sha(&sum[1..]))
        .unwrap();
    // Bytes that are not what the summing thread hashed are refused, nothing stored.
    assert!(matches!(
        store.set_sum_from(&a, &mut &sum[..], sum.len() as u64, &sha(&sum[1..])),
        Err(crate::Error::Integrity(_))
    ));
    assert_eq!(store.sqlite().sum(&a).unwrap().as_deref(), Some(&sum[1..]));
    store
        .set_sum_from(&a, &mut &sum[..], sum.len() as u64, &sha(&sum))
        .unwrap();
    assert!(store.check_sum(&a).unwrap());
    assert_eq!(store.sqlite().sum(&a).unwrap().as_deref(), Some(&sum[..]));
    // The agreed set's row untouched by the sum's write (not rewritten: same rowid).
    assert_eq!(state_row(&store), before);
    assert_eq!(before.1, Some(want.len()));
    assert_eq!(stored_agreed(&store), want);
    let stored = store.rounds().unwrap();
    assert!(stored.iter().find(|r| r.id == a).unwrap().sum_stored);
    assert!(!stored.iter().find(|r| r.id == b).unwrap().sum_stored);
    assert!(
        store
            .set_sum_from(&b, &mut &sum[..10], 11, &sha(&sum[..10]))
            .is_err()
    );
    assert_eq!(store.sqlite().sum(&b).unwrap(), None);
    let reader = AttemptReader::open(&path).unwrap();
    assert_eq!(store.sqlite().sum(&a).unwrap().as_deref(), Some(&sum[..]));
    let at = reader.sum_blob(&a).unwrap().unwrap();
    assert_eq!(at.len, sum.len() as u64);
    let mut got = Vec::new();
    reader.write_sum(&at, &mut got).unwrap();
    assert_eq!(got, sum);
    assert!(reader.sum_blob(&[8u8; 32]).unwrap().is_none());
    let digest = [1u8; 32];
    let batch: Vec<PendingShare<'_>> = [9u64, 2, 5]
        .iter()
        .map(|&c| PendingShare {
            shard: c * 10,
            ..share(&b, c, &digest, b"m")
        })
        .collect();
    store.commit_uploads(&batch).unwrap();
    let pairs = reader.with_attempts(&b, |p| p.collect::<Vec<_>>()).unwrap();
    assert_eq!(pairs, vec![(2, 20), (5, 50), (9, 90)]);
    let first = reader.with_attempts(&b, |p| p.next()).unwrap();
    assert_eq!(first, Some((2, 20)));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn round_state_is_kept_apart_from_the_spec_and_tokens_come_back_raw() {
    use std::io::Read;
    let path = temp_db("state");
    let mut store = open(&path);
    let (a, b) = ([1u8; 32], [2u8; 32]);
    // Several chunk rows, the last one partly filled.
    let n = 5 * HASHES_PER_CHUNK + 3;
    let tokens: Vec<u8> = (0..n * 32).map(|i| (i * 7 % 251) as u8).collect();
    store
        .insert_round(&a, 1, b"{\"a\":1}", &mut &tokens[..], n)
        .unwrap();
    store
        .insert_round(&b, 2, b"{\"b\":2}", &mut &[][..], 0)
        .unwrap();
    // A refused insert (round number taken) leaves nothing behind; so does a short source.
    assert!(
        store
            .insert_round(&[3u8; 32], 1, b"{}", &mut &tokens[..], n)
            .is_err()
    );
    assert!(
        store
            .insert_round(&[4u8; 32], 4, b"{}", &mut &tokens[..64], 3)
            .is_err()
    );
    store.sqlite().set_agreed(&a, &3u64.to_be_bytes()).unwrap();
    store.sqlite().set_sum(&a, &[9]).unwrap();
    store.abort(&b, "why").unwrap();
    // Closing and aborting wrote the rounds' state rows, apart from the spec rows.
    let states: i64 = store
        .sqlite()
        .conn
        .query_row("SELECT COUNT(*) FROM node_round_state", [], |r| r.get(0))
        .unwrap();
    assert_eq!(states, 2);
    let chunks: i64 = store
        .sqlite()
        .conn
        .query_row("SELECT COUNT(*) FROM node_round_tokens", [], |r| r.get(0))
        .unwrap();
    assert_eq!(chunks, 6);
    drop(store);
    let mut store = open(&path);
    let mut rounds = store.rounds().unwrap();
    rounds.sort_by_key(|r| r.id);
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[0].spec_json, b"{\"a\":1}");
    let mut back = Vec::new();
    store
        .token_chunks(&a)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back, tokens);
    back.clear();
    store
        .token_chunks(&b)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert!(back.is_empty());
    // Point lookups through a read-only connection.
    let mut lookup = super::super::TokenLookup::open(&StoreLocation::Sqlite(path.clone())).unwrap();
    for c in [0, 1, 15, 16, n - 1] {
        assert_eq!(
            lookup.token_hash(&a, c as u64).unwrap().unwrap()[..],
            tokens[32 * c..32 * c + 32]
        );
    }
    assert_eq!(lookup.token_hash(&a, n as u64).unwrap(), None);
    assert_eq!(lookup.token_hash(&b, 0).unwrap(), None);
    let read_only = TokenLookup::open(&path).unwrap();
    assert!(
        read_only
            .conn
            .execute("DELETE FROM node_round_tokens", [])
            .is_err()
    );
    assert!(rounds[0].sum_stored);
    assert_eq!(store.sqlite().sum(&a).unwrap().as_deref(), Some(&[9u8][..]));
    assert_eq!(rounds[0].aborted, None);
    assert_eq!(rounds[1].aborted.as_deref(), Some("why"));
    assert!(!rounds[1].sum_stored);
    assert_eq!(store.agreed_set(&b, 4).unwrap(), None);
    let three = ClientSet::from_ids(4, &[fixedpoint_shares::ClientId(3)]).unwrap();
    assert_eq!(store.agreed_set(&a, 4).unwrap(), Some(three));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn uploads_are_stored_once_in_a_new_store_and_in_one_from_before() {
    let path = temp_db("uploads-new");
    let mut store = open(&path);
    let sql: String = store
        .sqlite()
        .conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'node_shares'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!sql.contains("WITHOUT ROWID"), "{sql}");
    check_upload_outcomes(&mut store);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();

    // A store made before kept the shares in a WITHOUT ROWID table keyed by the pair.
    let path = temp_db("uploads-old");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE shares (round_id BLOB NOT NULL, client INTEGER NOT NULL,
                 digest BLOB NOT NULL, message BLOB NOT NULL,
                 PRIMARY KEY (round_id, client)) WITHOUT ROWID;",
        )
        .unwrap();
    }
    let mut store = open(&path);
    check_upload_outcomes(&mut store);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// The received set's JSON, written from the index while another round's shares sit
/// beside it, is exactly what serde writes for the same lists (clients ascending), also for
/// an empty round and with shard ids that need all 16 hex digits.
#[test]
fn the_received_set_is_written_from_the_attempts_index() {
    let path = temp_db("received-json");
    let mut store = open(&path);
    let (id, other, empty) = ([8u8; 32], [9u8; 32], [10u8; 32]);
    for (round, at) in [(8, &id), (9, &other), (10, &empty)] {
        store
            .insert_round(at, round, b"{}", &mut &[][..], 0)
            .unwrap();
    }
    let digest = [3u8; 32];
    let clients: Vec<u64> = (0..5000u64).rev().filter(|c| c % 7 != 3).collect();
    let shard_of = |c: u64| c.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let batch: Vec<PendingShare<'_>> = clients
        .iter()
        .flat_map(|&c| {
            [
                PendingShare {
                    shard: shard_of(c),
                    ..share(&id, c, &digest, b"s")
                },
                share(&other, c + 1, &digest, b"o"),
            ]
        })
        .collect();
    store.commit_uploads(&batch).unwrap();
    let mut reader =
        super::super::AttemptReader::open(&StoreLocation::Sqlite(path.clone())).unwrap();
    let mut got = Vec::new();
    reader.write_received(&id, 5000, &mut got).unwrap();
    let mut sorted = clients.clone();
    sorted.sort_unstable();
    // The documented layout, written out here: header, bitset, shard ids ascending.
    let mut want = b"DPDP\x01\0\0\0".to_vec();
    want.extend_from_slice(&5000u64.to_le_bytes());
    want.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
    let mut words = vec![0u64; 5000usize.div_ceil(64)];
    for &c in &sorted {
        words[c as usize / 64] |= 1 << (c % 64);
    }
    want.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    want.extend(sorted.iter().flat_map(|&c| shard_of(c).to_le_bytes()));
    assert_eq!(got, want);
    let mut got = Vec::new();
    reader.write_received(&empty, 3, &mut got).unwrap();
    let mut want = b"DPDP\x01\0\0\0".to_vec();
    want.extend_from_slice(&3u64.to_le_bytes());
    want.extend_from_slice(&[0; 16]);
    assert_eq!(got, want);
    // A stored client beyond the round's N is an error, not a wrong set.
    assert!(reader.write_received(&id, 4000, &mut Vec::new()).is_err());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_store_from_before_round_state_and_tokens_still_loads() {
    let path = temp_db("old");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE rounds (id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE,
                 spec BLOB NOT NULL, agreed BLOB, sum BLOB);
             INSERT INTO rounds VALUES (x'0303030303030303030303030303030303030303030303030303030303030303', 3, x'7b7d', x'0000000000000002000000000000000101', x'09');",
        )
        .unwrap();
    }
    let mut store = open(&path);
    let rounds = store.rounds().unwrap();
    assert_eq!(rounds.len(), 1);
    let r = &rounds[0];
    assert_eq!(r.spec_json.as_slice(), &b"{}"[..]);
    assert!(r.sum_stored);
    assert_eq!(
        store.sqlite().sum(&r.id).unwrap().as_deref(),
        Some(&[9u8][..])
    );
    assert_eq!(r.aborted, None);
    // Ids 2 and 1, big-endian; a trailing piece shorter than an id is ignored.
    let ids = [1u64, 2].map(fixedpoint_shares::ClientId);
    assert_eq!(
        store.agreed_set(&r.id, 3).unwrap(),
        Some(ClientSet::from_ids(3, &ids).unwrap())
    );
    // An id outside the round, or one listed twice, is an error.
    assert!(store.agreed_set(&r.id, 2).is_err());
    store
        .sqlite()
        .conn
        .execute(
            "UPDATE node_round_state SET agreed = x'00000000000000010000000000000001'",
            [],
        )
        .unwrap();
    assert!(store.agreed_set(&r.id, 3).is_err());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
