//! Sets of (client, shard attempt) pairs on their own — a node's received set, the agreed set
//! the aggregator sends — in the layout node sums already carry them in (a bitset over `0..N`,
//! then one shard id per member in increasing client order), behind a short header of its own:
//!
//! ```text
//! offset size field
//!      0    4 magic "DPDP"
//!      4    2 version (u16) = 1
//!      6    2 reserved, must be 0
//!      8    8 N (u64, 1..=2^32)
//!     16    8 count: clients in the set (u64, <= N; must equal the bitset's set bits)
//!     24      ceil(N/64) × u64 bitset (bit i of word w = client 64·w + i; bits >= N are 0)
//!             count × u64 shard ids, in increasing client order
//! ```
//!
//! 8 bytes per member plus N/8 bytes, against ~45 bytes per member as the JSON lists of
//! decimal ids and hex shard ids were. A reader of the streamed form ([`PairSetReader`])
//! holds the bitset and a buffer, never a list.

use std::io::{Read, Write};

use super::{Decode, Encode, Reader, WireError, read_words, write_words};
use crate::client_set::ClientSet;
use crate::ids::{ClientId, ShardId};
use crate::round::MAX_CLIENTS;
use crate::shard_set::ShardSet;
use crate::{Error, Result};

/// First four bytes of a pair set.
pub const PAIR_SET_MAGIC: [u8; 4] = *b"DPDP";
/// The pair-set format version this crate writes and reads (versioned apart from messages).
pub const PAIR_SET_VERSION: u16 = 1;
/// Length of a pair set's header in bytes.
pub const PAIR_SET_HEADER_LEN: usize = 24;

const BUF: usize = 1 << 16;

impl Encode for ShardSet {
    fn encoded_len(&self) -> usize {
        PAIR_SET_HEADER_LEN + 8 * (self.clients().words().len() + self.len())
    }

    fn encode_into(&self, out: &mut Vec<u8>) -> Result<()> {
        let header = header(self.universe(), self.len())?;
        out.reserve(self.encoded_len());
        out.extend_from_slice(&header);
        write_words(self.clients().words(), out);
        for (_, shard) in self.iter() {
            out.extend_from_slice(&shard.0.to_le_bytes());
        }
        Ok(())
    }
}

impl<'a> Decode<'a, usize> for ShardSet {
    /// `universe` is the N of the round the decoding party is in; a set over another N is
    /// refused before its bitset is allocated.
    fn decode_from(universe: &usize, r: &mut Reader<'a>) -> Result<Self> {
        let head = r.take(PAIR_SET_HEADER_LEN)?;
        let count = read_header(
            head.try_into().unwrap_or([0; PAIR_SET_HEADER_LEN]),
            *universe,
        )?;
        let clients = ClientSet::from_words(*universe, read_words(r, universe.div_ceil(64))?)
            .ok_or(WireError::BadClientSet)?;
        if clients.len() != count {
            return Err(WireError::BadCount {
                count: u64::from_le_bytes(head[16..24].try_into().unwrap_or([0; 8])),
                members: clients.len(),
            }
            .into());
        }
        let shards = read_words(r, count)?;
        let mut set = ShardSet::try_empty(*universe)?;
        for (client, shard) in clients.iter().zip(shards) {
            // Ids from a bitset over 0..N, each once: cannot fail.
            set.insert(client, ShardId(shard))?;
        }
        Ok(set)
    }
}

fn header(universe: usize, count: usize) -> Result<[u8; PAIR_SET_HEADER_LEN]> {
    if universe == 0 || universe > MAX_CLIENTS || count > universe {
        return Err(Error::InvalidParameter {
            name: "pair set universe",
            value: universe as f64,
            requirement: "in 1..=2^32, at least the set's size",
        });
    }
    let mut h = [0u8; PAIR_SET_HEADER_LEN];
    h[..4].copy_from_slice(&PAIR_SET_MAGIC);
    h[4..6].copy_from_slice(&PAIR_SET_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&(universe as u64).to_le_bytes());
    h[16..24].copy_from_slice(&(count as u64).to_le_bytes());
    Ok(h)
}

