//! The rules of jobs in the store: a job's whole budget reserved when it is created, its
//! rounds' costs recorded against that reservation, its status replaced only from the version
//! it was read at and only by its driver, its reservation shrunk to what it spent when it
//! ends; its participants' answers given once.

use super::rounds::{checked_charges, record_close};
use super::tx::{AggTx, AnswerRow, ChargeRow, JobLease, JobRoundRow, JobRow, Lease};
use super::{AggregatorStore, JobWrite, JobWriter, RecordedJob};
use crate::{Error, Result};

impl AggregatorStore {
    /// Records a new job with its status and its driver lease (`lease`: holder and expiry, so
    /// that the process creating the job drives it, no other taking it in between) and
    /// reserves its whole budget (`charge`: its zCDP ρ and its verified rounds' Σ δ_t, a
    /// charge named `job:{id}`) in one transaction that first asks `fits` whether the
    /// reservation fits the budget given every charge recorded. False (nothing changed) if the
    /// job exists already.
    pub fn insert_job(
        &self,
        id: &str,
        spec: &[u8],
        status: &[u8],
        charge: impl Into<JobCharge>,
        lease: (&str, u64),
        fits: impl Fn(&super::rounds::Charges) -> Result<()> + Send + 'static,
    ) -> Result<bool> {
        let row = JobRow::sealed(id, spec.to_vec(), status.to_vec());
        let charge = charge.into();
        let lease = JobLease {
            lease: Lease {
                holder: lease.0.to_string(),
                expires_ms: lease.1,
            },
            ended: false,
        };
        self.run_tx("insert_job", move |tx| {
            tx.lock_budget()?;
            if !tx.insert_job(&row)? {
                return Ok(false);
            }
            fits(&checked_charges(tx)?)?;
            tx.insert_charge(&ChargeRow::sealed(
                &reservation_id(&row.id),
                charge.rho,
                charge.truncation_delta,
            ))?;
            tx.insert_job_lease(&row.id, &lease)?;
            Ok(true)
        })
    }

