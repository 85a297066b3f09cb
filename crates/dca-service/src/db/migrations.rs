//! The stores' schemas: SQL files under `crates/dca-service/migrations/STORE/BACKEND/`, named
//! `V{n}__{what}.sql`, embedded at build time and run in order at open by refinery, which
//! records every file it applied (version, name, checksum) in the store's history table. The
//! aggregator's and the node's tables carry their role in their names (`agg_*`, `node_*`) on
//! both backends, and so do the history tables, because the two may share one PostgreSQL
//! database. A store whose history holds a file this build lacks, or a changed one, was written
//! by another dpdist and is refused, not guessed at.
//!
//! Refinery rather than a runner per backend: it drives both `rusqlite` 0.37 and the blocking
//! `postgres` 0.19 that the stores use, so one runner serves both and SQLite is linked once.
//!
//! Stores written before the SQL files kept their schema version in SQLite's `user_version` or
//! PostgreSQL's `dpdist_schema` and are taken over once, at open ([`migrate_sqlite`],
//! [`migrate_postgres`]).

use refinery::{Report, Runner, Target};
use rusqlite::Connection;

use crate::db::postgres_tx::PgConnection;
use crate::{Error, Result};

mod embedded {
    pub(super) mod aggregator_sqlite {
        refinery::embed_migrations!("migrations/aggregator/sqlite");
    }
    pub(super) mod aggregator_postgres {
        refinery::embed_migrations!("migrations/aggregator/postgres");
    }
    pub(super) mod node_sqlite {
        refinery::embed_migrations!("migrations/node/sqlite");
    }
    pub(super) mod node_postgres {
        refinery::embed_migrations!("migrations/node/postgres");
    }
}

/// Which service's tables.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Schema {
    Aggregator,
    Node,
}

/// `user_version` of every SQLite store that refinery manages: above any version that the
/// earlier runner wrote, so that an older dpdist refuses the file as "written by a newer
/// dpdist" instead of making its own tables beside these.
const SQLITE_USER_VERSION: u32 = 1000;

/// The key of the advisory lock under which processes starting at once on one PostgreSQL
/// database take turns migrating it (the one the earlier runner took too).
const PG_MIGRATION_LOCK: i64 = 7_243_012_877_761;

impl Schema {
    fn name(self) -> &'static str {
        match self {
            Schema::Aggregator => "aggregator",
            Schema::Node => "node",
        }
    }

    fn history_table(self) -> &'static str {
        match self {
            Schema::Aggregator => "agg_schema_history",
            Schema::Node => "node_schema_history",
        }
    }

    fn runner(self, sqlite: bool) -> Runner {
        let mut runner = match (self, sqlite) {
            (Schema::Aggregator, true) => embedded::aggregator_sqlite::migrations::runner(),
            (Schema::Aggregator, false) => embedded::aggregator_postgres::migrations::runner(),
            (Schema::Node, true) => embedded::node_sqlite::migrations::runner(),
            (Schema::Node, false) => embedded::node_postgres::migrations::runner(),
        };
        runner.set_migration_table_name(self.history_table());
        runner.set_grouped(true)
    }

    /// The last schema version the earlier SQLite runner wrote.
    fn legacy_sqlite_latest(self) -> u32 {
        match self {
            Schema::Aggregator => 6,
            Schema::Node => 2,
        }
    }

    /// The tables of the earlier SQLite layouts (a store with any of them is one of those).
    fn legacy_sqlite_tables(self) -> &'static [&'static str] {
        match self {
            Schema::Aggregator => &[
                "rounds",
                "closes",
                "charges",
                "jobs",
                "answers",
                "job_rounds",
                "release_leases",
                "job_leases",
            ],
            Schema::Node => &[
                "rounds",
                "round_state",
                "round_sums",
                "round_tokens",
                "shares",
            ],
        }
    }

    /// The columns that versions of the earlier SQLite layouts added to tables they had,
    /// added where missing before [`Self::sqlite_from_legacy`] copies the rows.
    fn legacy_sqlite_columns(self) -> &'static [(&'static str, &'static str, &'static str)] {
        match self {
            Schema::Aggregator => &[("rounds", "sha256", "BLOB"), ("charges", "sha256", "BLOB")],
            Schema::Node => &[
                ("rounds", "aborted", "TEXT"),
                ("rounds", "tokens", "BLOB"),
                ("round_state", "agreed_sha256", "BLOB"),
                ("round_sums", "sum_sha256", "BLOB"),
                ("shares", "shard", "INTEGER"),
            ],
        }
    }

    fn sqlite_from_legacy(self) -> &'static str {
        match self {
            Schema::Aggregator => {
                include_str!("../../migrations/aggregator/sqlite-from-legacy.sql")
            }
            Schema::Node => include_str!("../../migrations/node/sqlite-from-legacy.sql"),
        }
    }

    /// The last schema version the earlier PostgreSQL runner wrote in `dpdist_schema`: the
    /// files up to it are that runner's migrations, unchanged.
    fn legacy_postgres_latest(self) -> i32 {
        match self {
            Schema::Aggregator => 4,
            Schema::Node => 2,
        }
    }
}

