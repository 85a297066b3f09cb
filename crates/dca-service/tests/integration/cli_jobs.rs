//! `dpdist participant` and `dpdist job` name the file and the cause of every error, before any
//! network work: no server is started here, and a command that got past its checks would fail on
//! the unreachable aggregator instead (and the message checks below would fail).

use std::path::PathBuf;
use std::process::Command;

fn dpdist(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dpdist"))
        .args(args)
        .output()
        .expect("dpdist runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-jobs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const POLICY: &str = "columns = [\"a\", \"y\"]\nmax_epsilon_per_job = 1\ntotal_epsilon = 2\n";

fn participant(dir: &std::path::Path, data: &str) -> (bool, String) {
    let p = |f: &str| dir.join(f).display().to_string();
    dpdist(&[
        "participant",
        "--aggregator",
        "https://127.0.0.1:1",
        "--ca",
        &p("ca.pem"),
        "--token-file",
        &p("token"),
        "--data",
        &p(data),
        "--policy",
        &p("policy.toml"),
        "--state-dir",
        &p("state"),
        "--job",
        "00",
    ])
}

#[test]
fn a_participant_names_the_file_line_and_column_of_bad_data_and_writes_nothing() {
    let dir = scratch("data");
    std::fs::write(dir.join("policy.toml"), POLICY).unwrap();
    std::fs::write(dir.join("token"), "t").unwrap();
    std::fs::write(dir.join("ok.csv"), "a,y\n1,2\n").unwrap();
    std::fs::write(dir.join("word.csv"), "a,y\n1,2\n3,four\n").unwrap();
    std::fs::write(dir.join("hole.csv"), "a,y\n1,2\n,3\n").unwrap();
    let (ok, out) = participant(&dir, "missing.csv");
    assert!(!ok && out.contains("missing.csv"), "{out}");
    let (ok, out) = participant(&dir, "word.csv");
    assert!(
        !ok && out.contains("word.csv") && out.contains("line 3"),
        "{out}"
    );
    let (ok, out) = participant(&dir, "hole.csv");
    assert!(
        !ok && out.contains("hole.csv") && out.contains("line 3"),
        "{out}"
    );
    assert!(
        !dir.join("state").exists(),
        "nothing written for a bad file"
    );
    // A good file gets as far as the CA file, which is named.
    let (ok, out) = participant(&dir, "ok.csv");
    assert!(
        !ok && out.contains("--ca") && out.contains("ca.pem"),
        "{out}"
    );
}

#[test]
fn a_participant_names_a_bad_policy() {
    let dir = scratch("policy");
    std::fs::write(dir.join("ok.csv"), "a,y\n1,2\n").unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "columns = [\"a\"]\nmax_epsilon_per_job = -1\ntotal_epsilon = 2\n",
    )
    .unwrap();
    let (ok, out) = participant(&dir, "ok.csv");
    assert!(
        !ok && out.contains("policy.toml") && out.contains("max_epsilon_per_job"),
        "{out}"
    );
    std::fs::remove_file(dir.join("policy.toml")).unwrap();
    let (ok, out) = participant(&dir, "ok.csv");
    assert!(
        !ok && out.contains("--policy") && out.contains("policy.toml"),
        "{out}"
    );
}

#[test]
fn a_job_file_is_checked_before_the_aggregator_is_asked() {
    let dir = scratch("job");
    let p = |f: &str| dir.join(f).display().to_string();
    let job = |epsilon: &str| {
        format!(
            "kind = \"blr\"\nepsilon = {epsilon}\ndelta = 1e-5\nmax_dropped = 1\n\
             roster = [\"{}\", \"{}\", \"{}\"]\n[target]\nname = \"y\"\nlo = 0\nhi = 1\n\
             [[features]]\nname = \"a\"\nlo = 0\nhi = 1\n",
            "a".repeat(64),
            "b".repeat(64),
            "c".repeat(64)
        )
    };
    let create = || {
        dpdist(&[
            "job",
            "create",
            "--aggregator",
            "https://127.0.0.1:1",
            "--ca",
            &p("ca.pem"),
            "--analyst-token-file",
            &p("analyst.token"),
            "--spec",
            &p("job.toml"),
        ])
    };
    let (ok, out) = create();
    assert!(
        !ok && out.contains("--spec") && out.contains("job.toml"),
        "{out}"
    );
    std::fs::write(dir.join("job.toml"), job("0")).unwrap();
    let (ok, out) = create();
    assert!(!ok && out.contains("epsilon"), "{out}");
    std::fs::write(dir.join("job.toml"), job("1") + "unknown = 1\n").unwrap();
    let (ok, out) = create();
    assert!(!ok && out.contains("unknown"), "{out}");
    // A valid file gets as far as the CA file.
    std::fs::write(dir.join("job.toml"), job("1")).unwrap();
    let (ok, out) = create();
    assert!(
        !ok && out.contains("--ca") && out.contains("ca.pem"),
        "{out}"
    );
}

/// `job create` takes the kind from the job file: a `train` job needs its `[train]` table (and
/// each of its fields is checked, `intercept` a boolean if given), a `sum` job must not have one; valid files of both kinds get
/// as far as the CA file.
#[test]
fn train_and_sum_job_files_are_checked_before_the_aggregator_is_asked() {
    let dir = scratch("kinds");
    let p = |f: &str| dir.join(f).display().to_string();
    let job = |kind: &str, extra: &str| {
        format!(
            "kind = \"{kind}\"\nepsilon = 1\ndelta = 1e-5\nmax_dropped = 1\n\
             roster = [\"{}\", \"{}\", \"{}\"]\n[target]\nname = \"y\"\nlo = 0\nhi = 1\n\
             [[features]]\nname = \"a\"\nlo = 0\nhi = 1\n{extra}",
            "a".repeat(64),
            "b".repeat(64),
            "c".repeat(64)
        )
    };
    let train = |rate: &str| {
        format!(
            "[train]\niterations = 10\nclip_norm = 1\nsampling_rate = {rate}\n\
             learning_rate = 0.1\noptimizer = \"adam\"\n"
        )
    };
    let create = |text: String| {
        std::fs::write(dir.join("job.toml"), text).unwrap();
        dpdist(&[
            "job",
            "create",
            "--aggregator",
            "https://127.0.0.1:1",
            "--ca",
            &p("ca.pem"),
            "--analyst-token-file",
            &p("analyst.token"),
            "--spec",
            &p("job.toml"),
        ])
    };
    let cases = [
        (job("train", ""), "[train]"),
        (job("train", &train("2")), "sampling_rate"),
        (job("train", &(train("0.5") + "momentum = 1\n")), "momentum"),
        (
            job("train", &(train("0.5") + "intercept = \"no\"\n")),
            "intercept",
        ),
        (job("sum", &train("0.5")), "not for a \"sum\" job"),
        (
            job("regression", &train("0.5")),
            "not for a \"regression\" job",
        ),
        (
            job("regression", "").replace("lo = 0\nhi = 1\n[[", "lo = 1\nhi = 1\n[["),
            "finite bounds lo < hi",
        ),
        (job("mean", ""), "not supported"),
        (
            job("train", &train("0.5")).replace("[target]", "mode = \"full\"\n[target]"),
            "seed",
        ),
        (
            job(
                "sum",
                "[validity]\nkind = \"l2\"\ndata_norm = 1\ntruncation_delta = 1e-9\n",
            ),
            "jobs take \"linf\"",
        ),
        (
            job(
                "sum",
                "[validity]\nkind = \"linf\"\ntruncation_delta = 1e-3\n",
            ),
            "takes all of δ",
        ),
        (
            job("sum", "[validity]\nkind = \"box\"\n"),
            "unknown variant",
        ),
    ];
    for (text, word) in cases {
        let (ok, out) = create(text);
        assert!(!ok && out.contains(word), "{word}: {out}");
    }
    for text in [
        job("train", &train("0.5")),
        job("train", &(train("0.5") + "intercept = false\n")),
        job("sum", ""),
        job("regression", ""),
    ] {
        let (ok, out) = create(text);
        assert!(
            !ok && out.contains("--ca") && out.contains("ca.pem"),
            "{out}"
        );
    }
}

/// `job predict` names the file and the cause of bad input: a result of another kind or not a
/// result at all, a data file without a column the model reads, a cell that is not a number.
#[test]
fn job_predict_names_the_file_and_cause_of_bad_input() {
    let dir = scratch("predict");
    let p = |f: &str| dir.join(f).display().to_string();
    let regression = r#"{
  "kind": "regression",
  "names": ["(Intercept)", "a"],
  "coefficients": [5.0, 2.0],
  "std_errors": [0.1, null],
  "target": "y",
  "r_squared": 0.5,
  "r_squared_sd": 0.01,
  "residual_sd": 1.0,
  "constant": 5.0,
  "records": 100,
  "warnings": null,
  "spent_epsilon": 1.0,
  "spent_delta": 1e-5,
  "design": {"x": [{"lower": -1.0, "upper": 1.0}], "y": {"lower": 0.0, "upper": 10.0},
             "intercept": true, "shares": {"gram": 0.45, "cross": 0.45, "yy": 0.1}}
}"#;
    std::fs::write(dir.join("regression.json"), regression).unwrap();
    std::fs::write(
        dir.join("blr.json"),
        r#"{"mean":[1.0],"precision":[1.0],"stats":[],"records":1,"std":null,
            "thresholds":null,"spent_epsilon":1.0,"spent_delta":1e-5}"#,
    )
    .unwrap();
    std::fs::write(dir.join("garbage.json"), "{\"kind\": \"regression\"").unwrap();
    std::fs::write(dir.join("good.csv"), "b,a\n1,0.5\n2,3\n").unwrap();
    std::fs::write(dir.join("no-a.csv"), "b,c\n1,0.5\n").unwrap();
    std::fs::write(dir.join("text.csv"), "b,a\n1,0.5\n2,high\n").unwrap();
    let predict = |result: &str, data: &str| {
        dpdist(&["job", "predict", "--result", &p(result), "--data", &p(data)])
    };
    let cases = [
        ("blr.json", "good.csv", "\"blr\" job's result", "blr.json"),
        ("garbage.json", "good.csv", "not JSON", "garbage.json"),
        ("missing.json", "good.csv", "--result", "missing.json"),
        ("regression.json", "no-a.csv", "column \"a\"", "no-a.csv"),
        ("regression.json", "text.csv", "line 3", "text.csv"),
    ];
    for (result, data, word, file) in cases {
        let (ok, out) = predict(result, data);
        assert!(
            !ok && out.contains(word) && out.contains(file),
            "{word}: {out}"
        );
    }
    // 5 + 2·0.5, and a = 3 clipped to its range's top 1: 5 + 2.
    let (ok, out) = predict("regression.json", "good.csv");
    assert!(ok, "{out}");
    assert_eq!(out, "y\n6\n7\n");
}

