//! DCA paper Alg. 2 over the network: `blr::fit_via` with a [`NetworkTransport`], whose DCA
//! rounds (the DP std round, then the statistics round) run on a `dpdist aggregator` server and
//! `dpdist node` processes. Everything else — budget split, threshold search on auxiliary data,
//! posterior — is `blr`'s own code, so with the same fixed seed the network fit releases the
//! statistics of the in-process `blr::fit` bit for bit.
//!
//! The N clients are tasks of this process (at most `concurrency` at a time): client i computes
//! its own vector, shards it with the randomness `rng.derive(i)`, seals each share to its node
//! and uploads it with its own per-round bearer token. The analyst's side — writing the round
//! config with the planned noise, waiting for the aggregator's release — is this process too.

use std::sync::Arc;
use std::time::Duration;

use fixedpoint_shares::{ClientId, DcaRound, DcaTransport, Release};
use rand_core::RngCore;
use reqwest::StatusCode;
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

pub use crate::protocol::job::blr_fit::dca_blr_config;
use crate::protocol::messages::{NodeList, PublishedRelease, release_of};
use crate::protocol::spec::{planned_round, token_hash};
use crate::secret::SecretString;
use crate::{Error, MEDIA_ROUND_CONFIG, Result, hex};

/// How long a job waits for an aggregator that cannot be reached or answers 5xx before it
/// gives up (a restart takes seconds).
pub const AGGREGATOR_PATIENCE: Duration = Duration::from_secs(60);
/// Runs DCA rounds on an aggregator server and its nodes.
pub struct NetworkTransport {
    runtime: tokio::runtime::Handle,
    http: reqwest::Client,
    aggregator_url: String,
    analyst_token: SecretString,
    /// Time the clients get to upload (the round's deadline, from its creation).
    pub upload_window: Duration,
    /// Clients uploading at the same time.
    pub concurrency: usize,
    /// Added to every planned round id on the aggregator, so that several jobs (each numbering
    /// its rounds from 0 or 1) can share one aggregator, whose round ids must be distinct. The
    /// release is the same whatever the offset: the masks depend on the id, but cancel.
    pub round_offset: u64,
    /// What the aggregator published for each round run so far, in order.
    pub releases: Vec<PublishedRelease>,
}

impl NetworkTransport {
    /// A transport on `runtime` (call [`DcaTransport::run_round`] from outside it, e.g. from
    /// `spawn_blocking`), talking to the aggregator at `aggregator_url` with `http`.
    pub fn new(
        runtime: tokio::runtime::Handle,
        http: reqwest::Client,
        aggregator_url: String,
        analyst_token: impl Into<SecretString>,
    ) -> Self {
        NetworkTransport {
            runtime,
            http,
            aggregator_url,
            analyst_token: analyst_token.into(),
            upload_window: Duration::from_secs(600),
            concurrency: 32,
            round_offset: 0,
            releases: Vec::new(),
        }
    }

    /// The aggregator's node list (`GET /nodes`), retried while the aggregator cannot be
    /// reached or answers 5xx, for at most [`AGGREGATOR_PATIENCE`].
    pub async fn node_list(&self) -> Result<NodeList> {
        let url = format!("{}/nodes", self.aggregator_url);
        let deadline = tokio::time::Instant::now() + AGGREGATOR_PATIENCE;
        let r = self
            .patiently(deadline, "GET /nodes", || {
                self.http.get(&url).bearer_auth(self.analyst_token.expose())
            })
            .await?;
        Ok(r.error_for_status()?.json().await?)
    }

