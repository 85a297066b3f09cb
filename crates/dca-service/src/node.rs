//! A compute node: HTTPS API, HPKE opening, durable exactly-once storage, its DCA sum.
//!
//! Request handlers authenticate, open and check a share concurrently; everything that reads
//! or changes state goes through one writer thread (the "store actor") that owns the SQLite
//! connection and the running sums. The actor commits all uploads waiting at that moment in one
//! transaction (group commit: one fsync for many shares) and only then lets their handlers
//! answer 2xx, and only then adds them to the running sum. A crash between commit and sum is
//! harmless: the sum is rebuilt from the stored shares on start-up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, mpsc};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use fixedpoint_shares::{
    ClientId, ClientSet, Decode, NodeIndex, RunningSum, ShardId, ShardSet, ShareMessage, ShareMode,
    SharePayload,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use share_sealing::{NodeKeyPair, SealContext};
use tokio::sync::oneshot;

use crate::body::{BodyBudget, BodyError};
use crate::clock::{Clock, SystemClock};
use crate::close_spool::{self, SplitError};
use crate::metrics::Metrics;
pub use crate::node_key::load_or_create_key;
use crate::node_store::{
    AttemptReader, HashingWriter, NodeStore, PendingShare, TokenLookup, UploadOutcome,
};
use crate::problem::{ApiError, ApiResult, bearer, content_type_is, healthz, json, require_token};
use crate::secret::{SecretString, token_matches};
use crate::spec::{
    Round, RoundSpec, RoundSpecOf, TokenCount, TokenHashes, spool_token_hashes, token_hash,
};
use crate::{Error, MEDIA_JSON, MEDIA_NODE_SUM, MEDIA_SEALED_SHARE, Result, hex};

/// Uploads committed in one transaction at most.
const GROUP_COMMIT_MAX: usize = 1024;

/// How a node is run.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// This node's index in every round it joins.
    pub index: u16,
    /// Directory of `node.sqlite` and the HPKE key file ([`crate::node_key::KEY_FILE`]).
    pub data_dir: PathBuf,
    /// The bearer token the aggregator presents (shared secret).
    pub admin_token: SecretString,
    /// Largest request body accepted at all (bytes); shares are further limited per round.
    pub max_body: usize,
    /// Share bytes the node reads at once, over all uploads in flight (503 beyond).
    pub max_inflight_body: usize,
    /// Time a client has to send a request body once its headers are in (408 after).
    pub body_timeout: Duration,
    /// The clock that decides whether a round's deadline has passed.
    pub clock: Arc<dyn Clock>,
}

impl NodeOptions {
    /// Options with the default limits: 64 MiB per request body and in flight, 30 s per body.
    pub fn new(index: u16, data_dir: PathBuf, admin_token: SecretString) -> Self {
        NodeOptions {
            index,
            data_dir,
            admin_token,
            max_body: 64 << 20,
            max_inflight_body: 64 << 20,
            body_timeout: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
        }
    }
}

// ------------------------------------------------------------------------------------------
// The store actor.

enum SumState {
    Open,
    Computing,
    /// Stored (and read back from the store when fetched).
    Ready,
    Failed(String),
}

struct RoundRuntime {
    round: Arc<Round>,
    /// The running sum while the round is open (accumulator and received bits; the attempts
    /// are in the store).
    node: Option<RunningSum>,
    /// The clients received, once the running sum was handed to the summing thread (or dropped).
    received_at_close: ClientSet,
    agreed: Option<ClientSet>,
    sum: SumState,
    /// Why the aggregator aborted the round (then nothing more is accepted or summed).
    aborted: Option<String>,
    /// Why this node's stored state of the round cannot be trusted (a share, the agreed set or
    /// the node sum failed its SHA-256 check): the round is never finalized or served.
    damaged: Option<String>,
}

struct Upload {
    round_id: [u8; 32],
    client: u64,
    digest: [u8; 32],
    message: Vec<u8>,
    parsed: ShareMessage,
    reply: oneshot::Sender<ApiResult<StatusCode>>,
}

enum Command {
    /// The round (no token list), to store with its token hashes from the spool.
    Create(
        Arc<Round>,
        Arc<Spool>,
        oneshot::Sender<ApiResult<StatusCode>>,
    ),
    Upload(Box<Upload>),
    Status([u8; 32], oneshot::Sender<ApiResult<RoundStatus>>),
    /// Answered with the JSON of a [`ReceivedSet`], written straight from the pairs.
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
}

struct Actor {
    store: NodeStore,
    metrics: Arc<Metrics>,
    /// This node's public key, which every round it holds must list for it.
    public_key: share_sealing::NodePublicKey,
    /// The store's path (the summing thread reads the attempts through its own connection)
    /// and the data directory (for the node sum's spool file).
    db: PathBuf,
    data_dir: PathBuf,
    index: u16,
    rounds: HashMap<[u8; 32], RoundRuntime>,
    shared: Arc<RwLock<HashMap<[u8; 32], Arc<Round>>>>,
    tx: mpsc::Sender<Command>,
}

