//! The node's HTTP handlers: authenticate, open and check requests, ask the store actor, answer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, mpsc};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use fixedpoint_shares::{Decode, NodeIndex, ShareMessage, ShareMode};
use sha2::{Digest, Sha256};
use share_sealing::{NodeKeyPair, SealContext};
use tokio::sync::oneshot;

use super::close_spool::{self, SplitError};
use super::store::{AttemptReader, TokenLookup};
use crate::clock::Clock;
use crate::http::body::{BodyBudget, BodyError};
use crate::http::metrics::Metrics;
use crate::http::problem::{ApiError, ApiResult, bearer, content_type_is, json, require_token};
use crate::protocol::spec::Round;
use crate::secret::token_matches;
use crate::{
    Error, MEDIA_JSON, MEDIA_NODE_SUM, MEDIA_PAIR_SET, MEDIA_ROUND_CONFIG, MEDIA_SEALED_SHARE,
    Result, hex,
};

use super::*;

pub(super) struct AppState {
    pub(super) index: u16,
    pub(super) keys: NodeKeyPair,
    pub(super) admin_token_hash: [u8; 32],
    pub(super) rounds: Arc<RwLock<HashMap<[u8; 32], Arc<Round>>>>,
    pub(super) tx: std::sync::Mutex<mpsc::Sender<Command>>,
    pub(super) data_dir: PathBuf,
    pub(super) max_body: usize,
    /// Share bytes being read or opened, over all uploads.
    pub(super) share_bytes: BodyBudget,
    pub(super) body_timeout: Duration,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) metrics: Arc<Metrics>,
    /// Read-only connections for the clients' token hashes, used in turn.
    pub(super) lookups: Vec<std::sync::Mutex<TokenLookup>>,
    /// The store, for the received set's and the node sum's read connections.
    pub(super) db: StoreLocation,
    pub(super) next_lookup: std::sync::atomic::AtomicUsize,
    pub(super) verify_secret: Option<super::verified::VerifySecret>,
}

impl AppState {
    /// Client `client`'s token hash as listed in round `round`'s config, from the store.
    ///
    /// On PostgreSQL on a blocking thread: its client blocks on a runtime of its own. On SQLite
    /// in place: a read of one indexed row on a read-only WAL connection never waits for the
    /// writer, only for the disk on a page not cached, and a blocking thread per upload cost
    /// 26% more node CPU per upload (medians of 3 runs: 165 µs in place, 208 µs on a blocking
    /// thread; `bench_network --n 10000 --dim 1000 --conns 64 --mode seed --preseal`,
    /// docs/src/results/node-cpu.md).
    pub(super) async fn token_hash(
        self: &Arc<Self>,
        round: &[u8; 32],
        client: u64,
    ) -> ApiResult<[u8; 32]> {
        if let StoreLocation::Sqlite(_) = self.db {
            return self.token_hash_now(round, client);
        }
        let (state, round) = (self.clone(), *round);
        tokio::task::spawn_blocking(move || state.token_hash_now(&round, client))
            .await
            .map_err(|e| ApiError::internal(format!("token lookup: {e}")))?
    }

    fn token_hash_now(&self, round: &[u8; 32], client: u64) -> ApiResult<[u8; 32]> {
        let k = self
            .next_lookup
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % self.lookups.len().max(1);
        let mut lookup = self
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
    pub(super) async fn blocking_read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut AttemptReader) -> Result<T> + Send + 'static,
    ) -> ApiResult<(AttemptReader, T)> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let mut reader = AttemptReader::open(&db)?;
            let value = f(&mut reader)?;
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

    pub(super) fn send(&self, c: Command) -> ApiResult<()> {
        self.tx
            .lock()
            .map_err(|_| ApiError::internal("lock poisoned"))?
            .send(c)
            .map_err(|_| ApiError::internal("store stopped"))
    }

    /// The round named by `id`; with a shared store, one this replica does not know yet is
    /// loaded from the store (another replica created it).
    pub(super) async fn round(&self, id: &str) -> ApiResult<Arc<Round>> {
        let id = hex::decode_array::<32>(id)
            .ok_or_else(|| ApiError::not_found("round id is not 64 hex digits"))?;
        let known = self
            .rounds
            .read()
            .map_err(|_| ApiError::internal("lock poisoned"))?
            .get(&id)
            .cloned();
        match known {
            Some(round) => Ok(round),
            None if self.db.is_shared() => ask(self, |tx| Command::Load(id, tx)).await,
            None => Err(ApiError::not_found("unknown round")),
        }
    }

    pub(super) fn admin(&self, headers: &HeaderMap) -> ApiResult<()> {
        require_token(headers, &self.admin_token_hash, "the aggregator's")
    }
}

