//! Taking part in jobs: looking for the jobs that name this participant, and following each —
//! answering it, then for each round that names this participant checking the round, paying
//! for it, computing the contribution from the rows and sending it sealed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dp_noise::rng::RngSource;
use reqwest::StatusCode;

use super::files::io_at;
use super::{Outcome, Participant, checked_json, decide, outcome_of};
use crate::participant::ledger::{Entry, people};
use crate::protocol::job::kind::{Expected, RoundRule};
use crate::protocol::job::{Answer, JobRound, JobSpec, JobState};
// What a participant works from: its light view of a job joined with the job's spec.
use crate::protocol::job::view::{JoinedView as JobView, ParticipantRound, ParticipantView};
use crate::protocol::spec::{Round, token_hash};
use crate::secret::SecretString;
use crate::{Error, MEDIA_JSON, Result, hex};

/// Rounds rebuilt from their job's roster and checked against their ids, shared by every
/// participant of this process: a round is named by its config's SHA-256, so one check serves
/// all, and N participants of one process hold one O(N) copy, not N. The latest few are kept.
static ROUNDS: Mutex<VecDeque<(String, Arc<Round>)>> = Mutex::new(VecDeque::new());
const KEPT_ROUNDS: usize = 64;

/// Round `job_round`'s whole config, rebuilt from `spec`'s roster and checked against its id.
pub(super) fn verified_round(job_round: &JobRound, spec: &JobSpec) -> Result<Arc<Round>> {
    // A panic while the list was held cannot leave it half-changed (single pushes and pops).
    let mut rounds = ROUNDS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, round)) = rounds.iter().find(|(id, _)| *id == job_round.id) {
        return Ok(round.clone());
    }
    // Built under the lock: participants that see a new round at once wait for one check
    // instead of each building its own copy.
    let mut round = ParticipantRound::spec_for(job_round, spec)?.validate()?;
    if round.id() != job_round.id {
        return Err(Error::Job(format!(
            "round {}: its config does not hash to its id",
            job_round.id
        )));
    }
    // `token_hashes` keeps what the checks need.
    round.drop_token_list();
    let round = Arc::new(round);
    if rounds.len() == KEPT_ROUNDS {
        rounds.pop_front();
    }
    rounds.push_back((job_round.id.clone(), round.clone()));
    Ok(round)
}

/// What the aggregator answered a participant's look for work.
pub(super) enum Looked {
    Jobs(Vec<JobView>),
    /// 403 (its token is on no job's roster) or 404 (the job it follows is not there): no job
    /// names it yet. The aggregator's words.
    NotNamed(String),
}

