//! A participant's ledger: what it agreed to and what it paid, kept so that deleting or editing
//! the file grants no budget.
//!
//! - **Append-only, self-checking.** `ledger.jsonl` in the state directory holds one entry per
//!   line; each line carries the SHA-256 of the line before it (a hash chain) and its own, and
//!   is fsync'd before the participant acts on it. The first entry names the participant's token
//!   (its SHA-256): a ledger copied from another participant is refused. A line whose hash does
//!   not match, a broken chain, or an entry that does not follow from the ones before (a charge
//!   for a job never answered) makes the whole ledger untrusted. A last line cut short by a
//!   crash (no newline) was never acted on, and is dropped.
//! - **Reconciled with the aggregator.** The aggregator records which jobs each token answered
//!   (`GET /participation`) and which of their rounds were released with its shares. At start
//!   and before answering a job the participant checks its ledger against that record
//!   ([`reconcile`]): every answer the aggregator holds is in the ledger with the job's own ε
//!   and δ (from the spec, whose hash is the job's id), every round released with its shares is
//!   charged, and a job the ledger says ended ended so. A ledger that is missing while the
//!   aggregator records answers, or that disagrees, stops the participant with the cause and
//!   the two ways back: restore the file, or rebuild it from the aggregator's record
//!   ([`rebuild_entries`], `--rebuild-ledger-from-aggregator`), which charges every round of
//!   every job found there that named this participant — released or not.
//! - **Charged at sealing.** A round is charged before its shares are sealed (the conservative
//!   rule: the participant cannot know whether a round it sealed for will be released). A round
//!   that was never released stays charged, and the ledger says it was not released.

use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use crate::protocol::job::participation::{ParticipatedJob, ParticipatedRound, Participation};
use crate::protocol::job::{Answer, JobState};
use crate::{Error, Result, hex};

/// The ledger's file in the state directory.
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// The ledger of earlier versions (one JSON object, rewritten in place): imported once.
pub const LEGACY_LEDGER_FILE: &str = "ledger.json";
const CHAIN_DOMAIN: &[u8] = b"dpdist participant ledger v1";

/// The participant's record of what it agreed to and paid, replayed from its entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// By job id.
    pub jobs: BTreeMap<String, LedgerJob>,
}

/// One job in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerJob {
    /// The answer given.
    pub answer: Answer,
    /// The job's ε (committed when accepted).
    pub epsilon: f64,
    /// zCDP ρ the job may spend of this participant's data (from its (ε, δ)).
    pub rho_budget: f64,
    /// Rounds joined, by round id.
    pub rounds: BTreeMap<String, LedgerRound>,
    /// Why this participant stopped taking part, if it did.
    #[serde(default)]
    pub stopped: Option<String>,
    /// The job's δ (absent in ledgers written before it was recorded).
    #[serde(default)]
    pub delta: Option<f64>,
    /// How the job ended, once this participant saw it end.
    #[serde(default)]
    pub ended: Option<JobState>,
}

/// One round in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRound {
    /// Its charge (zCDP ρ), written before its shares were sealed.
    pub rho: f64,
    /// Every node has its share.
    pub uploaded: bool,
}

impl Ledger {
    /// ε committed to accepted jobs.
    ///
    /// A job still under way counts with its whole ε, whatever it has spent so far. A job that
    /// ended (done, aborted, cancelled) counts with what its rounds were charged when their
    /// shares were sealed — released or not: ε of their summed zCDP ρ at the job's δ
    /// (ρ + 2 sqrt(ρ ln(1/δ)), Bun–Steinke 2016 Prop. 1.3), never more than its ε — so a job
    /// aborted before its first round gives its ε back. A ledger written before jobs recorded
    /// their δ counts every job at its whole ε.
    pub fn committed(&self) -> f64 {
        self.jobs
            .values()
            .filter(|j| j.answer.accept)
            .map(LedgerJob::committed)
            .sum()
    }
}

