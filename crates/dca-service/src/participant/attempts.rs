//! A round's sealed shares on disk: written whole before the first upload, so that every
//! later attempt sends exactly the same bytes.

use std::path::PathBuf;

use super::Participant;
use super::files::{io_at, sync_dir, write_durably};
use crate::Result;

impl Participant {
    fn attempt_dir(&self, round: &str) -> PathBuf {
        self.state_dir.join("attempts").join(round)
    }

    pub(super) fn load_attempt(&self, round: &str, nodes: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let dir = self.attempt_dir(round);
        if !dir.exists() {
            return Ok(None);
        }
        (0..nodes)
            .map(|k| {
                let path = dir.join(format!("node-{k}.sealed"));
                std::fs::read(&path).map_err(|e| io_at(e, "sealed share", &path))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// All shares into a temporary directory, synced, then renamed into place: the attempt is
    /// on disk whole or not at all.
    pub(super) fn save_attempt(&self, round: &str, sealed: &[Vec<u8>]) -> Result<()> {
        let parent = self.state_dir.join("attempts");
        std::fs::create_dir_all(&parent).map_err(|e| io_at(e, "--state-dir", &parent))?;
        let tmp = parent.join(format!("{round}.tmp"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| io_at(e, "--state-dir", &tmp))?;
        for (k, bytes) in sealed.iter().enumerate() {
            write_durably(&tmp, &format!("node-{k}.sealed"), bytes)?;
        }
        let dir = self.attempt_dir(round);
        std::fs::rename(&tmp, &dir).map_err(|e| io_at(e, "--state-dir", &dir))?;
        sync_dir(&parent)
    }
}
