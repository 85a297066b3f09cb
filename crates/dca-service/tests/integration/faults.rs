//! The services under faults: damaged stores, lost close requests and lost database
//! connections. Node and aggregator processes of the `dpdist` binary on loopback, killed on
//! drop; every wait bounded.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::*;
use dca_service::Error;
use dca_service::aggregator::{Aggregator, RoundState};
use dca_service::protocol::job::{JobKind, JobState};
use dca_service::protocol::upload::{put_sealed, seal_for};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode};

const LIMIT: Duration = Duration::from_secs(240);

/// Flips the last byte of a blob in a stopped node's store: `select` reads (rowid, blob).
fn flip_last_byte(data_dir: &Path, table: &str, column: &str, select: &str) {
    let conn = rusqlite::Connection::open(data_dir.join("node.sqlite")).unwrap();
    let (rowid, mut blob): (i64, Vec<u8>) = conn
        .query_row(select, [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    *blob.last_mut().unwrap() ^= 0x10;
    conn.execute(
        &format!("UPDATE {table} SET {column} = ?1 WHERE rowid = ?2"),
        rusqlite::params![blob, rowid],
    )
    .unwrap();
}

fn restart(cluster: &mut Cluster, k: usize) {
    cluster.restart(k);
}

/// Flips the last byte of a stored share (`client` of `round`) or, with `client` `None`, of the
/// round's stored node sum, in stopped node `k`'s store, whichever store the node keeps.
fn flip_stored(
    cluster: &Cluster,
    k: usize,
    round: &dca_service::protocol::spec::Round,
    client: Option<u64>,
) {
    let id = round.id();
    let Some(pg) = &cluster.pg else {
        let (table, column, select) = match client {
            Some(c) => (
                "node_shares",
                "message",
                format!(
                    "SELECT rowid, message FROM node_shares WHERE round_id = X'{id}' AND client = {c}"
                ),
            ),
            None => (
                "node_round_sums",
                "sum",
                format!("SELECT rowid, sum FROM node_round_sums WHERE id = X'{id}'"),
            ),
        };
        flip_last_byte(&cluster.nodes[k].data_dir, table, column, &select);
        return;
    };
    let (table, column, filter) = match client {
        Some(c) => (
            "node_shares",
            "message",
            format!("round_id = '\\x{id}' AND client = {c}"),
        ),
        None => ("node_round_sums", "sum", format!("id = '\\x{id}'")),
    };
    let sql = format!(
        "UPDATE {table} SET {column} = set_byte({column}, length({column}) - 1,
             get_byte({column}, length({column}) - 1) # 16) WHERE {filter}"
    );
    let url = pg.urls[k].clone();
    // The blocking client on a thread of its own: this runs inside the test's runtime.
    let changed = std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.execute(sql.as_str(), &[]).unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(changed, 1);
}

/// One byte flipped in a stored share (node 0's full share of one round, node 1's seed share
/// of another) or in a stored node sum: the node loads, names the round as damaged, refuses to
/// finalize or serve it, and the aggregator releases nothing — never a wrong sum — and records
/// the round as failed with the node's cause.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_share_or_node_sum_is_refused_never_released(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("damaged", 3, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let mut rounds = Vec::new();
        for round_no in [801, 802, 803] {
            let round = agg
                .create_round(spec(round_no, 16, 2, 5, "seed", None, keys.clone()))
                .await
                .unwrap();
            upload_all(&cluster, &round, 0..16).await;
            rounds.push(round);
        }
        // Round 803 closed on every node by hand, so that each stores its node sum.
        let close = fixedpoint_shares::Encode::get_encoded(
            &agg.received_sets(&rounds[2]).await.unwrap()[0],
        )
        .unwrap();
        for url in cluster.urls() {
            let r = cluster
                .http
                .post(format!("{url}/rounds/{}/close", rounds[2].id()))
                .bearer_auth(ADMIN_TOKEN)
                .header("content-type", dca_service::MEDIA_PAIR_SET)
                .body(close.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::ACCEPTED);
        }
        for _ in 0..600 {
            if agg.statuses(&rounds[2]).await.unwrap()[2].sum == "ready" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(agg.statuses(&rounds[2]).await.unwrap()[2].sum, "ready");

        for (k, round, client) in [(0, 0, Some(3)), (1, 1, Some(5)), (2, 2, None)] {
            cluster.nodes[k].kill9();
            flip_stored(&cluster, k, &rounds[round], client);
            restart(&mut cluster, k);
        }

        for (round, node, client) in [
            (&rounds[0], 0, Some(3)),
            (&rounds[1], 1, Some(5)),
            (&rounds[2], 2, None),
        ] {
            let status = agg.statuses(round).await.unwrap().swap_remove(node);
            assert_eq!(
                (status.state.as_str(), status.sum.as_str()),
                ("damaged", "failed"),
                "round {}",
                round.spec.round
            );
            // The node's answer makes the release impossible: the round is failed with it.
            let got = agg.release(round).await;
            let Err(Error::RoundFailed(message)) = &got else {
                panic!("round {}: {got:?}", round.spec.round)
            };
            assert!(message.contains("stored-state-damaged"), "{message}");
            assert!(matches!(
                agg.release(round).await,
                Err(Error::RoundFailed(again)) if again == *message
            ));
            assert_eq!(
                agg.recorded_state(round).unwrap(),
                Some(RoundState::Failed(message.clone()))
            );
            assert!(message.contains("integrity check failed"), "{message}");
            if let Some(client) = client {
                assert!(
                    message.contains(&format!("share of client {client} ")),
                    "{message}"
                );
            }
            let r = cluster
                .http
                .get(format!(
                    "{}/rounds/{}/sum",
                    cluster.nodes[node].url,
                    round.id()
                ))
                .bearer_auth(ADMIN_TOKEN)
                .send()
                .await
                .unwrap();
            assert_ne!(r.status(), StatusCode::OK);
        }
        // The undamaged rounds of the same nodes are not affected: a fresh round releases.
        let round = agg
            .create_round(spec(804, 16, 2, 5, "seed", None, keys.clone()))
            .await
            .unwrap();
        upload_all(&cluster, &round, 0..16).await;
        let net = agg.release(&round).await.unwrap();
        assert_eq!(net.sum_units, in_process(&round, &[]).sum_units);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A plain-HTTP proxy in front of a node that loses the first close request of each round.
async fn close_dropping_proxy(http: reqwest::Client, target: String) -> String {
    let dropped = Mutex::new(HashSet::new());
    failing_proxy(http, target, move |path| {
        path.ends_with("/close") && dropped.lock().unwrap().insert(path.to_string())
    })
    .await
}

/// Node 0 closed with the agreed set S, the close to node 1 lost; a client whose share had only
/// reached node 0 then reaches nodes 1 and 2. The aggregator sends the S it recorded before the
/// first close — not S plus the late client, which node 0 would refuse forever — and the round
/// releases the exact sum over S.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_close_and_a_late_client_do_not_leave_the_round_stuck(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("lostclose", 3, store) else {
            return;
        };
        let proxy = close_dropping_proxy(cluster.http.clone(), cluster.nodes[1].url.clone()).await;
        let urls = vec![
            cluster.nodes[0].url.clone(),
            proxy,
            cluster.nodes[2].url.clone(),
        ];
        let agg = Aggregator::open(
            &cluster.dir.join("agg.sqlite"),
            cluster.http.clone(),
            urls.clone(),
            ADMIN_TOKEN.to_string(),
            PrivacyLoss {
                epsilon: 10.0,
                delta: 1e-5,
            },
        )
        .unwrap();
        let keys = agg.node_keys().await.unwrap();
        for (round_no, mode) in [(811, "seed"), (812, "full")] {
            let round = agg
                .create_round(spec(round_no, 16, 2, 5, mode, None, keys.clone()))
                .await
                .unwrap();
            upload_all(&cluster, &round, 0..15).await;
            let late = 15u64;
            let messages = Client::new(
                &round.config,
                ClientId(late),
                RngSource::InsecureFixedSeed(SEED).derive(late),
            )
            .unwrap()
            .shard(&values(late as usize, 5))
            .unwrap();
            let sealed: Vec<Vec<u8>> = messages
                .iter()
                .enumerate()
                .map(|(k, m)| seal_for(&round, late, k as u16, &m.get_encoded().unwrap()).unwrap())
                .collect();
            let (id, token) = (round.id(), client_token(late));
            let put = |k: usize| {
                put_sealed(
                    &cluster.http,
                    &cluster.nodes[k].url,
                    &id,
                    late,
                    &token,
                    sealed[k].clone(),
                )
            };
            assert_eq!(put(0).await.unwrap().0, StatusCode::CREATED);
            // Node 0 closes with clients 0..15; the close to node 1 is dropped.
            let first = agg.release(&round).await;
            assert!(
                matches!(&first, Err(Error::Http(m)) if m.contains("dropped by the test proxy")),
                "{first:?}"
            );
            // The late client reaches the two nodes that are still open.
            assert_eq!(put(1).await.unwrap().0, StatusCode::CREATED);
            assert_eq!(put(2).await.unwrap().0, StatusCode::CREATED);
            let net = agg.release(&round).await.unwrap();
            let local = in_process(&round, &[late]);
            assert_eq!(net.sum_units, local.sum_units, "{mode}");
            assert_eq!(bits(&net.sum), bits(&local.sum), "{mode}");
            assert_eq!(net.clients, (0..15).collect::<Vec<u64>>());
            assert!(matches!(
                agg.release(&round).await,
                Err(Error::AlreadyReleased)
            ));
        }
    })
    .await
    .expect("test exceeded its time limit");
}