/// Checks a header against the expected N; the count it declares.
fn read_header(h: [u8; PAIR_SET_HEADER_LEN], universe: usize) -> Result<usize> {
    let word = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap_or([0; 8]));
    if h[..4] != PAIR_SET_MAGIC {
        return Err(WireError::BadMagic.into());
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    if version != PAIR_SET_VERSION {
        return Err(WireError::UnsupportedPairSetVersion(version).into());
    }
    if h[6..8] != [0, 0] {
        return Err(WireError::ReservedNotZero.into());
    }
    let (n, count) = (word(8), word(16));
    if n == 0 || n > MAX_CLIENTS as u64 {
        return Err(WireError::BadUniverse(n).into());
    }
    if n != universe as u64 {
        return Err(Error::LengthMismatch {
            what: "pair set client universe",
            expected: universe,
            actual: usize::try_from(n).unwrap_or(usize::MAX),
        });
    }
    // Compared with the bitset once it is read; saturated here so that no size computed from
    // it can overflow.
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

/// Writes the encoding of the set whose clients are `clients`, with the shard ids taken one by
/// one from `pairs` (every client of `clients`, in increasing order, nothing else), buffered,
/// never all at once: for a party whose pairs come from a store row by row.
///
/// # Errors
/// [`Error::LengthMismatch`] / [`Error::InvalidParameter`] if `pairs` does not list exactly
/// the clients of `clients` in increasing order (the output is then cut short);
/// [`Error::Transport`] if `out` fails.
pub fn write_pair_set_streamed<W: Write>(
    clients: &ClientSet,
    pairs: impl Iterator<Item = (ClientId, ShardId)>,
    out: W,
) -> Result<()> {
    let head = header(clients.universe(), clients.len())?;
    let mut out = std::io::BufWriter::with_capacity(BUF, out);
    out.write_all(&head).map_err(io)?;
    write_members(clients, pairs, &mut out)?;
    out.flush().map_err(io)
}

/// The bitset of `clients`, then the shard id of each from `pairs`, checked to be exactly
/// the clients of `clients` in increasing order (the body of node sums and pair sets).
pub(crate) fn write_members<W: Write>(
    clients: &ClientSet,
    mut pairs: impl Iterator<Item = (ClientId, ShardId)>,
    out: &mut W,
) -> Result<()> {
    for w in clients.words() {
        out.write_all(&w.to_le_bytes()).map_err(io)?;
    }
    let mut written = 0usize;
    for client in clients.iter() {
        let (c, shard) = pairs.next().ok_or(Error::LengthMismatch {
            what: "(client, attempt) pairs",
            expected: clients.len(),
            actual: written,
        })?;
        if c != client {
            return Err(Error::InvalidParameter {
                name: "pair's client",
                value: c.0 as f64,
                requirement: "the set's clients, each once, in increasing order",
            });
        }
        out.write_all(&shard.0.to_le_bytes()).map_err(io)?;
        written += 1;
    }
    if pairs.next().is_some() {
        return Err(Error::LengthMismatch {
            what: "(client, attempt) pairs",
            expected: clients.len(),
            actual: written + 1,
        });
    }
    Ok(())
}

fn io(e: std::io::Error) -> Error {
    Error::Transport(format!("pair set: {e}"))
}

/// A pair set read from a stream: the header and the bitset when opened, then the pairs one
/// by one as the caller pulls them. Memory: the N-bit set and one buffer, whatever the count.
pub struct PairSetReader<R> {
    source: std::io::BufReader<R>,
    clients: ClientSet,
    /// Members whose shard id was read.
    read: usize,
    /// Next client to look for in the bitset.
    next_client: usize,
    /// Bytes consumed so far (for the truncation message).
    at: usize,
    total: usize,
}

impl<R: Read> PairSetReader<R> {
    /// Reads the header and the bitset of a pair set over `universe` clients.
    ///
    /// # Errors
    /// [`Error::Wire`] for malformed or truncated bytes; [`Error::LengthMismatch`] for a set
    /// over another N; [`Error::Allocation`] if the N-bit set cannot be allocated;
    /// [`Error::Transport`] if `source` fails.
    pub fn open(source: R, universe: usize) -> Result<Self> {
        let mut source = std::io::BufReader::with_capacity(BUF, source);
        let mut head = [0u8; PAIR_SET_HEADER_LEN];
        let got = read_full(&mut source, &mut head)?;
        if got < PAIR_SET_HEADER_LEN {
            return Err(WireError::Truncated {
                expected: PAIR_SET_HEADER_LEN,
                actual: got,
            }
            .into());
        }
        let count = read_header(head, universe)?;
        let n_words = universe.div_ceil(64);
        let total = n_words
            .saturating_add(count)
            .saturating_mul(8)
            .saturating_add(PAIR_SET_HEADER_LEN);
        let mut words = crate::alloc::zeroed::<u64>(n_words, "client set")?;
        let mut at = PAIR_SET_HEADER_LEN;
        let mut buf = vec![0u8; BUF];
        for chunk in words.chunks_mut(BUF / 8) {
            let bytes = &mut buf[..chunk.len() * 8];
            let got = read_full(&mut source, bytes)?;
            at += got;
            if got < bytes.len() {
                return Err(WireError::Truncated {
                    expected: total,
                    actual: at,
                }
                .into());
            }
            for (w, b) in chunk.iter_mut().zip(bytes.as_chunks::<8>().0) {
                *w = u64::from_le_bytes(*b);
            }
        }
        let clients = ClientSet::from_words(universe, words).ok_or(WireError::BadClientSet)?;
        if clients.len() != count {
            return Err(WireError::BadCount {
                count: u64::from_le_bytes(head[16..24].try_into().unwrap_or([0; 8])),
                members: clients.len(),
            }
            .into());
        }
        Ok(Self {
            source,
            clients,
            read: 0,
            next_client: 0,
            at,
            total,
        })
    }

    /// The set's clients.
    pub fn clients(&self) -> &ClientSet {
        &self.clients
    }

    /// The next pair in increasing client order, or `None` after the last.
    ///
    /// # Errors
    /// [`WireError::Truncated`] if the bytes end early; [`Error::Transport`] if the source fails.
    pub fn next_pair(&mut self) -> Result<Option<(ClientId, ShardId)>> {
        if self.read == self.clients.len() {
            return Ok(None);
        }
        let client = (self.next_client..self.clients.universe())
            .map(|c| ClientId(c as u64))
            .find(|&c| self.clients.contains(c))
            .ok_or(WireError::BadClientSet)?;
        let mut w = [0u8; 8];
        let got = read_full(&mut self.source, &mut w)?;
        self.at += got;
        if got < 8 {
            return Err(WireError::Truncated {
                expected: self.total,
                actual: self.at,
            }
            .into());
        }
        self.read += 1;
        self.next_client = client.0 as usize + 1;
        Ok(Some((client, ShardId(u64::from_le_bytes(w)))))
    }

    /// Checks that every pair was read and nothing follows; the set's clients.
    ///
    /// # Errors
    /// [`WireError::TrailingBytes`] for bytes after the set; as [`Self::next_pair`] for pairs
    /// not read yet.
    pub fn finish(mut self) -> Result<ClientSet> {
        while self.next_pair()?.is_some() {}
        let mut rest = [0u8; 1];
        let extra = read_full(&mut self.source, &mut rest)?;
        if extra > 0 {
            let more = std::io::copy(&mut self.source, &mut std::io::sink()).map_err(io)?;
            return Err(WireError::TrailingBytes {
                expected: self.total,
                actual: self.total + 1 + more as usize,
            }
            .into());
        }
        Ok(self.clients)
    }
}

/// Fills `buf` as far as the source goes; the bytes read (short only at the end).
fn read_full(source: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
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

    fn sample(n: usize, members: &[u64]) -> ShardSet {
        let pairs: Vec<_> = members
            .iter()
            .map(|&c| {
                (
                    ClientId(c),
                    ShardId(c.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 3),
                )
            })
            .collect();
        ShardSet::from_pairs(n, &pairs).unwrap()
    }

    fn le(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// The bytes are the documented layout, written out by hand here, not by the encoder.
    #[test]
    fn encodes_the_documented_layout_and_round_trips() {
        let set = sample(70, &[0, 5, 64, 69]);
        let bytes = set.get_encoded().unwrap();
        let mut want = b"DPDP".to_vec();
        want.extend_from_slice(&[1, 0, 0, 0]);
        want.extend(le(&[70, 4, (1 << 0) | (1 << 5), 1 | (1 << 5)]));
        want.extend(le(
            &[0, 5, 64, 69].map(|c: u64| c.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 3)
        ));
        assert_eq!(bytes, want);
        assert_eq!(bytes.len(), set.encoded_len());
        assert_eq!(ShardSet::get_decoded(&70, &bytes).unwrap(), set);

        let mut streamed = Vec::new();
        write_pair_set_streamed(set.clients(), set.iter(), &mut streamed).unwrap();
        assert_eq!(streamed, bytes);
        let mut reader = PairSetReader::open(&bytes[..], 70).unwrap();
        assert_eq!(reader.clients(), set.clients());
        let mut pairs = Vec::new();
        while let Some(p) = reader.next_pair().unwrap() {
            pairs.push(p);
        }
        assert_eq!(pairs, set.iter().collect::<Vec<_>>());
        assert_eq!(reader.finish().unwrap(), *set.clients());

        // Empty and full sets, and one past a word boundary.
        for set in [
            ShardSet::empty(1),
            sample(64, &(0..64).collect::<Vec<_>>()),
            sample(129, &[128]),
        ] {
            let bytes = set.get_encoded().unwrap();
            assert_eq!(ShardSet::get_decoded(&set.universe(), &bytes).unwrap(), set);
            let r = PairSetReader::open(&bytes[..], set.universe()).unwrap();
            assert_eq!(r.finish().unwrap(), *set.clients());
        }
    }

    /// A set of 10^6 clients is 8 bytes per member plus N/8, and reads back streaming.
    #[test]
    fn a_million_clients_take_eight_bytes_each() {
        let n = 1_000_000;
        let members: Vec<u64> = (0..n as u64).filter(|c| c % 7 != 3).collect();
        let set = sample(n, &members);
        let mut bytes = Vec::new();
        write_pair_set_streamed(set.clients(), set.iter(), &mut bytes).unwrap();
        assert_eq!(bytes.len(), 24 + 8 * 15_625 + 8 * members.len());
        let mut reader = PairSetReader::open(&bytes[..], n).unwrap();
        let mut k = 0;
        while let Some((c, s)) = reader.next_pair().unwrap() {
            assert_eq!(c.0, members[k]);
            assert_eq!(Some(s), set.shard(c));
            k += 1;
        }
        assert_eq!(k, members.len());
        reader.finish().unwrap();
    }

    fn both_refuse(bytes: &[u8], n: usize) -> (Error, Error) {
        let whole = ShardSet::get_decoded(&n, bytes).unwrap_err();
        let streamed = PairSetReader::open(bytes, n)
            .and_then(|r| r.finish())
            .unwrap_err();
        (whole, streamed)
    }

    #[test]
    fn malformed_sets_are_refused_with_their_cause() {
        let good = sample(70, &[0, 5, 64, 69]).get_encoded().unwrap();
        let edit = |at: usize, b: u8| {
            let mut v = good.clone();
            v[at] = b;
            v
        };
        let cases: Vec<(Vec<u8>, Error)> = vec![
            (
                good[..10].to_vec(),
                WireError::Truncated {
                    expected: 24,
                    actual: 10,
                }
                .into(),
            ),
            (edit(0, b'X'), WireError::BadMagic.into()),
            (edit(4, 2), WireError::UnsupportedPairSetVersion(2).into()),
            (edit(6, 1), WireError::ReservedNotZero.into()),
            (
                edit(8, 71),
                Error::LengthMismatch {
                    what: "pair set client universe",
                    expected: 70,
                    actual: 71,
                },
            ),
            (
                {
                    let mut v = good.clone();
                    v[8..16].copy_from_slice(&0u64.to_le_bytes());
                    v
                },
                WireError::BadUniverse(0).into(),
            ),
            (
                edit(16, 3),
                WireError::BadCount {
                    count: 3,
                    members: 4,
                }
                .into(),
            ),
            (
                {
                    let mut v = good.clone();
                    v[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
                    v
                },
                WireError::BadCount {
                    count: u64::MAX,
                    members: 4,
                }
                .into(),
            ),
            // Bit 70 of a 70-client set.
            (edit(24 + 8, 0x41), WireError::BadClientSet.into()),
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
            let (whole, streamed) = both_refuse(&bytes, 70);
            assert_eq!(streamed, want, "{bytes:?}");
            // The whole-buffer decoder agrees on the cause (a bitset cut short it calls
            // truncated too, with its own offsets).
            assert_eq!(
                std::mem::discriminant(&whole),
                std::mem::discriminant(&want),
                "{bytes:?}"
            );
        }
        // A bit beyond N in the last word's tail.
        let mut v = good.clone();
        v[24 + 15] = 0x80;
        assert_eq!(both_refuse(&v, 70).1, WireError::BadClientSet.into());
        // A set the format cannot carry is refused at encoding.
        assert!(ShardSet::empty(0).get_encoded().is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Whatever follows a valid prefix: no panic, the two readers agree on accepting it,
        /// and what they accept encodes back to exactly these bytes (nothing is misread).
        #[test]
        fn random_bytes_never_panic_nor_misparse(
            keep in 0usize..=PAIR_SET_HEADER_LEN + 16 + 32,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let mut bytes = sample(70, &[0, 5, 64, 69]).get_encoded().unwrap()[..keep].to_vec();
            bytes.extend_from_slice(&tail);
            for bytes in [&bytes[..], &tail[..]] {
                let whole = ShardSet::get_decoded(&70, bytes);
                let streamed = PairSetReader::open(bytes, 70).and_then(|mut r| {
                    let mut pairs = Vec::new();
                    while let Some(p) = r.next_pair()? {
                        pairs.push(p);
                    }
                    r.finish().map(|_| pairs)
                });
                proptest::prop_assert_eq!(whole.is_ok(), streamed.is_ok());
                if let (Ok(set), Ok(pairs)) = (whole, streamed) {
                    proptest::prop_assert_eq!(set.get_encoded().unwrap(), bytes.to_vec());
                    proptest::prop_assert_eq!(set.iter().collect::<Vec<_>>(), pairs);
                }
            }
        }
    }
}
