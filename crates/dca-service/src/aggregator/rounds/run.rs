//! A round driven from creation to release: created on every node, closed when due (the agreed
//! set decided, the budget checked and charged) or aborted, and released under its lease — only
//! the holder of a round's release lease sends the recorded close to the nodes, fetches their
//! sums and records the release, renewing the lease while it works.

use std::time::Duration;

use dp_noise::accountant::RoundCost;
use fixedpoint_shares::{Encode, ShardSet, agree};

use crate::aggregator::nodes::{CloseSent, SumPoll};
use crate::aggregator::rounds::verified::VerifiedSum;
use crate::aggregator::store::{RoundPhase, RoundState};
use crate::aggregator::*;
use crate::lease::{self, Held};
use crate::protocol::spec::{Round, RoundSpec};
use crate::protocol::verified_close::{MEDIA_VERIFIED_CLOSE, VerifiedClose};
use crate::{Error, Result};

impl Aggregator {
    /// Creates the round on every node (idempotent: creating it again changes nothing).
    pub async fn create_round(&self, spec: RoundSpec) -> Result<Round> {
        let round = spec.validate()?;
        if round.node_keys.len() != self.nodes.len() {
            return Err(Error::InvalidSpec(format!(
                "{} nodes configured, round has {}",
                self.nodes.len(),
                round.node_keys.len()
            )));
        }
        let id = round.id();
        self.refuse_reused_round_number(&round)?;
        let config = round.config_bytes()?;
        self.store.insert_round(&id, &config)?;
        self.nodes.create_round(&id, &config).await?;
        Ok(round)
    }

    /// Waits (polling every `poll`) until every node holds all N clients or the round's
    /// deadline has passed.
    pub async fn wait_for_uploads(&self, round: &Round, poll: Duration) -> Result<()> {
        while !self.due(round).await? {
            tokio::time::sleep(poll).await;
        }
        Ok(())
    }

    /// True when every node holds all N clients or the round's deadline has passed: the moment
    /// to close it.
    pub async fn due(&self, round: &Round) -> Result<bool> {
        if self.clock.now_ms() >= round.spec.deadline_unix_ms
            || matches!(self.state(&round.id())?, Some(RoundState::Closing))
        {
            return Ok(true);
        }
        // The nodes' counts (their status), not their received sets: O(1) per node per poll.
        Ok(self
            .nodes
            .statuses(round)
            .await?
            .iter()
            .all(|s| s.received == round.config.n_clients()))
    }

    /// Aborts an open round: recorded first (whatever happens to the notices, it is never
    /// released), then every node is told; a node that misses the notice is told again by
    /// [`Aggregator::notify_pending_aborts`]. A released round is not aborted.
    pub async fn abort(&self, round: &Round, reason: &str) -> Result<()> {
        if !self.store.begin_abort(&round.id(), reason)? {
            return match self.state(&round.id())? {
                Some(RoundState::Released(_)) => Err(Error::AlreadyReleased),
                Some(RoundState::Closing) => Err(Error::InvalidSpec(
                    "the round is closing with a recorded agreed set; it cannot be aborted".into(),
                )),
                Some(RoundState::Failed(cause)) => Err(Error::RoundFailed(cause)),
                Some(_) => Ok(()),
                None => Err(Error::InvalidSpec(
                    "round not created by this aggregator".into(),
                )),
            };
        }
        // The abort stands even if a notice fails; it is retried later.
        let _ = self.notify_abort(round, reason).await;
        Ok(())
    }

    /// Re-sends the abort of every round recorded as aborted whose nodes were not all told.
    pub async fn notify_pending_aborts(&self) -> Result<()> {
        for round in self.live_rounds_in(&[RoundPhase::Aborting])? {
            let reason = match self.state(&round.id())? {
                Some(RoundState::Aborting(reason)) => reason,
                _ => String::new(),
            };
            self.notify_abort(&round, &reason).await?;
        }
        Ok(())
    }

    /// Tells every node that the round is aborted (idempotent on the nodes), then records it
    /// as "aborted". A node that cannot be reached leaves the round "aborting";
    /// [`Aggregator::notify_pending_aborts`] tries again.
    async fn notify_abort(&self, round: &Round, reason: &str) -> Result<()> {
        let id = round.id();
        self.nodes.abort(&id, reason).await?;
        self.store.finish_abort(&id)
    }

