//! Masks cancel exactly: the released sum is the sum of the quantised inputs, bit for bit.

use dp_noise::rng::RngSource;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::{expand, ids, params, quantise};
use crate::{
    Aggregator, Client, ClientId, ClientSet, ComputeNode, Error, NodeIndex, RoundConfig,
    RunningSum, ShardSet, ShareMode, agree, simulate_round,
};

/// Inputs in [−bound, bound], with the bound itself and zero mixed in.
fn inputs(seed: u64, n: usize, d: usize, bound: f64) -> Vec<Vec<f64>> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..d)
                .map(|j| {
                    let x = match rng.next_u32() % 8 {
                        0 => bound,
                        1 => -bound,
                        2 => 0.0,
                        _ => bound * ((rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0),
                    };
                    // Thirds are not dyadic: exercises rounding.
                    if j % 17 == 3 { x / 3.0 } else { x }
                })
                .collect()
        })
        .collect()
}

/// Σ over included clients of round(x·2^f), exact in i128.
fn exact_sum(inputs: &[Vec<f64>], included: &ClientSet, frac_bits: u32) -> Vec<i128> {
    let d = inputs.first().map_or(0, Vec::len);
    let mut sum = vec![0i128; d];
    for id in included.iter() {
        for (s, &x) in sum.iter_mut().zip(&inputs[id.0 as usize]) {
            *s += quantise(x, frac_bits);
        }
    }
    sum
}

fn cases() -> u32 {
    if cfg!(debug_assertions) { 12 } else { 256 }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn released_sum_equals_sum_of_quantised_inputs_bit_for_bit(
        n in 2usize..=200,
        m in 2u16..12,
        d in 1usize..=300,
        full_mode in any::<bool>(),
        t_frac in 0.0f64..0.5,
        drop_frac in 0.0f64..=1.0,
        seed in any::<u64>(),
    ) {
        let mode = if full_mode { ShareMode::Full } else { ShareMode::Seed };
        let t = ((n - 1) as f64 * t_frac) as usize;
        let config = RoundConfig::new(&params(n, m, t, d, mode)).unwrap();
        let x = inputs(seed, n, d, 2.5);
        // Drop a random subset of at most T clients.
        let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 1);
        let n_drop = (t as f64 * drop_frac) as usize;
        let mut dropped: Vec<u64> = Vec::new();
        while dropped.len() < n_drop {
            let c = rng.next_u64() % n as u64;
            if !dropped.contains(&c) {
                dropped.push(c);
            }
        }
        let release = simulate_round(&config, &x, &ids(&dropped), RngSource::InsecureFixedSeed(seed)).unwrap();
        let mut included = ClientSet::full(n);
        for &c in &dropped {
            included.remove(ClientId(c));
        }
        prop_assert_eq!(&release.clients, &included);
        prop_assert_eq!(release.n_included, n - n_drop);
        let f = config.codec().frac_bits();
        let want = exact_sum(&x, &included, f);
        let got: Vec<i128> = release.sum_units.iter().map(|&s| i128::from(s)).collect();
        prop_assert_eq!(&got, &want);
        let scale = 2f64.powi(f as i32);
        let want_decoded: Vec<f64> = want.iter().map(|&s| s as i64 as f64 / scale).collect();
        prop_assert_eq!(&release.sum, &want_decoded);

        // One more dropout than tolerated: refused.
        let mut too_many = dropped.clone();
        for c in 0..n as u64 {
            if too_many.len() > t {
                break;
            }
            if !too_many.contains(&c) {
                too_many.push(c);
            }
        }
        let refused = simulate_round(&config, &x, &ids(&too_many), RngSource::InsecureFixedSeed(seed));
        let is_refusal = matches!(refused, Err(Error::TooManyDropped { .. }));
        prop_assert!(is_refusal);
    }
}

