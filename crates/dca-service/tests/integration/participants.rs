//! Jobs with the data holders as parties: `dpdist participant` processes, each reading only
//! its own CSV, against 3 nodes and the aggregator on loopback. With fixed seeds (the job's
//! public seed and the participants' `--insecure-seed`), the released statistics and the
//! posterior equal the in-process pipeline's over the same rows grouped the same way, bit
//! for bit.

use crate::common;
use rstest::rstest;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

use common::jobs::*;
use common::*;
use dca_service::protocol::job::JobView;
use dca_service::protocol::job::{Answer, ColumnBounds, JobKind, JobSpec, JobState};
use dca_service::protocol::spec::token_hash;
use dca_service::{MEDIA_JSON, hex};
use dp_noise::rng::RngSource;
use reqwest::StatusCode;

pub(crate) fn diabetes() -> (String, Vec<String>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/diabetes.csv"
    ))
    .unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_string();
    (header, lines.map(str::to_string).collect())
}

fn bounds() -> Vec<ColumnBounds> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/diabetes.bounds.csv"
    ))
    .unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ColumnBounds {
                name: f[0].into(),
                lo: f[1].parse().unwrap(),
                hi: f[2].parse().unwrap(),
                group: None,
            }
        })
        .collect()
}

pub(crate) fn job_spec(roster: usize, t: usize, max_rows: usize, upload_window_ms: u64) -> JobSpec {
    let mut columns = bounds();
    let target = columns.pop().unwrap();
    assert_eq!(target.name, "target");
    JobSpec {
        kind: JobKind::Blr,
        target,
        features: columns,
        epsilon: 1.0,
        delta: 1e-5,
        max_dropped: t,
        mode: "seed".into(),
        roster: (0..roster)
            .map(|i| hex::encode(&token_hash(&participant_token(i))))
            .collect(),
        max_rows,
        answer_window_ms: 60_000,
        upload_window_ms,
        created_unix_ms: dca_service::node::now_ms(),
        public_seed: Some(SEED),
        clipped_share: None,
        validity: None,
        train: None,
    }
}

pub(crate) const POLICY: &str = "columns = [\"age\", \"sex\", \"bmi\", \"bp\", \"s1\", \"s2\", \"s3\", \
                      \"s4\", \"s5\", \"s6\", \"target\"]\nmax_epsilon_per_job = 2.0\n\
                      total_epsilon = 10.0\n";

/// The in-process regression over the participants' own files (rows as they are in each file,
/// one holder per participant), with the job's settings and seed.
fn in_process_regression(spec: &JobSpec, dirs: &[PathBuf]) -> blr::Regression {
    let (mut x, mut y, mut starts) = (Vec::new(), Vec::new(), vec![0]);
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("rows.csv")).unwrap();
        let table = blr::data::Table::parse_csv(&text).unwrap();
        let (px, py) = spec.raw_rows_of(&table).unwrap();
        x.extend(px);
        y.extend(py);
        starts.push(y.len());
    }
    let holders = projection::holders::Holders::Here {
        x: &x,
        y: &y,
        d: spec.features.len(),
        grouping: projection::holders::Grouping::Starts(&starts),
    };
    blr::fit_regression_held(
        &holders,
        &dca_service::protocol::job::regression::regression_config(spec, 3).unwrap(),
        RngSource::InsecureFixedSeed(SEED),
        &mut projection::InProcess,
    )
    .unwrap()
}

/// The in-process pipeline over the participants' own files, client i = participant
/// `taking_part[i]`'s rows, with the job's settings and seed.
pub(crate) fn in_process(spec: &JobSpec, dirs: &[PathBuf]) -> blr::Fit {
    let (mut x, mut y, mut starts) = (Vec::new(), Vec::new(), vec![0]);
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("rows.csv")).unwrap();
        let table = blr::data::Table::parse_csv(&text).unwrap();
        let (px, py, _) = spec.rows_of(&table).unwrap();
        x.extend(px);
        y.extend(py);
        starts.push(y.len());
    }
    blr::fit_grouped(
        &x,
        &y,
        spec.features.len(),
        &starts,
        &spec.fit_config(3),
        RngSource::InsecureFixedSeed(SEED),
        &mut projection::InProcess,
    )
    .unwrap()
}

pub(crate) fn assert_same_fit(view: &JobView, local: &blr::Fit) {
    assert_eq!(
        view.status.state,
        JobState::Done,
        "{:?}",
        view.status.reason
    );
    let result = view.status.result.as_ref().unwrap();
    assert_eq!(bits(&result.stats), bits(&local.stats.to_flat(false)));
    assert_eq!(bits(&result.mean), bits(&local.posterior.mean));
    let std = local.std.as_ref().unwrap();
    let mut local_std = std.x.clone();
    local_std.push(std.y);
    assert_eq!(bits(result.std.as_ref().unwrap()), bits(&local_std));
    let t = local.thresholds.as_ref().unwrap();
    assert_eq!(result.thresholds, Some((t.omega_x, t.omega_y)));
    assert_eq!(
        result.spent_epsilon.to_bits(),
        local.spent.epsilon.to_bits()
    );
    let clipped = |y: f64, x: f64, sd: f64| [y.to_bits(), x.to_bits(), sd.to_bits()];
    assert_eq!(
        result
            .clipped
            .as_ref()
            .map(|c| clipped(c.y, c.x, c.share_sd)),
        local
            .clipped
            .as_ref()
            .map(|c| clipped(c.y, c.x, c.share_sd))
    );
    assert_eq!(
        view.status.rounds.len(),
        2 + usize::from(local.clipped.is_some())
    );
}

