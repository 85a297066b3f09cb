//! Jobs with the data holders as parties: `dpdist participant` processes, each reading only
//! its own CSV, against 3 nodes and the aggregator on loopback. With fixed seeds (the job's
//! public seed and the participants' `--insecure-seed`), the released statistics and the
//! posterior equal the in-process pipeline's over the same rows grouped the same way, bit
//! for bit.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use dca_service::job::{Answer, ColumnBounds, JobSpec};
use dca_service::job_http::JobView;
use dca_service::spec::token_hash;
use dca_service::{MEDIA_JSON, hex};
use dp_noise::rng::RngSource;
use reqwest::StatusCode;

const LIMIT: Duration = Duration::from_secs(400);

fn diabetes() -> (String, Vec<String>) {
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
            }
        })
        .collect()
}

fn participant_token(i: usize) -> String {
    format!("participant-token-{i}")
}

fn job_spec(roster: usize, t: usize, max_rows: usize, upload_window_ms: u64) -> JobSpec {
    let mut columns = bounds();
    let target = columns.pop().unwrap();
    assert_eq!(target.name, "target");
    JobSpec {
        kind: "blr".into(),
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
    }
}

const POLICY: &str = "columns = [\"age\", \"sex\", \"bmi\", \"bp\", \"s1\", \"s2\", \"s3\", \
                      \"s4\", \"s5\", \"s6\", \"target\"]\nmax_epsilon_per_job = 2.0\n\
                      total_epsilon = 10.0\n";

/// Writes participant `i`'s files (token, rows, policy) under `dir/p{i}`; returns that dir.
fn participant_files(dir: &Path, i: usize, header: &str, rows: &[String], policy: &str) -> PathBuf {
    let own = dir.join(format!("p{i}"));
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("token"), participant_token(i)).unwrap();
    let mut csv = format!("{header}\n");
    for r in rows {
        csv.push_str(r);
        csv.push('\n');
    }
    std::fs::write(own.join("rows.csv"), csv).unwrap();
    std::fs::write(own.join("policy.toml"), policy).unwrap();
    own
}

/// A `dpdist participant` process following job `job`; killed and reaped on drop.
struct ParticipantProcess(Child);

