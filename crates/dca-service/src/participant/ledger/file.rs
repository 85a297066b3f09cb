//! The ledger's file: one hash-chained entry per line, fsync'd before the participant acts on it.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result, hex};

use super::{Entry, Ledger, entries_of};

/// The ledger's file in the state directory.
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// The ledger of earlier versions (one JSON object, rewritten in place): imported once.
pub const LEGACY_LEDGER_FILE: &str = "ledger.json";
const CHAIN_DOMAIN: &[u8] = b"dpdist participant ledger v1";

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