pub(super) async fn ask<T>(
    state: &AppState,
    make: impl FnOnce(oneshot::Sender<ApiResult<T>>) -> Command,
) -> ApiResult<T> {
    let (tx, rx) = oneshot::channel();
    state.send(make(tx))?;
    rx.await
        .map_err(|_| ApiError::internal("store dropped the request"))?
}

pub(super) async fn node_metrics(State(state): State<Arc<AppState>>) -> Response {
    crate::http::metrics::exposition(&state.metrics)
}

pub(super) async fn public_key(State(state): State<Arc<AppState>>) -> Response {
    json(
        StatusCode::OK,
        &serde_json::json!({ "node": state.index, "public_key": hex::encode(&state.keys.public.to_bytes()) }),
    )
}

pub(super) async fn create_round(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_ROUND_CONFIG)?;
    // The config (32 bytes per client) goes to disk frame by frame, never whole in memory.
    let spool =
        Spool::new(&state.data_dir).map_err(|e| ApiError::internal(format!("spool: {e}")))?;
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

pub(super) async fn round_status(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id).await?;
    let status = ask(&state, |tx| Command::Status(round.hash, tx)).await?;
    Ok(json(StatusCode::OK, &status))
}

pub(super) async fn received(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id).await?;
    ask(&state, |tx| Command::Received(round.hash, tx)).await?;
    // The set (8 bytes per client and N/8 for the bitset) is written from the store's
    // attempts index in chunks as the client reads them, not built whole: memory the N-bit
    // set in N. A store error after the first chunk can only cut the response short (the
    // client sees a broken body, or a set that fails its length check).
    let (id, n) = (round.hash, round.config.n_clients());
    let (reader, ()) = state.blocking_read(|_| Ok(())).await?;
    let body = stream_body(reader, move |reader, out| {
        reader.write_received(&id, n, out)
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, MEDIA_PAIR_SET)],
        body,
    )
        .into_response())
}

