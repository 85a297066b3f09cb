//! A node's close request (`POST /rounds/{id}/close`, `{"agreed": [ids], "shards": ["<16
//! hex>", …]}`), never held whole: the spooled JSON is read once, streaming, and its two lists
//! written to two files of raw u64 words ([`split`]); the agreed clients are then read back as
//! a set of N bits ([`agreed_set`]) and the pairs written by client to a third file
//! ([`index_by_client`]), so that the node can check them against its stored attempts in one
//! ascending scan of its store ([`ByClient`]). Memory: the N-bit set and a few buffers; disk:
//! 8 bytes per listed client per file, removed with the request's spool.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use fixedpoint_shares::{ClientId, ClientSet};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::{Error, Result, hex};

/// Buffer of each file reader and writer.
const BUF: usize = 1 << 16;

/// Why a spooled close request was not split.
#[derive(Debug)]
pub(crate) enum SplitError {
    /// Not a well-formed close request (the message says why): 400.
    Malformed(String),
    /// Reading the spool or writing the lists failed.
    Io(std::io::Error),
}

/// Reads the close request in `json` once and writes its client ids to `clients` and its shard
/// ids to `shards` (u64 little-endian each, in the request's order); returns how many of each.
/// Every field is checked as the derived parser did: both fields present, once each, nothing
/// else, client ids u64, shard ids 16 hex digits, nothing after the object.
pub(crate) fn split(
    json: &Path,
    clients: &Path,
    shards: &Path,
) -> std::result::Result<(usize, usize), SplitError> {
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(
        BUF,
        File::open(json).map_err(SplitError::Io)?,
    ));
    let mut io_error = None;
    let mut out = Lists {
        clients: BufWriter::with_capacity(BUF, File::create(clients).map_err(SplitError::Io)?),
        shards: BufWriter::with_capacity(BUF, File::create(shards).map_err(SplitError::Io)?),
        io_error: &mut io_error,
    };
    let parsed = (&mut out)
        .deserialize(&mut de)
        .and_then(|counts| de.end().map(|()| counts));
    let flushed = out
        .clients
        .flush()
        .and_then(|()| out.shards.flush())
        .map_err(SplitError::Io);
    if let Some(e) = io_error {
        return Err(SplitError::Io(e));
    }
    let counts = parsed.map_err(|e| SplitError::Malformed(e.to_string()))?;
    flushed.map(|()| counts)
}

struct Lists<'a> {
    clients: BufWriter<File>,
    shards: BufWriter<File>,
    /// A write error, kept apart from parse errors (those are the client's fault).
    io_error: &'a mut Option<std::io::Error>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Agreed,
    Shards,
}

impl<'de> DeserializeSeed<'de> for &mut Lists<'_> {
    type Value = (usize, usize);
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_struct("CloseRequest", &["agreed", "shards"], self)
    }
}

impl<'de> Visitor<'de> for &mut Lists<'_> {
    type Value = (usize, usize);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a close request {\"agreed\": [...], \"shards\": [...]}")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let (mut agreed, mut shards) = (None, None);
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Agreed if agreed.is_some() => {
                    return Err(de::Error::duplicate_field("agreed"));
                }
                Field::Shards if shards.is_some() => {
                    return Err(de::Error::duplicate_field("shards"));
                }
                Field::Agreed => {
                    agreed = Some(map.next_value_seed(List {
                        out: &mut self.clients,
                        io_error: self.io_error,
                        shard_ids: false,
                    })?);
                }
                Field::Shards => {
                    shards = Some(map.next_value_seed(List {
                        out: &mut self.shards,
                        io_error: self.io_error,
                        shard_ids: true,
                    })?);
                }
            }
        }
        Ok((
            agreed.ok_or_else(|| de::Error::missing_field("agreed"))?,
            shards.ok_or_else(|| de::Error::missing_field("shards"))?,
        ))
    }
}

/// One list, each element written out as it is read; its length.
struct List<'a> {
    out: &'a mut BufWriter<File>,
    io_error: &'a mut Option<std::io::Error>,
    /// Shard ids (16 hex digits) rather than client ids (numbers).
    shard_ids: bool,
}

impl<'de> DeserializeSeed<'de> for List<'_> {
    type Value = usize;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for List<'_> {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(if self.shard_ids {
            "a list of shard ids"
        } else {
            "a list of client ids"
        })
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<usize, A::Error> {
        let mut count = 0usize;
        loop {
            let word = if self.shard_ids {
                seq.next_element::<ShardHex>()?.map(|s| s.0)
            } else {
                seq.next_element::<u64>()?
            };
            let Some(word) = word else {
                return Ok(count);
            };
            if let Err(e) = self.out.write_all(&word.to_le_bytes()) {
                *self.io_error = Some(e);
                return Err(de::Error::custom("writing the spooled lists failed"));
            }
            count += 1;
        }
    }
}