    /// Job `id`'s spec and status (JSON), checked.
    pub fn job(&self, id: &str) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let id = id.to_string();
        self.run_tx("job", move |tx| {
            tx.job_row(&id)?
                .map(|row| row.checked().map(|r| (r.spec, r.status)))
                .transpose()
        })
    }

    /// Every job's id, oldest first.
    pub fn job_ids(&self) -> Result<Vec<String>> {
        self.run_tx("job_ids", |tx| tx.job_ids())
    }

    /// Every job's id, spec and status, oldest first, checked.
    pub fn jobs(&self) -> Result<Vec<RecordedJob>> {
        self.run_tx("jobs", |tx| {
            tx.job_rows()?
                .into_iter()
                .map(|row| row.checked().map(|r| (r.id, r.spec, r.status)))
                .collect()
        })
    }

    /// The SHA-256 of job `id`'s row as recorded (it changes with every status write): what a
    /// cached view of the job is checked against, without reading the status.
    pub fn job_version(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let id = id.to_string();
        self.run_tx("job_version", move |tx| tx.job_sha256(&id))
    }

    /// Replaces job `id`'s status, in one transaction that first checks that its row is still
    /// version `expected` (the SHA-256 [`super::job_sha256`] of the row the change was made
    /// from; `None` skips the check) and that `driver`, if given, is the job's driver (see
    /// [`JobWriter`]): [`JobWrite::Changed`] or [`JobWrite::Refused`] (nothing written) if not.
    /// A read-change-write is this compare-and-swap, so processes sharing the store never
    /// overwrite each other's change.
    pub fn set_job_status(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        status: &[u8],
        driver: JobWriter<'_>,
    ) -> Result<JobWrite<()>> {
        let change = JobChange::new(id, expected, driver);
        let status = status.to_vec();
        self.run_tx("set_job_status", move |tx| {
            let row = match change.lock_row(tx)? {
                Ok(row) => row,
                Err(refused) => return Ok(refused),
            };
            tx.put_job_status(&JobRow::sealed(&row.id, row.spec, status.clone()))?;
            Ok(JobWrite::Written(()))
        })
    }

    /// Ends job `id`: its status becomes `status(spent)` and its reservation shrinks to what
    /// its released rounds spent (`spent`), in one transaction (the rest of the budget comes
    /// back) that also marks its driver lease ended. A verified job's Σ δ_t stays as reserved,
    /// for all its planned rounds (a round's δ_t is not recorded with it). The status is written once, already
    /// holding what was spent: a reader never sees the job ended with nothing spent. Checked
    /// first as [`Self::set_job_status`] is (nothing changed unless
    /// [`JobWrite::Written`]`(spent)`).
    pub fn settle_job(
        &self,
        id: &str,
        expected: Option<&[u8]>,
        driver: JobWriter<'_>,
        status: impl Fn(f64) -> Result<Vec<u8>> + Send + 'static,
    ) -> Result<JobWrite<f64>> {
        let change = JobChange::new(id, expected, driver);
        self.run_tx("settle_job", move |tx| {
            tx.lock_budget()?;
            let row = match change.lock_row(tx)? {
                Ok(row) => row,
                Err(refused) => return Ok(refused),
            };
            let spent = rounds_spent(tx, &row.id)?;
            let status = status(spent)?;
            let truncation_delta = reservation(tx, &row.id)?.truncation_delta;
            tx.update_charge(&ChargeRow::sealed(
                &reservation_id(&row.id),
                spent,
                truncation_delta,
            ))?;
            tx.put_job_status(&JobRow::sealed(&row.id, row.spec, status))?;
            if let Some(mut lease) = tx.lock_job_lease(&row.id)? {
                lease.ended = true;
                tx.put_job_lease(&row.id, &lease)?;
            }
            Ok(JobWrite::Written(spent))
        })
    }

    /// created → closing for a round of a job: as [`Self::begin_close`], but the round's cost
    /// is recorded against the job's reservation (already charged) instead of charged again,
    /// refused with [`Error::JobBudget`] (nothing changed) if the job's rounds as recorded
    /// would then spend more than it reserved.
    pub fn begin_close_job_round(
        &self,
        id: &str,
        close_body: &[u8],
        job: &str,
        rho: f64,
    ) -> Result<bool> {
        let (id, body, job) = (id.to_string(), close_body.to_vec(), job.to_string());
        self.run_tx("begin_close_job_round", move |tx| {
            tx.lock_budget()?;
            if !record_close(tx, &id, &body)? {
                return Ok(false);
            }
            check_job_budget(&job, reserved(tx, &job)?, rounds_spent(tx, &job)?, rho)?;
            tx.put_job_round(&JobRoundRow::sealed(&id, &job, Some(rho)))?;
            Ok(true)
        })
    }

    /// Records participant `index`'s answer to job `job`; the answer already recorded if
    /// there is one (an answer is given once).
    pub fn record_answer(&self, job: &str, index: usize, answer: &[u8]) -> Result<Vec<u8>> {
        let row = AnswerRow::sealed(job, index, answer.to_vec());
        self.run_tx("record_answer", move |tx| {
            tx.insert_answer(&row)?;
            let given = tx.answer_row(&row.job, index)?;
            given.map(|r| r.answer).ok_or_else(|| {
                Error::Job(format!(
                    "job {}: no answer {index} after it was recorded",
                    row.job
                ))
            })
        })
    }

    /// Participant `index`'s answer to job `job` (JSON), checked; `None` if it gave none.
    pub fn answer_of(&self, job: &str, index: usize) -> Result<Option<Vec<u8>>> {
        let job = job.to_string();
        self.run_tx("answer_of", move |tx| {
            tx.answer_row(&job, index)?
                .map(|row| row.checked().map(|r| r.answer))
                .transpose()
        })
    }

    /// Every answer to job `job` (roster index, answer JSON), checked.
    pub fn answers(&self, job: &str) -> Result<Vec<(usize, Vec<u8>)>> {
        let job = job.to_string();
        self.run_tx("answers", move |tx| {
            tx.answer_rows(&job)?
                .into_iter()
                .map(|row| row.checked().map(|r| (r.index, r.answer)))
                .collect()
        })
    }

    /// Records that round `round` belongs to job `job` (before the round is created anywhere).
    pub fn link_round(&self, round: &str, job: &str) -> Result<()> {
        let row = JobRoundRow::sealed(round, job, None);
        self.run_tx("link_round", move |tx| tx.insert_job_round(&row))
    }

    /// Whether round `round` belongs to a job (the job's id).
    pub fn job_of_round(&self, round: &str) -> Result<Option<String>> {
        let round = round.to_string();
        self.run_tx("job_of_round", move |tx| {
            tx.job_round_row(&round)?
                .map(|row| {
                    row.checked(|r| format!("the recorded job of round {}", r.round))
                        .map(|r| r.job)
                })
                .transpose()
        })
    }
}

