//! The `dpdist` CLI's errors name their cause and say how to fix it: every I/O error names the
//! option and the path (token files, data files, state directories), a job on too few rows is
//! warned that noise dominates its statistics, and a reused round number says how to avoid it.
//! Processes are killed when their guard drops and every run is bounded in time; loopback only.

#![allow(missing_docs)]

use crate::common;
use rstest::rstest;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

const QUICK: Duration = Duration::from_secs(60);

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The first `rows` diabetes records at `dir/<name>.csv`, with the public bounds schema beside
/// them (`<name>.bounds.csv`, the default `--bounds`).
fn diabetes_rows(dir: &Path, name: &str, rows: usize) -> PathBuf {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data/");
    let text = std::fs::read_to_string(format!("{root}diabetes.csv")).unwrap();
    let head: String = text
        .lines()
        .take(rows + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let csv = dir.join(format!("{name}.csv"));
    std::fs::write(&csv, head).unwrap();
    std::fs::copy(
        format!("{root}diabetes.bounds.csv"),
        dir.join(format!("{name}.bounds.csv")),
    )
    .unwrap();
    csv
}

/// `dpdist blr` against `aggregator` (no server needed when it fails first) with `extra` flags.
fn blr(aggregator: &str, ca: &Path, token: &Path, data: &Path, extra: &[&str]) -> (bool, String) {
    let mut args = vec![
        "blr",
        "--aggregator",
        aggregator,
        "--ca",
        s(ca),
        "--analyst-token-file",
        s(token),
        "--data",
        s(data),
    ];
    args.extend_from_slice(extra);
    dpdist(&args, Duration::from_secs(240))
}

#[test]
fn a_missing_data_file_is_named_with_its_option() {
    let dir = Scratch::new("cli-errors-data");
    let certs = make_certs(&dir.path);
    let token = dir.path.join("analyst.token");
    std::fs::write(&token, ANALYST_TOKEN).unwrap();
    let missing = dir.path.join("no-such-rows.csv");
    let (ok, out) = blr(
        "https://127.0.0.1:1",
        &certs.dir.join("ca.pem"),
        &token,
        &missing,
        &[],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("--data {}", missing.display())),
        "{out}"
    );
    // The bounds schema beside it is a file of its own, named with its option.
    let data = dir.path.join("rows.csv");
    std::fs::write(&data, "a,target\n1,2\n").unwrap();
    let (ok, out) = blr(
        "https://127.0.0.1:1",
        &certs.dir.join("ca.pem"),
        &token,
        &data,
        &[],
    );
    assert!(!ok, "{out}");
    let schema = dir.path.join("rows.bounds.csv");
    assert!(
        out.contains(&format!("--bounds {}", schema.display())),
        "{out}"
    );
}

#[test]
fn a_missing_token_file_is_named_with_its_option() {
    let dir = Scratch::new("cli-errors-token");
    let certs = make_certs(&dir.path);
    let data = diabetes_rows(&dir.path, "rows", 30);
    let missing = dir.path.join("no-such.token");
    // The CA and the data are read first and are fine; the token file is next.
    let (ok, out) = blr(
        "https://127.0.0.1:1",
        &certs.dir.join("ca.pem"),
        &missing,
        &data,
        &[],
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("--analyst-token-file {}", missing.display())),
        "{out}"
    );
    // The aggregator's: the node secret, then the analyst token.
    let db = dir.path.join("aggregator.sqlite");
    for (flag, admin, analyst) in [
        (
            "--admin-token-file",
            missing.clone(),
            certs.dir.join("admin.token"),
        ),
        (
            "--analyst-token-file",
            certs.dir.join("admin.token"),
            missing.clone(),
        ),
    ] {
        let (ok, out) = dpdist(
            &[
                "aggregator",
                "--listen",
                "127.0.0.1:0",
                "--cert",
                s(&certs.dir.join("server.pem")),
                "--key",
                s(&certs.dir.join("server.key")),
                "--ca",
                s(&certs.dir.join("ca.pem")),
                "--nodes",
                "https://127.0.0.1:1,https://127.0.0.1:2",
                "--admin-token-file",
                s(&admin),
                "--analyst-token-file",
                s(&analyst),
                "--db",
                s(&db),
            ],
            QUICK,
        );
        assert!(!ok, "{flag}: {out}");
        assert!(
            out.contains(&format!("{flag} {}", missing.display())),
            "{flag}: {out}"
        );
    }
}

