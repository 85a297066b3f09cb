-- Rounds with their state, agreed sets and charges (each row with the SHA-256 of its content),
-- jobs with their participants' answers and rounds, release leases per closing round and
-- driver leases per job. A round whose release became impossible ends as 'failed'.
-- `sha256` of rounds and charges is NULL in rows recorded before rows carried one: read
-- unchecked. Rows list in rowid order, the order they were written in.
CREATE TABLE agg_rounds (
    id TEXT PRIMARY KEY,
    spec BLOB NOT NULL,
    state TEXT NOT NULL,
    detail TEXT,
    sha256 BLOB
);
CREATE TABLE agg_closes (id TEXT PRIMARY KEY, body BLOB NOT NULL, sha256 BLOB NOT NULL);
CREATE TABLE agg_charges (id TEXT PRIMARY KEY, rho REAL NOT NULL, sha256 BLOB);
CREATE TABLE agg_jobs (
    id TEXT PRIMARY KEY,
    spec BLOB NOT NULL,
    status BLOB NOT NULL,
    sha256 BLOB NOT NULL
);
CREATE TABLE agg_answers (
    job TEXT NOT NULL,
    participant INTEGER NOT NULL,
    answer BLOB NOT NULL,
    sha256 BLOB NOT NULL,
    PRIMARY KEY (job, participant)
);
CREATE TABLE agg_job_rounds (
    round TEXT PRIMARY KEY,
    job TEXT NOT NULL,
    rho REAL,
    sha256 BLOB NOT NULL
);
CREATE TABLE agg_release_leases (
    round_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE agg_job_leases (
    job_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0
);
