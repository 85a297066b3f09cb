//! The aggregator as the nodes' HTTP client: their keys, their statuses and received sets, and
//! the abort notice.

use fixedpoint_shares::{Decode, ShardSet};
use reqwest::StatusCode;

use crate::aggregator::*;
use crate::protocol::messages::{AbortRequest, RoundStatus};
use crate::protocol::spec::Round;
use crate::{Error, MEDIA_JSON, Result};

impl Aggregator {
    /// The public keys of the nodes, in order (`GET /key` of each).
    pub async fn node_keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        for (k, url) in self.nodes.iter().enumerate() {
            let v: serde_json::Value = self
                .http
                .get(format!("{url}/key"))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            if v["node"].as_u64() != Some(k as u64) {
                return Err(Error::Http(format!("{url} is not node {k}")));
            }
            keys.push(v["public_key"].as_str().unwrap_or_default().to_string());
        }
        Ok(keys)
    }

    /// Each node's status of the round.
    pub async fn statuses(&self, round: &Round) -> Result<Vec<RoundStatus>> {
        let mut out = Vec::new();
        for url in &self.nodes {
            out.push(
                self.http
                    .get(format!("{url}/rounds/{}", round.id()))
                    .bearer_auth(self.admin_token.expose())
                    .send()
                    .await?
                    .error_for_status()?
                    .json()
                    .await?,
            );
        }
        Ok(out)
    }

    /// Each node's received (client, shard attempt) pairs.
    pub async fn received_sets(&self, round: &Round) -> Result<Vec<ShardSet>> {
        let n = round.config.n_clients();
        let mut out = Vec::new();
        for url in &self.nodes {
            let bytes = self
                .http
                .get(format!("{url}/rounds/{}/received", round.id()))
                .bearer_auth(self.admin_token.expose())
                .send()
                .await?
                .error_for_status()?
                .bytes()
                .await?;
            out.push(
                ShardSet::get_decoded(&n, &bytes)
                    .map_err(|e| Error::Http(format!("{url}: received set: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Tells every node that the round is aborted (idempotent on the nodes), then records it
    /// as "aborted". A node that cannot be reached leaves the round "aborting";
    /// [`Aggregator::notify_pending_aborts`] tries again.
    pub(in crate::aggregator) async fn notify_abort(
        &self,
        round: &Round,
        reason: &str,
    ) -> Result<()> {
        let id = round.id();
        let body = serde_json::to_vec(&AbortRequest {
            reason: reason.to_string(),
        })
        .unwrap_or_default();
        for url in &self.nodes {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/abort"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(body.clone())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::ACCEPTED) {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused the abort: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
        }
        self.store.finish_abort(&id)
    }
}