/// A response body that `write` fills on a blocking thread through `reader`, sent in chunks
/// as the client reads them ([`ChunkSender`]); an error cuts the body short.
pub(super) fn stream_body(
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
pub(super) struct ChunkSender {
    pub(super) sender: Option<http_body_util::channel::Sender<Bytes, std::io::Error>>,
    pub(super) handle: tokio::runtime::Handle,
    pub(super) buf: Vec<u8>,
}

impl ChunkSender {
    pub(super) const CHUNK: usize = 64 * 1024;

    pub(super) fn new(
        sender: http_body_util::channel::Sender<Bytes, std::io::Error>,
        handle: tokio::runtime::Handle,
    ) -> Self {
        ChunkSender {
            sender: Some(sender),
            handle,
            buf: Vec::with_capacity(Self::CHUNK),
        }
    }

    pub(super) fn send(&mut self) -> std::io::Result<()> {
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
    pub(super) fn abort(&mut self, error: std::io::Error) {
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

pub(super) async fn close(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id).await?;
    if round.validity.is_some() {
        return verified_close(state, round, headers, body).await;
    }
    content_type_is(&headers, MEDIA_PAIR_SET)?;
    // The agreed set (8 bytes per client, N/8 for the bitset) is spooled to disk and read
    // from there in one streaming pass into its two lists (raw words, on disk too); the store
    // actor checks them. Only a body that is not a pair set over the round's N is refused here.
    let spool =
        Spool::new(&state.data_dir).map_err(|e| ApiError::internal(format!("spool: {e}")))?;
    spool_body(&state, &headers, body, &spool.config).await?;
    let n = round.config.n_clients();
    let (spool, counts) = tokio::task::spawn_blocking(move || {
        let counts = close_spool::split(&spool.config, n, &spool.clients, &spool.shards);
        (spool, counts)
    })
    .await
    .map_err(|e| ApiError::internal(format!("parsing the close request: {e}")))?;
    let counts = counts.map_err(|e| match e {
        SplitError::Malformed(m) => ApiError::bad_request(format!("close request: {m}")),
        SplitError::Io(e) => ApiError::internal(format!("spooled close request: {e}")),
    })?;
    let status = ask(&state, |tx| {
        Command::Close(round.hash, spool, counts, None, tx)
    })
    .await?;
    Ok(status.into_response())
}

/// A verified round's close: the pair set goes the plain close's way (spooled and split), the
/// relay's verdicts to the store actor with it (32 bytes per agreed client, held in memory).
async fn verified_close(
    state: Arc<AppState>,
    round: Arc<Round>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    use crate::protocol::verified_close::{MEDIA_VERIFIED_CLOSE, VerifiedClose};
    content_type_is(&headers, MEDIA_VERIFIED_CLOSE)?;
    let body = axum::body::to_bytes(body, state.max_body)
        .await
        .map_err(|e| ApiError::bad_request(format!("close request: {e}")))?;
    let close = VerifiedClose::decode(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    drop(body);
    let spool =
        Spool::new(&state.data_dir).map_err(|e| ApiError::internal(format!("spool: {e}")))?;
    let n = round.config.n_clients();
    let (spool, counts) = tokio::task::spawn_blocking(move || {
        let counts = std::fs::write(&spool.config, &close.pairs)
            .map_err(SplitError::Io)
            .and_then(|()| close_spool::split(&spool.config, n, &spool.clients, &spool.shards));
        (spool, counts.map(|c| (c, close.verdicts)))
    })
    .await
    .map_err(|e| ApiError::internal(format!("parsing the close request: {e}")))?;
    let (counts, verdicts) = counts.map_err(|e| match e {
        SplitError::Malformed(m) => ApiError::bad_request(format!("close request: {m}")),
        SplitError::Io(e) => ApiError::internal(format!("spooled close request: {e}")),
    })?;
    let status = ask(&state, |tx| {
        Command::Close(round.hash, spool, counts, Some(verdicts), tx)
    })
    .await?;
    Ok(status.into_response())
}

pub(super) async fn abort(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    content_type_is(&headers, MEDIA_JSON)?;
    let round = state.round(&id).await?;
    let request: AbortRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("abort request: {e}")))?;
    let status = ask(&state, |tx| Command::Abort(round.hash, request.reason, tx)).await?;
    Ok(status.into_response())
}

pub(super) async fn node_sum(
    State(state): State<Arc<AppState>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    state.admin(&headers)?;
    let round = state.round(&id).await?;
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
    let len = at.len();
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
pub(super) fn check_message(
    msg: &ShareMessage,
    round: &Round,
    node: u16,
    client: u64,
) -> ApiResult<()> {
    fixedpoint_shares::check_share(&round.config, NodeIndex(node), msg)
        .map_err(|e| ApiError::bad_request(format!("share message: {e}")))?;
    // The one thing the core cannot know: the client slot the share was uploaded to.
    if msg.client.0 != client {
        return Err(ApiError::bad_request(format!(
            "share message of client {} uploaded as client {client}",
            msg.client.0
        )));
    }
    Ok(())
}

/// The exact length of a sealed share of `round` for node `node`: a full share (node 0, or
/// every node in full mode) carries d words, a seed share its 16-byte seed.
pub(super) fn sealed_share_len(round: &Round, node: u16) -> usize {
    if let Some(validity) = &round.validity {
        // A round that yields no length takes no share (the upload is refused as too large).
        let message = validity.message_len(&round.config, usize::from(node));
        return message.map_or(0, share_sealing::sealed_len);
    }
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
pub(super) async fn upload(
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
            crate::http::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
            return Err(refused);
        }
    };
    let limit = sealed_share_len(&round, state.index);
    if crate::http::body::declared_len(&headers).is_some_and(|len| len > limit as u64) {
        crate::http::body::drain_refused(&headers, body, 1 << 20, Duration::from_secs(5));
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
    let (parsed, attempt) = if round.validity.is_some() {
        let node =
            super::verified::verifying_node(state.verify_secret.as_ref(), &round, state.index)?;
        let share = node
            .decode_share(&message)
            .map_err(|e| ApiError::bad_request(format!("verified share message: {e}")))?;
        (None, share.attempt())
    } else {
        let parsed = ShareMessage::get_decoded(&round.config, &message)
            .map_err(|e| ApiError::bad_request(format!("share message: {e}")))?;
        check_message(&parsed, &round, state.index, client)?;
        let attempt = parsed.shard.0;
        (Some(parsed), attempt)
    };
    let digest: [u8; 32] = Sha256::digest(&message).into();
    let (tx, rx) = oneshot::channel();
    state.send(Command::Upload(Box::new(Upload {
        round_id: round.hash,
        client,
        digest,
        message,
        parsed,
        attempt,
        reply: tx,
    })))?;
    let status = rx
        .await
        .map_err(|_| ApiError::internal("store dropped the request"))??;
    Ok(status.into_response())
}

/// Everything about an upload that the path and headers decide: the round, the client, its
/// token, the media type, the deadline.
pub(super) async fn check_upload(
    state: &Arc<AppState>,
    id: &str,
    client: &str,
    headers: &HeaderMap,
) -> ApiResult<(Arc<Round>, u64)> {
    let round = state.round(id).await?;
    let client: u64 = client
        .parse()
        .map_err(|_| ApiError::not_found("client id is not a number"))?;
    if client >= round.config.n_clients() as u64 {
        return Err(ApiError::not_found("unknown client"));
    }
    let token = bearer(headers)?;
    // The listed hash is read from the store (not kept in memory); compared in constant time.
    let token_hash_listed = state.token_hash(&round.hash, client).await?;
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
