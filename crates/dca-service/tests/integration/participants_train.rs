//! `train` and `sum` jobs over `dpdist participant` processes, each reading only its own CSV,
//! against 3 nodes and the aggregator on loopback. With the participants' `--insecure-seed`,
//! every release equals the in-process computation over the same rows grouped the same way:
//! dca-learning's trainer (`Trainer::with_clients`) for `train`, an in-process DCA round of
//! the participants' column sums for `sum`.

use crate::common;
use rstest::rstest;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::jobs::*;
use common::*;
use dca_learning::{
    ClientSampling, Model, Optimizer, Privacy, PrivacyLoss, Records, Trainer, TrainerConfig,
};
use dca_service::hex;
use dca_service::protocol::job::JobView;
use dca_service::protocol::job::round_rule::Rule;
use dca_service::protocol::job::train_settings::TrainSettings;
use dca_service::protocol::job::{ColumnBounds, JobKind, JobSpec, JobState};
use dca_service::protocol::spec::token_hash;
use dp_noise::rng::RngSource;

const HEADER: &str = "x1,x2,label";
const POLICY: &str =
    "columns = [\"x1\", \"x2\", \"label\"]\nmax_epsilon_per_job = 2.0\ntotal_epsilon = 10.0\n";

/// Row k of the synthetic data: two features in [−2, 2] and a 0/1 label that mostly follows
/// x1 − x2 (a few flipped, so that the gradients are not all alike).
fn row(k: usize) -> (f64, f64, f64) {
    let x1 = ((k * 37 % 41) as f64 - 20.0) / 10.0;
    let x2 = ((k * 13 % 29) as f64 - 14.0) / 7.0;
    let label = if (x1 - 0.5 * x2 > 0.0) != (k % 7 == 3) {
        1.0
    } else {
        0.0
    };
    (x1, x2, label)
}

fn column(name: &str, lo: f64, hi: f64) -> ColumnBounds {
    ColumnBounds {
        name: name.into(),
        lo,
        hi,
        group: None,
    }
}

/// A job of `kind`; a train job runs `iterations` iterations with Adam.
fn job_spec(kind: &str, roster: usize, max_rows: usize, iterations: u64) -> JobSpec {
    JobSpec {
        kind: JobKind::try_from(kind.to_string()).unwrap(),
        target: column("label", 0.0, 1.0),
        features: vec![column("x1", -2.0, 2.0), column("x2", -2.0, 2.0)],
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: 1,
        mode: "seed".into(),
        roster: (0..roster)
            .map(|i| hex::encode(&token_hash(&participant_token(i))))
            .collect(),
        max_rows,
        answer_window_ms: 60_000,
        upload_window_ms: 120_000,
        created_unix_ms: dca_service::node::now_ms(),
        public_seed: Some(SEED),
        clipped_share: None,
        validity: None,
        train: (kind == "train").then(|| TrainSettings {
            iterations,
            clip_norm: 1.0,
            sampling_rate: 0.5,
            learning_rate: 0.2,
            optimizer: "adam".into(),
            l2: 0.01,
            intercept: true,
        }),
    }
}

/// Participant i holds `counts[i]` consecutive rows of the synthetic data.
fn holdings(counts: &[usize]) -> Vec<Vec<(f64, f64, f64)>> {
    let mut k = 0;
    counts
        .iter()
        .map(|&n| {
            let rows = (k..k + n).map(row).collect();
            k += n;
            rows
        })
        .collect()
}

/// Participant `refusing`, if any, may not contribute `x2`.
fn write_participants(
    cluster: &Cluster,
    held: &[Vec<(f64, f64, f64)>],
    refusing: Option<usize>,
) -> Vec<PathBuf> {
    held.iter()
        .enumerate()
        .map(|(i, rows)| {
            let lines: Vec<String> = rows
                .iter()
                .map(|(a, b, y)| format!("{a},{b},{y}"))
                .collect();
            let policy = if refusing == Some(i) {
                POLICY.replace("\"x2\", ", "")
            } else {
                POLICY.to_string()
            };
            participant_files(&cluster.dir, i, HEADER, &lines, &policy)
        })
        .collect()
}

