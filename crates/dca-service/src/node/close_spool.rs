//! A node's close request (`POST /rounds/{id}/close`, the agreed set as a pair set of
//! `fixedpoint_shares::wire`: a bitset over `0..N`, then each agreed client's shard id in
//! ascending client order), never held whole: the spooled body is read once, streaming, and
//! its pairs written to two files of raw u64 words ([`split`]); the agreed clients are then
//! read back as a set of N bits ([`agreed_set`]) and the pairs written by client to a third
//! file ([`index_by_client`]), so that the node can check them against its stored attempts in
//! one ascending scan of its store ([`ByClient`]). Memory: the N-bit set and a few buffers;
//! disk: 8 bytes per agreed client per file, removed with the request's spool.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use fixedpoint_shares::wire::PairSetReader;
use fixedpoint_shares::{ClientId, ClientSet};

use crate::{Error, Result};

/// Buffer of each file reader and writer.
const BUF: usize = 1 << 16;

/// Why a spooled close request was not split.
#[derive(Debug)]
pub(crate) enum SplitError {
    /// Not a pair set over the round's `n_clients` (the message says why): 400.
    Malformed(String),
    /// Reading the spool or writing the lists failed.
    Io(std::io::Error),
}

/// Reads the close request in `body` once — checked as a pair set over `n_clients` clients:
/// header, bitset, one shard id per member, nothing after — and writes its client ids to
/// `clients` and its shard ids to `shards` (u64 little-endian each, ascending client order);
/// returns how many of each.
pub(crate) fn split(
    body: &Path,
    n_clients: usize,
    clients: &Path,
    shards: &Path,
) -> std::result::Result<(usize, usize), SplitError> {
    let malformed = |e: fixedpoint_shares::Error| match e {
        fixedpoint_shares::Error::Transport(m) => SplitError::Io(std::io::Error::other(m)),
        e => SplitError::Malformed(e.to_string()),
    };
    let mut set = PairSetReader::open(File::open(body).map_err(SplitError::Io)?, n_clients)
        .map_err(malformed)?;
    let mut c_out = BufWriter::with_capacity(BUF, File::create(clients).map_err(SplitError::Io)?);
    let mut s_out = BufWriter::with_capacity(BUF, File::create(shards).map_err(SplitError::Io)?);
    let mut count = 0usize;
    while let Some((c, s)) = set.next_pair().map_err(malformed)? {
        c_out
            .write_all(&c.0.to_le_bytes())
            .map_err(SplitError::Io)?;
        s_out
            .write_all(&s.0.to_le_bytes())
            .map_err(SplitError::Io)?;
        count += 1;
    }
    set.finish().map_err(malformed)?;
    c_out.flush().map_err(SplitError::Io)?;
    s_out.flush().map_err(SplitError::Io)?;
    Ok((count, count))
}

/// Raw u64 words of a list file, one by one.
pub(crate) struct Words(BufReader<File>);

impl Words {
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Ok(Words(BufReader::with_capacity(BUF, File::open(path)?)))
    }
}

impl Iterator for Words {
    type Item = Result<u64>;
    fn next(&mut self) -> Option<Result<u64>> {
        let mut w = [0u8; 8];
        match self.0.read_exact(&mut w) {
            Ok(()) => Some(Ok(u64::from_le_bytes(w))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => Some(Err(e.into())),
        }
    }
}

/// The client ids of a split request as a set of `0..n_clients` (N bits).
///
/// # Errors
/// A client id ≥ N or listed twice ([`Error::Dca`]); the file could not be read.
pub(crate) fn agreed_set(clients: &Path, n_clients: usize) -> Result<ClientSet> {
    let mut set = ClientSet::try_empty(n_clients)?;
    for c in Words::open(clients)? {
        let c = ClientId(c?);
        if !set.insert(c)? {
            return Err(fixedpoint_shares::Error::DuplicateClient { client: c }.into());
        }
    }
    Ok(set)
}

/// Writes each listed pair's shard id at offset 8·client of `by_client` (a sparse file of up
/// to 8N bytes), so that the pairs can be read back in client order. Writes are buffered;
/// only a jump in the client order costs a seek (none for a request in ascending order, as the
/// aggregator sends it, beyond one per gap).
pub(crate) fn index_by_client(clients: &Path, shards: &Path, by_client: &Path) -> Result<()> {
    let mut out = BufWriter::with_capacity(BUF, File::create(by_client)?);
    let mut next = 0u64;
    for (c, s) in Words::open(clients)?.zip(Words::open(shards)?) {
        let (c, s) = (c?, s?);
        if c != next {
            out.seek(SeekFrom::Start(c.checked_mul(8).ok_or_else(|| {
                Error::InvalidSpec(format!("client id {c} out of range"))
            })?))?;
        }
        out.write_all(&s.to_le_bytes())?;
        next = c + 1;
    }
    out.flush()?;
    Ok(())
}

/// The shard ids of a request indexed by [`index_by_client`], looked up in ascending client
/// order (a lookup of a smaller client than the last one seeks back, and is correct too).
pub(crate) struct ByClient {
    file: BufReader<File>,
    /// Byte offset of the reader.
    at: u64,
}

impl ByClient {
    pub(crate) fn open(path: &Path) -> Result<Self> {
        Ok(ByClient {
            file: BufReader::with_capacity(BUF, File::open(path)?),
            at: 0,
        })
    }

