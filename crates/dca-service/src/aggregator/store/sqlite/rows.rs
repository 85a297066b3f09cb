//! The aggregator's rows on SQLite: SQL and row mapping only (the rules are above, in
//! `aggregator_store`). Locks are the immediate transaction's: a `lock_*` read is a read.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::Result;
use crate::aggregator::store::RoundPhase;
use crate::aggregator::store::tx::{
    AggTx, AnswerRow, ChargeRow, JobLease, JobRoundRow, JobRow, Lease, RoundRow,
};

/// The rows of one transaction.
pub(super) struct SqliteRows<'a>(pub(super) &'a Connection);

const ROUND: &str = "SELECT id, spec, state, detail, sha256 FROM agg_rounds";
const JOB: &str = "SELECT id, spec, status, sha256 FROM agg_jobs";
const ANSWER: &str = "SELECT job, participant, answer, sha256 FROM agg_answers";
const JOB_ROUND: &str = "SELECT round, job, rho, sha256 FROM agg_job_rounds";

/// A round's columns, its state still the stored name.
type RoundColumns = (String, Vec<u8>, String, Option<String>, Option<Vec<u8>>);

fn round(r: &Row<'_>) -> rusqlite::Result<RoundColumns> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

fn round_row((id, spec, state, detail, sha256): RoundColumns) -> Result<RoundRow> {
    Ok(RoundRow {
        state: RoundPhase::parse(&state)?,
        id,
        spec,
        detail,
        sha256,
    })
}

fn job(r: &Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        spec: r.get(1)?,
        status: r.get(2)?,
        sha256: r.get(3)?,
    })
}

fn answer(r: &Row<'_>) -> rusqlite::Result<AnswerRow> {
    Ok(AnswerRow {
        job: r.get(0)?,
        index: r.get::<_, i64>(1)? as usize,
        answer: r.get(2)?,
        sha256: r.get(3)?,
    })
}

fn job_round(r: &Row<'_>) -> rusqlite::Result<JobRoundRow> {
    Ok(JobRoundRow {
        round: r.get(0)?,
        job: r.get(1)?,
        rho: r.get(2)?,
        sha256: r.get(3)?,
    })
}

fn charge(r: &Row<'_>) -> rusqlite::Result<ChargeRow> {
    Ok(ChargeRow {
        id: r.get(0)?,
        rho: r.get(1)?,
        truncation_delta: r.get(2)?,
        sha256: r.get(3)?,
    })
}

impl SqliteRows<'_> {
    fn all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut stmt = self.0.prepare(sql)?;
        let rows = stmt.query_map(params, map)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn one<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        map: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        Ok(self.0.query_row(sql, params, map).optional()?)
    }

    fn execute(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
        Ok(self.0.execute(sql, params)?)
    }
}

