-- A round whose release became impossible ends as 'failed', with the cause.
ALTER TABLE agg_rounds DROP CONSTRAINT IF EXISTS agg_rounds_state_check;
ALTER TABLE agg_rounds ADD CONSTRAINT agg_rounds_state_check CHECK (state IN
    ('created', 'closing', 'aborting', 'aborted', 'released', 'failed'));