/// Runs participants over `dirs` for job `id` to its end; every one took part but `refusing`.
async fn run_participants(
    cluster: &Cluster,
    aggregator: &str,
    dirs: &[PathBuf],
    id: &str,
    refusing: Option<usize>,
) {
    let processes: Vec<ParticipantProcess> = dirs
        .iter()
        .map(|d| ParticipantProcess::start(cluster, aggregator, d, id))
        .collect();
    let view = wait_for_end(cluster, aggregator, id).await;
    assert_eq!(
        view.status.state,
        JobState::Done,
        "{:?}",
        view.status.reason
    );
    for (i, p) in processes.into_iter().enumerate() {
        let (ok, out) = p.finish(Duration::from_secs(60));
        assert!(ok && out.contains("job done"), "participant {i}: {out}");
        let took_part = out.contains("this participant took part");
        assert_eq!(took_part, refusing != Some(i), "participant {i}: {out}");
    }
}

/// `dpdist job predict --job id --data <dir>/<file>` holding `csv`, as the analyst runs it.
fn predict_job(
    cluster: &Cluster,
    aggregator: &str,
    id: &str,
    file: &str,
    csv: &str,
) -> (bool, String) {
    let data = cluster.dir.join(file);
    std::fs::write(&data, csv).unwrap();
    dpdist(
        &[
            "job",
            "predict",
            "--job",
            id,
            "--aggregator",
            aggregator,
            "--ca",
            cluster.certs.dir.join("ca.pem").to_str().unwrap(),
            "--analyst-token-file",
            cluster.dir.join("analyst.token").to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ],
        Duration::from_secs(30),
    )
}

