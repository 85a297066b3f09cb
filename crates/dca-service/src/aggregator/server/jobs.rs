//! The aggregator's job resources (docs/src/services/http-api.md, "Jobs"):
//!
//! - `PUT /jobs/{id}` (analyst): create a job; the id is the SHA-256 of its canonical JSON.
//! - `GET /jobs` (analyst: every job; a participant: the jobs whose roster lists its token).
//! - `GET /jobs/{id}` (analyst: spec and public status; a participant on the roster: its view,
//!   whose size does not grow with the roster).
//! - `GET /jobs/{id}/spec` (analyst or a participant on the roster): the spec, fetched once.
//! - `POST /jobs/{id}/answer` (a participant on the roster): accept with its row count, or
//!   refuse with its reason, while the job is answering.
//! - `POST /jobs/{id}/cancel` (analyst): nothing more is released; what the job did not
//!   spend comes back to the budget.
//! - `GET /participation` (a participant): the jobs its token answered, with the rounds that
//!   named it and whether each was released with its shares: what its ledger is reconciled
//!   with.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::state::{MAX_SPEC_BYTES, ServerState};
use crate::http::problem::{ApiError, ApiResult, bearer, json};
use crate::protocol::job::{Answer, AnswerCounts, JobSpec, JobState, JobStatus, JobView};
use crate::protocol::spec::token_hash;
use crate::secret::token_matches;
use crate::{MEDIA_JSON, hex};

use crate::protocol::job::participation::{ParticipatedJob, ParticipatedRound, Participation};
use crate::protocol::job::view::ParticipantView;

/// Who is asking.
enum Caller {
    Analyst,
    /// A bearer token that is not the analyst's: its SHA-256 in hex.
    Other(String),
}

impl ServerState {
    fn caller(&self, headers: &HeaderMap) -> ApiResult<Caller> {
        let token = bearer(headers)?;
        Ok(if token_matches(token, &self.analyst_token_hash) {
            Caller::Analyst
        } else {
            Caller::Other(hex::encode(&token_hash(token)))
        })
    }

    /// The JSON body of an authenticated request (checked by the caller, or here when
    /// `analyst_only`), at most `max` bytes, read under the body budget.
    async fn read_body(
        &self,
        headers: &HeaderMap,
        body: Body,
        max: usize,
        analyst_only: bool,
    ) -> ApiResult<Vec<u8>> {
        if analyst_only && let Err(refused) = self.analyst(headers) {
            crate::http::body::drain_refused(headers, body, 1 << 20, Duration::from_secs(5));
            return Err(refused);
        }
        crate::http::problem::content_type_is(headers, MEDIA_JSON)?;
        let (bytes, _permit) = self
            .spec_bytes
            .read(headers, body, max, Duration::from_secs(60))
            .await
            .map_err(|e| ApiError::new(e.status(), e.kind(), e.to_string()))?;
        Ok(bytes.to_vec())
    }

    /// `status` of job `spec` with its answers counted (the analyst's view): while the job is
    /// answering, from the answers recorded so far; afterwards, from who took part.
    fn counted(&self, spec: &JobSpec, mut status: JobStatus) -> ApiResult<JobStatus> {
        let roster = spec.roster.len();
        status.answers = Some(if status.state == JobState::Answering {
            let answers = self.aggregator.answers(&status.id)?;
            let accepted = answers.iter().filter(|(_, a)| a.accept).count();
            AnswerCounts {
                accepted,
                refused: answers.len() - accepted,
                silent: roster.saturating_sub(answers.len()),
            }
        } else {
            // The driver records a silence as a refusal with this reason.
            let silent = status
                .refused
                .iter()
                .filter(|(_, why)| why == "no answer before the deadline")
                .count();
            AnswerCounts {
                accepted: status.accepted.len(),
                refused: status.refused.len() - silent,
                silent: roster.saturating_sub(status.accepted.len() + status.refused.len())
                    + silent,
            }
        });
        Ok(status)
    }

