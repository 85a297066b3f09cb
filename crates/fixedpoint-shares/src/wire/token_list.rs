//! A round's client token list — the SHA-256 of each client's bearer token, index = client id —
//! as raw hashes behind a short header:
//!
//! ```text
//! offset size field
//!      0    4 magic "DPDT"
//!      4    2 version (u16) = 1
//!      6    2 reserved, must be 0
//!      8    8 count (u64, <= 2^32): the number of hashes
//!     16      count × 32 bytes: the hashes, client 0 first
//! ```
//!
//! 32 bytes per client, against ~67 as a JSON list of hex strings. A reader knows the count
//! from the round (its N) and checks the header against it before reading on; the streamed
//! reader ([`TokenListReader`]) holds one buffer, never the list.

use std::io::{Read, Write};

use super::{Decode, Encode, Reader, WireError};
use crate::round::MAX_CLIENTS;
use crate::{Error, Result};

/// First four bytes of a token list.
pub const TOKEN_LIST_MAGIC: [u8; 4] = *b"DPDT";
/// The token-list format version this crate writes and reads.
pub const TOKEN_LIST_VERSION: u16 = 1;
/// Length of a token list's header in bytes.
pub const TOKEN_LIST_HEADER_LEN: usize = 16;
/// Length of one token hash.
pub const TOKEN_HASH_LEN: usize = 32;

const BUF: usize = 1 << 16;

/// The hashes of a round's client tokens, index = client id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenList(pub Vec<[u8; TOKEN_HASH_LEN]>);

impl Encode for TokenList {
    fn encoded_len(&self) -> usize {
        TOKEN_LIST_HEADER_LEN + TOKEN_HASH_LEN * self.0.len()
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let header = token_list_header(self.0.len())?;
        out.reserve(self.encoded_len());
        out.extend_from_slice(&header);
        out.extend_from_slice(self.0.as_flattened());
        Ok(())
    }
}

impl<'a> Decode<'a, usize> for TokenList {
    /// `count` is the N of the round the decoding party is in; a list of another length is
    /// refused before anything is allocated.
    fn decode_from(count: &usize, r: &mut Reader<'a>) -> Result<Self> {
        let head = r.take(TOKEN_LIST_HEADER_LEN)?;
        read_header(
            head.try_into().unwrap_or([0; TOKEN_LIST_HEADER_LEN]),
            *count,
        )?;
        let bytes = r.take(
            count
                .checked_mul(TOKEN_HASH_LEN)
                .ok_or(WireError::Truncated {
                    expected: usize::MAX,
                    actual: 0,
                })?,
        )?;
        let (hashes, _) = bytes.as_chunks::<TOKEN_HASH_LEN>();
        Ok(TokenList(hashes.to_vec()))
    }
}

/// The header of a list of `count` hashes.
///
/// # Errors
/// [`Error::InvalidParameter`] for more than 2^32 hashes.
pub fn token_list_header(count: usize) -> Result<[u8; TOKEN_LIST_HEADER_LEN]> {
    if count > MAX_CLIENTS {
        return Err(Error::InvalidParameter {
            name: "token list length",
            value: count as f64,
            requirement: "at most 2^32",
        });
    }
    let mut h = [0u8; TOKEN_LIST_HEADER_LEN];
    h[..4].copy_from_slice(&TOKEN_LIST_MAGIC);
    h[4..6].copy_from_slice(&TOKEN_LIST_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&(count as u64).to_le_bytes());
    Ok(h)
}

