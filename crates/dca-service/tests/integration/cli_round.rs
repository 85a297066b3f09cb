//! One round by hand, as an operator runs it without the aggregator server: `dpdist round
//! create`, a `dpdist client upload` process per client, `round status`, `round release` (a
//! second one refused), against node processes on loopback, with the aggregator's state in a
//! SQLite file (`--db`) or a PostgreSQL database (`--store`). Every command is bounded in time.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::time::Duration;

use common::*;
use dca_service::protocol::messages::PublishedRelease;

const LIMIT: Duration = Duration::from_secs(120);
const N: u64 = 4;
const DIM: usize = 3;
/// The client that never uploads: a dropout within T = 1.
const SILENT: u64 = 3;

/// The last line of a command's output (its stdout's JSON; stderr comes first).
fn last_line(out: &str) -> &str {
    out.trim_end().lines().last().unwrap_or_default()
}

#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_round_by_hand_releases_the_in_process_sum_once(#[case] store: Store) {
    round_by_hand(store, false).await
}

/// The same with `--validity linf`: clients prove their contributions, the release names no one
/// invalid and reports δ_t.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_round_by_hand_releases_the_in_process_sum_once(#[case] store: Store) {
    round_by_hand(store, true).await
}

async fn round_by_hand(store: Store, verified: bool) {
    let secret = Scratch::new("cli-round-secret");
    std::fs::create_dir_all(&secret.path).unwrap();
    let secret_file = secret.path.join("verify.secret");
    std::fs::write(&secret_file, "0123456789abcdef0123456789abcdef-test-only\n").unwrap();
    let node_args = [
        "--max-body",
        "1048576",
        "--verify-secret-file",
        secret_file.to_str().unwrap(),
    ];
    let name = if verified {
        "cli-round-verified"
    } else {
        "cli-round"
    };
    let Some(cluster) = Cluster::start_on_with(name, 3, store, &node_args) else {
        return;
    };
    let dir = &cluster.dir;
    let (spec, tokens) = (dir.join("round.config"), dir.join("tokens.txt"));
    let tokens_text: String = (0..N).map(|i| client_token(i) + "\n").collect();
    std::fs::write(&tokens, tokens_text).unwrap();
    let nodes = cluster.urls().join(",");
    let (ca, admin) = (
        cluster.certs.dir.join("ca.pem"),
        cluster.certs.dir.join("admin.token"),
    );
    let store_args: Vec<String> = aggregator_store_args(&cluster, "aggregator.sqlite")
        .into_iter()
        .map(|a| a.into_string().unwrap())
        .collect();
    let mut common: Vec<&str> = vec![
        "--nodes",
        &nodes,
        "--ca",
        ca.to_str().unwrap(),
        "--admin-token-file",
        admin.to_str().unwrap(),
        "--spec",
        spec.to_str().unwrap(),
        "--budget-epsilon",
        "10",
    ];
    common.extend(store_args.iter().map(String::as_str));
    let with = |command: &[&str], extra: &[&str]| -> Vec<String> {
        command
            .iter()
            .chain(&common)
            .chain(extra)
            .map(|a| a.to_string())
            .collect()
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        dpdist(&args, LIMIT)
    };

    let (ok, out) = run(with(
        &["round", "create"],
        &[
            "--round-number",
            "1",
            "--n-clients",
            &N.to_string(),
            "--max-dropped",
            "1",
            "--dim",
            &DIM.to_string(),
            "--bound",
            "8",
            "--sigma",
            "1.5",
            "--l2-sensitivity",
            "1",
            "--tokens-file",
            tokens.to_str().unwrap(),
        ]
        .into_iter()
        .chain(
            verified
                .then_some(["--validity", "linf"])
                .into_iter()
                .flatten(),
        )
        .collect::<Vec<_>>(),
    ));
    assert!(ok, "round create: {out}");
    let round = dca_service::protocol::spec::decode_round_config(&std::fs::read(&spec).unwrap())
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(last_line(&out), round.id(), "round create prints the id");

    for i in (0..N).filter(|&i| i != SILENT) {
        let values: Vec<String> = values(i as usize, DIM).iter().map(f64::to_string).collect();
        let (ok, out) = dpdist(
            &[
                "client",
                "upload",
                "--nodes",
                &nodes,
                "--ca",
                ca.to_str().unwrap(),
                "--spec",
                spec.to_str().unwrap(),
                "--client",
                &i.to_string(),
                "--token",
                &client_token(i),
                "--values",
                &values.join(","),
                "--insecure-seed",
                &SEED.to_string(),
            ],
            LIMIT,
        );
        assert!(ok, "client {i} upload: {out}");
    }

    let (ok, out) = run(with(&["round", "status"], &[]));
    assert!(ok, "round status: {out}");
    let statuses: Vec<serde_json::Value> = serde_json::from_str(last_line(&out)).unwrap();
    assert_eq!(statuses.len(), 3, "one status per node: {out}");

    let (ok, out) = run(with(&["round", "release"], &[]));
    assert!(ok, "round release: {out}");
    let release: PublishedRelease = serde_json::from_str(last_line(&out)).unwrap();
    let expected = in_process(&round, &[SILENT]);
    assert_eq!(release.clients, vec![0, 1, 2]);
    assert_eq!(bits(&release.sum), bits(&expected.sum));
    assert_eq!(release.sum_units, expected.sum_units);
    assert!(release.spent_epsilon > 0.0, "the round was charged: {out}");
    assert_eq!(round.validity.is_some(), verified);
    assert_eq!(release.invalid, verified.then(Vec::new));
    assert_eq!(
        release.truncation_delta,
        round.validity.as_ref().map(|v| v.bound.truncation_delta())
    );

    let (ok, out) = run(with(&["round", "release"], &[]));
    assert!(!ok, "a second release must be refused: {out}");
    assert!(out.contains("released"), "{out}");
}
