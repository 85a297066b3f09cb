-- The schema that dpdist's aggregator SQLite store had at schema version 1, as the code of that version created it (extracted before the runner changed); used by the upgrade tests.
CREATE TABLE rounds (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT);
CREATE TABLE charges (id TEXT PRIMARY KEY, rho REAL NOT NULL);
PRAGMA user_version = 1;