    /// Closes the round and releases its sum. The first call decides the agreed set — the
    /// intersection of the nodes' received sets; more than T missing → the abort is recorded
    /// and nothing is released — checks the budget, and records the set and the charge in one
    /// transaction before any node is told. Every node is then sent that same recorded set,
    /// on this call and on every retry after a failure, so a client that reaches more nodes
    /// later cannot make the nodes disagree. Then the M node sums are added and the release is
    /// recorded. A second call after the release → [`Error::AlreadyReleased`].
    ///
    /// From the recorded close on, the round is driven by the holder of its release lease
    /// only: a call that finds another aggregator's lease live returns
    /// [`Error::ReleaseInProgress`] without contacting any node, and an aggregator that dies
    /// holding it is taken over once the lease expires. Calls of one aggregator share its
    /// lease (its own pass and an analyst's request may both drive a round; one records it,
    /// and the other, if still polling the node sums, stops and returns that release).
    pub async fn release(&self, round: &Round) -> Result<PublishedRelease> {
        let id = round.id();
        let state = match self.state(&id)? {
            Some(RoundState::Released(_)) => return Err(Error::AlreadyReleased),
            Some(RoundState::Aborted(reason) | RoundState::Aborting(reason)) => {
                return Err(Error::RoundAborted(reason));
            }
            Some(RoundState::Failed(cause)) => return Err(Error::RoundFailed(cause)),
            Some(state) => state,
            None => {
                return Err(Error::InvalidSpec(
                    "round not created by this aggregator".into(),
                ));
            }
        };
        // A closing round's lease first: a process refused it (every pass of every process but
        // the holder's) does not read the recorded close, 8 bytes per client.
        let recorded = if state == RoundState::Closing {
            self.take_release_lease(&id)?;
            self.store.close_body(&id)?
        } else {
            None
        };
        let close_body = match recorded {
            Some(body) => body,
            None => {
                let body = self.begin_close(round).await?;
                self.take_release_lease(&id)?;
                body
            }
        };
        let outcome = self.drive_under_lease(round, close_body).await;
        if outcome.is_err() {
            // Another process may take the round over at once instead of after the lease.
            let _ = self.store.drop_release_lease(&id, &self.leases.holder);
        }
        outcome
    }

    /// Decides the agreed set of a round that is still collecting, checks and charges the
    /// budget, and records both (created → closing); the close request's body.
    pub(in crate::aggregator) async fn begin_close(&self, round: &Round) -> Result<Vec<u8>> {
        let id = round.id();
        // The pairs every node holds: a client that sharded twice and whose nodes hold different
        // attempts is left out (it counts as missing), never summed.
        let sets = self.nodes.received_sets(round).await?;
        let agreed_pairs = if sets.is_empty() {
            ShardSet::empty(round.config.n_clients())
        } else {
            agree(&sets.iter().collect::<Vec<_>>())?
        };
        let (agreed_pairs, verified) = match round.validity {
            None => (agreed_pairs, None),
            Some(_) => {
                let (pairs, close) = self.check_validity(round, agreed_pairs).await?;
                (pairs, Some(close))
            }
        };
        let max_dropped = round.config.max_dropped();
        let missing = agreed_pairs.clients().missing();
        if missing > max_dropped {
            let invalid = verified
                .as_ref()
                .map(|close| {
                    format!(
                        " ({} of them invalid: {:?})",
                        close.invalid.len(),
                        close.invalid
                    )
                })
                .unwrap_or_default();
            self.abort(
                round,
                &format!("{missing} clients missing{invalid}, more than T = {max_dropped}"),
            )
            .await?;
            return Err(Error::Aborted {
                missing,
                max_dropped,
            });
        }
        let cost = round_rho(round)?
            .map(|rho| RoundCost::zcdp(rho).map(|cost| (cost, rho)))
            .transpose()
            .map_err(Error::Budget)?;
        let body = match verified {
            Some(close) => close.encode(),
            None => agreed_pairs.get_encoded()?,
        };
        // A job's round is paid from the job's reservation, charged when the job was created.
        // Either way the budget is checked against the charges as recorded, in the
        // transaction that records the close.
        let recorded = match (self.store.job_of_round(&id)?, cost) {
            (Some(job), cost) => {
                let rho = cost.map_or(0.0, |(_, rho)| rho);
                self.store.begin_close_job_round(&id, &body, &job, rho)?
            }
            (None, Some((_, rho))) => {
                // A verified round's truncated noise adds to δ (0 without noise).
                let truncation_delta = round
                    .validity
                    .as_ref()
                    .map_or(0.0, |v| v.bound.truncation_delta());
                self.store.begin_close_truncated(
                    &id,
                    &body,
                    Some(rho),
                    truncation_delta,
                    self.budget.fits(rho, truncation_delta),
                )?
            }
            (None, None) => self.store.begin_close(&id, &body, None, |_| Ok(()))?,
        };
        if !recorded {
            // Another caller recorded a close (or an abort) first: use what it recorded.
            return match self.store.close_body(&id)? {
                Some(body) => Ok(body),
                None => Err(Error::RoundAborted(
                    self.state(&id)?
                        .as_ref()
                        .and_then(RoundState::ended_unreleased)
                        .unwrap_or_default()
                        .to_string(),
                )),
            };
        }
        Ok(body)
    }

