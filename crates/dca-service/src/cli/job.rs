//! `dpdist job create|status|result|cancel|predict`: the analyst's side of a job (no data file;
//! `predict` reads the rows to predict for, and asks no server but for `--job`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use dca_service::protocol::job::JobView;
use dca_service::protocol::job::{ColumnBounds, JobKind, JobSpec, JobState};
use dca_service::{Error, MEDIA_JSON, Result};
use serde::Deserialize;

use crate::{https_client, read_text, secret};

#[derive(Args, Clone)]
pub struct JobConnection {
    /// The aggregator server's base URL.
    #[arg(long)]
    aggregator: String,
    /// PEM CA certificate the aggregator's certificate chains to.
    #[arg(long)]
    ca: PathBuf,
    /// File holding the analyst's bearer token.
    #[arg(long)]
    analyst_token_file: PathBuf,
}

#[derive(Subcommand)]
pub enum JobCommand {
    /// Create a job from a TOML file (see docs/src/services/jobs.md); prints its id.
    Create {
        #[command(flatten)]
        conn: JobConnection,
        /// The job file.
        #[arg(long)]
        spec: PathBuf,
    },
    /// Print a job's public status (JSON).
    Status {
        #[command(flatten)]
        conn: JobConnection,
        /// Hex job id.
        #[arg(long)]
        job: String,
    },
    /// Wait for a job to end; print its result (JSON) or fail with the reason it did not finish.
    Result {
        #[command(flatten)]
        conn: JobConnection,
        /// Hex job id.
        #[arg(long)]
        job: String,
        /// Seconds to wait at most.
        #[arg(long, default_value_t = 3600)]
        wait_secs: u64,
    },
    /// Cancel a job: nothing more is released; what it did not spend returns to the budget.
    Cancel {
        #[command(flatten)]
        conn: JobConnection,
        /// Hex job id.
        #[arg(long)]
        job: String,
    },
    /// Predict for the rows of a CSV file from a `regression` job's result (`--result`, or the
    /// job itself with `--job`) or a done `train` job (`--job` only: the feature map is the
    /// job's spec). One prediction a line after a header: a regression prints the target's
    /// name then values in its units (each value clipped to its public range as in the fit,
    /// each prediction to the target's); a train job prints `p_<target>` then P(target = 1 | x)
    /// (each feature clipped to its public range and mapped onto ±5 as the participants did).
    /// With `--result` no server is asked; with `--job` only the aggregator, for the job.
    Predict {
        /// A `regression` job's result as `dpdist job result` printed it (JSON).
        #[arg(long, conflicts_with = "job", required_unless_present = "job")]
        result: Option<PathBuf>,
        /// Hex id of a done `regression` or `train` job to predict from (read from the
        /// aggregator: needs `--aggregator`, `--ca` and `--analyst-token-file`).
        #[arg(long, requires_all = ["aggregator", "ca", "analyst_token_file"])]
        job: Option<String>,
        /// With `--job`: the aggregator server's base URL.
        #[arg(long, requires = "job")]
        aggregator: Option<String>,
        /// With `--job`: PEM CA certificate the aggregator's certificate chains to.
        #[arg(long, requires = "job")]
        ca: Option<PathBuf>,
        /// With `--job`: file holding the analyst's bearer token.
        #[arg(long, requires = "job")]
        analyst_token_file: Option<PathBuf>,
        /// Numeric CSV with a header row holding every feature column the model reads (other
        /// columns are ignored).
        #[arg(long)]
        data: PathBuf,
    },
}

/// The job file: a [`JobSpec`] without its creation time, with defaults for the windows.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobFile {
    kind: JobKind,
    target: ColumnBounds,
    features: Vec<ColumnBounds>,
    epsilon: f64,
    delta: f64,
    max_dropped: usize,
    #[serde(default = "default_mode")]
    mode: String,
    roster: Vec<String>,
    #[serde(default = "one")]
    max_rows: usize,
    #[serde(default = "minute")]
    answer_window_ms: u64,
    #[serde(default = "ten_minutes")]
    upload_window_ms: u64,
    #[serde(default)]
    public_seed: Option<u64>,
    /// A `train` job's settings (a `[train]` table).
    #[serde(default)]
    train: Option<dca_service::protocol::job::train_settings::TrainSettings>,
    /// A `blr` job's budget fraction for releasing the shares its bounds clipped.
    #[serde(default)]
    clipped_share: Option<f64>,
    /// Every round verified (a `[validity]` table: `kind = "linf"`, `truncation_delta`).
    #[serde(default)]
    validity: Option<dca_service::protocol::validity::ValiditySpec>,
}

