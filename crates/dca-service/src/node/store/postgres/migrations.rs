//! The PostgreSQL node store's schema and its changes (see [`crate::db::postgres_tx::migrate`]).

use crate::db::postgres_tx::PgMigration;

pub(super) const NODE_MIGRATIONS: &[PgMigration] = &[
    PgMigration {
        version: 1,
        what: "rounds with their state, token hashes, shares with their attempts, node sums",
        // Shares and sums are random bytes: stored uncompressed (EXTERNAL), which also lets a
        // sum be read in pieces (`substring` reads only the chunks it needs).
        sql: "CREATE TABLE node_rounds (
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
          ALTER TABLE node_round_sums ALTER COLUMN sum SET STORAGE EXTERNAL;",
    },
    PgMigration {
        version: 2,
        what: "a lease per closed round: the replica that computes and stores its node sum",
        sql: "CREATE TABLE node_sum_leases (
              round_id BYTEA PRIMARY KEY REFERENCES node_rounds (id),
              holder TEXT NOT NULL,
              expires_ms BIGINT NOT NULL
          );",
    },
];
