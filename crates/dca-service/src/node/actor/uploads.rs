//! Group commit: every upload waiting at that moment committed in one transaction, answered,
//! and only then added to its round's running sum.

use axum::http::StatusCode;

use crate::http::problem::{ApiError, ApiResult};
use crate::node::store::{PendingShare, UploadOutcome};

use super::lifecycle::not_open;
use super::*;

impl Actor {
    pub(in crate::node) fn flush(&mut self, uploads: Vec<Upload>) {
        if uploads.is_empty() {
            return;
        }
        let mut to_commit = Vec::new();
        for u in uploads {
            match self.rounds.get(&u.round_id) {
                None => {
                    let _ = u.reply.send(Err(ApiError::not_found("unknown round")));
                }
                Some(rt) if rt.agreed.is_some() => {
                    let _ = u
                        .reply
                        .send(Err(ApiError::conflict("round-closed", "round is closed")));
                }
                Some(RoundRuntime {
                    aborted: Some(reason),
                    ..
                }) => {
                    let _ = u.reply.send(Err(ApiError::conflict(
                        "round-aborted",
                        format!("round was aborted: {reason}"),
                    )));
                }
                Some(_) => to_commit.push(u),
            }
        }
        let started = std::time::Instant::now();
        let pending: Vec<PendingShare<'_>> = to_commit
            .iter()
            .map(|u| PendingShare {
                round_id: &u.round_id,
                client: u.client,
                shard: u.attempt,
                digest: &u.digest,
                message: &u.message,
            })
            .collect();
        let outcomes = self.store.commit_uploads(&pending);
        self.metrics.commit(pending.len(), started);
        drop(pending);
        match outcomes {
            Err(e) => {
                for u in to_commit {
                    let _ = u
                        .reply
                        .send(Err(ApiError::internal(format!("storage: {e}"))));
                }
            }
            Ok(outcomes) => {
                for (u, outcome) in to_commit.into_iter().zip(outcomes) {
                    let reply = match outcome {
                        UploadOutcome::Stored => self.absorb(&u),
                        UploadOutcome::SameAgain => Ok(StatusCode::OK),
                        UploadOutcome::Conflict => Err(ApiError::conflict(
                            "share-conflict",
                            "another share is already stored for this client",
                        )),
                        UploadOutcome::NotOpen(state) => Err(not_open(state)),
                    };
                    let _ = u.reply.send(reply);
                }
            }
        }
    }

    pub(in crate::node) fn absorb(&mut self, u: &Upload) -> ApiResult<StatusCode> {
        let rt = self
            .rounds
            .get_mut(&u.round_id)
            .ok_or_else(|| ApiError::not_found("unknown round"))?;
        if rt.round.validity.is_some() {
            // The sum waits for the nodes' joint check at close.
            rt.received_at_close
                .insert(fixedpoint_shares::ClientId(u.client))
                .map_err(|e| ApiError::internal(format!("received set: {e}")))?;
            return Ok(StatusCode::CREATED);
        }
        if self.db.is_shared() {
            // Stored is all: the sum is computed from the store at close.
            return Ok(StatusCode::CREATED);
        }
        let node = rt
            .node
            .as_mut()
            .ok_or_else(|| ApiError::internal("no running sum"))?;
        // Checked before commit (round, node, client, dim, frac bits, kind) and unique by the
        // store's primary key, so this cannot fail; if it did, a restart rebuilds from the store.
        let parsed = u
            .parsed
            .as_ref()
            .ok_or_else(|| ApiError::internal("no parsed share"))?;
        node.absorb(parsed)
            .map_err(|e| ApiError::internal(format!("absorb after commit: {e}")))?;
        Ok(StatusCode::CREATED)
    }
}
