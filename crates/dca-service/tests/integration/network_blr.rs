//! Alg. 2 across processes on loopback: three `dpdist node` processes and a `dpdist aggregator`
//! server process; the analyst and the clients are this test. The network fit's two DCA rounds
//! must release exactly what the in-process pipeline releases with the same seed. Also: the
//! aggregator server's authentication, and an abort that the nodes are told about. Every
//! process is killed when its guard drops; every wait is bounded.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::time::Duration;

use common::*;
use dca_service::analyst::fit::{NetworkTransport, dca_blr_config, fit_over_network, prepare_csv};
use dca_service::protocol::upload::{put_sealed, seal_for, upload};
use dp_noise::PrivacyLoss;
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode, ShareMode};
use reqwest::StatusCode;

const LIMIT: Duration = Duration::from_secs(300);

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The first `rows` diabetes records (prepared as the DCA paper's UCI protocol).
/// Creates `round` on the aggregator server as the analyst, then uploads every client's values.
async fn create_and_upload_all(
    http: &reqwest::Client,
    aggregator_url: &str,
    node_urls: &[String],
    round: &dca_service::protocol::spec::Round,
) {
    let r = http
        .put(format!("{aggregator_url}/rounds/{}", round.id()))
        .bearer_auth(ANALYST_TOKEN)
        .header("content-type", "application/dpdist-round-config")
        .body(round.config_bytes().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    for i in 0..round.config.n_clients() as u64 {
        upload(
            http,
            round,
            node_urls,
            i,
            &client_token(i),
            &values(i as usize, round.config.dim()),
            RngSource::Os,
        )
        .await
        .unwrap();
    }
}

fn diabetes(rows: usize) -> (Vec<f64>, Vec<f64>, usize) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/diabetes.csv"
    ))
    .unwrap();
    let mut lines = text.lines();
    let head: String = lines
        .by_ref()
        .take(rows + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let bounds = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/diabetes.bounds.csv"
    ))
    .unwrap();
    let p = prepare_csv(&head, "target", &bounds).unwrap();
    assert_eq!(p.n, rows);
    (p.x, p.y, p.d)
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_round_network_fit_equals_the_in_process_fit_bit_for_bit(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("blr", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (x, y, d) = diabetes(150);
        let n = y.len();
        let budget = PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let config = dca_blr_config(d, 3, 2, ShareMode::Seed, budget);
        let seed = RngSource::InsecureFixedSeed(88);
        let mut transport = NetworkTransport::new(
            tokio::runtime::Handle::current(),
            cluster.http.clone(),
            aggregator.url.clone(),
            ANALYST_TOKEN.to_string(),
        );
        transport.concurrency = 16;
        transport.upload_window = Duration::from_secs(120);
        let (net, transport) =
            fit_over_network(transport, x.clone(), y.clone(), d, config.clone(), seed)
                .await
                .unwrap();
        let local = blr::fit(&x, &y, n, d, &config, seed).unwrap();

        // Both rounds ran on the aggregator over all clients.
        assert_eq!(transport.releases.len(), 2);
        assert_eq!(transport.releases[0].round, 1, "the DP std round");
        assert_eq!(transport.releases[1].round, 2, "the statistics round");
        for r in &transport.releases {
            assert_eq!(r.clients, (0..n as u64).collect::<Vec<_>>());
        }
        let std_dim = match config.projection.as_ref().unwrap().std_mode {
            projection::StdMode::PerDimension => d + 1,
            projection::StdMode::PooledX => 2,
        };
        assert_eq!(transport.releases[0].sum.len(), std_dim);
        assert_eq!(
            transport.releases[1].sum.len(),
            blr::SuffStats::flat_len(d, false)
        );
        // Round 1's release, the thresholds it led to, round 2's release, the posterior.
        let (ls, ns) = (local.std.unwrap(), net.std.unwrap());
        assert_eq!(bits(&ls.x), bits(&ns.x));
        assert_eq!(ls.y.to_bits(), ns.y.to_bits());
        assert_eq!(local.thresholds, net.thresholds);
        assert_eq!(bits(&local.bounds_x), bits(&net.bounds_x));
        assert_eq!(
            bits(&local.stats.to_flat(false)),
            bits(&net.stats.to_flat(false))
        );
        assert_eq!(bits(&local.posterior.mean), bits(&net.posterior.mean));
        assert_eq!(local.spent, net.spent);
        // The released statistics are noisy: not the exact ones.
        let exact = blr::SuffStats::compute(&x, &y, n, d).unwrap();
        assert_ne!(bits(&exact.to_flat(false)), bits(&net.stats.to_flat(false)));
    })
    .await
    .expect("test exceeded its time limit");
}

