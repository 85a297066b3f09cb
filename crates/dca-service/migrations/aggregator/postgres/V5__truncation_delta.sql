-- δ_t of a verified round's truncated noise, charged with its ρ (0 for every other charge, and
-- for every charge recorded before).
ALTER TABLE agg_charges ADD COLUMN truncation_delta DOUBLE PRECISION NOT NULL DEFAULT 0;
