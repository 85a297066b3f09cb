//! The aggregator's rows on PostgreSQL: SQL and row mapping only (the rules are above, in
//! `aggregator_store`). A `lock_*` read is `SELECT … FOR UPDATE`.

use postgres::types::ToSql;
use postgres::{Row, Transaction};

use crate::aggregator::store::RoundPhase;
use crate::aggregator::store::tx::{
    AggTx, AnswerRow, ChargeRow, JobLease, JobRoundRow, JobRow, Lease, RoundRow,
};
use crate::db::postgres_tx::{TxError, cause};
use crate::{Error, Result};

/// The rows of one try of a transaction, and the PostgreSQL error that ended it, if one did:
/// the retry loop decides on that error, not on what the rules made of it.
pub(super) struct PgRows<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    failure: Option<postgres::Error>,
}

const ROUND: &str = "SELECT id, spec, state, detail, sha256 FROM agg_rounds";
const JOB: &str = "SELECT id, spec, status, sha256 FROM agg_jobs";
const ANSWER: &str = "SELECT job, participant, answer, sha256 FROM agg_answers";
const JOB_ROUND: &str = "SELECT round, job, rho, sha256 FROM agg_job_rounds";
const CHARGE: &str = "SELECT id, rho, truncation_delta, sha256 FROM agg_charges";

fn round(r: &Row) -> Result<RoundRow> {
    Ok(RoundRow {
        id: r.get(0),
        spec: r.get(1),
        state: RoundPhase::parse(r.get(2))?,
        detail: r.get(3),
        sha256: r.get(4),
    })
}

fn job(r: &Row) -> Result<JobRow> {
    Ok(JobRow {
        id: r.get(0),
        spec: r.get(1),
        status: r.get(2),
        sha256: r.get(3),
    })
}

fn answer(r: &Row) -> Result<AnswerRow> {
    Ok(AnswerRow {
        job: r.get(0),
        index: r.get::<_, i64>(1) as usize,
        answer: r.get(2),
        sha256: r.get(3),
    })
}

fn job_round(r: &Row) -> Result<JobRoundRow> {
    Ok(JobRoundRow {
        round: r.get(0),
        job: r.get(1),
        rho: r.get(2),
        sha256: r.get(3),
    })
}

fn charge(r: &Row) -> Result<ChargeRow> {
    Ok(ChargeRow {
        id: r.get(0),
        rho: r.get(1),
        truncation_delta: r.get(2),
        sha256: r.get(3),
    })
}

fn lease(r: &Row) -> Result<Lease> {
    Ok(Lease {
        holder: r.get(0),
        expires_ms: r.get::<_, i64>(1) as u64,
    })
}

fn job_lease(r: &Row) -> Result<JobLease> {
    Ok(JobLease {
        lease: lease(r)?,
        ended: r.get(2),
    })
}

impl<'a, 'b> PgRows<'a, 'b> {
    pub(super) fn new(tx: &'a mut Transaction<'b>) -> Self {
        PgRows { tx, failure: None }
    }

    /// The error that ends this try: PostgreSQL's if a statement failed, else `e`.
    pub(super) fn into_failure(self, e: Error) -> TxError {
        match self.failure {
            Some(pg) => TxError::Pg(pg),
            None => TxError::Other(e),
        }
    }

    fn failed(&mut self, e: postgres::Error) -> Error {
        let shown = Error::Postgres(cause(&e));
        self.failure = Some(e);
        shown
    }

    fn all<T>(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        let rows = self.tx.query(sql, params).map_err(|e| self.failed(e))?;
        rows.iter().map(map).collect()
    }

    fn one<T>(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        let row = self.tx.query_opt(sql, params).map_err(|e| self.failed(e))?;
        row.as_ref().map(map).transpose()
    }

    fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.tx.execute(sql, params).map_err(|e| self.failed(e))
    }
}

impl AggTx for PgRows<'_, '_> {
    fn lock_budget(&mut self) -> Result<()> {
        self.execute("SELECT one FROM agg_budget FOR UPDATE", &[])?;
        Ok(())
    }

    fn charges(&mut self) -> Result<Vec<ChargeRow>> {
        self.all(&format!("{CHARGE} ORDER BY seq"), &[], charge)
    }

    fn charge(&mut self, id: &str) -> Result<Option<ChargeRow>> {
        self.one(&format!("{CHARGE} WHERE id = $1"), &[&id], charge)
    }