impl LedgerJob {
    /// The ε this job holds of the participant's total (see [`Ledger::committed`]).
    pub fn committed(&self) -> f64 {
        let (Some(_), Some(delta)) = (&self.ended, self.delta) else {
            return self.epsilon;
        };
        let rho = self.rho_charged();
        if rho <= 0.0 {
            return 0.0;
        }
        dp_noise::accountant::zcdp_to_approx(rho, delta)
            .map_or(self.epsilon, |loss| loss.epsilon.min(self.epsilon))
    }

    /// zCDP ρ charged to the job's rounds (at sealing).
    pub fn rho_charged(&self) -> f64 {
        self.rounds.values().map(|r| r.rho).sum()
    }
}

/// One line's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Entry {
    /// The first entry: whose ledger this is.
    Open {
        /// Hex SHA-256 of the participant's token.
        token_sha256: String,
    },
    /// The ledger was rebuilt from the aggregator's record (`--rebuild-ledger-from-aggregator`).
    Rebuilt {
        /// Why, as the participant found it.
        reason: String,
    },
    /// An answer, written before it is sent.
    Answer {
        /// Hex job id.
        job: String,
        /// The answer.
        answer: Answer,
        /// The job's ε.
        epsilon: f64,
        /// The job's δ.
        delta: Option<f64>,
        /// zCDP ρ of the job's (ε, δ).
        rho_budget: f64,
    },
    /// A round's charge, written before its shares are sealed.
    Charge {
        /// Hex job id.
        job: String,
        /// Hex round id.
        round: String,
        /// zCDP ρ.
        rho: f64,
    },
    /// Every node has the round's shares.
    Uploaded {
        /// Hex job id.
        job: String,
        /// Hex round id.
        round: String,
    },
    /// The participant left the job.
    Stopped {
        /// Hex job id.
        job: String,
        /// Why.
        reason: String,
    },
    /// The participant saw the job end.
    Ended {
        /// Hex job id.
        job: String,
        /// How it ended.
        state: JobState,
    },
}

impl Entry {
    /// Applies the entry to `ledger`; an entry that does not follow from the ones before is an
    /// error naming it.
    fn apply(&self, ledger: &mut Ledger) -> std::result::Result<(), String> {
        match self {
            Entry::Open { .. } => return Err("a second opening entry".into()),
            Entry::Rebuilt { .. } => {}
            Entry::Answer {
                job,
                answer,
                epsilon,
                delta,
                rho_budget,
            } => {
                if ledger.jobs.contains_key(job) {
                    return Err(format!("a second answer to job {job}"));
                }
                if !(epsilon.is_finite() && *epsilon > 0.0 && rho_budget.is_finite()) {
                    return Err(format!("job {job}: ε = {epsilon}, ρ = {rho_budget}"));
                }
                ledger.jobs.insert(
                    job.clone(),
                    LedgerJob {
                        answer: answer.clone(),
                        epsilon: *epsilon,
                        rho_budget: *rho_budget,
                        rounds: BTreeMap::new(),
                        stopped: None,
                        delta: *delta,
                        ended: None,
                    },
                );
            }
            Entry::Charge { job, round, rho } => {
                let j = job_of(ledger, job)?;
                if !j.answer.accept {
                    return Err(format!("a charge for job {job}, which it refused"));
                }
                if !(rho.is_finite() && *rho >= 0.0) {
                    return Err(format!("round {round}: ρ = {rho}"));
                }
                if j.rounds.contains_key(round) {
                    return Err(format!("a second charge for round {round}"));
                }
                j.rounds.insert(
                    round.clone(),
                    LedgerRound {
                        rho: *rho,
                        uploaded: false,
                    },
                );
            }
            Entry::Uploaded { job, round } => {
                job_of(ledger, job)?
                    .rounds
                    .get_mut(round)
                    .ok_or_else(|| format!("an upload to round {round}, which was never charged"))?
                    .uploaded = true;
            }
            Entry::Stopped { job, reason } => {
                job_of(ledger, job)?.stopped = Some(reason.clone());
            }
            Entry::Ended { job, state } => {
                job_of(ledger, job)?.ended = Some(*state);
            }
        }
        Ok(())
    }
}