/// A `sum` job of three participants over two nodes, whose columns every participant shares.
fn sum_job(roster: usize) -> dca_service::protocol::job::JobSpec {
    use dca_service::protocol::job::ColumnBounds;
    let column = |name: &str| ColumnBounds {
        name: name.into(),
        lo: -2.0,
        hi: 2.0,
        group: None,
    };
    dca_service::protocol::job::JobSpec {
        kind: JobKind::Sum,
        target: column("y"),
        features: vec![column("x")],
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..roster)
            .map(|i| {
                dca_service::hex::encode(&dca_service::protocol::spec::token_hash(
                    &common::jobs::participant_token(i),
                ))
            })
            .collect(),
        max_rows: 2,
        answer_window_ms: 60_000,
        upload_window_ms: 120_000,
        created_unix_ms: dca_service::node::now_ms(),
        public_seed: Some(SEED),
        clipped_share: None,
        validity: None,
        train: None,
    }
}

/// The time of day (ms) of a log line stamped `2026-11-28T17:14:26.985778Z …`.
fn ms_of_day(line: &str) -> Option<i64> {
    let time = line.get(11..23)?;
    let (h, m, s) = (time.get(0..2)?, time.get(3..5)?, time.get(6..12)?);
    let s: f64 = s.parse().ok()?;
    Some(h.parse::<i64>().ok()? * 3_600_000 + m.parse::<i64>().ok()? * 60_000 + (s * 1e3) as i64)
}