    /// The job, if the caller may see it, with the caller's roster index.
    fn visible_job(&self, headers: &HeaderMap, id: &str) -> ApiResult<(JobView, bool)> {
        let caller = self.caller(headers)?;
        let (spec, status) = self
            .aggregator
            .job(&id.to_ascii_lowercase())?
            .ok_or_else(|| ApiError::not_found("unknown job"))?;
        match caller {
            Caller::Analyst => Ok((
                JobView {
                    status: self.counted(&spec, status)?,
                    spec,
                    nodes: self.aggregator.node_urls().to_vec(),
                    you: None,
                },
                true,
            )),
            Caller::Other(hash) => match spec.roster.iter().position(|h| *h == hash) {
                Some(i) => Ok((
                    JobView {
                        spec,
                        status,
                        nodes: self.aggregator.node_urls().to_vec(),
                        you: Some(i),
                    },
                    false,
                )),
                // The same answer as for a job that does not exist: a stranger learns nothing.
                None => Err(ApiError::not_found("unknown job")),
            },
        }
    }
}

/// `PUT /jobs/{id}`.
pub(crate) async fn create_job(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let body = s.read_body(&headers, body, MAX_SPEC_BYTES, true).await?;
    let spec: JobSpec = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("job spec: {e}")))?;
    spec.validate()?;
    if spec.id() != id.to_ascii_lowercase() {
        return Err(ApiError::bad_request(format!(
            "job id must be the spec's SHA-256, {}",
            spec.id()
        )));
    }
    // The job's rounds seal to the keys the nodes have now (all nodes must answer).
    let node_keys = s.aggregator.node_keys().await?;
    let status = crate::aggregator::jobs::driver::initial_status(&spec, node_keys)?;
    let status_json = serde_json::to_vec(&status).map_err(|e| ApiError::internal(e.to_string()))?;
    let (id, created) = s.aggregator.create_job(&spec, &status_json)?;
    if created {
        tracing::info!(job = %id, participants = spec.roster.len(), "job created");
        s.jobs.take_and_drive(&id);
    }
    let (view, _) = s.visible_job(&headers, &id)?;
    Ok(json(
        if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
        &view,
    ))
}

/// `GET /jobs/{id}`: the analyst's whole view, or a participant's view (whose size does not
/// grow with the roster: `protocol/job/view.rs`).
pub(crate) async fn get_job(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    match s.caller(&headers)? {
        Caller::Analyst => {
            let (view, _) = s.visible_job(&headers, &id)?;
            Ok(json(StatusCode::OK, &view))
        }
        Caller::Other(hash) => {
            let view = s
                .aggregator
                .participant_view(&id.to_ascii_lowercase(), &hash)?
                // The same answer as for a job that does not exist: a stranger learns nothing.
                .ok_or_else(|| ApiError::not_found("unknown job"))?;
            Ok(json(StatusCode::OK, &view))
        }
    }
}

/// `GET /jobs/{id}/spec`: the job's spec (its SHA-256 is the job's id), for the analyst and
/// the participants on its roster, who fetch it once per job.
pub(crate) async fn get_job_spec(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let (view, _) = s.visible_job(&headers, &id)?;
    Ok(json(StatusCode::OK, &view.spec))
}

/// `GET /jobs`.
pub(crate) async fn list_jobs(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let nodes = s.aggregator.node_urls();
    match s.caller(&headers)? {
        Caller::Analyst => {
            let out: Vec<JobView> = s
                .aggregator
                .jobs()?
                .into_iter()
                .map(|(spec, status)| {
                    Ok(JobView {
                        status: s.counted(&spec, status)?,
                        spec,
                        nodes: nodes.to_vec(),
                        you: None,
                    })
                })
                .collect::<ApiResult<_>>()?;
            Ok(json(StatusCode::OK, &out))
        }
        Caller::Other(hash) => {
            let mut out = Vec::new();
            for (spec, status) in s.aggregator.jobs()? {
                if let Some(you) = spec.roster.iter().position(|h| *h == hash) {
                    out.push(ParticipantView::of(&spec, &status, nodes, you)?);
                }
            }
            if out.is_empty() {
                // A token on no roster is refused like any unknown token.
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "this token is on no job's roster",
                ));
            }
            Ok(json(StatusCode::OK, &out))
        }
    }
}