fn job_of<'a>(ledger: &'a mut Ledger, job: &str) -> std::result::Result<&'a mut LedgerJob, String> {
    ledger
        .jobs
        .get_mut(job)
        .ok_or_else(|| format!("an entry for job {job}, which the ledger never answered"))
}

/// One line of the file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    seq: u64,
    prev: String,
    entry: Entry,
    hash: String,
}

fn line_hash(seq: u64, prev: &str, entry: &Entry) -> Result<String> {
    let entry = serde_json::to_vec(entry).map_err(|e| Error::Io(std::io::Error::other(e)))?;
    let mut h = Sha256::new();
    h.update(CHAIN_DOMAIN);
    h.update(seq.to_le_bytes());
    h.update(prev.as_bytes());
    h.update(&entry);
    Ok(hex::encode(&h.finalize()))
}

/// Why a ledger cannot be trusted, or what the aggregator's record says that it does not.
fn untrusted(path: &Path, cause: impl std::fmt::Display) -> Error {
    Error::Ledger(format!("{}: {cause}", path.display()))
}

/// A ledger read from disk and checked from its first line to its last, open for appending.
#[derive(Debug)]
pub struct LedgerFile {
    path: PathBuf,
    /// Hex SHA-256 of the token it was opened for.
    pub token_sha256: String,
    /// The replayed ledger.
    pub ledger: Ledger,
    /// Entries in the file (the opening one included).
    pub entries: u64,
    /// Hash of the last line (the chain's head).
    pub head: String,
    /// Whether it was rebuilt from the aggregator's record.
    pub rebuilt: bool,
    /// Bytes of its whole lines.
    len: u64,
}

impl LedgerFile {
    /// The ledger's path in `state_dir`.
    pub fn path_in(state_dir: &Path) -> PathBuf {
        state_dir.join(LEDGER_FILE)
    }