#[test]
fn round_create_names_a_missing_tokens_file() {
    let dir = Scratch::new("cli-errors-tokens");
    let certs = make_certs(&dir.path);
    let missing = dir.path.join("no-such-tokens.txt");
    let (ok, out) = dpdist(
        &[
            "round",
            "create",
            "--nodes",
            "https://127.0.0.1:1,https://127.0.0.1:2",
            "--ca",
            s(&certs.dir.join("ca.pem")),
            "--spec",
            s(&dir.path.join("round.config")),
            "--admin-token-file",
            s(&certs.dir.join("admin.token")),
            "--db",
            s(&dir.path.join("aggregator.sqlite")),
            "--round-number",
            "1",
            "--n-clients",
            "10",
            "--max-dropped",
            "1",
            "--dim",
            "3",
            "--bound",
            "1",
            "--epsilon",
            "1",
            "--tokens-file",
            s(&missing),
        ],
        QUICK,
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("--tokens-file {}", missing.display())),
        "{out}"
    );
}

/// SQLite only by nature: what is checked is how a directory and a `--db` file path that cannot
/// be made are named.
#[test]
fn a_state_dir_that_cannot_be_made_is_named_with_its_option() {
    let dir = Scratch::new("cli-errors-state");
    let certs = make_certs(&dir.path);
    // A regular file where a directory is needed: creating anything under it fails.
    let file = dir.path.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let under_file = file.join("state");

    let (ok, out) = dpdist(
        &[
            "node",
            "--index",
            "0",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            s(&certs.dir.join("server.pem")),
            "--key",
            s(&certs.dir.join("server.key")),
            "--data-dir",
            s(&under_file),
            "--admin-token-file",
            s(&certs.dir.join("admin.token")),
        ],
        QUICK,
    );
    assert!(!ok, "{out}");
    assert!(
        out.contains(&format!("--data-dir {}", under_file.display())),
        "{out}"
    );

    let db = under_file.join("aggregator.sqlite");
    let (ok, out) = dpdist(
        &[
            "round",
            "status",
            "--nodes",
            "https://127.0.0.1:1,https://127.0.0.1:2",
            "--ca",
            s(&certs.dir.join("ca.pem")),
            "--spec",
            s(&dir.path.join("round.config")),
            "--admin-token-file",
            s(&certs.dir.join("admin.token")),
            "--db",
            s(&db),
        ],
        QUICK,
    );
    assert!(!ok, "{out}");
    assert!(out.contains(&format!("--db {}", db.display())), "{out}");
}

#[test]
fn a_participant_names_its_missing_files() {
    let dir = Scratch::new("cli-errors-participant");
    let certs = make_certs(&dir.path);
    let data = diabetes_rows(&dir.path, "rows", 3);
    let policy = dir.path.join("policy.toml");
    std::fs::write(
        &policy,
        "columns = [\"age\", \"sex\", \"bmi\", \"bp\", \"s1\", \"s2\", \"s3\", \"s4\", \"s5\", \
         \"s6\", \"target\"]\nmax_epsilon_per_job = 2.0\ntotal_epsilon = 10.0\n",
    )
    .unwrap();
    let token = dir.path.join("p.token");
    std::fs::write(&token, "participant-token").unwrap();
    let missing = dir.path.join("missing");
    let file = dir.path.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let participant = |data: &Path, token: &Path, state: &Path| {
        dpdist(
            &[
                "participant",
                "--aggregator",
                "https://127.0.0.1:1",
                "--ca",
                s(&certs.dir.join("ca.pem")),
                "--token-file",
                s(token),
                "--data",
                s(data),
                "--policy",
                s(&policy),
                "--state-dir",
                s(state),
                "--job",
                "00",
            ],
            QUICK,
        )
    };
    let state = dir.path.join("state");
    for (what, (ok, out), path) in [
        ("--data", participant(&missing, &token, &state), &missing),
        (
            "--token-file",
            participant(&data, &missing, &state),
            &missing,
        ),
        (
            "--state-dir",
            participant(&data, &token, &file.join("state")),
            &file.join("state"),
        ),
    ] {
        assert!(!ok, "{what}: {out}");
        assert!(
            out.contains(&format!("{what} {}", path.display())),
            "{what}: {out}"
        );
    }
}

