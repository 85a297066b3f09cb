//! Bytes of a node sum (`application/dpdist-node-sum`).
//!
//! Layout (big-endian): `"dpdsum01"` ‖ round u64 ‖ node u16 ‖ frac_bits u32 ‖ universe N u64 ‖
//! count u64 ‖ count × client id u64 (ascending) ‖ d u64 ‖ d × u64 sum. Decoding checks every
//! length against the round before allocating.

use fixedpoint_shares::{ClientId, ClientSet, NodeIndex, NodeSum, RoundConfig, RoundId};

use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"dpdsum01";

/// Encodes a node sum.
pub fn encode(s: &NodeSum) -> Vec<u8> {
    let ids: Vec<ClientId> = s.clients.iter().collect();
    let mut out = Vec::with_capacity(46 + 8 * (ids.len() + s.sum.len()));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&s.round.0.to_be_bytes());
    out.extend_from_slice(&s.node.0.to_be_bytes());
    out.extend_from_slice(&s.frac_bits.to_be_bytes());
    out.extend_from_slice(&(s.clients.universe() as u64).to_be_bytes());
    out.extend_from_slice(&(ids.len() as u64).to_be_bytes());
    for id in ids {
        out.extend_from_slice(&id.0.to_be_bytes());
    }
    out.extend_from_slice(&(s.sum.len() as u64).to_be_bytes());
    for w in &s.sum {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(Error::Http("node sum truncated".into()));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }
}

/// Decodes a node sum of `config`'s round; every count is checked against the round and the
/// remaining bytes before anything is allocated.
pub fn decode(bytes: &[u8], config: &RoundConfig) -> Result<NodeSum> {
    let bad = |m: &str| Error::Http(format!("malformed node sum: {m}"));
    let mut r = Reader(bytes);
    if r.take(8)? != MAGIC {
        return Err(bad("magic"));
    }
    let round = RoundId(r.u64()?);
    let node = NodeIndex(u16::from_be_bytes(
        r.take(2)?.try_into().unwrap_or_default(),
    ));
    let frac_bits = u32::from_be_bytes(r.take(4)?.try_into().unwrap_or_default());
    let universe = r.u64()?;
    if universe != config.n_clients() as u64 {
        return Err(bad("universe is not N"));
    }
    let count = r.u64()?;
    if count > universe || count.saturating_mul(8) > r.0.len() as u64 {
        return Err(bad("client count"));
    }
    let mut ids = Vec::with_capacity(count as usize);
    for _ in 0..count {
        ids.push(ClientId(r.u64()?));
    }
    let clients = ClientSet::from_ids(config.n_clients(), &ids)?;
    let dim = r.u64()?;
    if dim != config.dim() as u64 || dim.saturating_mul(8) != r.0.len() as u64 {
        return Err(bad("dimension"));
    }
    let mut sum = Vec::with_capacity(dim as usize);
    for _ in 0..dim {
        sum.push(r.u64()?);
    }
    Ok(NodeSum {
        round,
        node,
        frac_bits,
        clients,
        sum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixedpoint_shares::{RoundParams, ShareMode};

    #[test]
    fn round_trip_and_truncations_fail() {
        let config = RoundConfig::new(&RoundParams {
            round: RoundId(3),
            n_clients: 5,
            n_nodes: 2,
            max_dropped: 1,
            dim: 2,
            bound: 1.0,
            mode: ShareMode::Full,
            noise_sigma_total: None,
            frac_bits: None,
        })
        .unwrap();
        let s = NodeSum {
            round: RoundId(3),
            node: NodeIndex(1),
            frac_bits: 20,
            clients: ClientSet::from_ids(5, &[ClientId(0), ClientId(2), ClientId(4)]).unwrap(),
            sum: vec![u64::MAX, 7],
        };
        let bytes = encode(&s);
        assert_eq!(decode(&bytes, &config).unwrap(), s);
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len], &config).is_err());
        }
        let mut huge = bytes.clone();
        huge[30..38].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(decode(&huge, &config).is_err());
    }
}
