//! A whole round in one process: clients → M compute nodes → aggregator, for simulations,
//! examples and the learners that push their statistics through DCA.
//!
//! Clients are produced lazily. When one set of M node accumulators per worker is small
//! (<= 32 MiB in all), each rayon worker shards its clients and absorbs their shares into its
//! own node set at once, and the sets are merged at the end (memory O(threads · M · d + N), no
//! per-batch message buffers); otherwise clients run in bounded batches absorbed in parallel
//! (memory O(batch · M · d + threads · d + N)). Both give the identical release.

use dp_noise::rng::RngSource;
use rayon::prelude::*;

use crate::aggregator::{Aggregator, Release};
use crate::client::Client;
use crate::client_set::ClientSet;
use crate::ids::{ClientId, NodeIndex};
use crate::message::ShareMessage;
use crate::node::ComputeNode;
use crate::round::{RoundConfig, ShareMode};
use crate::shard_set::{ShardSet, agree};
use crate::{Error, Result};

/// Words of share messages held at once (32 MiB).
const BATCH_WORDS: usize = 1 << 22;

/// Runs one round over `inputs[i]` = client i's vector (N vectors of length d). Clients in
/// `dropped` send nothing. Client i draws its seeds and noise from `rng.derive(i)`.
///
/// # Errors
/// [`Error::LengthMismatch`] (not N inputs, or an input not of length d), any client error
/// (bad values), [`Error::TooManyDropped`] if more than T clients dropped (nothing released).
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
        return Err(Error::TooManyDropped {
            missing: dropped.len(),
            max_dropped: config.max_dropped(),
            n_clients: n,
        });
    }
    let participants: Vec<u64> = (0..n as u64)
        .filter(|&i| !dropped.contains(ClientId(i)))
        .collect();
    let node_set_words = config
        .dim()
        .saturating_mul(usize::from(config.n_nodes()))
        .saturating_mul(rayon::current_num_threads());
    let nodes = if node_set_words <= PIPELINE_MAX_WORDS {
        pipelined(config, &input, &participants, &rng)?
    } else {
        batched(config, &input, &participants, &rng)?
    };
    finish(config, &nodes)
}

/// Words of per-worker node sets the pipelined path may hold at once (32 MiB).
const PIPELINE_MAX_WORDS: usize = 1 << 22;

fn new_nodes(config: &RoundConfig) -> Result<Vec<ComputeNode>> {
    (0..config.n_nodes())
        .map(|k| ComputeNode::new(config, NodeIndex(k)))
        .collect()
}

/// Each worker runs shard → absorb for its own clients into its own set of M nodes while the
/// shares are still in cache, then the sets are merged: no batch of messages is ever held, and
/// memory is O(workers · M · d + N).
fn pipelined<F>(
    config: &RoundConfig,
    input: &F,
    participants: &[u64],
    rng: &RngSource,
) -> Result<Vec<ComputeNode>>
where
    F: Fn(usize, &mut [f64]) -> Result<()> + Sync,
{
    // Two pieces per worker: some balance when workers run at different speeds.
    let pieces = 2 * rayon::current_num_threads().max(1);
    let per = participants.len().div_ceil(pieces).max(1);
    let merged = participants
        .par_chunks(per)
        .map(|ids| {
            let mut nodes = new_nodes(config)?;
            let mut values = vec![0.0; config.dim()];
            // One set of share vectors per worker, reused by every client it shards.
            let mut messages = Vec::new();
            for &i in ids {
                input(i as usize, &mut values)?;
                Client::new(config, ClientId(i), rng.derive(i))?
                    .shard_into(&values, &mut messages)?;
                for (node, msg) in nodes.iter_mut().zip(&messages) {
                    node.absorb(msg)?;
                }
            }
            Ok(nodes)
        })
        .try_reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                x.merge(y)?;
            }
            Ok(a)
        });
    merged.unwrap_or_else(|| new_nodes(config))
}

