//! Which aggregator drives which job, as Janus's job acquirer decides it: every poll, each
//! aggregator takes the driver leases of live jobs that nobody drives (new, or their driver
//! died or gave up) and drives them; a job created through an aggregator is taken by it at
//! once. A driver renews its lease every third of the lease's length and stops, writing
//! nothing more, as soon as it finds the lease taken over.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::aggregator::Aggregator;
use crate::lease::{self, Held};

/// Jobs whose leases one pass takes at most: aggregators starting together on a store with
/// many live jobs share them out instead of the first one taking all.
const JOBS_PER_PASS: usize = 8;

pub(crate) struct JobAcquirer {
    agg: Arc<Aggregator>,
    poll: Duration,
    /// Jobs this process drives now. A lease this process takes again (it lapsed under a
    /// driver too busy to renew it) does not start a second driver of the same job.
    driving: Mutex<HashSet<String>>,
}

impl JobAcquirer {
    pub(crate) fn new(agg: Arc<Aggregator>, poll: Duration) -> Arc<Self> {
        Arc::new(JobAcquirer {
            agg,
            poll,
            driving: Mutex::new(HashSet::new()),
        })
    }

    /// Drives job `id` if this aggregator takes its lease (a job just created here, whose
    /// lease it holds already unless it lapsed).
    pub(crate) fn take_and_drive(self: &Arc<Self>, id: &str) {
        match self.agg.take_job_lease(id) {
            Ok(true) => self.drive(id.to_string()),
            Ok(false) => {}
            Err(e) => tracing::warn!(job = %id, "taking the job's lease: {e}"),
        }
    }

    /// One pass: takes the leases of live jobs nobody drives, and drives them.
    pub(crate) fn pass(self: &Arc<Self>) {
        match self.agg.acquire_jobs(JOBS_PER_PASS) {
            Ok(ids) => {
                for id in ids {
                    tracing::info!(job = %id, "driving job");
                    self.drive(id);
                }
            }
            Err(e) => tracing::error!("acquiring jobs: {e}"),
        }
    }

    fn drive(self: &Arc<Self>, id: String) {
        let started = self
            .driving
            .lock()
            .is_ok_and(|mut driving| driving.insert(id.clone()));
        if !started {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            this.drive_under_lease(&id).await;
            if let Ok(mut driving) = this.driving.lock() {
                driving.remove(&id);
            }
        });
    }

    /// Runs job `id`'s driver while renewing its lease; gives the lease up when the driver
    /// ends (for good if the job did), keeps nothing if the lease was taken over.
    async fn drive_under_lease(&self, id: &str) {
        let lost = Arc::new(AtomicBool::new(false));
        let drive =
            crate::aggregator::jobs::driver::drive(self.agg.clone(), id.to_string(), self.poll, {
                lost.clone()
            });
        let renew = || self.agg.renew_job_lease(id);
        if let Held::Lost(why) = lease::hold(self.agg.job_lease(), drive, renew).await {
            // The pipeline's blocking task may still be in a round: it sees this and stops
            // before its next step.
            lost.store(true, SeqCst);
            let why = match why {
                Some(e) => format!("its lease could not be renewed: {e}"),
                None => "another aggregator took its lease over".to_string(),
            };
            tracing::warn!(job = %id, "stops driving the job: {why}");
            return;
        }
        let ended = match self.agg.job(id) {
            Ok(Some((_, status))) => !status.is_live(),
            Ok(None) => true,
            // Not known to be over: given up, to be taken again.
            Err(_) => false,
        };
        if let Err(e) = self.agg.drop_job_lease(id, ended) {
            tracing::warn!(job = %id, "giving the job's lease up: {e}");
        }
    }
}