/// A `dpdist participant` process in each of `dirs` on job `id`; waits for the job's end and
/// checks that every participant but `refusing` took part, and that `refusing` was refused for
/// `bmi` (its policy leaves that column out).
async fn run_with_one_refusing(
    cluster: &Cluster,
    aggregator: &str,
    dirs: &[PathBuf],
    id: &str,
    refusing: usize,
) -> JobView {
    let processes: Vec<ParticipantProcess> = dirs
        .iter()
        .map(|d| ParticipantProcess::start(cluster, aggregator, d, id))
        .collect();
    let view = wait_for_end(cluster, aggregator, id).await;
    for (i, p) in processes.into_iter().enumerate() {
        let (ok, out) = p.finish(Duration::from_secs(60));
        assert!(ok, "participant {i}: {out}");
        let took_part = !out.contains("did not take part");
        assert_eq!(took_part, i != refusing, "participant {i}: {out}");
    }
    assert_eq!(view.status.refused.len(), 1);
    assert_eq!(view.status.refused[0].0, refusing);
    assert!(
        view.status.refused[0].1.contains("bmi"),
        "{:?}",
        view.status.refused
    );
    view
}

/// Twelve participant processes, one row each; one of them refuses by its policy (it may not
/// contribute `bmi`) and stays out, T = 2: the job runs with the other eleven and releases
/// exactly what the in-process pipeline releases over their rows.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blr_job_over_twelve_participant_processes_equals_the_in_process_fit(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-twelve", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let spec = job_spec(12, 2, 1, 120_000);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let refusing = POLICY.replace("\"bmi\", ", "");
        let dirs: Vec<PathBuf> = (0..12)
            .map(|i| {
                let policy = if i == 7 { refusing.as_str() } else { POLICY };
                participant_files(&cluster.dir, i, &header, &rows[i..i + 1], policy)
            })
            .collect();
        let view = run_with_one_refusing(&cluster, &aggregator.url, &dirs, &id, 7).await;
        let taking_part: Vec<PathBuf> = (0..12)
            .filter(|&i| i != 7)
            .map(|i| dirs[i].clone())
            .collect();
        assert_same_fit(&view, &in_process(&spec, &taking_part));
        // The job's rounds were paid from its reservation; what it did not use came back.
        assert!(view.status.rho_spent > 0.0 && view.status.rho_spent <= view.status.rho_reserved);
        // The refusing participant's ledger holds its refusal, nobody else's rows.
        let ledger = std::fs::read_to_string(dirs[7].join("state/ledger.jsonl")).unwrap();
        assert!(ledger.contains("\"accept\":false"), "{ledger}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// Five hospitals with very uneven row counts, 10 to 10⁴ (the largest holds the last 200
/// diabetes rows, cycled): each contributes the sum over its rows (per-record sensitivity; the
/// grid sized by the job's max_rows); the release equals the in-process pipeline with the same
/// grouping of rows into clients, the third round's shares of clipped records included (the
/// job asks for them with `clipped_share`).
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_silo_job_equals_the_in_process_fit_with_the_same_grouping(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-silos", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let sizes = [10usize, 40, 80, 112, 10_000];
        let spec = JobSpec {
            clipped_share: Some(0.05),
            ..job_spec(5, 1, 10_000, 120_000)
        };
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let mut start = 0;
        let dirs: Vec<PathBuf> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let own: Vec<String> = (0..n)
                    .map(|k| rows[start + k % (rows.len() - start)].clone())
                    .collect();
                start += n.min(rows.len() - start);
                participant_files(&cluster.dir, i, &header, &own, POLICY)
            })
            .collect();
        let view = run_all_taking_part(&cluster, &aggregator.url, &dirs, &id).await;
        let result = view.status.result.as_ref().unwrap();
        assert_eq!(result.records, 10_242);
        let local = in_process(&spec, &dirs);
        assert!(local.clipped.is_some() && result.clipped.is_some());
        assert_same_fit(&view, &local);
    })
    .await
    .expect("test exceeded its time limit");
}