/// Brings the SQLite store on `conn` up to date; `shown` names it in errors and logs.
///
/// A store of the earlier layouts (unprefixed tables, its version in `user_version`) is taken
/// over once: V1 makes the tables, then [`Schema::sqlite_from_legacy`] moves the rows into them
/// and drops the old tables, in one transaction, before any later file runs. A crash in
/// between leaves the old tables, which the next open moves.
pub(crate) fn migrate_sqlite(conn: &mut Connection, schema: Schema, shown: &str) -> Result<()> {
    let legacy = legacy_sqlite_version(conn, schema, shown)?;
    let mut applied = Vec::new();
    if let Some(version) = legacy {
        let first = schema.runner(true).set_target(Target::Version(1));
        applied.extend(run_sqlite(&first, conn, shown)?);
        let tx = conn.transaction()?;
        for (table, column, kind) in schema.legacy_sqlite_columns() {
            add_column_if_missing(&tx, table, column, kind)?;
        }
        tx.execute_batch(schema.sqlite_from_legacy())?;
        tx.commit()?;
        tracing::info!(
            store = shown,
            from = version,
            "schema: rows moved from the layout of schema version {version}"
        );
    }
    applied.extend(run_sqlite(&schema.runner(true), conn, shown)?);
    conn.pragma_update(None, "user_version", SQLITE_USER_VERSION)?;
    log_applied(shown, &applied);
    Ok(())
}

fn run_sqlite(runner: &Runner, conn: &mut Connection, shown: &str) -> Result<Vec<String>> {
    let report = runner.run(conn).map_err(|e| refused(shown, e))?;
    Ok(names(&report))
}

/// The schema version of a store of the earlier layouts (unprefixed tables), `None` for one of
/// the SQL files' or a new one.
///
/// # Errors
/// [`Error::Schema`] for a version the earlier runner did not know either.
fn legacy_sqlite_version(conn: &Connection, schema: Schema, shown: &str) -> Result<Option<u32>> {
    let mut exists =
        conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?;
    let mut any_old = false;
    for table in schema.legacy_sqlite_tables() {
        any_old |= exists.exists([table])?;
    }
    if !any_old {
        return Ok(None);
    }
    let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let latest = schema.legacy_sqlite_latest();
    if version > latest {
        return Err(Error::Schema(format!(
            "{shown} has schema version {version}, written by a newer dpdist; this version \
             knows versions up to {latest} and does not open it"
        )));
    }
    Ok(Some(version))
}

/// Adds `column` (of SQL type `kind`) to `table` if the table exists without it. The names are
/// the callers' constants, never input.
fn add_column_if_missing(
    conn: &Connection,
    table: &str,
    column: &str,
    kind: &str,
) -> rusqlite::Result<()> {
    let (columns, present): (i64, i64) = conn.query_row(
        "SELECT count(*), count(*) FILTER (WHERE name = ?2) FROM pragma_table_info(?1)",
        [table, column],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if columns > 0 && present == 0 {
        conn.execute(
            &format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"),
            [],
        )?;
    }
    Ok(())
}

/// Brings the PostgreSQL database on `conn` up to date for `schema`'s tables, under an
/// advisory lock that processes starting at once on one database take in turn.
///
/// Tables of the earlier runner (their version in `dpdist_schema`) are the files up to that
/// version, unchanged: those are recorded as applied without running them, the later ones run,
/// and the old version row goes.
pub(crate) fn migrate_postgres(conn: &mut PgConnection, schema: Schema, shown: &str) -> Result<()> {
    let client = conn.client()?;
    client.execute("SELECT pg_advisory_lock($1)", &[&PG_MIGRATION_LOCK])?;
    let outcome = migrate_postgres_locked(client, schema, shown);
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&PG_MIGRATION_LOCK]);
    let applied = outcome?;
    unlocked?;
    log_applied(shown, &applied);
    Ok(())
}