    /// Takes round `id`'s release lease for this aggregator, or says why not: another
    /// aggregator holds it ([`Error::ReleaseInProgress`]), or the round left "closing".
    pub(in crate::aggregator) fn take_release_lease(&self, id: &str) -> Result<()> {
        let now = self.clock.now_ms();
        let until = now.saturating_add(self.leases.release.as_millis() as u64);
        match self
            .store
            .take_release_lease(id, &self.leases.holder, now, until)?
        {
            LeaseTaken::Taken => Ok(()),
            LeaseTaken::HeldBy(holder, until) => Err(Error::ReleaseInProgress(format!(
                "aggregator {holder} holds the release lease of round {id} until {until} ms \
                 since the Unix epoch (renewed while it works)"
            ))),
            LeaseTaken::NotClosing => Err(self.not_released(id)?),
        }
    }

    /// Why a round this aggregator was about to release is not released by it: released
    /// already, aborted, or being released by another aggregator.
    fn not_released(&self, id: &str) -> Result<Error> {
        Ok(match self.state(id)? {
            Some(RoundState::Released(_)) => Error::AlreadyReleased,
            Some(RoundState::Aborted(reason) | RoundState::Aborting(reason)) => {
                Error::RoundAborted(reason)
            }
            Some(RoundState::Failed(cause)) => Error::RoundFailed(cause),
            Some(RoundState::Closing) => Error::ReleaseInProgress(format!(
                "another aggregator took the release lease of round {id} over"
            )),
            state => Error::Integrity(format!(
                "round {id} is recorded as {state:?} while it was being released"
            )),
        })
    }

    /// Sends the recorded close to every node, fetches and adds the node sums and records the
    /// release, renewing the round's release lease every third of its length meanwhile; stops
    /// with [`Error::ReleaseInProgress`] (contacting no node again) if the lease was taken over.
    pub(in crate::aggregator) async fn drive_under_lease(
        &self,
        round: &Round,
        close_body: Vec<u8>,
    ) -> Result<PublishedRelease> {
        let id = round.id();
        let renew = || {
            let until = lease::lease_until(&*self.clock, self.leases.release);
            self.store
                .renew_release_lease(&id, &self.leases.holder, until)
        };
        let drive = self.drive_release(round, close_body);
        match lease::hold(self.leases.release, drive, renew).await {
            Held::Done(outcome) => outcome,
            Held::Lost(Some(e)) => Err(e),
            Held::Lost(None) => Err(Error::ReleaseInProgress(format!(
                "another aggregator took the release lease of round {id} over"
            ))),
        }
    }