/// The same through the protocol objects, with nodes that each miss different clients: the
/// agreed set is the intersection, seed shares of excluded clients are removed by the node, full
/// shares by an explicit retract, and the aggregator refuses once more than T are missing.
/// Nodes made `without_kept_seeds` need the excluded seed shares retracted too.
#[test]
fn asymmetric_receipt_is_resolved_by_the_agreed_set() {
    let modes = [ShareMode::Seed, ShareMode::Full];
    for (mode, keep_seeds) in modes.into_iter().flat_map(|m| [(m, true), (m, false)]) {
        let make = if keep_seeds {
            ComputeNode::new
        } else {
            ComputeNode::without_kept_seeds
        };
        let (n, m, t, d) = (12usize, 3u16, 3usize, 40usize);
        let config = RoundConfig::new(&params(n, m, t, d, mode)).unwrap();
        let x = inputs(5, n, d, 2.5);
        let shards: Vec<_> = (0..n)
            .map(|i| {
                Client::new(
                    &config,
                    ClientId(i as u64),
                    RngSource::InsecureFixedSeed(i as u64),
                )
                .unwrap()
                .shard(&x[i])
                .unwrap()
            })
            .collect();
        // Client 2 never reaches node 1; client 7 never reaches node 2; client 9 never node 0.
        let lost = |client: usize, node: u16| matches!((client, node), (2, 1) | (7, 2) | (9, 0));
        let mut nodes: Vec<ComputeNode> = (0..m)
            .map(|k| make(&config, NodeIndex(k)).unwrap())
            .collect();
        for (i, msgs) in shards.iter().enumerate() {
            for (k, msg) in msgs.iter().enumerate() {
                if !lost(i, k as u16) {
                    nodes[k].absorb(msg).unwrap();
                }
            }
        }
        let received: Vec<&ShardSet> = nodes.iter().map(ComputeNode::received).collect();
        let agreed = agree(&received).unwrap();
        assert_eq!(agreed.iter().collect::<Vec<_>>().len(), n - 3);
        // Node 0 holds full shares of clients 2 and 7, which are outside the agreed set.
        assert!(matches!(
            nodes[0].finalize(&agreed),
            Err(Error::NeedsRetraction {
                client: ClientId(2)
            })
        ));
        for c in [2usize, 7] {
            nodes[0].retract(&shards[c][0]).unwrap();
        }
        if mode == ShareMode::Seed && !keep_seeds {
            // Node 1 holds client 7's seed and node 2 client 2's, both outside the set.
            assert!(matches!(
                nodes[1].finalize(&agreed),
                Err(Error::NeedsRetraction {
                    client: ClientId(7)
                })
            ));
            assert!(matches!(
                nodes[2].finalize(&agreed),
                Err(Error::NeedsRetraction {
                    client: ClientId(2)
                })
            ));
        }
        if mode == ShareMode::Full || !keep_seeds {
            // In full mode nodes 1 and 2 hold full shares too; without kept seeds, seed
            // shares are retracted like full ones.
            nodes[1].retract(&shards[7][1]).unwrap();
            nodes[1].retract(&shards[9][1]).unwrap();
            nodes[2].retract(&shards[2][2]).unwrap();
            nodes[2].retract(&shards[9][2]).unwrap();
        }
        let mut agg = Aggregator::new(&config).unwrap();
        for node in &nodes {
            agg.add(&node.finalize(&agreed).unwrap()).unwrap();
        }
        let release = agg.release().unwrap();
        let want = exact_sum(&x, agreed.clients(), config.codec().frac_bits());
        let got: Vec<i128> = release.sum_units.iter().map(|&s| i128::from(s)).collect();
        assert_eq!(got, want, "{mode:?}, keep seeds {keep_seeds}");
        // Without client 0 as well, 4 > T = 3 are missing: every node refuses.
        let mut smaller = agreed.clone();
        smaller.remove(ClientId(0));
        for node in &nodes {
            assert!(matches!(
                node.finalize(&smaller),
                Err(Error::TooManyDropped { missing: 4, .. })
            ));
        }
    }
}

