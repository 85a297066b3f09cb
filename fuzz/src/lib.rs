//! Fixtures shared by the fuzz targets and the seed-corpus generator: the small rounds that
//! fuzzed bytes are fed into, and a splitter of one fuzz input into several messages.

pub mod node_http;

use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};

/// Round id of every fixture round (the corpus messages carry it, so they reach deep checks).
pub const ROUND: RoundId = RoundId(7);
/// N of the fixture rounds.
pub const N_CLIENTS: usize = 5;
/// M of the fixture rounds.
pub const N_NODES: u16 = 3;
/// T of the fixture rounds.
pub const MAX_DROPPED: usize = 1;
/// d of the fixture rounds.
pub const DIM: usize = 8;

/// The fixture round in `mode` (exact sum, no noise, |x| <= 1).
pub fn fixture_config(mode: ShareMode) -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: ROUND,
        n_clients: N_CLIENTS,
        n_nodes: N_NODES,
        max_dropped: MAX_DROPPED,
        dim: DIM,
        bound: 1.0,
        mode,
        noise_sigma_total: None,
        frac_bits: None,
    })
    .expect("the fixture round is valid")
}

/// Seed mode for an even selector byte, full mode for an odd one.
pub fn mode_from(byte: u8) -> ShareMode {
    if byte & 1 == 0 {
        ShareMode::Seed
    } else {
        ShareMode::Full
    }
}

/// Splits `data` into records `[op: u8][len: u16 LE][len bytes]` (the last one truncated to
/// what is left). The same framing is used by the corpus generator.
pub fn records(mut data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((&op, rest)) = data.split_first() {
        let Some((len, rest)) = rest.split_first_chunk::<2>() else {
            break;
        };
        let len = usize::from(u16::from_le_bytes(*len)).min(rest.len());
        let (body, rest) = rest.split_at(len);
        out.push((op, body));
        data = rest;
    }
    out
}

/// Appends one record in the framing of [`records`].
pub fn push_record(out: &mut Vec<u8>, op: u8, body: &[u8]) {
    let len = u16::try_from(body.len()).expect("corpus records are small");
    out.push(op);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
}