/// Participants that accept and then never upload (killed after answering): T of them, and
/// the job completes with the rest at each round's deadline; T + 1, and the first round is
/// aborted, the job with it, nothing is released and the analyst reads why.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_to_t_silent_participants_are_dropouts_one_more_aborts_the_job(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-dropouts", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        for (silent, ends) in [(2usize, JobState::Done), (3, JobState::Aborted)] {
            let spec = job_spec(8, 2, 1, 3_000);
            let id = create_job(&cluster, &aggregator.url, &spec).await;
            let mut processes = Vec::new();
            for i in 0..8 {
                if i < silent {
                    // Accepts, then is gone.
                    let r = cluster
                        .http
                        .post(format!("{}/jobs/{id}/answer", aggregator.url))
                        .bearer_auth(participant_token(i))
                        .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                        .body(
                            serde_json::to_vec(&Answer {
                                accept: true,
                                rows: 1,
                                reason: String::new(),
                            })
                            .unwrap(),
                        )
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), StatusCode::OK);
                    continue;
                }
                // The same state directory for both jobs: a participant's ledger holds every
                // job its token answered (a fresh one would be refused: the aggregator
                // records the earlier job's answer).
                let dir = participant_files(&cluster.dir, i, &header, &rows[i..i + 1], POLICY);
                processes.push(ParticipantProcess::start(
                    &cluster,
                    &aggregator.url,
                    &dir,
                    &id,
                ));
            }
            let view = wait_for_end(&cluster, &aggregator.url, &id).await;
            assert_eq!(view.status.state, ends, "{:?}", view.status.reason);
            if ends == JobState::Aborted {
                let reason = view.status.reason.clone().unwrap();
                assert!(
                    reason.contains("3 clients missing, more than T = 2"),
                    "{reason}"
                );
                assert!(view.status.result.is_none());
                assert_eq!(view.status.rho_spent, 0.0, "an aborted round is not paid");
            } else {
                // The statistics hold the rows of the six that uploaded.
                assert_eq!(view.status.result.as_ref().unwrap().records, 6);
            }
            for p in processes {
                let (ok, out) = p.finish(Duration::from_secs(60));
                assert_eq!(ok, ends == JobState::Done, "{out}");
            }
        }
    })
    .await
    .expect("test exceeded its time limit");
}

/// A participant killed (`kill -9`) after it sealed its shares and before every node had
/// them (node 2 is down), restarted after node 2 is back: it sends the very same shares (the
/// nodes that already hold them answer "already stored", never a conflict), pays each round
/// once, and the job releases the in-process pipeline's numbers over all four participants.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_participant_killed_between_sealing_and_uploading_sends_the_same_shares(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("job-kill", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let spec = job_spec(4, 1, 1, 120_000);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        // Node 2 goes down once the job has its keys.
        cluster.nodes[2].kill9();
        let dirs: Vec<PathBuf> = (0..4)
            .map(|i| participant_files(&cluster.dir, i, &header, &rows[i..i + 1], POLICY))
            .collect();
        let mut others: Vec<ParticipantProcess> = dirs[1..]
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let victim = ParticipantProcess::start(&cluster, &aggregator.url, &dirs[0], &id);
        // Its round-1 shares are sealed and on disk; node 2 cannot have them.
        let attempts = dirs[0].join("state/attempts");
        let start = Instant::now();
        while !std::fs::read_dir(&attempts)
            .map(|d| {
                d.flatten()
                    .any(|e| !e.file_name().to_string_lossy().ends_with(".tmp"))
            })
            .unwrap_or(false)
        {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "no sealed attempt"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(victim); // kill -9
        let round_dir = std::fs::read_dir(&attempts)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| !p.to_string_lossy().ends_with(".tmp"))
            .unwrap();
        let sealed_before: Vec<Vec<u8>> = (0..3)
            .map(|k| std::fs::read(round_dir.join(format!("node-{k}.sealed"))).unwrap())
            .collect();
        cluster.restart(2);
        others.push(ParticipantProcess::start(
            &cluster,
            &aggregator.url,
            &dirs[0],
            &id,
        ));
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for p in others {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(ok && !out.contains("did not"), "{out}");
        }
        assert_same_fit(&view, &in_process(&spec, &dirs));
        // The restarted participant kept the shares it had sealed, and paid each round once:
        // its ledger's charges are the aggregator's.
        for (k, before) in sealed_before.iter().enumerate() {
            let now = std::fs::read(round_dir.join(format!("node-{k}.sealed"))).unwrap();
            assert_eq!(&now, before);
        }
        let ledger = dca_service::participant::ledger::LedgerFile::read(&dirs[0].join("state"))
            .unwrap()
            .unwrap()
            .ledger;
        let job = &ledger.jobs[&id];
        assert_eq!(job.rounds.len(), 2);
        let paid: f64 = job.rounds.values().map(|r| r.rho).sum();
        assert!(
            (paid - view.status.rho_spent).abs() <= 1e-12 * paid,
            "{paid} vs {}",
            view.status.rho_spent
        );
    })
    .await
    .expect("test exceeded its time limit");
}

