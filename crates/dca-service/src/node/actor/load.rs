//! Rebuilding the node's rounds and running sums from the store: at start, and when another
//! replica of the node created or changed a round.

use std::sync::Arc;

use fixedpoint_shares::{ClientSet, Decode, NodeIndex, RunningSum};

use crate::http::problem::{ApiError, ApiResult};
use crate::protocol::spec::{Round, RoundSpec, legacy_json_round_id};
use crate::{Error, Result};

use super::*;

impl Actor {
    pub(in crate::node) fn load(&mut self) -> Result<()> {
        for stored in self.store.rounds()? {
            self.load_stored(stored, true)?;
        }
        Ok(())
    }

    /// Loads round `id` from the shared store if this replica does not know it yet.
    pub(in crate::node) fn load_one(&mut self, id: &[u8; 32]) -> ApiResult<Arc<Round>> {
        if let Some(rt) = self.rounds.get(id) {
            return Ok(rt.round.clone());
        }
        let Some(store) = self.store.shared() else {
            return Err(ApiError::not_found("unknown round"));
        };
        let stored = store
            .round(id)
            .map_err(|e| ApiError::internal(e.to_string()))?
            .ok_or_else(|| ApiError::not_found("unknown round"))?;
        self.load_stored(stored, false)
            .map_err(|e| ApiError::internal(format!("loading the round from the store: {e}")))?;
        self.rounds
            .get(id)
            .map(|rt| rt.round.clone())
            .ok_or_else(|| ApiError::not_found("unknown round"))
    }

    /// Loads one stored round; `at_start`: checking its stored shares' SHA-256 on a shared
    /// store too (a round loaded later is checked share by share when its sum is computed).
    pub(super) fn load_stored(
        &mut self,
        stored: super::store::StoredRound,
        at_start: bool,
    ) -> Result<()> {
        {
            let stored_spec =
                |e: serde_json::Error| Error::InvalidSpec(format!("stored spec: {e}"));
            let mut spec: RoundSpec =
                serde_json::from_slice(&stored.spec_json).map_err(stored_spec)?;
            // Stores of older versions kept the hex list in the spec as the aggregator sent it:
            // checked as before and moved to the token table.
            let old_hashes = if spec.client_token_sha256.is_empty() {
                None
            } else {
                if spec
                    .client_token_sha256
                    .iter()
                    .any(|h| h.bytes().any(|b| b.is_ascii_uppercase()))
                {
                    return Err(Error::InvalidSpec(
                        "stored round lists upper-case token hashes; it cannot be moved to \
                         this version's store"
                            .into(),
                    ));
                }
                Some(spec.clone().validate()?.token_hashes)
            };
            spec.client_token_sha256 = Vec::new();
            if let Some(hashes) = old_hashes {
                if legacy_json_round_id(&spec, hashes.iter().copied().map(Ok))? != stored.id {
                    return Err(Error::InvalidSpec(
                        "stored spec does not hash to its id".into(),
                    ));
                }
                self.store.migrate_tokens(
                    &stored.id,
                    &spec.canonical_json(),
                    hashes.as_flattened(),
                )?;
            }
            // The spec without its list, the hashes streamed from the token table to hash it.
            let n = spec.n_clients;
            let mut round =
                spec.validate_streamed(stored_hashes(self.store.token_chunks(&stored.id)?, n))?;
            if round.hash != stored.id {
                // A round created before configs carried their token list in binary keeps
                // the id it was created under (its shares are sealed to it).
                let legacy = legacy_json_round_id(
                    &round.spec,
                    stored_hashes(self.store.token_chunks(&stored.id)?, n),
                )?;
                if legacy != stored.id {
                    return Err(Error::InvalidSpec(
                        "stored spec does not hash to its id".into(),
                    ));
                }
                round.hash = stored.id;
            }
            if stored.aborted.is_none()
                && round.node_keys.get(usize::from(self.index)) != Some(&self.public_key)
            {
                return Err(Error::Key(format!(
                    "{}: round {} was created with another public key for node {}; the key \
                     file was replaced or belongs to another node. Restore the original key \
                     file (this node cannot open the round's shares without it)",
                    crate::node::key::key_path(&self.data_dir).display(),
                    round.spec.round,
                    self.index
                )));
            }
            let round = Arc::new(round);
            self.shared
                .write()
                .map_err(|_| Error::Io(std::io::Error::other("lock poisoned")))?
                .insert(round.hash, round.clone());
            if let Some(reason) = stored.aborted {
                self.rounds.insert(
                    round.hash,
                    RoundRuntime {
                        received_at_close: ClientSet::empty(round.config.n_clients()),
                        round,
                        node: None,
                        agreed: None,
                        sum: SumState::Open,
                        aborted: Some(reason),
                        damaged: None,
                        pending_checks: Default::default(),
                    },
                );
                return Ok(());
            }
            let rt = match self.load_round(&round, stored.sum_stored, at_start) {
                Ok(rt) => rt,
                // The other rounds are served; this one is kept, refusing to finalize.
                Err(Error::Integrity(why)) => {
                    tracing::error!(round = round.spec.round, id = %round.id(), "{why}");
                    self.metrics.round_event("damaged");
                    RoundRuntime {
                        received_at_close: ClientSet::empty(round.config.n_clients()),
                        round,
                        node: None,
                        agreed: None,
                        sum: SumState::Failed(why.clone()),
                        aborted: None,
                        damaged: Some(why),
                        pending_checks: Default::default(),
                    }
                }
                Err(e) => return Err(e),
            };
            self.rounds.insert(rt.round.hash, rt);
        }
        Ok(())
    }