    /// Reads and checks the ledger in `state_dir`; `None` if there is none.
    pub fn read(state_dir: &Path) -> Result<Option<LedgerFile>> {
        let path = Self::path_in(state_dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(untrusted(&path, format!("cannot be read: {e}"))),
        };
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| untrusted(&path, "is not UTF-8 text (damaged or edited)"))?;
        let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
        // A last line without its newline was cut short by a crash while it was written: the
        // participant never acted on it.
        if lines.last().is_some_and(|l| !l.ends_with('\n')) {
            lines.pop();
        }
        let mut ledger = Ledger::default();
        let mut prev = String::new();
        let mut token = None;
        let mut rebuilt = false;
        for (i, raw) in lines.iter().enumerate() {
            let n = i + 1;
            let line: Line = serde_json::from_str(raw.trim_end_matches('\n'))
                .map_err(|e| untrusted(&path, format!("line {n} is not a ledger entry: {e}")))?;
            if line.seq != i as u64 || line.prev != prev {
                return Err(untrusted(
                    &path,
                    format!(
                        "line {n} does not follow line {i} (the hash chain is broken: an entry \
                         was removed, reordered or inserted)"
                    ),
                ));
            }
            if line_hash(line.seq, &line.prev, &line.entry)? != line.hash {
                return Err(untrusted(
                    &path,
                    format!("line {n}'s content does not match its hash (the entry was edited)"),
                ));
            }
            match (&line.entry, i) {
                (Entry::Open { token_sha256 }, 0) => token = Some(token_sha256.clone()),
                (_, 0) => return Err(untrusted(&path, "line 1 is not the ledger's opening")),
                (entry, _) => {
                    if matches!(entry, Entry::Rebuilt { .. }) {
                        rebuilt = true;
                    }
                    entry
                        .apply(&mut ledger)
                        .map_err(|e| untrusted(&path, format!("line {n}: {e}")))?;
                }
            }
            prev = line.hash;
        }
        let Some(token_sha256) = token else {
            return Err(untrusted(&path, "is empty (it has no opening entry)"));
        };
        // A torn last line stays on disk until the next append cuts it off (a reader, such as
        // `dpdist participant ledger`, never changes the file).
        let len: usize = lines.iter().map(|l| l.len()).sum();
        Ok(Some(LedgerFile {
            path,
            token_sha256,
            ledger,
            entries: lines.len() as u64,
            head: prev,
            rebuilt,
            len: len as u64,
        }))
    }

    /// A new ledger in `state_dir` for the token hashing to `token_sha256` (hex); an existing
    /// one is never overwritten.
    pub fn create(state_dir: &Path, token_sha256: &str) -> Result<LedgerFile> {
        let path = Self::path_in(state_dir);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_at(e, &path))?;
        drop(file);
        sync_dir(state_dir)?;
        let mut ledger = LedgerFile {
            path,
            token_sha256: token_sha256.to_string(),
            ledger: Ledger::default(),
            entries: 0,
            head: String::new(),
            rebuilt: false,
            len: 0,
        };
        ledger.write(&Entry::Open {
            token_sha256: token_sha256.to_string(),
        })?;
        Ok(ledger)
    }

    /// Checks that this is the ledger of the token hashing to `token_sha256`.
    pub fn check_owner(&self, token_sha256: &str) -> Result<()> {
        if self.token_sha256 != token_sha256 {
            return Err(untrusted(
                &self.path,
                format!(
                    "is the ledger of another token (SHA-256 {}), not of this participant's \
                     ({token_sha256})",
                    self.token_sha256
                ),
            ));
        }
        Ok(())
    }

    /// Appends `entry` (checked against the ledger first), fsync'd before it returns.
    pub fn append(&mut self, entry: Entry) -> Result<()> {
        let mut next = self.ledger.clone();
        entry
            .apply(&mut next)
            .map_err(|e| untrusted(&self.path, format!("refusing to append: {e}")))?;
        self.write(&entry)?;
        if matches!(entry, Entry::Rebuilt { .. }) {
            self.rebuilt = true;
        }
        self.ledger = next;
        Ok(())
    }

    fn write(&mut self, entry: &Entry) -> Result<()> {
        let hash = line_hash(self.entries, &self.head, entry)?;
        let line = Line {
            seq: self.entries,
            prev: self.head.clone(),
            entry: entry.clone(),
            hash: hash.clone(),
        };
        let mut bytes =
            serde_json::to_vec(&line).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        bytes.push(b'\n');
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| io_at(e, &self.path))?;
        let on_disk = f.metadata().map_err(|e| io_at(e, &self.path))?.len();
        if on_disk != self.len {
            // Beyond the whole lines read, only the torn rest of a line a crash cut short may
            // follow: it is cut off. Anything else means the file changed while in use.
            let mut tail = Vec::new();
            f.seek(std::io::SeekFrom::Start(self.len.min(on_disk)))
                .and_then(|_| f.read_to_end(&mut tail))
                .map_err(|e| io_at(e, &self.path))?;
            if on_disk < self.len || tail.contains(&b'\n') {
                return Err(untrusted(
                    &self.path,
                    "changed on disk while this participant was using it",
                ));
            }
            f.set_len(self.len).map_err(|e| io_at(e, &self.path))?;
        }
        f.seek(std::io::SeekFrom::Start(self.len))
            .and_then(|_| f.write_all(&bytes))
            .and_then(|_| f.sync_data())
            .map_err(|e| io_at(e, &self.path))?;
        self.len += bytes.len() as u64;
        self.entries += 1;
        self.head = hash;
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Imports a ledger of an earlier version (`ledger.json`, one object) into a new chained
/// ledger, once; the old file is renamed `ledger.json.imported`. What it held is checked
/// against the aggregator's record like any ledger.
pub fn import_legacy(state_dir: &Path, token_sha256: &str) -> Result<Option<LedgerFile>> {
    let old = state_dir.join(LEGACY_LEDGER_FILE);
    let bytes = match std::fs::read(&old) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_at(e, &old)),
    };
    let legacy: Ledger = serde_json::from_slice(&bytes)
        .map_err(|e| untrusted(&old, format!("is not a ledger: {e}")))?;
    let mut file = LedgerFile::create(state_dir, token_sha256)?;
    for entry in entries_of(&legacy) {
        file.append(entry)?;
    }
    let done = state_dir.join(format!("{LEGACY_LEDGER_FILE}.imported"));
    std::fs::rename(&old, &done).map_err(|e| io_at(e, &old))?;
    sync_dir(state_dir)?;
    Ok(Some(file))
}