/// A round's state as `GET /rounds/{id}` reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundStatus {
    /// Hex config hash.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// "open", "closed", "aborted", or "damaged" (stored state failed its integrity check:
    /// the node refuses to finalize or serve the round).
    pub state: String,
    /// Clients whose share this node holds.
    pub received: usize,
    /// "none", "computing", "ready" or "failed".
    pub sum: String,
}

/// The agreed set the aggregator sends (`POST /rounds/{id}/close`): (client, shard attempt)
/// pairs, as parallel lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CloseRequest {
    /// Client ids, any order, no duplicates.
    pub agreed: Vec<u64>,
    /// The shard id of each agreed client's attempt (16 hex digits), in the same order.
    pub shards: Vec<String>,
}

impl CloseRequest {
    /// The request that sends `agreed`.
    pub fn new(agreed: &ShardSet) -> Self {
        let (agreed, shards) = pairs_to_wire(agreed);
        CloseRequest { agreed, shards }
    }
}

/// The aggregator's notice that a round is aborted (`POST /rounds/{id}/abort`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AbortRequest {
    /// Why (recorded by the node, shown in its errors).
    pub reason: String,
}

/// A node's received set (`GET /rounds/{id}/received`): the (client, shard attempt) pairs it
/// holds, as parallel lists.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReceivedSet {
    /// Client ids, ascending.
    pub clients: Vec<u64>,
    /// The shard id of each client's stored share (16 hex digits), in the same order.
    pub shards: Vec<String>,
}

impl ReceivedSet {
    /// The pairs, checked against a round of `n_clients` clients.
    ///
    /// # Errors
    /// Lists of different lengths, a malformed shard id, a client id ≥ N or listed twice.
    pub fn pairs(&self, n_clients: usize) -> Result<ShardSet> {
        pairs_from_wire(n_clients, &self.clients, &self.shards)
    }
}

/// A set of (client, shard) pairs as the JSON bodies carry it: client ids and, in the same order,
/// shard ids as 16 hex digits (a JSON number cannot hold every u64 exactly).
fn pairs_to_wire(pairs: &ShardSet) -> (Vec<u64>, Vec<String>) {
    pairs
        .iter()
        .map(|(c, s)| (c.0, hex::encode(&s.0.to_be_bytes())))
        .unzip()
}

