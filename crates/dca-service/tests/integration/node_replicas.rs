//! Node replicas: several `dpdist node` processes per node index on one PostgreSQL database,
//! behind a load balancer each (common/replicas.rs). PostgreSQL only: without a server
//! the tests say so loudly and pass, except under CI. Every process is killed when its guard
//! drops; every wait is bounded.

#![allow(missing_docs)]

use crate::common;

use std::sync::mpsc;
use std::time::Duration;

use common::replicas::*;
use common::*;
use dca_service::Error;
use dca_service::protocol::upload::{put_sealed, seal_shares};
use dp_noise::rng::RngSource;
use reqwest::StatusCode;

const LIMIT: Duration = Duration::from_secs(300);

/// Two replicas of each node from the start and a third started after the first round was
/// created; clients spread over all of them: every share is stored once (the same share again
/// at another replica is 200, another share 409), and each release equals the in-process round
/// bit for bit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_spread_over_replicas_release_the_in_process_sum_bit_for_bit() {
    tokio::time::timeout(LIMIT, async {
        let Some(mut rc) =
            ReplicatedCluster::start("replicas", 3, 2, &["--max-body", "1048576"]).await
        else {
            return;
        };
        let agg = rc.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let n = 16u64;
        for (round_no, mode, sigma, dropped) in [
            (301, "full", None, vec![]),
            (302, "seed", Some(2.5), vec![3u64, 11]),
            (303, "full", Some(2.5), vec![5]),
        ] {
            let round = agg
                .create_round(spec(round_no, n as usize, 2, 5, mode, sigma, keys.clone()))
                .await
                .unwrap();
            if round_no == 301 {
                // Started after the round was created: it has never seen it.
                for k in 0..3 {
                    rc.start_replica(k);
                }
            }
            for i in (0..n).filter(|i| !dropped.contains(i)) {
                let urls = rc.replica_urls(i as usize % 3);
                upload_one(&rc.cluster.http, &round, &urls, i)
                    .await
                    .unwrap();
            }
            // Client 0 (stored through replica 0) again through replica 1, and another share
            // of it through replica 2.
            let id = round.id();
            let token = client_token(0);
            let again = seal_shares(
                &round,
                0,
                &values(0, 5),
                RngSource::InsecureFixedSeed(SEED).derive(0),
            )
            .unwrap();
            let other = seal_shares(
                &round,
                0,
                &values(1, 5),
                RngSource::InsecureFixedSeed(SEED).derive(999),
            )
            .unwrap();
            for k in 0..3 {
                let http = &rc.cluster.http;
                let (s, body) = put_sealed(
                    http,
                    &rc.replica_urls(1)[k],
                    &id,
                    0,
                    &token,
                    again[k].clone(),
                )
                .await
                .unwrap();
                assert_eq!(s, StatusCode::OK, "node {k}: {body}");
                let (s, body) = put_sealed(
                    http,
                    &rc.replica_urls(2)[k],
                    &id,
                    0,
                    &token,
                    other[k].clone(),
                )
                .await
                .unwrap();
                assert_eq!(s, StatusCode::CONFLICT, "node {k}: {body}");
            }
            for s in agg.statuses(&round).await.unwrap() {
                assert_eq!(s.received, (n as usize) - dropped.len());
            }
            let net = agg.release(&round).await.unwrap();
            let local = in_process(&round, &dropped);
            assert_eq!(net.sum_units, local.sum_units, "{mode} {sigma:?}");
            assert_eq!(bits(&net.sum), bits(&local.sum), "{mode} {sigma:?}");
            assert_eq!(net.clients.len(), n as usize - dropped.len());
            assert!(matches!(
                agg.release(&round).await,
                Err(Error::AlreadyReleased)
            ));
            // Every replica, also those that never saw the close, serves the one stored sum.
            for k in 0..3 {
                let mut sums = Vec::new();
                for j in 0..3 {
                    sums.push(node_sum(&rc.cluster.http, &rc.replica_urls(j)[k], &id).await);
                }
                assert!(sums.iter().all(|s| *s == sums[0]), "node {k}");
            }
            // A closed round refuses uploads at every replica, also one that never closed it.
            for j in 0..3 {
                let (s, _) = put_sealed(
                    &rc.cluster.http,
                    &rc.replica_urls(j)[1],
                    &id,
                    0,
                    &token,
                    other[1].clone(),
                )
                .await
                .unwrap();
                assert_eq!(s, StatusCode::CONFLICT);
            }
        }
    })
    .await
    .expect("test exceeded its time limit");
}

