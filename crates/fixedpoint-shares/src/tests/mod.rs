//! Cross-module protocol tests: exact cancellation, share uniformity, error atomicity, noise.

mod attempts;
mod cancellation;
mod errors;
mod noise;
mod reuse;
mod uniformity;

use crate::message::{ShareMessage, SharePayload};
use crate::prg::{self, MaskDomain};
use crate::{ClientId, RoundId, RoundParams, ShareMode};

pub(crate) fn params(n: usize, m: u16, t: usize, d: usize, mode: ShareMode) -> RoundParams {
    RoundParams {
        round: RoundId(77),
        n_clients: n,
        n_nodes: m,
        max_dropped: t,
        dim: d,
        bound: 2.5,
        mode,
        noise_sigma_total: None,
        frac_bits: None,
    }
}

/// The share of `msg` as a vector (seeds expanded).
pub(crate) fn expand(msg: &ShareMessage) -> Vec<u64> {
    match &msg.payload {
        SharePayload::Full(v) => v.clone(),
        SharePayload::Seed(seed) => {
            let mut out = vec![0; msg.dim];
            let domain = MaskDomain {
                round: msg.round,
                client: msg.client,
                node: msg.node,
            };
            prg::fill_mask(seed, domain, &mut out);
            out
        }
    }
}

/// round(x·2^f), computed here independently of the codec.
pub(crate) fn quantise(x: f64, frac_bits: u32) -> i128 {
    (x * 2f64.powi(frac_bits as i32)).round() as i128
}

pub(crate) fn ids(v: &[u64]) -> Vec<ClientId> {
    v.iter().map(|&i| ClientId(i)).collect()
}
