//! The aggregator's side of a job, whatever its kind: wait for the participants' answers, then
//! run the kind's pipeline ([`JobKind::drive`](crate::protocol::job::JobKind::drive), in the
//! kind's module of `protocol/job/`), whose DCA rounds this driver creates on the nodes,
//! publishes to the participants with their rule, and waits out until the aggregator has
//! released them. The driver holds no data and learns only the releases.
//!
//! Only the holder of the job's driver lease drives it (`acquirer`); every status write
//! of the driver is refused once the lease is another's, so a driver that lost its lease
//! changes nothing even before it notices.
//!
//! Restart: everything the driver decides is recorded in the job's status before it acts on
//! it (the answers' outcome, each round with its rule). A restarted aggregator runs the
//! pipeline again from the start: the pipeline's public randomness comes from the job's seed,
//! so it asks for the same rounds, and every round already recorded is taken as recorded —
//! created again idempotently, or its stored release returned — so nothing is released or
//! charged twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use fixedpoint_shares::{ClientVectors, DcaRound, DcaTransport, Release};

use crate::aggregator::Aggregator;
use crate::aggregator::store::RoundState;
use crate::protocol::job::kind::JobRounds;
use crate::protocol::job::{JobRound, JobSpec, JobState, JobStatus};
use crate::protocol::messages::release_of;
use crate::protocol::spec::{Round, planned_round};
use crate::{Error, Result};

/// The status a new job starts with; `node_keys` (the nodes' keys when the job is created)
/// are the keys of every round of the job.
pub fn initial_status(spec: &JobSpec, node_keys: Vec<String>) -> Result<JobStatus> {
    Ok(JobStatus {
        id: spec.id(),
        state: JobState::Answering,
        rho_reserved: spec.rho()?,
        node_keys,
        ..JobStatus::default()
    })
}

/// Runs job `id` to its end (done, aborted, failed or cancelled); its outcome is in its status. The
/// caller holds the job's driver lease and sets `lost` if it finds the lease taken over: the
/// job's rounds then stop being driven here, and nothing more is recorded.
pub async fn drive(agg: Arc<Aggregator>, id: String, poll: Duration, lost: Arc<AtomicBool>) {
    if let Err(e) = run(&agg, &id, poll, &lost).await {
        if lost.load(SeqCst) || matches!(e, Error::JobLeaseLost(_)) {
            tracing::warn!(job = %id, "stopped driving the job: {e}");
            return;
        }
        tracing::warn!(job = %id, "job ended: {e}");
        let ended = agg.update_job_as_driver(&id, |s| {
            if s.is_live() {
                s.state = JobState::Aborted;
                s.reason = Some(e.to_string());
            }
            Ok(())
        });
        if let Err(e) = ended {
            tracing::error!(job = %id, "recording the job's end: {e}");
        }
    }
}

async fn run(
    agg: &Arc<Aggregator>,
    id: &str,
    poll: Duration,
    lost: &Arc<AtomicBool>,
) -> Result<()> {
    let (spec, status) = agg
        .job(id)?
        .ok_or_else(|| Error::Job(format!("no job {id}")))?;
    if !status.is_live() {
        return Ok(());
    }
    let status = if status.state == JobState::Answering {
        close_answers(agg, &spec, poll).await?
    } else {
        status
    };
    if !status.is_live() {
        return Ok(());
    }
    let rows: Vec<usize> = status.accepted.iter().map(|(_, rows)| *rows).collect();
    let n_nodes = u16::try_from(agg.node_urls().len())
        .map_err(|_| Error::InvalidSpec("too many nodes".into()))?;
    let mut transport = JobTransport {
        agg: agg.clone(),
        runtime: tokio::runtime::Handle::current(),
        spec: spec.clone(),
        accepted: status.accepted.iter().map(|(i, _)| *i).collect(),
        poll,
        lost: lost.clone(),
    };
    // The kind's pipeline blocks on every round; it runs on a thread of its own.
    let kind = spec.kind;
    tokio::task::spawn_blocking(move || kind.drive(&spec, rows, n_nodes, &mut transport))
        .await
        .map_err(|e| Error::Job(format!("the job's {kind} task: {e}")))?
}

