//! Jobs with participant processes: a participant's files, a `dpdist participant` process
//! (killed on drop), creating a job and waiting for its end.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dca_service::MEDIA_JSON;
use dca_service::protocol::job::JobSpec;
use dca_service::protocol::job::JobView;
use reqwest::StatusCode;

use super::{ANALYST_TOKEN, Cluster, SEED};

/// Longest a multi-process job test may take.
pub const LIMIT: Duration = Duration::from_secs(400);

pub fn participant_token(i: usize) -> String {
    format!("participant-token-{i}")
}

/// Writes participant `i`'s files (token, rows, policy) under `dir/p{i}`; returns that dir.
pub fn participant_files(
    dir: &Path,
    i: usize,
    header: &str,
    rows: &[String],
    policy: &str,
) -> PathBuf {
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
pub struct ParticipantProcess(pub Child);

impl ParticipantProcess {
    pub fn start(cluster: &Cluster, aggregator: &str, own: &Path, job: &str) -> Self {
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
    pub fn finish(mut self, limit: Duration) -> (bool, String) {
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

pub async fn create_job(cluster: &Cluster, aggregator: &str, spec: &JobSpec) -> String {
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

pub async fn job_view(cluster: &Cluster, aggregator: &str, id: &str) -> JobView {
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

/// A `dpdist participant` process in each of `dirs` on job `id`; waits for the job's end and
/// checks that every one of them exited well having taken part.
pub async fn run_all_taking_part(
    cluster: &Cluster,
    aggregator: &str,
    dirs: &[PathBuf],
    id: &str,
) -> JobView {
    let processes: Vec<ParticipantProcess> = dirs
        .iter()
        .map(|d| ParticipantProcess::start(cluster, aggregator, d, id))
        .collect();
    let view = wait_for_end(cluster, aggregator, id).await;
    for p in processes {
        let (ok, out) = p.finish(Duration::from_secs(60));
        assert!(
            ok && out.contains("took part") && !out.contains("did not"),
            "{out}"
        );
    }
    view
}

pub async fn wait_for_end(cluster: &Cluster, aggregator: &str, id: &str) -> JobView {
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