fn migrate_postgres_locked(
    client: &mut postgres::Client,
    schema: Schema,
    shown: &str,
) -> Result<Vec<String>> {
    let history: bool = client
        .query_one(
            "SELECT to_regclass($1) IS NOT NULL",
            &[&schema.history_table()],
        )?
        .get(0);
    let old_schema_table: bool = client
        .query_one("SELECT to_regclass('dpdist_schema') IS NOT NULL", &[])?
        .get(0);
    let legacy: Option<i32> = if old_schema_table {
        client
            .query_opt(
                "SELECT version FROM dpdist_schema WHERE component = $1",
                &[&schema.name()],
            )?
            .map(|r| r.get(0))
    } else {
        None
    };
    if let (Some(version), false) = (legacy, history) {
        let latest = schema.legacy_postgres_latest();
        if version > latest {
            return Err(Error::Schema(format!(
                "{shown}: the {} tables have schema version {version}, written by a newer \
                 dpdist; this version knows versions up to {latest} and does not open them",
                schema.name()
            )));
        }
        schema
            .runner(false)
            .set_target(Target::FakeVersion(version))
            .run(client)
            .map_err(|e| refused(shown, e))?;
        tracing::info!(
            store = shown,
            version,
            "schema: the {} tables of schema version {version} taken over",
            schema.name()
        );
    }
    let report = schema
        .runner(false)
        .run(client)
        .map_err(|e| refused(shown, e))?;
    if legacy.is_some() {
        client.execute(
            "DELETE FROM dpdist_schema WHERE component = $1",
            &[&schema.name()],
        )?;
        client.batch_execute(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT 1 FROM dpdist_schema) THEN DROP TABLE dpdist_schema; END IF;
             END $$",
        )?;
    }
    Ok(names(&report))
}

fn names(report: &Report) -> Vec<String> {
    report
        .applied_migrations()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn log_applied(shown: &str, applied: &[String]) {
    for migration in applied {
        tracing::info!(store = shown, "schema: applied {migration}");
    }
}

/// A refusal of the runner: most often a store that another dpdist migrated (its history names
/// a file this build lacks, or a changed one).
fn refused(shown: &str, e: refinery::Error) -> Error {
    Error::Schema(format!(
        "{shown}: {e}; a store migrated by a newer dpdist is not opened by this version"
    ))
}

/// Checks of a store taken over from the earlier layouts, for the stores' upgrade tests.
#[cfg(test)]
pub(crate) mod taken_over {
    /// Asserts that the SQLite file at `path` has no table but `schema`'s (the old ones are
    /// gone).
    pub(crate) fn only_new_sqlite_tables(
        path: &std::path::Path,
        schema: super::Schema,
        what: &str,
    ) {
        let prefix = match schema {
            super::Schema::Aggregator => "agg_",
            super::Schema::Node => "node_",
        };
        let conn = rusqlite::Connection::open(path).unwrap();
        let others: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master
                 WHERE type = 'table' AND substr(name, 1, length(?1)) <> ?1",
            )
            .unwrap()
            .query_map([prefix], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(others.is_empty(), "{what}: tables {others:?} left");
    }

    /// Asserts that the PostgreSQL database has no `dpdist_schema` left.
    pub(crate) fn no_old_version_table(db: &mut postgres::Client, what: &str) {
        let old: bool = db
            .query_one("SELECT to_regclass('dpdist_schema') IS NOT NULL", &[])
            .unwrap()
            .get(0);
        assert!(!old, "{what}: the old version table is left");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(conn: &Connection, table: &str) -> Vec<(i64, String)> {
        conn.prepare(&format!(
            "SELECT version, name FROM {table} ORDER BY version"
        ))
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    #[test]
    fn files_apply_once_and_a_store_of_a_newer_dpdist_is_refused() {
        for schema in [Schema::Aggregator, Schema::Node] {
            let mut conn = Connection::open_in_memory().unwrap();
            migrate_sqlite(&mut conn, schema, "test store").unwrap();
            migrate_sqlite(&mut conn, schema, "test store").unwrap();
            let table = schema.history_table();
            let mut files = vec![(1, "initial".to_string())];
            if matches!(schema, Schema::Aggregator) {
                files.push((2, "truncation_delta".to_string()));
            }
            assert_eq!(history(&conn, table), files);
            let version: u32 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            assert_eq!(version, SQLITE_USER_VERSION);
            conn.execute(
                &format!(
                    "INSERT INTO {table} (version, name, applied_on, checksum)
                     VALUES (99, 'later', '2030-01-01T00:00:00Z', '1')"
                ),
                [],
            )
            .unwrap();
            match migrate_sqlite(&mut conn, schema, "test store") {
                Err(Error::Schema(m)) => {
                    assert!(
                        m.contains("V99__later") && m.contains("newer dpdist"),
                        "{m}"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_old_layout_of_a_version_unknown_then_too_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE rounds (id TEXT PRIMARY KEY); PRAGMA user_version = 7;")
            .unwrap();
        match migrate_sqlite(&mut conn, Schema::Aggregator, "old store") {
            Err(Error::Schema(m)) => assert!(m.contains("version 7") && m.contains("newer"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
