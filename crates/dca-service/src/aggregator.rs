//! The aggregator: creates rounds on the nodes, decides the agreed client set, collects the M
//! node sums, releases once, and charges its privacy accountant. Its own SQLite records every
//! round's fate (aborted / released, with the release) and every charge, so that a restart
//! neither releases twice nor forgets what was spent.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use dp_noise::PrivacyLoss;
use dp_noise::accountant::{Accountant, GaussianComposition, RoundCost};
use dp_noise::discrete::distributed_zcdp_rho;
use fixedpoint_shares::{Aggregator as SumAggregator, Release, ShardSet, agree};
use reqwest::StatusCode;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::node::{AbortRequest, CloseRequest, ReceivedSet, RoundStatus};
use crate::secret::SecretString;
use crate::spec::{Round, RoundSpec};
use crate::{Error, MEDIA_JSON, Result, sum_codec};

/// Polls of a node sum that answers 202 before giving up.
const SUM_POLLS: u32 = 600;

/// What the aggregator publishes for a released round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PublishedRelease {
    /// Hex round id.
    pub id: String,
    /// Numeric round id.
    pub round: u64,
    /// The decoded sum (value units).
    pub sum: Vec<f64>,
    /// The same, exactly, in grid units.
    pub sum_units: Vec<i64>,
    /// Fixed-point fractional bits.
    pub frac_bits: u32,
    /// The agreed client set.
    pub clients: Vec<u64>,
    /// σ of the noise in `sum` (0 without noise).
    pub noise_sigma_released: f64,
    /// Privacy spent by the aggregator's accountant after this round.
    pub spent_epsilon: f64,
    /// δ part of the same.
    pub spent_delta: f64,
    /// "NON-PRIVATE: exact sum, no noise" for a round without noise; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy: Option<String>,
}

/// The aggregator of one deployment.
pub struct Aggregator {
    http: reqwest::Client,
    nodes: Vec<String>,
    admin_token: SecretString,
    /// Locked only between awaits, never across one (so the aggregator can be shared by the
    /// tasks of its server).
    db: Mutex<Connection>,
    accountant: Accountant,
}