/// A change of a job's row: by whom, from which version.
struct JobChange {
    id: String,
    expected: Option<Vec<u8>>,
    driver: Option<(String, u64)>,
}

impl JobChange {
    fn new(id: &str, expected: Option<&[u8]>, driver: JobWriter<'_>) -> Self {
        JobChange {
            id: id.to_string(),
            expected: expected.map(<[u8]>::to_vec),
            driver: driver.map(|(holder, now_ms)| (holder.to_string(), now_ms)),
        }
    }

    /// The job's row, locked (its lease row too), if it is still the version expected and the
    /// driver may write it; else what the write comes to.
    fn lock_row<T>(&self, tx: &mut dyn AggTx) -> Result<std::result::Result<JobRow, JobWrite<T>>> {
        let id = &self.id;
        let row = tx
            .lock_job(id)?
            .ok_or_else(|| Error::Job(format!("no job {id}")))?;
        let lease = tx.lock_job_lease(id)?;
        let driver = self.driver.as_ref().map(|(h, now)| (h.as_str(), *now));
        if !may_write_job(driver, lease.as_ref()) {
            return Ok(Err(JobWrite::Refused));
        }
        if self.expected.as_ref().is_some_and(|e| *e != row.sha256) {
            return Ok(Err(JobWrite::Changed));
        }
        Ok(Ok(row))
    }
}

/// Whether `driver` may write the status of a job whose lease row is `lease`: no driver given
/// (the analyst's cancel), or the job not ended and its lease the driver's or no other
/// holder's live one.
fn may_write_job(driver: JobWriter<'_>, lease: Option<&JobLease>) -> bool {
    match (driver, lease) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some((holder, now_ms)), Some(l)) => {
            !l.ended && (l.lease.holder == holder || l.lease.expires_ms <= now_ms)
        }
    }
}

/// The refusal of a job round whose cost would take its job past its reservation.
fn check_job_budget(job: &str, reserved: f64, used: f64, rho: f64) -> Result<()> {
    if used + rho > reserved * (1.0 + 1e-9) {
        return Err(Error::JobBudget {
            job: job.to_string(),
            would_spend: used + rho,
            reserved,
        });
    }
    Ok(())
}

/// What a job reserves when it is created: its zCDP ρ and its verified rounds' Σ δ_t (0
/// without a validity mode).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobCharge {
    /// ρ.
    pub rho: f64,
    /// Σ δ_t.
    pub truncation_delta: f64,
}

impl From<f64> for JobCharge {
    /// A reservation of `rho` alone.
    fn from(rho: f64) -> Self {
        JobCharge {
            rho,
            truncation_delta: 0.0,
        }
    }
}

/// The charge that holds job `job`'s reservation.
fn reservation_id(job: &str) -> String {
    format!("job:{job}")
}

/// Job `job`'s reservation (ρ), checked.
fn reserved(tx: &mut dyn AggTx, job: &str) -> Result<f64> {
    Ok(reservation(tx, job)?.rho)
}

/// Job `job`'s reservation charge, checked.
fn reservation(tx: &mut dyn AggTx, job: &str) -> Result<ChargeRow> {
    tx.charge(&reservation_id(job))?
        .ok_or_else(|| Error::Job(format!("job {job} has no reservation recorded")))?
        .checked(|_| format!("the reservation of job {job}"))
}

/// What job `job`'s closed rounds cost, each row checked.
fn rounds_spent(tx: &mut dyn AggTx, job: &str) -> Result<f64> {
    let mut spent = 0.0;
    for row in tx.job_round_rows(job)? {
        let row =
            row.checked(|r| format!("the recorded charge of job {job}'s round {}", r.round))?;
        spent += row.rho.unwrap_or(0.0);
    }
    Ok(spent)
}