fn pairs_from_wire(n_clients: usize, clients: &[u64], shards: &[String]) -> Result<ShardSet> {
    if clients.len() != shards.len() {
        return Err(Error::InvalidSpec(format!(
            "{} client ids but {} shard ids",
            clients.len(),
            shards.len()
        )));
    }
    let pairs = clients
        .iter()
        .zip(shards)
        .map(|(&c, s)| {
            hex::decode_array::<8>(s)
                .map(|b| (ClientId(c), ShardId(u64::from_be_bytes(b))))
                .ok_or_else(|| Error::InvalidSpec(format!("shard id {s:?}: need 16 hex digits")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ShardSet::from_pairs(n_clients, &pairs)?)
}

impl RoundRuntime {
    /// The clients whose shares this node holds (or held at close).
    fn received(&self) -> &ClientSet {
        self.node
            .as_ref()
            .map_or(&self.received_at_close, RunningSum::received)
    }
}

impl Actor {
    fn load(&mut self) -> Result<()> {
        for stored in self.store.rounds()? {
            let stored_spec =
                |e: serde_json::Error| Error::InvalidSpec(format!("stored spec: {e}"));
            // Stores of older versions kept the token hashes in one blob, or the spec kept the
            // hex list as the aggregator sent it: checked as before and moved to the token table.
            let old_hashes = match stored.tokens {
                Some(tokens) => {
                    if tokens.len() % 32 != 0 {
                        return Err(Error::InvalidSpec(
                            "stored token hashes are not 32 bytes each".into(),
                        ));
                    }
                    let mut spec: RoundSpecOf<TokenHashes> =
                        serde_json::from_slice(&stored.spec_json).map_err(stored_spec)?;
                    spec.client_token_sha256 = TokenHashes(
                        tokens
                            .chunks_exact(32)
                            .map(|c| <[u8; 32]>::try_from(c).unwrap_or_default())
                            .collect(),
                    );
                    Some(spec.validate()?)
                }
                None => {
                    let spec: RoundSpec =
                        serde_json::from_slice(&stored.spec_json).map_err(stored_spec)?;
                    if spec.client_token_sha256.is_empty() {
                        None
                    } else if spec
                        .client_token_sha256
                        .iter()
                        .any(|h| h.bytes().any(|b| b.is_ascii_uppercase()))
                    {
                        return Err(Error::InvalidSpec(
                            "stored round lists upper-case token hashes; it cannot be moved to \
                             this version's store"
                                .into(),
                        ));
                    } else {
                        Some(spec.validate()?)
                    }
                }
            };
            let spec_json = match old_hashes {
                Some(mut old) => {
                    if old.hash != stored.id {
                        return Err(Error::InvalidSpec(
                            "stored spec does not hash to its id".into(),
                        ));
                    }
                    old.drop_token_list();
                    let json = old.spec.canonical_json();
                    self.store
                        .migrate_tokens(&old.hash, &json, old.token_hashes.as_flattened())?;
                    json
                }
                None => stored.spec_json,
            };
            // The spec without its list, the hashes streamed from the token table to hash it.
            let mut spec: RoundSpecOf<TokenCount> =
                serde_json::from_slice(&spec_json).map_err(stored_spec)?;
            spec.client_token_sha256 = TokenCount(spec.n_clients);
            let mut round = spec.validate_with(self.store.token_chunks(&stored.id))?;
            if round.hash != stored.id {
                return Err(Error::InvalidSpec(
                    "stored spec does not hash to its id".into(),
                ));
            }
            round.drop_token_list();
            if stored.aborted.is_none()
                && round.node_keys.get(usize::from(self.index)) != Some(&self.public_key)
            {
                return Err(Error::Key(format!(
                    "{}: round {} was created with another public key for node {}; the key \
                     file was replaced or belongs to another node. Restore the original key \
                     file (this node cannot open the round's shares without it)",
                    crate::node_key::key_path(&self.data_dir).display(),
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
                continue;
            }
            let rt = match self.load_round(&round, stored.sum_stored) {
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
    fn load_round(&mut self, round: &Arc<Round>, sum_stored: bool) -> Result<RoundRuntime> {
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
    fn start_sum(&self, rt: &mut RoundRuntime, agreed: ClientSet) {
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
                let reader = AttemptReader::open(&db)?;
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

    fn run(mut self, rx: mpsc::Receiver<Command>) {
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

    fn flush(&mut self, uploads: Vec<Upload>) {
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
                    };
                    let _ = u.reply.send(reply);
                }
            }
        }
    }

    fn absorb(&mut self, u: &Upload) -> ApiResult<StatusCode> {
        let rt = self
            .rounds
            .get_mut(&u.round_id)
            .ok_or_else(|| ApiError::not_found("unknown round"))?;
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

    fn handle(&mut self, command: Command) {
        match command {
            Command::Upload(_) => {}
            Command::Create(round, spool, reply) => {
                let _ = reply.send(self.create(round, &spool));
            }
            Command::Status(id, reply) => {
                let _ = reply.send(
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
                            received: rt.received().len(),
                            sum: match rt.sum {
                                SumState::Open => "none",
                                SumState::Computing => "computing",
                                SumState::Ready => "ready",
                                SumState::Failed(_) => "failed",
                            }
                            .into(),
                        }),
                );
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

    fn create(&mut self, round: Arc<Round>, spool: &Spool) -> ApiResult<StatusCode> {
        if self.rounds.contains_key(&round.hash) {
            return Ok(StatusCode::OK);
        }
        match self.store.round_by_number(round.spec.round) {
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
        let mut tokens = std::fs::File::open(&spool.tokens)
            .map(std::io::BufReader::new)
            .map_err(|e| ApiError::internal(format!("spooled token hashes: {e}")))?;
        self.store
            .insert_round(
                &round.hash,
                round.spec.round,
                // The spec without its token list, which goes to the token table.
                &round.spec.canonical_json(),
                &mut tokens,
                round.config.n_clients(),
            )
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let received_at_close = ClientSet::empty(round.config.n_clients());
        if let Ok(mut shared) = self.shared.write() {
            shared.insert(round.hash, round.clone());
        }
        self.metrics.round_event("created");
        self.rounds.insert(
            round.hash,
            RoundRuntime {
                round,
                node: Some(node),
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
    fn abort(&mut self, id: [u8; 32], reason: String) -> ApiResult<StatusCode> {
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
        self.store
            .abort(&id, &reason)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        rt.node = None;
        rt.received_at_close = ClientSet::empty(rt.round.config.n_clients());
        rt.aborted = Some(reason);
        self.metrics.round_event("aborted");
        Ok(StatusCode::ACCEPTED)
    }

    fn close(
        &mut self,
        id: [u8; 32],
        request: &Spool,
        counts: (usize, usize),
    ) -> ApiResult<StatusCode> {
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
        let result = self.close_round(&mut rt, request, counts);
        self.rounds.insert(id, rt);
        result
    }

    /// Checks the close request (split into its lists, see [`close_spool`]) and closes: the
    /// agreed set is read as N bits, and each agreed pair is compared with the attempt this
    /// node stored in one ascending scan of the store; no list of ids or pairs is held.
    fn close_round(
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
        if let Some(client) = agreed.iter().find(|c| !rt.received().contains(*c)) {
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
        self.store
            .set_agreed_set(&rt.round.hash, &agreed)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        rt.agreed = Some(agreed.clone());
        self.metrics.round_event("closed");
        self.start_sum(rt, agreed);
        Ok(StatusCode::ACCEPTED)
    }
}

// ------------------------------------------------------------------------------------------
// HTTP.

struct AppState {
    index: u16,
    keys: NodeKeyPair,
    admin_token_hash: [u8; 32],
    rounds: Arc<RwLock<HashMap<[u8; 32], Arc<Round>>>>,
    tx: std::sync::Mutex<mpsc::Sender<Command>>,
    data_dir: PathBuf,
    max_body: usize,
    /// Share bytes being read or opened, over all uploads.
    share_bytes: BodyBudget,
    body_timeout: Duration,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// Read-only connections for the clients' token hashes, used in turn.
    lookups: Vec<std::sync::Mutex<TokenLookup>>,
    /// The store's path, for the received set's read-only connections.
    db: std::path::PathBuf,
    next_lookup: std::sync::atomic::AtomicUsize,
}

impl AppState {
    /// Client `client`'s token hash as listed in round `round`'s config, from the store.
    fn token_hash(&self, round: &[u8; 32], client: u64) -> ApiResult<[u8; 32]> {
        let k = self
            .next_lookup
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % self.lookups.len().max(1);
        let lookup = self
            .lookups
            .get(k)
            .ok_or_else(|| ApiError::internal("no token lookup"))?
            .lock()
            .map_err(|_| ApiError::internal("lock poisoned"))?;
        lookup
            .token_hash(round, client)
            .map_err(|e| ApiError::internal(format!("token lookup: {e}")))?
            .ok_or_else(|| ApiError::internal("the round's token hash is not stored"))
    }

    /// Opens a read-only connection to the store and runs `f` on it, off the async threads.
    async fn blocking_read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&AttemptReader) -> Result<T> + Send + 'static,
    ) -> ApiResult<(AttemptReader, T)> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let reader = AttemptReader::open(&db)?;
            let value = f(&reader)?;
            Ok((reader, value))
        })
        .await
        .map_err(|e| ApiError::internal(format!("reading the store: {e}")))?
        .map_err(|e: Error| match e {
            Error::Integrity(_) => {
                tracing::error!("{e}");
                ApiError::damaged(e.to_string())
            }
            e => ApiError::internal(e.to_string()),
        })
    }

    fn send(&self, c: Command) -> ApiResult<()> {
        self.tx
            .lock()
            .map_err(|_| ApiError::internal("lock poisoned"))?
            .send(c)
            .map_err(|_| ApiError::internal("store stopped"))
    }

    fn round(&self, id: &str) -> ApiResult<Arc<Round>> {
        let id = hex::decode_array::<32>(id)
            .ok_or_else(|| ApiError::not_found("round id is not 64 hex digits"))?;
        self.rounds
            .read()
            .map_err(|_| ApiError::internal("lock poisoned"))?
            .get(&id)
            .cloned()
            .ok_or_else(|| ApiError::not_found("unknown round"))
    }

    fn admin(&self, headers: &HeaderMap) -> ApiResult<()> {
        require_token(headers, &self.admin_token_hash, "the aggregator's")
    }
}

async fn ask<T>(
    state: &AppState,
    make: impl FnOnce(oneshot::Sender<ApiResult<T>>) -> Command,
) -> ApiResult<T> {
    let (tx, rx) = oneshot::channel();
    state.send(make(tx))?;
    rx.await
        .map_err(|_| ApiError::internal("store dropped the request"))?
}

async fn node_metrics(State(state): State<Arc<AppState>>) -> Response {
    crate::metrics::exposition(&state.metrics)
}

async fn public_key(State(state): State<Arc<AppState>>) -> Response {
    json(
        StatusCode::OK,
        &serde_json::json!({ "node": state.index, "public_key": hex::encode(&state.keys.public.to_bytes()) }),
    )
}

/// A request body (a round config, a close request) spooled to the data directory while it is
/// parsed, and a round config's token hashes (32 raw bytes each); both files are removed on drop.
pub(crate) struct Spool {
    config: PathBuf,
    tokens: PathBuf,
    /// A close request's client ids, shard ids, and shard ids by client ([`close_spool`]).
    clients: PathBuf,
    shards: PathBuf,
    by_client: PathBuf,
    /// A node sum being written ([`RunningSum::write_sum`]).
    sum: PathBuf,
}

impl Spool {
    const PREFIX: &'static str = "request-spool-";

    fn new(data_dir: &Path) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stem = format!("{}{}-{k}", Self::PREFIX, std::process::id());
        Spool {
            config: data_dir.join(format!("{stem}.json")),
            tokens: data_dir.join(format!("{stem}.tokens")),
            clients: data_dir.join(format!("{stem}.clients")),
            shards: data_dir.join(format!("{stem}.shards")),
            by_client: data_dir.join(format!("{stem}.by-client")),
            sum: data_dir.join(format!("{stem}.sum")),
        }
    }

    /// Removes spools a killed process left behind.
    fn clean(data_dir: &Path) -> Result<()> {
        for entry in std::fs::read_dir(data_dir)? {
            let entry = entry?;
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(Self::PREFIX)
            {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    }

    /// Parses the spooled config in two streaming passes (memory O(1) in N): first every field
    /// is checked and the token hashes counted, then the hashes are written to `tokens`; the
    /// config is validated and hashed reading them back.
    fn parse(&self) -> ApiResult<Round> {
        use std::io::{BufReader, BufWriter, Write};
        let io = |e: std::io::Error| ApiError::internal(format!("spooled round config: {e}"));
        let open = || {
            std::fs::File::open(&self.config)
                .map(BufReader::new)
                .map_err(io)
        };
        let spec: RoundSpecOf<TokenCount> = serde_json::from_reader(open()?)
            .map_err(|e| ApiError::bad_request(format!("round config: {e}")))?;
        let mut out = BufWriter::new(std::fs::File::create(&self.tokens).map_err(io)?);
        let n = spool_token_hashes(open()?, &mut out).map_err(|e| match e {
            Error::Io(e) => io(e),
            e => ApiError::bad_request(e.to_string()),
        })?;
        out.flush().map_err(io)?;
        drop(out);
        if n != spec.client_token_sha256.0 {
            return Err(ApiError::internal(
                "the spooled config changed between passes",
            ));
        }
        let tokens = std::fs::File::open(&self.tokens)
            .map(BufReader::new)
            .map_err(io)?;
        spec.validate_with(tokens)
            .map_err(|e| ApiError::bad_request(e.to_string()))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        for path in [
            &self.config,
            &self.tokens,
            &self.clients,
            &self.shards,
            &self.by_client,
            &self.sum,
        ] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes a request body to `path` as it arrives, refusing more than `--max-body` bytes (413,
/// also when `Content-Length` says so up front).
async fn spool_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    path: &Path,
) -> ApiResult<()> {
    use http_body_util::BodyExt;
    use tokio::io::AsyncWriteExt;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "length limit exceeded",
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > state.max_body as u64) {
        return Err(too_large());
    }
    let io = |e: std::io::Error| ApiError::internal(format!("spooling the request body: {e}"));
    let mut file = tokio::fs::File::create(path).await.map_err(io)?;
    let (mut body, mut total) = (body, 0usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            total += data.len();
            if total > state.max_body {
                return Err(too_large());
            }
            file.write_all(&data).await.map_err(io)?;
        }
    }
    file.flush().await.map_err(io)
}

async fn create_round(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_JSON)?;
    // The config (~67 bytes per client) goes to disk frame by frame, never whole in memory.
    let spool = Spool::new(&state.data_dir);
    spool_body(&state, &headers, body, &spool.config).await?;
    let (spool, round) = tokio::task::spawn_blocking(move || {
        let round = spool.parse();
        (spool, round)
    })
    .await
    .map_err(|e| ApiError::internal(format!("parsing the round config: {e}")))?;
    let round = round?;
    if round.id() != id.to_ascii_lowercase() {
        return Err(ApiError::bad_request(format!(
            "round id must be the config's SHA-256, {}",
            round.id()
        )));
    }
    let mine = round
        .node_keys
        .get(usize::from(state.index))
        .ok_or_else(|| ApiError::bad_request("this node's index is not in the round"))?;
    if *mine != state.keys.public {
        return Err(ApiError::bad_request(
            "the round lists another public key for this node",
        ));
    }
    let spool = Arc::new(spool);
    let status = ask(&state, |tx| {
        Command::Create(Arc::new(round), spool.clone(), tx)
    })
    .await?;
    Ok(status.into_response())
}

async fn round_status(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id)?;
    let status = ask(&state, |tx| Command::Status(round.hash, tx)).await?;
    Ok(json(StatusCode::OK, &status))
}

async fn received(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id)?;
    ask(&state, |tx| Command::Received(round.hash, tx)).await?;
    // The set (~25 bytes of JSON per client) is written from the store's attempts index in
    // chunks as the client reads them, not built whole: memory O(1) in N. A store error after
    // the first chunk can only cut the response short (the client sees a broken body).
    let id = round.hash;
    let (reader, ()) = state.blocking_read(|_| Ok(())).await?;
    let body = stream_body(reader, move |reader, out| {
        reader.write_received_json(&id, out)
    });
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, MEDIA_JSON)], body).into_response())
}

/// A response body that `write` fills on a blocking thread through `reader`, sent in chunks
/// as the client reads them ([`ChunkSender`]); an error cuts the body short.
fn stream_body(
    mut reader: AttemptReader,
    write: impl FnOnce(&mut AttemptReader, &mut ChunkSender) -> Result<()> + Send + 'static,
) -> Body {
    let (sender, body) = http_body_util::channel::Channel::<Bytes, std::io::Error>::new(2);
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut out = ChunkSender::new(sender, handle);
        if let Err(e) = write(&mut reader, &mut out) {
            out.abort(std::io::Error::other(e.to_string()));
        }
    });
    Body::new(body)
}

/// Bytes of a response body written on a blocking thread, sent in chunks of [`Self::CHUNK`]
/// bytes through a channel of two (so at most a few chunks are in memory at once).
struct ChunkSender {
    sender: Option<http_body_util::channel::Sender<Bytes, std::io::Error>>,
    handle: tokio::runtime::Handle,
    buf: Vec<u8>,
}

impl ChunkSender {
    const CHUNK: usize = 64 * 1024;

    fn new(
        sender: http_body_util::channel::Sender<Bytes, std::io::Error>,
        handle: tokio::runtime::Handle,
    ) -> Self {
        ChunkSender {
            sender: Some(sender),
            handle,
            buf: Vec::with_capacity(Self::CHUNK),
        }
    }

    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(Self::CHUNK),
        ));
        let sender = self
            .sender
            .as_mut()
            .ok_or_else(|| std::io::Error::other("response body aborted"))?;
        self.handle
            .block_on(sender.send_data(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client went away"))
    }

    /// Ends the body with an error (the connection is cut, not closed cleanly).
    fn abort(&mut self, error: std::io::Error) {
        if let Some(sender) = self.sender.take() {
            sender.abort(error);
        }
    }
}

impl std::io::Write for ChunkSender {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= Self::CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

async fn close(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_JSON)?;
    let round = state.round(&id)?;
    // The agreed set (~25 bytes of JSON per client) is spooled to disk and read from there
    // in one streaming pass into its two lists (raw words, on disk too); the store actor
    // checks them. Only a body that is not a close request at all is refused here.
    let spool = Spool::new(&state.data_dir);
    spool_body(&state, &headers, body, &spool.config).await?;
    let (spool, counts) = tokio::task::spawn_blocking(move || {
        let counts = close_spool::split(&spool.config, &spool.clients, &spool.shards);
        (spool, counts)
    })
    .await
    .map_err(|e| ApiError::internal(format!("parsing the close request: {e}")))?;
    let counts = counts.map_err(|e| match e {
        SplitError::Malformed(m) => ApiError::bad_request(format!("close request: {m}")),
        SplitError::Io(e) => ApiError::internal(format!("spooled close request: {e}")),
    })?;
    let status = ask(&state, |tx| Command::Close(round.hash, spool, counts, tx)).await?;
    Ok(status.into_response())
}

async fn abort(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_JSON)?;
    let round = state.round(&id)?;
    let request: AbortRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("abort request: {e}")))?;
    let status = ask(&state, |tx| Command::Abort(round.hash, request.reason, tx)).await?;
    Ok(status.into_response())
}