/// Issue 25 items 6 and 10 through the real CLI against an aggregator and its nodes: `dpdist
/// blr` on 19 rows warns that noise dominates the statistics; a second job reusing the round
/// numbers is refused with how to fix it, and `--round-offset` fixes it. `dpdist blr
/// --regression` on the 19 rows is the constant predictor and says why.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blr_on_few_rows_warns_and_a_reused_round_number_says_how_to_fix_it(#[case] store: Store) {
    let Some(cluster) = Cluster::start_on("cli-errors-blr", 2, store) else {
        return;
    };
    let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
    let ca = cluster.certs.dir.join("ca.pem");
    let token = cluster.dir.join("analyst.token");
    let run = |data: &Path, extra: &[&str]| {
        let mut flags = vec!["--epsilon", "1", "--upload-secs", "120"];
        flags.extend_from_slice(extra);
        blr(&aggregator.url, &ca, &token, data, &flags)
    };

    let rows19 = diabetes_rows(&cluster.dir, "rows19", 19);
    let (ok, out) = run(&rows19, &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("dpdist: WARNING: the noise of the released statistics"),
        "{out}"
    );
    assert!(
        out.contains("with 19 rows at ε = 1 the fit is dominated by noise"),
        "{out}"
    );
    assert!(out.contains("privacy-rows-per-epsilon.md"), "{out}");

    // Another data set (20 rows: another round configuration) under the same round numbers.
    let rows20 = diabetes_rows(&cluster.dir, "rows20", 20);
    let (ok, out) = run(&rows20, &[]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("round number 1 was already used with another configuration"),
        "{out}"
    );
    assert!(
        out.contains("hint: round numbers are unique per aggregator"),
        "{out}"
    );
    assert!(out.contains("--round-offset"), "{out}");

    // What the hint says works.
    let (ok, out) = run(&rows20, &["--round-offset", "10"]);
    assert!(ok, "{out}");

    // The regression with an intercept on the 19 rows is the in-process fit, and the constant
    // (the noise swamps 19 rows at ε = 1): it says why, on stderr and in its warnings (never
    // null then); `job predict` reads its report.
    let (ok, out) = run(
        &rows19,
        &[
            "--regression",
            "--round-offset",
            "20",
            "--insecure-seed",
            "7",
        ],
    );
    assert!(ok, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out[out.rfind("\n{\n").unwrap()..])
        .unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(report["bit_identical_to_in_process"], true, "{out}");
    // Every slope 0: the fit is the constant, and each warning is printed.
    let coefficients = report["regression"]["coefficients"].as_array().unwrap();
    assert!(coefficients[1..].iter().all(|b| b == 0.0), "{out}");
    let warnings = report["regression"]["warnings"]
        .as_array()
        .expect("warnings");
    assert!(!warnings.is_empty(), "{out}");
    for w in warnings {
        let printed = format!("dpdist: WARNING: {}", w.as_str().unwrap());
        assert!(out.contains(&printed), "{out}");
    }
    let report_file = cluster.dir.join("regression.json");
    std::fs::write(&report_file, &out[out.rfind("\n{\n").unwrap()..]).unwrap();
    let (ok, predicted) = dpdist(
        &[
            "job",
            "predict",
            "--result",
            s(&report_file),
            "--data",
            s(&rows19),
        ],
        QUICK,
    );
    assert!(ok, "{predicted}");
    let constant = report["regression"]["constant"].as_f64().unwrap();
    let lines: Vec<&str> = predicted.lines().collect();
    assert_eq!((lines[0], lines.len()), ("target", 20), "{predicted}");
    let close = |l: &&str| (l.parse::<f64>().unwrap() - constant.clamp(0.0, 400.0)).abs() < 1e-9;
    assert!(lines[1..].iter().all(close), "{predicted}");
    drop(aggregator);
}

/// `dpdist node --store`: another scheme, a URL without a database and a server that is not
/// there each stop the node at start with a message that names the URL (its password left out)
/// and the cause; nothing is served.
#[test]
fn a_node_store_url_that_cannot_be_used_is_named() {
    let dir = Scratch::new("cli-errors-store");
    let certs = make_certs(&dir.path);
    // A loopback port nothing listens on (bound, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("postgres://u:hunter2@127.0.0.1:{port}/db");
    for (url, says) in [
        ("mysql://u@127.0.0.1/db", "not a PostgreSQL URL".to_string()),
        (
            "postgres://u:hunter2@127.0.0.1:5432",
            "names no database".to_string(),
        ),
        (
            unreachable.as_str(),
            format!("postgres://u:***@127.0.0.1:{port}/db: cannot connect"),
        ),
    ] {
        let (ok, out) = dpdist(
            &[
                "node",
                "--index",
                "0",
                "--cert",
                s(&certs.dir.join("server.pem")),
                "--key",
                s(&certs.dir.join("server.key")),
                "--data-dir",
                s(&dir.path.join("data")),
                "--admin-token-file",
                s(&certs.dir.join("admin.token")),
                "--store",
                url,
            ],
            QUICK,
        );
        assert!(!ok, "{url}: {out}");
        assert!(
            out.contains("--store") || out.contains("postgres://"),
            "{out}"
        );
        assert!(out.contains(&says), "{url}: {out}");
        assert!(!out.contains("hunter2"), "{url}: {out}");
        assert!(!out.contains("listening on"), "{url}: {out}");
    }
}

