//! Two `dpdist aggregator` processes on one PostgreSQL database, over the same three node
//! processes: the analyst's requests spread over both, and one of them killed (`kill -9`) in
//! the middle of a release. Each round is released once, equal bit for bit to the in-process
//! round, and charged once. Then all of it at once: two replicas of each node behind loopback
//! balancers and two aggregators, one node replica killed mid-upload and the aggregator holding
//! the round's release lease killed mid-release. Loopback only; every process is killed when
//! its guard drops; every wait is bounded. Without `DPDIST_TEST_POSTGRES` the tests say so and
//! pass (fail under CI).

#![allow(missing_docs)]

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::replicas::*;
use common::*;
use dca_service::aggregator::PublishedRelease;
use dca_service::protocol::spec::Round;
use reqwest::StatusCode;

const LIMIT: Duration = Duration::from_secs(300);

/// The one aggregator database both processes share (named like the SQLite file it stands for).
const SHARED: &str = "aggregator.sqlite";

/// `f` on a connection to the shared database.
fn in_shared_db<T: Send + 'static>(
    cluster: &Cluster,
    f: impl FnOnce(&mut postgres::Client) -> T + Send + 'static,
) -> T {
    in_aggregator_db(cluster, SHARED, f)
}

/// The rows of `agg_charges` in the shared database: (charge id, ρ), oldest first.
fn charges(cluster: &Cluster) -> Vec<(String, f64)> {
    in_shared_db(cluster, |c| {
        c.query("SELECT id, rho FROM agg_charges ORDER BY seq", &[])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    })
}

/// The holder of `round`'s release lease as the shared database records it, if any.
fn release_lease_holder(cluster: &Cluster, round: &Round) -> Option<String> {
    let id = round.id();
    in_shared_db(cluster, move |c| {
        c.query_opt(
            "SELECT holder FROM agg_release_leases WHERE round_id = $1",
            &[&id],
        )
        .unwrap()
        .map(|r| r.get(0))
    })
}

/// How many rounds the shared database records as released.
fn released_rounds(cluster: &Cluster) -> i64 {
    in_shared_db(cluster, |c| {
        c.query_one(
            "SELECT count(*) FROM agg_rounds WHERE state = 'released'",
            &[],
        )
        .unwrap()
        .get(0)
    })
}

async fn create(cluster: &Cluster, aggregator: &str, round: &Round) -> StatusCode {
    cluster
        .http
        .put(format!("{aggregator}/rounds/{}", round.id()))
        .bearer_auth(ANALYST_TOKEN)
        .header("content-type", dca_service::MEDIA_ROUND_CONFIG)
        .body(round.config_bytes().unwrap())
        .send()
        .await
        .unwrap()
        .status()
}

async fn state(cluster: &Cluster, aggregator: &str, round: &Round) -> String {
    let v: serde_json::Value = cluster
        .http
        .get(format!("{aggregator}/rounds/{}", round.id()))
        .bearer_auth(ANALYST_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["state"].as_str().unwrap_or_default().to_string()
}

async fn post_release(cluster: &Cluster, aggregator: &str, round: &Round) -> StatusCode {
    cluster
        .http
        .post(format!("{aggregator}/rounds/{}/release", round.id()))
        .bearer_auth(ANALYST_TOKEN)
        .send()
        .await
        .unwrap()
        .status()
}

async fn get_release_status(cluster: &Cluster, aggregator: &str, round: &Round) -> StatusCode {
    cluster
        .http
        .get(format!("{aggregator}/rounds/{}/release", round.id()))
        .bearer_auth(ANALYST_TOKEN)
        .send()
        .await
        .unwrap()
        .status()
}

/// The round's release as `aggregator` serves it, waited for (at most 120 s).
async fn release(cluster: &Cluster, aggregator: &str, round: &Round) -> PublishedRelease {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let r = cluster
            .http
            .get(format!("{aggregator}/rounds/{}/release", round.id()))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        match r.status() {
            StatusCode::OK => return r.json().await.unwrap(),
            StatusCode::ACCEPTED if Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            s => panic!("release of round {}: {s}", round.spec.round),
        }
    }
}