/// Six participants holding 1 to 3 rows: the job's four DP-SGD iterations release, bit for
/// bit, what dca-learning's trainer releases in process over the same rows grouped the same
/// way (each record's coin drawn by its holder), and every round published the trainer's
/// weights of that iteration.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_train_job_over_participant_processes_releases_every_iteration_like_the_in_process_trainer(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-train", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let counts = [1, 2, 3, 1, 2, 3];
        let held = holdings(&counts);
        let spec = job_spec("train", counts.len(), 3, 4);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        // Before it is done, the job has nothing to predict from.
        let (ok, out) = predict_job(&cluster, &aggregator.url, &id, "early.csv", "x1,x2\n1,1\n");
        assert!(
            !ok && out.contains(&id) && out.contains("predictions need a done job"),
            "{out}"
        );
        let dirs = write_participants(&cluster, &held, None);
        run_participants(&cluster, &aggregator.url, &dirs, &id, None).await;
        let view = job_view(&cluster, &aggregator.url, &id).await;
        let result = view.status.train_result.clone().unwrap();
        assert_eq!(result.records, 12);
        assert_eq!(result.sums.len(), 4);
        assert_eq!(view.status.rounds.len(), 4);

        assert_eq!(
            assert_same_training(&spec, &view, &dirs, &held, &counts, None),
            0
        );
        // The job has an intercept (the default), and predictions use it: σ(w·x + b) of a
        // record by hand, x its features mapped from [−2, 2] onto ±5 (x2 = 3 clipped to 2).
        let b = result.intercept.expect("the job's intercept");
        assert!(b != 0.0, "the intercept moved");
        let table = blr::data::Table::parse_csv("x1,x2,label\n1.2,3,1\n").unwrap();
        let p = dca_service::protocol::job::train::predict_proba(&spec, &result, &table).unwrap();
        let (x1, x2) = (1.2 / 4.0 * 10.0, 5.0);
        let by_hand = 1.0 / (1.0 + (-(result.weights[0] * x1 + result.weights[1] * x2 + b)).exp());
        assert!((p[0] - by_hand).abs() < 1e-14, "{} vs {by_hand}", p[0]);

        // `dpdist job predict --job` prints P(label = 1 | x) of each row, by hand: each
        // feature clipped to [−2, 2] and mapped onto ±5 (2.5·x), then σ(w·x̃ + b). Row 1 is
        // within range; row 2's x2 = 3 clips to 2, row 3's x1 = −7 to −2. Columns by name, in
        // any order, others ignored.
        let (ok, out) = predict_job(
            &cluster,
            &aggregator.url,
            &id,
            "new.csv",
            "x2,other,x1\n1,9,1.2\n3,9,-0.5\n0.4,9,-7\n",
        );
        assert!(ok, "{out}");
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("p_label"));
        let printed: Vec<f64> = lines.map(|l| l.parse().unwrap()).collect();
        let sigma = |t: f64| 1.0 / (1.0 + (-t).exp());
        let (w1, w2) = (result.weights[0], result.weights[1]);
        let by_hand = [
            sigma(w1 * 3.0 + w2 * 2.5 + b),
            sigma(w1 * -1.25 + w2 * 5.0 + b),
            sigma(w1 * -5.0 + w2 * 1.0 + b),
        ];
        assert_eq!(printed.len(), 3, "{out}");
        for (got, want) in printed.iter().zip(by_hand) {
            assert!((got - want).abs() < 1e-14, "{got} vs {want}");
        }
        // The data's faults name the data file and their cause.
        for (file, csv, cause) in [
            ("no-x2.csv", "x1,label\n1,0\n", "column \"x2\""),
            ("text.csv", "x1,x2\n1,1\n1,high\n", "line 3"),
        ] {
            let (ok, out) = predict_job(&cluster, &aggregator.url, &id, file, csv);
            assert!(!ok && out.contains(file) && out.contains(cause), "{out}");
        }
        let (spent, reserved) = (view.status.rho_spent, view.status.rho_reserved);
        // The noise was planned to spend the reservation (up to the 1e-9 the checks allow).
        assert!(
            spent > 0.999 * reserved && spent <= reserved * (1.0 + 1e-9),
            "{spent} of {reserved}"
        );
    })
    .await
    .expect("test exceeded its time limit");
}

/// The aggregator is killed (`kill -9`) in the middle of a 12-iteration train job, after at
/// least two iterations were released, and restarted on the same store: it replays the trainer
/// from the job's start — the released rounds give back their stored releases, so each
/// recorded round is asked for again with the same weights — and the job ends releasing every
/// iteration like the in-process trainer; the rounds recorded before the kill keep their ids.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_train_job_survives_an_aggregator_restart_between_iterations(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-train-restart", 3, store) else {
            return;
        };
        let mut aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let addr = aggregator.url.trim_start_matches("https://").to_string();
        let counts = [2, 1, 3, 2];
        let held = holdings(&counts);
        let spec = job_spec("train", counts.len(), 3, 12);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs = write_participants(&cluster, &held, None);
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let start = Instant::now();
        let before = loop {
            let view = job_view(&cluster, &aggregator.url, &id).await;
            if view.status.rounds.len() >= 3 {
                break view;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "no third round");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        aggregator.child.kill().unwrap();
        aggregator.child.wait().unwrap();
        // Killed while running: each iteration takes a round trip through every participant,
        // so nine more cannot have happened since the last look.
        assert_eq!(before.status.state, JobState::Running);
        assert!(before.status.rounds.len() < 12);
        aggregator = AggregatorProcess::start_on(&cluster, "aggregator.sqlite", 10.0, &addr);
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        assert_eq!(
            view.status.state,
            JobState::Done,
            "{:?}",
            view.status.reason
        );
        for (i, p) in processes.into_iter().enumerate() {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(
                ok && out.contains("this participant took part"),
                "{i}: {out}"
            );
        }
        for (a, b) in before.status.rounds.iter().zip(&view.status.rounds) {
            assert_eq!(a.id, b.id, "round {} was planned again differently", a.step);
        }
        assert_eq!(view.status.rounds.len(), 12);
        assert_eq!(
            assert_same_training(&spec, &view, &dirs, &held, &counts, None),
            0
        );
    })
    .await
    .expect("test exceeded its time limit");
}