    /// Rebuilds a stored round's running sum from its stored shares (each checked against its
    /// SHA-256), and its agreed set and node sum if it was closed.
    pub(in crate::node) fn load_round(
        &mut self,
        round: &Arc<Round>,
        sum_stored: bool,
        check_shares: bool,
    ) -> Result<RoundRuntime> {
        if self.db.is_shared() || round.validity.is_some() {
            if check_shares || !self.db.is_shared() {
                // Each share is checked against its SHA-256 as it is read.
                self.store.for_each_share(&round.hash, |_, _, _| Ok(()))?;
            }
            // No running sum (shares reach every replica) and nothing to start: the round's
            // state is read back where it matters, and its sum computed under a lease.
            let agreed = self
                .store
                .agreed_set(&round.hash, round.config.n_clients())?;
            if sum_stored {
                self.store.check_sum(&round.hash)?;
            }
            // A verified round keeps no running sum either (its sum needs the nodes' joint
            // check): its received set is read back from the store.
            let mut received_at_close = ClientSet::empty(round.config.n_clients());
            if !self.db.is_shared() {
                self.store.for_each_attempt(&round.hash, |client, _| {
                    received_at_close.insert(fixedpoint_shares::ClientId(client))?;
                    Ok(())
                })?;
            }
            return Ok(RoundRuntime {
                round: round.clone(),
                node: None,
                received_at_close,
                sum: if sum_stored && agreed.is_some() {
                    SumState::Ready
                } else {
                    SumState::Open
                },
                agreed,
                aborted: None,
                damaged: None,
                pending_checks: Default::default(),
            });
        }
        let mut node = RunningSum::new(&round.config, NodeIndex(self.index))?;
        // Shares stored by a version that did not record their attempt get it now.
        let mut unrecorded = Vec::new();
        self.store
            .for_each_share(&round.hash, |client, shard, message| {
                if shard.is_none() {
                    let view =
                        fixedpoint_shares::ShareMessage::get_decoded(&round.config, message)?;
                    unrecorded.push((client, view.shard.0));
                }
                node.absorb_bytes(message)?;
                Ok(())
            })?;
        if !unrecorded.is_empty() {
            self.store.set_shards(&round.hash, &unrecorded)?;
        }
        drop(unrecorded);
        let mut rt = RoundRuntime {
            round: round.clone(),
            node: Some(node),
            received_at_close: ClientSet::empty(round.config.n_clients()),
            agreed: None,
            sum: SumState::Open,
            aborted: None,
            damaged: None,
            pending_checks: Default::default(),
        };
        if let Some(agreed) = self
            .store
            .agreed_set(&round.hash, round.config.n_clients())?
        {
            if sum_stored {
                self.store.check_sum(&round.hash)?;
                rt.received_at_close = rt.received().clone();
                rt.node = None;
                rt.sum = SumState::Ready;
                rt.agreed = Some(agreed);
            } else {
                rt.agreed = Some(agreed.clone());
                self.start_sum(&mut rt, agreed);
            }
        }
        Ok(rt)
    }
}

/// `n` token hashes read from `source`, 32 raw bytes each (a node's token table).
pub(super) fn stored_hashes(
    mut source: impl std::io::Read,
    n: usize,
) -> impl Iterator<Item = Result<[u8; 32]>> {
    (0..n).map(move |i| {
        let mut h = [0u8; 32];
        source
            .read_exact(&mut h)
            .map(|()| h)
            .map_err(|e| Error::InvalidSpec(format!("stored token hash {i}: {e}")))
    })
}