impl AggTx for SqliteRows<'_> {
    fn lock_budget(&mut self) -> Result<()> {
        Ok(())
    }

    fn charges(&mut self) -> Result<Vec<ChargeRow>> {
        self.all(
            "SELECT id, rho, truncation_delta, sha256 FROM agg_charges ORDER BY rowid",
            [],
            charge,
        )
    }

    fn charge(&mut self, id: &str) -> Result<Option<ChargeRow>> {
        self.one(
            "SELECT id, rho, truncation_delta, sha256 FROM agg_charges WHERE id = ?1",
            [id],
            charge,
        )
    }

    fn insert_charge(&mut self, row: &ChargeRow) -> Result<()> {
        self.execute(
            "INSERT INTO agg_charges (id, rho, truncation_delta, sha256) VALUES (?1, ?2, ?3, ?4)",
            params![row.id, row.rho, row.truncation_delta, row.sha256],
        )?;
        Ok(())
    }

    fn update_charge(&mut self, row: &ChargeRow) -> Result<()> {
        self.execute(
            "UPDATE agg_charges SET rho = ?2, truncation_delta = ?3, sha256 = ?4 WHERE id = ?1",
            params![row.id, row.rho, row.truncation_delta, row.sha256],
        )?;
        Ok(())
    }

    fn insert_round(&mut self, row: &RoundRow) -> Result<bool> {
        Ok(self.execute(
            "INSERT OR IGNORE INTO agg_rounds (id, spec, state, detail, sha256)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![row.id, row.spec, row.state.as_str(), row.detail, row.sha256],
        )? == 1)
    }

    fn round_row(&mut self, id: &str) -> Result<Option<RoundRow>> {
        self.one(&format!("{ROUND} WHERE id = ?1"), [id], round)?
            .map(round_row)
            .transpose()
    }

    fn lock_round(&mut self, id: &str) -> Result<Option<RoundRow>> {
        self.round_row(id)
    }

    fn rounds_in(&mut self, states: &[RoundPhase]) -> Result<Vec<RoundRow>> {
        let rows = self.all(&format!("{ROUND} ORDER BY rowid"), [], round)?;
        let mut out = Vec::new();
        for row in rows {
            let row = round_row(row)?;
            if states.contains(&row.state) {
                out.push(row);
            }
        }
        Ok(out)
    }

    fn round_states_in(&mut self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        let rows = self.all("SELECT id, state FROM agg_rounds ORDER BY rowid", [], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for (id, state) in rows {
            let phase = RoundPhase::parse(&state)?;
            if states.contains(&phase) {
                out.push((id, phase));
            }
        }
        Ok(out)
    }

    fn count_rounds(&mut self) -> Result<Vec<(RoundPhase, usize)>> {
        self.all(
            "SELECT state, COUNT(*) FROM agg_rounds GROUP BY state",
            [],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize)),
        )?
        .into_iter()
        .map(|(state, n)| Ok((RoundPhase::parse(&state)?, n)))
        .collect()
    }

    fn put_round_state(&mut self, row: &RoundRow) -> Result<()> {
        self.execute(
            "UPDATE agg_rounds SET state = ?2, detail = ?3, sha256 = ?4 WHERE id = ?1",
            params![row.id, row.state.as_str(), row.detail, row.sha256],
        )?;
        Ok(())
    }

    fn close_row(&mut self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.one(
            "SELECT body, sha256 FROM agg_closes WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    fn insert_close(&mut self, id: &str, body: &[u8], sha256: &[u8]) -> Result<()> {
        self.execute(
            "INSERT INTO agg_closes (id, body, sha256) VALUES (?1, ?2, ?3)",
            params![id, body, sha256],
        )?;
        Ok(())
    }

    fn lock_release_lease(&mut self, round: &str) -> Result<Option<Lease>> {
        self.one(
            "SELECT holder, expires_ms FROM agg_release_leases WHERE round_id = ?1",
            [round],
            |r| {
                Ok(Lease {
                    holder: r.get(0)?,
                    expires_ms: r.get::<_, i64>(1)? as u64,
                })
            },
        )
    }

    fn put_release_lease(&mut self, round: &str, lease: &Lease) -> Result<()> {
        self.execute(
            "INSERT INTO agg_release_leases (round_id, holder, expires_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (round_id) DO UPDATE
                 SET holder = excluded.holder, expires_ms = excluded.expires_ms",
            params![round, lease.holder, lease.expires_ms as i64],
        )?;
        Ok(())
    }

    fn insert_job(&mut self, row: &JobRow) -> Result<bool> {
        Ok(self.execute(
            "INSERT OR IGNORE INTO agg_jobs (id, spec, status, sha256) VALUES (?1, ?2, ?3, ?4)",
            params![row.id, row.spec, row.status, row.sha256],
        )? == 1)
    }

    fn job_row(&mut self, id: &str) -> Result<Option<JobRow>> {
        self.one(&format!("{JOB} WHERE id = ?1"), [id], job)
    }

    fn lock_job(&mut self, id: &str) -> Result<Option<JobRow>> {
        self.job_row(id)
    }

    fn job_rows(&mut self) -> Result<Vec<JobRow>> {
        self.all(&format!("{JOB} ORDER BY rowid"), [], job)
    }

    fn job_ids(&mut self) -> Result<Vec<String>> {
        self.all("SELECT id FROM agg_jobs ORDER BY rowid", [], |r| r.get(0))
    }

    fn job_sha256(&mut self, id: &str) -> Result<Option<Vec<u8>>> {
        self.one("SELECT sha256 FROM agg_jobs WHERE id = ?1", [id], |r| {
            r.get(0)
        })
    }

    fn put_job_status(&mut self, row: &JobRow) -> Result<()> {
        self.execute(
            "UPDATE agg_jobs SET status = ?2, sha256 = ?3 WHERE id = ?1",
            params![row.id, row.status, row.sha256],
        )?;
        Ok(())
    }

    fn insert_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()> {
        self.execute(
            "INSERT INTO agg_job_leases (job_id, holder, expires_ms, ended) VALUES (?1, ?2, ?3, ?4)",
            params![
                job,
                lease.lease.holder,
                lease.lease.expires_ms as i64,
                lease.ended
            ],
        )?;
        Ok(())
    }

    fn lock_job_lease(&mut self, job: &str) -> Result<Option<JobLease>> {
        self.one(
            "SELECT holder, expires_ms, ended FROM agg_job_leases WHERE job_id = ?1",
            [job],
            |r| {
                Ok(JobLease {
                    lease: Lease {
                        holder: r.get(0)?,
                        expires_ms: r.get::<_, i64>(1)? as u64,
                    },
                    ended: r.get(2)?,
                })
            },
        )
    }

    fn put_job_lease(&mut self, job: &str, lease: &JobLease) -> Result<()> {
        self.execute(
            "UPDATE agg_job_leases SET holder = ?2, expires_ms = ?3, ended = ?4 WHERE job_id = ?1",
            params![
                job,
                lease.lease.holder,
                lease.lease.expires_ms as i64,
                lease.ended
            ],
        )?;
        Ok(())
    }

    fn acquire_job_leases(&mut self, to: &Lease, now_ms: u64, limit: usize) -> Result<Vec<String>> {
        let mut taken = self.all(
            "UPDATE agg_job_leases SET holder = ?1, expires_ms = ?3
             WHERE job_id IN (
                 SELECT job_id FROM agg_job_leases WHERE NOT ended AND expires_ms <= ?2
                 ORDER BY rowid LIMIT ?4)
             RETURNING rowid, job_id",
            params![to.holder, now_ms as i64, to.expires_ms as i64, limit as i64],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?;
        // RETURNING gives no order.
        taken.sort();
        Ok(taken.into_iter().map(|(_, id)| id).collect())
    }

    fn insert_answer(&mut self, row: &AnswerRow) -> Result<()> {
        self.execute(
            "INSERT OR IGNORE INTO agg_answers (job, participant, answer, sha256)
             VALUES (?1, ?2, ?3, ?4)",
            params![row.job, row.index as i64, row.answer, row.sha256],
        )?;
        Ok(())
    }

    fn answer_row(&mut self, job: &str, index: usize) -> Result<Option<AnswerRow>> {
        self.one(
            &format!("{ANSWER} WHERE job = ?1 AND participant = ?2"),
            params![job, index as i64],
            answer,
        )
    }

    fn answer_rows(&mut self, job: &str) -> Result<Vec<AnswerRow>> {
        self.all(
            &format!("{ANSWER} WHERE job = ?1 ORDER BY participant"),
            [job],
            answer,
        )
    }

    fn insert_job_round(&mut self, row: &JobRoundRow) -> Result<()> {
        self.execute(
            "INSERT OR IGNORE INTO agg_job_rounds (round, job, rho, sha256) VALUES (?1, ?2, ?3, ?4)",
            params![row.round, row.job, row.rho, row.sha256],
        )?;
        Ok(())
    }

    fn job_round_row(&mut self, round: &str) -> Result<Option<JobRoundRow>> {
        self.one(&format!("{JOB_ROUND} WHERE round = ?1"), [round], job_round)
    }

    fn job_round_rows(&mut self, job: &str) -> Result<Vec<JobRoundRow>> {
        self.all(
            &format!("{JOB_ROUND} WHERE job = ?1 ORDER BY rowid"),
            [job],
            job_round,
        )
    }

    fn put_job_round(&mut self, row: &JobRoundRow) -> Result<()> {
        self.execute(
            "UPDATE agg_job_rounds SET rho = ?3, sha256 = ?4 WHERE round = ?1 AND job = ?2",
            params![row.round, row.job, row.rho, row.sha256],
        )?;
        Ok(())
    }
}
