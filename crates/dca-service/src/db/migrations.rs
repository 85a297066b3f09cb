//! Numbered schema changes of the services' SQLite stores. The store's `PRAGMA user_version` is
//! the number of the last change applied; each change runs once, in order, in one transaction
//! with the new version number, so a crash leaves the store at one version or the next. A store
//! written by a newer version (a number this code does not know) is refused, not guessed at.

use rusqlite::{Connection, Transaction};

use crate::{Error, Result};

/// One schema change.
pub(crate) struct Migration {
    /// Its number: 1, 2, … in the order they apply.
    pub version: u32,
    /// What it changes (for the log).
    pub what: &'static str,
    /// The change. It must be idempotent on the layouts written before versions were stored
    /// (version 0), which may already have some of its tables or columns.
    pub apply: fn(&Transaction<'_>) -> rusqlite::Result<()>,
}

/// Applies the changes of `migrations` (ascending) that `conn`'s store lacks; `store` names it
/// in errors and logs.
pub(crate) fn migrate(conn: &mut Connection, migrations: &[Migration], store: &str) -> Result<()> {
    let current: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let latest = migrations.last().map_or(0, |m| m.version);
    if current > latest {
        return Err(Error::Schema(format!(
            "{store} has schema version {current}, written by a newer dpdist; this version knows \
             versions up to {latest} and does not open it"
        )));
    }
    for m in migrations.iter().filter(|m| m.version > current) {
        let tx = conn.transaction()?;
        (m.apply)(&tx)?;
        tx.pragma_update(None, "user_version", m.version)?;
        tx.commit()?;
        tracing::info!(store, version = m.version, "schema: {}", m.what);
    }
    Ok(())
}

/// Adds `column` (of SQL type `kind`) to `table` unless the store already has it. The names are
/// the callers' constants, never input.
pub(crate) fn add_column_if_missing(
    conn: &Connection,
    table: &str,
    column: &str,
    kind: &str,
) -> rusqlite::Result<()> {
    let present: i64 = conn.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get(0),
    )?;
    if present == 0 {
        conn.execute(
            &format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"),
            [],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &[Migration] = &[
        Migration {
            version: 1,
            what: "t",
            apply: |tx| tx.execute_batch("CREATE TABLE IF NOT EXISTS t (a INTEGER);"),
        },
        Migration {
            version: 2,
            what: "t.b",
            apply: |tx| add_column_if_missing(tx, "t", "b", "TEXT"),
        },
    ];

    fn version(conn: &Connection) -> u32 {
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn changes_apply_once_in_order_and_a_newer_store_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, &TWO[..1], "test store").unwrap();
        assert_eq!(version(&conn), 1);
        migrate(&mut conn, TWO, "test store").unwrap();
        migrate(&mut conn, TWO, "test store").unwrap();
        assert_eq!(version(&conn), 2);
        conn.execute("INSERT INTO t (a, b) VALUES (1, 'x')", [])
            .unwrap();
        // A version-0 store that already has part of the layout.
        let mut old = Connection::open_in_memory().unwrap();
        old.execute_batch("CREATE TABLE t (a INTEGER, b TEXT);")
            .unwrap();
        migrate(&mut old, TWO, "old store").unwrap();
        assert_eq!(version(&old), 2);
        conn.pragma_update(None, "user_version", 3).unwrap();
        match migrate(&mut conn, TWO, "test store") {
            Err(Error::Schema(m)) => assert!(m.contains("newer dpdist"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