/// Both processes are asked to create and to release every round, at once; whichever wins,
/// each round has one release, the same from both, equal to the in-process round, and one
/// charge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_aggregators_on_one_database_release_each_round_once_and_charge_it_once() {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("agg-replicas", 3, Store::Postgres) else {
            return;
        };
        let a = AggregatorProcess::start(&cluster, SHARED, 10.0);
        let b = AggregatorProcess::start(&cluster, SHARED, 10.0);
        let keys = cluster.aggregator(SHARED).node_keys().await.unwrap();
        let mut ids = Vec::new();
        for (number, mode) in [(901, "seed"), (902, "full"), (903, "seed")] {
            let round = spec(number, 12, 2, 4, mode, Some(1.5), keys.clone())
                .validate()
                .unwrap();
            ids.push(round.id());
            assert_eq!(create(&cluster, &a.url, &round).await, StatusCode::CREATED);
            // The other process knows the round from the database.
            assert_eq!(create(&cluster, &b.url, &round).await, StatusCode::OK);
            upload_all(&cluster, &round, 0..11).await;
            let (from_a, from_b) = tokio::join!(
                post_release(&cluster, &a.url, &round),
                post_release(&cluster, &b.url, &round)
            );
            for s in [from_a, from_b] {
                // The loser of the race (or both, if a server's own pass won) is told that the
                // round is released already, or in progress under the other's release lease.
                assert!(
                    s == StatusCode::OK || s == StatusCode::CONFLICT || s == StatusCode::ACCEPTED,
                    "round {number}: {s}"
                );
            }
            let (ra, rb) = (
                release(&cluster, &a.url, &round).await,
                release(&cluster, &b.url, &round).await,
            );
            let local = in_process(&round, &[11]);
            for r in [&ra, &rb] {
                assert_eq!(r.sum_units, local.sum_units, "round {number}");
                assert_eq!(bits(&r.sum), bits(&local.sum), "round {number}");
                assert_eq!(r.clients, (0..11).collect::<Vec<u64>>());
            }
            assert_eq!(ra.spent_epsilon.to_bits(), rb.spent_epsilon.to_bits());
        }
        // One charge per round, named by the round's id, in the order they closed.
        let recorded: Vec<String> = charges(&cluster).into_iter().map(|(id, _)| id).collect();
        assert_eq!(recorded, ids);
    })
    .await
    .expect("test exceeded its time limit");
}

/// Aggregator A closes a round (agreed set and charge recorded) but cannot fetch node 1's sum
/// (a proxy loses every sum request), and is killed (`kill -9`) while it keeps trying. B, on
/// the same database and never asked about the round, finishes it from the store: the release
/// equals the in-process round over the set A recorded, and the round is charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_aggregator_finishes_a_release_whose_closer_was_killed() {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("agg-takeover", 3, Store::Postgres) else {
            return;
        };
        let proxy = failing_proxy(cluster.http.clone(), cluster.urls()[1].clone(), |path| {
            path.ends_with("/sum")
        })
        .await;
        let nodes = [cluster.urls()[0].clone(), proxy, cluster.urls()[2].clone()];
        let mut a =
            AggregatorProcess::start_with_nodes(&cluster, SHARED, 10.0, "127.0.0.1:0", &nodes);
        let keys = cluster.aggregator(SHARED).node_keys().await.unwrap();
        let round = spec(911, 12, 2, 4, "full", Some(1.5), keys)
            .validate()
            .unwrap();
        assert_eq!(create(&cluster, &a.url, &round).await, StatusCode::CREATED);
        upload_all(&cluster, &round, 0..12).await;
        // A's own pass closes the round as soon as every client is in, then fails on the sum.
        let until = Instant::now() + Duration::from_secs(60);
        while state(&cluster, &a.url, &round).await != "closing" {
            assert!(Instant::now() < until, "A did not close the round");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(charges(&cluster).len(), 1);
        a.child.kill().unwrap();
        a.child.wait().unwrap();

        let b = AggregatorProcess::start(&cluster, SHARED, 10.0);
        let released = release(&cluster, &b.url, &round).await;
        let local = in_process(&round, &[]);
        assert_eq!(released.sum_units, local.sum_units);
        assert_eq!(bits(&released.sum), bits(&local.sum));
        assert_eq!(released.clients, (0..12).collect::<Vec<u64>>());
        assert_eq!(state(&cluster, &b.url, &round).await, "released");
        let recorded = charges(&cluster);
        assert_eq!(recorded.len(), 1, "{recorded:?}");
        assert_eq!(recorded[0].0, round.id());
    })
    .await
    .expect("test exceeded its time limit");
}

/// The release lease's length the combined test gives its aggregators (ms): long enough that a
/// busy machine renews it in time (every third of it), short enough to wait out.
const LEASE_MS: &str = "4000";

/// The close and node-sum requests one aggregator process sent (through its node proxies),
/// by path: counted per round, since a second drive of a round within one process (its own
/// pass beside an analyst's request, sharing its lease) may still be polling a node sum of
/// that round after the first recorded the release.
#[derive(Default)]
struct NodeCalls {
    paths: Mutex<Vec<String>>,
}