    /// The shard id listed for `client` (which the request must list).
    pub(crate) fn shard(&mut self, client: u64) -> Result<u64> {
        let offset = client
            .checked_mul(8)
            .ok_or_else(|| Error::InvalidSpec(format!("client id {client} out of range")))?;
        let delta = i64::try_from(offset as i128 - self.at as i128)
            .map_err(|_| Error::InvalidSpec(format!("client id {client} out of range")))?;
        self.file.seek_relative(delta)?;
        let mut w = [0u8; 8];
        self.file.read_exact(&mut w)?;
        self.at = offset + 8;
        Ok(u64::from_le_bytes(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use fixedpoint_shares::{Encode, ShardId, ShardSet};

    /// Splitting refuses every malformed request (another N, bad magic, truncated, trailing
    /// bytes, a bit beyond N, JSON) with its cause; a set with a repeated or out-of-range id
    /// cannot be written at all. The lists come back in ascending client order, as a set and
    /// indexed by client.
    #[test]
    fn a_close_request_is_split_checked_and_indexed_by_client() {
        let dir = crate::scratch_dir("close-spool");
        let (body, clients, shards, by) = (
            dir.join("c.body"),
            dir.join("c.clients"),
            dir.join("c.shards"),
            dir.join("c.by"),
        );
        let split_bytes = |bytes: &[u8], n: usize| {
            std::fs::write(&body, bytes).unwrap();
            split(&body, n, &clients, &shards)
        };
        let shard_of = |c: u64| c.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 7;
        let set_of = |n: usize, ids: &[u64]| {
            let pairs: Vec<_> = ids
                .iter()
                .map(|&c| (ClientId(c), ShardId(shard_of(c))))
                .collect();
            ShardSet::from_pairs(n, &pairs).unwrap()
        };
        let small = set_of(10, &[1, 4, 9]).get_encoded().unwrap();
        for (bad, n, cause) in [
            (small.clone(), 11, "universe"),
            ([b"DPDX", &small[4..]].concat(), 10, "magic"),
            (small[..small.len() - 3].to_vec(), 10, "truncated"),
            ([&small[..], b"x"].concat(), 10, "trailing"),
            (
                {
                    let mut v = small.clone();
                    v[24 + 1] = 0x04; // client 10 of a 10-client set
                    v
                },
                10,
                "bitset",
            ),
            (
                br#"{"agreed":[1],"shards":["0000000000000001"]}"#.to_vec(),
                10,
                "magic",
            ),
            (Vec::new(), 10, "truncated"),
        ] {
            match split_bytes(&bad, n) {
                Err(SplitError::Malformed(m)) => assert!(m.contains(cause), "{m}"),
                other => panic!("{cause}: {other:?}"),
            }
        }

        let n = 30_000u64;
        let ids: Vec<u64> = (0..n).filter(|c| c % 5 != 0).collect();
        let bytes = set_of(n as usize, &ids).get_encoded().unwrap();
        assert_eq!(
            split_bytes(&bytes, n as usize).unwrap(),
            (ids.len(), ids.len())
        );
        let listed: Vec<u64> = Words::open(&clients).unwrap().map(|w| w.unwrap()).collect();
        assert_eq!(listed, ids);
        let set = agreed_set(&clients, n as usize).unwrap();
        assert_eq!(set.len(), ids.len());
        assert!(ids.iter().all(|&c| set.contains(ClientId(c))));
        index_by_client(&clients, &shards, &by).unwrap();
        let mut lookup = ByClient::open(&by).unwrap();
        for c in set.iter() {
            assert_eq!(lookup.shard(c.0).unwrap(), shard_of(c.0), "client {c}");
        }
        // Backwards too.
        for &c in ids.iter().rev().take(100) {
            assert_eq!(lookup.shard(c).unwrap(), shard_of(c));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
