//! The store actor: one thread that owns the node's SQLite connection and the running sums.
//! Handlers send it commands; it commits all uploads waiting at that moment in one transaction
//! (group commit), answers them, and only then adds them to the running sums.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, mpsc};

use axum::http::StatusCode;
use fixedpoint_shares::{
    ClientId, ClientSet, Decode, NodeIndex, RunningSum, ShardId, ShareMessage,
};
use tokio::sync::oneshot;

use super::close_spool::{self};
use super::store::{
    AttemptReader, HashingWriter, NodeStore, PendingShare, RoundState, UploadOutcome,
};
use crate::http::metrics::Metrics;
use crate::http::problem::{ApiError, ApiResult};
use crate::protocol::spec::{Round, RoundSpec, legacy_json_round_id};
use crate::{Error, Result, hex};

use super::*;

/// Uploads committed in one transaction at most.
pub(super) const GROUP_COMMIT_MAX: usize = 1024;

pub(super) enum SumState {
    Open,
    Computing,
    /// Stored (and read back from the store when fetched).
    Ready,
    Failed(String),
}

pub(super) struct RoundRuntime {
    pub(super) round: Arc<Round>,
    /// The running sum while the round is open (accumulator and received bits; the attempts
    /// are in the store).
    pub(super) node: Option<RunningSum>,
    /// The clients received, once the running sum was handed to the summing thread (or dropped).
    pub(super) received_at_close: ClientSet,
    pub(super) agreed: Option<ClientSet>,
    pub(super) sum: SumState,
    /// Why the aggregator aborted the round (then nothing more is accepted or summed).
    pub(super) aborted: Option<String>,
    /// Why this node's stored state of the round cannot be trusted (a share, the agreed set or
    /// the node sum failed its SHA-256 check): the round is never finalized or served.
    pub(super) damaged: Option<String>,
}

pub(super) struct Upload {
    pub(super) round_id: [u8; 32],
    pub(super) client: u64,
    pub(super) digest: [u8; 32],
    pub(super) message: Vec<u8>,
    pub(super) parsed: ShareMessage,
    pub(super) reply: oneshot::Sender<ApiResult<StatusCode>>,
}

pub(super) enum Command {
    /// The round (no token list), to store with its token hashes from the spool.
    Create(
        Arc<Round>,
        Arc<Spool>,
        oneshot::Sender<ApiResult<StatusCode>>,
    ),
    Upload(Box<Upload>),
    Status([u8; 32], oneshot::Sender<ApiResult<RoundStatus>>),
    /// Answered `Ok(())` for a known round: the handler streams its received set (a pair set
    /// of `fixedpoint_shares::wire`) from the store.
    Received([u8; 32], oneshot::Sender<ApiResult<()>>),
    /// The spooled close request, split into its two lists (and their lengths).
    Close(
        [u8; 32],
        Spool,
        (usize, usize),
        oneshot::Sender<ApiResult<StatusCode>>,
    ),
    Abort([u8; 32], String, oneshot::Sender<ApiResult<StatusCode>>),
    /// Answered `Ok(true)` if the node sum is stored (the handler streams it from the store),
    /// `Ok(false)` while it is being computed.
    Sum([u8; 32], oneshot::Sender<ApiResult<bool>>),
    /// The node sum, written to the spool's `sum` file with this SHA-256, or why not.
    SumReady([u8; 32], std::result::Result<(Spool, [u8; 32]), String>),
    /// A round this replica does not know, to load from the shared store if it is there.
    Load([u8; 32], oneshot::Sender<ApiResult<Arc<Round>>>),
    /// A node sum computed under this replica's lease: stored (`Ok(true)`), the lease lost
    /// first (`Ok(false)`), or why not.
    SumStored(
        [u8; 32],
        std::result::Result<bool, super::replica::SumFailure>,
    ),
}

pub(super) struct Actor {
    pub(super) store: NodeStore,
    pub(super) metrics: Arc<Metrics>,
    /// This node's public key, which every round it holds must list for it.
    pub(super) public_key: share_sealing::NodePublicKey,
    /// The store (the summing thread reads the attempts through its own connection) and the
    /// data directory (for the node sum's spool file).
    pub(super) db: StoreLocation,
    pub(super) data_dir: PathBuf,
    pub(super) index: u16,
    pub(super) rounds: HashMap<[u8; 32], RoundRuntime>,
    pub(super) shared: Arc<RwLock<HashMap<[u8; 32], Arc<Round>>>>,
    pub(super) tx: mpsc::Sender<Command>,
    /// For a shared store: the clock and length of node sum leases, and this process's name
    /// as their holder ([`super::replica`]).
    pub(super) clock: Arc<dyn crate::clock::Clock>,
    pub(super) sum_lease: std::time::Duration,
    pub(super) holder: String,
}

impl RoundRuntime {
    /// The clients whose shares this node holds (or held at close).
    pub(super) fn received(&self) -> &ClientSet {
        self.node
            .as_ref()
            .map_or(&self.received_at_close, RunningSum::received)
    }
}