impl NodeCalls {
    /// (close requests, node-sum requests) for round `id`.
    fn seen(&self, id: &str) -> (usize, usize) {
        let paths = self.paths.lock().unwrap();
        let of = |end: &str| {
            paths
                .iter()
                .filter(|p| p.ends_with(&format!("/rounds/{id}/{end}")))
                .count()
        };
        (of("close"), of("sum"))
    }
}

/// One proxy per node balancer for one aggregator process: counts its close and node-sum
/// requests, and answers its node-sum requests 202 itself while `held` (the sum looks not
/// ready, so the aggregator stays in the middle of its release).
async fn counted_nodes(
    rc: &ReplicatedCluster,
    held: &Arc<AtomicBool>,
    calls: &Arc<NodeCalls>,
) -> Vec<String> {
    let mut urls = Vec::new();
    for url in rc.urls() {
        let (held, calls) = (held.clone(), calls.clone());
        urls.push(
            proxy(rc.cluster.http.clone(), url, move |path| {
                calls.paths.lock().unwrap().push(path.to_string());
                if path.ends_with("/sum") && held.load(SeqCst) {
                    return Some((StatusCode::ACCEPTED, "held by the test proxy"));
                }
                None
            })
            .await,
        );
    }
    urls
}

/// Two replicas of each of three nodes (PostgreSQL, behind loopback balancers) and two
/// aggregators on one database; clients spread over the node replicas, analyst requests over
/// the aggregators. A first round: one release, equal bit for bit to the in-process round,
/// one charge, and only one aggregator contacts the nodes to close it and fetch its sums. A
/// second round: one node replica killed (`kill -9`) mid-upload, then the aggregator holding
/// the round's release lease (found from the lease row) killed mid-release while the other
/// answers the analyst "in progress" (202) and contacts no node; the other takes the lease
/// over once it expires and releases the exact sum of every client, once, charged once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicated_nodes_and_aggregators_survive_kill_9_of_a_node_replica_and_the_release_lease_holder()
 {
    tokio::time::timeout(LIMIT, async {
        let node_args = ["--max-body", "1048576", "--sum-lease-ms", "1500"];
        let Some(mut rc) = ReplicatedCluster::start("combined", 3, 2, &node_args).await else {
            return;
        };
        let held = Arc::new(AtomicBool::new(false));
        let calls = [
            Arc::new(NodeCalls::default()),
            Arc::new(NodeCalls::default()),
        ];
        let mut aggs = Vec::new();
        for c in &calls {
            let nodes = counted_nodes(&rc, &held, c).await;
            aggs.push(AggregatorProcess::start_with_args(
                &rc.cluster,
                SHARED,
                10.0,
                "127.0.0.1:0",
                &nodes,
                &["--release-lease-ms", LEASE_MS],
            ));
        }
        let probe = rc.aggregator("probe.sqlite");
        let keys = probe.node_keys().await.unwrap();

        // A round without faults: the analyst asks both aggregators for the release at once.
        let first = spec(961, 12, 2, 4, "seed", Some(1.5), keys.clone())
            .validate()
            .unwrap();
        assert_eq!(
            create(&rc.cluster, &aggs[0].url, &first).await,
            StatusCode::CREATED
        );
        assert_eq!(
            create(&rc.cluster, &aggs[1].url, &first).await,
            StatusCode::OK
        );
        for i in 0..12 {
            upload_one(
                &rc.cluster.http,
                &first,
                &rc.replica_urls(i as usize % 2),
                i,
            )
            .await
            .unwrap();
        }
        let (from_0, from_1) = tokio::join!(
            post_release(&rc.cluster, &aggs[0].url, &first),
            post_release(&rc.cluster, &aggs[1].url, &first)
        );
        for s in [from_0, from_1] {
            assert!(
                [StatusCode::OK, StatusCode::ACCEPTED, StatusCode::CONFLICT].contains(&s),
                "{s}"
            );
        }
        let local = in_process(&first, &[]);
        for agg in &aggs {
            let r = release(&rc.cluster, &agg.url, &first).await;
            assert_eq!(r.sum_units, local.sum_units);
            assert_eq!(bits(&r.sum), bits(&local.sum));
            assert_eq!(r.clients, (0..12).collect::<Vec<u64>>());
        }
        let seen: Vec<(usize, usize)> = calls.iter().map(|c| c.seen(&first.id())).collect();
        assert_eq!(
            seen.iter()
                .filter(|&&(closes, sums)| closes + sums > 0)
                .count(),
            1,
            "one aggregator drives the release (close and sum requests per aggregator: {seen:?})"
        );
        assert_eq!(
            pid_of(&release_lease_holder(&rc.cluster, &first).expect("a lease row")),
            aggs[seen.iter().position(|&(c, _)| c > 0).unwrap()]
                .child
                .id()
        );

        // A round with faults; every node sum request is held (202) until the holder is dead.
        held.store(true, SeqCst);
        let n = 200u64;
        let second = spec(962, n as usize, 3, 5, "full", Some(1.5), keys)
            .validate()
            .unwrap();
        assert_eq!(
            create(&rc.cluster, &aggs[1].url, &second).await,
            StatusCode::CREATED
        );
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n / 2 {
            let (http, round, urls) = (
                rc.cluster.http.clone(),
                second.clone(),
                rc.replica_urls(i as usize % 2),
            );
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        // The second half through the balancers while replica 1 of node 1 is killed.
        for i in n / 2..n {
            let (http, round, urls) = (rc.cluster.http.clone(), second.clone(), rc.urls());
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        let mut at_kill = 0;
        for _ in 0..2000 {
            at_kill = probe.statuses(&second).await.unwrap()[1].received;
            if at_kill > n as usize / 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        rc.replica_mut(1, 1).kill9();
        eprintln!("node 1 replica 1 killed with {at_kill} of {n} shares stored");
        assert!(
            at_kill < n as usize,
            "the kill came after the uploads, not in the middle"
        );
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        // Every client again (unsure of its first attempt): nothing changes. The aggregators'
        // passes may close the round meanwhile (every client is in): a node then refuses the
        // repeat with 409, which changes nothing either.
        for i in 0..n {
            let (http, round, urls) = (rc.cluster.http.clone(), second.clone(), rc.urls());
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        while let Some(r) = tasks.join_next().await {
            match r.unwrap() {
                Ok(()) => {}
                Err(dca_service::Error::Http(m))
                    if m.contains("409") && m.contains("round-closed") => {}
                Err(e) => panic!("a repeated upload: {e}"),
            }
        }
        for s in probe.statuses(&second).await.unwrap() {
            assert_eq!(s.received, n as usize);
        }

        // The aggregators' own passes close the round; one takes its release lease and keeps
        // asking for the held node sums.
        let until = Instant::now() + Duration::from_secs(60);
        let holder = loop {
            if let Some(holder) = release_lease_holder(&rc.cluster, &second) {
                break holder;
            }
            assert!(
                Instant::now() < until,
                "no aggregator took the release lease"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let k = (0..2)
            .find(|&k| aggs[k].child.id() == pid_of(&holder))
            .expect("the lease holder is one of the aggregators");
        let other = 1 - k;
        let asked = calls[k].seen(&second.id()).1;
        let until = Instant::now() + Duration::from_secs(60);
        while calls[k].seen(&second.id()).1 < asked + 3 {
            assert!(Instant::now() < until, "the holder does not fetch the sums");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The other aggregator answers the analyst "in progress" and leaves the nodes alone.
        assert_eq!(
            post_release(&rc.cluster, &aggs[other].url, &second).await,
            StatusCode::ACCEPTED
        );
        assert_eq!(
            get_release_status(&rc.cluster, &aggs[other].url, &second).await,
            StatusCode::ACCEPTED
        );
        assert_eq!(
            calls[other].seen(&second.id()),
            (0, 0),
            "the non-holder contacted the nodes"
        );
        eprintln!("killing aggregator {k}, holding the release lease as {holder:?}");
        aggs[k].child.kill().unwrap();
        aggs[k].child.wait().unwrap();
        held.store(false, SeqCst);

        let released = release(&rc.cluster, &aggs[other].url, &second).await;
        let local = in_process(&second, &[]);
        assert_eq!(released.sum_units, local.sum_units);
        assert_eq!(bits(&released.sum), bits(&local.sum));
        assert_eq!(released.clients, (0..n).collect::<Vec<u64>>());
        let taken_over = release_lease_holder(&rc.cluster, &second).expect("the lease row");
        assert_ne!(taken_over, holder);
        assert_eq!(pid_of(&taken_over), aggs[other].child.id());
        assert_eq!(
            post_release(&rc.cluster, &aggs[other].url, &second).await,
            StatusCode::CONFLICT
        );
        assert_eq!(released_rounds(&rc.cluster), 2);
        let recorded: Vec<String> = charges(&rc.cluster).into_iter().map(|(id, _)| id).collect();
        assert_eq!(recorded, [first.id(), second.id()]);
    })
    .await
    .expect("test exceeded its time limit");
}
