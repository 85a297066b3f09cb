//! The SQLite node store's schema and its changes (see [`crate::db::migrations`]).

use crate::db::migrations::{Migration, add_column_if_missing};

/// The node store's schema changes (see [`crate::db::migrations`]).
pub(super) const NODE_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "rounds, their state, sums, token hashes and shares with their attempts",
        apply: node_layout_v1,
    },
    Migration {
        version: 2,
        what: "SHA-256 of each stored agreed set and node sum",
        apply: |tx| {
            // NULL in rows written before: read unchecked.
            add_column_if_missing(tx, "round_state", "agreed_sha256", "BLOB")?;
            add_column_if_missing(tx, "round_sums", "sum_sha256", "BLOB")
        },
    },
];

/// The layout every store had before schema versions were stored, reached from any of the
/// layouts earlier versions wrote (each added its tables and columns as it went).
fn node_layout_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS rounds (
                 id BLOB PRIMARY KEY,
                 round INTEGER NOT NULL UNIQUE,
                 spec BLOB NOT NULL,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             );
             CREATE TABLE IF NOT EXISTS round_state (
                 id BLOB PRIMARY KEY,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             );
             CREATE TABLE IF NOT EXISTS round_sums (
                 id BLOB PRIMARY KEY,
                 sum BLOB NOT NULL
             );
             CREATE TABLE IF NOT EXISTS round_tokens (
                 round_id BLOB NOT NULL,
                 chunk INTEGER NOT NULL,
                 hashes BLOB NOT NULL,
                 PRIMARY KEY (round_id, chunk)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS shares (
                 round_id BLOB NOT NULL,
                 client INTEGER NOT NULL,
                 shard INTEGER,
                 digest BLOB NOT NULL,
                 message BLOB NOT NULL,
                 UNIQUE (round_id, client)
             );",
    )?;
    // `shares` is a rowid table with a unique index on (round_id, client): a full share's
    // row (~8d bytes) overflows its page, and in a WITHOUT ROWID table (as stores made
    // before kept it, which still work with the same statements) every key comparison on
    // the way down the B-tree read the whole row from its overflow pages. Now the key
    // lookups walk the small index and the rows are appended in rowid order.
    // Stores created before rounds could be aborted lack the column; nor did they keep
    // the token hashes apart from the spec.
    add_column_if_missing(tx, "rounds", "aborted", "TEXT")?;
    add_column_if_missing(tx, "rounds", "tokens", "BLOB")?;
    // The shard attempt, before the message so that reading it never touches a full
    // share's overflow pages; older stores get it appended (filled in on load).
    add_column_if_missing(tx, "shares", "shard", "INTEGER")?;
    // The (client, attempt) pairs of a round, read at close and for the received set, from
    // a covering index: scanning the table itself would read every leaf page of node 0's
    // full shares (a few rows per 4 KiB page).
    tx.execute_batch(
        "CREATE INDEX IF NOT EXISTS shares_attempts ON shares (round_id, client, shard);",
    )?;
    Ok(())
}