/// A [`RunningSum`] (no attempts, no seeds) gives the same node sums as a [`ComputeNode`] made
/// `without_kept_seeds`, once the received clients outside the agreed set are retracted; it
/// refuses a set that names a client it did not receive, one that leaves a received client
/// unretracted, one missing more than T, and a client absorbed twice.
#[test]
fn a_running_sum_finalizes_like_a_compute_node() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let (n, m, t, d) = (10usize, 3u16, 2usize, 37usize);
        let config = RoundConfig::new(&params(n, m, t, d, mode)).unwrap();
        let x = inputs(11, n, d, 1.5);
        let shards: Vec<_> = (0..n)
            .map(|i| {
                Client::new(
                    &config,
                    ClientId(i as u64),
                    RngSource::InsecureFixedSeed(i as u64),
                )
                .unwrap()
                .shard(&x[i])
                .unwrap()
            })
            .collect();
        // Client 4 never reaches node 2.
        for k in 0..m {
            let mut node = ComputeNode::without_kept_seeds(&config, NodeIndex(k)).unwrap();
            let mut sum = RunningSum::new(&config, NodeIndex(k)).unwrap();
            for (i, msgs) in shards.iter().enumerate() {
                if (i, k) != (4, 2) {
                    node.absorb(&msgs[usize::from(k)]).unwrap();
                    sum.absorb(&msgs[usize::from(k)]).unwrap();
                }
            }
            assert!(matches!(
                sum.absorb(&shards[0][usize::from(k)]),
                Err(Error::DuplicateClient { .. })
            ));
            let mut agreed = node.received().clone();
            agreed.remove(ClientId(4));
            agreed.remove(ClientId(6));
            assert!(matches!(
                sum.finalize(agreed.clone()),
                Err(Error::NeedsRetraction { .. })
            ));
            for c in [4usize, 6] {
                if (c, k) != (4, 2) {
                    node.retract(&shards[c][usize::from(k)]).unwrap();
                    sum.retract(&shards[c][usize::from(k)]).unwrap();
                }
            }
            assert!(matches!(
                sum.retract(&shards[6][usize::from(k)]),
                Err(Error::NotAbsorbed { .. })
            ));
            let mut not_received = agreed.clone();
            not_received.insert(ClientId(6), crate::ShardId(0)).unwrap();
            assert!(matches!(
                sum.finalize(not_received.clone()),
                Err(Error::AgreedNotReceived { .. })
            ));
            let mut too_few = agreed.clone();
            too_few.remove(ClientId(0));
            assert!(matches!(
                sum.finalize(too_few.clone()),
                Err(Error::TooManyDropped { missing: 3, .. })
            ));
            assert_eq!(sum.received(), agreed.clients());
            let want = node.finalize(&agreed).unwrap();
            assert_eq!(sum.finalize(agreed).unwrap(), want, "{mode:?}, node {k}");
        }
    }
}

/// Each client's M shares sum to its encoded vector; any M − 1 of them do not (so the masks are
/// doing something), in both modes.
#[test]
fn shares_of_one_client_sum_to_its_encoding() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = RoundConfig::new(&params(4, 5, 0, 33, mode)).unwrap();
        let x = inputs(9, 1, 33, 2.5).remove(0);
        let msgs = Client::new(&config, ClientId(3), RngSource::InsecureFixedSeed(1))
            .unwrap()
            .shard(&x)
            .unwrap();
        assert_eq!(msgs.len(), 5);
        let mut total = vec![0u64; 33];
        for (k, msg) in msgs.iter().enumerate() {
            assert_eq!(msg.node, NodeIndex(k as u16));
            assert_eq!(msg.client, ClientId(3));
            let want_kind = if k == 0 || mode == ShareMode::Full {
                "full"
            } else {
                "seed"
            };
            assert_eq!(msg.payload.kind(), want_kind);
            crate::kernels::add_assign(&mut total, &expand(msg)).unwrap();
        }
        let f = config.codec().frac_bits();
        let want: Vec<u64> = x.iter().map(|&v| quantise(v, f) as i64 as u64).collect();
        assert_eq!(total, want);
        assert_ne!(total, {
            let mut partial = vec![0u64; 33];
            for msg in &msgs[1..] {
                crate::kernels::add_assign(&mut partial, &expand(msg)).unwrap();
            }
            partial
        });
    }
}

