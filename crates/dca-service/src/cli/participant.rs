//! `dpdist participant`: take part in jobs as a data holder; `dpdist participant ledger`:
//! what its ledger holds.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use dca_service::participant::ledger::{
    Ledger, LedgerFile, RecordedJob, people, rebuilt_ledger, reconcile,
};
use dca_service::participant::{Participant, Policy, Rows};
use dca_service::{Error, Result};

use crate::{https_client, read_text, secret};
use dca_service::protocol::job::JobState;

/// Default of `--wait-for-job`: an hour.
const DEFAULT_WAIT_FOR_JOB_SECS: u64 = 3600;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ParticipantArgs {
    #[command(subcommand)]
    command: Option<ParticipantCommand>,
    /// The aggregator server's base URL.
    #[arg(long, required = true)]
    aggregator: Option<String>,
    /// PEM CA certificate the aggregator's and the nodes' certificates chain to.
    #[arg(long, required = true)]
    ca: Option<PathBuf>,
    /// File holding this participant's bearer token (the analyst lists its SHA-256).
    #[arg(long, required = true)]
    token_file: Option<PathBuf>,
    /// This participant's rows (CSV with a header naming the columns).
    #[arg(long, required = true)]
    data: Option<PathBuf>,
    /// What it agrees to (TOML: columns, max_epsilon_per_job, total_epsilon).
    #[arg(long, required = true)]
    policy: Option<PathBuf>,
    /// Its ledger and its sealed attempts.
    #[arg(long, required = true)]
    state_dir: Option<PathBuf>,
    /// Follow only this job and exit when it ends (exit status 0 if it is done).
    #[arg(long)]
    job: Option<String>,
    /// Milliseconds between looks at the aggregator.
    #[arg(long, default_value_t = 500)]
    poll_ms: u64,
    /// Seconds to wait, at most, for a job that names this participant (its token on no job's
    /// roster yet, or the `--job` not created yet), logging what it waits for; then it exits
    /// with an error. 0: exit at once.
    #[arg(long, default_value_t = DEFAULT_WAIT_FOR_JOB_SECS)]
    wait_for_job: u64,
    /// When the ledger is missing or disagrees with the aggregator's record, rebuild it from
    /// that record instead of refusing to answer: every job this participant's token answered,
    /// each round that named it charged (released or not), a job still under way left. The
    /// untrusted file is kept beside it.
    #[arg(long)]
    rebuild_ledger_from_aggregator: bool,
    /// Draw noise and masks from this seed, as the in-process pipeline with the same seed
    /// does — NON-PRIVATE: anyone knowing the seed can unmask; for reproducible tests only.
    #[arg(long)]
    insecure_seed: Option<u64>,
}

#[derive(Subcommand)]
enum ParticipantCommand {
    /// Print the ledger: each job with its answer, ε, the zCDP ρ charged (at sealing) and
    /// what was released, the ε committed and what remains of the policy's total_epsilon.
    /// With the aggregator, checked against its record (and, if the ledger cannot be trusted,
    /// the totals the record gives).
    Ledger(LedgerArgs),
}

#[derive(Args)]
struct LedgerArgs {
    /// The participant's state directory.
    #[arg(long)]
    state_dir: PathBuf,
    /// Its policy, for what remains of its total_epsilon.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// The aggregator server's base URL: check the ledger against its record.
    #[arg(long, requires_all = ["ca", "token_file"])]
    aggregator: Option<String>,
    /// PEM CA certificate of the aggregator.
    #[arg(long)]
    ca: Option<PathBuf>,
    /// File holding this participant's bearer token.
    #[arg(long)]
    token_file: Option<PathBuf>,
}

fn given<T>(v: Option<T>, flag: &str) -> Result<T> {
    v.ok_or_else(|| Error::InvalidSpec(format!("{flag} is required")))
}

fn read_policy(path: &std::path::Path) -> Result<Policy> {
    Policy::parse(&read_text(path, "--policy")?)
        .map_err(|e| Error::InvalidSpec(format!("--policy {}: {e}", path.display())))
}

pub async fn run(a: ParticipantArgs) -> Result<()> {
    if let Some(ParticipantCommand::Ledger(l)) = a.command {
        return ledger(l).await;
    }
    let data = given(a.data, "--data")?;
    let rows = Rows::csv(&data)?;
    let policy = read_policy(&given(a.policy, "--policy")?)?;
    if a.insecure_seed.is_some() {
        tracing::warn!(
            "NON-PRIVATE: --insecure-seed draws this participant's noise and masks from a \
             fixed seed; anyone knowing it can unmask its shares"
        );
    }
    let participant = Participant {
        aggregator: given(a.aggregator, "--aggregator")?,
        http: https_client(&given(a.ca, "--ca")?, 8)?,
        token: secret(&given(a.token_file, "--token-file")?, "--token-file")?,
        rows,
        policy,
        state_dir: given(a.state_dir, "--state-dir")?,
        insecure_seed: a.insecure_seed,
        poll: Duration::from_millis(a.poll_ms.max(10)),
        wait_for_job: Duration::from_secs(a.wait_for_job),
        rebuild_ledger: a.rebuild_ledger_from_aggregator,
    };
    println!(
        "dpdist participant: {} rows, waiting for jobs",
        participant.rows.len()
    );
    let outcome = participant.run(a.job.as_deref()).await?;
    println!("{}", outcome.describe());
    if outcome.state == JobState::Done {
        Ok(())
    } else {
        Err(Error::Job(format!("the job ended {}", outcome.state)))
    }
}