/// The entries that replay to `ledger`.
fn entries_of(ledger: &Ledger) -> Vec<Entry> {
    let mut out = Vec::new();
    for (id, j) in &ledger.jobs {
        out.push(Entry::Answer {
            job: id.clone(),
            answer: j.answer.clone(),
            epsilon: j.epsilon,
            delta: j.delta,
            rho_budget: j.rho_budget,
        });
        for (round, r) in &j.rounds {
            out.push(Entry::Charge {
                job: id.clone(),
                round: round.clone(),
                rho: r.rho,
            });
            if r.uploaded {
                out.push(Entry::Uploaded {
                    job: id.clone(),
                    round: round.clone(),
                });
            }
        }
        if let Some(reason) = &j.stopped {
            out.push(Entry::Stopped {
                job: id.clone(),
                reason: reason.clone(),
            });
        }
        if let Some(state) = j.ended {
            out.push(Entry::Ended {
                job: id.clone(),
                state,
            });
        }
    }
    out
}

/// The aggregator's record of one job, checked by the participant: ε and δ from the job's spec
/// (its hash is the job's id), each round's ρ from its config (its hash is the round's id).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedJob {
    /// Hex job id.
    pub id: String,
    /// The job's state.
    pub state: JobState,
    /// The answer the aggregator recorded.
    pub answer: Answer,
    /// The job's ε.
    pub epsilon: f64,
    /// The job's δ.
    pub delta: f64,
    /// zCDP ρ of (ε, δ).
    pub rho_budget: f64,
    /// The rounds that named this participant: (round id, ρ, released, in the release).
    pub rounds: Vec<RecordedRound>,
}

/// A round of a [`RecordedJob`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRound {
    /// Hex round id.
    pub id: String,
    /// Its zCDP ρ (from its config).
    pub rho: f64,
    /// It was released.
    pub released: bool,
    /// With this participant's shares.
    pub in_release: bool,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// Describes an answer for people.
fn answer_text(a: &Answer) -> String {
    if a.accept {
        format!("accepted with {} rows", a.rows)
    } else {
        "refused".into()
    }
}

/// Checks `ledger` against the aggregator's `record`; the first disagreement, named.
pub fn reconcile(ledger: &Ledger, record: &[RecordedJob]) -> std::result::Result<(), String> {
    for r in record {
        let Some(j) = ledger.jobs.get(&r.id) else {
            return Err(format!(
                "the aggregator records that this participant's token {} job {} (ε = {}), \
                 which the ledger does not hold",
                answer_text(&r.answer),
                r.id,
                people(r.epsilon)
            ));
        };
        if j.answer.accept != r.answer.accept || (r.answer.accept && j.answer.rows != r.answer.rows)
        {
            return Err(format!(
                "the ledger says this participant {} job {}, the aggregator records that it {}",
                answer_text(&j.answer),
                r.id,
                answer_text(&r.answer)
            ));
        }
        if !r.answer.accept {
            continue;
        }
        if !close(j.epsilon, r.epsilon)
            || !close(j.rho_budget, r.rho_budget)
            || j.delta.is_some_and(|d| !close(d, r.delta))
        {
            return Err(format!(
                "the ledger holds job {} at ε = {}, δ = {:?} (ρ = {}); the job's spec (whose \
                 hash is its id) says ε = {}, δ = {} (ρ = {})",
                r.id,
                people(j.epsilon),
                j.delta,
                people(j.rho_budget),
                people(r.epsilon),
                r.delta,
                people(r.rho_budget)
            ));
        }
        for round in r.rounds.iter().filter(|x| x.in_release) {
            let charged = j.rounds.get(&round.id).map(|x| x.rho);
            if !charged.is_some_and(|c| c >= round.rho * (1.0 - 1e-9)) {
                return Err(format!(
                    "round {} of job {} was released with this participant's shares (ρ = {}), \
                     but the ledger charges {} for it",
                    round.id,
                    r.id,
                    people(round.rho),
                    charged.map_or("nothing".to_string(), |c| format!("ρ = {}", people(c)))
                ));
            }
        }
        if let Some(ended) = &j.ended
            && *ended != r.state
        {
            return Err(format!(
                "the ledger says job {} ended {ended}; the aggregator says it is {}",
                r.id, r.state
            ));
        }
    }
    Ok(())
}