/// What a participant refuses, and how it says so: a data file with a non-numeric cell (it
/// stops at start, naming file, line and column, and answers nothing); a job reading a column
/// its file lacks, and a job beyond its total ε (it refuses with the reason, which the analyst
/// reads and its log says); the job goes on without them while at most T refuse.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_refuse_bad_files_unknown_columns_and_jobs_beyond_their_budget(
    #[case] store: Store,
) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-refusals", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let spec = job_spec(6, 2, 1, 120_000);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs: Vec<PathBuf> = (0..6)
            .map(|i| {
                let policy = if i == 5 {
                    POLICY.replace("total_epsilon = 10.0", "total_epsilon = 1.5")
                } else {
                    POLICY.to_string()
                };
                participant_files(&cluster.dir, i, &header, &rows[i..i + 1], &policy)
            })
            .collect();
        // Participant 0's file has a word where a number belongs.
        let bad = format!("{header}\n{}\n", rows[0].replacen("59", "fifty-nine", 1));
        std::fs::write(dirs[0].join("rows.csv"), bad).unwrap();
        // Participant 1's file has no `bmi` column.
        let no_bmi: String = std::fs::read_to_string(dirs[1].join("rows.csv"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(',').collect();
                f.remove(2);
                format!("{}\n", f.join(","))
            })
            .collect();
        std::fs::write(dirs[1].join("rows.csv"), no_bmi).unwrap();
        let (ok, out) = ParticipantProcess::start(&cluster, &aggregator.url, &dirs[0], &id)
            .finish(Duration::from_secs(60));
        assert!(
            !ok && out.is_empty(),
            "a bad file stops the participant before anything: {out}"
        );
        let processes: Vec<ParticipantProcess> = dirs[1..]
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for p in processes {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(ok, "{out}");
        }
        assert_eq!(
            view.status.state,
            JobState::Done,
            "{:?}",
            view.status.reason
        );
        // Participant 0 never answered (it stopped at start), participant 1 refused.
        let refused: Vec<usize> = view.status.refused.iter().map(|(i, _)| *i).collect();
        assert_eq!(refused, vec![0, 1]);
        assert!(view.status.refused[0].1.contains("no answer"));
        assert!(
            view.status.refused[1].1.contains("\"bmi\""),
            "{:?}",
            view.status.refused
        );
        assert!(
            !dirs[0].join("state").exists(),
            "nothing written for a bad file"
        );
        assert_same_fit(&view, &in_process(&spec, &dirs[2..]));

        // Participant 5 spent ε = 1 of its 1.5: a second job of ε = 1 is refused.
        let second = JobSpec {
            answer_window_ms: 2_000,
            ..job_spec(6, 4, 1, 120_000)
        };
        let id2 = create_job(&cluster, &aggregator.url, &second).await;
        let (ok, out) = ParticipantProcess::start(&cluster, &aggregator.url, &dirs[5], &id2)
            .finish(Duration::from_secs(120));
        assert!(!ok, "the second job did not run: {out}");
        let view = job_view(&cluster, &aggregator.url, &id2).await;
        let (_, why) = view.status.refused.iter().find(|(i, _)| *i == 5).unwrap();
        assert!(why.contains("budget exhausted"), "{why}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// The aggregator killed (`kill -9`) while a job's first round is open (node 2 is down, so the
/// round cannot complete), restarted on its address: it resumes the job from its store — the
/// recorded round is taken as recorded, not planned again — and once node 2 is back the job
/// releases exactly what the in-process pipeline releases, each round once.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_survives_an_aggregator_restart_in_the_middle_of_a_round(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(mut cluster) = Cluster::start_on("job-agg-restart", 3, store) else {
            return;
        };
        let mut aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let addr = aggregator.url.trim_start_matches("https://").to_string();
        let (header, rows) = diabetes();
        let spec = job_spec(4, 1, 1, 120_000);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        cluster.nodes[2].kill9();
        let dirs: Vec<PathBuf> = (0..4)
            .map(|i| participant_files(&cluster.dir, i, &header, &rows[i..i + 1], POLICY))
            .collect();
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let start = Instant::now();
        let first_round = loop {
            let view = job_view(&cluster, &aggregator.url, &id).await;
            if let Some(r) = view.status.rounds.first() {
                break r.id.clone();
            }
            assert!(start.elapsed() < Duration::from_secs(120), "no round");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        aggregator.child.kill().unwrap();
        aggregator.child.wait().unwrap();
        aggregator = AggregatorProcess::start_on(&cluster, "aggregator.sqlite", 10.0, &addr);
        cluster.restart(2);
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for p in processes {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(ok && !out.contains("did not"), "{out}");
        }
        assert_eq!(
            view.status.rounds[0].id, first_round,
            "round 1 was not planned again"
        );
        assert_same_fit(&view, &in_process(&spec, &dirs));
    })
    .await
    .expect("test exceeded its time limit");
}

