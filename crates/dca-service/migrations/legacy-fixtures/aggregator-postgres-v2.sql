-- The schema that dpdist's aggregator PostgreSQL store had at schema version 2, as the code of that version
-- created it (extracted before the runner changed); used by the upgrade tests.
CREATE TABLE IF NOT EXISTS dpdist_schema (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
CREATE TABLE agg_rounds (
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
          );
CREATE TABLE agg_release_leases (
                  round_id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
                  holder TEXT NOT NULL,
                  expires_ms BIGINT NOT NULL
              );
INSERT INTO dpdist_schema (component, version) VALUES ('aggregator', 2);
