//! A round's life on the node: created, aborted, closed with the agreed set, summed.

use std::sync::Arc;

use axum::http::StatusCode;
use fixedpoint_shares::{
    ClientId, ClientSet, Decode, NodeIndex, RunningSum, ShardId, ShareMessage,
};

use crate::http::problem::{ApiError, ApiResult};
use crate::node::close_spool::{self};
use crate::node::store::{AttemptReader, HashingWriter, RoundState};
use crate::protocol::spec::Round;
use crate::{Error, Result};

use super::*;

impl Actor {
    pub(in crate::node) fn create(
        &mut self,
        round: Arc<Round>,
        spool: &Spool,
    ) -> ApiResult<StatusCode> {
        if self.rounds.contains_key(&round.hash) {
            return Ok(StatusCode::OK);
        }
        match self.store.round_by_number(round.spec.round) {
            // Created by another replica of this node on the shared store.
            Ok(Some(id)) if id == round.hash && self.db.is_shared() => {
                return self.load_one(&id).map(|_| StatusCode::OK);
            }
            Ok(Some(_)) => {
                return Err(ApiError::conflict(
                    "round-number-reused",
                    "this round number exists with another configuration",
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(ApiError::internal(e.to_string())),
        }
        let node = RunningSum::new(&round.config, NodeIndex(self.index))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        if round.validity.is_some() {
            // Refused before it is stored: a node that cannot check a round never joins it.
            super::super::verified::verifying_node(
                self.verify_secret.as_ref(),
                &round,
                self.index,
            )?;
        }
        let node = (!self.db.is_shared() && round.validity.is_none()).then_some(node);
        let mut tokens = std::fs::File::open(&spool.tokens)
            .map(std::io::BufReader::new)
            .map_err(|e| ApiError::internal(format!("spooled token hashes: {e}")))?;
        let inserted = self.store.insert_round(
            &round.hash,
            round.spec.round,
            // The spec without its token list, which goes to the token table.
            &round.spec.canonical_json(),
            &mut tokens,
            round.config.n_clients(),
        );
        if let Err(e) = inserted {
            // Another replica inserted it at the same moment (its round number is unique).
            if self.db.is_shared()
                && let Ok(Some(id)) = self.store.round_by_number(round.spec.round)
            {
                return if id == round.hash {
                    self.load_one(&id).map(|_| StatusCode::OK)
                } else {
                    Err(ApiError::conflict(
                        "round-number-reused",
                        "this round number exists with another configuration",
                    ))
                };
            }
            return Err(ApiError::internal(e.to_string()));
        }
        let received_at_close = ClientSet::empty(round.config.n_clients());
        if let Ok(mut shared) = self.shared.write() {
            shared.insert(round.hash, round.clone());
        }
        self.metrics.round_event("created");
        self.rounds.insert(
            round.hash,
            RoundRuntime {
                round,
                node,
                received_at_close,
                agreed: None,
                sum: SumState::Open,
                aborted: None,
                damaged: None,
                pending_checks: Default::default(),
            },
        );
        Ok(StatusCode::CREATED)
    }

    /// Records the abort (idempotent) and forgets the round's shares and running sum. A round
    /// already closed with an agreed set is not aborted: its sum may be released.
    pub(in crate::node) fn abort(&mut self, id: [u8; 32], reason: String) -> ApiResult<StatusCode> {
        self.refresh(&id)?;
        let Some(rt) = self.rounds.get_mut(&id) else {
            return Err(ApiError::not_found("unknown round"));
        };
        if rt.aborted.is_some() {
            return Ok(StatusCode::OK);
        }
        if rt.agreed.is_some() {
            return Err(ApiError::conflict(
                "round-closed",
                "round is closed with an agreed set; it cannot be aborted",
            ));
        }
        if !self
            .store
            .abort(&id, &reason)
            .map_err(|e| ApiError::internal(e.to_string()))?
        {
            return Err(ApiError::conflict(
                "round-closed",
                "round is closed with an agreed set; it cannot be aborted",
            ));
        }
        rt.node = None;
        rt.received_at_close = ClientSet::empty(rt.round.config.n_clients());
        rt.pending_checks.clear();
        rt.aborted = Some(reason);
        self.metrics.round_event("aborted");
        Ok(StatusCode::ACCEPTED)
    }

    pub(in crate::node) fn close(
        &mut self,
        id: [u8; 32],
        request: &Spool,
        counts: (usize, usize),
        verdicts: Option<&[Vec<u8>]>,
    ) -> ApiResult<StatusCode> {
        self.refresh(&id)?;
        let Some(mut rt) = self.rounds.remove(&id) else {
            return Err(ApiError::not_found("unknown round"));
        };
        if let Some(reason) = &rt.aborted {
            let refused = Err(ApiError::conflict(
                "round-aborted",
                format!("round was aborted: {reason}"),
            ));
            self.rounds.insert(id, rt);
            return refused;
        }
        if let Some(why) = &rt.damaged {
            let refused = Err(ApiError::damaged(format!(
                "this node refuses to finalize the round: {}",
                Error::Integrity(why.clone())
            )));
            self.rounds.insert(id, rt);
            return refused;
        }
        let had_agreed = rt.agreed.is_some();
        let result = self.close_round(&mut rt, request, counts, verdicts);
        self.rounds.insert(id, rt);
        if !self.db.is_shared() {
            return result;
        }
        if result.is_err() && !had_agreed {
            // Another replica may have closed or aborted it since the refresh: answer as
            // this replica would have had it known.
            self.refresh(&id)?;
            if self
                .rounds
                .get(&id)
                .is_some_and(|rt| rt.agreed.is_some() || rt.aborted.is_some())
            {
                return self.close(id, request, counts, verdicts);
            }
        }
        if result.as_ref().is_ok_and(|s| *s == StatusCode::ACCEPTED) {
            // Taken here when no other replica has it, so that the sum starts at once.
            if let Err(e) = self.shared_sum(id) {
                tracing::warn!("node sum after close: {e:?}");
            }
        }
        result
    }

    /// Checks the close request (split into its lists, see [`close_spool`]) and closes: the
    /// agreed set is read as N bits, and each agreed pair is compared with the attempt this
    /// node stored in one ascending scan of the store; no list of ids or pairs is held.
    pub(in crate::node) fn close_round(
        &mut self,
        rt: &mut RoundRuntime,
        request: &Spool,
        (listed, shards): (usize, usize),
        verdicts: Option<&[Vec<u8>]>,
    ) -> ApiResult<StatusCode> {
        let n = rt.round.config.n_clients();
        match (&rt.round.validity, verdicts) {
            (Some(_), None) => {
                return Err(ApiError::bad_request(
                    "a verified round closes with the relay's verdicts (application/dpdist-verified-close)",
                ));
            }
            (None, Some(_)) => {
                return Err(ApiError::bad_request(
                    "verdicts for a round without validity",
                ));
            }
            _ => {}
        }
        let internal = |e: Error| ApiError::internal(format!("close request: {e}"));
        if listed != shards {
            return Err(ApiError::bad_request(format!(
                "agreed set: {}",
                Error::InvalidSpec(format!("{listed} client ids but {shards} shard ids"))
            )));
        }
        let agreed = close_spool::agreed_set(&request.clients, n).map_err(|e| match e {
            Error::Io(_) => internal(e),
            e => ApiError::bad_request(format!("agreed set: {e}")),
        })?;
        if let Some(existing) = &rt.agreed {
            return if *existing == agreed {
                if let (Some(verdicts), SumState::Open) = (verdicts, &rt.sum) {
                    // Closed, but the sum was not stored (a crash between): the retried close
                    // brings the verdicts again.
                    let kept = std::mem::take(&mut rt.pending_checks);
                    let sum = self.verified_sum(&rt.round, &agreed, verdicts, kept)?;
                    self.store_verified_sum(&rt.round, &sum)?;
                    rt.sum = SumState::Ready;
                }
                Ok(StatusCode::OK)
            } else {
                Err(ApiError::conflict(
                    "agreed-set-mismatch",
                    "closed already with another agreed set",
                ))
            };
        }
        let stored_clients = if self.db.is_shared() || rt.round.validity.is_some() {
            Some(self.stored_clients(&rt.round.hash, n)?)
        } else {
            None
        };
        let received = stored_clients.as_ref().unwrap_or_else(|| rt.received());
        if let Some(client) = agreed.iter().find(|c| !received.contains(*c)) {
            return Err(ApiError::conflict(
                "agreed-set-mismatch",
                format!("agreed client {client} was not received by this node"),
            ));
        }
        // Each agreed client's attempt as listed, looked up by client while the store's
        // attempts are read in client order.
        close_spool::index_by_client(&request.clients, &request.shards, &request.by_client)
            .map_err(internal)?;
        let mut listed = close_spool::ByClient::open(&request.by_client).map_err(internal)?;
        let (mut refused, mut held) = (None, 0usize);
        let scan = self
            .store
            .for_each_attempt(&rt.round.hash, |client, attempt| {
                if !agreed.contains(ClientId(client)) {
                    return Ok(());
                }
                held += 1;
                let shard = listed.shard(client)?;
                if shard == attempt {
                    return Ok(());
                }
                // A client that sharded twice and whose nodes hold different attempts: the
                // aggregator must have left it out; summing it would corrupt the release.
                refused = Some(ApiError::conflict(
                    "agreed-set-mismatch",
                    format!(
                        "agreed client {client}: this node holds shard attempt {attempt:016x}, not {shard:016x}"
                    ),
                ));
                Err(Error::InvalidSpec("stopped at a refused pair".into()))
            });
        if let Some(refused) = refused {
            return Err(refused);
        }
        scan.map_err(internal)?;
        if held != agreed.len() {
            return Err(ApiError::internal(
                "the store does not hold every client the running sum received",
            ));
        }
        if agreed.missing() > rt.round.config.max_dropped() {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "too-many-dropped",
                format!(
                    "{} clients missing, more than T = {}",
                    agreed.missing(),
                    rt.round.config.max_dropped()
                ),
            ));
        }
        // A verified round's sum is computed first: a verdict this node refuses leaves it open.
        let verified_sum = verdicts
            .map(|verdicts| {
                let kept = std::mem::take(&mut rt.pending_checks);
                self.verified_sum(&rt.round, &agreed, verdicts, kept)
            })
            .transpose()?;
        if !self
            .store
            .set_agreed_set(&rt.round.hash, &agreed)
            .map_err(|e| ApiError::internal(e.to_string()))?
        {
            return Err(ApiError::conflict(
                "round-not-open",
                "the store does not hold the round open; it was closed or aborted",
            ));
        }
        rt.agreed = Some(agreed.clone());
        self.metrics.round_event("closed");
        if let Some(sum) = verified_sum {
            self.store_verified_sum(&rt.round, &sum)?;
            self.metrics.round_event("summed");
            rt.sum = SumState::Ready;
            return Ok(StatusCode::ACCEPTED);
        }
        if !self.db.is_shared() {
            self.start_sum(rt, agreed);
        }
        Ok(StatusCode::ACCEPTED)
    }

    /// Retracts the shares of received clients outside the agreed set (read back from the
    /// store: the running sum keeps no seeds, so seed shares are re-expanded from there too)
    /// and writes the node sum on a worker thread to a spool file, the agreed clients'
    /// attempts streamed from the store ([`RunningSum::write_sum`]); the result comes back as
    /// `SumReady`.
    pub(in crate::node) fn start_sum(&mut self, rt: &mut RoundRuntime, agreed: ClientSet) {
        let Some(mut node) = rt.node.take() else {
            rt.sum = SumState::Failed("no running sum".into());
            return;
        };
        rt.received_at_close = node.received().clone();
        rt.sum = SumState::Computing;
        let id = rt.round.hash;
        let config = &rt.round.config;
        let retracted = rt
            .received_at_close
            .iter()
            .filter(|c| !agreed.contains(*c))
            .try_for_each(|client| {
                let message = self
                    .store
                    .share(&id, client.0)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| "stored share missing".to_string())?;
                let msg = ShareMessage::get_decoded(config, &message).map_err(|e| e.to_string())?;
                node.retract(&msg).map_err(|e| e.to_string())
            });
        if let Err(e) = retracted {
            tracing::error!(round = rt.round.spec.round, id = %rt.round.id(), "node sum: {e}");
            rt.sum = SumState::Failed(e);
            return;
        }
        let tx = self.tx.clone();
        let (db, data_dir) = (self.db.clone(), self.data_dir.clone());
        std::thread::spawn(move || {
            let written = || -> Result<(Spool, [u8; 32])> {
                let spool = Spool::new(&data_dir)?;
                let mut out = HashingWriter::new(std::fs::File::create(&spool.sum)?);
                let mut reader = AttemptReader::open(&db)?;
                reader.with_attempts(&id, |pairs| {
                    let agreed_pairs = pairs
                        .filter(|&(c, _)| agreed.contains(ClientId(c)))
                        .map(|(c, s)| (ClientId(c), ShardId(s)));
                    node.write_sum(&agreed, agreed_pairs, &mut out)
                })??;
                let (file, sha256) = out.finish();
                file.sync_all()?;
                Ok((spool, sha256))
            };
            let result = written().map_err(|e| e.to_string());
            let _ = tx.send(Command::SumReady(id, result));
        });
    }
}

/// The answer to an upload the store refused because the round is not open there.
pub(super) fn not_open(state: RoundState) -> ApiError {
    match state {
        RoundState::Closed => ApiError::conflict("round-closed", "round is closed"),
        RoundState::Aborted => ApiError::conflict("round-aborted", "round was aborted"),
        RoundState::Unknown | RoundState::Open => ApiError::not_found("unknown round"),
    }
}
