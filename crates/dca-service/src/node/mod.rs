//! A compute node: HTTPS API, HPKE opening, durable exactly-once storage, its DCA sum.
//!
//! Request handlers authenticate, open and check a share concurrently; everything that reads
//! or changes state goes through one writer thread (the "store actor") that owns the SQLite
//! connection and the running sums. The actor commits all uploads waiting at that moment in one
//! transaction (group commit: one fsync for many shares) and only then lets their handlers
//! answer 2xx, and only then adds them to the running sum. A crash between commit and sum is
//! harmless: the sum is rebuilt from the stored shares on start-up.
//!
//! One part per file: `key` (its HPKE key), `http` (handlers: authenticate, open, check, ask the
//! actor), `actor` (the writer thread and the running sums), `replica` (what changes when other processes of
//! this node share its PostgreSQL store), `store` (every durable change), `spool`
//! and `close_spool` (bodies too large for memory), and here the options and the router. An
//! upload goes `http::upload` → `actor/uploads.rs` (`Actor::flush`) →
//! `store::NodeStore::commit_uploads` (the rule in `store/rules.rs`).

mod actor;
pub(crate) mod close_spool;
mod http;
pub mod key;
mod replica;
mod spool;
pub(crate) mod store;
mod verified;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, mpsc};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};

use crate::Result;
use crate::clock::{Clock, SystemClock};
use crate::http::body::BodyBudget;
use crate::http::metrics::Metrics;
use crate::http::problem::healthz;
pub use crate::node::key::load_or_create_key;
use crate::protocol::spec::token_hash;
use crate::secret::SecretString;
use store::{NodeStore, TokenLookup};
pub use store::{PgLocation, StoreLocation};
pub use verified::{VerifySecret, read_verify_secret};

pub use crate::protocol::messages::{AbortRequest, RoundStatus};
use actor::*;
use http::*;
use spool::*;

/// How a node is run.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// This node's index in every round it joins.
    pub index: u16,
    /// Directory of the HPKE key file ([`crate::node::key::KEY_FILE`]), the spool files and,
    /// by default, the store (`node.sqlite`).
    pub data_dir: PathBuf,
    /// Where the rounds and shares are kept.
    pub store: StoreLocation,
    /// The bearer token the aggregator presents (shared secret).
    pub admin_token: SecretString,
    /// Largest request body accepted at all (bytes); shares are further limited per round.
    pub max_body: usize,
    /// Share bytes the node reads at once, over all uploads in flight (503 beyond).
    pub max_inflight_body: usize,
    /// Time a client has to send a request body once its headers are in (408 after).
    pub body_timeout: Duration,
    /// The clock that decides whether a round's deadline has passed, and when a node sum's
    /// lease expires.
    pub clock: Arc<dyn Clock>,
    /// How long a replica holds a round's lease to compute its node sum without renewing it
    /// (a shared store only): after it dies, another replica takes the sum over this long
    /// after its last renewal.
    pub sum_lease: Duration,
    /// The node operators' shared secret from which each verified round's Prio3 verify key is
    /// derived (every node of a deployment holds the same); without it the node refuses rounds
    /// with a validity mode.
    pub verify_secret: Option<verified::VerifySecret>,
}

impl NodeOptions {
    /// Options with the default limits: 64 MiB per request body and in flight, 30 s per body,
    /// and the SQLite store `node.sqlite` in `data_dir`.
    pub fn new(index: u16, data_dir: PathBuf, admin_token: SecretString) -> Self {
        NodeOptions {
            index,
            store: StoreLocation::Sqlite(data_dir.join("node.sqlite")),
            data_dir,
            admin_token,
            max_body: 64 << 20,
            max_inflight_body: 64 << 20,
            body_timeout: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
            sum_lease: Duration::from_secs(30),
            verify_secret: None,
        }
    }
}

pub use crate::clock::now_ms;

/// Opens the store (rebuilding every round's running sum), starts the store actor, and returns
/// the node's router.
pub fn router(options: &NodeOptions) -> Result<Router> {
    std::fs::create_dir_all(&options.data_dir)?;
    Spool::clean(&options.data_dir)?;
    let keys = load_or_create_key(&options.data_dir)?;
    let at = options.store.clone();
    let (tx, rx) = mpsc::channel();
    let shared = Arc::new(RwLock::new(HashMap::new()));
    let metrics = Metrics::new();
    // Opened and loaded on a thread of its own: the PostgreSQL client blocks on a runtime of
    // its own, which tokio refuses on the async thread this may be called from.
    let open = || -> Result<(Actor, Vec<TokenLookup>)> {
        let mut actor = Actor {
            store: NodeStore::open(&at)?.counted_in(metrics.clone()),
            metrics: metrics.clone(),
            public_key: keys.public.clone(),
            db: at.clone(),
            data_dir: options.data_dir.clone(),
            index: options.index,
            rounds: HashMap::new(),
            shared: shared.clone(),
            tx: tx.clone(),
            clock: options.clock.clone(),
            sum_lease: options.sum_lease,
            holder: replica::lease_holder(),
            verify_secret: options.verify_secret.clone(),
        };
        actor.load()?;
        let lookups = (0..std::thread::available_parallelism().map_or(2, |n| n.get().min(4)))
            .map(|_| TokenLookup::open(&at))
            .collect::<Result<_>>()?;
        Ok((actor, lookups))
    };
    let (actor, lookups) = std::thread::scope(|s| {
        s.spawn(open)
            .join()
            .map_err(|_| crate::Error::Io(std::io::Error::other("opening the store panicked")))
    })??;
    std::thread::Builder::new()
        .name("dpdist-node-store".into())
        .spawn(move || actor.run(rx))?;
    let state = Arc::new(AppState {
        index: options.index,
        keys,
        admin_token_hash: token_hash(options.admin_token.expose()),
        rounds: shared,
        tx: std::sync::Mutex::new(tx),
        data_dir: options.data_dir.clone(),
        max_body: options.max_body,
        share_bytes: BodyBudget::new(options.max_inflight_body),
        body_timeout: options.body_timeout,
        clock: options.clock.clone(),
        metrics: metrics.clone(),
        lookups: lookups.into_iter().map(std::sync::Mutex::new).collect(),
        next_lookup: std::sync::atomic::AtomicUsize::new(0),
        db: at.clone(),
        verify_secret: options.verify_secret.clone(),
    });
    Ok(Router::new()
        .route("/healthz", get(healthz))
        .route("/key", get(public_key))
        .route("/rounds/{id}", put(create_round).get(round_status))
        .route("/rounds/{id}/received", get(received))
        .route("/rounds/{id}/close", post(close))
        .route("/rounds/{id}/verify", post(verified::verify))
        .route("/rounds/{id}/abort", post(abort))
        .route("/rounds/{id}/sum", get(node_sum))
        .route("/rounds/{id}/shares/{client}", put(upload))
        .route("/metrics", get(node_metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            metrics,
            crate::http::metrics::count_responses,
        ))
        .layer(DefaultBodyLimit::max(options.max_body))
        .with_state(state))
}