async fn node_sum(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id)?;
    if !ask(&state, |tx| Command::Sum(round.hash, tx)).await? {
        return Ok((
            StatusCode::ACCEPTED,
            [(header::RETRY_AFTER, "1")],
            "node sum is being computed\n",
        )
            .into_response());
    }
    // The stored sum (8 bytes per agreed client, 8d for the sum) is streamed from the store
    // in chunks, not read whole.
    let id = round.hash;
    let (reader, at) = state
        .blocking_read(move |reader| reader.checked_sum_blob(&id))
        .await?;
    let at = at.ok_or_else(|| ApiError::internal("stored node sum missing"))?;
    let len = at.len;
    let body = stream_body(reader, move |reader, out| reader.write_sum(&at, out));
    Ok((
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(MEDIA_NODE_SUM),
            ),
            (header::CONTENT_LENGTH, HeaderValue::from(len)),
        ],
        body,
    )
        .into_response())
}

/// Checks an opened share against the slot it arrived in, so that the store only ever holds
/// shares the running sum accepts.
fn check_message(msg: &ShareMessage, round: &Round, node: u16, client: u64) -> ApiResult<()> {
    let c = &round.config;
    let expect_full = node == 0 || c.mode() == ShareMode::Full;
    let problems = [
        (msg.round.0 != c.round().0, "round"),
        (msg.client.0 != client, "client"),
        (msg.node.0 != node, "node"),
        (msg.dim != c.dim(), "dimension"),
        (msg.frac_bits != c.codec().frac_bits(), "fractional bits"),
        (
            matches!(msg.payload, SharePayload::Full(_)) != expect_full,
            "payload kind",
        ),
    ];
    match problems.iter().find(|(bad, _)| *bad) {
        Some((_, what)) => Err(ApiError::bad_request(format!(
            "share message has the wrong {what} for this slot"
        ))),
        None => Ok(()),
    }
}

