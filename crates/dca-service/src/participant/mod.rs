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
//!
//! `take_part` is where it works, from `run` on; here are the `Participant` and what it reads
//! from the aggregator: a job's spec (fetched once per process), a job's view, its record.

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
use crate::protocol::job::view::{HashedSpec, JoinedView as JobView};
use crate::secret::SecretString;
use crate::{Error, Result};
pub use outcome::{Outcome, outcome_of};
pub use policy::{Policy, decide};
use take_part::{Looked, verified_round};

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

impl Participant {
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
