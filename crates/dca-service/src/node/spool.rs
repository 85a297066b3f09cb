//! Request bodies too large for memory (round configs, close requests) and node sums being
//! written, spooled to files in the node's data directory and removed when done.

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};

use crate::http::problem::{ApiError, ApiResult};
use fixedpoint_shares::wire;

use crate::Result;
use crate::protocol::spec::{Round, RoundSpec};

use super::*;

/// A request body (a round config, a close request) spooled to the data directory while it is
/// parsed, and a round config's token hashes (32 raw bytes each): files in a temporary directory
/// of the data directory (`tempfile`), removed with it on drop.
pub(crate) struct Spool {
    pub(super) config: PathBuf,
    pub(super) tokens: PathBuf,
    /// A close request's client ids, shard ids, and shard ids by client ([`close_spool`]).
    pub(super) clients: PathBuf,
    pub(super) shards: PathBuf,
    pub(super) by_client: PathBuf,
    /// A node sum being written ([`RunningSum::write_sum`]).
    pub(super) sum: PathBuf,
    /// Holds the files; dropped last.
    _dir: tempfile::TempDir,
}

impl Spool {
    pub(super) const PREFIX: &'static str = "request-spool-";

    /// A new, empty spool directory in `data_dir`.
    pub(super) fn new(data_dir: &Path) -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix(Self::PREFIX)
            .tempdir_in(data_dir)?;
        let file = |name: &str| dir.path().join(name);
        Ok(Spool {
            config: file("body"),
            tokens: file("tokens"),
            clients: file("clients"),
            shards: file("shards"),
            by_client: file("by-client"),
            sum: file("sum"),
            _dir: dir,
        })
    }

    /// Removes spools a killed process left behind (directories, and the files of versions
    /// that spooled to files).
    pub(super) fn clean(data_dir: &Path) -> Result<()> {
        for entry in std::fs::read_dir(data_dir)? {
            let entry = entry?;
            if !entry
                .file_name()
                .to_string_lossy()
                .starts_with(Self::PREFIX)
            {
                continue;
            }
            if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())?;
            } else {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    }

    /// Parses the spooled round config in one streaming pass (memory O(1) in N): the spec is
    /// read whole (its size does not grow with N) and checked, then the token list is read
    /// hash by hash into `tokens` (32 raw bytes each) and into the round id.
    pub(super) fn parse(&self) -> ApiResult<Round> {
        use std::io::{BufReader, BufWriter, Write};
        let io = |e: std::io::Error| ApiError::internal(format!("spooled round config: {e}"));
        let config =
            |e: fixedpoint_shares::Error| ApiError::bad_request(format!("round config: {e}"));
        let mut source = std::fs::File::open(&self.config)
            .map(BufReader::new)
            .map_err(io)?;
        let json = wire::read_round_spec(&mut source).map_err(config)?;
        let spec =
            RoundSpec::from_config_json(&json).map_err(|e| ApiError::bad_request(e.to_string()))?;
        let mut list = wire::TokenListReader::open(source, spec.n_clients).map_err(config)?;
        let mut out = BufWriter::new(std::fs::File::create(&self.tokens).map_err(io)?);
        let mut failed = None;
        let hashes = std::iter::from_fn(|| match list.next_hash() {
            Ok(Some(h)) => match out.write_all(&h) {
                Ok(()) => Some(Ok(h)),
                Err(e) => {
                    failed = Some(io(e));
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                failed = Some(config(e));
                None
            }
        });
        let round = spec.validate_streamed(hashes);
        if let Some(e) = failed {
            return Err(e);
        }
        let round = round.map_err(|e| ApiError::bad_request(e.to_string()))?;
        list.finish().map_err(config)?;
        out.flush().map_err(io)?;
        Ok(round)
    }
}

/// Writes a request body to `path` as it arrives, refusing more than `--max-body` bytes (413,
/// also when `Content-Length` says so up front).
pub(super) async fn spool_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    path: &Path,
) -> ApiResult<()> {
    use http_body_util::BodyExt;
    use tokio::io::AsyncWriteExt;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "length limit exceeded",
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > state.max_body as u64) {
        return Err(too_large());
    }
    let io = |e: std::io::Error| ApiError::internal(format!("spooling the request body: {e}"));
    let mut file = tokio::fs::File::create(path).await.map_err(io)?;
    let (mut body, mut total) = (body, 0usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            total += data.len();
            if total > state.max_body {
                return Err(too_large());
            }
            file.write_all(&data).await.map_err(io)?;
        }
    }
    file.flush().await.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spool's files go with it; what a killed process left (a spool directory, or a file of
    /// the layout before) is removed at the next start, and nothing else is.
    #[test]
    fn spools_are_removed_on_drop_and_leftovers_at_start() {
        let dir = crate::scratch_dir("spool");
        let spool = Spool::new(&dir).unwrap();
        std::fs::write(&spool.config, b"body").unwrap();
        std::fs::write(&spool.sum, b"sum").unwrap();
        let parent = spool.config.parent().unwrap().to_path_buf();
        assert!(parent.starts_with(&dir) && parent.is_dir());
        drop(spool);
        assert!(!parent.exists());

        let left = Spool::new(&dir).unwrap();
        std::fs::write(&left.tokens, b"tokens").unwrap();
        let left_dir = left.tokens.parent().unwrap().to_path_buf();
        std::mem::forget(left);
        std::fs::write(dir.join(format!("{}123-0.body", Spool::PREFIX)), b"old").unwrap();
        std::fs::write(dir.join("node.sqlite"), b"kept").unwrap();
        Spool::clean(&dir).unwrap();
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["node.sqlite"]);
        assert!(!left_dir.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
