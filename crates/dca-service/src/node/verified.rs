//! What a node does in a verified round (`validity` in its spec): decode each client's share at
//! upload (no running sum: the check needs every node), answer the relay's request for verifier
//! shares, and at close add the output shares of the clients the relay found valid, with its
//! verdicts, into the node sum. Each round's Prio3 verify key is derived from the node
//! operators' shared secret (`--verify-secret-file`), which clients and the aggregator never see.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fixedpoint_shares::{ClientId, ClientSet};
use sha2::{Digest, Sha256};
use verified_shares::VerifyingNode;
use verified_shares::verify::Pending;
use verified_shares::wire::encode_verifier_share;
use zeroize::Zeroizing;

use super::actor::{Actor, Command, PENDING_CHECKS_BYTES};
use super::http::{AppState, ask};
use crate::http::problem::{ApiError, ApiResult, content_type_is};
use crate::protocol::spec::Round;
use crate::protocol::verified_close::{
    MEDIA_CLIENT_LIST, MEDIA_VERIFIER_SHARES, decode_client_list, encode_verifier_shares,
};

/// The node operators' shared secret: every node of a deployment holds the same one.
pub type VerifySecret = Arc<Zeroizing<Vec<u8>>>;

/// The verify secret in `path` (as a token file is read: surrounding whitespace dropped), at
/// least 32 characters (`openssl rand -hex 32` makes one).
///
/// # Errors
/// [`crate::Error::Io`] if the file cannot be read; [`crate::Error::InvalidSpec`] if it is short.
pub fn read_verify_secret(path: &std::path::Path) -> crate::Result<VerifySecret> {
    let text = crate::secret::SecretString::read_file(path)?;
    if text.expose().len() < 32 {
        return Err(crate::Error::InvalidSpec(format!(
            "{}: a verify secret has at least 32 characters (openssl rand -hex 32)",
            path.display()
        )));
    }
    Ok(Arc::new(Zeroizing::new(text.expose().as_bytes().to_vec())))
}

/// Round `round`'s Prio3 verify key: SHA-256 of a label, the secret and the round id, so that
/// every round has its own key and a key reveals nothing of another.
fn verify_key(secret: &[u8], round: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"dpdist verify key v1\0");
    h.update((secret.len() as u64).to_le_bytes());
    h.update(secret);
    h.update(round);
    h.finalize().into()
}

/// This node's verifier of `round`.
///
/// # Errors
/// 409 `validity-unsupported` if the node has no verify secret; 400 if the round's Prio3
/// instance cannot be built.
pub(super) fn verifying_node(
    secret: Option<&VerifySecret>,
    round: &Round,
    index: u16,
) -> ApiResult<VerifyingNode> {
    let validity = round
        .validity
        .as_ref()
        .ok_or_else(|| ApiError::bad_request("the round has no validity mode"))?;
    let secret = secret.ok_or_else(|| {
        ApiError::conflict(
            "validity-unsupported",
            "this node has no verify secret (--verify-secret-file): it cannot check verified rounds",
        )
    })?;
    VerifyingNode::new(
        &round.config,
        validity.bound,
        usize::from(index),
        verify_key(secret, &round.hash),
    )
    .map_err(|e| ApiError::bad_request(format!("validity: {e}")))
}

/// `POST /rounds/{id}/verify`: this node's verifier share of each listed client.
pub(super) async fn verify(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_CLIENT_LIST)?;
    let round = state.round(&id).await?;
    let clients = decode_client_list(&body, round.config.n_clients())
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let shares = ask(&state, |tx| Command::Verify(round.hash, clients, tx)).await?;
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(MEDIA_VERIFIER_SHARES),
        )],
        shares,
    )
        .into_response())
}