/// A `train` job's result does not hold the job's feature map: `job predict --result` names
/// the way that does (`--job`), and `--job` comes with its connection, never with `--result`.
#[test]
fn job_predict_of_a_train_result_points_to_the_job() {
    let dir = scratch("predict-train");
    let p = |f: &str| dir.join(f).display().to_string();
    std::fs::write(
        dir.join("train.json"),
        r#"{"weights":[0.4,-0.2],"intercept":0.3,"sums":[],"records":12,
            "noise_multiplier":1.5}"#,
    )
    .unwrap();
    std::fs::write(dir.join("good.csv"), "b,a\n1,0.5\n").unwrap();
    let (ok, out) = dpdist(&[
        "job",
        "predict",
        "--result",
        &p("train.json"),
        "--data",
        &p("good.csv"),
    ]);
    assert!(
        !ok && out.contains("\"train\" job's result")
            && out.contains("--job <id>")
            && out.contains("train.json"),
        "{out}"
    );
    let job = "00".repeat(32);
    let conn = [
        "--aggregator",
        "https://127.0.0.1:1",
        "--ca",
        "ca.pem",
        "--analyst-token-file",
        "token",
    ];
    let refused: [Vec<&str>; 3] = [
        // `--job` without its connection.
        vec!["--job", &job, "--data", "good.csv"],
        // Both ways at once.
        [
            &["--job", job.as_str(), "--result", "train.json"][..],
            &conn[..],
        ]
        .concat(),
        // A connection without `--job`.
        [&["--result", "train.json"][..], &conn[..]].concat(),
    ];
    for args in refused {
        let mut args = args;
        if !args.contains(&"--data") {
            args.extend(["--data", "good.csv"]);
        }
        let (ok, out) = dpdist(&[&["job", "predict"][..], &args[..]].concat());
        assert!(!ok && out.contains("--job"), "{args:?}: {out}");
    }
}