impl ParticipantProcess {
    fn start(cluster: &Cluster, aggregator: &str, own: &Path, job: &str) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_dpdist"))
            .arg("participant")
            .args(["--aggregator", aggregator])
            .arg("--ca")
            .arg(cluster.certs.dir.join("ca.pem"))
            .arg("--token-file")
            .arg(own.join("token"))
            .arg("--data")
            .arg(own.join("rows.csv"))
            .arg("--policy")
            .arg(own.join("policy.toml"))
            .arg("--state-dir")
            .arg(own.join("state"))
            .args(["--job", job, "--poll-ms", "50"])
            .args(["--insecure-seed", &SEED.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn dpdist participant");
        ParticipantProcess(child)
    }

    /// Waits (bounded) for the process to exit; its stdout and whether it succeeded.
    fn finish(mut self, limit: Duration) -> (bool, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                let mut out = String::new();
                use std::io::Read;
                self.0
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                return (status.success(), out);
            }
            assert!(
                start.elapsed() < limit,
                "participant did not finish in time"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ParticipantProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn create_job(cluster: &Cluster, aggregator: &str, spec: &JobSpec) -> String {
    let r = cluster
        .http
        .put(format!("{aggregator}/jobs/{}", spec.id()))
        .bearer_auth(ANALYST_TOKEN)
        .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
        .body(spec.canonical_json())
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::CREATED,
        "{}",
        r.text().await.unwrap()
    );
    spec.id()
}

async fn job_view(cluster: &Cluster, aggregator: &str, id: &str) -> JobView {
    let r = cluster
        .http
        .get(format!("{aggregator}/jobs/{id}"))
        .bearer_auth(ANALYST_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn wait_for_end(cluster: &Cluster, aggregator: &str, id: &str) -> JobView {
    let start = Instant::now();
    loop {
        let view = job_view(cluster, aggregator, id).await;
        if !view.status.is_live() {
            return view;
        }
        assert!(start.elapsed() < LIMIT, "job still {}", view.status.state);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The in-process pipeline over the participants' own files, client i = participant
/// `taking_part[i]`'s rows, with the job's settings and seed.
fn in_process(spec: &JobSpec, dirs: &[PathBuf]) -> blr::Fit {
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

fn assert_same_fit(view: &JobView, local: &blr::Fit) {
    assert_eq!(view.status.state, "done", "{:?}", view.status.reason);
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
    assert_eq!(view.status.rounds.len(), 2);
}

/// Twelve participant processes, one row each; one of them refuses by its policy (it may not
/// contribute `bmi`) and stays out, T = 2: the job runs with the other eleven and releases
/// exactly what the in-process pipeline releases over their rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blr_job_over_twelve_participant_processes_equals_the_in_process_fit() {
    tokio::time::timeout(LIMIT, async {
        let cluster = Cluster::start("job-twelve", 3);
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
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for (i, p) in processes.into_iter().enumerate() {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(ok, "participant {i}: {out}");
            let took_part = !out.contains("did not take part");
            assert_eq!(took_part, i != 7, "participant {i}: {out}");
        }
        assert_eq!(view.status.refused.len(), 1);
        assert_eq!(view.status.refused[0].0, 7);
        assert!(
            view.status.refused[0].1.contains("bmi"),
            "{:?}",
            view.status.refused
        );
        let taking_part: Vec<PathBuf> = (0..12)
            .filter(|&i| i != 7)
            .map(|i| dirs[i].clone())
            .collect();
        assert_same_fit(&view, &in_process(&spec, &taking_part));
        // The job's rounds were paid from its reservation; what it did not use came back.
        assert!(view.status.rho_spent > 0.0 && view.status.rho_spent <= view.status.rho_reserved);
        // The refusing participant's ledger holds its refusal, nobody else's rows.
        let ledger = std::fs::read_to_string(dirs[7].join("state/ledger.json")).unwrap();
        assert!(ledger.contains("\"accept\": false"), "{ledger}");
    })
    .await
    .expect("test exceeded its time limit");
}

/// Five hospitals with 10 to 200 rows: each contributes the sum over its rows (per-record
/// sensitivity; the grid sized by the job's max_rows); the release equals the in-process
/// pipeline with the same grouping of rows into clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_silo_job_equals_the_in_process_fit_with_the_same_grouping() {
    tokio::time::timeout(LIMIT, async {
        let cluster = Cluster::start("job-silos", 3);
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        let sizes = [10usize, 40, 80, 112, 200];
        let spec = job_spec(5, 1, 200, 120_000);
        let id = create_job(&cluster, &aggregator.url, &spec).await;
        let mut start = 0;
        let dirs: Vec<PathBuf> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let d =
                    participant_files(&cluster.dir, i, &header, &rows[start..start + n], POLICY);
                start += n;
                d
            })
            .collect();
        let processes: Vec<ParticipantProcess> = dirs
            .iter()
            .map(|d| ParticipantProcess::start(&cluster, &aggregator.url, d, &id))
            .collect();
        let view = wait_for_end(&cluster, &aggregator.url, &id).await;
        for p in processes {
            let (ok, out) = p.finish(Duration::from_secs(60));
            assert!(
                ok && out.contains("took part") && !out.contains("did not"),
                "{out}"
            );
        }
        assert_eq!(view.status.result.as_ref().unwrap().records, 442);
        assert_same_fit(&view, &in_process(&spec, &dirs));
    })
    .await
    .expect("test exceeded its time limit");
}

/// Participants that accept and then never upload (killed after answering): T of them, and
/// the job completes with the rest at each round's deadline; T + 1, and the first round is
/// aborted, the job with it, nothing is released and the analyst reads why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_to_t_silent_participants_are_dropouts_one_more_aborts_the_job() {
    tokio::time::timeout(LIMIT, async {
        let cluster = Cluster::start("job-dropouts", 3);
        let aggregator = AggregatorProcess::start(&cluster, "aggregator.sqlite", 10.0);
        let (header, rows) = diabetes();
        for (silent, ends) in [(2usize, "done"), (3, "aborted")] {
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
                let dir = participant_files(
                    &cluster.dir.join(format!("silent{silent}")),
                    i,
                    &header,
                    &rows[i..i + 1],
                    POLICY,
                );
                processes.push(ParticipantProcess::start(
                    &cluster,
                    &aggregator.url,
                    &dir,
                    &id,
                ));
            }
            let view = wait_for_end(&cluster, &aggregator.url, &id).await;
            assert_eq!(view.status.state, ends, "{:?}", view.status.reason);
            if ends == "aborted" {
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
                assert_eq!(ok, ends == "done", "{out}");
            }
        }
    })
    .await
    .expect("test exceeded its time limit");
}