/// A participant killed (`kill -9`) after the job's second round was published (T = 1): the
/// later rounds are released without it when their upload window closes, and every iteration
/// still equals the in-process trainer with that participant dropped from the same iterations.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_train_job_goes_on_without_a_participant_killed_mid_job(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-train-kill", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let counts = [1, 2, 1, 2, 1];
        let held = holdings(&counts);
        let spec = JobSpec {
            // Long enough for the live participants on a loaded machine, short enough to
            // wait out for the dead one in each remaining round.
            upload_window_ms: 8_000,
            ..job_spec("train", counts.len(), 2, 5)
        };
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs = write_participants(&cluster, &held, None);
        let mut processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let start = Instant::now();
        while job_view(&cluster, &aggregator.url, &id)
            .await
            .status
            .rounds
            .len()
            < 2
        {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no second round"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut victim = processes.pop().unwrap();
        victim.0.kill().unwrap();
        victim.0.wait().unwrap();
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        assert_eq!(
            view.status.state,
            JobState::Done,
            "{:?}",
            view.status.reason
        );
        for (i, p) in processes.into_iter().enumerate() {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(
                ok && out.contains("this participant took part"),
                "{i}: {out}"
            );
        }
        let missed = assert_same_training(&spec, &view, &dirs, &held, &counts, Some(4));
        // At least the last three rounds were created after the kill.
        assert!(missed >= 3, "the killed participant missed {missed} rounds");
    })
    .await
    .expect("test exceeded its time limit");
}

/// Every iteration's release of a finished `train` job, the weights each of its rounds
/// published and its final weights equal dca-learning's trainer in process. The reference is
/// the library's trainer over its clients' rows in the same order, the features mapped by the
/// job's public bounds, the 0/1 labels as they are in the files.
fn assert_same_training(
    spec: &JobSpec,
    view: &JobView,
    dirs: &[PathBuf],
    held: &[Vec<(f64, f64, f64)>],
    counts: &[usize],
    killed: Option<usize>,
) -> usize {
    let result = view.status.train_result.clone().unwrap();
    assert_eq!(
        result.sums.len() as u64,
        spec.train.as_ref().unwrap().iterations
    );
    let mut x = Vec::new();
    let mut y = Vec::new();
    for (dir, rows) in dirs.iter().zip(held) {
        let text = std::fs::read_to_string(dir.join("rows.csv")).unwrap();
        let table = blr::data::Table::parse_csv(&text).unwrap();
        let (px, _, _) = spec.rows_of(&table).unwrap();
        x.extend(px);
        y.extend(rows.iter().map(|r| r.2));
    }
    let z = result.noise_multiplier;
    let settings = spec.train.as_ref().unwrap();
    for r in &view.status.rounds {
        assert_eq!(r.spec.noise_sigma_total, Some(z * settings.clip_norm));
        assert_eq!(r.spec.l2_sensitivity, Some(settings.clip_norm));
    }
    let config = TrainerConfig {
        model: Model::Logistic {
            l2: settings.l2,
            intercept: settings.intercept,
        },
        sampling: ClientSampling::Poisson {
            rate: settings.sampling_rate,
        },
        clip_norm: settings.clip_norm,
        privacy: Privacy::Private {
            budget: PrivacyLoss::new(spec.epsilon, spec.delta).unwrap(),
            noise_multiplier: z,
        },
        optimizer: Optimizer::adam(settings.learning_rate),
        n_nodes: 3,
        max_dropped: 1,
    };
    let d = spec.features.len();
    let mut trainer = Trainer::with_clients(
        config,
        counts.to_vec(),
        spec.max_rows,
        d,
        RngSource::InsecureFixedSeed(SEED),
    )
    .unwrap();
    let records = Records::new(x, d, y).unwrap();
    let mut missed = 0;
    for (i, released) in result.sums.iter().enumerate() {
        let Rule::Train(rule) = Rule::from_json(&view.status.rounds[i].rule).unwrap() else {
            panic!("round {i} has no train rule");
        };
        assert_eq!(rule.iteration, i as u64);
        assert_eq!(
            bits(&rule.weights),
            bits(trainer.params()),
            "weights of {i}"
        );
        let mut with_all = trainer.clone();
        let step = with_all.step(&records, &[]).unwrap();
        let step = match killed {
            // The killed participant's shares are in the release until it is killed (which
            // upload windows it missed is the test's timing), never after.
            Some(k) if missed > 0 || bits(released) != bits(&step.released_sum) => {
                missed += 1;
                trainer.step(&records, &[k]).unwrap()
            }
            _ => {
                trainer = with_all;
                step
            }
        };
        assert_eq!(bits(released), bits(&step.released_sum), "iteration {i}");
    }
    // θ = (w, b): the result names b apart.
    let (weights, intercept) = if settings.intercept {
        let (b, w) = trainer.params().split_last().unwrap();
        (w, Some(*b))
    } else {
        (trainer.params(), None)
    };
    assert_eq!(bits(&result.weights), bits(weights));
    assert_eq!(
        result.intercept.map(f64::to_bits),
        intercept.map(f64::to_bits)
    );
    // The weights moved: the releases were used.
    assert!(trainer.params().iter().any(|w| *w != 0.0));
    missed
}