/// The entries of a ledger rebuilt from the aggregator's `record` (after a [`Entry::Rebuilt`]
/// naming `reason`): every answer it holds, and for an accepted job a charge for **every**
/// round that named this participant, released or not (it cannot know which it sealed for:
/// charged at sealing, the conservative rule). A job that ended is marked ended; one still
/// under way is marked stopped (it counts with its whole ε, and this participant sends nothing
/// more to it: it cannot know what it already sent).
pub fn rebuild_entries(record: &[RecordedJob], reason: &str) -> Vec<Entry> {
    let mut out = vec![Entry::Rebuilt {
        reason: reason.to_string(),
    }];
    for r in record {
        out.push(Entry::Answer {
            job: r.id.clone(),
            answer: r.answer.clone(),
            epsilon: r.epsilon,
            delta: Some(r.delta),
            rho_budget: r.rho_budget,
        });
        if r.answer.accept {
            for round in &r.rounds {
                out.push(Entry::Charge {
                    job: r.id.clone(),
                    round: round.id.clone(),
                    rho: round.rho,
                });
                if round.in_release {
                    out.push(Entry::Uploaded {
                        job: r.id.clone(),
                        round: round.id.clone(),
                    });
                }
            }
        }
        if r.state.is_live() {
            out.push(Entry::Stopped {
                job: r.id.clone(),
                reason: "the ledger was rebuilt from the aggregator's record while the job ran: \
                         this participant sends nothing more to it"
                    .into(),
            });
        } else {
            out.push(Entry::Ended {
                job: r.id.clone(),
                state: r.state,
            });
        }
    }
    out
}

/// The ledger the aggregator's `record` rebuilds (what `--rebuild-ledger-from-aggregator`
/// would write).
pub fn rebuilt_ledger(record: &[RecordedJob]) -> Ledger {
    let mut ledger = Ledger::default();
    for e in rebuild_entries(record, "") {
        // The record's entries always follow from each other (one answer per job).
        let _ = e.apply(&mut ledger);
    }
    ledger
}

