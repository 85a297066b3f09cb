//! The rules of leases: who drives a closing round's release, and who drives a live job. A
//! lease is taken when nobody else's is live, kept by renewing it, given up by letting it
//! expire at once; each decision is made on the lease row locked.

use super::rounds::may_release;
use super::tx::{AggTx, JobLease, Lease};
use super::{AggregatorStore, JobLeaseTaken, LeaseTaken, RoundPhase};
use crate::Result;

impl AggregatorStore {
    /// Takes the release lease of closing round `id` for `holder` until `until_ms`, if no
    /// lease exists, the last one expired by `now_ms`, or `holder` has it already.
    pub fn take_release_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<LeaseTaken> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("take_release_lease", move |tx| {
            // The round's row first, locked: takers of a round's first lease (no row yet to
            // lock) take turns on it, and its release waits for them.
            if tx.lock_round(&id)?.map(|r| r.state) != Some(RoundPhase::Closing) {
                return Ok(LeaseTaken::NotClosing);
            }
            let lease = tx.lock_release_lease(&id)?;
            if let Some(l) = lease.filter(|l| !may_release(Some(l), &holder, now_ms)) {
                return Ok(LeaseTaken::HeldBy(l.holder, l.expires_ms));
            }
            tx.put_release_lease(&id, &lease_of(&holder, until_ms))?;
            Ok(LeaseTaken::Taken)
        })
    }

    /// Moves the expiry of round `id`'s release lease to `until_ms` if `holder` still has it;
    /// false if another holder took it over.
    pub fn renew_release_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("renew_release_lease", move |tx| {
            let held = tx
                .lock_release_lease(&id)?
                .is_some_and(|l| l.holder == holder);
            if held {
                tx.put_release_lease(&id, &lease_of(&holder, until_ms))?;
            }
            Ok(held)
        })
    }

    /// Gives up `holder`'s release lease of round `id` (it expires now), so that another
    /// process may take it at once.
    pub fn drop_release_lease(&self, id: &str, holder: &str) -> Result<()> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("drop_release_lease", move |tx| {
            if tx
                .lock_release_lease(&id)?
                .is_some_and(|l| l.holder == holder)
            {
                tx.put_release_lease(&id, &lease_of(&holder, 0))?;
            }
            Ok(())
        })
    }

    /// The holder and expiry of round `id`'s release lease, if a lease row exists.
    #[cfg(test)]
    pub fn release_lease(&self, id: &str) -> Result<Option<(String, u64)>> {
        let id = id.to_string();
        self.run_tx("release_lease", move |tx| {
            Ok(tx
                .lock_release_lease(&id)?
                .map(|l| (l.holder, l.expires_ms)))
        })
    }

    /// Takes job `id`'s driver lease for `holder` until `until_ms`, if no other holder's lease
    /// is live at `now_ms` and the job has not ended.
    pub fn take_job_lease(
        &self,
        id: &str,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<JobLeaseTaken> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("take_job_lease", move |tx| {
            let Some(lease) = tx.lock_job_lease(&id)?.filter(|l| !l.ended) else {
                return Ok(JobLeaseTaken::Ended);
            };
            if lease.lease.holder != holder && lease.lease.expires_ms > now_ms {
                return Ok(JobLeaseTaken::HeldBy(
                    lease.lease.holder,
                    lease.lease.expires_ms,
                ));
            }
            let taken = JobLease {
                lease: lease_of(&holder, until_ms),
                ended: false,
            };
            tx.put_job_lease(&id, &taken)?;
            Ok(JobLeaseTaken::Taken)
        })
    }

    /// Takes, for `holder` until `until_ms`, the driver leases of at most `limit` jobs that
    /// have not ended and whose lease expired by `now_ms` (oldest job first); their ids.
    /// Processes acquiring at once get distinct jobs.
    pub fn acquire_job_leases(
        &self,
        holder: &str,
        now_ms: u64,
        until_ms: u64,
        limit: usize,
    ) -> Result<Vec<String>> {
        let lease = lease_of(holder, until_ms);
        self.run_tx("acquire_job_leases", move |tx| {
            tx.acquire_job_leases(&lease, now_ms, limit)
        })
    }

    /// Moves the expiry of job `id`'s driver lease to `until_ms` if `holder` still has it;
    /// false if another holder took it over.
    pub fn renew_job_lease(&self, id: &str, holder: &str, until_ms: u64) -> Result<bool> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("renew_job_lease", move |tx| {
            change_own_job_lease(tx, &id, &holder, |l| l.lease.expires_ms = until_ms)
        })
    }

    /// Gives up `holder`'s driver lease of job `id` (it expires now), marking it ended if
    /// `ended` (the job is over: no process takes it again).
    pub fn drop_job_lease(&self, id: &str, holder: &str, ended: bool) -> Result<()> {
        let (id, holder) = (id.to_string(), holder.to_string());
        self.run_tx("drop_job_lease", move |tx| {
            change_own_job_lease(tx, &id, &holder, |l| {
                l.lease.expires_ms = 0;
                l.ended |= ended;
            })?;
            Ok(())
        })
    }

    /// Job `id`'s driver lease: (holder, expiry, ended), if a lease row exists.
    #[cfg(test)]
    pub fn job_lease(&self, id: &str) -> Result<Option<(String, u64, bool)>> {
        let id = id.to_string();
        self.run_tx("job_lease", move |tx| {
            Ok(tx
                .lock_job_lease(&id)?
                .map(|l| (l.lease.holder, l.lease.expires_ms, l.ended)))
        })
    }
}

fn lease_of(holder: &str, expires_ms: u64) -> Lease {
    Lease {
        holder: holder.to_string(),
        expires_ms,
    }
}

/// Applies `change` to job `id`'s driver lease if `holder` holds it; whether it did.
fn change_own_job_lease(
    tx: &mut dyn AggTx,
    id: &str,
    holder: &str,
    change: impl FnOnce(&mut JobLease),
) -> Result<bool> {
    let Some(mut lease) = tx.lock_job_lease(id)?.filter(|l| l.lease.holder == holder) else {
        return Ok(false);
    };
    change(&mut lease);
    tx.put_job_lease(id, &lease)?;
    Ok(true)
}