/// A shard id as the JSON bodies carry it: 16 hex digits.
pub(crate) struct ShardHex(pub u64);

impl<'de> Deserialize<'de> for ShardHex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ShardHex;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a shard id of 16 hex digits")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<ShardHex, E> {
                hex::decode_array::<8>(s)
                    .map(|b| ShardHex(u64::from_be_bytes(b)))
                    .ok_or_else(|| E::custom(format!("shard id {s:?}: need 16 hex digits")))
            }
        }
        d.deserialize_str(V)
    }
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

    /// Splitting refuses every malformed request (syntax, types, shard ids, unknown, missing or
    /// repeated fields, trailing bytes) and keeps lists of different lengths or bad ids for the
    /// node to refuse; the lists come back in order, as a set and indexed by client, also when
    /// the shard list comes first and the clients are in no order.
    #[test]
    fn a_close_request_is_split_checked_and_indexed_by_client() {
        let dir = crate::scratch_dir("close-spool");
        let (json, clients, shards, by) = (
            dir.join("c.json"),
            dir.join("c.clients"),
            dir.join("c.shards"),
            dir.join("c.by"),
        );
        let split_str = |body: &str| {
            std::fs::write(&json, body).unwrap();
            split(&json, &clients, &shards)
        };
        for bad in [
            r#"{"agreed":[1],"shards":["000000000000001"]}"#,
            r#"{"agreed":[1],"shards":[1]}"#,
            r#"{"agreed":[1]}"#,
            r#"{"shards":["0000000000000001"]}"#,
            r#"{"agreed":[1],"shards":["0000000000000001"],"extra":1}"#,
            r#"{"agreed":[1],"agreed":[1],"shards":["0000000000000001"]}"#,
            r#"{"agreed":[1],"shards":["0000000000000001"]} x"#,
            r#"{"agreed":[-1],"shards":["0000000000000001"]}"#,
            r#"{"agreed":[1],"shards":["0000000000000001"]"#,
            r#"[]"#,
            "",
        ] {
            assert!(
                matches!(split_str(bad), Err(SplitError::Malformed(_))),
                "{bad}"
            );
        }
        // Well-formed, refused later by the node: lengths differ, an id repeated or ≥ N.
        assert_eq!(
            split_str(r#"{"agreed":[1,2],"shards":["0000000000000001"]}"#).unwrap(),
            (2, 1)
        );
        split_str(r#"{"agreed":[3,3],"shards":["0000000000000001","0000000000000002"]}"#).unwrap();
        assert!(agreed_set(&clients, 10).is_err());
        split_str(r#"{"agreed":[10],"shards":["0000000000000001"]}"#).unwrap();
        assert!(agreed_set(&clients, 10).is_err());
        assert!(agreed_set(&clients, 11).is_ok());

        let n = 30_000u64;
        let mut ids: Vec<u64> = (0..n).filter(|c| c % 5 != 0).collect();
        // A fixed shuffle (no order at all), then ascending.
        let shuffled: Vec<u64> = {
            let mut v = ids.clone();
            for i in (1..v.len()).rev() {
                let j = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize % (i + 1);
                v.swap(i, j);
            }
            v
        };
        let shard_of = |c: u64| c.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 7;
        for order in [shuffled, std::mem::take(&mut ids)] {
            let hexes: Vec<String> = order
                .iter()
                .map(|&c| format!("{:016x}", shard_of(c)))
                .collect();
            for body in [
                serde_json::json!({"agreed": order, "shards": hexes}).to_string(),
                format!(
                    r#"{{"shards":{},"agreed":{}}}"#,
                    serde_json::to_string(&hexes).unwrap(),
                    serde_json::to_string(&order).unwrap()
                ),
            ] {
                assert_eq!(split_str(&body).unwrap(), (order.len(), order.len()));
                let listed: Vec<u64> = Words::open(&clients).unwrap().map(|w| w.unwrap()).collect();
                assert_eq!(listed, order);
                let set = agreed_set(&clients, n as usize).unwrap();
                assert_eq!(set.len(), order.len());
                assert!(order.iter().all(|&c| set.contains(ClientId(c))));
                index_by_client(&clients, &shards, &by).unwrap();
                let mut lookup = ByClient::open(&by).unwrap();
                for c in set.iter() {
                    assert_eq!(lookup.shard(c.0).unwrap(), shard_of(c.0), "client {c}");
                }
                // Backwards too.
                for &c in order.iter().take(100) {
                    assert_eq!(lookup.shard(c).unwrap(), shard_of(c));
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
