//! The aggregator's side of a job: wait for the participants' answers, then run the learner's
//! pipeline (`blr::fit_held` over remote holders) whose DCA rounds this driver creates on the
//! nodes, publishes to the participants with their contribution rule, and waits out until the
//! aggregator has released them. The driver holds no data and learns only the releases.
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
use projection::holders::Holders;

use crate::aggregator::Aggregator;
use crate::aggregator::store::RoundState;
use crate::protocol::job::round_rule::{Rule, SumRule, TrainRule};
use crate::protocol::job::sum::{SumResult, sum_in_units, sum_round_config, sum_sensitivity};
use crate::protocol::job::train::{TrainResult, trainer_config};
use crate::protocol::job::{
    JobClippedShare, JobKind, JobResult, JobRound, JobSpec, JobState, JobStatus,
};
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
    let transport = JobTransport {
        agg: agg.clone(),
        runtime: tokio::runtime::Handle::current(),
        spec: spec.clone(),
        accepted: status.accepted.iter().map(|(i, _)| *i).collect(),
        poll,
        lost: lost.clone(),
    };
    match spec.kind {
        JobKind::Train => return run_train(agg, spec, rows, n_nodes, transport).await,
        JobKind::Sum => return run_sum(agg, spec, rows, n_nodes, transport).await,
        JobKind::Regression => return run_regression(agg, spec, rows, n_nodes, transport).await,
        JobKind::Blr => {}
    }
    let config = spec.fit_config(n_nodes);
    let fit = over_participants(&spec, rows, transport, "pipeline", move |h, rng, t| {
        blr::fit_held(h, &config, rng, t)
    })
    .await?;
    let result = JobResult {
        mean: fit.posterior.mean.clone(),
        precision: {
            let p = fit.posterior.precision();
            (0..p.nrows())
                .flat_map(|i| (0..p.ncols()).map(move |j| (i, j)))
                .map(|(i, j)| p[(i, j)])
                .collect()
        },
        stats: fit.stats.to_flat(false),
        records: fit.stats.n,
        std: fit.std.as_ref().map(|s| {
            let mut v = s.x.clone();
            v.push(s.y);
            v
        }),
        thresholds: fit.thresholds.as_ref().map(|t| (t.omega_x, t.omega_y)),
        clipped: fit.clipped.as_ref().map(|c| JobClippedShare {
            y: c.y,
            x: c.x,
            share_sd: c.share_sd,
        }),
        spent_epsilon: fit.spent.epsilon,
        spent_delta: fit.spent.delta,
    };
    agg.update_job_as_driver(id, |s| {
        if s.is_live() {
            s.state = JobState::Done;
            s.result = Some(result.clone());
        }
        Ok(())
    })?;
    tracing::info!(job = %id, "job done");
    Ok(())
}

/// A `train` job: dca-learning's trainer over the participants, one round per iteration, each
/// iteration's release and the weights recorded in the job's status as they come.
async fn run_train(
    agg: &Arc<Aggregator>,
    spec: JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    mut transport: JobTransport,
) -> Result<()> {
    let id = spec.id();
    let settings = spec
        .train
        .clone()
        .ok_or_else(|| Error::InvalidSpec("job: a train job without [train]".into()))?;
    let config = trainer_config(&spec, rows.len(), n_nodes)?;
    let z = match config.privacy {
        dca_learning::Privacy::Private {
            noise_multiplier, ..
        } => noise_multiplier,
        dca_learning::Privacy::NonPrivate => 0.0,
    };
    let records: usize = rows.iter().sum();
    // The trainer's own randomness is public here: its clients are remote and draw their
    // coins, masks and noise themselves; it only numbers the rounds.
    let mut trainer = dca_learning::Trainer::with_clients(
        config,
        rows,
        spec.max_rows,
        spec.features.len(),
        dp_noise::rng::RngSource::InsecureFixedSeed(spec.seed()),
    )?;
    let agg2 = agg.clone();
    let job = id.clone();
    tokio::task::spawn_blocking(move || -> Result<()> {
        for iteration in 0..settings.iterations {
            let rule = Rule::Train(TrainRule {
                iteration,
                weights: trainer.params().to_vec(),
                clip_norm: settings.clip_norm,
                sampling_rate: settings.sampling_rate,
            })
            .to_json();
            let step = trainer.step_at_clients(&rule, &[], &mut transport)?;
            let params = trainer.params().to_vec();
            agg2.update_job_as_driver(&job, |s| {
                let r = s.train_result.get_or_insert_with(TrainResult::default);
                // A restarted driver goes through the recorded iterations again.
                r.sums.truncate(iteration as usize);
                r.sums.push(step.released_sum.clone());
                r.set_params(&params, settings.intercept);
                r.records = records;
                r.noise_multiplier = z;
                Ok(())
            })?;
        }
        Ok(())
    })
    .await
    .map_err(|e| Error::Job(format!("the job's training task: {e}")))??;
    finish(agg, &id, |_| {})
}

