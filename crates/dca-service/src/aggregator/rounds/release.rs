//! Closing a round (the agreed set decided, the budget checked and charged) and releasing it.

use dp_noise::accountant::RoundCost;
use fixedpoint_shares::{Encode, ShardSet, agree};

use crate::aggregator::store::RoundState;
use crate::aggregator::*;
use crate::protocol::spec::Round;
use crate::{Error, Result};

impl Aggregator {
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
            let _ = self.store.drop_release_lease(&id, &self.holder);
        }
        outcome
    }

    /// Decides the agreed set of a round that is still collecting, checks and charges the
    /// budget, and records both (created → closing); the close request's body.
    pub(in crate::aggregator) async fn begin_close(&self, round: &Round) -> Result<Vec<u8>> {
        let id = round.id();
        // The pairs every node holds: a client that sharded twice and whose nodes hold different
        // attempts is left out (it counts as missing), never summed.
        let sets = self.received_sets(round).await?;
        let agreed_pairs = if sets.is_empty() {
            ShardSet::empty(round.config.n_clients())
        } else {
            agree(&sets.iter().collect::<Vec<_>>())?
        };
        let max_dropped = round.config.max_dropped();
        let missing = agreed_pairs.clients().missing();
        if missing > max_dropped {
            self.abort(
                round,
                &format!("{missing} clients missing, more than T = {max_dropped}"),
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
        let body = agreed_pairs.get_encoded()?;
        // A job's round is paid from the job's reservation, charged when the job was created.
        // Either way the budget is checked against the charges as recorded, in the
        // transaction that records the close.
        let recorded = match (self.store.job_of_round(&id)?, cost) {
            (Some(job), cost) => {
                let rho = cost.map_or(0.0, |(_, rho)| rho);
                self.store.begin_close_job_round(&id, &body, &job, rho)?
            }
            (None, Some((cost, rho))) => {
                self.store
                    .begin_close(&id, &body, Some(rho), fits(self.budget, cost))?
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
}