impl Participant {
    /// Follows job `only` (every job on whose roster it is, when `None`) until it ends; without
    /// `only`, runs until the process is stopped. Its ledger is checked against the
    /// aggregator's record first (and again before each answer); while no job names it, it
    /// waits, at most `wait_for_job`.
    pub async fn run(&self, only: Option<&str>) -> Result<Outcome> {
        std::fs::create_dir_all(&self.state_dir)
            .map_err(|e| io_at(e, "--state-dir", &self.state_dir))?;
        let mut wait = self.poll;
        let mut checked = false;
        let started = tokio::time::Instant::now();
        let mut said_waiting: Option<tokio::time::Instant> = None;
        loop {
            let looked = if checked {
                self.look(only).await
            } else {
                // The ledger is checked against the aggregator's record before anything else.
                match self.checked_ledger().await {
                    Ok(_) => {
                        checked = true;
                        self.look(only).await
                    }
                    Err(e) => Err(e),
                }
            };
            match looked {
                Ok(Looked::Jobs(views)) => {
                    wait = self.poll;
                    said_waiting = None;
                    for view in &views {
                        match self.handle(view).await {
                            Ok(()) => {}
                            // A ledger that cannot be trusted stops the participant: it answers
                            // nothing until the ledger is restored or rebuilt.
                            Err(e @ Error::Ledger(_)) => return Err(e),
                            Err(e) => tracing::warn!(job = %view.status.id, "{e}"),
                        }
                    }
                    if let Some(view) = views.first().filter(|_| only.is_some())
                        && !view.status.is_live()
                    {
                        let file = self.ledger_file()?;
                        let record = self.record().await;
                        let record = match record {
                            Ok(r) => r,
                            Err(e @ (Error::Http(_) | Error::Timeout(_) | Error::Io(_))) => {
                                tracing::warn!("asking the aggregator for its record: {e}");
                                tokio::time::sleep(wait).await;
                                continue;
                            }
                            Err(e) => return Err(e),
                        };
                        let id = &view.status.id;
                        return Ok(outcome_of(
                            &view.status,
                            file.ledger.jobs.get(id),
                            record.iter().find(|r| r.id == *id),
                        ));
                    }
                }
                Ok(Looked::NotNamed(why)) => {
                    let waited = started.elapsed();
                    let what = match only {
                        Some(id) => {
                            format!("job {id} to be created with this participant on its roster")
                        }
                        None => "a job whose roster lists this participant's token".to_string(),
                    };
                    if waited >= self.wait_for_job {
                        return Err(Error::Job(format!(
                            "no job named this participant within {} s of waiting \
                             (--wait-for-job): the aggregator says {why}; waited for {what}",
                            self.wait_for_job.as_secs()
                        )));
                    }
                    if said_waiting.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                        tracing::info!(
                            token_sha256 = %hex::encode(&token_hash(self.token.expose())),
                            "waiting for {what} at {} ({}; giving up after {} s)",
                            self.aggregator,
                            why,
                            self.wait_for_job.saturating_sub(waited).as_secs()
                        );
                        said_waiting = Some(tokio::time::Instant::now());
                    }
                    wait = self.poll;
                }
                // The aggregator does not know this participant's token, or its ledger cannot
                // be trusted: asking again will not change that.
                Err(e @ (Error::Job(_) | Error::Ledger(_) | Error::Integrity(_))) => {
                    return Err(e);
                }
                Err(e) => {
                    tracing::warn!("asking the aggregator for jobs: {e}");
                    wait = (wait * 2).min(Duration::from_secs(5));
                }
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// The jobs that name this participant (job `only`, when given), each joined with its spec.
    pub(super) async fn look(&self, only: Option<&str>) -> Result<Looked> {
        let url = match only {
            Some(id) => format!("{}/jobs/{id}", self.aggregator),
            None => format!("{}/jobs", self.aggregator),
        };
        let r = self
            .http
            .get(&url)
            .bearer_auth(self.token.expose())
            .send()
            .await?;
        let status = r.status();
        if matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND) {
            return Ok(Looked::NotNamed(format!(
                "{status}: {}",
                r.text().await.unwrap_or_default()
            )));
        }
        let polled: Vec<ParticipantView> = if only.is_some() {
            vec![checked_json(r, &url, only).await?]
        } else {
            checked_json(r, &url, only).await?
        };
        let mut views = Vec::with_capacity(polled.len());
        for view in polled {
            let spec = self.spec_of(&view.id).await?;
            views.push(view.with_spec(&spec)?);
        }
        Ok(Looked::Jobs(views))
    }

    /// Takes job `view` as far as it can go now: the answer decided and written to the ledger
    /// before it is sent, the job's end written, or each of its rounds that names this
    /// participant contributed to.
    async fn handle(&self, view: &JobView) -> Result<()> {
        // The spec's hash was checked against the job's id when it was fetched (`spec_of`).
        let id = &view.status.id;
        let mut file = self.ledger_file()?;
        let entry = match file.ledger.jobs.get(id) {
            Some(e) => e.clone(),
            None if view.status.state == JobState::Answering => {
                // Before a new answer, the ledger is checked against the aggregator's record
                // again: a ledger deleted or edited since the start grants nothing.
                file = self.checked_ledger().await?;
                let entry = decide(
                    &self.policy,
                    &self.rows,
                    &view.spec,
                    file.ledger.committed(),
                )?;
                match &entry.answer {
                    a if a.accept => tracing::info!(job = %id, rows = a.rows, "accepting job"),
                    a => tracing::warn!(job = %id, "refusing job: {}", a.reason),
                }
                // Written before it is sent: the commitment is never forgotten.
                file.append(Entry::Answer {
                    job: id.clone(),
                    answer: entry.answer.clone(),
                    epsilon: entry.epsilon,
                    delta: entry.delta,
                    rho_budget: entry.rho_budget,
                })?;
                entry
            }
            None => return Ok(()),
        };
        if view.status.state == JobState::Answering {
            return self.send_answer(id, &entry.answer).await;
        }
        if !view.status.is_live() && entry.ended.is_none() {
            // What the job did not spend of this participant's ε comes back (Ledger::committed).
            file.append(Entry::Ended {
                job: id.clone(),
                state: view.status.state,
            })?;
            return Ok(());
        }
        if !entry.answer.accept || entry.stopped.is_some() || view.status.state != JobState::Running
        {
            return Ok(());
        }
        let me = view
            .you
            .ok_or_else(|| Error::Job("the aggregator did not say our roster place".into()))?;
        for round in &view.status.rounds {
            let Some(client) = round.clients.iter().position(|&i| i == me) else {
                continue;
            };
            if entry.rounds.get(&round.id).is_some_and(|r| r.uploaded) {
                continue;
            }
            match self.contribute(view, round, client as u64).await {
                Ok(()) => {}
                // A network or disk hiccup is tried again at the next look, and does not hold
                // up a later round (a round that closed before this participant reached it
                // stays missed: it counts as a dropout there).
                Err(e @ (Error::Http(_) | Error::Timeout(_) | Error::Io(_))) => {
                    tracing::warn!(job = %id, round = %round.id, "will try again: {e}");
                }
                Err(e @ Error::Ledger(_)) => return Err(e),
                // Anything else (a round that does not match the job, rows the round cannot
                // hold) will not change: this participant leaves the job and says why.
                Err(e) => {
                    tracing::warn!(job = %id, round = %round.id, "leaving the job: {e}");
                    self.ledger_file()?.append(Entry::Stopped {
                        job: id.clone(),
                        reason: e.to_string(),
                    })?;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    async fn send_answer(&self, id: &str, answer: &Answer) -> Result<()> {
        let r = self
            .http
            .post(format!("{}/jobs/{id}/answer", self.aggregator))
            .bearer_auth(self.token.expose())
            .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
            .body(serde_json::to_vec(answer).map_err(|e| Error::Io(std::io::Error::other(e)))?)
            .send()
            .await?;
        match r.status() {
            StatusCode::OK => Ok(()),
            // The answering window closed meanwhile: the job goes on without us.
            StatusCode::CONFLICT => Ok(()),
            s => Err(Error::Http(format!(
                "answering job {id}: {s}: {}",
                r.text().await.unwrap_or_default()
            ))),
        }
    }

    /// Checks round `round` against the job this participant accepted, pays for it, seals
    /// (or reloads) its shares and uploads them.
    async fn contribute(&self, view: &JobView, job_round: &JobRound, client: u64) -> Result<()> {
        let spec = &view.spec;
        let round = verified_round(job_round, spec)?;
        let rule = spec.kind.round_rule(spec, job_round)?;
        check_round(
            spec,
            &round,
            &rule.expected(spec)?,
            job_round,
            client,
            &self.token,
            view.nodes.len(),
            &view.status.node_keys,
        )?;
        rule.check_budget(spec, &round)?;
        let rho = crate::protocol::spec::round_rho(&round)?.ok_or_else(|| {
            Error::Job("round has no noise: NON-PRIVATE, this participant does not join".into())
        })?;
        let id = &view.status.id;
        let mut file = self.ledger_file()?;
        let job = file
            .ledger
            .jobs
            .get(id)
            .ok_or_else(|| Error::Job(format!("job {id} is not in the ledger")))?;
        if !job.rounds.contains_key(&job_round.id) {
            if spec.validity.is_some() && job.rounds.len() as u64 >= spec.max_rounds() {
                // Each verified round's truncation is in the job's δ for its planned rounds
                // only.
                return Err(Error::Job(format!(
                    "round {} would be round {} of a verified job planned for {}",
                    job_round.id,
                    job.rounds.len() + 1,
                    spec.max_rounds()
                )));
            }
            let used = job.rho_charged();
            if used + rho > job.rho_budget * (1.0 + 1e-9) {
                return Err(Error::Job(format!(
                    "round {} would bring the job's spending of this participant's data to \
                     zCDP ρ = {}, over the ρ = {} of the ε = {} it accepted",
                    job_round.id,
                    people(used + rho),
                    people(job.rho_budget),
                    people(job.epsilon)
                )));
            }
            // Paid before anything is sealed: a release it cannot stop is always on the books.
            file.append(Entry::Charge {
                job: id.clone(),
                round: job_round.id.clone(),
                rho,
            })?;
        }
        let sealed = match self.load_attempt(&job_round.id, round.node_keys.len())? {
            Some(sealed) => sealed,
            None => {
                let (rng, sampling) = rule.rngs(self.insecure_seed, job_round.step, client);
                let values = self.contribution(spec, &*rule, sampling)?;
                let sealed = crate::protocol::upload::seal_shares(&round, client, &values, rng)?;
                self.save_attempt(&job_round.id, &sealed)?;
                sealed
            }
        };
        crate::protocol::upload::upload_shares(
            &self.http,
            &round,
            &view.nodes,
            client,
            self.token.expose(),
            &sealed,
        )
        .await?;
        self.ledger_file()?.append(Entry::Uploaded {
            job: id.clone(),
            round: job_round.id.clone(),
        })?;
        tracing::info!(job = %id, round = %job_round.id, step = job_round.step, "uploaded");
        Ok(())
    }

    /// This participant's vector under `rule`: its rows in chunks (bounded memory for a file),
    /// each mapped from the job's public ranges onto ±5 (a `regression` job's design maps the
    /// rows as they are itself), then summed as `rule` says — for `blr` and `regression`, the
    /// same numbers as `rule.client_vector` over all its rows at once; for `train` and `sum`,
    /// see their kind's module in `protocol/job/`.
    fn contribution(
        &self,
        spec: &JobSpec,
        rule: &dyn RoundRule,
        sampling: RngSource,
    ) -> Result<Vec<f64>> {
        let schema = blr::data::CsvSchema {
            x: spec.features.iter().map(|c| c.name.clone()).collect(),
            y: spec.target.name.clone(),
        };
        let chunk_rows = blr::silo::csv_chunk_rows(schema.x.len());
        let bounds = spec.public_bounds();
        let target = std::slice::from_ref(&spec.target.name);
        let mut sum = rule.accumulator(spec, sampling)?;
        let raw = rule.reads_raw_rows();
        self.rows.for_each_chunk(&schema, chunk_rows, |x, y| {
            if !raw {
                bounds
                    .scale(x, &schema.x, 5.0)
                    .and_then(|_| bounds.scale(y, target, 5.0))
                    .map_err(|e| Error::InvalidSpec(format!("job's public bounds: {e}")))?;
            }
            sum.push_rows(x, y)
        })?;
        sum.finish()
    }
}

/// Everything a participant checks before it joins a round, beyond its id ([`verified_round`]
/// made `round` from the job's roster and checked it against `job_round`'s id): that it is a
/// round of the job it accepted (its T, its nodes, its share mode, this participant's token in
/// its place), that the rule is one of the learner's with the job's columns, and that the
/// round's noise is calibrated for the rule's sensitivity.
#[allow(clippy::too_many_arguments)]
fn check_round(
    spec: &JobSpec,
    round: &Round,
    rule: &Expected,
    job_round: &JobRound,
    client: u64,
    token: &SecretString,
    nodes: usize,
    node_keys: &[String],
) -> Result<()> {
    let refuse = |m: String| Err(Error::Job(format!("round {}: {m}", job_round.id)));
    let s = &round.spec;
    if s.validity != spec.validity {
        // A verified round's truncated noise adds to δ: the job's noise budget counts it for
        // its own mode only, and a verified job's rounds must all be checked.
        return refuse(format!(
            "its validity mode {:?} is not the job's {:?}",
            s.validity, spec.validity
        ));
    }
    if s.max_dropped != spec.max_dropped
        || s.mode != spec.mode
        || s.n_clients != job_round.clients.len()
        || s.dim != rule.dim
        || s.node_keys.len() != nodes
        || s.bound < rule.record_bound
    {
        return refuse(
            "its T, share mode, clients, dimension, nodes or bound differ from the job's".into(),
        );
    }
    if s.noise_sigma_total.is_none() || s.l2_sensitivity != Some(rule.l2_sensitivity) {
        return refuse(
            "its noise is not calibrated for the sensitivity of its rule (NON-PRIVATE)".into(),
        );
    }
    if s.node_keys != node_keys {
        return refuse("its node keys are not the job's".into());
    }
    if round.token_hashes.get(client as usize) != Some(&token_hash(token.expose())) {
        return refuse("this participant's token is not in its place".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::validity::ValiditySpec;

    /// A job round whose validity mode is not the job's is refused before anything else is
    /// looked at, whichever has one; the same round with the job's mode is refused for another
    /// reason (it matches no job here).
    #[test]
    fn a_job_round_with_another_validity_mode_than_the_jobs_is_refused() {
        let keys: Vec<_> = (0..2)
            .map(|_| share_sealing::NodeKeyPair::generate())
            .collect();
        let plain = crate::protocol::spec::tests::spec(3, 2, &keys);
        let linf = |truncation_delta| Some(ValiditySpec::Linf { truncation_delta });
        let rule = Expected {
            dim: plain.dim,
            record_bound: 0.0,
            l2_sensitivity: 1.0,
        };
        let token = SecretString::new("t".into());
        let check = |job_validity, round_validity| {
            let job = JobSpec {
                validity: job_validity,
                ..crate::protocol::job::tests::spec()
            };
            let spec = crate::protocol::spec::RoundSpec {
                validity: round_validity,
                ..plain.clone()
            };
            let job_round = JobRound {
                step: 1,
                id: "r".into(),
                spec: spec.clone(),
                rule: String::new(),
                clients: vec![0, 1, 2],
            };
            let round = spec.validate().unwrap();
            check_round(&job, &round, &rule, &job_round, 0, &token, 2, &[])
                .unwrap_err()
                .to_string()
        };
        for (job, round) in [
            (None, linf(1e-9)),
            (linf(1e-9), None),
            (linf(1e-9), linf(2e-9)),
        ] {
            assert!(
                check(job, round).contains("validity mode"),
                "{job:?} {round:?}"
            );
        }
        for same in [None, linf(1e-9)] {
            assert!(!check(same, same).contains("validity mode"), "{same:?}");
        }
    }
}