/// `x` for people: at most 4 decimals, trailing zeros dropped (9.49999999624691 → "9.5").
pub fn people(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x != 0.0 && x.abs() < 1e-3 {
        return format!("{x:.2e}");
    }
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

fn io_at(e: std::io::Error, path: &Path) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("ledger {}: {e}", path.display()),
    ))
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| {
            Error::Io(std::io::Error::new(
                e.kind(),
                format!("state directory {}: {e}", dir.display()),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(accept: bool) -> Answer {
        Answer {
            accept,
            rows: usize::from(accept),
            reason: if accept { String::new() } else { "no".into() },
        }
    }

    fn accepted(job: &str) -> Entry {
        Entry::Answer {
            job: job.into(),
            answer: answer(true),
            epsilon: 1.0,
            delta: Some(1e-5),
            rho_budget: 0.02,
        }
    }

    fn charged(job: &str, round: &str, rho: f64) -> Entry {
        Entry::Charge {
            job: job.into(),
            round: round.into(),
            rho,
        }
    }

    /// A ledger of one job, one round charged and uploaded, the job ended.
    fn written(dir: &Path) -> LedgerFile {
        let mut f = LedgerFile::create(dir, "me").unwrap();
        f.append(accepted("j")).unwrap();
        f.append(charged("j", "r", 0.01)).unwrap();
        f.append(Entry::Uploaded {
            job: "j".into(),
            round: "r".into(),
        })
        .unwrap();
        f.append(Entry::Ended {
            job: "j".into(),
            state: JobState::Done,
        })
        .unwrap();
        f
    }

    fn error_of(dir: &Path) -> String {
        LedgerFile::read(dir).unwrap_err().to_string()
    }

    #[test]
    fn the_chain_replays_what_was_appended_and_refuses_edits_removals_and_strangers() {
        let dir = crate::scratch_dir("ledger-chain");
        let f = written(&dir);
        let read = LedgerFile::read(&dir).unwrap().unwrap();
        assert_eq!(read.ledger, f.ledger);
        assert_eq!((read.entries, read.head.clone()), (5, f.head.clone()));
        assert!(read.ledger.jobs["j"].rounds["r"].uploaded);
        read.check_owner("me").unwrap();
        let other = read.check_owner("someone-else").unwrap_err().to_string();
        assert!(other.contains("another token"), "{other}");
        // An entry that does not follow from the ones before is refused, nothing written.
        let mut f = read;
        let e = f.append(charged("k", "r", 0.1)).unwrap_err().to_string();
        assert!(e.contains("never answered"), "{e}");
        let e = f.append(charged("j", "r", 0.1)).unwrap_err().to_string();
        assert!(e.contains("second charge"), "{e}");
        assert_eq!(LedgerFile::read(&dir).unwrap().unwrap().entries, 5);

        let path = LedgerFile::path_in(&dir);
        let text = std::fs::read_to_string(&path).unwrap();
        // An edited value.
        std::fs::write(&path, text.replace("\"epsilon\":1.0", "\"epsilon\":0.0")).unwrap();
        assert!(
            error_of(&dir)
                .contains("line 2's content does not match its hash (the entry was edited)")
        );
        // A line removed (the charge).
        let lines: Vec<&str> = text.lines().collect();
        let without: String = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        std::fs::write(&path, without).unwrap();
        assert!(
            error_of(&dir).contains("hash chain is broken"),
            "{}",
            error_of(&dir)
        );
        // Emptied, or not a ledger at all.
        std::fs::write(&path, "").unwrap();
        assert!(error_of(&dir).contains("no opening entry"));
        std::fs::write(&path, "{\"jobs\":{}}\n").unwrap();
        assert!(error_of(&dir).contains("line 1 is not a ledger entry"));
        // A last line cut short by a crash is dropped (and cut off the file), the rest kept.
        std::fs::write(&path, format!("{text}{{\"seq\":5,\"prev")).unwrap();
        let mut read = LedgerFile::read(&dir).unwrap().unwrap();
        assert_eq!(read.entries, 5);
        // Reading changes nothing; the next append cuts the torn line off first.
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("\"prev"));
        read.append(accepted("k")).unwrap();
        let after = LedgerFile::read(&dir).unwrap().unwrap();
        assert_eq!(after.entries, 6);
        assert!(after.ledger.jobs.contains_key("k"));
        assert!(std::fs::read_to_string(&path).unwrap().starts_with(&text));
        // A line appended by someone else meanwhile is not cut off: the file changed in use.
        let mut stale = LedgerFile::read(&dir).unwrap().unwrap();
        let mut other = LedgerFile::read(&dir).unwrap().unwrap();
        other.append(accepted("l")).unwrap();
        let e = stale.append(accepted("m")).unwrap_err().to_string();
        assert!(e.contains("changed on disk"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn recorded(state: JobState, rounds: Vec<RecordedRound>) -> RecordedJob {
        RecordedJob {
            id: "j".into(),
            state,
            answer: answer(true),
            epsilon: 1.0,
            delta: 1e-5,
            rho_budget: 0.02,
            rounds,
        }
    }

    fn round(id: &str, released: bool) -> RecordedRound {
        RecordedRound {
            id: id.into(),
            rho: 0.01,
            released,
            in_release: released,
        }
    }

    /// What the aggregator's record catches that the chain cannot (a ledger rewritten with
    /// its hashes recomputed, or deleted): a missing answer, another ε, a released round not
    /// charged, another end.
    #[test]
    fn reconciling_names_what_the_ledger_lacks_or_changed() {
        let dir = crate::scratch_dir("ledger-reconcile");
        let ledger = written(&dir).ledger;
        let _ = std::fs::remove_dir_all(&dir);
        let record = vec![recorded(JobState::Done, vec![round("r", true)])];
        reconcile(&ledger, &record).unwrap();
        // Rounds it sealed for that were never released are fine either way.
        reconcile(
            &ledger,
            &[recorded(JobState::Done, vec![round("r", false)])],
        )
        .unwrap();

        let e = reconcile(&Ledger::default(), &record).unwrap_err();
        assert!(e.contains("does not hold"), "{e}");
        let mut cheaper = ledger.clone();
        cheaper.jobs.get_mut("j").unwrap().epsilon = 0.0;
        let e = reconcile(&cheaper, &record).unwrap_err();
        assert!(e.contains("ε = 0") && e.contains("says ε = 1"), "{e}");
        let mut uncharged = ledger.clone();
        uncharged.jobs.get_mut("j").unwrap().rounds.clear();
        let e = reconcile(&uncharged, &record).unwrap_err();
        assert!(e.contains("charges nothing"), "{e}");
        let e = reconcile(
            &ledger,
            &[recorded(JobState::Cancelled, vec![round("r", true)])],
        )
        .unwrap_err();
        assert!(e.contains("ended done"), "{e}");
        let mut refused = record.clone();
        refused[0].answer = answer(false);
        let e = reconcile(&ledger, &refused).unwrap_err();
        assert!(e.contains("aggregator records that it refused"), "{e}");
    }

    /// A rebuilt ledger charges every round that named the participant, released or not, keeps
    /// a job still running at its whole ε, and agrees with the record it came from.
    #[test]
    fn a_rebuilt_ledger_charges_every_round_that_named_the_participant() {
        let mut running = recorded(JobState::Running, vec![round("a", true), round("b", false)]);
        running.id = "live".into();
        let record = vec![
            recorded(JobState::Cancelled, vec![round("r", false)]),
            running,
        ];
        let ledger = rebuilt_ledger(&record);
        reconcile(&ledger, &record).unwrap();
        assert_eq!(ledger.jobs["j"].rho_charged(), 0.01);
        assert!(ledger.jobs["j"].committed() > 0.0);
        assert_eq!(ledger.jobs["live"].rho_charged(), 0.02);
        assert_eq!(ledger.jobs["live"].committed(), 1.0);
        assert!(ledger.jobs["live"].stopped.is_some());
        let dir = crate::scratch_dir("ledger-rebuild");
        let mut f = LedgerFile::create(&dir, "me").unwrap();
        for e in rebuild_entries(&record, "it was missing") {
            f.append(e).unwrap();
        }
        let read = LedgerFile::read(&dir).unwrap().unwrap();
        assert!(read.rebuilt);
        assert_eq!(read.ledger, ledger);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_ledger_of_an_earlier_version_is_imported_once() {
        let dir = crate::scratch_dir("ledger-legacy");
        let ledger = written(&crate::scratch_dir("ledger-legacy-src")).ledger;
        std::fs::write(
            dir.join(LEGACY_LEDGER_FILE),
            serde_json::to_vec_pretty(&ledger).unwrap(),
        )
        .unwrap();
        let f = import_legacy(&dir, "me").unwrap().unwrap();
        assert_eq!(f.ledger, ledger);
        assert!(!dir.join(LEGACY_LEDGER_FILE).exists());
        assert!(import_legacy(&dir, "me").unwrap().is_none());
        assert_eq!(LedgerFile::read(&dir).unwrap().unwrap().ledger, ledger);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn numbers_are_rounded_for_people() {
        assert_eq!(people(9.49999999624691), "9.5");
        assert_eq!(people(1.5), "1.5");
        assert_eq!(people(2.0), "2");
        assert_eq!(people(0.0229), "0.0229");
        assert_eq!(people(0.000123), "1.23e-4");
        assert_eq!(people(-0.00001), "-1.00e-5");
        assert_eq!(people(0.0), "0");
    }
}
