//! The aggregator: creates rounds on the nodes, decides the agreed client set, collects the M
//! node sums, releases once, and charges its privacy accountant. Its store (SQLite, or a
//! PostgreSQL database that several aggregator processes share) records every round's fate
//! (aborted / released, with the release) and every charge, so that neither a restart nor a
//! second process releases twice or forgets what was spent.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dp_noise::PrivacyLoss;
use fixedpoint_shares::{Aggregator as SumAggregator, Decode, Release};

pub use crate::aggregator::store::{AggregatorPgLocation, AggregatorStoreLocation};
use crate::aggregator::store::{AggregatorStore, LeaseTaken};
pub use crate::aggregator::store::{RoundPhase, RoundState};
use crate::clock::{Clock, SystemClock};
use crate::protocol::messages::RoundStatus;
use crate::protocol::spec::Round;
use crate::protocol::sum_codec;
use crate::secret::SecretString;
use crate::{Error, MEDIA_PAIR_SET, Result};

/// Polls of a node sum that answers 202 before giving up.
const SUM_POLLS: u32 = 600;

/// Times a job's status change is tried when another writer changed the job between its read
/// and its write ([`Aggregator::update_job`]).
pub const JOB_CHANGE_ATTEMPTS: u32 = 16;

/// How long a round's release lease lasts between renewals unless set otherwise
/// ([`Aggregator::with_release_lease`], `dpdist aggregator --release-lease-ms`).
pub const DEFAULT_RELEASE_LEASE: Duration = Duration::from_secs(30);

/// How long a job's driver lease lasts between renewals unless set otherwise
/// ([`Aggregator::with_job_lease`], `dpdist aggregator --job-lease-ms`).
pub const DEFAULT_JOB_LEASE: Duration = Duration::from_secs(30);

pub use crate::protocol::messages::PublishedRelease;
use budget::Budget;
use lease_terms::{LeaseTerms, checked_length};
use nodes::Nodes;
use rounds::recorded::*;
use view_cache::ViewCache;

mod budget;
pub mod jobs;
mod lease_terms;
mod nodes;
mod rounds;
pub mod server;
pub(crate) mod store;
mod view_cache;
pub use crate::protocol::spec::round_rho;

/// The aggregator of one deployment.
pub struct Aggregator {
    /// Every request to the nodes goes through here.
    nodes: Nodes,
    /// Rounds, charges, jobs and leases as recorded (by every process sharing the store).
    store: AggregatorStore,
    /// Checked against the charges recorded in `store`.
    budget: Budget,
    /// Held around a job status's read-change-write.
    job_lock: Mutex<()>,
    /// Each job's participant view, built once per status change and shared by every poll.
    participant_views: ViewCache,
    /// Deadlines and lease expiries are read on it, so that tests can move time.
    clock: Arc<dyn Clock>,
    /// Who holds this aggregator's leases (a round's release, a job's driver), and how long.
    leases: LeaseTerms,
    /// The live rounds, each read and checked once.
    live_rounds: LiveRounds,
}

impl Aggregator {
    /// Opens (or creates) the aggregator's SQLite database and checks its charges against
    /// `budget`.
    pub fn open(
        db_path: &Path,
        http: reqwest::Client,
        nodes: Vec<String>,
        admin_token: impl Into<SecretString>,
        budget: PrivacyLoss,
    ) -> Result<Self> {
        Self::open_at(
            &AggregatorStoreLocation::Sqlite(db_path.to_path_buf()),
            http,
            nodes,
            admin_token,
            budget,
        )
    }

    /// Opens (or creates) the aggregator's store at `at` and checks its charges against
    /// `budget`.
    pub fn open_at(
        at: &AggregatorStoreLocation,
        http: reqwest::Client,
        nodes: Vec<String>,
        admin_token: impl Into<SecretString>,
        budget: PrivacyLoss,
    ) -> Result<Self> {
        let store = AggregatorStore::open(at)?;
        let budget = Budget::checked(budget, &store.recorded_charges()?)?;
        Ok(Aggregator {
            budget,
            job_lock: Mutex::new(()),
            participant_views: ViewCache::default(),
            live_rounds: LiveRounds::default(),
            nodes: Nodes::new(http, nodes, admin_token.into()),
            store,
            clock: Arc::new(SystemClock),
            leases: LeaseTerms::new(),
        })
    }

    /// The count and time of the store's transactions, by name (for `/metrics`).
    pub(crate) fn store_transactions(&self) -> crate::http::metrics::TxMetrics {
        self.store.transaction_metrics()
    }

    /// The same aggregator deciding deadlines and lease expiries by `clock`.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Aggregator { clock, ..self }
    }

    /// The same aggregator holding a round's release lease for `lease` between renewals: if
    /// it dies while it releases a round, another aggregator on the same store takes the
    /// round over that long after its last renewal.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for a lease under 300 ms (renewed every third of it, it would
    /// expire between renewals on a busy machine).
    pub fn with_release_lease(mut self, lease: Duration) -> Result<Self> {
        self.leases.release = checked_length("release", lease)?;
        Ok(self)
    }

    /// The node base URLs, in node order.
    pub fn node_urls(&self) -> &[String] {
        self.nodes.urls()
    }

    /// The public keys of the nodes, in order (`GET /key` of each).
    pub async fn node_keys(&self) -> Result<Vec<String>> {
        self.nodes.keys().await
    }

    /// Each node's status of the round.
    pub async fn statuses(&self, round: &Round) -> Result<Vec<RoundStatus>> {
        self.nodes.statuses(round).await
    }

    /// Each node's received (client, shard attempt) pairs.
    pub async fn received_sets(&self, round: &Round) -> Result<Vec<fixedpoint_shares::ShardSet>> {
        self.nodes.received_sets(round).await
    }

    /// Privacy spent so far, as recorded (by every process sharing the store); all of it if
    /// the charges cannot be read.
    pub fn spent(&self) -> PrivacyLoss {
        self.store
            .recorded_charges()
            .and_then(|charges| self.budget.spent(&charges))
            .unwrap_or(PrivacyLoss {
                epsilon: f64::INFINITY,
                delta: 1.0,
            })
    }

    /// The clock the aggregator decides deadlines by.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
}

#[cfg(test)]
mod tests;