/// The time of day (ms, UTC) of `t`.
fn ms_of_day_now(t: std::time::SystemTime) -> i64 {
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    (ms % 86_400_000) as i64
}

/// Whether log line `line` is about round number `round` (`round=N`) or hex id `id`.
fn mentions_round(line: &str, round: u64, id: &str) -> bool {
    let field = format!("round={round}");
    line.contains(id)
        || line
            .match_indices(&field)
            .any(|(at, _)| !line[at + field.len()..].starts_with(|c: char| c.is_ascii_digit()))
}

/// A job's round is recorded `closing` by the aggregator process while node 0 cannot be told
/// (a proxy loses its close requests); node 0 is then killed, one stored share of the round
/// damaged, and node 0 restarted. Node 0 answers the next close with `stored-state-damaged`:
/// the round is recorded `failed` with that cause at once (seen by the analyst in
/// `GET /rounds/{id}` and as a problem document from `GET …/release`, not 202 forever), the job
/// ends `failed` with the cause within a poll or so, and the aggregator's log holds a bounded
/// number of lines about the round: its retries while node 0 was away back off, and nothing is
/// retried once it failed. (Before: the round stayed `closing` for good, retried and logged on
/// every poll, and the job stayed `running`.)
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_whose_release_became_impossible_fails_and_ends_its_job(#[case] store: Store) {
    use common::jobs::{ParticipantProcess, create_job, job_view, participant_files};
    use std::sync::atomic::AtomicBool;
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("failedround", 2, store) else {
            return;
        };
        // Node 0 behind a proxy that loses its close requests while `hold` is set; the moment
        // a close goes through to it again is kept.
        let hold = Arc::new(AtomicBool::new(true));
        let passed: Arc<Mutex<Option<(Instant, std::time::SystemTime)>>> =
            Arc::new(Mutex::new(None));
        let proxy_url = {
            let (hold, passed) = (hold.clone(), passed.clone());
            proxy(
                cluster.http.clone(),
                cluster.nodes[0].url.clone(),
                move |path| {
                    if !path.ends_with("/close") {
                        return None;
                    }
                    if hold.load(SeqCst) {
                        return Some((StatusCode::BAD_GATEWAY, "close lost by the test proxy"));
                    }
                    passed
                        .lock()
                        .unwrap()
                        .get_or_insert_with(|| (Instant::now(), std::time::SystemTime::now()));
                    None
                },
            )
            .await
        };
        let log_path = cluster.dir.join("aggregator.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let nodes = vec![proxy_url, cluster.nodes[1].url.clone()];
        let poll = Duration::from_millis(50);
        let aggregator = AggregatorProcess::start_logged(
            &cluster,
            "aggregator.sqlite",
            10.0,
            "127.0.0.1:0",
            &nodes,
            &[],
            log.into(),
        );
        let spec = sum_job(3);
        let job = create_job(&cluster, &aggregator.url, &spec).await;
        let policy = "columns = [\"x\", \"y\"]\nmax_epsilon_per_job = 2.0\ntotal_epsilon = 10.0\n";
        let participants: Vec<ParticipantProcess> = (0..3)
            .map(|i| {
                let rows = [format!("{},{}", 0.25 * i as f64, 1.0 - 0.5 * i as f64)];
                let own = participant_files(&cluster.dir, i, "x,y", &rows, policy);
                ParticipantProcess::start(&cluster, &aggregator.url, &own, &job)
            })
            .collect();

        // The job's round, recorded closing (its close to node 0 lost so far).
        let (http, url) = (cluster.http.clone(), aggregator.url.clone());
        let round_state = |id: String| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let r = http
                    .get(format!("{url}/rounds/{id}"))
                    .bearer_auth(ANALYST_TOKEN)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), StatusCode::OK);
                r.json::<serde_json::Value>().await.unwrap()
            }
        };
        let started = Instant::now();
        let round = loop {
            let view = job_view(&cluster, &aggregator.url, &job).await;
            if let Some(r) = view.status.rounds.first()
                && round_state(r.id.clone()).await["state"] == "closing"
            {
                break dca_service::protocol::job::view::ParticipantRound::spec_for(r, &spec)
                    .unwrap()
                    .validate()
                    .unwrap();
            }
            assert!(view.status.is_live(), "{:?}", view.status);
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the job's round was not recorded closing"
            );
            tokio::time::sleep(poll).await;
        };
        let id = round.id();

        cluster.nodes[0].kill9();
        flip_stored(&cluster, 0, &round, Some(1));
        restart(&mut cluster, 0);
        hold.store(false, SeqCst);
        let let_through = Instant::now();

        // Failed at node 0's answer, seen by the analyst as such.
        let failed = loop {
            let state = round_state(id.clone()).await;
            if state["state"] != "closing" {
                break state;
            }
            assert!(
                let_through.elapsed() < Duration::from_secs(30),
                "the round stayed closing after node 0 reported it damaged"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let round_failed_at = Instant::now();
        assert_eq!(failed["state"], "failed", "{failed}");
        let cause = failed["reason"].as_str().unwrap_or_default().to_string();
        assert!(
            cause.contains("stored-state-damaged") && cause.contains("integrity check failed"),
            "{cause}"
        );
        let r = cluster
            .http
            .get(format!("{}/rounds/{id}/release", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT);
        let problem: dca_service::http::problem::ProblemDocument = r.json().await.unwrap();
        assert_eq!(problem.type_uri, "urn:dpdist:problem:round-failed");
        assert!(
            problem.detail.contains("integrity check failed"),
            "{problem:?}"
        );

        // The job ends failed with the cause.
        let view = loop {
            let view = job_view(&cluster, &aggregator.url, &job).await;
            if !view.status.is_live() {
                break view;
            }
            assert!(
                round_failed_at.elapsed() < Duration::from_secs(30),
                "the job is still {} after its round failed",
                view.status.state
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let job_ended_at = Instant::now();
        assert_eq!(
            view.status.state,
            JobState::Failed,
            "{:?}",
            view.status.reason
        );
        let reason = view.status.reason.clone().unwrap_or_default();
        assert!(
            reason.contains(&id) && reason.contains("integrity check failed"),
            "{reason}"
        );
        let (passed, passed_at) = passed.lock().unwrap().expect("a close reached node 0");
        eprintln!(
            "store {store:?}: the close went through to node 0 at +0 ms; the analyst saw the \
             round failed at +{} ms and the job failed at +{} ms (poll {} ms)",
            round_failed_at.duration_since(passed).as_millis(),
            job_ended_at.duration_since(passed).as_millis(),
            poll.as_millis()
        );

        // Twenty more polls: nothing more about the round in the log.
        tokio::time::sleep(poll * 20).await;
        drop(participants);
        drop(aggregator);
        let log = std::fs::read_to_string(&log_path).unwrap();
        let about: Vec<&str> = log
            .lines()
            .filter(|l| mentions_round(l, round.spec.round, &id))
            .collect();
        let after_failure = about
            .iter()
            .skip_while(|l| !l.contains("round failed"))
            .count();
        eprintln!(
            "store {store:?}: {} log lines about round {} ({} from its failure on):\n{}",
            about.len(),
            round.spec.round,
            after_failure,
            about.join("\n")
        );
        assert!(after_failure >= 1, "the failure is logged:\n{log}");
        assert!(
            after_failure <= 3,
            "the round is still worked on after it failed:\n{}",
            about.join("\n")
        );
        assert!(about.len() <= 40, "{}", about.join("\n"));
        // When the aggregator recorded the failure and the job's end, by its log's clock (the
        // machine's, as the proxy's): from the close going through to node 0.
        let logged = |what: &str| {
            about
                .iter()
                .find(|l| l.contains(what))
                .and_then(|l| ms_of_day(l))
                .map(|at| (at - ms_of_day_now(passed_at)).rem_euclid(86_400_000))
        };
        eprintln!(
            "store {store:?}: by the aggregator's log, the round failed {:?} ms and its job \
             {:?} ms after the close went through to node 0",
            logged("round failed"),
            logged("job failed")
        );
    })
    .await
    .expect("test exceeded its time limit");
}

/// The aggregator's database in the lost-connection test (named like the SQLite file it stands
/// for).
const CUT_AGGREGATOR_DB: &str = "aggregator.sqlite";

/// Terminates every session on the databases at `urls` (as a PostgreSQL restart, a failover or
/// a firewall would), each waited for until it is gone; how many each database had. The shared
/// test server keeps running: other tests use it.
fn cut_connections(urls: &[String]) -> Vec<usize> {
    let admin = postgres_admin_url("cut_connections").expect("a PostgreSQL test");
    let names: Vec<String> = urls
        .iter()
        .map(|u| u.rsplit('/').next().unwrap().to_string())
        .collect();
    // The blocking client must not run on the test's async threads.
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        let cut: Vec<String> = c
            .query(
                // Materialized first: the terminations never see another test's sessions.
                "WITH doomed AS MATERIALIZED (
                     SELECT pid, datname FROM pg_stat_activity
                     WHERE datname = ANY($1) AND pid <> pg_backend_pid()
                 )
                 SELECT datname FROM doomed WHERE pg_terminate_backend(pid, 5000)",
                &[&names],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        names
            .iter()
            .map(|name| cut.iter().filter(|c| *c == name).count())
            .collect()
    })
    .join()
    .unwrap()
}

