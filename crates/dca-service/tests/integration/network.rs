//! DCA across processes on loopback: node processes of the `dpdist` binary, the aggregator and
//! clients in the test process. Every node is killed when its guard drops (also on failure);
//! every wait is bounded.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::time::Duration;

use common::*;
use dca_service::Error;
use dca_service::protocol::upload::{Uploaded, put_sealed, seal_for, upload, upload_sealed};
use dp_noise::rng::RngSource;
use fixedpoint_shares::{Client, ClientId, Encode};
use reqwest::StatusCode;

const LIMIT: Duration = Duration::from_secs(240);

/// `POST /rounds/{id}/close` with `body` (a pair set) as the aggregator; the status.
async fn post_close(http: &reqwest::Client, url: &str, id: &str, body: Vec<u8>) -> StatusCode {
    http.post(format!("{url}/rounds/{id}/close"))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", dca_service::MEDIA_PAIR_SET)
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_sums_equal_the_in_process_release_bit_for_bit(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("bitexact", 3, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let mut round_no = 100;
        let mut rho = 0.0;
        for mode in ["full", "seed"] {
            for (sigma, dropped) in [
                (None, vec![]),
                (Some(2.5), vec![]),
                (Some(2.5), vec![3u64, 11]),
            ] {
                round_no += 1;
                let round = agg
                    .create_round(spec(round_no, 16, 2, 5, mode, sigma, keys.clone()))
                    .await
                    .unwrap();
                // Creating it again is a no-op.
                agg.create_round(round.spec.clone()).await.unwrap();
                upload_all(
                    &cluster,
                    &round,
                    (0..16u64).filter(|i| !dropped.contains(i)),
                )
                .await;
                let net = agg.release(&round).await.unwrap();
                if let Some(sigma) = sigma {
                    // Δ₂ = 1 in grid units 2^f, plus one unit per coordinate for rounding
                    // (√d), against σ_c = σ/√(N − T − 1) per honest client: ρ = (Δ₂·2^f + √d)² /
                    // (2·(N − T − 1)·σ_c²·2^2f) = (1 + √5·2^−f)² / (2σ²) (KLS's τ underflows).
                    let f = round.config.codec().frac_bits() as i32;
                    rho += (1.0 + 5f64.sqrt() * 2f64.powi(-f)).powi(2) / (2.0 * sigma * sigma);
                }
                let local = in_process(&round, &dropped);
                assert_eq!(
                    net.sum_units, local.sum_units,
                    "{mode} {sigma:?} {dropped:?}"
                );
                assert_eq!(
                    bits(&net.sum),
                    bits(&local.sum),
                    "{mode} {sigma:?} {dropped:?}"
                );
                assert_eq!(net.clients.len(), 16 - dropped.len());
                // A release without noise says so; a private one carries no such mark.
                assert_eq!(
                    net.privacy.as_deref(),
                    sigma
                        .is_none()
                        .then_some("NON-PRIVATE: exact sum, no noise")
                );
                assert_eq!(
                    net.noise_sigma_released.to_bits(),
                    local.noise_sigma_released.to_bits()
                );
                // Without noise the sum is the exact fixed-point sum of the inputs, computed here.
                if sigma.is_none() {
                    let f = round.config.codec().frac_bits();
                    for j in 0..5 {
                        let expect: i64 = (0..16)
                            .filter(|i| !dropped.contains(&(*i as u64)))
                            .map(|i| (values(i, 5)[j] * 2f64.powi(f as i32)).round() as i64)
                            .sum();
                        assert_eq!(net.sum_units[j], expect);
                    }
                }
            }
        }
        // Four noisy rounds of σ = 2.5 at Δ₂ = 1: ρ ≈ 4 · 1/(2 · 2.5²) = 0.32 (zCDP) plus the
        // rounding terms (~1e-15 at this fine grid; the aggregator's unit test checks them on a
        // coarse one), converted once at δ = 1e-5: ε = ρ + 2·sqrt(ρ·ln(1e5)).
        assert!((0.32..0.33).contains(&rho), "{rho}");
        let eps = rho + 2.0 * (rho * (1e5f64).ln()).sqrt();
        assert!(
            (agg.spent().epsilon - eps).abs() < 1e-12,
            "{} vs {eps}",
            agg.spent().epsilon
        );
    })
    .await
    .expect("test exceeded its time limit");
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_upload_and_restart_lose_and_double_nothing(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("kill9", 3, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        for (round_no, mode) in [(201, "full"), (202, "seed")] {
            let n = 200u64;
            let round = agg
                .create_round(spec(round_no, n as usize, 3, 6, mode, None, keys.clone()))
                .await
                .unwrap();
            upload_all(&cluster, &round, 0..n / 2).await;
            // Second half in flight while node 1 is killed and restarted on the same port.
            let urls = cluster.urls();
            let mut tasks = tokio::task::JoinSet::new();
            for i in n / 2..n {
                let (http, round, urls) = (cluster.http.clone(), round.clone(), urls.clone());
                tasks.spawn(async move {
                    let v = values(i as usize, round.config.dim());
                    upload(
                        &http,
                        &round,
                        &urls,
                        i,
                        &client_token(i),
                        &v,
                        RngSource::InsecureFixedSeed(SEED).derive(i),
                    )
                    .await
                });
            }
            // Kill node 1 as soon as it holds more than the first half (bounded polling).
            let mut at_kill = 0;
            for _ in 0..2000 {
                at_kill = agg.statuses(&round).await.unwrap()[1].received;
                if at_kill > n as usize / 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            eprintln!("{mode}: node 1 killed holding {at_kill} of {n} shares");
            cluster.nodes[1].kill9();
            tokio::time::sleep(Duration::from_millis(300)).await;
            cluster.restart(1);
            while let Some(r) = tasks.join_next().await {
                r.unwrap().unwrap();
            }
            // Every client uploads again (as a client unsure of its first attempt would):
            // nothing changes.
            upload_all(&cluster, &round, 0..n).await;
            for s in agg.statuses(&round).await.unwrap() {
                assert_eq!(s.received, n as usize);
            }
            let net = agg.release(&round).await.unwrap();
            let local = in_process(&round, &[]);
            assert_eq!(net.sum_units, local.sum_units, "{mode}");
            assert_eq!(bits(&net.sum), bits(&local.sum));
        }
    })
    .await
    .expect("test exceeded its time limit");
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropouts_retries_conflicts_bad_input_close_and_release_once(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("rules", 2, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let urls = cluster.urls();
        let http = &cluster.http;

        // More than T missing: aborted, recorded, nothing released.
        let round = agg
            .create_round(spec(301, 6, 1, 3, "seed", Some(1.0), keys.clone()))
            .await
            .unwrap();
        upload_all(&cluster, &round, 0..4).await;
        assert!(matches!(
            agg.release(&round).await,
            Err(Error::Aborted {
                missing: 2,
                max_dropped: 1
            })
        ));
        assert!(agg.release(&round).await.is_err());
        assert_eq!(agg.published(&round).unwrap(), None);
        assert_eq!(agg.spent().epsilon, 0.0, "an aborted round costs nothing");
        // Closing the aborted round: 409 for any well-formed request, even one whose set
        // names clients never received (the abort is checked first); 400 only for a body
        // that is not a pair set over the round's N at all.
        let n = round.config.n_clients();
        let one = fixedpoint_shares::ShardSet::from_pairs(
            n,
            &[(ClientId(0), fixedpoint_shares::ShardId(1))],
        )
        .unwrap()
        .get_encoded()
        .unwrap();
        for (body, want) in [
            (one.clone(), 409),
            (
                fixedpoint_shares::ShardSet::empty(n).get_encoded().unwrap(),
                409,
            ),
            (one[..one.len() - 1].to_vec(), 400),
            (br#"{"agreed":[0]}"#.to_vec(), 400),
        ] {
            let got = post_close(http, &urls[0], &round.id(), body.clone()).await;
            assert_eq!(got.as_u16(), want, "{body:?}");
        }

        // The main round of this test.
        let round = agg
            .create_round(spec(302, 6, 1, 3, "full", None, keys.clone()))
            .await
            .unwrap();
        let other = agg
            .create_round(spec(303, 6, 1, 3, "full", None, keys.clone()))
            .await
            .unwrap();
        // Round number 302 again with another configuration: refused, before any node is asked.
        let reused = agg
            .create_round(spec(302, 7, 1, 3, "full", None, keys.clone()))
            .await
            .unwrap_err();
        assert!(
            reused
                .to_string()
                .contains("already used with another configuration"),
            "{reused}"
        );
        // The same configuration again is the same round (idempotent creation).
        let again = agg.create_round(round.spec.clone()).await.unwrap();
        assert_eq!(again.id(), round.id());
        let id = round.id();
        let msg = |client: u64, seed: u64| {
            Client::new(
                &round.config,
                ClientId(client),
                RngSource::InsecureFixedSeed(seed),
            )
            .unwrap()
            .shard(&values(client as usize, 3))
            .unwrap()
        };
        let m0 = msg(0, 1);
        let w0 = Encode::get_encoded(&m0[0]).unwrap();
        let sealed = seal_for(&round, 0, 0, &w0).unwrap();
        let t0 = client_token(0);
        // Retry of the same bytes → 200; a fresh sealing of the same share → 200; another share → 409.
        assert_eq!(
            upload_sealed(http, &urls[0], &id, 0, &t0, &sealed)
                .await
                .unwrap(),
            Uploaded::Stored
        );
        assert_eq!(
            upload_sealed(http, &urls[0], &id, 0, &t0, &sealed)
                .await
                .unwrap(),
            Uploaded::AlreadyStored
        );
        let resealed = seal_for(&round, 0, 0, &w0).unwrap();
        assert_eq!(
            put_sealed(http, &urls[0], &id, 0, &t0, resealed)
                .await
                .unwrap()
                .0,
            StatusCode::OK
        );
        let different =
            seal_for(&round, 0, 0, &Encode::get_encoded(&msg(0, 2)[0]).unwrap()).unwrap();
        assert_eq!(
            put_sealed(http, &urls[0], &id, 0, &t0, different)
                .await
                .unwrap()
                .0,
            StatusCode::CONFLICT
        );

        // Bad input of every kind: 4xx, nothing stored.
        let w1 = Encode::get_encoded(&msg(1, 1)[0]).unwrap();
        let t1 = client_token(1);
        let good1 = seal_for(&round, 1, 0, &w1).unwrap();
        let put = |client: u64, token: &str, body: Vec<u8>| {
            let token = token.to_string();
            let (url, id) = (urls[0].clone(), id.clone());
            async move { put_sealed(http, &url, &id, client, &token, body).await }
        };
        assert_eq!(
            put(1, &t1, vec![7u8; 100]).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "garbage"
        );
        assert_eq!(
            put(1, &t1, good1[..good1.len() - 1].to_vec())
                .await
                .unwrap()
                .0,
            StatusCode::BAD_REQUEST,
            "truncated"
        );
        assert_eq!(
            put(1, &t1, vec![]).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "empty"
        );
        assert_eq!(
            put(1, &t1, vec![0u8; 4096]).await.unwrap().0,
            StatusCode::PAYLOAD_TOO_LARGE,
            "over the round's size"
        );
        // Past the node's body limit the node answers 413 and drops the connection; the client may
        // see the 413 or only the closed connection while still sending.
        // (Own client: the dropped connection must not sit in the shared pool.)
        let lone =
            dca_service::http::tls::http_client(&cluster.certs.ca_pem, 0, Duration::from_secs(30))
                .unwrap();
        match put_sealed(&lone, &urls[0], &id, 1, &t1, vec![0u8; 2 << 20]).await {
            Ok((status, _)) => assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "over max body"),
            Err(e) => assert!(matches!(e, Error::Http(_)), "{e}"),
        }
        let to_node1 = seal_for(&round, 1, 1, &w1).unwrap();
        assert_eq!(
            put(1, &t1, to_node1).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "sealed to another node"
        );
        let as_client2 = seal_for(&round, 2, 0, &w1).unwrap();
        assert_eq!(
            put(1, &t1, as_client2).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "sealed for another client"
        );
        let other_round = seal_for(&other, 1, 0, &w1).unwrap();
        assert_eq!(
            put(1, &t1, other_round.clone()).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "replayed from another round"
        );
        // A well-sealed message whose content belongs to another slot (client 1's share in client 2's slot).
        let inside_wrong = seal_for(&round, 2, 0, &w1).unwrap();
        assert_eq!(
            put(2, &client_token(2), inside_wrong).await.unwrap().0,
            StatusCode::BAD_REQUEST,
            "content for another client"
        );
        assert_eq!(
            put(1, "wrong", good1.clone()).await.unwrap().0,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            put(1, &client_token(2), good1.clone()).await.unwrap().0,
            StatusCode::FORBIDDEN,
            "another client's token"
        );
        let no_token = http
            .put(format!("{}/rounds/{id}/shares/1", urls[0]))
            .body(good1.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
        let wrong_type = http
            .put(format!("{}/rounds/{id}/shares/1", urls[0]))
            .bearer_auth(&t1)
            .header("content-type", "text/plain")
            .body(good1.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(wrong_type.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            put(99, &t1, good1.clone()).await.unwrap().0,
            StatusCode::NOT_FOUND,
            "unknown client"
        );
        let unknown = put_sealed(http, &urls[0], &"0".repeat(64), 1, &t1, good1.clone())
            .await
            .unwrap()
            .0;
        assert_eq!(unknown, StatusCode::NOT_FOUND);
        // Admin endpoints: no token 401, a client's token 403.
        let r = http
            .get(format!("{}/rounds/{id}/received", urls[0]))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let r = http
            .get(format!("{}/rounds/{id}/received", urls[0]))
            .bearer_auth(&t0)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let r = http
            .put(format!("{}/rounds/{id}", urls[0]))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/dpdist-round-config")
            .body(other.config_bytes().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::BAD_REQUEST,
            "config does not hash to the id"
        );
        let mut same_number = other.spec.clone();
        same_number.round = 302;
        same_number.bound = 9.0;
        let conflicting = same_number.validate().unwrap();
        let r = http
            .put(format!("{}/rounds/{}", urls[0], conflicting.id()))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", "application/dpdist-round-config")
            .body(conflicting.config_bytes().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::CONFLICT,
            "round number taken by another config"
        );
        let r = http
            .get(format!("{}/rounds/{id}/sum", urls[0]))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "no sum before close");
        // Still alive, and only client 0 stored.
        assert_eq!(
            http.get(format!("{}/healthz", urls[0]))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::OK
        );
        assert_eq!(agg.statuses(&round).await.unwrap()[0].received, 1);

        // Clients 1..5 upload; client 0 to node 1 too. Release with one dropout (≤ T).
        let m0_node1 = seal_for(&round, 0, 1, &Encode::get_encoded(&m0[1]).unwrap()).unwrap();
        upload_sealed(http, &urls[1], &id, 0, &t0, &m0_node1)
            .await
            .unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 1..5u64 {
            let (http, round, urls) = (http.clone(), round.clone(), urls.clone());
            tasks.spawn(async move {
                upload(
                    &http,
                    &round,
                    &urls,
                    i,
                    &client_token(i),
                    &values(i as usize, 3),
                    RngSource::InsecureFixedSeed(1),
                )
                .await
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.unwrap().unwrap();
        }
        // Client 5 reached node 0 only: the agreed set excludes it and node 0 retracts it.
        let m5 = msg(5, 1);
        upload_sealed(
            http,
            &urls[0],
            &id,
            5,
            &client_token(5),
            &seal_for(&round, 5, 0, &Encode::get_encoded(&m5[0]).unwrap()).unwrap(),
        )
        .await
        .unwrap();
        let released = agg.release(&round).await.unwrap();
        assert_eq!(released.clients, vec![0, 1, 2, 3, 4]);
        let f = round.config.codec().frac_bits();
        for j in 0..3 {
            let expect: i64 = (0..5)
                .map(|i| (values(i, 3)[j] * 2f64.powi(f as i32)).round() as i64)
                .sum();
            assert_eq!(released.sum_units[j], expect);
        }
        // After close: shares refused; no second release (also after an aggregator restart).
        let late = seal_for(&round, 5, 1, &Encode::get_encoded(&m5[1]).unwrap()).unwrap();
        assert_eq!(
            put_sealed(http, &urls[1], &id, 5, &client_token(5), late)
                .await
                .unwrap()
                .0,
            StatusCode::CONFLICT
        );
        assert!(matches!(
            agg.release(&round).await,
            Err(Error::AlreadyReleased)
        ));
        drop(agg);
        let again = cluster.aggregator("agg.sqlite");
        assert!(matches!(
            again.release(&round).await,
            Err(Error::AlreadyReleased)
        ));
        assert_eq!(again.published(&round).unwrap().unwrap(), released);
        // Closing again with another set (node 0's own pairs, client 5 included) is refused.
        let node0 = again.received_sets(&round).await.unwrap().swap_remove(0);
        assert_eq!(node0.len(), 6);
        let r = http
            .post(format!("{}/rounds/{id}/close", urls[0]))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", dca_service::MEDIA_PAIR_SET)
            .body(node0.get_encoded().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT);
        // A close request without the shard ids is malformed.
        let encoded = node0.get_encoded().unwrap();
        let r = http
            .post(format!("{}/rounds/{id}/close", urls[0]))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", dca_service::MEDIA_PAIR_SET)
            .body(encoded[..encoded.len() - 8 * node0.len()].to_vec())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    })
    .await
    .expect("test exceeded its time limit");
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_closes_uploads_and_a_node_killed_after_close_recomputes_its_sum(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("deadline", 3, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let mut s = spec(401, 12, 2, 4, "seed", Some(3.0), keys);
        // Long enough for the 11 uploads on a loaded 2-core machine (2 s was not, at load 9).
        s.deadline_unix_ms = dca_service::node::now_ms() + 6_000;
        let round = agg.create_round(s).await.unwrap();
        // Client 11 never comes; the aggregator waits until the deadline (bounded by it).
        upload_all(&cluster, &round, 0..11).await;
        agg.wait_for_uploads(&round, Duration::from_millis(50))
            .await
            .unwrap();
        assert!(dca_service::node::now_ms() >= round.spec.deadline_unix_ms);
        // A late share is refused: a node takes uploads up to the deadline's millisecond, so the
        // share is sent once that millisecond is over (an upload within it was taken, at load).
        while dca_service::node::now_ms() <= round.spec.deadline_unix_ms {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let late = Client::new(
            &round.config,
            ClientId(11),
            RngSource::InsecureFixedSeed(SEED).derive(11),
        )
        .unwrap()
        .shard(&values(11, 4))
        .unwrap();
        let sealed = seal_for(&round, 11, 0, &Encode::get_encoded(&late[0]).unwrap()).unwrap();
        let (status, _) = put_sealed(
            &cluster.http,
            &cluster.nodes[0].url,
            &round.id(),
            11,
            &client_token(11),
            sealed,
        )
        .await
        .unwrap();
        assert_eq!(status, StatusCode::CONFLICT);
        // Node 2 is closed by hand and killed at once, before or while it computes its sum;
        // after a restart it recomputes the sum from its store, and the release is exact.
        let node2 = agg.received_sets(&round).await.unwrap().swap_remove(2);
        assert_eq!(node2.len(), 11);
        let r = cluster
            .http
            .post(format!(
                "{}/rounds/{}/close",
                cluster.nodes[2].url,
                round.id()
            ))
            .bearer_auth(ADMIN_TOKEN)
            .header("content-type", dca_service::MEDIA_PAIR_SET)
            .body(node2.get_encoded().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        cluster.restart(2);
        let net = agg.release(&round).await.unwrap();
        let local = in_process(&round, &[11]);
        assert_eq!(net.sum_units, local.sum_units);
        assert_eq!(bits(&net.sum), bits(&local.sum));
        assert_eq!(net.clients, (0..11).collect::<Vec<u64>>());
        // Restarted once more, node 2 loads the round closed with its sum stored (agreed set
        // read back from the store, the sum not recomputed) and serves the same bytes.
        let http = cluster.http.clone();
        let fetch_sum = |url: String| {
            let http = http.clone();
            async move {
                let r = http.get(url).bearer_auth(ADMIN_TOKEN).send().await.unwrap();
                assert_eq!(r.status(), StatusCode::OK);
                r.bytes().await.unwrap()
            }
        };
        let sum_url = format!("{}/rounds/{}/sum", cluster.nodes[2].url, round.id());
        let before = fetch_sum(sum_url.clone()).await;
        cluster.restart(2);
        let status = agg.statuses(&round).await.unwrap().swap_remove(2);
        assert_eq!(
            (status.state.as_str(), status.sum.as_str()),
            ("closed", "ready")
        );
        assert_eq!(status.received, 11);
        assert_eq!(fetch_sum(sum_url).await, before);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A client that sharded twice and whose nodes hold different attempts (node 0 the first, node 1
/// the retry; each node accepted the one share it got) is left out of the agreed set and
/// removed by both nodes: the release is the exact sum of the others, in both share modes —
/// never a sum with masks that do not cancel.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_nodes_hold_different_attempts_is_left_out(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("attempts", 2, store) else {
            return;
        };
        let agg = cluster.aggregator("agg.sqlite");
        let keys = agg.node_keys().await.unwrap();
        let urls = cluster.urls();
        for (k, mode) in ["seed", "full"].into_iter().enumerate() {
            let round = agg
                .create_round(spec(501 + k as u64, 6, 1, 3, mode, None, keys.clone()))
                .await
                .unwrap();
            let id = round.id();
            upload_all(&cluster, &round, 0..5).await;
            let wire = |set: &fixedpoint_shares::ShardSet| set.get_encoded().unwrap();
            // A set naming a client node 0 never received: 409, and the round stays open.
            let mut more = agg.received_sets(&round).await.unwrap().swap_remove(0);
            more.insert(ClientId(5), fixedpoint_shares::ShardId(1))
                .unwrap();
            let got = post_close(&cluster.http, &urls[0], &id, wire(&more)).await;
            assert_eq!(got, StatusCode::CONFLICT, "{mode}");
            let attempt = |seed: u64| {
                Client::new(
                    &round.config,
                    ClientId(5),
                    RngSource::InsecureFixedSeed(seed),
                )
                .unwrap()
                .shard(&values(5, 3))
                .unwrap()
            };
            let (first, retry) = (attempt(1), attempt(2));
            assert_ne!(first[0].shard, retry[0].shard);
            for (node, message) in [(0usize, &first[0]), (1, &retry[1])] {
                let sealed = seal_for(
                    &round,
                    5,
                    node as u16,
                    &Encode::get_encoded(message).unwrap(),
                )
                .unwrap();
                let (status, _) =
                    put_sealed(&cluster.http, &urls[node], &id, 5, &client_token(5), sealed)
                        .await
                        .unwrap();
                assert_eq!(status, StatusCode::CREATED, "{mode}: node {node}");
            }
            let sets = agg.received_sets(&round).await.unwrap();
            assert!(
                sets.iter().all(|s| s.len() == 6),
                "both nodes hold client 5"
            );
            assert_ne!(sets[0].shard(ClientId(5)), sets[1].shard(ClientId(5)));
            // Close requests node 0 refuses, staying open: node 1's pairs name another
            // attempt of client 5 (409); a set over another N, a count that disagrees with
            // the bitset, a shard id missing (400).
            let good = wire(&sets[1]);
            let mut miscounted = good.clone();
            miscounted[16] ^= 1;
            for (body, want, what) in [
                (good.clone(), 409, "another attempt"),
                (
                    wire(&fixedpoint_shares::ShardSet::empty(7)),
                    400,
                    "another N",
                ),
                (miscounted, 400, "count"),
                (good[..good.len() - 8].to_vec(), 400, "truncated"),
            ] {
                let got = post_close(&cluster.http, &urls[0], &id, body).await;
                assert_eq!(got.as_u16(), want, "{mode}: {what}");
            }

            let released = agg.release(&round).await.unwrap();
            assert_eq!(released.clients, vec![0, 1, 2, 3, 4], "{mode}");
            // The same close again: 200 (idempotent).
            let agreed = fixedpoint_shares::agree(&sets.iter().collect::<Vec<_>>()).unwrap();
            let got = post_close(&cluster.http, &urls[0], &id, wire(&agreed)).await;
            assert_eq!(got, StatusCode::OK, "{mode}");
            let f = round.config.codec().frac_bits();
            for j in 0..3 {
                let expect: i64 = (0..5)
                    .map(|i| (values(i, 3)[j] * 2f64.powi(f as i32)).round() as i64)
                    .sum();
                assert_eq!(released.sum_units[j], expect, "{mode}: coordinate {j}");
            }
        }
    })
    .await
    .expect("test exceeded its time limit");
}