/// Waits until every participant on the roster has answered or the answer window is over,
/// then records who takes part. More than T refusals (or silences) end the job here, before
/// any round, with the whole reservation returned.
async fn close_answers(agg: &Aggregator, spec: &JobSpec, poll: Duration) -> Result<JobStatus> {
    let id = spec.id();
    let deadline = spec.created_unix_ms.saturating_add(spec.answer_window_ms);
    let answers = loop {
        let answers = agg.answers(&id)?;
        if answers.len() == spec.roster.len() || agg.clock().now_ms() >= deadline {
            break answers;
        }
        let (_, status) = agg
            .job(&id)?
            .ok_or_else(|| Error::Job(format!("no job {id}")))?;
        if !status.is_live() {
            return Ok(status);
        }
        tokio::time::sleep(poll).await;
    };
    // One pass over the answers, not one search per roster place (O(N²) at 10⁴ participants).
    let mut by_place = vec![None; spec.roster.len()];
    for (i, a) in &answers {
        if let Some(slot) = by_place.get_mut(*i)
            && slot.is_none()
        {
            *slot = Some(a);
        }
    }
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for (i, answer) in by_place.into_iter().enumerate() {
        match answer {
            Some(a) if a.accept => accepted.push((i, a.rows)),
            Some(a) => refused.push((i, a.reason.clone())),
            None => refused.push((i, "no answer before the deadline".to_string())),
        }
    }
    let too_many = refused.len() > spec.max_dropped;
    agg.update_job_as_driver(&id, |s| {
        if !s.is_live() {
            return Ok(());
        }
        s.accepted.clone_from(&accepted);
        s.refused.clone_from(&refused);
        if too_many {
            s.state = JobState::Aborted;
            s.reason = Some(format!(
                "{} participants refused or did not answer, more than T = {}; no round was run",
                s.refused.len(),
                spec.max_dropped
            ));
        } else {
            s.state = JobState::Running;
        }
        Ok(())
    })
}

/// The job's DCA rounds, run on this aggregator's nodes by the participants.
struct JobTransport {
    agg: Arc<Aggregator>,
    runtime: tokio::runtime::Handle,
    spec: JobSpec,
    /// Roster indices of the participants that accepted: client i of every round.
    accepted: Vec<usize>,
    poll: Duration,
    /// Set when the job's driver lease was taken over: the pipeline, which runs on a blocking
    /// thread of its own and outlives the driver's task, stops at its next look.
    lost: Arc<AtomicBool>,
}

impl DcaTransport for JobTransport {
    fn run_round(&mut self, round: &DcaRound<'_>) -> fixedpoint_shares::Result<Release> {
        let runtime = self.runtime.clone();
        runtime
            .block_on(self.run(round))
            .map_err(|e| fixedpoint_shares::Error::Transport(e.to_string()))
    }
}

impl JobRounds for JobTransport {
    fn record(&mut self, change: &mut dyn FnMut(&mut JobStatus) -> Result<()>) -> Result<()> {
        // The store refuses a writer whose lease is another's; a driver that could not renew
        // its lease may still hold it there, and records nothing more either.
        self.still_driving()?;
        self.agg.update_job_as_driver(&self.spec.id(), change)?;
        Ok(())
    }
}

