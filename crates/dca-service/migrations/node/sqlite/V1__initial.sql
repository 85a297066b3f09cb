-- Rounds, their state, node sums, token hashes and shares with their attempts.
--
-- A round's agreed set and abort live in `node_round_state`, apart from the spec (~70 bytes per
-- client): updating a column of the spec's row would make SQLite read and rewrite the whole
-- row, spec included. The node sum has a row of its own in `node_round_sums`, the blob last, so
-- that a zeroblob inserted there is written page by page (on the agreed set's row the insert
-- became an update that built the whole row in memory). `agreed_sha256` and `sum_sha256` are
-- NULL in rows stored before they were kept: read unchecked.
CREATE TABLE node_rounds (
    id BLOB PRIMARY KEY,
    round INTEGER NOT NULL UNIQUE,
    spec BLOB NOT NULL
);
CREATE TABLE node_round_state (
    id BLOB PRIMARY KEY,
    agreed BLOB,
    aborted TEXT,
    agreed_sha256 BLOB
);
CREATE TABLE node_round_sums (
    id BLOB PRIMARY KEY,
    sum_sha256 BLOB,
    sum BLOB NOT NULL
);
-- 16 hashes (512 bytes) per row: with the key it fits a WITHOUT ROWID b-tree cell, so a lookup
-- reads one page and no overflow chain.
CREATE TABLE node_round_tokens (
    round_id BLOB NOT NULL,
    chunk INTEGER NOT NULL,
    hashes BLOB NOT NULL,
    PRIMARY KEY (round_id, chunk)
) WITHOUT ROWID;
-- A rowid table with a unique index on (round_id, client): a full share's row (~8d bytes)
-- overflows its page, and in a WITHOUT ROWID table every key comparison on the way down the
-- B-tree would read the whole row from its overflow pages. The attempt (`shard`) comes before
-- the message so that reading it never touches a full share's overflow pages; it is NULL in
-- shares stored before attempts were, filled in when the node loads the round.
CREATE TABLE node_shares (
    round_id BLOB NOT NULL,
    client INTEGER NOT NULL,
    shard INTEGER,
    digest BLOB NOT NULL,
    message BLOB NOT NULL,
    UNIQUE (round_id, client)
);
-- The (client, attempt) pairs of a round, read at close and for the received set, from a
-- covering index: scanning the table itself would read every leaf page of node 0's full shares.
CREATE INDEX node_shares_attempts ON node_shares (round_id, client, shard);