impl Actor {
    pub(super) fn load(&mut self) -> Result<()> {
        for stored in self.store.rounds()? {
            self.load_stored(stored, true)?;
        }
        Ok(())
    }

    /// Loads round `id` from the shared store if this replica does not know it yet.
    pub(super) fn load_one(&mut self, id: &[u8; 32]) -> ApiResult<Arc<Round>> {
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
    fn load_stored(&mut self, stored: super::store::StoredRound, at_start: bool) -> Result<()> {
        {
            let stored_spec =
                |e: serde_json::Error| Error::InvalidSpec(format!("stored spec: {e}"));
            let mut spec: RoundSpec =
                serde_json::from_slice(&stored.spec_json).map_err(stored_spec)?;
            // Stores of older versions kept the token hashes in one blob, or the spec kept the
            // hex list as the aggregator sent it: checked as before and moved to the token table.
            let old_hashes = match stored.tokens {
                Some(tokens) => {
                    if tokens.len() % 32 != 0 || !spec.client_token_sha256.is_empty() {
                        return Err(Error::InvalidSpec(
                            "stored token hashes are not 32 bytes each".into(),
                        ));
                    }
                    Some(
                        tokens
                            .chunks_exact(32)
                            .map(|c| <[u8; 32]>::try_from(c).unwrap_or_default())
                            .collect::<Vec<_>>(),
                    )
                }
                None if spec.client_token_sha256.is_empty() => None,
                None => {
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
                }
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
    pub(super) fn load_round(
        &mut self,
        round: &Arc<Round>,
        sum_stored: bool,
        check_shares: bool,
    ) -> Result<RoundRuntime> {
        if self.db.is_shared() {
            if check_shares {
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
            return Ok(RoundRuntime {
                round: round.clone(),
                node: None,
                received_at_close: ClientSet::empty(round.config.n_clients()),
                sum: if sum_stored && agreed.is_some() {
                    SumState::Ready
                } else {
                    SumState::Open
                },
                agreed,
                aborted: None,
                damaged: None,
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

    /// Retracts the shares of received clients outside the agreed set (read back from the
    /// store: the running sum keeps no seeds, so seed shares are re-expanded from there too)
    /// and writes the node sum on a worker thread to a spool file, the agreed clients'
    /// attempts streamed from the store ([`RunningSum::write_sum`]); the result comes back as
    /// `SumReady`.
    pub(super) fn start_sum(&mut self, rt: &mut RoundRuntime, agreed: ClientSet) {
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
        let (db, spool) = (self.db.clone(), Spool::new(&self.data_dir));
        std::thread::spawn(move || {
            let written = || -> Result<[u8; 32]> {
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
                Ok(sha256)
            };
            let result = written()
                .map(|sha256| (spool, sha256))
                .map_err(|e| e.to_string());
            let _ = tx.send(Command::SumReady(id, result));
        });
    }

    pub(super) fn run(mut self, rx: mpsc::Receiver<Command>) {
        while let Ok(first) = rx.recv() {
            let mut batch = vec![first];
            while batch.len() < GROUP_COMMIT_MAX {
                match rx.try_recv() {
                    Ok(c) => batch.push(c),
                    Err(_) => break,
                }
            }
            let mut uploads = Vec::new();
            for command in batch {
                match command {
                    Command::Upload(u) => uploads.push(*u),
                    other => {
                        self.flush(std::mem::take(&mut uploads));
                        self.handle(other);
                    }
                }
            }
            self.flush(uploads);
        }
    }

    pub(super) fn flush(&mut self, uploads: Vec<Upload>) {
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
                shard: u.parsed.shard.0,
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

    pub(super) fn absorb(&mut self, u: &Upload) -> ApiResult<StatusCode> {
        let rt = self
            .rounds
            .get_mut(&u.round_id)
            .ok_or_else(|| ApiError::not_found("unknown round"))?;
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
        node.absorb(&u.parsed)
            .map_err(|e| ApiError::internal(format!("absorb after commit: {e}")))?;
        Ok(StatusCode::CREATED)
    }

    pub(super) fn handle(&mut self, command: Command) {
        match command {
            Command::Upload(_) => {}
            Command::Create(round, spool, reply) => {
                let _ = reply.send(self.create(round, &spool));
            }
            Command::Status(id, reply) => {
                let stored_count = self.refresh(&id).and_then(|()| self.stored_count(&id));
                let _ = reply.send(stored_count.and_then(|stored_count| {
                    self.rounds
                        .get(&id)
                        .ok_or_else(|| ApiError::not_found("unknown round"))
                        .map(|rt| RoundStatus {
                            id: hex::encode(&id),
                            round: rt.round.spec.round,
                            state: if rt.aborted.is_some() {
                                "aborted"
                            } else if rt.damaged.is_some() {
                                "damaged"
                            } else if rt.agreed.is_some() {
                                "closed"
                            } else {
                                "open"
                            }
                            .into(),
                            received: stored_count.unwrap_or_else(|| rt.received().len()),
                            sum: match rt.sum {
                                SumState::Open => "none",
                                SumState::Computing => "computing",
                                SumState::Ready => "ready",
                                SumState::Failed(_) => "failed",
                            }
                            .into(),
                        })
                }));
            }
            Command::Received(id, reply) => {
                let _ = reply.send(match self.rounds.get(&id) {
                    None => Err(ApiError::not_found("unknown round")),
                    // Known: the handler streams the set from the store.
                    Some(_) => Ok(()),
                });
            }
            Command::Close(id, spool, counts, reply) => {
                let _ = reply.send(self.close(id, &spool, counts));
            }
            Command::Abort(id, reason, reply) => {
                let _ = reply.send(self.abort(id, reason));
            }
            Command::Sum(id, reply) if self.db.is_shared() => {
                let _ = reply.send(self.shared_sum(id));
            }
            Command::Load(id, reply) => {
                let _ = reply.send(self.load_one(&id));
            }
            Command::SumStored(id, result) => self.sum_stored(id, result),
            Command::Sum(id, reply) => {
                let _ = reply.send(match self.rounds.get(&id) {
                    None => Err(ApiError::not_found("unknown round")),
                    Some(RoundRuntime {
                        aborted: Some(reason),
                        ..
                    }) => Err(ApiError::conflict(
                        "round-aborted",
                        format!("round was aborted: {reason}"),
                    )),
                    Some(rt) => match &rt.sum {
                        SumState::Open => Err(ApiError::conflict("round-open", "round not closed")),
                        SumState::Computing => Ok(false),
                        SumState::Ready => Ok(true),
                        SumState::Failed(e) => {
                            Err(ApiError::internal(format!("node sum failed: {e}")))
                        }
                    },
                });
            }
            Command::SumReady(id, result) => {
                if let Some(rt) = self.rounds.get_mut(&id) {
                    rt.sum = match result.and_then(|(spool, sha256)| {
                        // Copied from the spool file into the store piece by piece.
                        let stored = std::fs::File::open(&spool.sum)
                            .and_then(|f| f.metadata().map(|m| (m.len(), f)))
                            .map_err(Error::from)
                            .and_then(|(len, f)| {
                                self.store.set_sum_from(
                                    &id,
                                    &mut std::io::BufReader::with_capacity(1 << 16, f),
                                    len,
                                    &sha256,
                                )
                            });
                        stored.map_err(|e| format!("storing the sum: {e}"))
                    }) {
                        Ok(()) => {
                            self.metrics.round_event("summed");
                            SumState::Ready
                        }
                        Err(e) => {
                            self.metrics.round_event("sum_failed");
                            tracing::error!(round = rt.round.spec.round, id = %rt.round.id(), "{e}");
                            SumState::Failed(e)
                        }
                    };
                }
            }
        }
    }

    pub(super) fn create(&mut self, round: Arc<Round>, spool: &Spool) -> ApiResult<StatusCode> {
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
        let node = (!self.db.is_shared()).then_some(node);
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
            },
        );
        Ok(StatusCode::CREATED)
    }

    /// Records the abort (idempotent) and forgets the round's shares and running sum. A round
    /// already closed with an agreed set is not aborted: its sum may be released.
    pub(super) fn abort(&mut self, id: [u8; 32], reason: String) -> ApiResult<StatusCode> {
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
        rt.aborted = Some(reason);
        self.metrics.round_event("aborted");
        Ok(StatusCode::ACCEPTED)
    }

    pub(super) fn close(
        &mut self,
        id: [u8; 32],
        request: &Spool,
        counts: (usize, usize),
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
        let result = self.close_round(&mut rt, request, counts);
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
                return self.close(id, request, counts);
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
    pub(super) fn close_round(
        &mut self,
        rt: &mut RoundRuntime,
        request: &Spool,
        (listed, shards): (usize, usize),
    ) -> ApiResult<StatusCode> {
        let n = rt.round.config.n_clients();
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
                Ok(StatusCode::OK)
            } else {
                Err(ApiError::conflict(
                    "agreed-set-mismatch",
                    "closed already with another agreed set",
                ))
            };
        }
        let stored_clients = if self.db.is_shared() {
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
        if !self.db.is_shared() {
            self.start_sum(rt, agreed);
        }
        Ok(StatusCode::ACCEPTED)
    }
}

/// The answer to an upload the store refused because the round is not open there.
fn not_open(state: RoundState) -> ApiError {
    match state {
        RoundState::Closed => ApiError::conflict("round-closed", "round is closed"),
        RoundState::Aborted => ApiError::conflict("round-aborted", "round was aborted"),
        RoundState::Unknown | RoundState::Open => ApiError::not_found("unknown round"),
    }
}

/// `n` token hashes read from `source`, 32 raw bytes each (a node's token table).
fn stored_hashes(
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