/// Big batches take the parallel paths (coordinate split and per-thread accumulators); the
/// result must equal one-at-a-time absorption exactly.
#[test]
fn parallel_batches_equal_sequential_absorption() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for (n, d) in [(6usize, 9000usize), (600, 60)] {
        for mode in [ShareMode::Seed, ShareMode::Full] {
            let config = RoundConfig::new(&params(n, 3, 0, d, mode)).unwrap();
            let x = inputs(n as u64, n, d, 2.5);
            let shards: Vec<_> = (0..n)
                .map(|i| {
                    Client::new(
                        &config,
                        ClientId(i as u64),
                        RngSource::InsecureFixedSeed(i as u64),
                    )
                    .unwrap()
                    .shard(&x[i])
                    .unwrap()
                })
                .collect();
            for k in 0..3u16 {
                let batch: Vec<_> = shards.iter().map(|s| s[usize::from(k)].clone()).collect();
                let mut one_by_one = ComputeNode::new(&config, NodeIndex(k)).unwrap();
                for msg in &batch {
                    one_by_one.absorb(msg).unwrap();
                }
                let mut batched = ComputeNode::new(&config, NodeIndex(k)).unwrap();
                pool.install(|| batched.absorb_batch(&batch)).unwrap();
                assert_eq!(
                    batched.snapshot(),
                    one_by_one.snapshot(),
                    "n {n} d {d} node {k}"
                );
            }
        }
    }
}

/// Absorption is cache-blocked (128 KiB pieces of the accumulator, messages inner, full shares
/// four at a time, seed shares expanded from each block's keystream offset). With d spanning
/// several blocks, split over 1 and 4 threads, each node's accumulator must equal the plain
/// wrapping sum of the expanded shares, computed here word by word.
#[test]
fn blocked_absorption_equals_the_plain_sum_of_expanded_shares() {
    let (n, d) = (9usize, 40_001usize);
    for threads in [1, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for mode in [ShareMode::Seed, ShareMode::Full] {
            let config = RoundConfig::new(&params(n, 3, 0, d, mode)).unwrap();
            let x = inputs(7, n, d, 2.5);
            let shards: Vec<_> = (0..n)
                .map(|i| {
                    Client::new(
                        &config,
                        ClientId(i as u64),
                        RngSource::InsecureFixedSeed(100 + i as u64),
                    )
                    .unwrap()
                    .shard(&x[i])
                    .unwrap()
                })
                .collect();
            for k in 0..3u16 {
                let batch: Vec<_> = shards.iter().map(|s| s[usize::from(k)].clone()).collect();
                let mut want = vec![0u64; d];
                for msg in &batch {
                    for (w, s) in want.iter_mut().zip(expand(msg)) {
                        *w = w.wrapping_add(s);
                    }
                }
                let mut node = ComputeNode::new(&config, NodeIndex(k)).unwrap();
                pool.install(|| node.absorb_batch(&batch)).unwrap();
                assert!(
                    node.snapshot().0 == want,
                    "threads {threads} mode {mode:?} node {k}"
                );
            }
        }
    }
}

