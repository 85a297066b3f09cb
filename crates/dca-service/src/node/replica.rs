//! A node whose store other processes share (replicas of one node index on one PostgreSQL
//! database, behind a load balancer). Another replica may create, close or abort a round, or
//! store its node sum, at any moment, so this process's memory of a round is only a hint:
//! every answer that depends on the round's state reads it back from the store first
//! ([`Actor::refresh`]), no running sum is kept (shares may reach any replica), and the node sum
//! is computed from the stored shares by whichever replica takes the round's lease, then stored
//! in a transaction that checks the lease is still its own.

use std::sync::Arc;
use std::time::Duration;

use fixedpoint_shares::{ClientId, ClientSet, NodeIndex, RunningSum, ShardId};

use super::store::{self, HashingWriter, PgReader, RoundState, StoreLocation};
use crate::Result;
use crate::http::problem::{ApiError, ApiResult};
use crate::lease;
use crate::protocol::spec::Round;

use super::*;

/// Who holds a lease: this node (router) in this process, told apart from the other replicas
/// and from an earlier run by its process id, its start time and a count of nodes started in
/// this process.
pub(super) fn lease_holder() -> String {
    static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "pid {} started {} node {k}",
        std::process::id(),
        crate::clock::now_ms()
    )
}

fn internal(e: crate::Error) -> ApiError {
    ApiError::internal(e.to_string())
}

impl Actor {
    /// Brings this replica's memory of round `id` up to what the shared store holds: aborted,
    /// closed with its agreed set, node sum stored. A no-op for a store only this process
    /// writes.
    pub(super) fn refresh(&mut self, id: &[u8; 32]) -> ApiResult<()> {
        let Some(store) = self.store.shared() else {
            return Ok(());
        };
        let stored = store.round_state(id).map_err(internal)?;
        let Some(rt) = self.rounds.get_mut(id) else {
            return Err(ApiError::not_found("unknown round"));
        };
        match stored.state {
            RoundState::Aborted if rt.aborted.is_none() => {
                rt.aborted = Some(stored.aborted.unwrap_or_default());
            }
            RoundState::Closed if rt.agreed.is_none() => {
                let n = rt.round.config.n_clients();
                let agreed = store.agreed_set(id, n).map_err(internal)?.ok_or_else(|| {
                    ApiError::internal("the store holds the round closed without its agreed set")
                })?;
                rt.agreed = Some(agreed);
            }
            _ => {}
        }
        if stored.sum_stored && rt.damaged.is_none() {
            rt.sum = SumState::Ready;
        }
        Ok(())
    }

    /// The number of clients whose shares the shared store holds for the round.
    pub(super) fn stored_count(&mut self, id: &[u8; 32]) -> ApiResult<Option<usize>> {
        match self.store.shared() {
            None => Ok(None),
            Some(store) => store.count_shares(id).map(Some).map_err(internal),
        }
    }

    /// The clients whose shares the shared store holds for the round.
    pub(super) fn stored_clients(&mut self, id: &[u8; 32], n: usize) -> ApiResult<ClientSet> {
        let mut clients = ClientSet::try_empty(n).map_err(|e| internal(e.into()))?;
        self.store
            .for_each_attempt(id, |client, _| {
                clients.insert(ClientId(client))?;
                Ok(())
            })
            .map_err(internal)?;
        Ok(clients)
    }

