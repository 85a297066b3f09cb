-- A lease per closed round: the replica that computes and stores its node sum.
CREATE TABLE node_sum_leases (
    round_id BYTEA PRIMARY KEY REFERENCES node_rounds (id),
    holder TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);
