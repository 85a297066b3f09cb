//! The services under faults: damaged stores and lost close requests. Node processes of the
//! `dpdist` binary on loopback, killed on drop; every wait bounded.

#![allow(missing_docs)]

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::StatusCode;
use common::*;
use dca_service::Error;
use dca_service::aggregator::Aggregator;
use dca_service::client::{put_sealed, seal_for};
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
fn flip_stored(cluster: &Cluster, k: usize, round: &dca_service::spec::Round, client: Option<u64>) {
    let id = round.id();
    let Some(pg) = &cluster.pg else {
        let (table, column, select) = match client {
            Some(c) => (
                "shares",
                "message",
                format!(
                    "SELECT rowid, message FROM shares WHERE round_id = X'{id}' AND client = {c}"
                ),
            ),
            None => (
                "round_sums",
                "sum",
                format!("SELECT rowid, sum FROM round_sums WHERE id = X'{id}'"),
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
/// finalize or serve it, and the aggregator releases nothing — never a wrong sum.
async fn a_damaged_share_or_node_sum_is_refused_never_released(store: Store) {
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
            let got = agg.release(round).await;
            let Err(Error::Http(message)) = &got else {
                panic!("round {}: {got:?}", round.spec.round)
            };
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
async fn a_lost_close_and_a_late_client_do_not_leave_the_round_stuck(store: Store) {
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

both_stores!(
    a_damaged_share_or_node_sum_is_refused_never_released,
    a_lost_close_and_a_late_client_do_not_leave_the_round_stuck,
);
