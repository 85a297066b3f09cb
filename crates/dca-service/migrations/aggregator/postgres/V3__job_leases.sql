-- A driver lease per job: the process that drives it.
-- Jobs recorded before get a lease held by nobody: the first process to take one finds out
-- whether the job is still live, and marks it ended if not.
CREATE TABLE agg_job_leases (
    seq BIGINT GENERATED ALWAYS AS IDENTITY,
    job_id TEXT PRIMARY KEY REFERENCES agg_jobs (id),
    holder TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    ended BOOLEAN NOT NULL DEFAULT FALSE
);
INSERT INTO agg_job_leases (job_id, holder, expires_ms)
    SELECT id, '', 0 FROM agg_jobs ORDER BY seq;
