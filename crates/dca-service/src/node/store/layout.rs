//! How the node's rows hold their values, the same on both backends: token hashes in chunks,
//! the agreed set as big-endian ids, and the SHA-256 beside each stored share, agreed set and
//! node sum, checked on every read (the stores' pages have no checksum of their own, so a
//! flipped bit would otherwise reach the node sum and the release unnoticed).

use fixedpoint_shares::{ClientId, ClientSet};
use sha2::{Digest, Sha256};

use crate::Result;

/// Token hashes per row of the token table: 16 × 32 = 512 bytes, which with the key fits a
/// SQLite WITHOUT ROWID b-tree cell (≤ ~1000 bytes on 4 KiB pages), so a lookup reads one page
/// and no overflow chain.
pub(crate) const HASHES_PER_CHUNK: usize = 16;

/// The token row holding client `client`'s hash, and where in it the hash starts.
pub(crate) fn token_position(client: u64) -> (u64, usize) {
    (
        client / HASHES_PER_CHUNK as u64,
        (client % HASHES_PER_CHUNK as u64) as usize * 32,
    )
}

/// The hash at `at` ([`token_position`]) of a token row, if the row is long enough.
pub(crate) fn token_at(chunk: &[u8], at: usize) -> Option<[u8; 32]> {
    chunk
        .get(at..at + 32)
        .and_then(|h| <[u8; 32]>::try_from(h).ok())
}

/// The agreed set as stored: each id as 8 bytes big-endian, ascending.
pub(crate) fn agreed_words(agreed: &ClientSet) -> impl Iterator<Item = [u8; 8]> + '_ {
    agreed.iter().map(|c| c.0.to_be_bytes())
}

/// The SHA-256 of the agreed set as stored ([`agreed_words`]).
pub(crate) fn agreed_sha256(agreed: &ClientSet) -> [u8; 32] {
    let mut hash = Sha256::new();
    for word in agreed_words(agreed) {
        hash.update(word);
    }
    hash.finalize().into()
}

/// Reads a stored agreed set ([`agreed_words`]) into a set of `universe` bits. A trailing
/// piece shorter than an id is ignored, as it always was.
///
/// # Errors
/// A client id outside the universe or listed twice; a read error.
pub(crate) fn read_agreed(mut ids: impl std::io::Read, universe: usize) -> Result<ClientSet> {
    let mut set = ClientSet::try_empty(universe)?;
    let mut word = [0u8; 8];
    loop {
        match ids.read_exact(&mut word) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(set),
            Err(e) => return Err(e.into()),
        }
        let c = ClientId(u64::from_be_bytes(word));
        if !set.insert(c)? {
            return Err(fixedpoint_shares::Error::DuplicateClient { client: c }.into());
        }
    }
}

/// Reads `blob` through and compares its SHA-256 with `digest`; `what` names it in the error.
pub(crate) fn check_blob(
    mut blob: impl std::io::Read,
    digest: &[u8],
    what: impl FnOnce() -> String,
) -> Result<()> {
    let mut hash = HashingWriter::new(std::io::sink());
    std::io::copy(&mut blob, &mut hash)?;
    if hash.finish().1.as_slice() == digest {
        Ok(())
    } else {
        Err(crate::Error::Integrity(format!(
            "{} does not match its SHA-256",
            what()
        )))
    }
}

/// The error for a round's stored agreed set that fails its check ([`check_blob`]).
pub(crate) fn agreed_name(id: &[u8; 32]) -> String {
    format!("round {}: the stored agreed set", crate::hex::encode(id))
}

/// Checks a stored share against the SHA-256 stored beside it.
pub(crate) fn check_share(id: &[u8; 32], client: u64, digest: &[u8], message: &[u8]) -> Result<()> {
    if Sha256::digest(message).as_slice() == digest {
        return Ok(());
    }
    Err(crate::Error::Integrity(format!(
        "round {}: the stored share of client {client} does not match its SHA-256",
        crate::hex::encode(id)
    )))
}

/// Copies a stored node sum, read in `pieces`, to `out`. The last piece is held back until
/// the bytes read match `sha256` (when the sum was stored with one), so a sum that changed
/// after its check never reaches `out` whole.
pub(crate) fn copy_checked_sum(
    mut pieces: impl FnMut() -> Result<Option<Vec<u8>>>,
    sha256: Option<&[u8]>,
    out: &mut impl std::io::Write,
) -> Result<()> {
    let mut hash = Sha256::new();
    let mut held: Vec<u8> = Vec::new();
    while let Some(piece) = pieces()? {
        out.write_all(&held)?;
        hash.update(&piece);
        held = piece;
    }
    if let Some(expected) = sha256
        && hash.finalize().as_slice() != expected
    {
        return Err(crate::Error::Integrity(
            "the stored node sum changed while it was sent".into(),
        ));
    }
    out.write_all(&held)?;
    out.flush()?;
    Ok(())
}

/// A writer that passes bytes on and hashes them.
pub(crate) struct HashingWriter<W> {
    inner: W,
    hash: Sha256,
}

impl<W: std::io::Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hash: Sha256::new(),
        }
    }

    /// The writer and the SHA-256 of everything written through it.
    pub fn finish(self) -> (W, [u8; 32]) {
        (self.inner, self.hash.finalize().into())
    }
}

impl<W: std::io::Write> std::io::Write for HashingWriter<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(data)?;
        self.hash.update(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that passes bytes on, counts and hashes them.
pub(crate) struct HashingReader<R> {
    inner: R,
    hash: Sha256,
    count: u64,
}

impl<R: std::io::Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hash: Sha256::new(),
            count: 0,
        }
    }

    /// The number of bytes read through it and their SHA-256.
    pub fn finish(self) -> (u64, [u8; 32]) {
        (self.count, self.hash.finalize().into())
    }
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        self.hash.update(&out[..n]);
        self.count += n as u64;
        Ok(n)
    }
}
