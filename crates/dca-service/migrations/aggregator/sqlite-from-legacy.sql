-- The one data migration from the layouts of stores written before the SQL files (schema
-- versions 0 to 6 in `PRAGMA user_version`, unprefixed table names): run once, after V1, in one
-- transaction, once the columns that later versions added exist (`crate::migrations`). The
-- tables a store of that version did not have yet are made empty first; rows keep their order.
CREATE TABLE IF NOT EXISTS rounds (
    id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT, sha256 BLOB);
CREATE TABLE IF NOT EXISTS charges (id TEXT PRIMARY KEY, rho REAL NOT NULL, sha256 BLOB);
CREATE TABLE IF NOT EXISTS closes (id TEXT PRIMARY KEY, body BLOB NOT NULL, sha256 BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, spec BLOB NOT NULL, status BLOB NOT NULL, sha256 BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    job TEXT NOT NULL, participant INTEGER NOT NULL, answer BLOB NOT NULL,
    sha256 BLOB NOT NULL, PRIMARY KEY (job, participant));
CREATE TABLE IF NOT EXISTS job_rounds (
    round TEXT PRIMARY KEY, job TEXT NOT NULL, rho REAL, sha256 BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS release_leases (
    round_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS job_leases (
    job_id TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_ms INTEGER NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0);

INSERT INTO agg_rounds (id, spec, state, detail, sha256)
    SELECT id, spec, state, detail, sha256 FROM rounds ORDER BY rowid;
INSERT INTO agg_closes (id, body, sha256) SELECT id, body, sha256 FROM closes ORDER BY rowid;
INSERT INTO agg_charges (id, rho, sha256) SELECT id, rho, sha256 FROM charges ORDER BY rowid;
INSERT INTO agg_jobs (id, spec, status, sha256)
    SELECT id, spec, status, sha256 FROM jobs ORDER BY rowid;
INSERT INTO agg_answers (job, participant, answer, sha256)
    SELECT job, participant, answer, sha256 FROM answers ORDER BY rowid;
INSERT INTO agg_job_rounds (round, job, rho, sha256)
    SELECT round, job, rho, sha256 FROM job_rounds ORDER BY rowid;
INSERT INTO agg_release_leases (round_id, holder, expires_ms)
    SELECT round_id, holder, expires_ms FROM release_leases ORDER BY rowid;
INSERT INTO agg_job_leases (job_id, holder, expires_ms, ended)
    SELECT job_id, holder, expires_ms, ended FROM job_leases ORDER BY rowid;
-- Jobs recorded before driver leases get one held by nobody: the first driver to take it finds
-- out whether the job is still live, and marks it ended if not.
INSERT INTO agg_job_leases (job_id, holder, expires_ms)
    SELECT id, '', 0 FROM jobs WHERE id NOT IN (SELECT job_id FROM job_leases) ORDER BY rowid;

DROP TABLE rounds;
DROP TABLE closes;
DROP TABLE charges;
DROP TABLE jobs;
DROP TABLE answers;
DROP TABLE job_rounds;
DROP TABLE release_leases;
DROP TABLE job_leases;
