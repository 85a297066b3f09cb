//! A job's driver lease, this aggregator's side: only the holder drives a job (see
//! `aggregator::store`, and `acquirer` for who takes which job when).

use crate::aggregator::store::JobLeaseTaken;
use crate::aggregator::*;

impl Aggregator {
    /// The same aggregator holding a job's driver lease for `lease` between renewals: if it
    /// dies while it drives a job, another aggregator on the same store takes the job over
    /// that long after its last renewal.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a lease under 300 ms (renewed every third of it, it would
    /// expire between renewals on a busy machine).
    pub fn with_job_lease(mut self, lease: Duration) -> Result<Self> {
        self.leases.job = checked_length("job", lease)?;
        Ok(self)
    }

    /// How long this aggregator holds a job's driver lease between renewals.
    pub fn job_lease(&self) -> Duration {
        self.leases.job
    }

    pub(in crate::aggregator) fn job_lease_until(&self) -> u64 {
        crate::lease::lease_until(&*self.clock, self.leases.job)
    }

    /// Takes job `id`'s driver lease; false if another aggregator's is live or the job ended.
    pub(crate) fn take_job_lease(&self, id: &str) -> Result<bool> {
        let now = self.clock.now_ms();
        let until = self.job_lease_until();
        match self
            .store
            .take_job_lease(id, &self.leases.holder, now, until)?
        {
            JobLeaseTaken::Taken => Ok(true),
            JobLeaseTaken::HeldBy(holder, until) => {
                tracing::debug!(job = %id, "aggregator {holder} drives the job until {until} ms");
                Ok(false)
            }
            JobLeaseTaken::Ended => Ok(false),
        }
    }

    /// Takes the driver leases of at most `limit` jobs that have not ended and whose lease is
    /// not live (nobody drives them: new, or their driver died); their ids.
    pub(crate) fn acquire_jobs(&self, limit: usize) -> Result<Vec<String>> {
        let now = self.clock.now_ms();
        let until = self.job_lease_until();
        self.store
            .acquire_job_leases(&self.leases.holder, now, until, limit)
    }

    /// Renews job `id`'s driver lease; false if another aggregator took it over.
    pub(crate) fn renew_job_lease(&self, id: &str) -> Result<bool> {
        self.store
            .renew_job_lease(id, &self.leases.holder, self.job_lease_until())
    }

    /// Gives job `id`'s driver lease up (another process may take it at once), for good if
    /// the job `ended`.
    pub(crate) fn drop_job_lease(&self, id: &str, ended: bool) -> Result<()> {
        self.store.drop_job_lease(id, &self.leases.holder, ended)
    }
}