/// `dpdist aggregator --store`: another scheme, a URL without a database and a server that is
/// not there each stop the aggregator at start with a message that names the URL (its password
/// left out) and the cause; nothing is served. Neither `--db` nor `--store` is refused too.
#[test]
fn an_aggregator_store_url_that_cannot_be_used_is_named() {
    let dir = Scratch::new("cli-errors-agg-store");
    let certs = make_certs(&dir.path);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("postgres://u:hunter2@127.0.0.1:{port}/db");
    let (pem, key, ca, token) = (
        certs.dir.join("server.pem"),
        certs.dir.join("server.key"),
        certs.dir.join("ca.pem"),
        certs.dir.join("admin.token"),
    );
    for (store, says) in [
        (
            Some("mysql://u:hunter2@127.0.0.1/db"),
            "not a PostgreSQL URL".to_string(),
        ),
        (
            Some("postgres://u:hunter2@127.0.0.1:5432"),
            "names no database".to_string(),
        ),
        (
            Some(unreachable.as_str()),
            format!("postgres://u:***@127.0.0.1:{port}/db: cannot connect"),
        ),
        (None, "--db".to_string()),
    ] {
        let mut args = vec![
            "aggregator",
            "--listen",
            "127.0.0.1:0",
            "--cert",
            s(&pem),
            "--key",
            s(&key),
            "--ca",
            s(&ca),
            "--nodes",
            "https://127.0.0.1:1,https://127.0.0.1:2",
            "--admin-token-file",
            s(&token),
            "--analyst-token-file",
            s(&token),
        ];
        if let Some(url) = store {
            args.extend(["--store", url]);
        }
        let (ok, out) = dpdist(&args, QUICK);
        assert!(!ok, "{store:?}: {out}");
        assert!(out.contains(&says), "{store:?}: {out}");
        assert!(!out.contains("hunter2"), "{store:?}: {out}");
        assert!(!out.contains("listening on"), "{store:?}: {out}");
    }
}

/// `dpdist round status|release --store`: a URL that cannot be used stops the command before
/// anything is asked of a node, naming the URL (its password left out) and the cause; `--db`
/// with `--store`, and neither, are refused naming the options.
#[test]
fn a_round_commands_store_url_that_cannot_be_used_is_named() {
    let dir = Scratch::new("cli-errors-round-store");
    let certs = make_certs(&dir.path);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("postgres://u:hunter2@127.0.0.1:{port}/db");
    let (ca, token, spec, db) = (
        certs.dir.join("ca.pem"),
        certs.dir.join("admin.token"),
        dir.path.join("round.config"),
        dir.path.join("aggregator.sqlite"),
    );
    for command in ["status", "release"] {
        for (store, with_db, says) in [
            (
                Some("mysql://u:hunter2@127.0.0.1/db"),
                false,
                "not a PostgreSQL URL".to_string(),
            ),
            (
                Some("postgres://u:hunter2@127.0.0.1:5432"),
                false,
                "names no database".to_string(),
            ),
            (
                Some(unreachable.as_str()),
                false,
                format!("postgres://u:***@127.0.0.1:{port}/db: cannot connect"),
            ),
            (
                Some("postgres://u:hunter2@127.0.0.1:5432/db"),
                true,
                "cannot be used with".to_string(),
            ),
            (None, false, "--db".to_string()),
        ] {
            let mut args = vec![
                "round",
                command,
                "--nodes",
                "https://127.0.0.1:1,https://127.0.0.1:2",
                "--ca",
                s(&ca),
                "--admin-token-file",
                s(&token),
                "--spec",
                s(&spec),
            ];
            if let Some(url) = store {
                args.extend(["--store", url]);
            }
            if with_db {
                args.extend(["--db", s(&db)]);
            }
            let (ok, out) = dpdist(&args, QUICK);
            assert!(!ok, "{command} {store:?}: {out}");
            assert!(out.contains(&says), "{command} {store:?}: {out}");
            if with_db {
                assert!(out.contains("--db") && out.contains("--store"), "{out}");
            }
            assert!(!out.contains("hunter2"), "{command} {store:?}: {out}");
        }
        assert!(!db.exists(), "no SQLite file is made when --store is given");
    }
}
