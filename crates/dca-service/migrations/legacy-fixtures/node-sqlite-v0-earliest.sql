-- The schema that dpdist's node SQLite store had at version 0 (before versions were stored), earliest layout; used by the upgrade tests.
CREATE TABLE rounds (
     id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE, spec BLOB NOT NULL, agreed BLOB, sum BLOB);
CREATE TABLE shares (
     round_id BLOB NOT NULL, client INTEGER NOT NULL, digest BLOB NOT NULL, message BLOB NOT NULL,
     PRIMARY KEY (round_id, client)) WITHOUT ROWID;
PRAGMA user_version = 0;
