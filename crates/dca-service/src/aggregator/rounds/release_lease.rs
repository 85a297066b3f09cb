//! Driving a closing round's release under its lease: only the holder of a round's release
//! lease sends the recorded close to the nodes, fetches their sums and records the release,
//! renewing the lease while it works ([`Aggregator::release`] takes it first).

use crate::aggregator::*;

impl Aggregator {
    /// Takes round `id`'s release lease for this aggregator, or says why not: another
    /// aggregator holds it ([`Error::ReleaseInProgress`]), or the round left "closing".
    pub(in crate::aggregator) fn take_release_lease(&self, id: &str) -> Result<()> {
        let now = self.clock.now_ms();
        let until = now.saturating_add(self.release_lease.as_millis() as u64);
        match self
            .store
            .take_release_lease(id, &self.holder, now, until)?
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
        let drive = self.drive_release(round, close_body);
        tokio::pin!(drive);
        let every = self.release_lease / 3;
        loop {
            tokio::select! {
                outcome = &mut drive => return outcome,
                () = tokio::time::sleep(every) => {
                    let until = self
                        .clock
                        .now_ms()
                        .saturating_add(self.release_lease.as_millis() as u64);
                    if !self.store.renew_release_lease(&id, &self.holder, until)? {
                        return Err(Error::ReleaseInProgress(format!(
                            "another aggregator took the release lease of round {id} over"
                        )));
                    }
                }
            }
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
        let (agreed, close_body) = if close_body.first() == Some(&b'{') {
            let agreed = legacy_close_json(&close_body, n).map_err(|e| recorded(&e))?;
            let body = agreed.get_encoded().map_err(|e| recorded(&e))?;
            (agreed, body)
        } else {
            (
                ShardSet::get_decoded(&n, &close_body).map_err(|e| recorded(&e))?,
                close_body,
            )
        };
        for url in &self.nodes {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/close"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_PAIR_SET)
                .body(close_body.clone())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::ACCEPTED) {
                let s = r.status();
                let body = r.text().await.unwrap_or_default();
                if let Some(cause) = release_impossible(&body) {
                    return Err(self.fail(&id, &format!("{url} refused to close: {cause}"))?);
                }
                return Err(Error::Http(format!("{url} refused to close: {s}: {body}")));
            }
        }
        let mut sums = SumAggregator::new(&round.config)?;
        for url in &self.nodes {
            let sum = match self.fetch_sum(url, &id).await? {
                NodeSumPoll::Ready(sum) => sum,
                NodeSumPoll::ReleasedMeanwhile(recorded) => return Ok(recorded),
            };
            sums.add(&sum_codec::decode(&sum, &round.config)?)?;
        }
        let release: Release = sums.release()?;
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
        };
        let json =
            serde_json::to_string(&published).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        if !self
            .store
            .mark_released(&id, &self.holder, self.clock.now_ms(), &json)?
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
            let r = self
                .http
                .get(format!("{url}/rounds/{id}/sum"))
                .bearer_auth(self.admin_token.expose())
                .send()
                .await?;
            match r.status() {
                StatusCode::OK => return Ok(NodeSumPoll::Ready(r.bytes().await?.to_vec())),
                StatusCode::ACCEPTED => {
                    let wait = r
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(1)
                        .min(5);
                    // Retry-After is in seconds; poll faster than that but never spin.
                    tokio::time::sleep(Duration::from_millis(100 * wait)).await;
                }
                s => {
                    let body = r.text().await.unwrap_or_default();
                    if let Some(cause) = release_impossible(&body) {
                        return Err(self.fail(id, &format!("{url} node sum: {cause}"))?);
                    }
                    return Err(Error::Http(format!("{url} node sum: {s}: {body}")));
                }
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
            .mark_failed(id, &self.holder, self.clock.now_ms(), cause)?
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

/// The cause, if a node's error answer `body` says that the round can never be released: a
/// problem document of type `stored-state-damaged` (a stored share or node sum of the round
/// failed its integrity check on that node, which therefore never finalizes it). Every other
/// refusal (a node down, busy, or not ready) may pass and is retried.
fn release_impossible(body: &str) -> Option<String> {
    let problem: crate::http::problem::ProblemDocument = serde_json::from_str(body).ok()?;
    let damaged = format!("{}stored-state-damaged", crate::http::problem::TYPE_PREFIX);
    (problem.type_uri == damaged).then(|| format!("{} ({})", problem.detail, problem.type_uri))
}

/// What polling a node for its sum came to.
enum NodeSumPoll {
    /// The node's sum (`application/dpdist-node-sum`).
    Ready(Vec<u8>),
    /// The round's release, recorded by another drive while this one polled.
    ReleasedMeanwhile(PublishedRelease),
}

#[cfg(test)]
#[path = "release_lease_tests.rs"]
mod tests;