impl JobTransport {
    async fn run(&self, dca: &DcaRound<'_>) -> Result<Release> {
        let ClientVectors::AtClients(rule) = dca.values else {
            return Err(Error::Job(
                "a job's rounds are computed by its participants, not handed vectors".into(),
            ));
        };
        let id = self.spec.id();
        let step = dca.config.round().0;
        self.still_driving()?;
        let (_, status) = self
            .agg
            .job(&id)?
            .ok_or_else(|| Error::Job(format!("no job {id}")))?;
        if !status.is_live() {
            return Err(Error::Job(format!(
                "job {} before round {step}",
                status.state
            )));
        }
        let round = match status.rounds.iter().find(|r| r.step == step) {
            Some(recorded) => {
                if recorded.rule != rule {
                    return Err(Error::Integrity(format!(
                        "job {id}: round {step} was recorded with another rule than the \
                         pipeline asks for now"
                    )));
                }
                // The recorded spec keeps no token list: rebuilt from the roster.
                crate::protocol::job::view::ParticipantRound::spec_for(recorded, &self.spec)?
                    .validate()?
            }
            None => self.new_round(dca, rule, step).await?,
        };
        self.create_on_nodes(&round).await?;
        let published = loop {
            self.still_driving()?;
            if let Some(p) = self.agg.published(&round)? {
                break p;
            }
            match self.agg.recorded_state(&round)? {
                Some(RoundState::Aborted(reason) | RoundState::Aborting(reason)) => {
                    return Err(Error::RoundAborted(reason));
                }
                // Its release became impossible: the job ends here, failed with the cause
                // (its rounds' charges stand, as for every round whose close was recorded).
                Some(RoundState::Failed(cause)) => {
                    let reason = format!(
                        "round {step} ({}) failed: {cause}; nothing of it was released",
                        round.id()
                    );
                    self.agg.update_job_as_driver(&id, |s| {
                        if s.is_live() {
                            s.state = JobState::Failed;
                            s.reason = Some(reason.clone());
                        }
                        Ok(())
                    })?;
                    tracing::error!(job = %id, "job failed: {reason}");
                    return Err(Error::RoundFailed(cause));
                }
                _ => {}
            }
            let (_, status) = self
                .agg
                .job(&id)?
                .ok_or_else(|| Error::Job(format!("no job {id}")))?;
            if !status.is_live() {
                // Cancelled: the round is aborted unless its close has begun (then it is
                // released and paid, as any round whose agreed set is recorded).
                let _ = self.agg.abort(&round, "the job was cancelled").await;
                return Err(Error::Job(format!("job {}", status.state)));
            }
            tokio::time::sleep(self.poll).await;
        };
        release_of(&published, dca.config)
    }

    fn still_driving(&self) -> Result<()> {
        if self.lost.load(SeqCst) {
            return Err(Error::JobLeaseLost(format!(
                "job {}: another aggregator took its driver lease over",
                self.spec.id()
            )));
        }
        Ok(())
    }

    /// Plans round `step`, records it (with its rule, and as the job's for the budget), and
    /// only then creates it.
    async fn new_round(&self, dca: &DcaRound<'_>, rule: &str, step: u64) -> Result<Round> {
        let (_, status) = self
            .agg
            .job(&self.spec.id())?
            .ok_or_else(|| Error::Job("the job disappeared".into()))?;
        let node_keys = status.node_keys;
        let round = planned_round(
            self.spec.round_number(step),
            dca,
            self.spec.validity,
            self.agg
                .clock()
                .now_ms()
                .saturating_add(self.spec.upload_window_ms),
            node_keys,
            self.accepted
                .iter()
                .map(|&i| self.spec.roster[i].clone())
                .collect(),
        )?;
        let job = self.spec.id();
        self.agg.link_job_round(&round.id(), &job)?;
        let recorded = JobRound {
            step,
            id: round.id(),
            spec: round.spec.clone(),
            rule: rule.to_string(),
            clients: self.accepted.clone(),
        };
        self.agg.update_job_as_driver(&job, |s| {
            if !s.is_live() {
                return Err(Error::Job(format!("job {}", s.state)));
            }
            s.rounds.push(recorded.clone());
            Ok(())
        })?;
        Ok(round)
    }

    /// Creates the round on every node, trying again while a node cannot be reached, until
    /// the round's deadline.
    async fn create_on_nodes(&self, round: &Round) -> Result<()> {
        let mut wait = Duration::from_millis(100);
        loop {
            match self.agg.create_round(round.spec.clone()).await {
                Ok(_) => return Ok(()),
                Err(e @ (Error::Http(_) | Error::Timeout(_)))
                    if self.agg.clock().now_ms() < round.spec.deadline_unix_ms =>
                {
                    tracing::warn!(round = round.spec.round, "creating the round: {e}");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
    }
}