/// [`RunningSum::write_sum`] (agreed set as bits, attempts streamed) writes exactly the bytes of
/// [`RunningSum::finalize`]'s node sum, which equals a [`ComputeNode`]'s, on random rounds:
/// clients that reach only some nodes, clients that sharded twice with the nodes holding
/// different attempts (left out by the agreement), clients excluded on top (retracted), both
/// modes. It refuses pairs out of order, too few or too many, and what `finalize` refuses.
#[test]
fn a_streamed_node_sum_is_the_encoded_finalize_on_random_rounds() {
    use crate::{Encode, ShardId};
    let mut rng = ChaCha20Rng::seed_from_u64(0x5eed);
    for trial in 0..24u64 {
        let mode = if trial % 2 == 0 {
            ShareMode::Seed
        } else {
            ShareMode::Full
        };
        let n = 3 + (rng.next_u32() % 60) as usize;
        let m = 2 + (rng.next_u32() % 3) as u16;
        let d = 1 + (rng.next_u32() % 70) as usize;
        let config = RoundConfig::new(&params(n, m, n - 1, d, mode)).unwrap();
        let x = inputs(trial, n, d, 2.0);
        // Every client shards once; about one in four shards a second time (a retry).
        let attempts: Vec<Vec<_>> = (0..n)
            .map(|i| {
                let tries = if rng.next_u32() % 4 == 0 { 2 } else { 1 };
                (0..tries)
                    .map(|a| {
                        Client::new(
                            &config,
                            ClientId(i as u64),
                            RngSource::InsecureFixedSeed(trial * 1000 + 10 * i as u64 + a),
                        )
                        .unwrap()
                        .shard(&x[i])
                        .unwrap()
                    })
                    .collect()
            })
            .collect();
        // Which attempt each node holds of each client (None: never reached it).
        let held: Vec<Vec<Option<usize>>> = (0..m)
            .map(|_| {
                attempts
                    .iter()
                    .map(|a| (rng.next_u32() % 8 != 0).then(|| (rng.next_u32() as usize) % a.len()))
                    .collect()
            })
            .collect();
        let mut sums = Vec::new();
        let mut received = Vec::new();
        for k in 0..m {
            let mut sum = RunningSum::new(&config, NodeIndex(k)).unwrap();
            let mut node = ComputeNode::without_kept_seeds(&config, NodeIndex(k)).unwrap();
            for (i, a) in held[usize::from(k)].iter().enumerate() {
                if let Some(a) = a {
                    sum.absorb(&attempts[i][*a][usize::from(k)]).unwrap();
                    node.absorb(&attempts[i][*a][usize::from(k)]).unwrap();
                }
            }
            received.push(node.received().clone());
            sums.push((sum, node));
        }
        let mut agreed = agree(&received.iter().collect::<Vec<_>>()).unwrap();
        // Some agreed clients are excluded on top (as if the aggregator dropped them).
        for c in agreed.clients().iter().collect::<Vec<_>>() {
            if rng.next_u32() % 6 == 0 {
                agreed.remove(c);
            }
        }
        for (k, (sum, node)) in sums.iter_mut().enumerate() {
            for (i, a) in held[k].iter().enumerate() {
                if let Some(a) = a
                    && !agreed.clients().contains(ClientId(i as u64))
                {
                    sum.retract(&attempts[i][*a][k]).unwrap();
                    node.retract(&attempts[i][*a][k]).unwrap();
                }
            }
            let want = sum.finalize(agreed.clone()).unwrap();
            assert_eq!(want, node.finalize(&agreed).unwrap(), "trial {trial}");
            let want = want.get_encoded().unwrap();
            let mut got = Vec::new();
            sum.write_sum(agreed.clients(), agreed.iter(), &mut got)
                .unwrap();
            assert_eq!(got, want, "trial {trial}, node {k}");
            if let Some((first, _)) = agreed.iter().next() {
                // Too few pairs, too many, out of order.
                let short = agreed.iter().skip(1);
                assert!(matches!(
                    sum.write_sum(agreed.clients(), short, Vec::new()),
                    Err(Error::InvalidParameter { .. } | Error::LengthMismatch { .. })
                ));
                let long = agreed.iter().chain([(first, ShardId(1))]);
                assert!(matches!(
                    sum.write_sum(agreed.clients(), long, Vec::new()),
                    Err(Error::LengthMismatch { .. })
                ));
                let mut reversed: Vec<_> = agreed.iter().collect();
                reversed.reverse();
                if reversed.len() > 1 {
                    assert!(matches!(
                        sum.write_sum(agreed.clients(), reversed, Vec::new()),
                        Err(Error::InvalidParameter { .. })
                    ));
                }
                // A received client not retracted (or, if it was the only one, too many
                // missing: T = N − 1 here).
                let mut fewer = agreed.clients().clone();
                fewer.remove(first);
                assert!(matches!(
                    sum.write_sum(&fewer, agreed.iter().skip(1), Vec::new()),
                    Err(Error::NeedsRetraction { .. } | Error::TooManyDropped { .. })
                ));
            }
            if let Some(c) = (0..n as u64)
                .map(ClientId)
                .find(|c| !sum.received().contains(*c))
            {
                let mut more = agreed.clients().clone();
                more.insert(c).unwrap();
                assert!(matches!(
                    sum.write_sum(&more, agreed.iter(), Vec::new()),
                    Err(Error::AgreedNotReceived { .. })
                ));
            }
        }
    }
}
