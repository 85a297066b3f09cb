//! A whole round in one process: clients → M compute nodes → aggregator, for simulations,
//! examples and the learners that push their statistics through DCA.
//!
//! Clients are produced lazily and processed in bounded batches (parallel with rayon), so the
//! memory is O(batch · M · d + threads · d + N) rather than O(N · M · d).

use dp_noise::rng::RngSource;
use rayon::prelude::*;

use crate::aggregator::{Aggregator, Release};
use crate::client::Client;
use crate::client_set::{ClientSet, agree};
use crate::ids::{ClientId, NodeIndex};
use crate::message::ShareMessage;
use crate::node::ComputeNode;
use crate::round::{RoundConfig, ShareMode};
use crate::{Error, Result};

/// Words of share messages held at once (32 MiB).
const BATCH_WORDS: usize = 1 << 22;

/// Runs one round over `inputs[i]` = client i's vector (N vectors of length d). Clients in
/// `dropped` send nothing. Client i draws its seeds and noise from `rng.derive(i)`.
///
/// # Errors
/// [`Error::LengthMismatch`] (not N inputs, or an input not of length d), any client error
/// (bad values), [`Error::TooManyMissing`] if more than T clients dropped (nothing released).
pub fn simulate_round<V: AsRef<[f64]> + Sync>(
    config: &RoundConfig,
    inputs: &[V],
    dropped: &[ClientId],
    rng: RngSource,
) -> Result<Release> {
    if inputs.len() != config.n_clients() {
        return Err(Error::LengthMismatch {
            what: "client inputs",
            expected: config.n_clients(),
            actual: inputs.len(),
        });
    }
    simulate_round_with(
        config,
        |i, out| {
            let v = inputs.get(i).map(AsRef::as_ref).unwrap_or_default();
            if v.len() != out.len() {
                return Err(Error::LengthMismatch {
                    what: "client vector",
                    expected: out.len(),
                    actual: v.len(),
                });
            }
            out.copy_from_slice(v);
            Ok(())
        },
        dropped,
        rng,
    )
}

/// Like [`simulate_round`], but client i's vector is written by `input(i, out)` when the client
/// runs (`out` has length d), so N·d never has to be in memory at once.
///
/// # Errors
/// As [`simulate_round`], plus whatever `input` returns.
pub fn simulate_round_with<F>(
    config: &RoundConfig,
    input: F,
    dropped: &[ClientId],
    rng: RngSource,
) -> Result<Release>
where
    F: Fn(usize, &mut [f64]) -> Result<()> + Sync,
{
    let n = config.n_clients();
    let dropped = ClientSet::from_ids(n, dropped)?;
    if dropped.len() > config.max_dropped() {
        return Err(Error::TooManyMissing {
            missing: dropped.len(),
            max_dropped: config.max_dropped(),
            n_clients: n,
        });
    }
    let mut nodes = (0..config.n_nodes())
        .map(|k| ComputeNode::new(config, NodeIndex(k)))
        .collect::<Result<Vec<_>>>()?;
    let participants: Vec<u64> = (0..n as u64)
        .filter(|&i| !dropped.contains(ClientId(i)))
        .collect();
    let words_per_client = match config.mode() {
        ShareMode::Full => config.dim().saturating_mul(usize::from(config.n_nodes())),
        ShareMode::Seed => config.dim(),
    };
    let batch = (BATCH_WORDS / words_per_client.max(1)).clamp(1, 4096);
    for ids in participants.chunks(batch) {
        let shards = ids
            .par_iter()
            .map_init(
                || vec![0.0; config.dim()],
                |values, &i| {
                    input(i as usize, values)?;
                    Client::new(config, ClientId(i), rng.derive(i))?.shard(values)
                },
            )
            .collect::<Result<Vec<_>>>()?;
        let mut per_node: Vec<Vec<ShareMessage>> = nodes
            .iter()
            .map(|_| Vec::with_capacity(ids.len()))
            .collect();
        for messages in shards {
            for (slot, msg) in per_node.iter_mut().zip(messages) {
                slot.push(msg);
            }
        }
        for (node, msgs) in nodes.iter_mut().zip(&per_node) {
            node.absorb_batch(msgs)?;
        }
    }
    let received: Vec<&ClientSet> = nodes.iter().map(ComputeNode::received).collect();
    let agreed = agree(&received)?;
    let mut aggregator = Aggregator::new(config);
    for node in &nodes {
        aggregator.add(&node.finalize(&agreed)?)?;
    }
    aggregator.release()
}