/// The exact length of a sealed share of `round` for node `node`: a full share (node 0, or
/// every node in full mode) carries d words, a seed share its 16-byte seed.
fn sealed_share_len(round: &Round, node: u16) -> usize {
    let payload = if node == 0 || round.config.mode() == ShareMode::Full {
        8 * round.config.dim()
    } else {
        16
    };
    share_sealing::sealed_len(fixedpoint_shares::wire::HEADER_LEN + 16 + payload)
}

/// `PUT /rounds/{id}/shares/{client}`: the round, the client and its token are checked from
/// the path and headers before a byte of the body is read; then at most the round's share size
/// is read, within the body time limit and the node's budget of share bytes in flight.
async fn upload(
    State(state): State<Arc<AppState>>,
    UrlPath((id, client)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let checked = check_upload(&state, &id, &client, &headers).await;
    let (round, client) = match checked {
        Ok(ok) => ok,
        Err(refused) => {
            // Small bodies are read and dropped so that the client can read the answer.
            crate::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
            return Err(refused);
        }
    };
    let limit = sealed_share_len(&round, state.index);
    if crate::body::declared_len(&headers).is_some_and(|len| len > limit as u64) {
        crate::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            BodyError::TooLarge { limit }.to_string(),
        ));
    }
    let (sealed, _permit) = match state
        .share_bytes
        .read(&headers, body, limit, state.body_timeout)
        .await
    {
        Ok(read) => read,
        Err(e) => {
            let mut refused = ApiError::new(e.status(), e.kind(), e.to_string());
            if e == BodyError::Busy {
                refused = refused.retry_after(1);
            }
            return Err(refused);
        }
    };
    let ctx = SealContext {
        round: round.spec.round,
        config_hash: round.hash,
        client,
        node: state.index,
    };
    let message = share_sealing::open(&state.keys.secret, &ctx, &sealed)
        .map_err(|e| ApiError::bad_request(format!("sealed share: {e}")))?;
    drop(sealed);
    let parsed = ShareMessage::get_decoded(&round.config, &message)
        .map_err(|e| ApiError::bad_request(format!("share message: {e}")))?;
    check_message(&parsed, &round, state.index, client)?;
    let digest: [u8; 32] = Sha256::digest(&message).into();
    let (tx, rx) = oneshot::channel();
    state.send(Command::Upload(Box::new(Upload {
        round_id: round.hash,
        client,
        digest,
        message,
        parsed,
        reply: tx,
    })))?;
    let status = rx
        .await
        .map_err(|_| ApiError::internal("store dropped the request"))??;
    Ok(status.into_response())
}