/// The aggregator killed (`kill -9`) while a job runs and restarted on its address 2 s later:
/// the job waits it out (its requests retried with backoff) and ends with the same fit as the
/// in-process pipeline.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waits_out_an_aggregator_restart(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("blr-restart", 3, store) else {
            return;
        };
        let mut aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let addr = aggregator.url.trim_start_matches("https://").to_string();
        let (x, y, d) = diabetes(60);
        let n = y.len();
        let budget = PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let config = dca_blr_config(d, 3, 2, ShareMode::Seed, budget);
        let seed = RngSource::InsecureFixedSeed(89);
        let mut transport = NetworkTransport::new(
            tokio::runtime::Handle::current(),
            cluster.http.clone(),
            aggregator.url.clone(),
            ANALYST_TOKEN.to_string(),
        );
        transport.upload_window = Duration::from_secs(120);
        let job = tokio::spawn(fit_over_network(
            transport,
            x.clone(),
            y.clone(),
            d,
            config.clone(),
            seed,
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = aggregator.child.kill();
        let _ = aggregator.child.wait();
        tokio::time::sleep(Duration::from_secs(2)).await;
        aggregator = AggregatorProcess::start_on(&cluster, "aggregator.sqlite", 10.0, &addr);
        let (net, transport) = job.await.unwrap().unwrap();
        let local = blr::fit(&x, &y, n, d, &config, seed).unwrap();
        assert_eq!(transport.releases.len(), 2);
        assert_eq!(bits(&local.posterior.mean), bits(&net.posterior.mean));
        drop(aggregator);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A client whose uploads to node 1 keep failing (a proxy in front of node 1 loses every one
/// of client 3's shares) gives up after its retries at the round's deadline: it is a dropout
/// (T = 2), not the end of the job. Both rounds release over the other clients.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_upload_is_a_dropout_not_a_failed_job(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("blr-dropout", 3, store) else {
            return;
        };
        let proxy = failing_proxy(cluster.http.clone(), cluster.urls()[1].clone(), |path| {
            path.ends_with("/shares/3")
        })
        .await;
        let nodes = [cluster.urls()[0].clone(), proxy, cluster.urls()[2].clone()];
        let aggregator = AggregatorProcess::start_with_nodes(
            &cluster,
            "aggregator.sqlite",
            10.0,
            "127.0.0.1:0",
            &nodes,
        );
        let (x, y, d) = diabetes(20);
        let budget = PrivacyLoss {
            epsilon: 1.0,
            delta: 1e-5,
        };
        let config = dca_blr_config(d, 3, 2, ShareMode::Seed, budget);
        let mut transport = NetworkTransport::new(
            tokio::runtime::Handle::current(),
            cluster.http.clone(),
            aggregator.url.clone(),
            ANALYST_TOKEN.to_string(),
        );
        // Long enough for client 3's burst of retries to run out inside the window.
        transport.upload_window = Duration::from_secs(10);
        let (fit, transport) =
            fit_over_network(transport, x, y, d, config, RngSource::InsecureFixedSeed(91))
                .await
                .unwrap();
        assert_eq!(transport.releases.len(), 2);
        let without_3: Vec<u64> = (0..20).filter(|&c| c != 3).collect();
        for r in &transport.releases {
            assert_eq!(r.clients, without_3);
        }
        // n of the statistics counts the records in the release.
        assert_eq!(fit.stats.n, 19);
    })
    .await
    .expect("test exceeded its time limit");
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aggregator_server_authenticates_aborts_and_tells_the_nodes(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("aggserver", 2, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let http = &cluster.http;
        let urls = cluster.urls();

        // The analyst's token: none → 401, another → 403.
        let r = http
            .get(format!("{}/nodes", aggregator.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let r = http
            .get(format!("{}/nodes", aggregator.url))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::FORBIDDEN,
            "the nodes' secret is not the analyst's"
        );
        let list: dca_service::aggregator::server::NodeList = http
            .get(format!("{}/nodes", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(list.nodes, urls);

        // N = 6, T = 1, deadline in 8 s; only clients 0..4 upload: 2 missing > T → aborted at
        // the deadline, by the server on its own, and both nodes are told.
        let mut s = spec(401, 6, 1, 3, "seed", Some(1.0), list.node_keys.clone());
        s.deadline_unix_ms = dca_service::node::now_ms() + 8000;
        let round = s.validate().unwrap();
        let id = round.id();
        let create = |token: &'static str| {
            http.put(format!("{}/rounds/{id}", aggregator.url))
                .bearer_auth(token)
                .header("content-type", "application/dpdist-round-config")
                .body(round.config_bytes().unwrap())
                .send()
        };
        assert_eq!(
            create("wrong").await.unwrap().status(),
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            create(ANALYST_TOKEN).await.unwrap().status(),
            StatusCode::CREATED
        );
        assert_eq!(
            create(ANALYST_TOKEN).await.unwrap().status(),
            StatusCode::OK
        );
        for i in 0..4u64 {
            upload(
                http,
                &round,
                &urls,
                i,
                &client_token(i),
                &values(i as usize, 3),
                RngSource::InsecureFixedSeed(5).derive(i),
            )
            .await
            .unwrap();
        }
        let r = http
            .get(format!("{}/rounds/{id}/release", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::ACCEPTED,
            "collecting until the deadline"
        );
        let mut final_status = StatusCode::ACCEPTED;
        for _ in 0..300 {
            let r = http
                .get(format!("{}/rounds/{id}/release", aggregator.url))
                .bearer_auth(ANALYST_TOKEN)
                .send()
                .await
                .unwrap();
            final_status = r.status();
            if final_status != StatusCode::ACCEPTED {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            final_status,
            StatusCode::CONFLICT,
            "aborted: nothing released"
        );
        // The release answers 409 as soon as the abort is decided; the round is "aborting"
        // until every node has acknowledged it, then "aborted".
        let mut state: dca_service::aggregator::server::AggregatorRoundState;
        let mut polls = 0;
        loop {
            state = http
                .get(format!("{}/rounds/{id}", aggregator.url))
                .bearer_auth(ANALYST_TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            polls += 1;
            if state.state != "aborting" || polls >= 300 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(state.state, "aborted", "every node acknowledged the abort");
        assert!(state.reason.unwrap().contains("2 clients missing"));
        for url in &urls {
            let status: dca_service::node::RoundStatus = http
                .get(format!("{url}/rounds/{id}"))
                .bearer_auth(ADMIN_TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(status.state, "aborted");
            assert_eq!(status.received, 0, "the aborted round's shares are deleted");
            let r = http
                .get(format!("{url}/rounds/{id}/sum"))
                .bearer_auth(ADMIN_TOKEN)
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.status(),
                StatusCode::CONFLICT,
                "no node sum of an aborted round"
            );
        }
        // Uploads and a release request after the abort are refused.
        let msg = Client::new(&round.config, ClientId(4), RngSource::InsecureFixedSeed(5))
            .unwrap()
            .shard(&values(4, 3))
            .unwrap();
        let sealed = seal_for(&round, 4, 0, &Encode::get_encoded(&msg[0]).unwrap()).unwrap();
        let (status, _) = put_sealed(http, &urls[0], &id, 4, &client_token(4), sealed)
            .await
            .unwrap();
        assert_eq!(status, StatusCode::CONFLICT);
        let r = http
            .post(format!("{}/rounds/{id}/release", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{}", r.status());

        // A complete round is released by the server on its own, once; a second release → 409.
        let mut s = spec(402, 3, 0, 2, "full", None, list.node_keys.clone());
        s.deadline_unix_ms = dca_service::node::now_ms() + 600_000;
        let round = s.validate().unwrap();
        let id = round.id();
        create_and_upload_all(http, &aggregator.url, &urls, &round).await;
        let mut released = None;
        for _ in 0..300 {
            let r = http
                .get(format!("{}/rounds/{id}/release", aggregator.url))
                .bearer_auth(ANALYST_TOKEN)
                .send()
                .await
                .unwrap();
            if r.status() == StatusCode::OK {
                released = Some(
                    r.json::<dca_service::aggregator::PublishedRelease>()
                        .await
                        .unwrap(),
                );
                break;
            }
            assert_eq!(r.status(), StatusCode::ACCEPTED);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let released = released.expect("released within 30 s");
        let f = round.config.codec().frac_bits();
        for j in 0..2 {
            let expect: i64 = (0..3)
                .map(|i| (values(i, 2)[j] * 2f64.powi(f as i32)).round() as i64)
                .sum();
            assert_eq!(released.sum_units[j], expect);
        }
        let r = http
            .post(format!("{}/rounds/{id}/release", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "no second release");

        // A complete round the budget does not allow (σ = 0.001 at Δ = 1: ρ = 5·10^5) is aborted,
        // nothing is released, and the nodes are told.
        let mut s = spec(403, 3, 0, 2, "seed", Some(0.001), list.node_keys.clone());
        s.deadline_unix_ms = dca_service::node::now_ms() + 600_000;
        let round = s.validate().unwrap();
        let id = round.id();
        create_and_upload_all(http, &aggregator.url, &urls, &round).await;
        let mut final_status = StatusCode::ACCEPTED;
        let mut body = String::new();
        for _ in 0..300 {
            let r = http
                .get(format!("{}/rounds/{id}/release", aggregator.url))
                .bearer_auth(ANALYST_TOKEN)
                .send()
                .await
                .unwrap();
            final_status = r.status();
            if final_status != StatusCode::ACCEPTED {
                body = r.text().await.unwrap();
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(final_status, StatusCode::CONFLICT, "{body}");
        assert!(body.contains("privacy budget"), "{body}");
        // The 409 comes as soon as the abort is recorded ("aborting"); the nodes are told next.
        for url in &urls {
            let mut state = String::new();
            for _ in 0..300 {
                let status: dca_service::node::RoundStatus = http
                    .get(format!("{url}/rounds/{id}"))
                    .bearer_auth(ADMIN_TOKEN)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                state = status.state;
                if state != "open" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(state, "aborted", "{url} told within 30 s");
        }
    })
    .await
    .expect("test exceeded its time limit");
}