    /// Whether round `id`'s node sum is stored (`Ok(true)`), or is being computed by this or
    /// another replica (`Ok(false)`): if no replica holds a live lease on it, this one takes
    /// the lease and starts computing it.
    pub(super) fn shared_sum(&mut self, id: [u8; 32]) -> ApiResult<bool> {
        self.refresh(&id)?;
        let (now, until) = {
            let now = self.clock.now_ms();
            (now, now.saturating_add(self.sum_lease.as_millis() as u64))
        };
        let holder = self.holder.clone();
        let Some(rt) = self.rounds.get_mut(&id) else {
            return Err(ApiError::not_found("unknown round"));
        };
        if let Some(reason) = &rt.aborted {
            return Err(ApiError::conflict(
                "round-aborted",
                format!("round was aborted: {reason}"),
            ));
        }
        if let Some(why) = &rt.damaged {
            return Err(ApiError::damaged(format!(
                "this node refuses to finalize the round: {}",
                crate::Error::Integrity(why.clone())
            )));
        }
        let Some(agreed) = rt.agreed.clone() else {
            return Err(ApiError::conflict("round-open", "round not closed"));
        };
        match &rt.sum {
            SumState::Ready => return Ok(true),
            SumState::Computing => return Ok(false),
            // Its lease was given up: another replica may compute it; this one says why not.
            SumState::Failed(e) => return Err(ApiError::internal(format!("node sum failed: {e}"))),
            SumState::Open => {}
        }
        let round = rt.round.clone();
        if round.validity.is_some() {
            // Its sum is computed by the close that brings the relay's verdicts, which the
            // aggregator sends again until a node stores the sum.
            return Ok(false);
        }
        let spool = Spool::new(&self.data_dir)
            .map_err(|e| ApiError::internal(format!("node sum spool: {e}")))?;
        if !self
            .store
            .take_sum_lease(&id, &holder, now, until)
            .map_err(internal)?
        {
            return Ok(false);
        }
        if let Some(rt) = self.rounds.get_mut(&id) {
            rt.sum = SumState::Computing;
        }
        let job = LeasedSum {
            db: self.db.clone(),
            metrics: self.metrics.clone(),
            round,
            index: self.index,
            agreed,
            holder,
            lease: self.sum_lease,
            clock: self.clock.clone(),
            spool,
        };
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let result = job.run().map_err(|e| match e {
                crate::Error::Integrity(why) => SumFailure::Damaged(why),
                e => SumFailure::Other(e.to_string()),
            });
            let _ = tx.send(Command::SumStored(id, result));
        });
        Ok(false)
    }

    /// What became of a node sum computed under this replica's lease.
    pub(super) fn sum_stored(
        &mut self,
        id: [u8; 32],
        result: std::result::Result<bool, SumFailure>,
    ) {
        let Some(rt) = self.rounds.get_mut(&id) else {
            return;
        };
        rt.sum = match result {
            Ok(true) => {
                self.metrics.round_event("summed");
                SumState::Ready
            }
            // The lease expired and another replica took it over: it stores the sum.
            Ok(false) => {
                tracing::warn!(round = rt.round.spec.round, id = %rt.round.id(),
                    "node sum: the lease was lost before the sum was stored");
                SumState::Open
            }
            Err(SumFailure::Other(e)) => {
                self.metrics.round_event("sum_failed");
                tracing::error!(round = rt.round.spec.round, id = %rt.round.id(), "node sum: {e}");
                SumState::Failed(e)
            }
            // A stored share failed its check: the round is never finalized or served here.
            Err(SumFailure::Damaged(why)) => {
                self.metrics.round_event("damaged");
                tracing::error!(round = rt.round.spec.round, id = %rt.round.id(), "{why}");
                rt.damaged = Some(why.clone());
                SumState::Failed(why)
            }
        };
    }
}

/// Why a node sum computed under a lease was not stored.
pub(super) enum SumFailure {
    /// A stored share failed its SHA-256 check.
    Damaged(String),
    Other(String),
}

/// A node sum computed from the shared store by the holder of the round's lease.
struct LeasedSum {
    db: StoreLocation,
    metrics: Arc<crate::http::metrics::Metrics>,
    round: Arc<Round>,
    index: u16,
    agreed: ClientSet,
    holder: String,
    lease: Duration,
    clock: Arc<dyn crate::clock::Clock>,
    spool: Spool,
}

impl LeasedSum {
    /// Renews the lease while the sum is computed, computes it from the stored shares of the
    /// agreed clients and their stored attempts, and stores it if the lease is still this
    /// replica's (`Ok(false)` if not). On an error the lease is given up for another replica.
    fn run(self) -> Result<bool> {
        let StoreLocation::Postgres(pg) = &self.db else {
            return Err(crate::Error::InvalidSpec("not a shared store".into()));
        };
        let id = self.round.hash;
        let renew = {
            let (pg, holder, length, clock) = (
                pg.clone(),
                self.holder.clone(),
                self.lease,
                self.clock.clone(),
            );
            // Its own connection: the summing one is busy streaming the shares.
            let mut reader = None;
            move || {
                if reader.is_none() {
                    reader = PgReader::open(&pg).ok();
                }
                // Without a connection no renewal can succeed: the lease is left to lapse.
                match reader.as_mut() {
                    Some(r) => r.renew_sum_lease(&id, &holder, lease::lease_until(&*clock, length)),
                    None => Ok(false),
                }
            }
        };
        let mut reader = PgReader::open(pg)?;
        let outcome = lease::hold_blocking(
            self.lease,
            || self.compute_and_store(&mut reader),
            renew,
            "node sum",
        );
        if outcome.is_err() {
            let _ = reader.drop_sum_lease(&id, &self.holder);
        }
        outcome
    }

    fn compute_and_store(&self, reader: &mut PgReader) -> Result<bool> {
        let (id, config) = (self.round.hash, &self.round.config);
        let mut node = RunningSum::new(config, NodeIndex(self.index))?;
        reader.for_each_share(&id, |client, message| {
            if self.agreed.contains(ClientId(client)) {
                node.absorb_bytes(message)?;
            }
            Ok(())
        })?;
        // Spooled to a file of this replica: the node sum of node 0 is 8d bytes plus the set.
        let mut out = HashingWriter::new(std::io::BufWriter::new(std::fs::File::create(
            &self.spool.sum,
        )?));
        reader.with_attempts(&id, |pairs| {
            let agreed_pairs = pairs
                .filter(|&(c, _)| self.agreed.contains(ClientId(c)))
                .map(|(c, s)| (ClientId(c), ShardId(s)));
            node.write_sum(&self.agreed, agreed_pairs, &mut out)
        })??;
        let (file, sha256) = out.finish();
        file.into_inner()
            .map_err(|e| crate::Error::Io(e.into_error()))?
            .sync_all()?;
        let sum = std::fs::read(&self.spool.sum)?;
        store::store_sum_under_lease(reader, &self.metrics, &id, &self.holder, &sum, &sha256)
    }
}