    fn insert_charge(&mut self, row: &ChargeRow) -> Result<()> {
        self.execute(
            "INSERT INTO agg_charges (id, rho, truncation_delta, sha256) VALUES ($1, $2, $3, $4)",
            &[&row.id, &row.rho, &row.truncation_delta, &row.sha256],
        )?;
        Ok(())
    }

    fn update_charge(&mut self, row: &ChargeRow) -> Result<()> {
        self.execute(
            "UPDATE agg_charges SET rho = $2, truncation_delta = $3, sha256 = $4 WHERE id = $1",
            &[&row.id, &row.rho, &row.truncation_delta, &row.sha256],
        )?;
        Ok(())
    }

    fn insert_round(&mut self, row: &RoundRow) -> Result<bool> {
        Ok(self.execute(
            "INSERT INTO agg_rounds (id, spec, state, detail, sha256) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO NOTHING",
            &[
                &row.id,
                &row.spec,
                &row.state.as_str(),
                &row.detail,
                &row.sha256,
            ],
        )? == 1)
    }

    fn round_row(&mut self, id: &str) -> Result<Option<RoundRow>> {
        self.one(&format!("{ROUND} WHERE id = $1"), &[&id], round)
    }

    fn lock_round(&mut self, id: &str) -> Result<Option<RoundRow>> {
        self.one(&format!("{ROUND} WHERE id = $1 FOR UPDATE"), &[&id], round)
    }