    /// Sends the request `build` makes until the aggregator answers with something other than
    /// a 5xx, retrying transport errors and 5xx with backoff (100 ms doubling to 2 s) until
    /// `deadline`: an aggregator that restarts, or a connection lost on the way, does not end a
    /// job whose rounds it will still release.
    async fn patiently(
        &self,
        deadline: tokio::time::Instant,
        what: &str,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        let mut wait = Duration::from_millis(100);
        loop {
            let why = match build().send().await {
                Ok(r) if !r.status().is_server_error() => return Ok(r),
                Ok(r) => format!("{}", r.status()),
                Err(e) => Error::from(e).to_string(),
            };
            if tokio::time::Instant::now() + wait > deadline {
                return Err(Error::Timeout(format!(
                    "{what}: the aggregator did not answer in time (last: {why})"
                )));
            }
            tracing::warn!("{what}: {why}; retrying in {} ms", wait.as_millis());
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
    }

    async fn run(&mut self, dca: &DcaRound<'_>) -> Result<Release> {
        let config = dca.config;
        let params = config.params();
        let nodes = self.node_list().await?;
        let n = config.n_clients();
        let mut csprng = dp_noise::rng::RngSource::Os
            .try_rng()
            .map_err(|e| Error::Http(format!("no OS randomness for client tokens: {e}")))?;
        // Each simulated client's token is a secret until its upload is done.
        let tokens: Vec<SecretString> = (0..n)
            .map(|_| {
                let mut t = Zeroizing::new([0u8; 16]);
                csprng.fill_bytes(t.as_mut_slice());
                SecretString::new(hex::encode(t.as_slice()))
            })
            .collect();
        let aggregator_round = params
            .round
            .0
            .checked_add(self.round_offset)
            .ok_or_else(|| {
                Error::InvalidSpec(format!(
                    "round {} + offset {} overflows",
                    params.round.0, self.round_offset
                ))
            })?;
        let round = Arc::new(planned_round(
            aggregator_round,
            dca,
            None,
            crate::clock::now_ms() + self.upload_window.as_millis() as u64,
            nodes.node_keys.clone(),
            tokens
                .iter()
                .map(|t| hex::encode(&token_hash(t.expose())))
                .collect(),
        )?);
        let id = round.id();
        let config_bytes = round.config_bytes()?;
        // Creating a round is idempotent, so it is simply sent again until it gets an answer.
        let created = self
            .patiently(
                tokio::time::Instant::now() + AGGREGATOR_PATIENCE,
                "creating the round",
                || {
                    self.http
                        .put(format!("{}/rounds/{id}", self.aggregator_url))
                        .bearer_auth(self.analyst_token.expose())
                        .header(reqwest::header::CONTENT_TYPE, MEDIA_ROUND_CONFIG)
                        .body(config_bytes.clone())
                },
            )
            .await?;
        if !matches!(created.status(), StatusCode::OK | StatusCode::CREATED) {
            let s = created.status();
            return Err(Error::Http(format!(
                "the aggregator refused round {aggregator_round}: {s}: {}",
                created.text().await.unwrap_or_default()
            )));
        }

        let dim = config.dim();
        let fixedpoint_shares::ClientVectors::Here(values) = dca.values else {
            return Err(Error::InvalidSpec(
                "this transport's clients are tasks of this process and need their vectors; \
                 rows kept by participants are run as a job on the aggregator"
                    .into(),
            ));
        };
        let permits = Arc::new(Semaphore::new(self.concurrency.max(1)));
        let mut clients = tokio::task::JoinSet::new();
        // Dropped clients send nothing; the aggregator closes the round at its deadline.
        let mut sends = vec![true; n];
        for &ClientId(c) in dca.dropped {
            if let Some(s) = usize::try_from(c).ok().and_then(|c| sends.get_mut(c)) {
                *s = false;
            }
        }
        for (i, token) in tokens.into_iter().enumerate() {
            if !sends[i] {
                continue;
            }
            let permit = permits
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| Error::Http("upload limiter closed".into()))?;
            let (http, round, urls) = (self.http.clone(), round.clone(), nodes.nodes.clone());
            let values = values[i * dim..(i + 1) * dim].to_vec();
            let rng = dca.rng.derive(i as u64);
            clients.spawn(async move {
                let _permit = permit;
                crate::protocol::upload::upload(
                    &http,
                    &round,
                    &urls,
                    i as u64,
                    token.expose(),
                    &values,
                    rng,
                )
                .await
                .map_err(|e| (i, e))
            });
        }
        // A client that cannot upload after its retries is a dropout, as in the protocol: the
        // round goes on with the others, and the aggregator aborts it if more than T drop.
        let mut dropped = 0usize;
        while let Some(done) = clients.join_next().await {
            if let Err((i, e)) = done.map_err(|e| Error::Http(format!("client task: {e}")))? {
                dropped += 1;
                tracing::warn!(client = i, "could not upload, counted as dropped: {e}");
            }
        }
        if dropped > 0 {
            tracing::warn!(
                dropped,
                max_dropped = params.max_dropped,
                "clients dropped out of round {aggregator_round}"
            );
        }

        let published = self.await_release(&id).await?;
        let release = release_of(&published, config)?;
        self.releases.push(published);
        Ok(release)
    }