impl Actor {
    /// The verifier share of each of `clients` from the stored shares (empty where none is
    /// stored or the share is already malformed here).
    pub(super) fn verifier_shares(&mut self, id: &[u8; 32], clients: &[u64]) -> ApiResult<Vec<u8>> {
        let rt = self
            .rounds
            .get(id)
            .ok_or_else(|| ApiError::not_found("unknown round"))?;
        let node = verifying_node(self.verify_secret.as_ref(), &rt.round, self.index)?;
        // Node 0's state holds its output share, a helper's two seeds.
        let state_bytes = if self.index == 0 {
            16 * rt.round.config.dim() + 32
        } else {
            64
        };
        let keep_at_most = PENDING_CHECKS_BYTES / state_bytes;
        let wanted: HashMap<u64, usize> =
            clients.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let mut shares = vec![None; clients.len()];
        let mut kept = HashMap::new();
        self.store
            .for_each_share(id, |client, _, message| {
                if let Some(&at) = wanted.get(&client) {
                    let checked = node
                        .decode_share(message)
                        .and_then(|share| node.verify_share(&share));
                    if let Ok((pending, verifier)) = checked {
                        shares[at] = encode_verifier_share(&verifier).ok();
                        if kept.len() < keep_at_most {
                            kept.insert(client, pending);
                        }
                    }
                }
                Ok(())
            })
            .map_err(|e| ApiError::internal(format!("reading the shares: {e}")))?;
        if let Some(rt) = self.rounds.get_mut(id) {
            rt.pending_checks = kept;
        }
        Ok(encode_verifier_shares(&shares))
    }

    /// The node sum of a verified round: each agreed client's check (kept from `/verify` in
    /// `kept`, or run again from its stored share) finished with the relay's verdict
    /// (`verdicts` in ascending client order), its output share added. A verdict that does not
    /// finish this node's check means the relay or another node deviates: the close is refused
    /// and nothing is summed.
    pub(super) fn verified_sum(
        &mut self,
        round: &Round,
        agreed: &ClientSet,
        verdicts: &[Vec<u8>],
        mut kept: HashMap<u64, Pending>,
    ) -> ApiResult<Vec<u8>> {
        if verdicts.len() != agreed.len() {
            return Err(ApiError::bad_request(format!(
                "{} verdicts for {} agreed clients",
                verdicts.len(),
                agreed.len()
            )));
        }
        let mut node = verifying_node(self.verify_secret.as_ref(), round, self.index)?;
        let by_client: HashMap<u64, &[u8]> = agreed
            .iter()
            .map(|c| c.0)
            .zip(verdicts.iter().map(Vec::as_slice))
            .collect();
        let mut refused = None;
        let scan = self
            .store
            .for_each_share(&round.hash, |client, _, message| {
                let Some(verdict) = by_client.get(&client) else {
                    return Ok(());
                };
                let added = match kept.remove(&client) {
                    Some(pending) => node
                        .decode_verdict(&pending, verdict)
                        .and_then(|verdict| node.accept(ClientId(client), pending, &verdict)),
                    None => node
                        .decode_share(message)
                        .and_then(|share| node.accept_share(ClientId(client), &share, verdict)),
                };
                if let Err(e) = added {
                    refused = Some(ApiError::conflict(
                        "verdict-refused",
                        format!(
                            "the relay's verdict for client {client} does not finish this node's \
                         check ({e}): the relay or a node deviates; nothing is summed"
                        ),
                    ));
                    return Err(crate::Error::InvalidSpec(
                        "stopped at a refused verdict".into(),
                    ));
                }
                Ok(())
            });
        if let Some(refused) = refused {
            return Err(refused);
        }
        scan.map_err(|e| ApiError::internal(format!("reading the shares: {e}")))?;
        if node.valid().len() != agreed.len() {
            return Err(ApiError::internal(
                "the store does not hold every agreed client's share",
            ));
        }
        node.encoded_sum()
            .map_err(|e| ApiError::internal(format!("node sum: {e}")))
    }

    /// Stores a verified round's node sum, computed at its close.
    pub(super) fn store_verified_sum(&mut self, round: &Round, sum: &[u8]) -> ApiResult<()> {
        let sha256: [u8; 32] = Sha256::digest(sum).into();
        self.store
            .set_sum_from(&round.hash, &mut &sum[..], sum.len() as u64, &sha256)
            .map_err(|e| ApiError::internal(format!("storing the sum: {e}")))
    }
}