#[cfg(test)]
mod tls_serving_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use fixedpoint_shares::ClientId;
    use sha2::{Digest, Sha256};
    use share_sealing::NodeKeyPair;

    /// A store written before the token table and the shard column (token hashes in one blob
    /// of the round's row, shares without attempts) is moved over on start-up: every client's
    /// token hash is then found in the table, every share has its attempt, and it loads again.
    #[test]
    fn a_store_from_before_the_token_table_is_moved_over_on_load() {
        use fixedpoint_shares::{Client, Encode};
        let dir = crate::scratch_dir("node-migrate");
        let keys = [NodeKeyPair::generate(), load_or_create_key(&dir).unwrap()];
        let n = 21;
        let mut round = crate::protocol::spec::tests::spec(n, 2, &keys)
            .validate()
            .unwrap();
        // Rounds of that time were named by the SHA-256 of their JSON with the token list
        // inline, and stored that JSON with the list emptied.
        round.hash = crate::protocol::spec::legacy_json_round_id(
            &round.spec,
            round.token_hashes.iter().copied().map(Ok),
        )
        .unwrap();
        let json = round.spec.canonical_json();
        let stored_json = [&json[..json.len() - 1], b",\"client_token_sha256\":[]}"].concat();
        let db = dir.join("node.sqlite");
        let mut shards = Vec::new();
        {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute_batch(
                "CREATE TABLE rounds (id BLOB PRIMARY KEY, round INTEGER NOT NULL UNIQUE,
                     spec BLOB NOT NULL, agreed BLOB, sum BLOB, aborted TEXT, tokens BLOB);
                 CREATE TABLE shares (round_id BLOB NOT NULL, client INTEGER NOT NULL,
                     digest BLOB NOT NULL, message BLOB NOT NULL,
                     PRIMARY KEY (round_id, client)) WITHOUT ROWID;",
            )
            .unwrap();
            conn.execute(
                "INSERT INTO rounds (id, round, spec, tokens) VALUES (?1, 5, ?2, ?3)",
                rusqlite::params![
                    &round.hash[..],
                    stored_json,
                    round.token_hashes.as_flattened()
                ],
            )
            .unwrap();
            for c in [0u64, 3, 20] {
                let msgs = Client::new(
                    &round.config,
                    ClientId(c),
                    dp_noise::rng::RngSource::InsecureFixedSeed(c),
                )
                .unwrap()
                .shard(&[0.5, -1.0, 2.0])
                .unwrap();
                let bytes = msgs[1].get_encoded().unwrap();
                let digest: [u8; 32] = Sha256::digest(&bytes).into();
                conn.execute(
                    "INSERT INTO shares VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![&round.hash[..], c as i64, &digest[..], bytes],
                )
                .unwrap();
                shards.push((c, msgs[1].shard.0));
            }
        }
        let options = NodeOptions {
            max_body: 1 << 20,
            ..NodeOptions::new(1, dir.clone(), SecretString::from("admin".to_string()))
        };
        for _start in 0..2 {
            drop(router(&options).unwrap());
            let at = StoreLocation::Sqlite(db.clone());
            let mut lookup = TokenLookup::open(&at).unwrap();
            for (c, h) in round.token_hashes.iter().enumerate() {
                assert_eq!(lookup.token_hash(&round.hash, c as u64).unwrap(), Some(*h));
            }
            let mut store = NodeStore::open(&at).unwrap();
            let mut attempts = Vec::new();
            store
                .for_each_attempt(&round.hash, |c, s| {
                    attempts.push((c, s));
                    Ok(())
                })
                .unwrap();
            assert_eq!(attempts, shards);
        }
        // Another key in the key file: the node refuses to start rather than serve a key
        // the rounds it holds were not created with.
        let key_file = crate::node::key::key_path(&dir);
        std::fs::remove_file(&key_file).unwrap();
        load_or_create_key(&dir).unwrap();
        match router(&options) {
            Err(Error::Key(m)) => assert!(m.contains("another public key"), "{m}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
