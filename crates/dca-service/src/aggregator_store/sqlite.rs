//! The aggregator's store on SQLite (WAL, `synchronous = FULL`): the default, one file that
//! one aggregator process owns. SQLite's pages have no checksum, hence the SHA-256 of every
//! row (see the module above).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use super::{
    JobLeaseTaken, JobWrite, JobWriter, LeaseTaken, RecordedJob, RoundPhase, RoundState,
    answer_sha256, charge_sha256, check, check_job_budget, check_round, counts_by_phase,
    job_round_sha256, job_sha256, may_write_job, reservation_id, row_sha256,
};
use crate::migrations::{Migration, add_column_if_missing, migrate};
use crate::{Error, Result};

pub(crate) struct SqliteAggregatorStore {
    conn: Mutex<Connection>,
}

impl SqliteAggregatorStore {
    pub fn open(path: &Path) -> Result<Self> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        migrate(
            &mut conn,
            AGGREGATOR_MIGRATIONS,
            &path.display().to_string(),
        )?;
        // The file is one process's: a lease found in it is an earlier run's, whose holder is
        // gone. The restarted aggregator resumes its rounds and jobs at once instead of after
        // the lease.
        conn.execute("UPDATE release_leases SET expires_ms = 0", [])?;
        conn.execute("UPDATE job_leases SET expires_ms = 0", [])?;
        Ok(SqliteAggregatorStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("aggregator database lock poisoned")))
    }

    /// Every recorded charge (zCDP ρ), each checked.
    pub fn charges(&self) -> Result<Vec<f64>> {
        Self::read_charges(&*self.conn()?)
    }

    fn read_charges(conn: &Connection) -> Result<Vec<f64>> {
        let mut stmt = conn.prepare("SELECT id, rho, sha256 FROM charges ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, Option<Vec<u8>>>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (id, rho, sha256) = row?;
            check(sha256.as_deref(), &charge_sha256(&id, rho), || {
                format!("the recorded charge of round {id}")
            })?;
            Ok(rho)
        })
        .collect()
    }

    /// Records a new round as "created"; nothing changes if it is recorded already.
    pub fn insert_round(&self, id: &str, spec_json: &[u8]) -> Result<()> {
        self.conn()?.execute(
            "INSERT OR IGNORE INTO rounds (id, spec, state, sha256) VALUES (?1, ?2, 'created', ?3)",
            params![
                id,
                spec_json,
                &row_sha256(id, spec_json, "created", None)[..]
            ],
        )?;
        Ok(())
    }

    /// The (id, spec JSON) of every recorded round in one of `states`, oldest first, checked.
    pub fn specs_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, Vec<u8>)>> {
        let conn = self.conn()?;
        let mut stmt =
            conn.prepare("SELECT id, spec, state, detail, sha256 FROM rounds ORDER BY rowid")?;
        let mut out = Vec::new();
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let state: String = row.get(2)?;
            if !states.contains(&RoundPhase::parse(&state)?) {
                continue;
            }
            let (id, spec) = (row.get::<_, String>(0)?, row.get::<_, Vec<u8>>(1)?);
            let detail: Option<String> = row.get(3)?;
            check_round(&id, &spec, &state, detail.as_deref(), row.get(4)?)?;
            out.push((id, spec));
        }
        Ok(out)
    }

    pub fn ids_in(&self, states: &[RoundPhase]) -> Result<Vec<(String, RoundPhase)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT id, state FROM rounds ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, state) = row?;
            let phase = RoundPhase::parse(&state)?;
            if states.contains(&phase) {
                out.push((id, phase));
            }
        }
        Ok(out)
    }

    /// How many rounds are recorded in each state (every state listed, zeros included).
    pub fn count_by_state(&self) -> Result<Vec<(RoundPhase, usize)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM rounds GROUP BY state")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        counts_by_phase(rows)
    }

    /// The recorded spec (JSON) of round `id` and its state, checked.
    pub fn round(&self, id: &str) -> Result<Option<(Vec<u8>, RoundState)>> {
        let conn = self.conn()?;
        let row = conn
            .query_row(
                "SELECT spec, state, detail, sha256 FROM rounds WHERE id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get::<_, Vec<u8>>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, Option<Vec<u8>>>(3)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(spec, state, detail, sha256)| {
            check_round(id, &spec, &state, detail.as_deref(), sha256)?;
            Ok((spec, RoundState::from_row(id, &state, detail)?))
        })
        .transpose()
    }

    /// Moves round `id` from `from` to `to` with `detail`; false if it was not in `from`.
    fn transition(
        conn: &Connection,
        id: &str,
        from: RoundPhase,
        to: RoundPhase,
        detail: Option<&str>,
    ) -> Result<bool> {
        let (from, to) = (from.as_str(), to.as_str());
        let spec: Option<Vec<u8>> = conn
            .query_row(
                "SELECT spec FROM rounds WHERE id = ?1 AND state = ?2",
                params![id, from],
                |r| r.get(0),
            )
            .optional()?;
        let Some(spec) = spec else {
            return Ok(false);
        };
        let changed = conn.execute(
            "UPDATE rounds SET state = ?3, detail = ?4, sha256 = ?5 WHERE id = ?1 AND state = ?2",
            params![id, from, to, detail, &row_sha256(id, &spec, to, detail)[..]],
        )?;
        Ok(changed == 1)
    }

    /// created → aborting (with the reason); false if the round was not "created".
    pub fn begin_abort(&self, id: &str, reason: &str) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let changed = Self::transition(
            &tx,
            id,
            RoundPhase::Created,
            RoundPhase::Aborting,
            Some(reason),
        )?;
        tx.commit()?;
        Ok(changed)
    }

    /// aborting → aborted, once every node was told.
    pub fn finish_abort(&self, id: &str) -> Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let reason: Option<String> = tx
            .query_row(
                "SELECT detail FROM rounds WHERE id = ?1 AND state = 'aborting'",
                params![id],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        Self::transition(
            &tx,
            id,
            RoundPhase::Aborting,
            RoundPhase::Aborted,
            reason.as_deref(),
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn begin_close(
        &self,
        id: &str,
        close_body: &[u8],
        rho: Option<f64>,
        fits: impl Fn(&[f64]) -> Result<()>,
    ) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if !Self::record_close(&tx, id, close_body)? {
            return Ok(false);
        }
        if let Some(rho) = rho {
            fits(&Self::read_charges(&tx)?)?;
            tx.execute(
                "INSERT INTO charges (id, rho, sha256) VALUES (?1, ?2, ?3)",
                params![id, rho, &charge_sha256(id, rho)[..]],
            )?;
        }
        tx.commit()?;
        Ok(true)
    }

    /// created → closing with the close request every node will be sent; false if the round
    /// was not "created".
    fn record_close(tx: &Connection, id: &str, close_body: &[u8]) -> Result<bool> {
        if !Self::transition(tx, id, RoundPhase::Created, RoundPhase::Closing, None)? {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO closes (id, body, sha256) VALUES (?1, ?2, ?3)",
            params![id, close_body, Sha256::digest(close_body).as_slice()],
        )?;
        Ok(true)
    }

    /// The close request recorded for round `id`, checked.
    pub fn close_body(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let row: Option<(Vec<u8>, Vec<u8>)> = self
            .conn()?
            .query_row(
                "SELECT body, sha256 FROM closes WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        row.map(|(body, sha256)| {
            check(Some(&sha256), &Sha256::digest(&body).into(), || {
                format!("the recorded agreed set of round {id}")
            })?;
            Ok(body)
        })
        .transpose()
    }

    /// closing → released, with the release's JSON, unless another holder's release lease is
    /// live at `now_ms`; false if the round was not "closing" or that lease is live.
    pub fn mark_released(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        release_json: &str,
    ) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if let Some((other, expires)) = Self::read_release_lease(&tx, id)?
            && other != holder
            && expires > now_ms
        {
            return Ok(false);
        }
        let changed = Self::transition(
            &tx,
            id,
            RoundPhase::Closing,
            RoundPhase::Released,
            Some(release_json),
        )?;
        tx.commit()?;
        Ok(changed)
    }

    /// closing → failed, with the cause, unless another holder's release lease is live at
    /// `now_ms`; false if the round was not "closing" or that lease is live.
    pub fn mark_failed(&self, id: &str, holder: &str, now_ms: u64, cause: &str) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some((other, expires)) = Self::read_release_lease(&tx, id)?
            && other != holder
            && expires > now_ms
        {
            return Ok(false);
        }
        let changed = Self::transition(
            &tx,
            id,
            RoundPhase::Closing,
            RoundPhase::Failed,
            Some(cause),
        )?;
        tx.commit()?;
        Ok(changed)
    }

    /// Takes the release lease of closing round `id` (see the store's interface).
    pub fn take_release_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<LeaseTaken> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let state: Option<String> = tx
            .query_row("SELECT state FROM rounds WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()?;
        if state.as_deref() != Some(RoundPhase::Closing.as_str()) {
            return Ok(LeaseTaken::NotClosing);
        }
        let taken = tx.execute(
            "INSERT INTO release_leases (round_id, holder, expires_ms) VALUES (?1, ?2, ?4)
             ON CONFLICT (round_id) DO UPDATE
                 SET holder = excluded.holder, expires_ms = excluded.expires_ms
                 WHERE release_leases.expires_ms <= ?3 OR release_leases.holder = ?2",
            params![id, holder, now_ms as i64, until_ms as i64],
        )? == 1;
        let outcome = if taken {
            LeaseTaken::Taken
        } else {
            match Self::read_release_lease(&tx, id)? {
                Some((other, expires)) => LeaseTaken::HeldBy(other, expires),
                None => LeaseTaken::NotClosing,
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    pub fn renew_release_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        Ok(self.conn()?.execute(
            "UPDATE release_leases SET expires_ms = ?3 WHERE round_id = ?1 AND holder = ?2",
            params![id, holder, until_ms as i64],
        )? == 1)
    }

    pub fn drop_release_lease(&self, id: &str, holder: &str) -> Result<()> {
        self.conn()?.execute(
            "UPDATE release_leases SET expires_ms = 0 WHERE round_id = ?1 AND holder = ?2",
            params![id, holder],
        )?;
        Ok(())
    }

    #[cfg(test)]
    pub fn release_lease(&self, id: &str) -> Result<Option<(String, u64)>> {
        Self::read_release_lease(&*self.conn()?, id)
    }

    fn read_release_lease(conn: &Connection, id: &str) -> Result<Option<(String, u64)>> {
        Ok(conn
            .query_row(
                "SELECT holder, expires_ms FROM release_leases WHERE round_id = ?1",
                params![id],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)),
            )
            .optional()?)
    }

    pub fn insert_job(
        &self,
        id: &str,
        spec: &[u8],
        status: &[u8],
        rho: f64,
        lease: (&str, u64),
        fits: impl Fn(&[f64]) -> Result<()>,
    ) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let inserted = tx.execute(
            "INSERT OR IGNORE INTO jobs (id, spec, status, sha256) VALUES (?1, ?2, ?3, ?4)",
            params![id, spec, status, &job_sha256(id, spec, status)[..]],
        )? == 1;
        if inserted {
            fits(&Self::read_charges(&tx)?)?;
            let charge = reservation_id(id);
            tx.execute(
                "INSERT INTO charges (id, rho, sha256) VALUES (?1, ?2, ?3)",
                params![charge, rho, &charge_sha256(&charge, rho)[..]],
            )?;
            tx.execute(
                "INSERT INTO job_leases (job_id, holder, expires_ms) VALUES (?1, ?2, ?3)",
                params![id, lease.0, lease.1 as i64],
            )?;
        }
        tx.commit()?;
        Ok(inserted)
    }

    /// Job `id`'s spec and status (JSON), checked.
    pub fn job(&self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let row: Option<(Vec<u8>, Vec<u8>, Vec<u8>)> = self
            .conn()?
            .query_row(
                "SELECT spec, status, sha256 FROM jobs WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        row.map(|(spec, status, sha256)| {
            check(Some(&sha256), &job_sha256(id, &spec, &status), || {
                format!("the recorded job {id}")
            })?;
            Ok((spec, status))
        })
        .transpose()
    }

    /// Every job's id, spec and status, oldest first, checked.
    /// Every job's id, oldest first.
    pub fn job_ids(&self) -> Result<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT id FROM jobs ORDER BY rowid")?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }

    pub fn jobs(&self) -> Result<Vec<RecordedJob>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT id, spec, status, sha256 FROM jobs ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, Vec<u8>>(2)?,
                r.get::<_, Vec<u8>>(3)?,
            ))
        })?;
        rows.map(|row| {
            let (id, spec, status, sha256) = row?;
            check(Some(&sha256), &job_sha256(&id, &spec, &status), || {
                format!("the recorded job {id}")
            })?;
            Ok((id, spec, status))
        })
        .collect()
    }

    /// Replaces job `id`'s status, if `driver` may and the row is still version `expected`
    /// (see the store's interface). An immediate transaction: the version read is the one
    /// replaced, whoever else holds the file.
    pub fn set_job_status(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        status: &[u8],
        driver: JobWriter<'_>,
    ) -> Result<JobWrite<()>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let spec = match Self::job_row_for_change(&tx, id, expected, driver)? {
            Ok(spec) => spec,
            Err(refused) => return Ok(refused),
        };
        tx.execute(
            "UPDATE jobs SET status = ?2, sha256 = ?3 WHERE id = ?1",
            params![id, status, &job_sha256(id, &spec, status)[..]],
        )?;
        tx.commit()?;
        Ok(JobWrite::Written(()))
    }

    /// Job `id`'s spec, if its row is still version `expected` and `driver` may write it;
    /// else what the write comes to.
    fn job_row_for_change<T>(
        tx: &Connection,
        id: &str,
        expected: Option<&[u8]>,
        driver: JobWriter<'_>,
    ) -> Result<std::result::Result<Vec<u8>, JobWrite<T>>> {
        let (spec, version): (Vec<u8>, Vec<u8>) = tx
            .query_row(
                "SELECT spec, sha256 FROM jobs WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| Error::Job(format!("no job {id}")))?;
        if !may_write_job(driver, Self::read_job_lease(tx, id)?) {
            return Ok(Err(JobWrite::Refused));
        }
        if expected.is_some_and(|e| e != version.as_slice()) {
            return Ok(Err(JobWrite::Changed));
        }
        Ok(Ok(spec))
    }

    /// Ends job `id` (see the store's interface).
    pub fn settle_job(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        driver: JobWriter<'_>,
        status: impl FnOnce(f64) -> Result<Vec<u8>>,
    ) -> Result<JobWrite<f64>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let spec = match Self::job_row_for_change(&tx, id, expected, driver)? {
            Ok(spec) => spec,
            Err(refused) => return Ok(refused),
        };
        let used = Self::job_rounds_rho(&tx, id)?;
        let status = &status(used)?[..];
        let charge = reservation_id(id);
        tx.execute(
            "UPDATE charges SET rho = ?2, sha256 = ?3 WHERE id = ?1",
            params![charge, used, &charge_sha256(&charge, used)[..]],
        )?;
        tx.execute(
            "UPDATE jobs SET status = ?2, sha256 = ?3 WHERE id = ?1",
            params![id, status, &job_sha256(id, &spec, status)[..]],
        )?;
        tx.execute(
            "UPDATE job_leases SET ended = 1 WHERE job_id = ?1",
            params![id],
        )?;
        tx.commit()?;
        Ok(JobWrite::Written(used))
    }

    pub fn job_version(&self, id: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .conn()?
            .query_row("SELECT sha256 FROM jobs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()?)
    }

    pub fn take_job_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<JobLeaseTaken> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let taken = tx.execute(
            "UPDATE job_leases SET holder = ?2, expires_ms = ?4
             WHERE job_id = ?1 AND NOT ended AND (expires_ms <= ?3 OR holder = ?2)",
            params![id, holder, now_ms as i64, until_ms as i64],
        )? == 1;
        let outcome = if taken {
            JobLeaseTaken::Taken
        } else {
            match Self::read_job_lease(&tx, id)? {
                Some((other, expires, false)) => JobLeaseTaken::HeldBy(other, expires),
                _ => JobLeaseTaken::Ended,
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    pub fn acquire_job_leases(
        &self,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
        limit: usize,
    ) -> Result<Vec<String>> {
        let conn = self.conn()?;
        // One statement, so one write transaction: handles on the same file take turns.
        let mut stmt = conn.prepare(
            "UPDATE job_leases SET holder = ?1, expires_ms = ?3
             WHERE job_id IN (
                 SELECT job_id FROM job_leases WHERE NOT ended AND expires_ms <= ?2
                 ORDER BY rowid LIMIT ?4)
             RETURNING rowid, job_id",
        )?;
        let ids = stmt.query_map(
            params![holder, now_ms as i64, until_ms as i64, limit as i64],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )?;
        let mut ids = ids.collect::<rusqlite::Result<Vec<(i64, String)>>>()?;
        // RETURNING gives no order.
        ids.sort();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    pub fn renew_job_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        Ok(self.conn()?.execute(
            "UPDATE job_leases SET expires_ms = ?3 WHERE job_id = ?1 AND holder = ?2",
            params![id, holder, until_ms as i64],
        )? == 1)
    }

    pub fn drop_job_lease(&self, id: &str, holder: &str, ended: bool) -> Result<()> {
        self.conn()?.execute(
            "UPDATE job_leases SET expires_ms = 0, ended = ended OR ?3
             WHERE job_id = ?1 AND holder = ?2",
            params![id, holder, ended],
        )?;
        Ok(())
    }

    #[cfg(test)]
    pub fn job_lease(&self, id: &str) -> Result<Option<(String, u64, bool)>> {
        Self::read_job_lease(&*self.conn()?, id)
    }

    fn read_job_lease(conn: &Connection, id: &str) -> Result<Option<(String, u64, bool)>> {
        Ok(conn
            .query_row(
                "SELECT holder, expires_ms, ended FROM job_leases WHERE job_id = ?1",
                params![id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)? as u64,
                        r.get::<_, bool>(2)?,
                    ))
                },
            )
            .optional()?)
    }

    /// Records participant `index`'s answer to job `job`; the answer already recorded if
    /// there is one (an answer is given once).
    pub fn record_answer(&self, job: &str, index: usize, answer: &[u8]) -> Result<Vec<u8>> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT OR IGNORE INTO answers (job, participant, answer, sha256)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                job,
                index as i64,
                answer,
                &answer_sha256(job, index, answer)[..]
            ],
        )?;
        let stored: Vec<u8> = tx.query_row(
            "SELECT answer FROM answers WHERE job = ?1 AND participant = ?2",
            params![job, index as i64],
            |r| r.get(0),
        )?;
        tx.commit()?;
        Ok(stored)
    }

    /// Participant `index`'s answer to job `job` (JSON), checked; `None` if it gave none.
    pub fn answer_of(&self, job: &str, index: usize) -> Result<Option<Vec<u8>>> {
        let conn = self.conn()?;
        let row = conn
            .query_row(
                "SELECT answer, sha256 FROM answers WHERE job = ?1 AND participant = ?2",
                params![job, index as i64],
                |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, Vec<u8>>(1)?)),
            )
            .optional()?;
        row.map(|(answer, sha256)| {
            check(Some(&sha256), &answer_sha256(job, index, &answer), || {
                format!("participant {index}'s recorded answer to job {job}")
            })?;
            Ok(answer)
        })
        .transpose()
    }

    /// Every answer to job `job` (roster index, answer JSON), checked.
    pub fn answers(&self, job: &str) -> Result<Vec<(usize, Vec<u8>)>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT participant, answer, sha256 FROM answers WHERE job = ?1 ORDER BY participant",
        )?;
        let rows = stmt.query_map(params![job], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Vec<u8>>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (index, answer, sha256) = row?;
            let index = index as usize;
            check(Some(&sha256), &answer_sha256(job, index, &answer), || {
                format!("participant {index}'s recorded answer to job {job}")
            })?;
            Ok((index, answer))
        })
        .collect()
    }

    /// Records that round `round` belongs to job `job` (before the round is created anywhere).
    pub fn link_round(&self, round: &str, job: &str) -> Result<()> {
        self.conn()?.execute(
            "INSERT OR IGNORE INTO job_rounds (round, job, rho, sha256) VALUES (?1, ?2, NULL, ?3)",
            params![round, job, &job_round_sha256(round, job, None)[..]],
        )?;
        Ok(())
    }

    pub fn job_of_round(&self, round: &str) -> Result<Option<String>> {
        Self::read_job_of_round(&*self.conn()?, round)
    }

    fn read_job_of_round(conn: &Connection, round: &str) -> Result<Option<String>> {
        let row: Option<(String, Option<f64>, Vec<u8>)> = conn
            .query_row(
                "SELECT job, rho, sha256 FROM job_rounds WHERE round = ?1",
                params![round],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let Some((job, rho, sha256)) = row else {
            return Ok(None);
        };
        check(Some(&sha256), &job_round_sha256(round, &job, rho), || {
            format!("the recorded job of round {round}")
        })?;
        Ok(Some(job))
    }

    /// Job `job`'s reservation, checked.
    fn reserved(conn: &Connection, job: &str) -> Result<f64> {
        let charge = reservation_id(job);
        let (reserved, sha256): (f64, Vec<u8>) = conn.query_row(
            "SELECT rho, sha256 FROM charges WHERE id = ?1",
            params![charge],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        check(Some(&sha256), &charge_sha256(&charge, reserved), || {
            format!("the reservation of job {job}")
        })?;
        Ok(reserved)
    }

    fn job_rounds_rho(conn: &Connection, job: &str) -> Result<f64> {
        let mut stmt = conn
            .prepare("SELECT round, rho, sha256 FROM job_rounds WHERE job = ?1 ORDER BY rowid")?;
        let rows = stmt.query_map(params![job], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<f64>>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        let mut used = 0.0;
        for row in rows {
            let (round, rho, sha256) = row?;
            check(Some(&sha256), &job_round_sha256(&round, job, rho), || {
                format!("the recorded charge of job {job}'s round {round}")
            })?;
            used += rho.unwrap_or(0.0);
        }
        Ok(used)
    }

    pub fn begin_close_job_round(
        &self,
        id: &str,
        close_body: &[u8],
        job: &str,
        rho: f64,
    ) -> Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        if !Self::record_close(&tx, id, close_body)? {
            return Ok(false);
        }
        let reserved = Self::reserved(&tx, job)?;
        check_job_budget(job, reserved, Self::job_rounds_rho(&tx, job)?, rho)?;
        tx.execute(
            "UPDATE job_rounds SET rho = ?3, sha256 = ?4 WHERE round = ?1 AND job = ?2",
            params![id, job, rho, &job_round_sha256(id, job, Some(rho))[..]],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Test hook: overwrites one stored byte, as a damaged disk would.
    #[cfg(test)]
    pub fn damage(&self, sql: &str) -> Result<()> {
        self.conn()?.execute_batch(sql)?;
        Ok(())
    }
}

/// The aggregator store's schema changes (see [`crate::migrations`]).
const AGGREGATOR_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "rounds with their state and release, charges",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS rounds (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT);
                 CREATE TABLE IF NOT EXISTS charges (id TEXT PRIMARY KEY, rho REAL NOT NULL);",
            )
        },
    },
    Migration {
        version: 2,
        what: "recorded agreed sets; SHA-256 of every row",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS closes (
                     id TEXT PRIMARY KEY, body BLOB NOT NULL, sha256 BLOB NOT NULL);",
            )?;
            // Rows written before have NULL here and are read unchecked.
            add_column_if_missing(tx, "rounds", "sha256", "BLOB")?;
            add_column_if_missing(tx, "charges", "sha256", "BLOB")
        },
    },
    Migration {
        version: 3,
        what: "jobs, their participants' answers and their rounds",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS jobs (
                     id TEXT PRIMARY KEY, spec BLOB NOT NULL, status BLOB NOT NULL,
                     sha256 BLOB NOT NULL);
                 CREATE TABLE IF NOT EXISTS answers (
                     job TEXT NOT NULL, participant INTEGER NOT NULL, answer BLOB NOT NULL,
                     sha256 BLOB NOT NULL, PRIMARY KEY (job, participant));
                 CREATE TABLE IF NOT EXISTS job_rounds (
                     round TEXT PRIMARY KEY, job TEXT NOT NULL, rho REAL,
                     sha256 BLOB NOT NULL);",
            )
        },
    },
    Migration {
        version: 4,
        what: "a release lease per closing round: the caller that drives its release",
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS release_leases (
                     round_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                     expires_ms INTEGER NOT NULL);",
            )
        },
    },
    Migration {
        version: 5,
        what: "a driver lease per job: the caller that drives it",
        // Jobs recorded before get a lease held by nobody: the first driver to take one finds
        // out whether the job is still live, and marks it ended if not.
        apply: |tx| {
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS job_leases (
                     job_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                     expires_ms INTEGER NOT NULL, ended INTEGER NOT NULL DEFAULT 0);
                 INSERT OR IGNORE INTO job_leases (job_id, holder, expires_ms)
                     SELECT id, '', 0 FROM jobs ORDER BY rowid;",
            )
        },
    },
    Migration {
        version: 6,
        what: "a round whose release became impossible ends as 'failed', with the cause",
        // The state column is free text here (PostgreSQL's has a CHECK, changed by its own
        // migration 4): no table changes. The version number is what matters: a store that
        // may hold failed rounds is refused by the versions that do not know the state, which
        // would take such a round for a live one and retry it forever.
        apply: |_| Ok(()),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str) -> SqliteAggregatorStore {
        SqliteAggregatorStore::open(&crate::scratch_dir(name).join("agg.sqlite")).unwrap()
    }

    #[test]
    fn a_round_is_closed_charged_and_released_once() {
        let s = store("aggstore-once");
        s.insert_round("r1", b"{}").unwrap();
        s.insert_round("r1", b"{}").unwrap();
        assert!(
            s.begin_close("r1", b"close", Some(0.25), |_| Ok(()))
                .unwrap()
        );
        assert!(
            !s.begin_close("r1", b"other", Some(0.25), |_| Ok(()))
                .unwrap()
        );
        assert!(!s.begin_abort("r1", "late").unwrap());
        assert_eq!(s.close_body("r1").unwrap().as_deref(), Some(&b"close"[..]));
        assert_eq!(s.charges().unwrap(), vec![0.25]);
        assert!(s.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap());
        assert!(!s.mark_released("r1", "h", 0, "{\"sum\":[2]}").unwrap());
        assert_eq!(
            s.round("r1").unwrap().unwrap().1,
            RoundState::Released("{\"sum\":[1]}".into())
        );
    }

    /// The release lease as on PostgreSQL (one path above the store): one holder at a time
    /// until it expires, and the release recorded only by the holder or under no live lease.
    #[test]
    fn a_release_lease_has_one_holder_until_it_expires() {
        let s = store("aggstore-lease");
        s.insert_round("r1", b"{}").unwrap();
        assert_eq!(
            s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
            LeaseTaken::NotClosing
        );
        assert!(s.begin_close("r1", b"close", None, |_| Ok(())).unwrap());
        assert_eq!(
            s.take_release_lease("r1", "A", 1_000, 2_000).unwrap(),
            LeaseTaken::Taken
        );
        assert_eq!(
            s.take_release_lease("r1", "B", 1_999, 2_999).unwrap(),
            LeaseTaken::HeldBy("A".into(), 2_000)
        );
        assert!(!s.mark_released("r1", "B", 1_999, "{\"sum\":[2]}").unwrap());
        assert_eq!(
            s.take_release_lease("r1", "B", 2_000, 3_000).unwrap(),
            LeaseTaken::Taken
        );
        assert!(!s.renew_release_lease("r1", "A", 4_000).unwrap());
        assert!(!s.mark_released("r1", "A", 2_100, "{\"sum\":[1]}").unwrap());
        assert!(s.renew_release_lease("r1", "B", 4_000).unwrap());
        assert_eq!(s.release_lease("r1").unwrap(), Some(("B".into(), 4_000)));
        assert!(s.mark_released("r1", "B", 2_200, "{\"sum\":[2]}").unwrap());
        assert_eq!(
            s.round("r1").unwrap().unwrap().1,
            RoundState::Released("{\"sum\":[2]}".into())
        );
    }

    /// An earlier run's lease does not hold the restarted aggregator back.
    #[test]
    fn an_earlier_runs_release_lease_is_given_up_on_open() {
        let dir = crate::scratch_dir("aggstore-lease-restart");
        let first = SqliteAggregatorStore::open(&dir.join("agg.sqlite")).unwrap();
        first.insert_round("r1", b"{}").unwrap();
        assert!(first.begin_close("r1", b"close", None, |_| Ok(())).unwrap());
        assert_eq!(
            first.take_release_lease("r1", "A", 1_000, 31_000).unwrap(),
            LeaseTaken::Taken
        );
        drop(first);
        let again = SqliteAggregatorStore::open(&dir.join("agg.sqlite")).unwrap();
        assert_eq!(
            again.take_release_lease("r1", "B", 1_001, 31_001).unwrap(),
            LeaseTaken::Taken
        );
    }

    fn as_store(s: SqliteAggregatorStore) -> crate::aggregator_store::AggregatorStore {
        crate::aggregator_store::AggregatorStore::Sqlite(s)
    }

    #[test]
    fn a_failed_round_is_terminal() {
        crate::aggregator_store::failed_round_tests::a_failed_round_is_terminal(&as_store(store(
            "aggstore-failed",
        )));
    }

    #[test]
    fn a_job_lease_has_one_holder_until_it_expires() {
        crate::aggregator_store::job_lease_tests::one_holder_until_it_expires(&as_store(store(
            "aggstore-joblease",
        )));
    }

    #[test]
    fn the_job_acquirer_takes_jobs_nobody_drives() {
        crate::aggregator_store::job_lease_tests::the_acquirer_takes_jobs_nobody_drives(&as_store(
            store("aggstore-jobacquire"),
        ));
    }

    /// Handles on one file, as processes sharing it would be (the file is one process's in
    /// use, but nothing is left to chance if two open it).
    #[test]
    fn racing_handles_get_one_job_lease_each() {
        let path = crate::scratch_dir("aggstore-joblease-race").join("agg.sqlite");
        crate::aggregator_store::job_lease_tests::racing_handles_get_one_lease_each(|| {
            as_store(SqliteAggregatorStore::open(&path).unwrap())
        });
    }

    #[test]
    fn a_status_write_from_a_replaced_version_changes_nothing() {
        let path = crate::scratch_dir("aggstore-job-cas").join("agg.sqlite");
        crate::aggregator_store::job_lease_tests::a_status_write_from_a_replaced_version_changes_nothing(
            || as_store(SqliteAggregatorStore::open(&path).unwrap()),
        );
    }

    /// An earlier run's job lease does not hold the restarted aggregator back; an ended job's
    /// lease stays ended.
    #[test]
    fn an_earlier_runs_job_lease_is_given_up_on_open() {
        let dir = crate::scratch_dir("aggstore-joblease-restart");
        let first = SqliteAggregatorStore::open(&dir.join("agg.sqlite")).unwrap();
        for j in ["live", "over"] {
            assert!(
                first
                    .insert_job(j, b"{}", b"running", 0.1, ("", 0), |_| Ok(()))
                    .unwrap()
            );
            assert_eq!(
                first.take_job_lease(j, "A", 1_000, 31_000).unwrap(),
                JobLeaseTaken::Taken
            );
        }
        first.drop_job_lease("over", "A", true).unwrap();
        drop(first);
        let again = SqliteAggregatorStore::open(&dir.join("agg.sqlite")).unwrap();
        assert_eq!(
            again.acquire_job_leases("B", 1_001, 31_001, 10).unwrap(),
            vec!["live".to_string()]
        );
    }

    #[test]
    fn damaged_rows_are_refused_when_read() {
        let s = store("aggstore-damage");
        s.insert_round("r1", b"{}").unwrap();
        s.begin_close("r1", b"close", Some(0.25), |_| Ok(()))
            .unwrap();
        s.mark_released("r1", "h", 0, "{\"sum\":[1]}").unwrap();
        s.damage("UPDATE rounds SET detail = '{\"sum\":[9]}' WHERE id = 'r1'")
            .unwrap();
        assert!(matches!(s.round("r1"), Err(Error::Integrity(_))));
        assert!(matches!(
            s.specs_in(&[RoundPhase::Released]),
            Err(Error::Integrity(_))
        ));
        s.damage("UPDATE charges SET rho = 0.125 WHERE id = 'r1'")
            .unwrap();
        assert!(matches!(s.charges(), Err(Error::Integrity(_))));
        s.damage("UPDATE closes SET body = X'636c6f7366' WHERE id = 'r1'")
            .unwrap();
        assert!(matches!(s.close_body("r1"), Err(Error::Integrity(_))));
    }
}