/// A `sum` job: one round of the columns' sums.
async fn run_sum(
    agg: &Arc<Aggregator>,
    spec: JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    mut transport: JobTransport,
) -> Result<()> {
    let id = spec.id();
    let config = sum_round_config(&spec, rows.len(), n_nodes)?;
    let rule = Rule::Sum(SumRule {
        columns: spec.features.len() + 1,
    })
    .to_json();
    let l2_sensitivity = sum_sensitivity(&spec);
    let seed = spec.seed();
    let release = tokio::task::spawn_blocking(move || {
        transport.run_round(&DcaRound {
            config: &config,
            values: ClientVectors::AtClients(&rule),
            dropped: &[],
            l2_sensitivity,
            // Public, unused: the participants draw their own noise and masks.
            rng: dp_noise::rng::RngSource::InsecureFixedSeed(seed),
        })
    })
    .await
    .map_err(|e| Error::Job(format!("the job's round task: {e}")))??;
    let records: usize = rows.iter().sum();
    let result = SumResult {
        sums: sum_in_units(&spec, &release.sum, records),
        released: release.sum,
        records,
        noise_sigma: release.noise_sigma_released,
    };
    finish(agg, &id, move |s| s.sum_result = Some(result.clone()))
}

/// A `regression` job: the library's regression over the participants (one round of the
/// design's statistics), its rounds run by the participants through `transport`.
async fn run_regression(
    agg: &Arc<Aggregator>,
    spec: JobSpec,
    rows: Vec<usize>,
    n_nodes: u16,
    transport: JobTransport,
) -> Result<()> {
    let id = spec.id();
    let config = crate::protocol::job::regression::regression_config(&spec, n_nodes)?;
    let fit = over_participants(&spec, rows, transport, "regression", move |h, rng, t| {
        blr::fit_regression_held(h, &config, rng, t)
    })
    .await?;
    let result = crate::protocol::job::regression::RegressionResult::of(&spec, &fit);
    finish(agg, &id, move |s| {
        s.regression_result = Some(result.clone())
    })
}

/// Runs a `blr` learner (`fit`) on a blocking thread over the participants who accepted (party
/// i holds `rows[i]`), its DCA rounds run by them through `transport`, with the job's public
/// randomness (which draws none of the participants' noise or masks: they draw their own).
async fn over_participants<T: Send + 'static>(
    spec: &JobSpec,
    rows: Vec<usize>,
    mut transport: JobTransport,
    what: &str,
    fit: impl FnOnce(&Holders<'_>, dp_noise::rng::RngSource, &mut JobTransport) -> blr::Result<T>
    + Send
    + 'static,
) -> Result<T> {
    let rng = dp_noise::rng::RngSource::InsecureFixedSeed(spec.seed());
    let max_rows = spec.max_rows;
    let fitted = tokio::task::spawn_blocking(move || {
        let holders = Holders::Remote {
            rows: &rows,
            max_rows,
        };
        fit(&holders, rng, &mut transport)
    })
    .await
    .map_err(|e| Error::Job(format!("the job's {what} task: {e}")))??;
    Ok(fitted)
}

/// Marks a live job done, with `result` recorded.
fn finish(agg: &Aggregator, id: &str, mut result: impl FnMut(&mut JobStatus)) -> Result<()> {
    agg.update_job_as_driver(id, |s| {
        if s.is_live() {
            s.state = JobState::Done;
            result(s);
        }
        Ok(())
    })?;
    tracing::info!(job = %id, "job done");
    Ok(())
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