/// `GET /rounds/{id}/sum` at one replica, polled while it answers 202 (at most 30 s).
async fn node_sum(http: &reqwest::Client, url: &str, id: &str) -> Vec<u8> {
    for _ in 0..300 {
        let r = http
            .get(format!("{url}/rounds/{id}/sum"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        match r.status() {
            StatusCode::OK => return r.bytes().await.unwrap().to_vec(),
            StatusCode::ACCEPTED => tokio::time::sleep(Duration::from_millis(100)).await,
            s => panic!(
                "{url}: node sum: {s}: {}",
                r.text().await.unwrap_or_default()
            ),
        }
    }
    panic!("{url}: node sum not ready after 30 s")
}

/// Holds `LOCK TABLE node_round_sums IN EXCLUSIVE MODE` on the database at `url` (reads pass,
/// the node sum's insert waits), reports the holder of the first node sum lease that appears,
/// and lets the lock go when told (or after 120 s).
fn hold_sums_table(url: String) -> (mpsc::Receiver<String>, mpsc::Sender<()>) {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (holder_tx, holder_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut tx = c.transaction().unwrap();
        tx.batch_execute("LOCK TABLE node_round_sums IN EXCLUSIVE MODE")
            .unwrap();
        ready_tx.send(()).unwrap();
        for _ in 0..2400 {
            if let Some(row) = tx
                .query_opt("SELECT holder FROM node_sum_leases", &[])
                .unwrap()
            {
                let _ = holder_tx.send(row.get::<_, String>(0));
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = go_rx.recv_timeout(Duration::from_secs(120));
        let stored: i64 = tx
            .query_one("SELECT count(*) FROM node_round_sums", &[])
            .unwrap()
            .get(0);
        assert_eq!(
            stored, 0,
            "a node sum was stored while the table was locked"
        );
        tx.rollback().unwrap();
    });
    ready_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the lock on node_round_sums");
    (holder_rx, go_tx)
}

fn lease_holder(url: &str) -> Option<String> {
    let url = url.to_string();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.query_opt("SELECT holder FROM node_sum_leases", &[])
            .unwrap()
            .map(|r| r.get::<_, String>(0))
    })
    .join()
    .unwrap()
}

/// `kill -9` of one replica while uploads are in flight, and of the replica holding node 2's
/// sum lease (stalled before it stores the sum): every share is stored once, the other replica
/// takes the lease over once it expires, and the one release is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_a_replica_mid_upload_and_of_the_sum_lease_holder_lose_and_double_nothing() {
    tokio::time::timeout(LIMIT, async {
        let args = ["--max-body", "1048576", "--sum-lease-ms", "1500"];
        let Some(mut rc) = ReplicatedCluster::start("replicas-kill", 3, 2, &args).await else {
            return;
        };
        let agg = rc.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let n = 200u64;
        let round = agg
            .create_round(spec(401, n as usize, 3, 6, "full", None, keys.clone()))
            .await
            .unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n / 2 {
            let (http, round, urls) = (
                rc.cluster.http.clone(),
                round.clone(),
                rc.replica_urls(i as usize % 2),
            );
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        // The second half through the balancers while replica 1 of node 1 is killed.
        for i in n / 2..n {
            let (http, round, urls) = (rc.cluster.http.clone(), round.clone(), rc.urls());
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        let mut at_kill = 0;
        for _ in 0..2000 {
            at_kill = agg.statuses(&round).await.unwrap()[1].received;
            if at_kill > n as usize / 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        eprintln!("node 1 replica 1 killed with {at_kill} of {n} shares stored");
        rc.replica_mut(1, 1).kill9();
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        // Every client again (unsure of its first attempt): nothing changes.
        for i in 0..n {
            let (http, round, urls) = (rc.cluster.http.clone(), round.clone(), rc.urls());
            tasks.spawn(async move { upload_one(&http, &round, &urls, i).await });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        for s in agg.statuses(&round).await.unwrap() {
            assert_eq!(s.received, n as usize);
        }
        // Node 2's lease holder stalls before storing its sum and is killed holding the lease.
        let (holder_rx, go) = hold_sums_table(rc.store_url(2));
        let kill_holder = async {
            let holder = tokio::task::spawn_blocking(move || {
                holder_rx.recv_timeout(Duration::from_secs(120))
            })
            .await
            .unwrap()
            .expect("a replica of node 2 takes the sum lease");
            let pid = pid_of(&holder);
            let j = (0..2)
                .find(|&j| rc.replica(2, j).child.id() == pid)
                .expect("the holder is a replica of node 2");
            eprintln!("killing replica {j} of node 2, holding the sum lease as {holder:?}");
            rc.replica_mut(2, j).kill9();
            // Its insert of the sum, waiting for the lock, dies with its connection.
            go.send(()).unwrap();
            (j, holder)
        };
        let (first, (killed, dead_holder)) = tokio::join!(agg.release(&round), kill_holder);
        let mut released = first;
        for _ in 0..60 {
            match &released {
                Ok(_) => break,
                Err(Error::AlreadyReleased) => panic!("released twice"),
                Err(e) => eprintln!("release: {e}; trying again"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            released = agg.release(&round).await;
        }
        let net = released.expect("released after the takeover");
        let local = in_process(&round, &[]);
        assert_eq!(net.sum_units, local.sum_units);
        assert_eq!(bits(&net.sum), bits(&local.sum));
        assert_eq!(net.clients.len(), n as usize);
        assert!(matches!(
            agg.release(&round).await,
            Err(Error::AlreadyReleased)
        ));
        let holder = lease_holder(&rc.store_url(2)).expect("the lease row");
        assert_ne!(holder, dead_holder, "the lease was taken over");
        assert_eq!(pid_of(&holder), rc.replica(2, 1 - killed).child.id());
    })
    .await
    .expect("test exceeded its time limit");
}
