//! The client side: shard a vector, seal each node's message, upload with bounded retries.

use std::time::Duration;

use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode};
use reqwest::StatusCode;
use share_sealing::SealContext;
use verified_shares::VerifiedClient;

use crate::protocol::spec::Round;
use crate::{Error, MEDIA_SEALED_SHARE, Result};

/// Attempts per share (the first try included) before giving up on a node.
pub const UPLOAD_ATTEMPTS: u32 = 8;

/// What a node answered to an upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uploaded {
    /// 201: stored now.
    Stored,
    /// 200: the same share was already stored (a retry).
    AlreadyStored,
}

/// Seals `message` (a wire-encoded share for node `node`) for `round`.
pub fn seal_for(round: &Round, client: u64, node: u16, message: &[u8]) -> Result<Vec<u8>> {
    let key = round
        .node_keys
        .get(usize::from(node))
        .ok_or_else(|| Error::InvalidSpec(format!("no key for node {node}")))?;
    let ctx = SealContext {
        round: round.spec.round,
        config_hash: round.hash,
        client,
        node,
    };
    Ok(share_sealing::seal(key, &ctx, message)?)
}

/// One PUT of a sealed share; the status is returned as is (no retry).
pub async fn put_sealed(
    http: &reqwest::Client,
    node_url: &str,
    round_id: &str,
    client: u64,
    token: &str,
    sealed: Vec<u8>,
) -> Result<(StatusCode, String)> {
    let response = http
        .put(format!("{node_url}/rounds/{round_id}/shares/{client}"))
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, MEDIA_SEALED_SHARE)
        .body(sealed)
        .send()
        .await?;
    let status = response.status();
    Ok((status, response.text().await.unwrap_or_default()))
}

/// Uploads one sealed share, retrying transport errors and 5xx with backoff (the same bytes,
/// so a retry after a lost answer is recognised as the same share: 200).
pub async fn upload_sealed(
    http: &reqwest::Client,
    node_url: &str,
    round_id: &str,
    client: u64,
    token: &str,
    sealed: &[u8],
) -> Result<Uploaded> {
    let mut last = String::new();
    for attempt in 0..UPLOAD_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(50 << attempt.min(5))).await;
        }
        match put_sealed(http, node_url, round_id, client, token, sealed.to_vec()).await {
            Ok((StatusCode::CREATED, _)) => return Ok(Uploaded::Stored),
            Ok((StatusCode::OK, _)) => return Ok(Uploaded::AlreadyStored),
            Ok((s, body)) if s.is_server_error() => last = format!("{s}: {body}"),
            Ok((s, body)) => {
                return Err(Error::Http(format!(
                    "{node_url} refused client {client}'s share: {s}: {body}"
                )));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(Error::Timeout(format!(
        "{node_url}: client {client}'s share not stored after {UPLOAD_ATTEMPTS} attempts: {last}"
    )))
}

/// Client `client` of `round` shards `values`, seals node k's message to node k and uploads it
/// to `node_urls[k]`. `rng` is [`RngSource::Os`] in production.
pub async fn upload(
    http: &reqwest::Client,
    round: &Round,
    node_urls: &[String],
    client: u64,
    token: &str,
    values: &[f64],
    rng: RngSource,
) -> Result<()> {
    let sealed = seal_shares(round, client, values, rng)?;
    upload_shares(http, round, node_urls, client, token, &sealed).await
}

/// Client `client` of `round` shards `values` and seals node k's message to node k: what
/// [`upload_shares`] sends. A party that must never send two different contributions to one
/// round keeps these bytes until every node has them.
pub fn seal_shares(
    round: &Round,
    client: u64,
    values: &[f64],
    rng: RngSource,
) -> Result<Vec<Vec<u8>>> {
    let messages: Vec<Vec<u8>> = match &round.validity {
        None => Client::new(&round.config, ClientId(client), rng)?
            .shard(values)?
            .iter()
            .map(|msg| msg.get_encoded())
            .collect::<std::result::Result<_, _>>()?,
        Some(validity) => {
            let report = VerifiedClient::new(&round.config, validity.bound, ClientId(client), rng)?
                .shard(values)?;
            (0..round.node_keys.len())
                .map(|k| report.node_message(k))
                .collect::<std::result::Result<_, _>>()?
        }
    };
    messages
        .iter()
        .enumerate()
        .map(|(k, msg)| seal_for(round, client, k as u16, msg))
        .collect()
}

/// Uploads `sealed[k]` to `node_urls[k]` for every node.
pub async fn upload_shares(
    http: &reqwest::Client,
    round: &Round,
    node_urls: &[String],
    client: u64,
    token: &str,
    sealed: &[Vec<u8>],
) -> Result<()> {
    if node_urls.len() != round.node_keys.len() || sealed.len() != node_urls.len() {
        return Err(Error::InvalidSpec(format!(
            "{} node URLs and {} sealed shares for {} nodes",
            node_urls.len(),
            sealed.len(),
            round.node_keys.len()
        )));
    }
    let id = round.id();
    for (k, (sealed, url)) in sealed.iter().zip(node_urls).enumerate() {
        // A node that stays unreachable through a burst of retries (a restart) is tried again
        // until the round's deadline; a refusal (4xx) ends the upload at once. The same sealed
        // bytes every time, so a retry after a lost answer is recognised (200).
        loop {
            match upload_sealed(http, url, &id, client, token, sealed).await {
                Ok(_) => break,
                Err(Error::Timeout(why))
                    if crate::clock::now_ms() + 1000 < round.spec.deadline_unix_ms =>
                {
                    tracing::debug!(client, node = k, "{why}; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