impl Aggregator {
    /// Opens (or creates) the aggregator's database and replays its charges into an accountant
    /// with `budget`.
    pub fn open(
        db_path: &Path,
        http: reqwest::Client,
        nodes: Vec<String>,
        admin_token: impl Into<SecretString>,
        budget: PrivacyLoss,
    ) -> Result<Self> {
        let db = Connection::open(db_path)?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "synchronous", "FULL")?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS rounds (
                 id TEXT PRIMARY KEY, spec BLOB NOT NULL, state TEXT NOT NULL, detail TEXT);
             CREATE TABLE IF NOT EXISTS charges (id TEXT PRIMARY KEY, rho REAL NOT NULL);",
        )?;
        // A DCA release carries a sum of discrete Gaussians, not a continuous Gaussian: the exact
        // μ-GDP curve is proven only for the latter, while zCDP holds for the sum too
        // (Kairouz–Liu–Steinke 2021, Thm 1; see `round_rho`). So rounds compose in zCDP here, as
        // in the in-process BLR pipeline.
        let mut accountant = Accountant::with_composition(budget, GaussianComposition::Zcdp)
            .map_err(Error::Budget)?;
        {
            let mut stmt = db.prepare("SELECT rho FROM charges")?;
            let rows = stmt.query_map([], |r| r.get::<_, f64>(0))?;
            for rho in rows {
                let cost = RoundCost::zcdp(rho?).map_err(Error::Budget)?;
                accountant.charge(cost).map_err(Error::Budget)?;
            }
        }
        Ok(Aggregator {
            http,
            nodes,
            admin_token: admin_token.into(),
            db: Mutex::new(db),
            accountant,
        })
    }

    fn db(&self) -> Result<MutexGuard<'_, Connection>> {
        self.db
            .lock()
            .map_err(|_| Error::Io(std::io::Error::other("aggregator database lock poisoned")))
    }

    /// The node base URLs, in node order.
    pub fn node_urls(&self) -> &[String] {
        &self.nodes
    }

    /// Privacy spent so far.
    pub fn spent(&self) -> PrivacyLoss {
        self.accountant.spent()
    }

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
        self.db()?.execute(
            "INSERT OR IGNORE INTO rounds (id, spec, state) VALUES (?1, ?2, 'created')",
            params![id, round.spec.canonical_json()],
        )?;
        for url in &self.nodes {
            let r = self
                .http
                .put(format!("{url}/rounds/{id}"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(round.spec.canonical_json())
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
        Ok(round)
    }

    /// A numeric round id names one configuration for good: the rounds this aggregator ever
    /// created (persisted in its database) are the ledger of seen (round id, config) pairs.
    fn refuse_reused_round_number(&self, round: &Round) -> Result<()> {
        let db = self.db()?;
        let mut stmt = db.prepare("SELECT id, spec FROM rounds")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        for row in rows {
            let (id, spec) = row?;
            let seen: RoundSpec = serde_json::from_slice(&spec)
                .map_err(|e| Error::InvalidSpec(format!("stored spec: {e}")))?;
            if seen.round == round.spec.round && id != round.id() {
                return Err(Error::InvalidSpec(format!(
                    "round number {} was already used with another configuration (round {id})",
                    round.spec.round
                )));
            }
        }
        Ok(())
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
            let set: ReceivedSet = self
                .http
                .get(format!("{url}/rounds/{}/received", round.id()))
                .bearer_auth(self.admin_token.expose())
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            out.push(
                set.pairs(n)
                    .map_err(|e| Error::Http(format!("{url}: received set: {e}")))?,
            );
        }
        Ok(out)
    }

    /// Waits (polling every `poll`) until every node holds all N clients or the round's
    /// deadline has passed.
    pub async fn wait_for_uploads(&self, round: &Round, poll: Duration) -> Result<()> {
        loop {
            let sets = self.received_sets(round).await?;
            if sets.iter().all(|s| s.clients().missing() == 0)
                || crate::node::now_ms() >= round.spec.deadline_unix_ms
            {
                return Ok(());
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Rounds created by this aggregator and neither released nor aborted yet.
    pub fn open_rounds(&self) -> Result<Vec<Round>> {
        self.rounds_in_state("created")
    }

    fn rounds_in_state(&self, state: &str) -> Result<Vec<Round>> {
        let db = self.db()?;
        let mut stmt = db.prepare("SELECT spec FROM rounds WHERE state = ?1 ORDER BY rowid")?;
        let specs = stmt
            .query_map(params![state], |r| r.get::<_, Vec<u8>>(0))?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        specs
            .iter()
            .map(|json| {
                serde_json::from_slice::<RoundSpec>(json)
                    .map_err(|e| Error::InvalidSpec(format!("stored spec: {e}")))?
                    .validate()
            })
            .collect()
    }

    /// The round with hex id `id`, if this aggregator created it.
    pub fn round(&self, id: &str) -> Result<Option<Round>> {
        let spec: Option<Vec<u8>> = self
            .db()?
            .query_row("SELECT spec FROM rounds WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()?;
        spec.map(|json| {
            serde_json::from_slice::<RoundSpec>(&json)
                .map_err(|e| Error::InvalidSpec(format!("stored spec: {e}")))?
                .validate()
        })
        .transpose()
    }

    /// The round's state as recorded: "created", "aborting" (nodes not all notified yet),
    /// "aborted" or "released", with the abort reason or the release (JSON).
    pub fn recorded_state(&self, round: &Round) -> Result<Option<(String, Option<String>)>> {
        self.state(&round.id())
    }

    /// True when every node holds all N clients or the round's deadline has passed: the moment
    /// to close it.
    pub async fn due(&self, round: &Round) -> Result<bool> {
        if crate::node::now_ms() >= round.spec.deadline_unix_ms {
            return Ok(true);
        }
        Ok(self
            .received_sets(round)
            .await?
            .iter()
            .all(|s| s.clients().missing() == 0))
    }

    /// Tells every node that the round is aborted (idempotent on the nodes), then records it
    /// as "aborted". A node that cannot be reached leaves the round "aborting";
    /// [`Aggregator::notify_pending_aborts`] tries again.
    async fn notify_abort(&self, round: &Round, reason: &str) -> Result<()> {
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
        self.db()?.execute(
            "UPDATE rounds SET state = 'aborted' WHERE id = ?1 AND state = 'aborting'",
            params![id],
        )?;
        Ok(())
    }

    /// Aborts an open round: recorded first (whatever happens to the notices, it is never
    /// released), then every node is told; a node that misses the notice is told again by
    /// [`Aggregator::notify_pending_aborts`]. A released round is not aborted.
    pub async fn abort(&self, round: &Round, reason: &str) -> Result<()> {
        let changed = self.db()?.execute(
            "UPDATE rounds SET state = 'aborting', detail = ?2 WHERE id = ?1 AND state = 'created'",
            params![round.id(), reason],
        )?;
        if changed == 0 {
            return match self.state(&round.id())? {
                Some((s, _)) if s == "released" => Err(Error::AlreadyReleased),
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
        for round in self.rounds_in_state("aborting")? {
            let reason = self
                .state(&round.id())?
                .and_then(|(_, detail)| detail)
                .unwrap_or_default();
            self.notify_abort(&round, &reason).await?;
        }
        Ok(())
    }

    fn state(&self, id: &str) -> Result<Option<(String, Option<String>)>> {
        Ok(self
            .db()?
            .query_row(
                "SELECT state, detail FROM rounds WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    /// The release of a round already released, if any.
    pub fn published(&self, round: &Round) -> Result<Option<PublishedRelease>> {
        match self.state(&round.id())? {
            Some((s, Some(detail))) if s == "released" => Ok(Some(
                serde_json::from_str(&detail).map_err(|e| Error::Http(e.to_string()))?,
            )),
            _ => Ok(None),
        }
    }

    /// Closes the round and releases its sum: agreed set = intersection of the nodes' received
    /// sets, sent identically to every node; more than T missing → the abort is recorded and
    /// nothing is released; otherwise the M node sums are added, the accountant is charged and
    /// the release recorded in one transaction. A second call → [`Error::AlreadyReleased`].
    pub async fn release(&mut self, round: &Round) -> Result<PublishedRelease> {
        let id = round.id();
        match self.state(&id)? {
            Some((s, _)) if s == "released" => return Err(Error::AlreadyReleased),
            Some((s, detail)) if s == "aborted" || s == "aborting" => {
                return Err(Error::RoundAborted(detail.unwrap_or_default()));
            }
            Some(_) => {}
            None => {
                return Err(Error::InvalidSpec(
                    "round not created by this aggregator".into(),
                ));
            }
        }
        // The pairs every node holds: a client that sharded twice and whose nodes hold different
        // attempts is left out (it counts as missing), never summed.
        let sets = self.received_sets(round).await?;
        let agreed_pairs = if sets.is_empty() {
            ShardSet::empty(round.config.n_clients())
        } else {
            agree(&sets.iter().collect::<Vec<_>>())?
        };
        let agreed = agreed_pairs.clients().clone();
        let max_dropped = round.config.max_dropped();
        if agreed.missing() > max_dropped {
            let missing = agreed.missing();
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
        let cost = match round_rho(round)? {
            Some(rho) => {
                let cost = RoundCost::zcdp(rho).map_err(Error::Budget)?;
                self.accountant.check(cost).map_err(Error::Budget)?;
                Some((cost, rho))
            }
            None => None,
        };
        let agreed_ids: Vec<u64> = agreed.iter().map(|c| c.0).collect();
        let close_body = serde_json::to_vec(&CloseRequest::new(&agreed_pairs)).unwrap_or_default();
        for url in &self.nodes {
            let r = self
                .http
                .post(format!("{url}/rounds/{id}/close"))
                .bearer_auth(self.admin_token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(close_body.clone())
                .send()
                .await?;
            if !matches!(r.status(), StatusCode::OK | StatusCode::ACCEPTED) {
                let s = r.status();
                return Err(Error::Http(format!(
                    "{url} refused to close: {s}: {}",
                    r.text().await.unwrap_or_default()
                )));
            }
        }
        let mut sums = SumAggregator::new(&round.config)?;
        for url in &self.nodes {
            sums.add(&sum_codec::decode(
                &self.fetch_sum(url, &id).await?,
                &round.config,
            )?)?;
        }
        let release: Release = sums.release()?;
        if let Some((cost, _)) = cost {
            self.accountant.charge(cost).map_err(Error::Budget)?;
        }
        let spent = self.accountant.spent();
        let published = PublishedRelease {
            id: id.clone(),
            round: round.spec.round,
            sum: release.sum,
            sum_units: release.sum_units,
            frac_bits: release.frac_bits,
            clients: agreed_ids,
            noise_sigma_released: release.noise_sigma_released,
            spent_epsilon: spent.epsilon,
            spent_delta: spent.delta,
            privacy: (round.config.noise().is_none())
                .then(|| crate::spec::NON_PRIVATE_MARK.to_string()),
        };
        let mut db = self.db()?;
        let tx = db.transaction()?;
        tx.execute(
            "UPDATE rounds SET state = 'released', detail = ?2 WHERE id = ?1",
            params![id, serde_json::to_string(&published).unwrap_or_default()],
        )?;
        if let Some((_, rho)) = cost {
            tx.execute(
                "INSERT INTO charges (id, rho) VALUES (?1, ?2)",
                params![id, rho],
            )?;
        }
        tx.commit()?;
        Ok(published)
    }

    async fn fetch_sum(&self, url: &str, id: &str) -> Result<Vec<u8>> {
        for _ in 0..SUM_POLLS {
            let r = self
                .http
                .get(format!("{url}/rounds/{id}/sum"))
                .bearer_auth(self.admin_token.expose())
                .send()
                .await?;
            match r.status() {
                StatusCode::OK => return Ok(r.bytes().await?.to_vec()),
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
                    return Err(Error::Http(format!(
                        "{url} node sum: {s}: {}",
                        r.text().await.unwrap_or_default()
                    )));
                }
            }
        }
        Err(Error::Timeout(format!(
            "{url} node sum not ready after {SUM_POLLS} polls"
        )))
    }
}

/// The zCDP ρ of a noisy round's release, exactly as the in-process pipeline charges it
/// (`projection::release`): the N − T − 1 honest clients' discrete Gaussians N_ℤ(0, σ_c²) in
/// grid units protect an integer vector whose ℓ2 sensitivity in grid units is Δ₂·2^f + √d
/// (encoding rounds each coordinate by at most ½ unit, so two encodings differ by at most one
/// extra unit per coordinate), which is ρ-zCDP by Kairouz–Liu–Steinke 2021, Thm 1. `None` for
/// a round without noise (it releases an exact sum and charges nothing).
fn round_rho(round: &Round) -> Result<Option<f64>> {
    let (Some(noise), Some(l2)) = (round.config.noise(), round.spec.l2_sensitivity) else {
        return Ok(None);
    };
    let config = &round.config;
    let honest = config.n_clients() - config.max_dropped() - 1;
    let l2_units = l2 * config.codec().scale() + (config.dim() as f64).sqrt();
    distributed_zcdp_rho(l2_units, noise.sigma_client_units, honest, config.dim())
        .map(Some)
        .map_err(Error::Budget)
}

#[cfg(test)]
mod tests {
    use super::round_rho;
    use crate::hex;
    use crate::spec::{RoundSpec, token_hash};
    use share_sealing::NodeKeyPair;

    fn round(frac_bits: u32) -> crate::spec::Round {
        RoundSpec {
            round: 1,
            n_clients: 16,
            n_nodes: 2,
            max_dropped: 2,
            dim: 5,
            bound: 1.0,
            mode: "seed".into(),
            noise_sigma_total: Some(2.5),
            l2_sensitivity: Some(1.0),
            frac_bits: Some(frac_bits),
            deadline_unix_ms: 1_900_000_000_000,
            node_keys: (0..2)
                .map(|_| hex::encode(&NodeKeyPair::generate().public.to_bytes()))
                .collect(),
            client_token_sha256: (0..16)
                .map(|i| hex::encode(&token_hash(&format!("t{i}"))))
                .collect(),
        }
        .validate()
        .unwrap()
    }

    /// On a coarse grid (f = 4) the rounding term is large: ρ = (Δ₂·2^f + √d)² /
    /// (2·(N − T − 1)·σ_c²·2^2f) with σ_c = σ/√(N − T − 1) is (1 + √5/16)² / (2·2.5²) = 0.1039…,
    /// not the continuous 0.08 (KLS's τ underflows at σ_c·2^f ≈ 11).
    #[test]
    fn the_charge_counts_the_grid_rounding_like_the_pipeline() {
        let by_hand = (1.0 + 5f64.sqrt() / 16.0).powi(2) / (2.0 * 2.5 * 2.5);
        let rho = round_rho(&round(4)).unwrap().unwrap();
        assert!(
            (rho - by_hand).abs() < 1e-12 * by_hand,
            "{rho} vs {by_hand}"
        );
        assert!(rho > 0.1);
    }
}
