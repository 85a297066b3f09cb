//! Durable writes in the participant's state directory.

use std::path::Path;

use crate::{Error, Result};

pub(super) fn io_at(e: std::io::Error, what: &str, path: &Path) -> Error {
    Error::Io(std::io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// Writes `dir/name` through a temporary file, fsyncs it, renames it into place and fsyncs
/// the directory.
pub(super) fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_at(e, "state file", &tmp))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| io_at(e, "state file", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(|e| io_at(e, "state file", &path))?;
    sync_dir(dir)
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_at(e, "state directory", dir))
}
