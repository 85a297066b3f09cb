-- The schema that dpdist's aggregator SQLite store had at schema version 3, as the code of that version created it (extracted before the runner changed); used by the upgrade tests.
CREATE TABLE rounds (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT, sha256 BLOB);
CREATE TABLE charges (id TEXT PRIMARY KEY, rho REAL NOT NULL, sha256 BLOB);
CREATE TABLE closes (
                     id TEXT PRIMARY KEY, body BLOB NOT NULL, sha256 BLOB NOT NULL);
CREATE TABLE jobs (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, status BLOB NOT NULL,
                     sha256 BLOB NOT NULL);
CREATE TABLE answers (
                     job TEXT NOT NULL, participant INTEGER NOT NULL, answer BLOB NOT NULL,
                     sha256 BLOB NOT NULL, PRIMARY KEY (job, participant));
CREATE TABLE job_rounds (
                     round TEXT PRIMARY KEY, job TEXT NOT NULL, rho REAL,
                     sha256 BLOB NOT NULL);
PRAGMA user_version = 3;
