//! The participant's ledger, checked from end to end and against the aggregator's record of
//! the jobs its token answered.

use super::Participant;
use super::files::io_at;
pub use crate::participant::ledger::Ledger;
use crate::participant::ledger::{LedgerFile, people};
use crate::protocol::spec::token_hash;
use crate::{Error, Result, hex};

impl Participant {
    fn token_sha256(&self) -> String {
        hex::encode(&token_hash(self.token.expose()))
    }

    /// The ledger, checked from end to end and against the aggregator's record (missing: made
    /// new if the aggregator records no answer of this token). Disagreement is an
    /// [`Error::Ledger`] naming the cause and the ways back, unless `rebuild_ledger` is set:
    /// then the untrusted file is kept beside (`ledger.jsonl.untrusted-<unix ms>`) and the
    /// ledger is rebuilt from the record.
    pub async fn checked_ledger(&self) -> Result<LedgerFile> {
        let record = self.record().await?;
        let me = self.token_sha256();
        let path = LedgerFile::path_in(&self.state_dir);
        let found = match LedgerFile::read(&self.state_dir) {
            Ok(Some(file)) => file.check_owner(&me).map(|_| Some(file)),
            Ok(None) => crate::participant::ledger::import_legacy(&self.state_dir, &me),
            Err(e) => Err(e),
        };
        let cause = match found {
            Ok(Some(file)) => match crate::participant::ledger::reconcile(&file.ledger, &record) {
                Ok(()) => return Ok(file),
                Err(cause) => format!(
                    "{} disagrees with the aggregator's record: {cause}",
                    path.display()
                ),
            },
            Ok(None) if record.is_empty() => return LedgerFile::create(&self.state_dir, &me),
            Ok(None) => format!(
                "{} is missing, but the aggregator records this participant's answers to {} \
                 job{} ({})",
                path.display(),
                record.len(),
                if record.len() == 1 { "" } else { "s" },
                record
                    .iter()
                    .map(|r| format!(
                        "{}: {}",
                        r.id,
                        if r.answer.accept {
                            "accepted"
                        } else {
                            "refused"
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(e @ (Error::Http(_) | Error::Timeout(_))) => return Err(e),
            Err(Error::Ledger(cause)) => cause,
            Err(e) => e.to_string(),
        };
        if !self.rebuild_ledger {
            return Err(Error::Ledger(format!(
                "{cause}. This participant answers no job until its ledger can be trusted: \
                 restore {} from a backup, or start it once with \
                 --rebuild-ledger-from-aggregator, which rebuilds the ledger from the \
                 aggregator's record and charges every round of every job found there that \
                 named this participant, released or not",
                path.display()
            )));
        }
        if path.exists() {
            let aside = self.state_dir.join(format!(
                "{}.untrusted-{}",
                crate::participant::ledger::LEDGER_FILE,
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            ));
            std::fs::rename(&path, &aside).map_err(|e| io_at(e, "ledger", &path))?;
            tracing::warn!("the untrusted ledger is kept as {}", aside.display());
        }
        let mut file = LedgerFile::create(&self.state_dir, &me)?;
        for entry in crate::participant::ledger::rebuild_entries(&record, &cause) {
            file.append(entry)?;
        }
        tracing::warn!(
            jobs = record.len(),
            committed_epsilon = %people(file.ledger.committed()),
            "rebuilt the ledger from the aggregator's record ({cause})"
        );
        Ok(file)
    }

    /// The ledger on disk, checked from end to end (not against the aggregator): missing is
    /// an error.
    pub fn ledger_file(&self) -> Result<LedgerFile> {
        let file = LedgerFile::read(&self.state_dir)?.ok_or_else(|| {
            Error::Ledger(format!(
                "{} is missing (it was there when this participant started). This participant \
                 answers nothing more until it is restored, or rebuilt from the aggregator's \
                 record with --rebuild-ledger-from-aggregator",
                LedgerFile::path_in(&self.state_dir).display()
            ))
        })?;
        file.check_owner(&self.token_sha256())?;
        Ok(file)
    }

    /// The ledger on disk (see [`Participant::ledger_file`]).
    pub fn ledger(&self) -> Result<Ledger> {
        Ok(self.ledger_file()?.ledger)
    }
}
