//! The messages of a verified round's check (`validity` in its spec), between the aggregator
//! (the relay) and the nodes:
//!
//! - `POST /rounds/{id}/verify` (`application/dpdist-client-list`): the clients to check, u64
//!   little-endian each, ascending. The node answers (`application/dpdist-verifier-shares`) one
//!   entry per listed client: u32 length then its verifier share, or length 0 when it holds no
//!   share of that client or already finds it malformed.
//! - `POST /rounds/{id}/close` (`application/dpdist-verified-close`): [`VerifiedClose`], the
//!   agreed set with the relay's verdict for each agreed client (ascending) and the clients
//!   found invalid. The aggregator records these bytes as the round's close and sends the same
//!   bytes on every retry.

use crate::{Error, Result};

/// Media type of a list of client ids.
pub const MEDIA_CLIENT_LIST: &str = "application/dpdist-client-list";
/// Media type of a node's verifier shares.
pub const MEDIA_VERIFIER_SHARES: &str = "application/dpdist-verifier-shares";
/// Media type of a verified round's close.
pub const MEDIA_VERIFIED_CLOSE: &str = "application/dpdist-verified-close";

const MAGIC: &[u8; 8] = b"DPDVCLO1";

/// A verified round's close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedClose {
    /// The agreed set as a pair set (`fixedpoint_shares::wire`), valid clients only.
    pub pairs: Vec<u8>,
    /// The relay's verdict for each agreed client, in ascending client order.
    pub verdicts: Vec<Vec<u8>>,
    /// Clients every node held whose contributions failed the check, ascending.
    pub invalid: Vec<u64>,
}

impl VerifiedClose {
    /// The bytes: magic, u64 length and the pair set, u32 count and (u32 length, bytes) per
    /// verdict, u32 count and u64 per invalid client; little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(self.pairs.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.pairs);
        out.extend_from_slice(&(self.verdicts.len() as u32).to_le_bytes());
        for v in &self.verdicts {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        out.extend_from_slice(&(self.invalid.len() as u32).to_le_bytes());
        for c in &self.invalid {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    /// Whether `bytes` start as a verified close (a recorded close is either this or a pair set).
    pub fn is_encoded(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    /// Reads [`VerifiedClose::encode`]'s bytes, all of them.
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] naming what is malformed.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader(bytes);
        if r.take(8)? != MAGIC {
            return Err(malformed("not a verified close"));
        }
        let pairs_len = usize::try_from(r.u64()?).map_err(|_| malformed("pair set too long"))?;
        let pairs = r.take(pairs_len)?.to_vec();
        let n = r.u32()? as usize;
        let mut verdicts = Vec::with_capacity(n.min(r.0.len() / 4));
        for _ in 0..n {
            let len = r.u32()? as usize;
            verdicts.push(r.take(len)?.to_vec());
        }
        let n = r.u32()? as usize;
        let mut invalid = Vec::with_capacity(n.min(r.0.len() / 8));
        for _ in 0..n {
            invalid.push(r.u64()?);
        }
        if !r.0.is_empty() {
            return Err(malformed("bytes after the invalid clients"));
        }
        Ok(VerifiedClose {
            pairs,
            verdicts,
            invalid,
        })
    }
}

/// A list of client ids' bytes.
pub fn encode_client_list(clients: &[u64]) -> Vec<u8> {
    clients.iter().flat_map(|c| c.to_le_bytes()).collect()
}

/// Reads a list of client ids: ascending, each below `n_clients`.
///
/// # Errors
/// [`Error::InvalidSpec`] naming what is wrong.
pub fn decode_client_list(bytes: &[u8], n_clients: usize) -> Result<Vec<u64>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(malformed("a client list is whole u64 words"));
    }
    let clients: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
        .collect();
    if clients.windows(2).any(|w| w[0] >= w[1]) {
        return Err(malformed("client ids must ascend"));
    }
    if clients.last().is_some_and(|&c| c >= n_clients as u64) {
        return Err(malformed("client id past the round's clients"));
    }
    Ok(clients)
}

/// A node's verifier shares (`None`: no share, or malformed) as bytes.
pub fn encode_verifier_shares(shares: &[Option<Vec<u8>>]) -> Vec<u8> {
    let mut out = Vec::new();
    for share in shares {
        let bytes = share.as_deref().unwrap_or_default();
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Reads `n` verifier shares.
///
/// # Errors
/// [`Error::Http`]: the node's answer is malformed.
pub fn decode_verifier_shares(bytes: &[u8], n: usize) -> Result<Vec<Option<Vec<u8>>>> {
    let mut r = Reader(bytes);
    let mut shares = Vec::with_capacity(n.min(bytes.len() / 4));
    for _ in 0..n {
        let len = r.u32().map_err(|e| Error::Http(e.to_string()))? as usize;
        let share = r.take(len).map_err(|e| Error::Http(e.to_string()))?;
        shares.push((len > 0).then(|| share.to_vec()));
    }
    if !r.0.is_empty() {
        return Err(Error::Http("bytes after the verifier shares".into()));
    }
    Ok(shares)
}

fn malformed(why: &str) -> Error {
    Error::InvalidSpec(format!("verified close: {why}"))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(malformed("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_reads_back_and_every_malformed_one_is_refused() {
        let close = VerifiedClose {
            pairs: vec![1, 2, 3],
            verdicts: vec![vec![9; 32], vec![]],
            invalid: vec![4, 7],
        };
        let bytes = close.encode();
        assert!(VerifiedClose::is_encoded(&bytes));
        assert_eq!(VerifiedClose::decode(&bytes).unwrap(), close);
        for cut in 0..bytes.len() {
            assert!(
                VerifiedClose::decode(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        assert!(VerifiedClose::decode(&[bytes.clone(), vec![0]].concat()).is_err());
        assert!(!VerifiedClose::is_encoded(b"{\"agreed\":[]}"));
    }

    #[test]
    fn client_lists_ascend_within_the_round() {
        assert_eq!(
            decode_client_list(&encode_client_list(&[0, 3, 9]), 10).unwrap(),
            vec![0, 3, 9]
        );
        assert!(decode_client_list(&encode_client_list(&[3, 3]), 10).is_err());
        assert!(decode_client_list(&encode_client_list(&[10]), 10).is_err());
        assert!(decode_client_list(&[0; 7], 10).is_err());
        let shares = vec![Some(vec![1, 2]), None, Some(vec![3])];
        assert_eq!(
            decode_verifier_shares(&encode_verifier_shares(&shares), 3).unwrap(),
            shares
        );
        assert!(decode_verifier_shares(&encode_verifier_shares(&shares), 2).is_err());
    }
}
