//! Every schema version that stores were written with before the SQL files, on both backends:
//! the schema as that version made it (`migrations/legacy-fixtures/`), a few rows of each kind
//! it had, written as that version wrote them, then opened by this version and read back
//! through the store.

use super::digests::close_sha256;
use super::tx::{AnswerRow, ChargeRow, JobRoundRow, JobRow, RoundRow};
use super::{AggregatorStore, AggregatorStoreLocation, RoundPhase};
use crate::db::migrations::Schema;
use crate::db::migrations::taken_over::{no_old_version_table, only_new_sqlite_tables};

/// What a store of one old version had.
struct Layout {
    /// `agg_` on PostgreSQL, none on SQLite.
    prefix: &'static str,
    /// Rows carry their SHA-256; agreed sets are recorded.
    sha256: bool,
    jobs: bool,
    release_leases: bool,
    job_leases: bool,
    failed_rounds: bool,
}

impl Layout {
    fn sqlite(version: u32) -> Layout {
        Layout {
            prefix: "",
            sha256: version >= 2,
            jobs: version >= 3,
            release_leases: version >= 4,
            job_leases: version >= 5,
            failed_rounds: version >= 6,
        }
    }

    fn postgres(version: u32) -> Layout {
        Layout {
            prefix: "agg_",
            sha256: true,
            jobs: true,
            release_leases: version >= 2,
            job_leases: version >= 3,
            failed_rounds: version >= 4,
        }
    }
}

/// A value of a row as either backend binds it.
enum Value {
    Text(Option<String>),
    Blob(Vec<u8>),
    Int(i64),
    Real(Option<f64>),
}

fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

/// Inserts `values` into `table` (named without its prefix).
type Insert<'a> = dyn FnMut(&str, &[&str], Vec<Value>) + 'a;

fn write_rows(layout: &Layout, insert: &mut Insert<'_>) {
    let p = layout.prefix;
    let mut round = |id: &str, phase: RoundPhase, detail: Option<&str>| {
        let row = RoundRow::sealed(
            id,
            format!("{{\"round\":\"{id}\"}}").into_bytes(),
            phase,
            detail,
        );
        let mut columns = vec!["id", "spec", "state", "detail"];
        let mut values = vec![
            text(id),
            Value::Blob(row.spec),
            text(phase.as_str()),
            Value::Text(row.detail),
        ];
        if layout.sha256 {
            columns.push("sha256");
            values.push(Value::Blob(row.sha256.unwrap_or_default()));
        }
        insert(&format!("{p}rounds"), &columns, values);
    };
    round("r1", RoundPhase::Released, Some("{\"sum\":[1]}"));
    round("r2", RoundPhase::Closing, None);
    if layout.failed_rounds {
        round("r3", RoundPhase::Failed, Some("node 1 lost it"));
    }
    for (id, rho) in [("r1", 0.25), ("r2", 0.125)] {
        let row = ChargeRow::sealed(id, rho, 0.0);
        let mut columns = vec!["id", "rho"];
        let mut values = vec![text(id), Value::Real(Some(rho))];
        if layout.sha256 {
            columns.push("sha256");
            values.push(Value::Blob(row.sha256.unwrap_or_default()));
        }
        insert(&format!("{p}charges"), &columns, values);
    }
    if layout.sha256 {
        insert(
            &format!("{p}closes"),
            &["id", "body", "sha256"],
            vec![
                text("r2"),
                Value::Blob(b"agreed".to_vec()),
                Value::Blob(close_sha256(b"agreed").to_vec()),
            ],
        );
    }
    if layout.jobs {
        let job = JobRow::sealed("j", b"{\"job\":1}".to_vec(), b"{\"state\":1}".to_vec());
        insert(
            &format!("{p}jobs"),
            &["id", "spec", "status", "sha256"],
            vec![
                text("j"),
                Value::Blob(job.spec),
                Value::Blob(job.status),
                Value::Blob(job.sha256),
            ],
        );
        let answer = AnswerRow::sealed("j", 3, b"yes".to_vec());
        insert(
            &format!("{p}answers"),
            &["job", "participant", "answer", "sha256"],
            vec![
                text("j"),
                Value::Int(3),
                Value::Blob(answer.answer),
                Value::Blob(answer.sha256),
            ],
        );
        let linked = JobRoundRow::sealed("r1", "j", Some(0.25));
        insert(
            &format!("{p}job_rounds"),
            &["round", "job", "rho", "sha256"],
            vec![
                text("r1"),
                text("j"),
                Value::Real(linked.rho),
                Value::Blob(linked.sha256),
            ],
        );
    }
    if layout.release_leases {
        insert(
            &format!("{p}release_leases"),
            &["round_id", "holder", "expires_ms"],
            vec![text("r2"), text("old"), Value::Int(123)],
        );
    }
    if layout.job_leases {
        insert(
            &format!("{p}job_leases"),
            &["job_id", "holder", "expires_ms"],
            vec![text("j"), text("driver"), Value::Int(456)],
        );
    }
}

