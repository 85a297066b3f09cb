//! The aggregator's tables on PostgreSQL, version by version.

use crate::Result;
use crate::db::postgres_tx::{self, PgConnection, PgMigration};

const AGGREGATOR_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        what: "rounds with their state, agreed sets, charges and the budget's lock, jobs, answers",
        // `seq` keeps the order rows were written in (SQLite's rowid): charges replay, and
        // rounds and jobs list, oldest first.
        sql: "CREATE TABLE agg_rounds (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              spec BYTEA NOT NULL,
              state TEXT NOT NULL
                  CHECK (state IN ('created', 'closing', 'aborting', 'aborted', 'released')),
              detail TEXT,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_closes (
              id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
              body BYTEA NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_charges (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              rho DOUBLE PRECISION NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_budget (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one));
          INSERT INTO agg_budget VALUES (TRUE);
          CREATE TABLE agg_jobs (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              id TEXT PRIMARY KEY,
              spec BYTEA NOT NULL,
              status BYTEA NOT NULL,
              sha256 BYTEA NOT NULL
          );
          CREATE TABLE agg_answers (
              job TEXT NOT NULL,
              participant BIGINT NOT NULL,
              answer BYTEA NOT NULL,
              sha256 BYTEA NOT NULL,
              PRIMARY KEY (job, participant)
          );
          CREATE TABLE agg_job_rounds (
              seq BIGINT GENERATED ALWAYS AS IDENTITY,
              round TEXT PRIMARY KEY,
              job TEXT NOT NULL,
              rho DOUBLE PRECISION,
              sha256 BYTEA NOT NULL
          );",
    },
    PgMigration {
        version: 2,
        what: "a release lease per closing round: the process that drives its release",
        sql: "CREATE TABLE agg_release_leases (
                  round_id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
                  holder TEXT NOT NULL,
                  expires_ms BIGINT NOT NULL
              );",
    },
    PgMigration {
        version: 3,
        what: "a driver lease per job: the process that drives it",
        // Jobs recorded before get a lease held by nobody: the first process to take one
        // finds out whether the job is still live, and marks it ended if not.
        sql: "CREATE TABLE agg_job_leases (
                  seq BIGINT GENERATED ALWAYS AS IDENTITY,
                  job_id TEXT PRIMARY KEY REFERENCES agg_jobs (id),
                  holder TEXT NOT NULL,
                  expires_ms BIGINT NOT NULL,
                  ended BOOLEAN NOT NULL DEFAULT FALSE
              );
              INSERT INTO agg_job_leases (job_id, holder, expires_ms)
                  SELECT id, '', 0 FROM agg_jobs ORDER BY seq;",
    },
    PgMigration {
        version: 4,
        what: "a round whose release became impossible ends as 'failed', with the cause",
        sql: "ALTER TABLE agg_rounds DROP CONSTRAINT IF EXISTS agg_rounds_state_check;
              ALTER TABLE agg_rounds ADD CONSTRAINT agg_rounds_state_check CHECK (state IN
                  ('created', 'closing', 'aborting', 'aborted', 'released', 'failed'));",
    },
];

/// Applies the aggregator's migrations the database lacks (row `aggregator` of
/// `dpdist_schema`, under the advisory lock the node's store takes too).
pub(super) fn migrate(conn: &mut PgConnection, shown: &str) -> Result<()> {
    postgres_tx::migrate(conn, "aggregator", shown, AGGREGATOR_MIGRATIONS)
}
