//! The node's HPKE key: an X25519 secret in `hpke-x25519.key` in the node's data directory
//! (64 hex digits), made by the node itself on its first start.
//!
//! The file is the only thing that can open the shares sealed to this node, so it is created
//! readable by its owner only and fsynced (file and directory) before the node uses it, and a
//! file that is there but cannot be read as a key stops the node: replacing it would silently
//! make every round the node holds unopenable, and its `/key` would no longer match the keys
//! those rounds were created with.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use share_sealing::NodeKeyPair;
use zeroize::Zeroizing;

use crate::{Error, Result, hex};

/// The key file's name in the data directory.
pub const KEY_FILE: &str = "hpke-x25519.key";
/// Its name in data directories made by earlier versions (renamed on start).
const OLD_KEY_FILE: &str = "node.key";

/// Loads the node's key from `data_dir`, creating it on first start.
///
/// # Errors
/// [`Error::Key`] naming the file if it exists but is not a regular file readable as 64 hex
/// digits, is group- or world-accessible, or cannot be read or created.
pub fn load_or_create_key(data_dir: &Path) -> Result<NodeKeyPair> {
    let path = data_dir.join(KEY_FILE);
    let old = data_dir.join(OLD_KEY_FILE);
    if !present(&path)? && present(&old)? {
        std::fs::rename(&old, &path)
            .map_err(|e| key_error(&path, format!("renaming {}: {e}", old.display())))?;
        sync_dir(data_dir, &path)?;
    }
    match std::fs::metadata(&path) {
        Ok(meta) => load(&path, &meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(data_dir, &path),
        Err(e) => Err(key_error(&path, e.to_string())),
    }
}

/// The path of the key file in `data_dir`.
pub fn key_path(data_dir: &Path) -> PathBuf {
    data_dir.join(KEY_FILE)
}

fn present(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(key_error(path, e.to_string())),
    }
}

fn key_error(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Key(format!("{}: {why}", path.display()))
}

fn load(path: &Path, meta: &std::fs::Metadata) -> Result<NodeKeyPair> {
    if !meta.is_file() {
        return Err(key_error(path, "not a regular file"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(key_error(
            path,
            format!(
                "the node's secret key is accessible to group or others (mode {mode:o}); \
                 run `chmod 600 {}`",
                path.display()
            ),
        ));
    }
    // The file's bytes and the decoded key are wiped once parsed; the key itself lives in
    // `NodeSecretKey`, which wipes itself on drop.
    let bytes = Zeroizing::new(std::fs::read(path).map_err(|e| key_error(path, e))?);
    if bytes.starts_with(b"-----BEGIN") {
        return Err(key_error(
            path,
            "this is a PEM file (a TLS key or certificate?); the node's HPKE key is 64 hex \
             digits the node writes itself. Give the TLS key with --key and move this file away",
        ));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| key_error(path, "not text; the node's HPKE key is 64 hex digits"))?;
    let secret = Zeroizing::new(
        hex::decode_array::<32>(text.trim()).ok_or_else(|| key_error(path, "not 64 hex digits"))?,
    );
    Ok(NodeKeyPair::from_secret_bytes(secret.as_slice())?)
}

fn create(data_dir: &Path, path: &Path) -> Result<NodeKeyPair> {
    let keys = NodeKeyPair::generate();
    let tmp = data_dir.join(format!("{KEY_FILE}.tmp"));
    let text = Zeroizing::new(hex::encode(
        Zeroizing::new(keys.secret.to_bytes()).as_slice(),
    ));
    let written = || -> std::io::Result<()> {
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    written().map_err(|e| key_error(path, format!("creating it: {e}")))?;
    sync_dir(data_dir, path)?;
    tracing::info!(path = %path.display(), "created the node's HPKE key");
    Ok(keys)
}

/// Makes a rename or creation in `dir` durable.
fn sync_dir(dir: &Path, path: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| key_error(path, format!("syncing its directory: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn refused(dir: &Path, why: &str) {
        match load_or_create_key(dir) {
            Err(Error::Key(m)) => assert!(m.contains(why), "{m}"),
            other => panic!(
                "expected a key error naming {why:?}, got {:?}",
                other.map(|_| ())
            ),
        }
    }

    #[test]
    fn the_key_file_is_private_reloaded_and_never_silently_replaced() {
        let dir = crate::scratch_dir("node-key");
        let path = key_path(&dir);
        let created = load_or_create_key(&dir).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), 64);
        assert_eq!(mode(&path), 0o600);
        let reloaded = load_or_create_key(&dir).unwrap();
        assert_eq!(created.public.to_bytes(), reloaded.public.to_bytes());
        assert_eq!(created.secret.to_bytes(), reloaded.secret.to_bytes());

        // Every unreadable form stops the node and leaves the file as it was.
        let cases: [(&[u8], &str); 3] = [
            (&text.as_bytes()[..63], "64 hex digits"),
            (b"\xff\xfe not utf-8", "not text"),
            (b"-----BEGIN PRIVATE KEY-----\nMC4CAQ==\n", "PEM"),
        ];
        for (content, why) in cases {
            std::fs::write(&path, content).unwrap();
            refused(&dir, why);
            assert_eq!(std::fs::read(&path).unwrap(), content);
        }
        std::fs::write(&path, &text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        refused(&dir, "chmod 600");
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        refused(&dir, "not a regular file");
        std::fs::remove_dir(&path).unwrap();

        // A data directory of an earlier version: its `node.key` is taken over, not replaced.
        std::fs::write(dir.join(OLD_KEY_FILE), &text).unwrap();
        std::fs::set_permissions(
            dir.join(OLD_KEY_FILE),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let moved = load_or_create_key(&dir).unwrap();
        assert_eq!(moved.public.to_bytes(), created.public.to_bytes());
        assert!(!dir.join(OLD_KEY_FILE).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
