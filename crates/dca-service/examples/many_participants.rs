//! N participants in one process, through the library a host links (`dca_service::participant`,
//! the code behind libdpdist_net): a `blr` job on the diabetes rows (participant i holds row
//! i mod 442), against a running aggregator and its nodes. Prints the job's wall time (created →
//! result), this process's CPU per participant, and the in-process `blr::fit_grouped` on the same
//! rows for comparison. Run by `scripts/bench-job.sh --in-process N`.
//!
//!   many_participants --aggregator URL --ca CA.pem --analyst-token-file FILE --state-dir DIR
//!                     --n N [--poll-ms MS] [--epsilon E]

use std::time::{Duration, Instant};

use dca_service::participant::{Participant, Policy, Rows};
use dca_service::protocol::job::{ColumnBounds, JobKind, JobSpec};
use dca_service::protocol::spec::token_hash;
use dca_service::secret::SecretString;
use dca_service::{MEDIA_JSON, hex};
use dp_noise::rng::RngSource;
use rand_core::RngCore;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn need(args: &[String], name: &str) -> String {
    arg(args, name).unwrap_or_else(|| {
        eprintln!("many_participants: {name} is required");
        std::process::exit(2)
    })
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the name; 100 Hz.
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let aggregator = need(&args, "--aggregator");
    let ca = std::fs::read(need(&args, "--ca"))?;
    let analyst = SecretString::read_file(need(&args, "--analyst-token-file").as_ref())?;
    let state = std::path::PathBuf::from(need(&args, "--state-dir"));
    let n: usize = need(&args, "--n").parse()?;
    let poll = Duration::from_millis(arg(&args, "--poll-ms").map_or(Ok(1000), |v| v.parse())?);
    let epsilon: f64 = arg(&args, "--epsilon").map_or(Ok(2.0), |v| v.parse())?;

    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data");
    let table =
        blr::data::Table::parse_csv(&std::fs::read_to_string(format!("{root}/diabetes.csv"))?)?;
    let bounds: Vec<ColumnBounds> = std::fs::read_to_string(format!("{root}/diabetes.bounds.csv"))?
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ColumnBounds {
                name: f[0].into(),
                lo: f[1].parse().unwrap_or(0.0),
                hi: f[2].parse().unwrap_or(1.0),
                group: None,
            }
        })
        .collect();
    let (features, target) = bounds.split_at(bounds.len() - 1);
    let columns: Vec<String> = bounds.iter().map(|b| b.name.clone()).collect();
    let width = columns.len();
    let index: Vec<usize> = columns
        .iter()
        .map(|c| {
            table
                .names
                .iter()
                .position(|n| n == c)
                .expect("a diabetes column")
        })
        .collect();
    let row_of = |i: usize| -> Vec<f64> {
        let row = &table.values[(i % table.rows) * table.names.len()..];
        index.iter().map(|&j| row[j]).collect()
    };
    let mut csprng = RngSource::Os.try_rng()?;
    let tokens: Vec<String> = (0..n)
        .map(|_| {
            let mut b = [0u8; 32];
            csprng.fill_bytes(&mut b);
            hex::encode(&b)
        })
        .collect();
    let spec = JobSpec {
        kind: JobKind::Blr,
        target: target[0].clone(),
        features: features.to_vec(),
        epsilon,
        delta: 1e-5,
        max_dropped: n / 100 + 2,
        mode: "seed".into(),
        roster: tokens.iter().map(|t| hex::encode(&token_hash(t))).collect(),
        max_rows: 1,
        answer_window_ms: 600_000,
        upload_window_ms: 900_000,
        created_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_millis() as u64,
        public_seed: None,
        clipped_share: None,
        validity: None,
        train: None,
    };
    // One client for all: in a real deployment each participant has its own connection.
    let http = dca_service::http::tls::http_client(&ca, 512, Duration::from_secs(120))?;
    let policy = Policy::parse(&format!(
        "columns = {columns:?}\nmax_epsilon_per_job = 5.0\ntotal_epsilon = 10.0\n"
    ))?;

    let cpu_before = cpu_seconds();
    let start = Instant::now();
    let r = http
        .put(format!("{aggregator}/jobs/{}", spec.id()))
        .bearer_auth(analyst.expose())
        .header("content-type", MEDIA_JSON)
        .body(spec.canonical_json())
        .send()
        .await?;
    if !r.status().is_success() {
        return Err(format!("creating the job: {}: {}", r.status(), r.text().await?).into());
    }
    let id = spec.id();
    let mut tasks = Vec::with_capacity(n);
    for (i, token) in tokens.into_iter().enumerate() {
        let participant = Participant {
            aggregator: aggregator.clone(),
            http: http.clone(),
            token: SecretString::new(token),
            rows: Rows::memory(columns.clone(), row_of(i))?,
            policy: policy.clone(),
            state_dir: state.join(format!("p{i}")),
            insecure_seed: None,
            poll,
            wait_for_job: Duration::from_secs(60),
            rebuild_ledger: false,
        };
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            // Spread the first polls over one interval, as independent hosts would.
            tokio::time::sleep(poll.mul_f64(i as f64 / n as f64)).await;
            participant.run(Some(&id)).await
        }));
    }
    let mut took_part = 0;
    for t in tasks {
        if t.await?.is_ok_and(|o| o.took_part) {
            took_part += 1;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let view: serde_json::Value = http
        .get(format!("{aggregator}/jobs/{id}"))
        .bearer_auth(analyst.expose())
        .send()
        .await?
        .json()
        .await?;
    println!(
        "{n} participants in one process: job {} in {wall:.1} s wall; {took_part} took part; \
         process CPU {cpu:.1} s = {:.2} ms per participant",
        view["status"]["state"],
        cpu * 1000.0 / n as f64
    );

    // The same rows in process, one client per participant.
    let (mut x, mut y) = (Vec::with_capacity(n * (width - 1)), Vec::with_capacity(n));
    for i in 0..n {
        let row = row_of(i);
        x.extend_from_slice(&row[..width - 1]);
        y.push(row[width - 1]);
    }
    let names: Vec<String> = columns[..width - 1].to_vec();
    spec.public_bounds()
        .scale(&mut x, &names, 5.0)
        .and_then(|_| {
            spec.public_bounds()
                .scale(&mut y, &columns[width - 1..], 5.0)
        })?;
    let starts: Vec<usize> = (0..=n).collect();
    let t = Instant::now();
    blr::fit_grouped(
        &x,
        &y,
        width - 1,
        &starts,
        &spec.fit_config(3),
        RngSource::Os,
        &mut projection::InProcess,
    )?;
    println!(
        "in-process blr::fit_grouped on the same {n} rows: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
