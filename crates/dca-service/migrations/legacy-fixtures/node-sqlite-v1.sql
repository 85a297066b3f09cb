-- The schema that dpdist's node SQLite store had at schema version 1, as the code of that version created it (extracted before the runner changed); used by the upgrade tests.
CREATE TABLE rounds (
                 id BLOB PRIMARY KEY,
                 round INTEGER NOT NULL UNIQUE,
                 spec BLOB NOT NULL,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             , tokens BLOB);
CREATE TABLE round_state (
                 id BLOB PRIMARY KEY,
                 agreed BLOB,
                 sum BLOB,
                 aborted TEXT
             );
CREATE TABLE round_sums (
                 id BLOB PRIMARY KEY,
                 sum BLOB NOT NULL
             );
CREATE TABLE round_tokens (
                 round_id BLOB NOT NULL,
                 chunk INTEGER NOT NULL,
                 hashes BLOB NOT NULL,
                 PRIMARY KEY (round_id, chunk)
             ) WITHOUT ROWID;
CREATE TABLE shares (
                 round_id BLOB NOT NULL,
                 client INTEGER NOT NULL,
                 shard INTEGER,
                 digest BLOB NOT NULL,
                 message BLOB NOT NULL,
                 UNIQUE (round_id, client)
             );
CREATE INDEX shares_attempts ON shares (round_id, client, shard);
PRAGMA user_version = 1;
