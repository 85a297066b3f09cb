//! A job's record on the aggregator: its spec, its status changed by compare-and-swap, the
//! participants' answers, and its budget reserved at creation.

use dp_noise::accountant::RoundCost;
use serde::Serialize;

use crate::aggregator::store::{JobCharge, JobWrite};
use crate::aggregator::view_cache::ForgetView;
use crate::aggregator::{Aggregator, JOB_CHANGE_ATTEMPTS};
use crate::{Error, Result};

impl Aggregator {
    /// Records job `spec` and reserves its whole budget (zCDP ρ from its (ε, δ)) at once: a
    /// job the budget cannot pay for in full is refused before any of its rounds runs. This
    /// aggregator holds the new job's driver lease from the start. The job's id and whether it
    /// is new (creating it again changes nothing).
    pub fn create_job(
        &self,
        spec: &crate::protocol::job::JobSpec,
        status: &[u8],
    ) -> Result<(String, bool)> {
        spec.validate()?;
        let id = spec.id();
        if let Some((stored, _)) = self.store.job(&id)? {
            if stored != spec.canonical_json() {
                return Err(Error::Integrity(format!("job {id}'s recorded spec")));
            }
            return Ok((id, false));
        }
        let charge = JobCharge {
            rho: spec.rho()?,
            truncation_delta: spec.truncation_delta(),
        };
        // Refuses a ρ that is not finite and positive before anything is written.
        RoundCost::zcdp(charge.rho).map_err(Error::Budget)?;
        let created = self.store.insert_job(
            &id,
            &spec.canonical_json(),
            status,
            charge,
            (&self.leases.holder, self.job_lease_until()),
            self.budget.fits(charge.rho, charge.truncation_delta),
        )?;
        Ok((id, created))
    }

    /// Job `id`'s spec and status (JSON).
    pub fn job(
        &self,
        id: &str,
    ) -> Result<
        Option<(
            crate::protocol::job::JobSpec,
            crate::protocol::job::JobStatus,
        )>,
    > {
        self.store
            .job(id)?
            .map(|(spec, status)| decode_job(id, &spec, &status))
            .transpose()
    }

    /// Every job, oldest first.
    pub fn jobs(
        &self,
    ) -> Result<
        Vec<(
            crate::protocol::job::JobSpec,
            crate::protocol::job::JobStatus,
        )>,
    > {
        self.store
            .jobs()?
            .iter()
            .map(|(id, spec, status)| decode_job(id, spec, status))
            .collect()
    }

    /// Changes job `id`'s status with `change`: the status is read, changed and written back
    /// as one compare-and-swap on the job's row (its SHA-256, which every status write
    /// changes), so that no writer — this process's driver, an analyst's cancel, or another
    /// aggregator sharing the store — ever overwrites a change made between the read and the
    /// write. A write that finds the row changed reads it again and runs `change` again on
    /// what it finds (at most [`JOB_CHANGE_ATTEMPTS`] times). A status that leaves
    /// "answering"/"running" for good settles the job: the part of its reservation its rounds
    /// did not spend comes back to the budget. A change that changes nothing writes nothing.
    pub fn update_job(
        &self,
        id: &str,
        change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        self.change_job(id, false, change)
    }

    /// As [`Aggregator::update_job`], by the job's driver: refused with
    /// [`Error::JobLeaseLost`] (nothing written) unless this aggregator holds the job's driver
    /// lease (or no other's is live) and the job has not ended, checked in the transaction
    /// that writes the status.
    pub fn update_job_as_driver(
        &self,
        id: &str,
        change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        self.change_job(id, true, change)
    }

