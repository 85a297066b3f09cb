-- The one data migration from the layouts of stores written before the SQL files (schema
-- versions 0 to 2 in `PRAGMA user_version`, unprefixed table names): run once, after V1, in one
-- transaction, once the columns that later versions added exist (`crate::migrations`). The
-- tables a store of that version did not have yet are made empty first.
--
-- Those layouts kept a round's agreed set, node sum and abort in `rounds`, later in
-- `round_state`, the node sum later still in `round_sums`, and a round's token hashes in one
-- blob of its `rounds` row: each is moved to where this layout keeps it, the newest place
-- first (as the code of those versions read them).
CREATE TABLE IF NOT EXISTS rounds (
    id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE, spec BLOB NOT NULL, agreed BLOB, sum BLOB,
    aborted TEXT, tokens BLOB);
CREATE TABLE IF NOT EXISTS round_state (
    id BLOB PRIMARY KEY, agreed BLOB, sum BLOB, aborted TEXT, agreed_sha256 BLOB);
CREATE TABLE IF NOT EXISTS round_sums (id BLOB PRIMARY KEY, sum BLOB NOT NULL, sum_sha256 BLOB);
CREATE TABLE IF NOT EXISTS round_tokens (
    round_id BLOB NOT NULL, chunk INTEGER NOT NULL, hashes BLOB NOT NULL,
    PRIMARY KEY (round_id, chunk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shares (
    round_id BLOB NOT NULL, client INTEGER NOT NULL, shard INTEGER, digest BLOB NOT NULL,
    message BLOB NOT NULL, UNIQUE (round_id, client));

INSERT INTO node_rounds (id, round, spec) SELECT id, round, spec FROM rounds ORDER BY rowid;

INSERT INTO node_round_state (id, agreed, aborted, agreed_sha256)
    SELECT id, agreed, aborted, CASE WHEN agreed IS NOT NULL THEN agreed_sha256 END
    FROM round_state WHERE agreed IS NOT NULL OR aborted IS NOT NULL;
INSERT INTO node_round_state (id, agreed, aborted)
    SELECT id, agreed, aborted FROM rounds WHERE agreed IS NOT NULL OR aborted IS NOT NULL
    ON CONFLICT (id) DO UPDATE SET
        agreed = CASE WHEN agreed IS NULL THEN excluded.agreed ELSE agreed END,
        agreed_sha256 = CASE WHEN agreed IS NULL THEN NULL ELSE agreed_sha256 END,
        aborted = COALESCE(aborted, excluded.aborted);

INSERT INTO node_round_sums (id, sum_sha256, sum) SELECT id, sum_sha256, sum FROM round_sums;
INSERT OR IGNORE INTO node_round_sums (id, sum)
    SELECT id, sum FROM round_state WHERE sum IS NOT NULL;
INSERT OR IGNORE INTO node_round_sums (id, sum) SELECT id, sum FROM rounds WHERE sum IS NOT NULL;

INSERT INTO node_round_tokens (round_id, chunk, hashes)
    SELECT round_id, chunk, hashes FROM round_tokens;
-- A token blob in chunks of 16 hashes (512 bytes), as the node writes them.
INSERT OR IGNORE INTO node_round_tokens (round_id, chunk, hashes)
    WITH RECURSIVE chunks (k) AS (
        SELECT 0
        UNION ALL
        SELECT k + 1 FROM chunks
        WHERE (k + 1) * 512 < (SELECT max(length(tokens)) FROM rounds)
    )
    SELECT r.id, chunks.k, substr(r.tokens, chunks.k * 512 + 1, 512)
    FROM rounds r JOIN chunks ON chunks.k * 512 < length(r.tokens)
    WHERE r.tokens IS NOT NULL;

INSERT INTO node_shares (round_id, client, shard, digest, message)
    SELECT round_id, client, shard, digest, message FROM shares ORDER BY round_id, client;

DROP TABLE rounds;
DROP TABLE round_state;
DROP TABLE round_sums;
DROP TABLE round_tokens;
DROP TABLE shares;