/// Clients in bounded batches (<= 32 MiB of messages), each node absorbing a whole batch in
/// parallel: for node sets too large to hold one per worker.
fn batched<F>(
    config: &RoundConfig,
    input: &F,
    participants: &[u64],
    rng: &RngSource,
) -> Result<Vec<ComputeNode>>
where
    F: Fn(usize, &mut [f64]) -> Result<()> + Sync,
{
    let mut nodes = new_nodes(config)?;
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
    Ok(nodes)
}

/// Agreement, node sums and release.
fn finish(config: &RoundConfig, nodes: &[ComputeNode]) -> Result<Release> {
    let received: Vec<&ShardSet> = nodes.iter().map(ComputeNode::received).collect();
    let agreed = agree(&received)?;
    let mut aggregator = Aggregator::new(config)?;
    for node in nodes {
        aggregator.add(&node.finalize(&agreed)?)?;
    }
    aggregator.release()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RoundId, RoundParams};

    /// The pipelined and the batched path must release exactly the same thing for the same
    /// inputs, drops and seeds (wrapping sums do not depend on the order of absorption).
    #[test]
    fn pipelined_and_batched_rounds_release_the_same() {
        for mode in [ShareMode::Seed, ShareMode::Full] {
            for noise in [None, Some(0.75)] {
                let config = RoundConfig::new(&RoundParams {
                    round: RoundId(3),
                    n_clients: 37,
                    n_nodes: 4,
                    max_dropped: 5,
                    dim: 301,
                    bound: 1.5,
                    mode,
                    noise_sigma_total: noise,
                    frac_bits: None,
                })
                .unwrap();
                let input = |i: usize, out: &mut [f64]| {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = ((i * 31 + j * 7) % 29) as f64 / 10.0 - 1.4;
                    }
                    Ok(())
                };
                let participants: Vec<u64> = (0..37).filter(|i| i % 9 != 4).collect();
                let rng = RngSource::InsecureFixedSeed(11);
                let pipelined = pipelined(&config, &input, &participants, &rng).unwrap();
                let batched = batched(&config, &input, &participants, &rng).unwrap();
                let a = finish(&config, &pipelined).unwrap();
                let b = finish(&config, &batched).unwrap();
                assert_eq!(a, b, "mode {mode:?} noise {noise:?}");
                assert_eq!(a.n_included, participants.len());
            }
        }
    }

    #[test]
    fn merge_refuses_overlapping_clients_and_changes_nothing() {
        let config = RoundConfig::new(&RoundParams {
            round: RoundId(3),
            n_clients: 4,
            n_nodes: 2,
            max_dropped: 0,
            dim: 5,
            bound: 1.0,
            mode: ShareMode::Seed,
            noise_sigma_total: None,
            frac_bits: None,
        })
        .unwrap();
        let shard = |i: u64| {
            Client::new(&config, ClientId(i), RngSource::InsecureFixedSeed(i))
                .unwrap()
                .shard(&[0.5; 5])
                .unwrap()
        };
        let (s0, s1) = (shard(0), shard(1));
        for k in 0..2 {
            let mut a = ComputeNode::new(&config, NodeIndex(k)).unwrap();
            let mut b = ComputeNode::new(&config, NodeIndex(k)).unwrap();
            a.absorb(&s0[usize::from(k)]).unwrap();
            b.absorb(&s0[usize::from(k)]).unwrap();
            b.absorb(&s1[usize::from(k)]).unwrap();
            let before = a.snapshot();
            assert_eq!(
                a.merge(&b),
                Err(Error::DuplicateClient {
                    client: ClientId(0)
                })
            );
            assert_eq!(a.snapshot(), before);
            // Disjoint: equals absorbing both.
            let mut c = ComputeNode::new(&config, NodeIndex(k)).unwrap();
            c.absorb(&s1[usize::from(k)]).unwrap();
            a.merge(&c).unwrap();
            let mut both = ComputeNode::new(&config, NodeIndex(k)).unwrap();
            both.absorb(&s0[usize::from(k)]).unwrap();
            both.absorb(&s1[usize::from(k)]).unwrap();
            assert_eq!(a.snapshot(), both.snapshot());
            let other_node = ComputeNode::new(&config, NodeIndex(1 - k)).unwrap();
            assert!(matches!(a.merge(&other_node), Err(Error::WrongNode { .. })));
        }
    }
}
