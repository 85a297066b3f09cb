-- The schema that dpdist's node PostgreSQL store had at schema version 1, as the code of that version
-- created it (extracted before the runner changed); used by the upgrade tests.
CREATE TABLE IF NOT EXISTS dpdist_schema (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
CREATE TABLE node_rounds (
              id BYTEA PRIMARY KEY CHECK (length(id) = 32),
              round BIGINT NOT NULL UNIQUE,
              spec BYTEA NOT NULL,
              state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed', 'aborted')),
              aborted TEXT,
              agreed BYTEA,
              agreed_sha256 BYTEA
          );
          CREATE TABLE node_round_tokens (
              round_id BYTEA NOT NULL REFERENCES node_rounds (id),
              chunk BIGINT NOT NULL,
              hashes BYTEA NOT NULL,
              PRIMARY KEY (round_id, chunk)
          );
          CREATE TABLE node_shares (
              round_id BYTEA NOT NULL REFERENCES node_rounds (id),
              client BIGINT NOT NULL,
              shard BIGINT NOT NULL,
              digest BYTEA NOT NULL,
              message BYTEA NOT NULL,
              PRIMARY KEY (round_id, client)
          );
          ALTER TABLE node_shares ALTER COLUMN message SET STORAGE EXTERNAL;
          CREATE INDEX node_shares_attempts ON node_shares (round_id, client) INCLUDE (shard);
          CREATE TABLE node_round_sums (
              id BYTEA PRIMARY KEY REFERENCES node_rounds (id),
              sum_sha256 BYTEA NOT NULL,
              sum BYTEA NOT NULL
          );
          ALTER TABLE node_round_sums ALTER COLUMN sum SET STORAGE EXTERNAL;
INSERT INTO dpdist_schema (component, version) VALUES ('node', 1);