/// Everything about an upload that the path and headers decide: the round, the client, its
/// token, the media type, the deadline.
async fn check_upload(
    state: &AppState,
    id: &str,
    client: &str,
    headers: &HeaderMap,
) -> ApiResult<(Arc<Round>, u64)> {
    let round = state.round(id)?;
    let client: u64 = client
        .parse()
        .map_err(|_| ApiError::not_found("client id is not a number"))?;
    if client >= round.config.n_clients() as u64 {
        return Err(ApiError::not_found("unknown client"));
    }
    let token = bearer(headers)?;
    // The listed hash is read from the store (not kept in memory); compared in constant time.
    let token_hash_listed = state.token_hash(&round.hash, client)?;
    if !token_matches(token, &token_hash_listed) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "not this client's token",
        ));
    }
    content_type_is(headers, MEDIA_SEALED_SHARE)?;
    let deadline = round.spec.deadline_unix_ms;
    if deadline != 0 && state.clock.now_ms() > deadline {
        return Err(ApiError::conflict(
            "deadline-passed",
            "the round's deadline has passed",
        ));
    }
    Ok((round, client))
}

/// Milliseconds since the Unix epoch, by the system's clock.
pub fn now_ms() -> u64 {
    SystemClock.now_ms()
}

/// Opens the store (rebuilding every round's running sum), starts the store actor, and returns
/// the node's router.
pub fn router(options: &NodeOptions) -> Result<Router> {
    std::fs::create_dir_all(&options.data_dir)?;
    Spool::clean(&options.data_dir)?;
    let keys = load_or_create_key(&options.data_dir)?;
    let db = options.data_dir.join("node.sqlite");
    let store = NodeStore::open(&db)?;
    let (tx, rx) = mpsc::channel();
    let shared = Arc::new(RwLock::new(HashMap::new()));
    let metrics = Metrics::new();
    let mut actor = Actor {
        store,
        metrics: metrics.clone(),
        public_key: keys.public.clone(),
        db: db.clone(),
        data_dir: options.data_dir.clone(),
        index: options.index,
        rounds: HashMap::new(),
        shared: shared.clone(),
        tx: tx.clone(),
    };
    actor.load()?;
    std::thread::Builder::new()
        .name("dpdist-node-store".into())
        .spawn(move || actor.run(rx))?;
    let state = Arc::new(AppState {
        index: options.index,
        keys,
        admin_token_hash: token_hash(options.admin_token.expose()),
        rounds: shared,
        tx: std::sync::Mutex::new(tx),
        data_dir: options.data_dir.clone(),
        max_body: options.max_body,
        share_bytes: BodyBudget::new(options.max_inflight_body),
        body_timeout: options.body_timeout,
        clock: options.clock.clone(),
        metrics: metrics.clone(),
        lookups: (0..std::thread::available_parallelism().map_or(2, |n| n.get().min(4)))
            .map(|_| TokenLookup::open(&db).map(std::sync::Mutex::new))
            .collect::<Result<_>>()?,
        next_lookup: std::sync::atomic::AtomicUsize::new(0),
        db: db.clone(),
    });
    Ok(Router::new()
        .route("/healthz", get(healthz))
        .route("/key", get(public_key))
        .route("/rounds/{id}", put(create_round).get(round_status))
        .route("/rounds/{id}/received", get(received))
        .route("/rounds/{id}/close", post(close))
        .route("/rounds/{id}/abort", post(abort))
        .route("/rounds/{id}/sum", get(node_sum))
        .route("/rounds/{id}/shares/{client}", put(upload))
        .route("/metrics", get(node_metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::metrics::count_responses,
        ))
        .layer(DefaultBodyLimit::max(options.max_body))
        .with_state(state))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written before the token table and the shard column (token hashes in one blob
    /// of the round's row, shares without attempts) is moved over on start-up: every client's
    /// token hash is then found in the table, every share has its attempt, and it loads again.
    #[test]
    fn a_store_from_before_the_token_table_is_moved_over_on_load() {
        use fixedpoint_shares::{Client, Encode};
        let dir = crate::scratch_dir("node-migrate");
        let keys = [NodeKeyPair::generate(), load_or_create_key(&dir).unwrap()];
        let n = 21;
        let mut round = crate::spec::tests::spec(n, 2, &keys).validate().unwrap();
        round.drop_token_list();
        let db = dir.join("node.sqlite");
        let mut shards = Vec::new();
        {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute_batch(
                "CREATE TABLE rounds (id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE,
                     spec BLOB NOT NULL, agreed BLOB, sum BLOB, aborted TEXT, tokens BLOB);
                 CREATE TABLE shares (round_id BLOB NOT NULL, client INTEGER NOT NULL,
                     digest BLOB NOT NULL, message BLOB NOT NULL,
                     PRIMARY KEY (round_id, client)) WITHOUT ROWID;",
            )
            .unwrap();
            conn.execute(
                "INSERT INTO rounds (id, round, spec, tokens) VALUES (?1, 5, ?2, ?3)",
                rusqlite::params![
                    &round.hash[..],
                    round.spec.canonical_json(),
                    round.token_hashes.as_flattened()
                ],
            )
            .unwrap();
            for c in [0u64, 3, 20] {
                let msgs = Client::new(
                    &round.config,
                    ClientId(c),
                    dp_noise::rng::RngSource::InsecureFixedSeed(c),
                )
                .unwrap()
                .shard(&[0.5, -1.0, 2.0])
                .unwrap();
                let bytes = msgs[1].get_encoded().unwrap();
                let digest: [u8; 32] = Sha256::digest(&bytes).into();
                conn.execute(
                    "INSERT INTO shares VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![&round.hash[..], c as i64, &digest[..], bytes],
                )
                .unwrap();
                shards.push((c, msgs[1].shard.0));
            }
        }
        let options = NodeOptions {
            max_body: 1 << 20,
            ..NodeOptions::new(1, dir.clone(), SecretString::from("admin".to_string()))
        };
        for _start in 0..2 {
            drop(router(&options).unwrap());
            let lookup = TokenLookup::open(&db).unwrap();
            for (c, h) in round.token_hashes.iter().enumerate() {
                assert_eq!(lookup.token_hash(&round.hash, c as u64).unwrap(), Some(*h));
            }
            let store = NodeStore::open(&db).unwrap();
            let mut attempts = Vec::new();
            store
                .for_each_attempt(&round.hash, |c, s| {
                    attempts.push((c, s));
                    Ok(())
                })
                .unwrap();
            assert_eq!(attempts, shards);
            assert!(store.rounds().unwrap()[0].tokens.is_none());
        }
        // Another key in the key file: the node refuses to start rather than serve a key
        // the rounds it holds were not created with.
        let key_file = crate::node_key::key_path(&dir);
        std::fs::remove_file(&key_file).unwrap();
        load_or_create_key(&dir).unwrap();
        match router(&options) {
            Err(Error::Key(m)) => assert!(m.contains("another public key"), "{m}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