    /// The release of a closing round under this aggregator's lease (see
    /// [`Aggregator::release`]).
    async fn drive_release(&self, round: &Round, close_body: Vec<u8>) -> Result<PublishedRelease> {
        let id = round.id();
        let n = round.config.n_clients();
        let recorded = |e: &dyn std::fmt::Display| {
            Error::Integrity(format!("the recorded agreed set of round {id}: {e}"))
        };
        // Aggregators before the pair set recorded JSON: read it and send the pair set.
        let (agreed, close_body, invalid) = if close_body.first() == Some(&b'{') {
            let agreed = legacy_close_json(&close_body, n).map_err(|e| recorded(&e))?;
            let body = agreed.get_encoded().map_err(|e| recorded(&e))?;
            (agreed, body, None)
        } else if VerifiedClose::is_encoded(&close_body) {
            let close = VerifiedClose::decode(&close_body).map_err(|e| recorded(&e))?;
            let agreed = ShardSet::get_decoded(&n, &close.pairs).map_err(|e| recorded(&e))?;
            (agreed, close_body, Some(close.invalid))
        } else {
            (
                ShardSet::get_decoded(&n, &close_body).map_err(|e| recorded(&e))?,
                close_body,
                None,
            )
        };
        let close_media = if invalid.is_some() {
            MEDIA_VERIFIED_CLOSE
        } else {
            MEDIA_PAIR_SET
        };
        if let CloseSent::Impossible(cause) =
            self.nodes.close(&id, close_media, &close_body).await?
        {
            return Err(self.fail(&id, &cause)?);
        }
        let mut node_sums = Vec::with_capacity(self.nodes.len());
        for url in self.nodes.urls() {
            match self.fetch_sum(url, &id).await? {
                NodeSumPoll::Ready(sum) => node_sums.push(sum),
                NodeSumPoll::ReleasedMeanwhile(recorded) => return Ok(recorded),
            }
        }
        let release = if invalid.is_some() {
            self.verified_sum(round, &node_sums, agreed.clients().len())?
        } else {
            let mut sums = SumAggregator::new(&round.config)?;
            for sum in &node_sums {
                sums.add(&sum_codec::decode(sum, &round.config)?)?;
            }
            let release: Release = sums.release()?;
            VerifiedSum {
                sum: release.sum,
                sum_units: release.sum_units,
                frac_bits: release.frac_bits,
                noise_sigma_released: release.noise_sigma_released,
            }
        };
        let spent = self.spent();
        let clients: Vec<u64> = agreed.clients().iter().map(|c| c.0).collect();
        let published = PublishedRelease {
            id: id.clone(),
            round: round.spec.round,
            sum: release.sum,
            sum_units: release.sum_units,
            frac_bits: release.frac_bits,
            clients,
            noise_sigma_released: release.noise_sigma_released,
            spent_epsilon: spent.epsilon,
            spent_delta: spent.delta,
            privacy: (round.config.noise().is_none())
                .then(|| crate::protocol::spec::NON_PRIVATE_MARK.to_string()),
            truncation_delta: invalid
                .is_some()
                .then(|| round.validity.as_ref().map(|v| v.bound.truncation_delta()))
                .flatten(),
            invalid,
        };
        let json =
            serde_json::to_string(&published).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        if !self
            .store
            .mark_released(&id, &self.leases.holder, self.clock.now_ms(), &json)?
        {
            return Err(self.not_released(&id)?);
        }
        Ok(published)
    }

    /// Node `url`'s sum of round `id`, polled while the node answers 202; or the round's
    /// release, if another drive recorded it meanwhile (this aggregator's calls share the
    /// lease, so its background pass and an analyst's request may both drive one round): the
    /// nodes are not asked again for a sum nobody will use.
    async fn fetch_sum(&self, url: &str, id: &str) -> Result<NodeSumPoll> {
        for _ in 0..SUM_POLLS {
            if let Some(recorded) = self.recorded_release(id)? {
                return Ok(NodeSumPoll::ReleasedMeanwhile(recorded));
            }
            match self.nodes.poll_sum(url, id).await? {
                SumPoll::Ready(sum) => return Ok(NodeSumPoll::Ready(sum)),
                SumPoll::NotYet(wait) => tokio::time::sleep(wait).await,
                SumPoll::Impossible(cause) => return Err(self.fail(id, &cause)?),
            }
        }
        Err(Error::Timeout(format!(
            "{url} node sum not ready after {SUM_POLLS} polls"
        )))
    }

    /// Records closing round `id` as failed with `cause` (the release has become impossible)
    /// and returns the error that says so; if this aggregator no longer holds the round's
    /// release lease, or the round left "closing" meanwhile, why it is not failed by it.
    fn fail(&self, id: &str, cause: &str) -> Result<Error> {
        if self
            .store
            .mark_failed(id, &self.leases.holder, self.clock.now_ms(), cause)?
        {
            tracing::error!(
                round_id = %id,
                "round failed: its release has become impossible: {cause}"
            );
            return Ok(Error::RoundFailed(cause.to_string()));
        }
        self.not_released(id)
    }
}

/// What polling a node for its sum came to.
enum NodeSumPoll {
    /// The node's sum (`application/dpdist-node-sum`).
    Ready(Vec<u8>),
    /// The round's release, recorded by another drive while this one polled.
    ReleasedMeanwhile(PublishedRelease),
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