fn default_mode() -> String {
    "seed".into()
}
fn one() -> usize {
    1
}
fn minute() -> u64 {
    60_000
}
fn ten_minutes() -> u64 {
    600_000
}

async fn checked<T: serde::de::DeserializeOwned>(r: reqwest::Response, what: &str) -> Result<T> {
    let status = r.status();
    if !status.is_success() {
        return Err(Error::Http(format!(
            "{what}: {status}: {}",
            r.text().await.unwrap_or_default()
        )));
    }
    Ok(r.json().await?)
}

pub async fn run(command: JobCommand) -> Result<()> {
    match command {
        JobCommand::Create { conn, spec } => {
            let file: JobFile = toml::from_str(&read_text(&spec, "--spec")?)
                .map_err(|e| Error::InvalidSpec(format!("--spec {}: {e}", spec.display())))?;
            let spec = JobSpec {
                kind: file.kind,
                target: file.target,
                features: file.features,
                epsilon: file.epsilon,
                delta: file.delta,
                max_dropped: file.max_dropped,
                mode: file.mode,
                roster: file.roster,
                max_rows: file.max_rows,
                answer_window_ms: file.answer_window_ms,
                upload_window_ms: file.upload_window_ms,
                created_unix_ms: dca_service::node::now_ms(),
                public_seed: file.public_seed,
                train: file.train,
                clipped_share: file.clipped_share,
                validity: file.validity,
            };
            spec.validate()?;
            let http = https_client(&conn.ca, 8)?;
            let token = secret(&conn.analyst_token_file, "--analyst-token-file")?;
            let r = http
                .put(format!("{}/jobs/{}", conn.aggregator, spec.id()))
                .bearer_auth(token.expose())
                .header(reqwest::header::CONTENT_TYPE, MEDIA_JSON)
                .body(spec.canonical_json())
                .send()
                .await?;
            let view: JobView = checked(r, "creating the job").await?;
            println!("{}", view.status.id);
            Ok(())
        }
        JobCommand::Status { conn, job } => {
            let view = get(&conn, &job).await?;
            println!("{}", pretty(&view.status)?);
            Ok(())
        }
        JobCommand::Result {
            conn,
            job,
            wait_secs,
        } => {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(wait_secs);
            loop {
                let view = get(&conn, &job).await?;
                match view.status.state {
                    JobState::Done => {
                        let s = &view.status;
                        let result = if let Some(r) = &s.regression_result {
                            pretty(r)?
                        } else {
                            match (&s.result, &s.train_result, &s.sum_result) {
                                (Some(blr), _, _) => pretty(blr)?,
                                (_, Some(train), _) => pretty(train)?,
                                (_, _, Some(sum)) => pretty(sum)?,
                                _ => pretty(&serde_json::Value::Null)?,
                            }
                        };
                        println!("{result}");
                        return Ok(());
                    }
                    JobState::Aborted | JobState::Cancelled | JobState::Failed => {
                        return Err(Error::Job(format!(
                            "job {}: {}",
                            view.status.state,
                            view.status.reason.unwrap_or_default()
                        )));
                    }
                    _ if tokio::time::Instant::now() >= deadline => {
                        return Err(Error::Timeout(format!(
                            "job {job} still {} after {wait_secs} s",
                            view.status.state
                        )));
                    }
                    _ => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
        }
        JobCommand::Predict {
            result,
            job,
            aggregator,
            ca,
            analyst_token_file,
            data,
        } => match (result, job, aggregator, ca, analyst_token_file) {
            (Some(result), None, None, None, None) => predict(&result, &data),
            (None, Some(job), Some(aggregator), Some(ca), Some(analyst_token_file)) => {
                let conn = JobConnection {
                    aggregator,
                    ca,
                    analyst_token_file,
                };
                let view = get(&conn, &job).await?;
                predict_job(&job, &view, &data)
            }
            // clap refuses most of these before.
            _ => Err(Error::InvalidSpec(
                "job predict: --result FILE alone, or --job ID with --aggregator, --ca and \
                 --analyst-token-file"
                    .into(),
            )),
        },
        JobCommand::Cancel { conn, job } => {
            let http = https_client(&conn.ca, 8)?;
            let token = secret(&conn.analyst_token_file, "--analyst-token-file")?;
            let r = http
                .post(format!("{}/jobs/{job}/cancel", conn.aggregator))
                .bearer_auth(token.expose())
                .send()
                .await?;
            let status: dca_service::protocol::job::JobStatus =
                checked(r, "cancelling the job").await?;
            println!("{}", pretty(&status)?);
            Ok(())
        }
    }
}

/// `dpdist job predict --result`: every error names the file and its cause.
fn predict(result: &std::path::Path, data: &std::path::Path) -> Result<()> {
    let what = format!("--result {}", result.display());
    let model = dca_service::protocol::job::regression::RegressionResult::from_json(
        &read_text(result, "--result")?,
        &what,
    )?;
    let table = read_table(data)?;
    let predictions = model.predict(&table).map_err(|e| at_data(data, e))?;
    write_predictions(&model.target, &predictions)
}

/// `dpdist job predict --job`: a done `regression` or `train` job's predictions; every error
/// names the job or the data file, and its cause.
fn predict_job(job: &str, view: &JobView, data: &std::path::Path) -> Result<()> {
    let refuse = |m: String| Error::InvalidSpec(format!("--job {job}: {m}"));
    let (spec, status) = (&view.spec, &view.status);
    if status.state != JobState::Done {
        let why = status
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        return Err(refuse(format!(
            "the job is {}{why}: predictions need a done job's result",
            status.state
        )));
    }
    let missing = || {
        refuse(format!(
            "a done {:?} job without its result",
            spec.kind.as_str()
        ))
    };
    match spec.kind {
        JobKind::Regression => {
            let model = status.regression_result.as_ref().ok_or_else(missing)?;
            let table = read_table(data)?;
            let predictions = model.predict(&table).map_err(|e| at_data(data, e))?;
            write_predictions(&model.target, &predictions)
        }
        JobKind::Train => {
            let result = status.train_result.as_ref().ok_or_else(missing)?;
            let table = read_table(data)?;
            // The data's faults first, named as the data file's.
            let names: Vec<&str> = spec.features.iter().map(|c| c.name.as_str()).collect();
            dca_service::protocol::job::columns_of(&table, &names, "the model reads")
                .map_err(|e| at_data(data, e))?;
            let p = dca_service::protocol::job::train::predict_proba(spec, result, &table)
                .map_err(|e| refuse(e.to_string()))?;
            write_predictions(&format!("p_{}", spec.target.name), &p)
        }
        kind @ (JobKind::Blr | JobKind::Sum) => Err(refuse(format!(
            "a {:?} job: predictions need a \"regression\" or \"train\" job",
            kind.as_str()
        ))),
    }
}

fn at_data(data: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::InvalidSpec(format!("--data {}: {e}", data.display()))
}

fn read_table(data: &std::path::Path) -> Result<blr::data::Table> {
    blr::data::Table::parse_csv(&read_text(data, "--data")?).map_err(|e| at_data(data, e))
}

/// A header line, then one prediction a line.
fn write_predictions(header: &str, predictions: &[f64]) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // `{}` of an f64 prints the shortest text that reads back to the same bits.
    let mut write = || -> std::io::Result<()> {
        writeln!(out, "{header}")?;
        for p in predictions {
            writeln!(out, "{p}")?;
        }
        out.flush()
    };
    write().map_err(Error::Io)
}

async fn get(conn: &JobConnection, job: &str) -> Result<JobView> {
    let http = https_client(&conn.ca, 8)?;
    let token = secret(&conn.analyst_token_file, "--analyst-token-file")?;
    let r = http
        .get(format!("{}/jobs/{job}", conn.aggregator))
        .bearer_auth(token.expose())
        .send()
        .await?;
    checked(r, "reading the job").await
}

fn pretty(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::Io(std::io::Error::other(e)))
}