/// The aggregator reserves a job's whole budget when the job is created: a second job the rest
/// of the budget cannot pay for is refused (403) before any round; cancelling the first (which
/// ran no round) returns its reservation, and the second job is then accepted.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_reserves_its_whole_budget_and_a_cancelled_job_returns_it(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-budget", 3, store) else {
            return;
        };
        // ε = 1.2 at δ = 1e-4: one job of (1, 1e-5) fits (ρ ≈ 0.0229 → ε ≈ 0.94), two do not
        // (2ρ → ε ≈ 1.34).
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 1.2);
        let first = job_spec(4, 1, 1, 120_000);
        let id = create_job(&cluster, &aggregator.url, &first).await;
        let second = JobSpec {
            created_unix_ms: first.created_unix_ms + 1,
            ..first.clone()
        };
        let put = |spec: &JobSpec| {
            cluster
                .http
                .put(format!("{}/jobs/{}", aggregator.url, spec.id()))
                .bearer_auth(ANALYST_TOKEN)
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(spec.canonical_json())
                .send()
        };
        let refused = put(&second).await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(refused.text().await.unwrap().contains("budget-exhausted"));
        // The same job again changes nothing (200, no second reservation).
        assert_eq!(put(&first).await.unwrap().status(), StatusCode::OK);
        let cancel = cluster
            .http
            .post(format!("{}/jobs/{id}/cancel", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(cancel.status(), StatusCode::OK);
        let view = job_view(&cluster, &aggregator.url, &id).await;
        assert_eq!(view.status.state, JobState::Cancelled);
        assert_eq!(view.status.rho_spent, 0.0);
        let again = cluster
            .http
            .post(format!("{}/jobs/{id}/cancel", aggregator.url))
            .bearer_auth(ANALYST_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::CONFLICT);
        assert_eq!(put(&second).await.unwrap().status(), StatusCode::CREATED);
        // A stranger's token sees no job; a participant cannot cancel.
        let stranger = cluster
            .http
            .get(format!("{}/jobs/{id}", aggregator.url))
            .bearer_auth("not-on-any-roster")
            .send()
            .await
            .unwrap();
        assert_eq!(stranger.status(), StatusCode::NOT_FOUND);
        let participant_cancel = cluster
            .http
            .post(format!("{}/jobs/{}/cancel", aggregator.url, second.id()))
            .bearer_auth(participant_token(0))
            .send()
            .await
            .unwrap();
        assert_eq!(participant_cancel.status(), StatusCode::FORBIDDEN);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A host process (the C++ program over libdpdist_net, or an R session) following job `job`
/// with participant `own`'s files; killed and reaped on drop like the others.
fn host_participant(
    cluster: &Cluster,
    aggregator: &str,
    own: &Path,
    job: &str,
    host: &str,
) -> ParticipantProcess {
    let file = |name: &str| own.join(name).to_str().unwrap().to_string();
    let ca = cluster
        .certs
        .dir
        .join("ca.pem")
        .to_str()
        .unwrap()
        .to_string();
    let need = |var: &str| {
        std::env::var(var).unwrap_or_else(|_| {
            panic!("{var} is not set: run this test through scripts/test-net-hosts.sh")
        })
    };
    let mut command = match host {
        "cpp" => {
            let mut c = Command::new(need("DPDIST_NET_CPP_PARTICIPANT"));
            c.args([
                aggregator,
                &ca,
                &file("token"),
                &file("policy.toml"),
                &file("state"),
            ])
            .args([&file("rows.csv"), job, "--insecure-seed", &SEED.to_string()]);
            c
        }
        _ => {
            // R reads the same CSV; its parse of these decimals is the correctly rounded one
            // (checked on examples/data/diabetes.csv: all 4862 values bit-equal to Rust's).
            let script = format!(
                "library(dpdist, lib.loc = {lib:?})\n\
                 rows <- read.csv({rows:?})\n\
                 out <- participate({aggregator:?}, ca = {ca:?}, token_file = {token:?},\n\
                   policy = {policy:?}, state_dir = {state:?}, data = rows, job = {job:?},\n\
                   poll_ms = 50L, insecure_seed = {SEED}, net_lib = {net:?})\n\
                 print(out)\n",
                lib = need("DPDIST_R_LIB"),
                rows = file("rows.csv"),
                token = file("token"),
                policy = file("policy.toml"),
                state = file("state"),
                net = need("DPDIST_NET_LIB"),
            );
            let mut c = Command::new("Rscript");
            c.args(["--vanilla", "-e", &script]);
            c
        }
    };
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn the {host} participant: {e}"));
    ParticipantProcess(child)
}

/// Twelve participant processes on three kinds of host — ten `dpdist participant`, a C++
/// program over libdpdist_net and an R session calling `dpdist::participate()` — each with one
/// row that only it reads: the released statistics and posterior equal the in-process
/// pipeline's over the same rows, bit for bit. Needs the C++ program and the R package, so it
/// is run by scripts/test-net-hosts.sh (part of scripts/test-all.sh), not by a bare `cargo test`.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the C++ and R participants: run by scripts/test-net-hosts.sh"]
async fn a_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit(#[case] store: Store) {
    job_over_three_hosts(store, None).await
}

/// The same with every round verified (`validity = linf`): the C++ and R participants prove
/// their contributions as `dpdist participant` does, and the release equals the in-process
/// pipeline's at the δ′ the job's truncation leaves.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the C++ and R participants: run by scripts/test-net-hosts.sh"]
async fn a_verified_job_over_dpdist_cpp_and_r_participants_equals_the_in_process_fit(
    #[case] store: Store,
) {
    let linf = dca_service::protocol::validity::ValiditySpec::Linf {
        truncation_delta: 1e-9,
    };
    job_over_three_hosts(store, Some(linf)).await
}

async fn job_over_three_hosts(
    store: Store,
    validity: Option<dca_service::protocol::validity::ValiditySpec>,
) {
    tokio::time::timeout(LIMIT, async {
        let name = if validity.is_some() {
            "job-hosts-verified"
        } else {
            "job-hosts"
        };
        let Some((cluster, _secret)) = verifying_cluster(name, 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let spec = JobSpec {
            validity,
            ..job_spec(12, 2, 1, 120_000)
        };
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let dirs: Vec<PathBuf> = (0..12)
            .map(|i| participant_files(&cluster.dir, i, &header, &rows[20 + i..21 + i], POLICY))
            .collect();
        let mut processes: Vec<(String, ParticipantProcess)> = (0..10)
            .map(|i| {
                let p = ParticipantProcess::start(&cluster, &aggregator.url, &dirs[i], &id);
                (format!("dpdist participant {i}"), p)
            })
            .collect();
        for (i, host) in [(10, "cpp"), (11, "r")] {
            let p = host_participant(&cluster, &aggregator.url, &dirs[i], &id, host);
            processes.push((format!("{host} participant {i}"), p));
        }
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for (who, p) in processes {
            let (ok, out) = p.finish(Duration::from_secs(120));
            assert!(ok, "{who}: {out}");
            assert!(
                out.contains("took part") && !out.contains("did not"),
                "{who}: {out}"
            );
        }
        assert!(view.status.refused.is_empty(), "{:?}", view.status.refused);
        assert_same_fit(&view, &in_process(&spec, &dirs));
        // Each host kept its own ledger, charged for both rounds.
        for i in [10, 11] {
            let ledger = dca_service::participant::ledger::LedgerFile::read(&dirs[i].join("state"))
                .unwrap()
                .unwrap()
                .ledger;
            let uploaded = ledger.jobs[&id].rounds.values().filter(|r| r.uploaded);
            assert_eq!(uploaded.count(), 2, "{ledger:?}");
        }
    })
    .await
    .expect("test exceeded its time limit");
}

/// The job's driver lease's length the replica test gives its aggregators (ms), and their
/// rounds' release lease: long enough that a busy machine renews it in time (every third of
/// it), short enough to wait out.
const LEASE_MS: &str = "4000";

/// Round creations (`PUT /rounds/{id}`) one aggregator process sent the nodes.
#[derive(Default)]
struct RoundCreations(std::sync::Mutex<Vec<String>>);

impl RoundCreations {
    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Two aggregator processes on one PostgreSQL database, a blr job created on A over
/// participant processes that follow it on B. Only A, which took the job's driver lease when
/// the job was created, creates the job's rounds on the nodes; the first round is held
/// mid-release (node sums answered "not ready" by the test's proxies) and A, found as the
/// lease's holder by the pid in the lease row, is killed (`kill -9`). B takes the job over
/// once A's lease expires: the job ends "done", bit for bit the in-process fit, each of its
/// rounds released once and paid once from its reservation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_aggregator_takes_over_a_job_whose_lease_holder_was_killed() {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-lease", 3, Store::Postgres) else {
            return;
        };
        const SHARED: &str = "aggregator.sqlite";
        let held = Arc::new(AtomicBool::new(true));
        let creations = [
            Arc::new(RoundCreations::default()),
            Arc::new(RoundCreations::default()),
        ];
        let mut aggs = Vec::new();
        for created in &creations {
            let mut nodes = Vec::new();
            for url in cluster.urls() {
                let (held, created) = (held.clone(), created.clone());
                nodes.push(
                    proxy_by_method(cluster.http.clone(), url, move |method, path| {
                        let round = path.strip_prefix("/rounds/").unwrap_or_default();
                        if *method == reqwest::Method::PUT && !round.contains('/') {
                            created.0.lock().unwrap().push(round.to_string());
                        }
                        (path.ends_with("/sum") && held.load(SeqCst))
                            .then_some((StatusCode::ACCEPTED, "held by the test proxy"))
                    })
                    .await,
                );
            }
            aggs.push(AggregatorProcess::start_with_args(
                &cluster,
                SHARED,
                10.0,
                "127.0.0.1:0",
                &nodes,
                &["--job-lease-ms", LEASE_MS, "--release-lease-ms", LEASE_MS],
            ));
        }
        let (header, rows) = diabetes();
        let spec = job_spec(6, 1, 1, 120_000);
        let id = create_job(&cluster, &aggs[0].url, &spec).await;
        let dirs: Vec<PathBuf> = (0..6)
            .map(|i| participant_files(&cluster.dir, i, &header, &rows[i..i + 1], POLICY))
            .collect();
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggs[1].url, d, &id))
            .collect();
        // Mid-job: the first round has every share and is closing, its node sums held back.
        let start = Instant::now();
        loop {
            let view = job_view(&cluster, &aggs[1].url, &id).await;
            if let Some(first) = view.status.rounds.first() {
                let first = first.id.clone();
                let closing = in_aggregator_db(&cluster, SHARED, move |c| {
                    c.query_opt(
                        "SELECT 1 FROM agg_rounds WHERE id = $1 AND state = 'closing'",
                        &[&first],
                    )
                    .unwrap()
                    .is_some()
                });
                if closing {
                    break;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "round 1 did not close"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let by_a = creations[0].count();
        assert!(by_a >= 3, "A created round 1 on the 3 nodes");
        assert_eq!(creations[1].count(), 0, "B created a round of A's job");
        let job = id.clone();
        let holder: String = in_aggregator_db(&cluster, SHARED, move |c| {
            c.query_one(
                "SELECT holder FROM agg_job_leases WHERE job_id = $1",
                &[&job],
            )
            .unwrap()
            .get(0)
        });
        let pid: u32 = holder
            .strip_prefix("pid ")
            .and_then(|rest| rest.split(' ').next())
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("lease holder {holder:?}"));
        assert_eq!(pid, aggs[0].child.id(), "the job's lease holder is A");
        aggs[0].child.kill().unwrap();
        aggs[0].child.wait().unwrap();
        held.store(false, SeqCst);

        let view = wait_for_end(&cluster, &aggs[1].url, &id).await;
        for p in processes {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(ok && !out.contains("did not"), "{out}");
        }
        assert_same_fit(&view, &in_process(&spec, &dirs));
        assert_eq!(creations[0].count(), by_a, "A created nothing more");
        assert!(creations[1].count() >= 3 * (view.status.rounds.len() - 1));
        // Each round released once and paid once, from the job's reservation: no other charge.
        let rounds: Vec<String> = view.status.rounds.iter().map(|r| r.id.clone()).collect();
        let (states, paid, charges): (Vec<String>, Vec<Option<f64>>, Vec<String>) =
            in_aggregator_db(&cluster, SHARED, move |c| {
                let mut states = Vec::new();
                let mut paid = Vec::new();
                for round in &rounds {
                    states.push(
                        c.query_one("SELECT state FROM agg_rounds WHERE id = $1", &[round])
                            .unwrap()
                            .get(0),
                    );
                    paid.push(
                        c.query_one("SELECT rho FROM agg_job_rounds WHERE round = $1", &[round])
                            .unwrap()
                            .get(0),
                    );
                }
                let charges = c
                    .query("SELECT id FROM agg_charges", &[])
                    .unwrap()
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                (states, paid, charges)
            });
        assert!(states.iter().all(|s| s == "released"), "{states:?}");
        assert!(
            paid.iter().all(|rho| rho.is_some_and(|r| r > 0.0)),
            "{paid:?}"
        );
        let total: f64 = paid.iter().flatten().sum();
        assert!((total - view.status.rho_spent).abs() < 1e-12, "{paid:?}");
        assert_eq!(charges, vec![format!("job:{id}")]);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A `regression` job: four participant processes with 100 diabetes rows each, and a fifth
/// whose policy may not contribute `bmi` (refused, T = 1); two rounds, the ranges round and the
/// statistics of the narrowed ranges. Its result (coefficients in the
/// data's units, errors, DP R², warnings, spent budget, design) is the in-process
/// `blr::fit_regression_held` over the same rows grouped the same way, with the same seeds;
/// `dpdist job predict` on it prints exactly `Regression::predict` for the 42 rows none of the
/// four held.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regression_job_equals_the_in_process_fit_and_predicts_as_it(#[case] store: Store) {
    tokio::time::timeout(LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-regression", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let spec = JobSpec {
            kind: JobKind::Regression,
            ..job_spec(5, 1, 100, 120_000)
        };
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let refusing = POLICY.replace("\"bmi\", ", "");
        let dirs: Vec<PathBuf> = (0..5)
            .map(|i| {
                // The refusing participant holds rows the others hold too: it sends none.
                let (policy, start) = if i == 4 {
                    (refusing.as_str(), 0)
                } else {
                    (POLICY, i * 100)
                };
                participant_files(&cluster.dir, i, &header, &rows[start..start + 100], policy)
            })
            .collect();
        let view = run_with_one_refusing(&cluster, &aggregator.url, &dirs, &id, 4).await;
        assert_eq!(view.status.rounds.len(), 2);
        let result = view.status.regression_result.clone().unwrap();
        assert!(view.status.result.is_none() && view.status.sum_result.is_none());

        let local = in_process_regression(&spec, &dirs[..4]);
        let expected = dca_service::protocol::job::regression::RegressionResult::of(&spec, &local);
        assert_eq!(bits(&result.coefficients), bits(&expected.coefficients));
        assert_eq!(result, expected);
        assert_eq!(result.records, 400);
        assert_eq!(result.warnings.is_none(), local.warnings.is_empty());

        // Predictions for the rows nobody held, from the result as `dpdist job result` prints
        // it.
        let result_file = cluster.dir.join("result.json");
        std::fs::write(&result_file, serde_json::to_string_pretty(&result).unwrap()).unwrap();
        let test_rows = &rows[400..];
        let data_file = cluster.dir.join("new.csv");
        std::fs::write(&data_file, format!("{header}\n{}\n", test_rows.join("\n"))).unwrap();
        let (ok, out) = dpdist(
            &[
                "job",
                "predict",
                "--result",
                result_file.to_str().unwrap(),
                "--data",
                data_file.to_str().unwrap(),
            ],
            Duration::from_secs(30),
        );
        assert!(ok, "{out}");
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("target"));
        let printed: Vec<f64> = lines.map(|l| l.parse().unwrap()).collect();
        let table =
            blr::data::Table::parse_csv(&std::fs::read_to_string(&data_file).unwrap()).unwrap();
        let (new_x, _) = spec.raw_rows_of(&table).unwrap();
        assert_eq!(bits(&printed), bits(&local.predict(&new_x).unwrap()));
        assert_eq!(printed.len(), 42);
        // From the job itself (`--job`), the same lines.
        let (ok, from_job) = dpdist(
            &[
                "job",
                "predict",
                "--job",
                &id,
                "--aggregator",
                &aggregator.url,
                "--ca",
                cluster.certs.dir.join("ca.pem").to_str().unwrap(),
                "--analyst-token-file",
                cluster.dir.join("analyst.token").to_str().unwrap(),
                "--data",
                data_file.to_str().unwrap(),
            ],
            Duration::from_secs(30),
        );
        assert!(ok, "{from_job}");
        assert_eq!(from_job, out);
    })
    .await
    .expect("test exceeded its time limit");
}

