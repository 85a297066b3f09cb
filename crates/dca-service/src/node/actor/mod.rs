//! The store actor: one thread that owns the node's SQLite connection and the running sums.
//! Handlers send it commands; it commits all uploads waiting at that moment in one transaction
//! (group commit), answers them, and only then adds them to the running sums.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, mpsc};

use axum::http::StatusCode;
use fixedpoint_shares::{ClientSet, RunningSum, ShareMessage};
use tokio::sync::oneshot;

use super::store::NodeStore;
use crate::http::metrics::Metrics;
use crate::http::problem::{ApiError, ApiResult};
use crate::protocol::spec::Round;
use crate::{Error, hex};

use super::*;

mod lifecycle;
mod load;
mod uploads;

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
    /// A verified round's verify states from this node's last `/verify`, by client, kept for
    /// its close (which would otherwise run each client's check again): a helper's state is two
    /// seeds, node 0's its output share (16·d bytes), so node 0 keeps them within
    /// [`PENDING_CHECKS_BYTES`] and checks again past it.
    pub(super) pending_checks: HashMap<u64, verified_shares::verify::Pending>,
}

/// Memory a node spends on one round's kept verify states at most.
pub(super) const PENDING_CHECKS_BYTES: usize = 256 << 20;

pub(super) struct Upload {
    pub(super) round_id: [u8; 32],
    pub(super) client: u64,
    pub(super) digest: [u8; 32],
    pub(super) message: Vec<u8>,
    /// The share as the running sum takes it; `None` in a verified round (no running sum).
    pub(super) parsed: Option<ShareMessage>,
    /// The shard attempt (a verified share's nonce names it).
    pub(super) attempt: u64,
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
    /// With the relay's verdicts in a verified round.
    Close(
        [u8; 32],
        Spool,
        (usize, usize),
        Option<Vec<Vec<u8>>>,
        oneshot::Sender<ApiResult<StatusCode>>,
    ),
    /// This node's verifier shares of the listed clients of a verified round.
    Verify([u8; 32], Vec<u64>, oneshot::Sender<ApiResult<Vec<u8>>>),
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
    pub(super) verify_secret: Option<super::verified::VerifySecret>,
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
            Command::Close(id, spool, counts, verdicts, reply) => {
                let _ = reply.send(self.close(id, &spool, counts, verdicts.as_deref()));
            }
            Command::Verify(id, clients, reply) => {
                let _ = reply.send(self.verifier_shares(&id, &clients));
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
}