    fn rounds_in(&mut self, states: &[RoundPhase]) -> Result<Vec<RoundRow>> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        self.all(
            &format!("{ROUND} WHERE state = ANY($1) ORDER BY seq"),
            &[&states],
            round,
        )
    }

    fn round_states_in(&mut self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        let states: Vec<&str> = states.iter().map(|s| s.as_str()).collect();
        self.all(
            "SELECT id, state FROM agg_rounds WHERE state = ANY($1) ORDER BY seq",
            &[&states],
            |r| Ok((r.get(0), RoundPhase::parse(r.get(1))?)),
        )
    }

    fn count_rounds(&mut self) -> Result<Vec<(RoundPhase, usize)>> {
        self.all(
            "SELECT state, COUNT(*) FROM agg_rounds GROUP BY state",
            &[],
            |r| Ok((RoundPhase::parse(r.get(0))?, r.get::<_, i64>(1) as usize)),
        )
    }

    fn put_round_state(&mut self, row: &RoundRow) -> Result<()> {
        self.execute(
            "UPDATE agg_rounds SET state = $2, detail = $3, sha256 = $4 WHERE id = $1",
            &[&row.id, &row.state.as_str(), &row.detail, &row.sha256],
        )?;
        Ok(())
    }

    fn close_row(&mut self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.one(
            "SELECT body, sha256 FROM agg_closes WHERE id = $1",
            &[&id],
            |r| Ok((r.get(0), r.get(1))),
        )
    }

    fn insert_close(&mut self, id: &str, body: &[u8], sha256: &[u8]) -> Result<()> {
        self.execute(
            "INSERT INTO agg_closes (id, body, sha256) VALUES ($1, $2, $3)",
            &[&id, &body, &sha256],
        )?;
        Ok(())
    }

    fn lock_release_lease(&mut self, round: &str) -> Result<Option<Lease>> {
        self.one(
            "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = $1 FOR UPDATE",
            &[&round],
            lease,
        )
    }

    fn put_release_lease(&mut self, round: &str, lease: &Lease) -> Result<()> {
        self.execute(
            "INSERT INTO agg_release_leases (round_id, holder, expires_ms) VALUES ($1, $2, $3)
             ON CONFLICT (round_id) DO UPDATE
                 SET holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms",
            &[&round, &lease.holder, &(lease.expires_ms as i64)],
        )?;
        Ok(())
    }

    fn insert_job(&mut self, row: &JobRow) -> Result<bool> {
        Ok(self.execute(
            "INSERT INTO agg_jobs (id, spec, status, sha256) VALUES ($1, $2, $3, $4)
             ON CONFLICT (id) DO NOTHING",
            &[&row.id, &row.spec, &row.status, &row.sha256],
        )? == 1)
    }

    fn job_row(&mut self, id: &str) -> Result<Option<JobRow>> {
        self.one(&format!("{JOB} WHERE id = $1"), &[&id], job)
    }

    fn lock_job(&mut self, id: &str) -> Result<Option<JobRow>> {
        self.one(&format!("{JOB} WHERE id = $1 FOR UPDATE"), &[&id], job)
    }

    fn job_rows(&mut self) -> Result<Vec<JobRow>> {
        self.all(&format!("{JOB} ORDER BY seq"), &[], job)
    }

    fn job_ids(&mut self) -> Result<Vec<String>> {
        self.all(
            "SELECT id FROM agg_jobs ORDER BY seq",
            &[],
            |r| Ok(r.get(0)),
        )
    }

    fn job_sha256(&mut self, id: &str) -> Result<Option<Vec<u8>>> {
        self.one("SELECT sha256 FROM agg_jobs WHERE id = $1", &[&id], |r| {
            Ok(r.get(0))
        })
    }

    fn put_job_status(&mut self, row: &JobRow) -> Result<()> {
        self.execute(
            "UPDATE agg_jobs SET status = $2, sha256 = $3 WHERE id = $1",
            &[&row.id, &row.status, &row.sha256],
        )?;
        Ok(())
    }

    fn insert_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()> {
        self.execute(
            "INSERT INTO agg_job_leases (job_id, holder, expires_ms, ended)
             VALUES ($1, $2, $3, $4)",
            &[
                &job,
                &lease.lease.holder,
                &(lease.lease.expires_ms as i64),
                &lease.ended,
            ],
        )?;
        Ok(())
    }

    fn lock_job_lease(&mut self, job: &str) -> Result<Option<JobLease>> {
        self.one(
            "SELECT holder, expires_ms, ended FROM agg_job_leases WHERE job_id = $1 FOR UPDATE",
            &[&job],
            job_lease,
        )
    }

    fn put_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()> {
        self.execute(
            "UPDATE agg_job_leases SET holder = $2, expires_ms = $3, ended = $4
             WHERE job_id = $1",
            &[
                &job,
                &lease.lease.holder,
                &(lease.lease.expires_ms as i64),
                &lease.ended,
            ],
        )?;
        Ok(())
    }

    fn acquire_job_leases(&mut self, to: &Lease, now_ms: u64, limit: usize) -> Result<Vec<String>> {
        self.all(
            "WITH taken AS (
                 UPDATE agg_job_leases SET holder = $1, expires_ms = $3
                 WHERE job_id IN (
                     SELECT job_id FROM agg_job_leases
                     WHERE NOT ended AND expires_ms <= $2
                     ORDER BY seq LIMIT $4 FOR UPDATE SKIP LOCKED)
                 RETURNING job_id, seq)
             SELECT job_id FROM taken ORDER BY seq",
            &[
                &to.holder,
                &(now_ms as i64),
                &(to.expires_ms as i64),
                &(limit as i64),
            ],
            |r| Ok(r.get(0)),
        )
    }

    fn insert_answer(&mut self, row: &AnswerRow) -> Result<()> {
        self.execute(
            "INSERT INTO agg_answers (job, participant, answer, sha256) VALUES ($1, $2, $3, $4)
             ON CONFLICT (job, participant) DO NOTHING",
            &[&row.job, &(row.index as i64), &row.answer, &row.sha256],
        )?;
        Ok(())
    }

    fn answer_row(&mut self, job: &str, index: usize) -> Result<Option<AnswerRow>> {
        self.one(
            &format!("{ANSWER} WHERE job = $1 AND participant = $2"),
            &[&job, &(index as i64)],
            answer,
        )
    }

    fn answer_rows(&mut self, job: &str) -> Result<Vec<AnswerRow>> {
        self.all(
            &format!("{ANSWER} WHERE job = $1 ORDER BY participant"),
            &[&job],
            answer,
        )
    }

    fn insert_job_round(&mut self, row: &JobRoundRow) -> Result<()> {
        self.execute(
            "INSERT INTO agg_job_rounds (round, job, rho, sha256) VALUES ($1, $2, $3, $4)
             ON CONFLICT (round) DO NOTHING",
            &[&row.round, &row.job, &row.rho, &row.sha256],
        )?;
        Ok(())
    }

    fn job_round_row(&mut self, round: &str) -> Result<Option<JobRoundRow>> {
        self.one(
            &format!("{JOB_ROUND} WHERE round = $1"),
            &[&round],
            job_round,
        )
    }

    fn job_round_rows(&mut self, job: &str) -> Result<Vec<JobRoundRow>> {
        self.all(
            &format!("{JOB_ROUND} WHERE job = $1 ORDER BY seq"),
            &[&job],
            job_round,
        )
    }

    fn put_job_round(&mut self, row: &JobRoundRow) -> Result<()> {
        self.execute(
            "UPDATE agg_job_rounds SET rho = $3, sha256 = $4 WHERE round = $1 AND job = $2",
            &[&row.round, &row.job, &row.rho, &row.sha256],
        )?;
        Ok(())
    }
}