/// Checks a header against the expected count.
fn read_header(h: [u8; TOKEN_LIST_HEADER_LEN], count: usize) -> Result<()> {
    if h[..4] != TOKEN_LIST_MAGIC {
        return Err(WireError::BadMagic.into());
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    if version != TOKEN_LIST_VERSION {
        return Err(WireError::UnsupportedTokenListVersion(version).into());
    }
    if h[6..8] != [0, 0] {
        return Err(WireError::ReservedNotZero.into());
    }
    let declared = u64::from_le_bytes(h[8..16].try_into().unwrap_or([0; 8]));
    if declared != count as u64 {
        return Err(Error::LengthMismatch {
            what: "client token list",
            expected: count,
            actual: usize::try_from(declared).unwrap_or(usize::MAX),
        });
    }
    Ok(())
}

/// Writes a list of `count` hashes taken one by one from `hashes`, buffered, never all at
/// once: for a party whose hashes come from a store row by row.
///
/// # Errors
/// [`Error::LengthMismatch`] if `hashes` does not yield exactly `count` hashes (the output is
/// then cut short); [`Error::InvalidParameter`] for more than 2^32; [`Error::Transport`] if
/// `out` fails.
pub fn write_token_list_streamed<W: Write>(
    count: usize,
    hashes: impl IntoIterator<Item = [u8; TOKEN_HASH_LEN]>,
    out: W,
) -> Result<()> {
    let head = token_list_header(count)?;
    let mut out = std::io::BufWriter::with_capacity(BUF, out);
    out.write_all(&head).map_err(io)?;
    let mut written = 0usize;
    for h in hashes {
        if written == count {
            return Err(Error::LengthMismatch {
                what: "client token hashes",
                expected: count,
                actual: written + 1,
            });
        }
        out.write_all(&h).map_err(io)?;
        written += 1;
    }
    if written != count {
        return Err(Error::LengthMismatch {
            what: "client token hashes",
            expected: count,
            actual: written,
        });
    }
    out.flush().map_err(io)
}

fn io(e: std::io::Error) -> Error {
    Error::Transport(format!("token list: {e}"))
}

/// A token list read from a stream: the header when opened, then the hashes one by one as the
/// caller pulls them. Memory: one buffer, whatever the count.
pub struct TokenListReader<R> {
    source: std::io::BufReader<R>,
    count: usize,
    read: usize,
    total: usize,
}

impl<R: Read> TokenListReader<R> {
    /// Reads the header of a list that must hold `count` hashes.
    ///
    /// # Errors
    /// [`Error::Wire`] for a malformed or truncated header; [`Error::LengthMismatch`] for a
    /// list of another length; [`Error::Transport`] if `source` fails.
    pub fn open(source: R, count: usize) -> Result<Self> {
        let mut source = std::io::BufReader::with_capacity(BUF, source);
        let mut head = [0u8; TOKEN_LIST_HEADER_LEN];
        let got = read_full(&mut source, &mut head)?;
        if got < TOKEN_LIST_HEADER_LEN {
            return Err(WireError::Truncated {
                expected: TOKEN_LIST_HEADER_LEN,
                actual: got,
            }
            .into());
        }
        read_header(head, count)?;
        Ok(Self {
            source,
            count,
            read: 0,
            total: count
                .saturating_mul(TOKEN_HASH_LEN)
                .saturating_add(TOKEN_LIST_HEADER_LEN),
        })
    }

    /// The number of hashes in the list.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The next hash, or `None` after the last.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the bytes end early; [`Error::Transport`] if the source fails.
    pub fn next_hash(&mut self) -> Result<Option<[u8; TOKEN_HASH_LEN]>> {
        if self.read == self.count {
            return Ok(None);
        }
        let mut h = [0u8; TOKEN_HASH_LEN];
        let got = read_full(&mut self.source, &mut h)?;
        if got < TOKEN_HASH_LEN {
            return Err(WireError::Truncated {
                expected: self.total,
                actual: TOKEN_LIST_HEADER_LEN + self.read * TOKEN_HASH_LEN + got,
            }
            .into());
        }
        self.read += 1;
        Ok(Some(h))
    }

    /// Checks that every hash was read and nothing follows.
    ///
    /// # Errors
    /// [`WireError::TrailingBytes`] for bytes after the list; as [`Self::next_hash`] for
    /// hashes not read yet.
    pub fn finish(mut self) -> Result<()> {
        while self.next_hash()?.is_some() {}
        let mut rest = [0u8; 1];
        if read_full(&mut self.source, &mut rest)? > 0 {
            let more = std::io::copy(&mut self.source, &mut std::io::sink()).map_err(io)?;
            return Err(WireError::TrailingBytes {
                expected: self.total,
                actual: self.total + 1 + more as usize,
            }
            .into());
        }
        Ok(())
    }
}

/// Fills `buf` as far as the source goes; the bytes read (short only at the end).
pub(crate) fn read_full(source: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> TokenList {
        TokenList(
            (0..n)
                .map(|i| {
                    let mut h = [0u8; 32];
                    h[0] = i as u8;
                    h[31] = 0xA0 ^ i as u8;
                    h
                })
                .collect(),
        )
    }

    fn streamed(bytes: &[u8], n: usize) -> Result<Vec<[u8; 32]>> {
        let mut r = TokenListReader::open(bytes, n)?;
        let mut out = Vec::new();
        while let Some(h) = r.next_hash()? {
            out.push(h);
        }
        r.finish().map(|()| out)
    }

    /// The bytes are the documented layout, written out by hand here, not by the encoder.
    #[test]
    fn encodes_the_documented_layout_and_round_trips() {
        let list = sample(2);
        let bytes = list.get_encoded().unwrap();
        let mut want = b"DPDT".to_vec();
        want.extend_from_slice(&[1, 0, 0, 0]);
        want.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]);
        let mut h0 = [0u8; 32];
        h0[31] = 0xA0;
        let mut h1 = [0u8; 32];
        h1[0] = 1;
        h1[31] = 0xA1;
        want.extend_from_slice(&h0);
        want.extend_from_slice(&h1);
        assert_eq!(bytes, want);
        assert_eq!(bytes.len(), list.encoded_len());
        assert_eq!(TokenList::get_decoded(&2, &bytes).unwrap(), list);
        assert_eq!(streamed(&bytes, 2).unwrap(), list.0);

        let mut out = Vec::new();
        write_token_list_streamed(2, list.0.iter().copied(), &mut out).unwrap();
        assert_eq!(out, bytes);

        let empty = TokenList::default().get_encoded().unwrap();
        assert_eq!(empty.len(), 16);
        assert!(TokenList::get_decoded(&0, &empty).unwrap().0.is_empty());
        assert!(streamed(&empty, 0).unwrap().is_empty());
    }

    #[test]
    fn a_streamed_writer_refuses_another_count() {
        let list = sample(3);
        let e = write_token_list_streamed(4, list.0.iter().copied(), Vec::new()).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { actual: 3, .. }), "{e}");
        let e = write_token_list_streamed(2, list.0.iter().copied(), Vec::new()).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { actual: 3, .. }), "{e}");
    }

    #[test]
    fn malformed_lists_are_refused_with_their_cause() {
        let good = sample(3).get_encoded().unwrap();
        let edit = |at: usize, b: u8| {
            let mut v = good.clone();
            v[at] = b;
            v
        };
        let cases: Vec<(Vec<u8>, Error)> = vec![
            (
                good[..10].to_vec(),
                WireError::Truncated {
                    expected: 16,
                    actual: 10,
                }
                .into(),
            ),
            (edit(0, b'X'), WireError::BadMagic.into()),
            (edit(4, 2), WireError::UnsupportedTokenListVersion(2).into()),
            (edit(7, 1), WireError::ReservedNotZero.into()),
            (
                edit(8, 4),
                Error::LengthMismatch {
                    what: "client token list",
                    expected: 3,
                    actual: 4,
                },
            ),
            (
                good[..good.len() - 1].to_vec(),
                WireError::Truncated {
                    expected: good.len(),
                    actual: good.len() - 1,
                }
                .into(),
            ),
            (
                [&good[..], &[0]].concat(),
                WireError::TrailingBytes {
                    expected: good.len(),
                    actual: good.len() + 1,
                }
                .into(),
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(streamed(&bytes, 3).unwrap_err(), want, "{bytes:?}");
            let whole = TokenList::get_decoded(&3, &bytes).unwrap_err();
            assert_eq!(
                std::mem::discriminant(&whole),
                std::mem::discriminant(&want),
                "{bytes:?}"
            );
        }
        // A count that cannot be allocated is refused from the header, not by trying.
        let mut huge = good.clone();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            streamed(&huge, 3).unwrap_err(),
            Error::LengthMismatch { .. }
        ));
        assert!(TokenList(vec![[0; 32]; 1]).get_encoded().is_ok());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Whatever follows a valid prefix: no panic, the two readers agree on accepting it,
        /// and what they accept encodes back to exactly these bytes.
        #[test]
        fn random_bytes_never_panic_nor_misparse(
            keep in 0usize..=TOKEN_LIST_HEADER_LEN + 3 * 32,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100),
        ) {
            let mut bytes = sample(3).get_encoded().unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            for bytes in [&bytes[..], &tail[..]] {
                let whole = TokenList::get_decoded(&3, bytes);
                let stream = streamed(bytes, 3);
                proptest::prop_assert_eq!(whole.is_ok(), stream.is_ok());
                if let (Ok(list), Ok(hashes)) = (whole, stream) {
                    proptest::prop_assert_eq!(list.get_encoded().unwrap(), bytes.to_vec());
                    proptest::prop_assert_eq!(list.0, hashes);
                }
            }
        }
    }
}