/// A job's id is the SHA-256 of its canonical JSON: a `train` job written before jobs had
/// intercepts (no `intercept` field, which now means one) keeps its id. The constant is this
/// spec's id at commit 0980f78.
#[test]
fn a_train_job_without_the_intercept_field_keeps_its_id() {
    let spec = JobSpec {
        roster: (0..3u8).map(|i| hex::encode(&[i; 32])).collect(),
        created_unix_ms: 1_764_000_000_000,
        ..job_spec("train", 3, 2, 7)
    };
    assert_eq!(
        spec.id(),
        "67f485ca4deec3613a33e85a9767fcca33134ce8b51e574d025b0725d1011644"
    );
}

/// A `train` job without an intercept (`intercept = false`) releases what every `train` job
/// released before jobs had intercepts, bit for bit: the weights and each iteration's released
/// sum below are what this same job gave at commit 0980f78 (printed by that code, not computed
/// here), with the participants' insecure seed.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_train_job_without_intercept_releases_what_train_jobs_released_before(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-train-golden", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let counts = [1, 2, 3, 1, 2, 3];
        let held = holdings(&counts);
        let mut spec = job_spec("train", counts.len(), 3, 3);
        spec.train.as_mut().unwrap().intercept = false;
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs = write_participants(&cluster, &held, None);
        run_participants(&cluster, &aggregator.url, &dirs, &id, None).await;
        let result = job_view(&cluster, &aggregator.url, &id)
            .await
            .status
            .train_result
            .unwrap();
        assert_eq!(result.intercept, None);
        let before_weights: [u64; 2] = [4602994161495519160, 13825179264791078037];
        let before_sums: [[u64; 2]; 3] = [
            [13832178806397445560, 4601975897979940960],
            [13845721743477724567, 4616467188872092516],
            [13850344807064566055, 13830966706016463288],
        ];
        assert_eq!(
            bits(&result.weights),
            before_weights,
            "sums {:?}",
            result.sums.iter().map(|s| bits(s)).collect::<Vec<_>>()
        );
        for (i, (now, before)) in result.sums.iter().zip(before_sums).enumerate() {
            assert_eq!(bits(now), before, "iteration {i}");
        }
        // Without intercept, `job predict` prints σ(w·x̃) by hand: x̃ = 2.5·x, x1 = 4 clipped
        // to 2 first.
        let (ok, out) = predict_job(&cluster, &aggregator.url, &id, "new.csv", "x1,x2\n4,-0.8\n");
        assert!(ok, "{out}");
        let want = 1.0 / (1.0 + (-(result.weights[0] * 5.0 + result.weights[1] * -2.0)).exp());
        let got: f64 = out
            .strip_prefix("p_label\n")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!((got - want).abs() < 1e-14, "{got} vs {want}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// Five participants holding 1 to 3 rows, one of which refuses by its policy (T = 1): the job's
/// one round releases, bit for bit, an in-process DCA round of the other four's column sums
/// (computed here from their rows) with the same configuration and seeds; the sums in the
/// columns' units and n follow.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sum_job_over_participant_processes_releases_the_in_process_round(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-sum", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let counts = [1, 2, 2, 1, 3];
        let held = holdings(&counts);
        let spec = job_spec("sum", counts.len(), 3, 0);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs = write_participants(&cluster, &held, Some(2));
        run_participants(&cluster, &aggregator.url, &dirs, &id, Some(2)).await;
        let view = job_view(&cluster, &aggregator.url, &id).await;
        assert_eq!(view.status.refused.len(), 1);
        assert_eq!(view.status.refused[0].0, 2);
        assert!(
            view.status.refused[0].1.contains("x2"),
            "{:?}",
            view.status.refused
        );
        let result = view.status.sum_result.clone().unwrap();
        assert_eq!(result.records, 7);
        // A done sum job has no model to predict from.
        let (ok, out) = predict_job(&cluster, &aggregator.url, &id, "new.csv", "x1,x2\n1,1\n");
        assert!(
            !ok && out.contains(&id) && out.contains("a \"sum\" job"),
            "{out}"
        );
        assert_eq!(view.status.rounds.len(), 1);
        // The recorded spec has no token list: rebuilt from the roster, it hashes to the id.
        let round = dca_service::protocol::job::view::ParticipantRound::spec_for(
            &view.status.rounds[0],
            &spec,
        )
        .unwrap()
        .validate()
        .unwrap();
        assert_eq!(round.id(), view.status.rounds[0].id);
        assert_eq!(round.spec.l2_sensitivity, Some(5.0 * 3f64.sqrt()));
        assert!(round.spec.noise_sigma_total.unwrap() > 0.0);

        // Each participant's vector: its rows mapped onto ±5 by hand (the public map, in the
        // operations blr's `PublicBounds::scale` documents), summed in row order.
        let map = |v: f64, lo: f64, hi: f64| (v.clamp(lo, hi) - (lo + hi) / 2.0) / (hi - lo) * 10.0;
        let vectors: Vec<Vec<f64>> = held
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != 2)
            .map(|(_, rows)| {
                let mut s = vec![0.0; 3];
                for &(a, b, y) in rows {
                    s[0] += map(a, -2.0, 2.0);
                    s[1] += map(b, -2.0, 2.0);
                    s[2] += map(y, 0.0, 1.0);
                }
                s
            })
            .collect();
        let local = fixedpoint_shares::simulate_round(
            &round.config,
            &vectors,
            &[],
            RngSource::InsecureFixedSeed(SEED).derive(0),
        )
        .unwrap();
        assert_eq!(bits(&result.released), bits(&local.sum));
        let n = 7.0;
        let expected_units = [
            n * -2.0 + (local.sum[0] + 5.0 * n) * 4.0 / 10.0,
            n * -2.0 + (local.sum[1] + 5.0 * n) * 4.0 / 10.0,
            (local.sum[2] + 5.0 * n) / 10.0,
        ];
        for (a, b) in result.sums.iter().zip(expected_units) {
            assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
        }
    })
    .await
    .expect("test exceeded its time limit");
}