/// A `regression` job on a split of the real-data suite (docs/src/results/real-data.md), whose
/// data are installed by its script, not vendored: `DPDIST_SUITE_SPLIT` is a split's directory
/// (`train.csv`, `test.csv`) and `DPDIST_SUITE_BOUNDS` the set's bounds file, indicator groups
/// included. Four participants hold the training rows in four parts; the job's result is the
/// in-process `blr::fit_regression_held` over the same parts bit for bit, and `dpdist job
/// predict` prints its predictions of the test rows.
#[rstest]
#[case::sqlite(Store::Sqlite)]
#[case::postgres(Store::Postgres)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a split of the real-data suite: DPDIST_SUITE_SPLIT, DPDIST_SUITE_BOUNDS \
              (docs/src/results/real-data.md)"]
async fn a_regression_job_on_a_suite_split_equals_the_in_process_fit(#[case] store: Store) {
    let (Ok(split), Ok(bounds_file)) = (
        std::env::var("DPDIST_SUITE_SPLIT"),
        std::env::var("DPDIST_SUITE_BOUNDS"),
    ) else {
        panic!("set DPDIST_SUITE_SPLIT (a split's directory) and DPDIST_SUITE_BOUNDS");
    };
    tokio::time::timeout(4 * LIMIT, async {
        let Some(cluster) = Cluster::start_on("job-suite", 3, store) else {
            return;
        };
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let bounds: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&bounds_file).unwrap()).unwrap();
        let column = |c: &serde_json::Value| ColumnBounds {
            name: c["name"].as_str().unwrap().into(),
            lo: c["lower"].as_f64().unwrap(),
            hi: c["upper"].as_f64().unwrap(),
            group: c["group"].as_str().map(String::from),
        };
        let train = std::fs::read_to_string(Path::new(&split).join("train.csv")).unwrap();
        let mut lines = train.lines();
        let header = lines.next().unwrap().to_string();
        let rows: Vec<String> = lines.map(String::from).collect();
        let part = rows.len().div_ceil(4);
        let spec = JobSpec {
            kind: JobKind::Regression,
            target: column(&bounds["target"]),
            features: bounds["features"]
                .as_array()
                .unwrap()
                .iter()
                .map(column)
                .collect(),
            ..job_spec(4, 1, part, 120_000)
        };
        spec.validate().unwrap();
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let names: Vec<String> = header.split(',').map(|n| format!("{n:?}")).collect();
        let policy = format!(
            "columns = [{}]\nmax_epsilon_per_job = 2.0\ntotal_epsilon = 10.0\n",
            names.join(", ")
        );
        let dirs: Vec<PathBuf> = rows
            .chunks(part)
            .enumerate()
            .map(|(i, held)| participant_files(&cluster.dir, i, &header, held, &policy))
            .collect();
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for (i, p) in processes.into_iter().enumerate() {
            let (ok, out) = p.finish(Duration::from_secs(120));
            assert!(
                ok && !out.contains("did not take part"),
                "participant {i}: {out}"
            );
        }
        let result = view
            .status
            .regression_result
            .clone()
            .expect("a regression result");

        let local = in_process_regression(&spec, &dirs);
        assert!(!local.design.indicator_groups.is_empty() || bounds_file.contains("budgetfood"));
        let expected = dca_service::protocol::job::regression::RegressionResult::of(&spec, &local);
        assert_eq!(bits(&result.coefficients), bits(&expected.coefficients));
        assert_eq!(result, expected);
        assert_eq!(result.records, rows.len());

        let result_file = cluster.dir.join("result.json");
        std::fs::write(&result_file, serde_json::to_string_pretty(&result).unwrap()).unwrap();
        let test_file = Path::new(&split).join("test.csv");
        let (ok, out) = dpdist(
            &[
                "job",
                "predict",
                "--result",
                result_file.to_str().unwrap(),
                "--data",
                test_file.to_str().unwrap(),
            ],
            Duration::from_secs(60),
        );
        assert!(ok, "{out}");
        let printed: Vec<f64> = out.lines().skip(1).map(|l| l.parse().unwrap()).collect();
        let table = blr::data::Table::parse_csv(&std::fs::read_to_string(&test_file).unwrap());
        let (test_x, _) = spec.raw_rows_of(&table.unwrap()).unwrap();
        assert_eq!(bits(&printed), bits(&local.predict(&test_x).unwrap()));
    })
    .await
    .expect("test exceeded its time limit");
}
