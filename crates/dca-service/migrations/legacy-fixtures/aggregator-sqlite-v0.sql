-- The schema that dpdist's aggregator SQLite store had at version 0 (before versions were stored); used by the upgrade tests.
CREATE TABLE rounds (id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT);
CREATE TABLE charges (id TEXT PRIMARY KEY, rho REAL NOT NULL);
PRAGMA user_version = 0;