/// `dpdist participant ledger`.
async fn ledger(a: LedgerArgs) -> Result<()> {
    let policy = a.policy.as_deref().map(read_policy).transpose()?;
    let record = match (&a.aggregator, &a.ca, &a.token_file) {
        (Some(url), Some(ca), Some(token)) => {
            // Only its link to the aggregator is used: no rows are read, nothing is answered.
            let participant = Participant {
                aggregator: url.trim_end_matches('/').to_string(),
                http: https_client(ca, 4)?,
                token: secret(token, "--token-file")?,
                rows: Rows::memory(vec!["-".into()], vec![0.0])?,
                policy: Policy {
                    columns: Vec::new(),
                    max_epsilon_per_job: 1.0,
                    total_epsilon: 1.0,
                },
                state_dir: a.state_dir.clone(),
                insecure_seed: None,
                poll: Duration::from_millis(500),
                wait_for_job: Duration::ZERO,
                rebuild_ledger: false,
            };
            Some(participant.record().await?)
        }
        _ => None,
    };
    let path = LedgerFile::path_in(&a.state_dir);
    let problem = match LedgerFile::read(&a.state_dir) {
        Ok(Some(file)) => {
            println!(
                "ledger {}: {} entries, hash chain intact{}; token SHA-256 {}",
                path.display(),
                file.entries,
                if file.rebuilt {
                    ", rebuilt from the aggregator's record"
                } else {
                    ""
                },
                file.token_sha256
            );
            print_ledger(&file.ledger, record.as_deref(), policy.as_ref());
            match &record {
                Some(r) => match reconcile(&file.ledger, r) {
                    Ok(()) => {
                        println!(
                            "the aggregator's record agrees ({} job{} answered by this token)",
                            r.len(),
                            if r.len() == 1 { "" } else { "s" }
                        );
                        None
                    }
                    Err(cause) => Some(format!(
                        "it disagrees with the aggregator's record: {cause}"
                    )),
                },
                None => {
                    println!(
                        "(not checked against the aggregator's record: give --aggregator, --ca \
                         and --token-file)"
                    );
                    None
                }
            }
        }
        Ok(None) => Some("it is missing".to_string()),
        Err(Error::Ledger(cause)) => Some(cause),
        Err(e) => Some(e.to_string()),
    };
    let Some(problem) = problem else {
        return Ok(());
    };
    println!("ledger {}: CANNOT BE TRUSTED: {problem}", path.display());
    if let Some(r) = &record {
        println!(
            "from the aggregator's record (what --rebuild-ledger-from-aggregator would write):"
        );
        print_ledger(&rebuilt_ledger(r), Some(r), policy.as_ref());
    }
    Err(Error::Ledger(format!(
        "{}: {problem}; restore it from a backup, or rebuild it from the aggregator's record \
         (dpdist participant … --rebuild-ledger-from-aggregator)",
        path.display()
    )))
}

/// One line per job, then the totals.
fn print_ledger(ledger: &Ledger, record: Option<&[RecordedJob]>, policy: Option<&Policy>) {
    for (id, j) in &ledger.jobs {
        if !j.answer.accept {
            println!("job {id}: refused: {}", j.answer.reason);
            continue;
        }
        let recorded = record.and_then(|r| r.iter().find(|x| x.id == *id));
        let released = recorded.map(|r| {
            let with = r.rounds.iter().filter(|x| x.in_release).count();
            let never = j
                .rounds
                .keys()
                .filter(|k| !r.rounds.iter().any(|x| x.id == **k && x.released))
                .count();
            format!("; {with} released with its shares, {never} never released")
        });
        println!(
            "job {id}: accepted ({} rows), ε = {}, δ = {}; ρ charged {} of {} over {} round{} \
             (charged at sealing){}{}{}; holds ε = {}",
            j.answer.rows,
            people(j.epsilon),
            j.delta.map_or("?".into(), |d| format!("{d:e}")),
            people(j.rho_charged()),
            people(j.rho_budget),
            j.rounds.len(),
            if j.rounds.len() == 1 { "" } else { "s" },
            released.unwrap_or_else(|| format!(
                "; {} uploaded",
                j.rounds.values().filter(|r| r.uploaded).count()
            )),
            j.stopped
                .as_deref()
                .map(|s| format!("; left: {s}"))
                .unwrap_or_default(),
            j.ended
                .map_or("; under way (counts whole)".to_string(), |s| format!(
                    "; ended {s}"
                )),
            people(j.committed())
        );
    }
    let committed = ledger.committed();
    match policy {
        Some(p) => println!(
            "total: ε = {} committed of total_epsilon = {}: {} remains",
            people(committed),
            people(p.total_epsilon),
            people((p.total_epsilon - committed).max(0.0))
        ),
        None => println!(
            "total: ε = {} committed (give --policy for what remains)",
            people(committed)
        ),
    }
}
