//! The aggregator's HTTP client to the compute nodes: every request it sends them, and what
//! their answers mean. What the aggregator then records is decided by the aggregator, not here.

use std::time::Duration;

use fixedpoint_shares::{Decode, ShardSet};
use reqwest::StatusCode;

use crate::protocol::messages::{AbortRequest, RoundStatus};
use crate::protocol::spec::Round;
use crate::protocol::verified_close::{
    MEDIA_CLIENT_LIST, decode_verifier_shares, encode_client_list,
};
use crate::secret::SecretString;
use crate::{Error, MEDIA_JSON, MEDIA_ROUND_CONFIG, Result};

/// The deployment's compute nodes, in node order, as the aggregator calls them.
pub(in crate::aggregator) struct Nodes {
    http: reqwest::Client,
    urls: Vec<String>,
    /// The nodes' admin token: every request but `GET /key` carries it.
    admin_token: SecretString,
}

/// What the nodes answered a round's close.
pub(in crate::aggregator) enum CloseSent {
    /// Every node took it.
    ToEveryNode,
    /// A node says the round can never be released: which node, and why.
    Impossible(String),
}

/// What a node answered a poll of its sum.
pub(in crate::aggregator) enum SumPoll {
    /// The node's sum (`application/dpdist-node-sum`).
    Ready(Vec<u8>),
    /// Not summed yet: ask again after this long.
    NotYet(Duration),
    /// The node says the round can never be released: which node, and why.
    Impossible(String),
}

impl Nodes {
    pub(in crate::aggregator) fn new(
        http: reqwest::Client,
        urls: Vec<String>,
        admin_token: SecretString,
    ) -> Self {
        Nodes {
            http,
            urls,
            admin_token,
        }
    }

    /// The node base URLs, in node order.
    pub(in crate::aggregator) fn urls(&self) -> &[String] {
        &self.urls
    }

    /// M.
    pub(in crate::aggregator) fn len(&self) -> usize {
        self.urls.len()
    }

    /// The public keys of the nodes, in order (`GET /key` of each).
    pub(in crate::aggregator) async fn keys(&self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        for (k, url) in self.urls.iter().enumerate() {
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
    pub(in crate::aggregator) async fn statuses(&self, round: &Round) -> Result<Vec<RoundStatus>> {
        let mut out = Vec::new();
        for url in &self.urls {
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
    pub(in crate::aggregator) async fn received_sets(
        &self,
        round: &Round,
    ) -> Result<Vec<ShardSet>> {
        let n = round.config.n_clients();
        let mut out = Vec::new();
        for url in &self.urls {
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

    /// Creates round `id` with its config bytes `config` on every node (idempotent there).
    pub(in crate::aggregator) async fn create_round(&self, id: &str, config: &[u8]) -> Result<()> {
        for url in &self.urls {
            let r = self
                .http
                .put(format!("{url}/rounds/{id}"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_ROUND_CONFIG)
                .body(config.to_vec())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::CREATED) {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused the round: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
        }
        Ok(())
    }

    /// Tells every node that round `id` is aborted, for `reason` (idempotent on the nodes).
    pub(in crate::aggregator) async fn abort(&self, id: &str, reason: &str) -> Result<()> {
        let body = serde_json::to_vec(&AbortRequest {
            reason: reason.to_string(),
        })
        .unwrap_or_default();
        for url in &self.urls {
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
        Ok(())
    }

    /// Every node's verifier shares of `clients` in verified round `id`, in node order; per
    /// node, one entry per client (`None`: the node holds no valid share of it).
    pub(in crate::aggregator) async fn verifier_shares(
        &self,
        id: &str,
        clients: &[u64],
    ) -> Result<Vec<Vec<Option<Vec<u8>>>>> {
        let body = encode_client_list(clients);
        let mut per_node = Vec::with_capacity(self.urls.len());
        for url in &self.urls {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/verify"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_CLIENT_LIST)
                .body(body.clone())
                .send()
                .await?;
            if r.status() != StatusCode::OK {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused to verify: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
            per_node.push(
                decode_verifier_shares(&r.bytes().await?, clients.len())
                    .map_err(|e| Error::Http(format!("{url} verifier shares: {e}")))?,
            );
        }
        Ok(per_node)
    }

    /// Sends round `id`'s recorded close (`body`, of media type `media`) to every node.
    pub(in crate::aggregator) async fn close(
        &self,
        id: &str,
        media: &str,
        body: &[u8],
    ) -> Result<CloseSent> {
        for url in &self.urls {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/close"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, media)
                .body(body.to_vec())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::ACCEPTED) {
                let s = r.status();
                let body = r.text().await.unwrap_or_default();
                if let Some(cause) = release_impossible(&body) {
                    return Ok(CloseSent::Impossible(format!(
                        "{url} refused to close: {cause}"
                    )));
                }
                return Err(Error::Http(format!("{url} refused to close: {s}: {body}")));
            }
        }
        Ok(CloseSent::ToEveryNode)
    }

    /// Asks node `url` once for its sum of round `id`.
    pub(in crate::aggregator) async fn poll_sum(&self, url: &str, id: &str) -> Result<SumPoll> {
        let r = self
            .http
            .get(format!("{url}/rounds/{id}/sum"))
            .bearer_auth(self.admin_token.expose())
            .send()
            .await?;
        match r.status() {
            StatusCode::OK => Ok(SumPoll::Ready(r.bytes().await?.to_vec())),
            StatusCode::ACCEPTED => {
                let wait = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(1)
                    .min(5);
                // Retry-After is in seconds; poll faster than that but never spin.
                Ok(SumPoll::NotYet(Duration::from_millis(100 * wait)))
            }
            s => {
                let body = r.text().await.unwrap_or_default();
                if let Some(cause) = release_impossible(&body) {
                    return Ok(SumPoll::Impossible(format!("{url} node sum: {cause}")));
                }
                Err(Error::Http(format!("{url} node sum: {s}: {body}")))
            }
        }
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
