//! The SHA-256 every row carries, computed when a row is written and checked whenever it is
//! read: a flipped bit in a recorded release, agreed set, charge, job or answer is refused,
//! never served or replayed. SQLite's pages have no checksum; PostgreSQL's are off by default.

use sha2::{Digest, Sha256};

use super::RoundPhase;
use super::tx::{AnswerRow, ChargeRow, JobRoundRow, JobRow, RoundRow};
use crate::{Error, Result};

impl RoundRow {
    /// The row of round `id` in `state`, with its digest.
    pub(super) fn sealed(id: &str, spec: Vec<u8>, state: RoundPhase, detail: Option<&str>) -> Self {
        let sha256 = round_sha256(id, &spec, state.as_str(), detail).to_vec();
        RoundRow {
            id: id.to_string(),
            spec,
            state,
            detail: detail.map(str::to_string),
            sha256: Some(sha256),
        }
    }

    pub(super) fn checked(self) -> Result<Self> {
        let computed = round_sha256(
            &self.id,
            &self.spec,
            self.state.as_str(),
            self.detail.as_deref(),
        );
        check(self.sha256.as_deref(), &computed, || {
            format!("the recorded state of round {}", self.id)
        })?;
        Ok(self)
    }
}

impl ChargeRow {
    /// A charge: its ρ and the δ_t of its truncated noise (a verified round's, or a verified
    /// job's Σ δ_t; 0 otherwise).
    pub(super) fn sealed(id: &str, rho: f64, truncation_delta: f64) -> Self {
        ChargeRow {
            id: id.to_string(),
            rho,
            truncation_delta,
            sha256: Some(charge_sha256(id, rho, truncation_delta).to_vec()),
        }
    }

    /// The row, checked; `what` names it in the error.
    pub(super) fn checked(self, what: impl FnOnce(&str) -> String) -> Result<Self> {
        check(
            self.sha256.as_deref(),
            &charge_sha256(&self.id, self.rho, self.truncation_delta),
            || what(&self.id),
        )?;
        Ok(self)
    }
}

impl JobRow {
    pub(super) fn sealed(id: &str, spec: Vec<u8>, status: Vec<u8>) -> Self {
        JobRow {
            sha256: job_sha256(id, &spec, &status).to_vec(),
            id: id.to_string(),
            spec,
            status,
        }
    }

    pub(super) fn checked(self) -> Result<Self> {
        let computed = job_sha256(&self.id, &self.spec, &self.status);
        check(Some(&self.sha256), &computed, || {
            format!("the recorded job {}", self.id)
        })?;
        Ok(self)
    }
}

impl AnswerRow {
    pub(super) fn sealed(job: &str, index: usize, answer: Vec<u8>) -> Self {
        AnswerRow {
            sha256: answer_sha256(job, index, &answer).to_vec(),
            job: job.to_string(),
            index,
            answer,
        }
    }

    pub(super) fn checked(self) -> Result<Self> {
        let computed = answer_sha256(&self.job, self.index, &self.answer);
        check(Some(&self.sha256), &computed, || {
            format!(
                "participant {}'s recorded answer to job {}",
                self.index, self.job
            )
        })?;
        Ok(self)
    }
}

impl JobRoundRow {
    pub(super) fn sealed(round: &str, job: &str, rho: Option<f64>) -> Self {
        JobRoundRow {
            round: round.to_string(),
            job: job.to_string(),
            rho,
            sha256: job_round_sha256(round, job, rho).to_vec(),
        }
    }

    /// The row, checked; `what` names it in the error.
    pub(super) fn checked(self, what: impl FnOnce(&Self) -> String) -> Result<Self> {
        let computed = job_round_sha256(&self.round, &self.job, self.rho);
        check(Some(&self.sha256), &computed, || what(&self))?;
        Ok(self)
    }
}

/// A close request's digest.
pub(super) fn close_sha256(body: &[u8]) -> [u8; 32] {
    Sha256::digest(body).into()
}

/// The close request of round `id` if it matches its digest.
pub(super) fn checked_close(id: &str, (body, sha256): (Vec<u8>, Vec<u8>)) -> Result<Vec<u8>> {
    check(Some(&sha256), &close_sha256(&body), || {
        format!("the recorded agreed set of round {id}")
    })?;
    Ok(body)
}

fn round_sha256(id: &str, spec: &[u8], state: &str, detail: Option<&str>) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [id.as_bytes(), spec, state.as_bytes()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    match detail {
        Some(d) => {
            h.update([1]);
            h.update(d.as_bytes());
        }
        None => h.update([0]),
    }
    h.finalize().into()
}

fn parts_sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

/// The version of a job's row: what a status write is compared against.
pub(crate) fn job_sha256(id: &str, spec: &[u8], status: &[u8]) -> [u8; 32] {
    parts_sha256(&[b"job", id.as_bytes(), spec, status])
}

fn answer_sha256(job: &str, index: usize, answer: &[u8]) -> [u8; 32] {
    parts_sha256(&[
        b"answer",
        job.as_bytes(),
        &(index as u64).to_le_bytes(),
        answer,
    ])
}

fn job_round_sha256(round: &str, job: &str, rho: Option<f64>) -> [u8; 32] {
    let rho = rho.map_or([0xff; 8], |r| r.to_bits().to_le_bytes());
    parts_sha256(&[b"job round", round.as_bytes(), job.as_bytes(), &rho])
}

/// A charge without δ_t keeps the digest charges had before δ_t was recorded.
fn charge_sha256(id: &str, rho: f64, truncation_delta: f64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(id.as_bytes());
    h.update(rho.to_bits().to_le_bytes());
    if truncation_delta != 0.0 {
        h.update(b"truncation_delta");
        h.update(truncation_delta.to_bits().to_le_bytes());
    }
    h.finalize().into()
}

/// Refuses a row whose stored digest differs from the one computed; rows written before
/// digests were kept (`None`) are read unchecked.
fn check(stored: Option<&[u8]>, computed: &[u8; 32], what: impl FnOnce() -> String) -> Result<()> {
    match stored {
        Some(s) if s != computed.as_slice() => Err(Error::Integrity(format!(
            "{} does not match its SHA-256",
            what()
        ))),
        _ => Ok(()),
    }
}