/// `POST /jobs/{id}/answer`: checked against the shared participant view, so that N answers
/// cost O(N), not N reads of the whole job.
pub(crate) async fn answer_job(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let Caller::Other(hash) = s.caller(&headers)? else {
        return Err(ApiError::bad_request(
            "only a participant on the job's roster answers it",
        ));
    };
    let view = s
        .aggregator
        .participant_view(&id.to_ascii_lowercase(), &hash)?
        .ok_or_else(|| ApiError::not_found("unknown job"))?;
    let body = s.read_body(&headers, body, 64 << 10, false).await?;
    let answer: Answer =
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("answer: {e}")))?;
    if answer.accept && !(1..=view.max_rows).contains(&answer.rows) {
        return Err(ApiError::bad_request(format!(
            "an acceptance states its rows, from 1 to the job's max_rows = {} (got {})",
            view.max_rows, answer.rows
        )));
    }
    if view.state != JobState::Answering {
        return Err(ApiError::conflict(
            "job-state",
            format!("job is {}, no longer taking answers", view.state),
        ));
    }
    let stored = s.aggregator.answer(&view.id, view.you, &answer)?;
    if stored != answer {
        return Err(ApiError::conflict(
            "already-answered",
            "this participant already answered the job differently",
        ));
    }
    Ok(json(StatusCode::OK, &stored))
}

/// `POST /jobs/{id}/cancel`.
pub(crate) async fn cancel_job(
    State(s): State<Arc<ServerState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    s.analyst(&headers)?;
    let id = id.to_ascii_lowercase();
    let Some((_, before)) = s.aggregator.job(&id)? else {
        return Err(ApiError::not_found("unknown job"));
    };
    // Rounds published but not released: their participants charged them when they sealed.
    let mut unreleased = Vec::new();
    for r in &before.rounds {
        if s.aggregator.recorded_release(&r.id)?.is_none() {
            unreleased.push(r.step.to_string());
        }
    }
    let reason = cancel_reason(&unreleased);
    let status = s.aggregator.update_job(&id, |st| {
        if st.is_live() {
            st.state = JobState::Cancelled;
            st.reason = Some(reason.clone());
            Ok(())
        } else {
            Err(crate::Error::Job(format!("job is already {}", st.state)))
        }
    })?;
    Ok(json(StatusCode::OK, &status))
}

/// Why a job was cancelled, as its status says: nothing more is released; rounds `unreleased`
/// (their steps), published but never released, are charged by the participants that sealed
/// shares for them (charged at sealing, the conservative rule) and not in `rho_spent`.
pub fn cancel_reason(unreleased: &[String]) -> String {
    let mut reason = "cancelled by the analyst: nothing more is released".to_string();
    if !unreleased.is_empty() {
        reason.push_str(&format!(
            "; round{} {} never released: rho_spent does not count {}, but each participant \
             that sealed shares for {} keeps its charge in its own ledger (charged at sealing, \
             the conservative rule)",
            if unreleased.len() == 1 { "" } else { "s" },
            unreleased.join(", "),
            if unreleased.len() == 1 { "it" } else { "them" },
            if unreleased.len() == 1 { "it" } else { "them" },
        ));
    }
    reason
}

/// `GET /participation`: the jobs whose roster lists the caller's token and that it answered,
/// each with its recorded answer and the rounds that named the token, released or not, with
/// its shares or not. A token on no roster gets an empty list, as one that answered nothing: a
/// stranger learns nothing.
pub(crate) async fn participation(
    State(s): State<Arc<ServerState>>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let Caller::Other(hash) = s.caller(&headers)? else {
        return Err(ApiError::bad_request(
            "the analyst answers no job: this is a participant's record",
        ));
    };
    let mut jobs = Vec::new();
    for view in s.aggregator.participant_jobs(&hash)? {
        let Some(answer) = s.aggregator.answer_of(&view.id, view.you)? else {
            continue;
        };
        let mut rounds = Vec::new();
        for r in &view.rounds {
            // Client ids follow roster order: this participant's is the number of the round's
            // clients before it on the roster.
            let bits = crate::hex::decode(&r.clients).unwrap_or_default();
            let bit = |i: usize| bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0);
            if !bit(view.you) {
                continue;
            }
            let client = (0..view.you).filter(|&i| bit(i)).count() as u64;
            let release = s.aggregator.recorded_release(&r.id)?;
            rounds.push(ParticipatedRound {
                id: r.id.clone(),
                released: release.is_some(),
                in_release: release.is_some_and(|rel| rel.clients.contains(&client)),
            });
        }
        jobs.push(ParticipatedJob {
            id: view.id,
            state: view.state,
            answer,
            rounds,
        });
    }
    Ok(json(StatusCode::OK, &Participation { jobs }))
}
