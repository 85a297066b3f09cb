//! Every schema version that node stores were written with before the SQL files, on both
//! backends: the schema as that version made it (`migrations/legacy-fixtures/`), a closed, an
//! aborted and an open round written where that version kept them, then opened by this version
//! and read back through the store.

use fixedpoint_shares::{ClientId, ClientSet};
use sha2::{Digest, Sha256};

use super::{AttemptReader, NodeStore, StoreLocation, TokenLookup};
use crate::db::migrations::Schema;
use crate::db::migrations::taken_over::{no_old_version_table, only_new_sqlite_tables};

const CLOSED: [u8; 32] = [1; 32];
const ABORTED: [u8; 32] = [2; 32];
const OPEN: [u8; 32] = [3; 32];
/// The open round's clients: their token hashes take two token rows.
const OPEN_CLIENTS: usize = 20;

fn sha(bytes: &[u8]) -> Vec<u8> {
    Sha256::digest(bytes).to_vec()
}

fn message(client: u64) -> Vec<u8> {
    format!("share of client {client}").into_bytes()
}

/// The closed round's agreed set (clients 0 and 2 of 4), as stored: 8 bytes big-endian each.
fn agreed() -> Vec<u8> {
    [0u64, 2].iter().flat_map(|c| c.to_be_bytes()).collect()
}

fn tokens() -> Vec<u8> {
    (0..OPEN_CLIENTS * 32).map(|k| (k * 7) as u8).collect()
}

/// How a store of one old SQLite version kept its rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SqliteLayout {
    /// Agreed set and sum in the round's row, no abort, shares without their attempt.
    Earliest,
    /// State and sums apart, token hashes in one blob of the round's row, no digests.
    Unversioned,
    /// Versions 1 and 2 (the latter with the digests of agreed sets and sums).
    Versioned(u32),
}