    pub(in crate::aggregator) fn change_job(
        &self,
        id: &str,
        as_driver: bool,
        mut change: impl FnMut(&mut crate::protocol::job::JobStatus) -> Result<()>,
    ) -> Result<crate::protocol::job::JobStatus> {
        // Writers in this process take turns (fewer retries); across processes the
        // compare-and-swap below decides.
        let _one_at_a_time = self
            .job_lock
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("job lock poisoned")))?;
        // Whatever happens below, the shared participant view is rebuilt from the store.
        let _stale = ForgetView(&self.participant_views, id);
        for attempt in 1..=JOB_CHANGE_ATTEMPTS {
            let (spec_bytes, status_bytes) = self
                .store
                .job(id)?
                .ok_or_else(|| Error::Job(format!("no job {id}")))?;
            let version = crate::aggregator::store::job_sha256(id, &spec_bytes, &status_bytes);
            let (_, mut status) = decode_job(id, &spec_bytes, &status_bytes)?;
            let before = status.clone();
            change(&mut status)?;
            if status == before {
                return Ok(status);
            }
            let driver = as_driver.then(|| (self.leases.holder.as_str(), self.clock.now_ms()));
            let written = if before.is_live() && !status.is_live() {
                let ended = status.clone();
                self.store
                    .settle_job(id, Some(&version), driver, move |spent| {
                        to_json(&crate::protocol::job::JobStatus {
                            rho_spent: spent,
                            ..ended.clone()
                        })
                    })?
                    .map(|spent| status.rho_spent = spent)
            } else {
                self.store
                    .set_job_status(id, Some(&version), &to_json(&status)?, driver)?
            };
            match written {
                JobWrite::Written(()) => return Ok(status),
                JobWrite::Refused => {
                    return Err(Error::JobLeaseLost(format!(
                        "job {id}: another aggregator took its driver lease over, or the job \
                         ended; this one stops driving it"
                    )));
                }
                JobWrite::Changed => {
                    tracing::debug!(job = %id, attempt, "the job changed under a status change; reading it again");
                }
            }
        }
        Err(Error::Job(format!(
            "job {id}: its status changed under this change {JOB_CHANGE_ATTEMPTS} times in a \
             row; nothing written, try again"
        )))
    }

    /// Records participant `index`'s answer to job `job` (the first answer stands); the
    /// answer recorded.
    pub fn answer(
        &self,
        job: &str,
        index: usize,
        answer: &crate::protocol::job::Answer,
    ) -> Result<crate::protocol::job::Answer> {
        let stored = self.store.record_answer(job, index, &to_json(answer)?)?;
        serde_json::from_slice(&stored).map_err(|e| {
            Error::Integrity(format!("participant {index}'s answer to job {job}: {e}"))
        })
    }

    /// Participant `index`'s answer to job `job`, if it gave one.
    pub fn answer_of(
        &self,
        job: &str,
        index: usize,
    ) -> Result<Option<crate::protocol::job::Answer>> {
        self.store
            .answer_of(job, index)?
            .map(|a| {
                serde_json::from_slice(&a).map_err(|e| {
                    Error::Integrity(format!("participant {index}'s answer to job {job}: {e}"))
                })
            })
            .transpose()
    }

    /// Every answer to job `job`, by roster index.
    pub fn answers(&self, job: &str) -> Result<Vec<(usize, crate::protocol::job::Answer)>> {
        self.store
            .answers(job)?
            .into_iter()
            .map(|(i, a)| {
                serde_json::from_slice(&a).map(|a| (i, a)).map_err(|e| {
                    Error::Integrity(format!("participant {i}'s answer to job {job}: {e}"))
                })
            })
            .collect()
    }

    /// Records that round `round` belongs to job `job`: its cost will be paid from the job's
    /// reservation. Done before the round is created anywhere.
    pub fn link_job_round(&self, round: &str, job: &str) -> Result<()> {
        self.store.link_round(round, job)
    }
}

pub(in crate::aggregator) fn to_json(value: &impl Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::Io(std::io::Error::other(e)))
}

pub(in crate::aggregator) fn decode_job(
    id: &str,
    spec: &[u8],
    status: &[u8],
) -> Result<(
    crate::protocol::job::JobSpec,
    crate::protocol::job::JobStatus,
)> {
    let spec: crate::protocol::job::JobSpec = serde_json::from_slice(spec)
        .map_err(|e| Error::Integrity(format!("job {id}'s recorded spec: {e}")))?;
    if spec.id() != id {
        return Err(Error::Integrity(format!(
            "job {id}'s recorded spec hashes to {}",
            spec.id()
        )));
    }
    let status = serde_json::from_slice(status)
        .map_err(|e| Error::Integrity(format!("job {id}'s recorded status: {e}")))?;
    Ok((spec, status))
}
