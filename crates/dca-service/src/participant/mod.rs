//! A data holder as a party (`dpdist participant`): it reads only its own rows, answers the
//! jobs whose roster lists its token according to its own policy, keeps its own accountant on
//! disk, computes its contribution to every round of a job it accepted from the round's public
//! rule, and sends nothing but sealed shares.
//!
//! Durability, so that a crash never makes it send two different contributions to one round or
//! pay twice:
//! - an acceptance is written to the ledger (with the job's ε) before it is sent;
//! - a round's charge is written before its shares are sealed;
//! - the sealed shares are written (all of them, then renamed into place) before the first
//!   upload, and every later attempt re-sends exactly those bytes.
//!
//! Its ledger is append-only and hash-chained, and is checked against the aggregator's record
//! of the jobs its token answered at start and before every answer (`ledger`): a
//! ledger deleted or edited grants no budget. While no job names it, it waits (bounded).

mod attempts;
mod files;
pub mod ledger;
mod ledger_check;
mod outcome;
mod policy;
mod rows;
mod take_part;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::StatusCode;

pub use crate::participant::ledger::{Ledger, LedgerJob, LedgerRound};
use crate::participant::ledger::{Participation, RecordedJob, RecordedRound};
pub use crate::participant::rows::Rows;
// What a participant works from: its light view of a job joined with the job's spec.
use crate::protocol::job::view::{HashedSpec, JoinedView as JobView, ParticipantView};
use crate::protocol::spec::token_hash;
use crate::secret::SecretString;
use crate::{Error, Result, hex};
use files::io_at;
pub use outcome::{Outcome, outcome_of};
pub use policy::{Policy, decide};
use take_part::verified_round;

/// Job specs by id, shared by every participant of this process. Content-addressed (a job's id
/// is its spec's SHA-256), so one participant's fetch serves all. Kept for the process's life:
/// one spec per job on the rosters of this process's participants.
static SPECS: Mutex<BTreeMap<String, HashedSpec>> = Mutex::new(BTreeMap::new());

fn lock_specs() -> std::sync::MutexGuard<'static, BTreeMap<String, HashedSpec>> {
    // A panic while the map was held cannot leave it half-changed (single inserts/removes).
    SPECS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running participant.
pub struct Participant {
    /// Aggregator base URL.
    pub aggregator: String,
    /// HTTPS client (trusting the deployment's CA).
    pub http: reqwest::Client,
    /// Its bearer token (its hash is what rosters list).
    pub token: SecretString,
    /// Its rows (a CSV file read in chunks whenever a round needs them, or a host's matrix).
    pub rows: Rows,
    /// Its policy.
    pub policy: Policy,
    /// Where the ledger and the sealed attempts live.
    pub state_dir: PathBuf,
    /// Draw noise and masks from a fixed seed (NON-PRIVATE: for reproducible tests only).
    pub insecure_seed: Option<u64>,
    /// How often it looks for work.
    pub poll: Duration,
    /// How long it waits, at most, for a job that names it (its token on no job's roster yet,
    /// or the job it follows not created yet) before it gives up; zero: not at all.
    pub wait_for_job: Duration,
    /// When its ledger is missing or disagrees with the aggregator's record, rebuild it from
    /// that record (charging every round of every job found there that named this
    /// participant) instead of refusing to answer.
    pub rebuild_ledger: bool,
}

/// What the aggregator answered a participant's look for work.
enum Looked {
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

    async fn look(&self, only: Option<&str>) -> Result<Looked> {
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

    /// Job `id`'s view joined with its spec.
    async fn view_of(&self, id: &str) -> Result<JobView> {
        match self.look(Some(id)).await? {
            Looked::Jobs(mut v) if v.len() == 1 => Ok(v.remove(0)),
            Looked::Jobs(_) => Err(Error::Job(format!("job {id}: not one view"))),
            Looked::NotNamed(why) => Err(Error::Job(format!(
                "the aggregator records this participant's answer to job {id} but does not \
                 show it the job: {why}"
            ))),
        }
    }

    /// Job `id`'s spec: fetched once (`GET /jobs/{id}/spec`) and shared by every participant
    /// of this process; a spec that does not hash to `id` is refused.
    async fn spec_of(&self, id: &str) -> Result<HashedSpec> {
        if let Some(spec) = lock_specs().get(id) {
            return Ok(spec.clone());
        }
        let url = format!("{}/jobs/{id}/spec", self.aggregator);
        let spec = HashedSpec::new(self.get_json(&url, Some(id)).await?);
        if spec.id != id {
            return Err(Error::Integrity(format!(
                "job {id}: the aggregator's spec hashes to {}",
                spec.id
            )));
        }
        lock_specs().insert(id.to_string(), spec.clone());
        Ok(spec)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
        only: Option<&str>,
    ) -> Result<T> {
        let r = self
            .http
            .get(url)
            .bearer_auth(self.token.expose())
            .send()
            .await?;
        checked_json(r, url, only).await
    }

    /// The aggregator's record of the jobs this participant's token answered
    /// (`GET /participation`), checked: each job's ε and δ from its spec (whose hash is its
    /// id), each round's ρ from its config (whose hash is its id).
    pub async fn record(&self) -> Result<Vec<RecordedJob>> {
        let url = format!("{}/participation", self.aggregator);
        let recorded: Participation = self.get_json(&url, None).await?;
        let mut out = Vec::with_capacity(recorded.jobs.len());
        for job in recorded.jobs {
            let spec = self.spec_of(&job.id).await?;
            let mut rounds = Vec::with_capacity(job.rounds.len());
            if !job.rounds.is_empty() {
                let view = self.view_of(&job.id).await?;
                for r in &job.rounds {
                    let published = view
                        .status
                        .rounds
                        .iter()
                        .find(|p| p.id == r.id)
                        .ok_or_else(|| {
                            Error::Integrity(format!(
                                "job {}: the aggregator's record names round {}, which the job \
                                 does not list",
                                job.id, r.id
                            ))
                        })?;
                    let round = verified_round(published, &spec.spec)?;
                    rounds.push(RecordedRound {
                        id: r.id.clone(),
                        rho: crate::protocol::spec::round_rho(&round)?.unwrap_or(0.0),
                        released: r.released,
                        in_release: r.in_release,
                    });
                }
            }
            out.push(RecordedJob {
                id: job.id,
                state: job.state,
                answer: job.answer,
                epsilon: spec.spec.epsilon,
                delta: spec.spec.noise_budget()?.delta,
                rho_budget: spec.spec.rho()?,
                rounds,
            });
        }
        Ok(out)
    }
}

/// The JSON body of a response to a participant's request of `url`; 401, 403 and 404 are the
/// aggregator not showing this participant what it asked for.
async fn checked_json<T: serde::de::DeserializeOwned>(
    r: reqwest::Response,
    url: &str,
    only: Option<&str>,
) -> Result<T> {
    let status = r.status();
    if matches!(
        status,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
    ) {
        let what = only.map_or_else(|| url.to_string(), |id| format!("job {id}"));
        return Err(Error::Job(format!(
            "the aggregator refused to show this participant {what}: {status}: {}",
            r.text().await.unwrap_or_default()
        )));
    }
    if !status.is_success() {
        return Err(Error::Http(format!(
            "{status}: {}",
            r.text().await.unwrap_or_default()
        )));
    }
    Ok(r.json().await?)
}

#[cfg(test)]
mod tests;