    /// Polls `GET /rounds/{id}/release` until the aggregator has released the round (it does
    /// so by itself once every client reached every node), for at most the upload window plus
    /// a minute.
    async fn await_release(&self, id: &str) -> Result<PublishedRelease> {
        let poll = Duration::from_millis(100);
        let deadline = tokio::time::Instant::now() + self.upload_window + Duration::from_secs(60);
        while tokio::time::Instant::now() < deadline {
            // An aggregator restarting, or a lost connection, is waited out until the deadline.
            let r = self
                .patiently(deadline, "waiting for the release", || {
                    self.http
                        .get(format!("{}/rounds/{id}/release", self.aggregator_url))
                        .bearer_auth(self.analyst_token.expose())
                })
                .await?;
            match r.status() {
                StatusCode::OK => return Ok(r.json().await?),
                StatusCode::ACCEPTED => tokio::time::sleep(poll).await,
                s => {
                    return Err(Error::Http(format!(
                        "round {id}: {s}: {}",
                        r.text().await.unwrap_or_default()
                    )));
                }
            }
        }
        Err(Error::Timeout(format!("round {id} was not released")))
    }
}

impl DcaTransport for NetworkTransport {
    fn run_round(&mut self, round: &DcaRound<'_>) -> fixedpoint_shares::Result<Release> {
        let runtime = self.runtime.clone();
        runtime
            .block_on(self.run(round))
            .map_err(|e| fixedpoint_shares::Error::Transport(e.to_string()))
    }
}

/// Rows prepared by [`prepare_csv`].
#[derive(Clone, Debug)]
pub struct PreparedCsv {
    /// Inputs, row-major n × d.
    pub x: Vec<f64>,
    /// Targets.
    pub y: Vec<f64>,
    /// Rows (clients).
    pub n: usize,
    /// Input columns.
    pub d: usize,
    /// Values outside their public range, clipped to it.
    pub clipped: usize,
}

/// The diabetes-style CSV prepared as the DCA paper's UCI protocol (as
/// `examples/distributed_blr.rs --protocol dca` does) from PUBLIC information only: every column
/// mapped from its range in the public bounds schema `bounds` (`column,lo,hi`, see
/// [`blr::public_bounds`]) onto a range of 10 (±5, values outside clipped), a per-record map
/// that costs no privacy, so the assumed bounds ±7.5 hold.
pub fn prepare_csv(text: &str, target: &str, bounds: &str) -> Result<PreparedCsv> {
    let table = blr::data::Table::parse_csv(text)?;
    let (mut x, mut y, d, names) = table.split_target(target)?;
    let n = table.rows;
    let schema = blr::public_bounds::PublicBounds::parse(bounds)
        .map_err(|e| Error::InvalidSpec(format!("public bounds schema: {e}")))?;
    let clipped = schema
        .scale(&mut x, &names, 5.0)
        .and_then(|c| Ok(c + schema.scale(&mut y, &[target.to_string()], 5.0)?))
        .map_err(|e| Error::InvalidSpec(format!("public bounds schema: {e}")))?;
    Ok(PreparedCsv {
        x,
        y,
        n,
        d,
        clipped,
    })
}

/// Runs `blr::fit_via` with `transport` on a blocking thread of the current runtime (the
/// transport blocks on the runtime for each round). Returns the fit and the transport (with
/// the aggregator's published releases).
pub async fn fit_over_network(
    mut transport: NetworkTransport,
    x: Vec<f64>,
    y: Vec<f64>,
    d: usize,
    config: blr::FitConfig,
    rng: dp_noise::rng::RngSource,
) -> Result<(blr::Fit, NetworkTransport)> {
    tokio::task::spawn_blocking(move || {
        let n = y.len();
        let fit = blr::fit_via(&x, &y, n, d, &config, rng, &mut transport)?;
        Ok((fit, transport))
    })
    .await
    .map_err(|e| Error::Http(format!("fit task: {e}")))?
}