/// Restarts the cluster in `DPDIST_PG_DIR` (`pg_ctl restart -m fast`, as its owner): every
/// session of every database on it is closed, and connections are refused until it is back.
/// Only for a cluster of the caller's own (`scripts/pg-restart-drill.sh`).
fn restart_postgres() {
    let dir = std::env::var("DPDIST_PG_DIR").expect("DPDIST_PG_DIR, from scripts/pg-start.sh");
    let pg_ctl = std::fs::read_dir("/usr/lib/postgresql")
        .expect("Debian's postgresql package")
        .filter_map(|e| Some(e.ok()?.path().join("bin/pg_ctl")))
        .filter(|p| p.exists())
        .max()
        .expect("pg_ctl under /usr/lib/postgresql/*/bin");
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    // PostgreSQL refuses to run as root: pg-start.sh gave the cluster to `postgres` then.
    let mut command = if root {
        let mut c = std::process::Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&pg_ctl);
        c
    } else {
        std::process::Command::new(&pg_ctl)
    };
    let status = command
        .args([
            "-D",
            &format!("{dir}/data"),
            "-l",
            &format!("{dir}/server.log"),
        ])
        .args(["-m", "fast", "-w", "-t", "60", "restart"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("pg_ctl runs");
    assert!(status.success(), "pg_ctl restart: {status}");
}

/// How the test takes the databases away from the processes.
#[derive(Clone, Copy)]
enum Cut {
    /// `pg_terminate_backend` of every session of the test's databases.
    Terminate,
    /// A restart of the whole cluster ([`restart_postgres`]).
    Restart,
}

impl Cut {
    /// Cuts the sessions of `databases` (off the test's async threads).
    async fn apply(self, databases: &[String]) {
        let databases = databases.to_vec();
        tokio::task::spawn_blocking(move || match self {
            Cut::Terminate => {
                let cut = cut_connections(&databases);
                eprintln!("sessions cut per database {cut:?}");
                assert!(
                    cut.iter().all(|&k| k > 0),
                    "every process had a session: {cut:?}"
                );
            }
            Cut::Restart => restart_postgres(),
        })
        .await
        .unwrap();
    }
}

/// `sql`'s one number, read from the aggregator's database.
fn count_in_aggregator_db(url: String, sql: &'static str) -> i64 {
    std::thread::spawn(move || {
        postgres::Client::connect(&url, postgres::NoTls)
            .unwrap()
            .query_one(sql, &[])
            .unwrap()
            .get(0)
    })
    .join()
    .unwrap()
}

/// The analyst asks `aggregator` to release `round` and waits for the release (at most 120 s),
/// asking again after an answer 5xx (the aggregator's store was unreachable for a moment).
/// Once asked (202, or 409 released by the aggregator's own pass meanwhile), the release is
/// read with GET.
async fn release_retrying(
    cluster: &Cluster,
    aggregator: &str,
    round: &dca_service::protocol::spec::Round,
) -> dca_service::aggregator::PublishedRelease {
    let until = Instant::now() + Duration::from_secs(120);
    let url = format!("{aggregator}/rounds/{}/release", round.id());
    let mut asked = false;
    loop {
        assert!(Instant::now() < until, "no release within 120 s");
        let request = if asked {
            cluster.http.get(&url)
        } else {
            cluster.http.post(&url)
        };
        let r = request.bearer_auth(ANALYST_TOKEN).send().await.unwrap();
        match r.status() {
            StatusCode::OK => return r.json().await.unwrap(),
            StatusCode::ACCEPTED => asked = true,
            // The aggregator's own pass, sharing the release begun by the request, won.
            StatusCode::CONFLICT if !asked => asked = true,
            s if s.is_server_error() => {
                eprintln!("release: {s}: {}", r.text().await.unwrap_or_default());
            }
            s => panic!("release: {s}: {}", r.text().await.unwrap_or_default()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// PostgreSQL only (its sessions can be cut under a running process): three nodes and an
/// aggregator process, each on a database of its own. Every session of those databases is
/// terminated in the middle of the uploads, and again just before the release: the stores
/// connect again, the clients' retries finish the uploads, and the release equals the
/// in-process round bit for bit, released once and charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_services_connect_again_when_postgres_cuts_their_connections() {
    services_survive(Cut::Terminate, "pgcut").await;
}

/// The same with the whole cluster restarted (`pg_ctl restart -m fast`) instead: run by
/// `scripts/pg-restart-drill.sh` on a cluster of its own, never on the shared test server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "restarts the PostgreSQL cluster in DPDIST_PG_DIR: scripts/pg-restart-drill.sh"]
async fn the_services_connect_again_after_a_postgres_restart() {
    services_survive(Cut::Restart, "pgrestart").await;
}

async fn services_survive(how: Cut, name: &str) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on(name, 3, Store::Postgres) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, CUT_AGGREGATOR_DB, 10.0);
        let pg = cluster.pg.as_ref().unwrap();
        let aggregator_db = pg.aggregator_url(CUT_AGGREGATOR_DB);
        let mut databases = pg.urls.clone();
        databases.push(aggregator_db.clone());
        let keys = cluster
            .aggregator("probe.sqlite")
            .node_keys()
            .await
            .unwrap();
        // Client 59 never uploads: the round stays open until the analyst asks for it.
        let n = 60u64;
        let round = spec(931, n as usize, 2, 5, "full", Some(1.5), keys)
            .validate()
            .unwrap();
        let created = cluster
            .http
            .put(format!("{}/rounds/{}", aggregator.url, round.id()))
            .bearer_auth(ANALYST_TOKEN)
            .header("content-type", dca_service::MEDIA_ROUND_CONFIG)
            .body(round.config_bytes().unwrap())
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(created, StatusCode::CREATED);
        upload_all(&cluster, &round, 0..20).await;

        // Clients 20..40 start uploading; once one is done the sessions are cut, while the
        // rest are in flight; clients 40..59 start after the cut.
        let done = Arc::new(AtomicUsize::new(0));
        let mut uploads = tokio::task::JoinSet::new();
        let spawn_upload = |uploads: &mut tokio::task::JoinSet<_>, i: u64| {
            let (http, round, urls, done) = (
                cluster.http.clone(),
                round.clone(),
                cluster.urls(),
                done.clone(),
            );
            uploads.spawn(async move {
                let v = values(i as usize, round.config.dim());
                let rng = RngSource::InsecureFixedSeed(SEED).derive(i);
                let r = dca_service::protocol::upload::upload(
                    &http,
                    &round,
                    &urls,
                    i,
                    &client_token(i),
                    &v,
                    rng,
                )
                .await;
                done.fetch_add(1, SeqCst);
                r
            });
        };
        for i in 20..40 {
            spawn_upload(&mut uploads, i);
        }
        let until = Instant::now() + Duration::from_secs(60);
        while done.load(SeqCst) < 1 {
            assert!(Instant::now() < until, "no upload finished");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let before = done.load(SeqCst);
        how.apply(&databases).await;
        eprintln!("{before} of 20 uploads were done before the cut");
        for i in 40..n - 1 {
            spawn_upload(&mut uploads, i);
        }
        while let Some(r) = uploads.join_next().await {
            r.unwrap().unwrap();
        }

        how.apply(&databases).await;
        let released = release_retrying(&cluster, &aggregator.url, &round).await;
        let local = in_process(&round, &[n - 1]);
        assert_eq!(released.sum_units, local.sum_units);
        assert_eq!(bits(&released.sum), bits(&local.sum));
        assert_eq!(released.clients, (0..n - 1).collect::<Vec<u64>>());
        assert_eq!(
            count_in_aggregator_db(
                aggregator_db.clone(),
                "SELECT count(*) FROM agg_rounds WHERE state = 'released'"
            ),
            1
        );
        assert_eq!(
            count_in_aggregator_db(aggregator_db, "SELECT count(*) FROM agg_charges"),
            1
        );
    })
    .await
    .expect("test exceeded its time limit");
}