fn write_sqlite_rows(conn: &rusqlite::Connection, layout: SqliteLayout) {
    use rusqlite::params;
    let round = |id: &[u8; 32], number: i64| {
        conn.execute(
            "INSERT INTO rounds (id, round, spec) VALUES (?1, ?2, ?3)",
            params![
                &id[..],
                number,
                format!("{{\"round\":{number}}}").into_bytes()
            ],
        )
        .unwrap();
    };
    round(&CLOSED, 1);
    round(&OPEN, 3);
    for c in [0u64, 2] {
        let m = message(c);
        if layout == SqliteLayout::Earliest {
            conn.execute(
                "INSERT INTO shares (round_id, client, digest, message) VALUES (?1, ?2, ?3, ?4)",
                params![&CLOSED[..], c as i64, sha(&m), m],
            )
        } else {
            conn.execute(
                "INSERT INTO shares (round_id, client, shard, digest, message)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![&CLOSED[..], c as i64, 100 + c as i64, sha(&m), m],
            )
        }
        .unwrap();
    }
    if layout == SqliteLayout::Earliest {
        conn.execute(
            "UPDATE rounds SET agreed = ?2, sum = ?3 WHERE id = ?1",
            params![&CLOSED[..], agreed(), b"node sum".to_vec()],
        )
        .unwrap();
        return;
    }
    let digests = layout == SqliteLayout::Versioned(2);
    let blobs = |table: &str, columns: &[&str], digest_of: &[u8], values: Vec<Vec<u8>>| {
        let (mut columns, mut values) = (columns.to_vec(), values);
        if digests {
            columns.push(if table == "round_state" {
                "agreed_sha256"
            } else {
                "sum_sha256"
            });
            values.push(sha(digest_of));
        }
        let marks: Vec<String> = (1..=columns.len()).map(|k| format!("?{k}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({})",
            columns.join(", "),
            marks.join(", ")
        );
        conn.execute(&sql, rusqlite::params_from_iter(values))
            .unwrap();
    };
    blobs(
        "round_state",
        &["id", "agreed"],
        &agreed(),
        vec![CLOSED.to_vec(), agreed()],
    );
    blobs(
        "round_sums",
        &["id", "sum"],
        b"node sum",
        vec![CLOSED.to_vec(), b"node sum".to_vec()],
    );
    if layout == SqliteLayout::Unversioned {
        conn.execute(
            "UPDATE rounds SET tokens = ?2 WHERE id = ?1",
            params![&OPEN[..], tokens()],
        )
        .unwrap();
    } else {
        for (k, chunk) in tokens().chunks(512).enumerate() {
            conn.execute(
                "INSERT INTO round_tokens (round_id, chunk, hashes) VALUES (?1, ?2, ?3)",
                params![&OPEN[..], k as i64, chunk],
            )
            .unwrap();
        }
    }
    round(&ABORTED, 2);
    conn.execute(
        "INSERT INTO round_state (id, aborted) VALUES (?1, 'gone')",
        params![&ABORTED[..]],
    )
    .unwrap();
}

fn write_postgres_rows(c: &mut postgres::Client) {
    let closed = format!("{{\"round\":{}}}", 1);
    c.execute(
        "INSERT INTO node_rounds (id, round, spec, state, agreed, agreed_sha256)
         VALUES ($1, 1, $2, 'closed', $3, $4)",
        &[&&CLOSED[..], &closed.as_bytes(), &agreed(), &sha(&agreed())],
    )
    .unwrap();
    c.execute(
        "INSERT INTO node_rounds (id, round, spec, state, aborted)
         VALUES ($1, 2, $2, 'aborted', 'gone')",
        &[&&ABORTED[..], &&b"{\"round\":2}"[..]],
    )
    .unwrap();
    c.execute(
        "INSERT INTO node_rounds (id, round, spec) VALUES ($1, 3, $2)",
        &[&&OPEN[..], &&b"{\"round\":3}"[..]],
    )
    .unwrap();
    for cl in [0u64, 2] {
        let m = message(cl);
        c.execute(
            "INSERT INTO node_shares (round_id, client, shard, digest, message)
             VALUES ($1, $2, $3, $4, $5)",
            &[&&CLOSED[..], &(cl as i64), &(100 + cl as i64), &sha(&m), &m],
        )
        .unwrap();
    }
    c.execute(
        "INSERT INTO node_round_sums (id, sum_sha256, sum) VALUES ($1, $2, $3)",
        &[&&CLOSED[..], &sha(b"node sum"), &&b"node sum"[..]],
    )
    .unwrap();
    for (k, chunk) in tokens().chunks(512).enumerate() {
        c.execute(
            "INSERT INTO node_round_tokens (round_id, chunk, hashes) VALUES ($1, $2, $3)",
            &[&&OPEN[..], &(k as i64), &chunk],
        )
        .unwrap();
    }
}

/// Reads the rounds back through the store and its readers; `aborted`: whether the layout
/// could hold the aborted round, `attempts`: whether shares carried their attempt.
fn check_rows(at: &StoreLocation, aborted: bool, attempts: bool, what: &str) {
    let mut store = NodeStore::open(at).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut rounds: Vec<_> = store
        .rounds()
        .unwrap()
        .into_iter()
        .map(|r| (r.id, r.spec_json, r.sum_stored, r.aborted))
        .collect();
    rounds.sort_by_key(|r| r.0);
    let mut expected = vec![(CLOSED, b"{\"round\":1}".to_vec(), true, None)];
    if aborted {
        expected.push((
            ABORTED,
            b"{\"round\":2}".to_vec(),
            false,
            Some("gone".into()),
        ));
    }
    expected.push((OPEN, b"{\"round\":3}".to_vec(), false, None));
    assert_eq!(rounds, expected, "{what}");
    let set = ClientSet::from_ids(4, &[ClientId(0), ClientId(2)]).unwrap();
    assert_eq!(store.agreed_set(&CLOSED, 4).unwrap(), Some(set), "{what}");
    assert_eq!(store.agreed_set(&OPEN, 4).unwrap(), None, "{what}");
    let mut shares = Vec::new();
    store
        .for_each_share(&CLOSED, |c, shard, m| {
            shares.push((c, shard, m.to_vec()));
            Ok(())
        })
        .unwrap();
    let shard = |c: u64| attempts.then_some(100 + c);
    assert_eq!(
        shares,
        [(0, shard(0), message(0)), (2, shard(2), message(2))],
        "{what}"
    );
    assert_eq!(store.share(&CLOSED, 2).unwrap(), Some(message(2)), "{what}");
    assert!(store.check_sum(&CLOSED).unwrap(), "{what}");
    assert_eq!(store.round_by_number(3).unwrap(), Some(OPEN), "{what}");
    if aborted {
        let mut stored = Vec::new();
        std::io::Read::read_to_end(&mut store.token_chunks(&OPEN).unwrap(), &mut stored).unwrap();
        assert_eq!(stored, tokens(), "{what}");
        let mut lookup = TokenLookup::open(at).unwrap();
        let want: [u8; 32] = tokens()[17 * 32..18 * 32].try_into().unwrap();
        assert_eq!(lookup.token_hash(&OPEN, 17).unwrap(), Some(want), "{what}");
    }
    drop(store);
    let mut reader = AttemptReader::open(at).unwrap();
    let blob = reader
        .checked_sum_blob(&CLOSED)
        .unwrap()
        .expect("a node sum");
    let mut sum = Vec::new();
    reader.write_sum(&blob, &mut sum).unwrap();
    assert_eq!(sum, b"node sum", "{what}");
}

#[test]
fn every_old_sqlite_version_opens_with_its_rows() {
    let fixtures = [
        (
            SqliteLayout::Earliest,
            include_str!("../../../migrations/legacy-fixtures/node-sqlite-v0-earliest.sql"),
        ),
        (
            SqliteLayout::Unversioned,
            include_str!("../../../migrations/legacy-fixtures/node-sqlite-v0-latest.sql"),
        ),
        (
            SqliteLayout::Versioned(1),
            include_str!("../../../migrations/legacy-fixtures/node-sqlite-v1.sql"),
        ),
        (
            SqliteLayout::Versioned(2),
            include_str!("../../../migrations/legacy-fixtures/node-sqlite-v2.sql"),
        ),
    ];
    for (layout, schema) in fixtures {
        let what = format!("SQLite layout {layout:?}");
        let path = crate::db::postgres_test_db::sqlite_file(
            &format!("node-upgrade-{layout:?}").replace(['(', ')'], ""),
            "node.sqlite",
        );
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(schema).unwrap();
            write_sqlite_rows(&conn, layout);
        }
        let at = StoreLocation::Sqlite(path.clone());
        let full = layout != SqliteLayout::Earliest;
        check_rows(&at, full, full, &what);
        check_rows(&at, full, full, &format!("{what}, opened again"));
        only_new_sqlite_tables(&path, Schema::Node, &what);
    }
}

#[test]
fn every_old_postgres_version_opens_with_its_rows() {
    let fixtures = [
        (
            1,
            include_str!("../../../migrations/legacy-fixtures/node-postgres-v1.sql"),
        ),
        (
            2,
            include_str!("../../../migrations/legacy-fixtures/node-postgres-v2.sql"),
        ),
    ];
    for (version, schema) in fixtures {
        let Some(db) = crate::db::postgres_test_db::test_db(
            "upgrade",
            &format!("node_v{version}"),
            super::PgLocation::for_test,
        ) else {
            return;
        };
        let mut c = db.connect();
        c.batch_execute(schema).unwrap();
        write_postgres_rows(&mut c);
        drop(c);
        let what = format!("PostgreSQL schema version {version}");
        let at = StoreLocation::Postgres(db.at.clone());
        check_rows(&at, true, true, &what);
        check_rows(&at, true, true, &format!("{what}, opened again"));
        no_old_version_table(&mut db.connect(), &what);
    }
}