/// Reads every row back through the store.
fn check_rows(store: &AggregatorStore, layout: &Layout, what: &str) {
    let mut rounds = vec![
        ("r1".to_string(), RoundPhase::Released),
        ("r2".to_string(), RoundPhase::Closing),
    ];
    if layout.failed_rounds {
        rounds.push(("r3".to_string(), RoundPhase::Failed));
    }
    assert_eq!(store.ids_in(&RoundPhase::ALL).unwrap(), rounds, "{what}");
    let specs = store.specs_in(&RoundPhase::ALL).unwrap();
    assert_eq!(
        specs[1],
        ("r2".to_string(), b"{\"round\":\"r2\"}".to_vec()),
        "{what}"
    );
    assert_eq!(store.charges().unwrap(), [0.25, 0.125], "{what}");
    let close = store.close_body("r2").unwrap();
    assert_eq!(
        close.as_deref(),
        layout.sha256.then_some(&b"agreed"[..]),
        "{what}"
    );
    if layout.jobs {
        assert_eq!(
            store.job("j").unwrap(),
            Some((b"{\"job\":1}".to_vec(), b"{\"state\":1}".to_vec())),
            "{what}"
        );
        assert_eq!(
            store.answers("j").unwrap(),
            [(3, b"yes".to_vec())],
            "{what}"
        );
        assert_eq!(
            store.job_of_round("r1").unwrap().as_deref(),
            Some("j"),
            "{what}"
        );
        // A job recorded before driver leases has one held by nobody.
        let holder = if layout.job_leases { "driver" } else { "" };
        let lease = store.job_lease("j").unwrap().expect("a driver lease");
        assert_eq!((lease.0.as_str(), lease.2), (holder, false), "{what}");
    } else {
        assert!(store.job_ids().unwrap().is_empty(), "{what}");
    }
    let lease = store.release_lease("r2").unwrap();
    assert_eq!(
        lease.map(|l| l.0),
        layout.release_leases.then(|| "old".to_string()),
        "{what}"
    );
    // The store goes on working: a new round and a charge beside the old ones.
    store.insert_round("r9", b"{}").unwrap();
    assert!(
        store
            .begin_close("r9", b"set", Some(0.5), |_| Ok(()))
            .unwrap()
    );
    assert_eq!(store.charges().unwrap(), [0.25, 0.125, 0.5], "{what}");
}

const SQLITE_FIXTURES: &[(u32, &str)] = &[
    (
        0,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v0.sql"),
    ),
    (
        1,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v1.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v2.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v3.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v4.sql"),
    ),
    (
        5,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v5.sql"),
    ),
    (
        6,
        include_str!("../../../migrations/legacy-fixtures/aggregator-sqlite-v6.sql"),
    ),
];

const POSTGRES_FIXTURES: &[(u32, &str)] = &[
    (
        1,
        include_str!("../../../migrations/legacy-fixtures/aggregator-postgres-v1.sql"),
    ),
    (
        2,
        include_str!("../../../migrations/legacy-fixtures/aggregator-postgres-v2.sql"),
    ),
    (
        3,
        include_str!("../../../migrations/legacy-fixtures/aggregator-postgres-v3.sql"),
    ),
    (
        4,
        include_str!("../../../migrations/legacy-fixtures/aggregator-postgres-v4.sql"),
    ),
];

fn insert_sql(table: &str, columns: &[&str]) -> String {
    let marks: Vec<String> = (1..=columns.len()).map(|k| format!("${k}")).collect();
    format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    )
}

#[test]
fn every_old_sqlite_version_opens_with_its_rows() {
    for &(version, schema) in SQLITE_FIXTURES {
        let path = crate::db::postgres_test_db::sqlite_file(
            &format!("agg-upgrade-v{version}"),
            "agg.sqlite",
        );
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(schema).unwrap();
            let layout = Layout::sqlite(version);
            write_rows(&layout, &mut |table, columns, values| {
                let values: Vec<rusqlite::types::Value> = values
                    .into_iter()
                    .map(|v| match v {
                        Value::Text(t) => t.map_or(rusqlite::types::Value::Null, Into::into),
                        Value::Blob(b) => b.into(),
                        Value::Int(i) => i.into(),
                        Value::Real(r) => r.map_or(rusqlite::types::Value::Null, Into::into),
                    })
                    .collect();
                conn.execute(
                    &insert_sql(table, columns),
                    rusqlite::params_from_iter(values),
                )
                .unwrap();
            });
        }
        let what = format!("SQLite schema version {version}");
        let at = AggregatorStoreLocation::Sqlite(path.clone());
        let store = AggregatorStore::open(&at).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_rows(&store, &Layout::sqlite(version), &what);
        drop(store);
        drop(AggregatorStore::open(&at).unwrap());
        only_new_sqlite_tables(&path, Schema::Aggregator, &what);
    }
}

#[test]
fn every_old_postgres_version_opens_with_its_rows() {
    for &(version, schema) in POSTGRES_FIXTURES {
        let Some(db) = super::pg_test_db(&format!("upgrade_v{version}")) else {
            return;
        };
        let (schema, layout) = (schema.to_string(), Layout::postgres(version));
        let mut rows: Vec<(String, Vec<Value>)> = Vec::new();
        write_rows(&layout, &mut |table, columns, values| {
            rows.push((insert_sql(table, columns), values));
        });
        let mut c = db.connect();
        c.batch_execute(&schema).unwrap();
        for (sql, values) in rows {
            let params: Vec<Box<dyn postgres::types::ToSql + Sync>> = values
                .into_iter()
                .map(|v| -> Box<dyn postgres::types::ToSql + Sync> {
                    match v {
                        Value::Text(t) => Box::new(t),
                        Value::Blob(b) => Box::new(b),
                        Value::Int(i) => Box::new(i),
                        Value::Real(r) => Box::new(r),
                    }
                })
                .collect();
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p.as_ref()).collect();
            c.execute(sql.as_str(), &refs).unwrap();
        }
        drop(c);
        let what = format!("PostgreSQL schema version {version}");
        let store = AggregatorStore::open(&db.location()).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_rows(&store, &layout, &what);
        drop(store);
        drop(AggregatorStore::open(&db.location()).unwrap());
        no_old_version_table(&mut db.connect(), &what);
    }
}
