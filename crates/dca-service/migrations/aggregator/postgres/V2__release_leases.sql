-- A release lease per closing round: the process that drives its release.
CREATE TABLE agg_release_leases (
    round_id TEXT PRIMARY KEY REFERENCES agg_rounds (id),
    holder TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);
