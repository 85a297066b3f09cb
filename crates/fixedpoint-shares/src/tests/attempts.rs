//! Shard attempts, retraction checks and round-id reuse: protocol misuse ends in a clear error
//! or an exclusion, never in a wrong release.

use dp_noise::rng::RngSource;

use super::params;
use crate::message::{ShareMessage, SharePayload};
use crate::wire::Encode;
use crate::{
    Aggregator, Client, ClientId, ClientSet, ComputeNode, Error, NodeIndex, RoundConfig, RoundId,
    RoundParams, Seed, ShardSet, ShareMode, agree,
};

/// Client i's value is (i + 1)/4 in every coordinate: exact in any precision used here.
fn value(i: u64) -> f64 {
    (i + 1) as f64 / 4.0
}

fn shard(config: &RoundConfig, client: u64, seed: u64) -> Vec<ShareMessage> {
    Client::new(config, ClientId(client), RngSource::InsecureFixedSeed(seed))
        .unwrap()
        .shard(&vec![value(client); config.dim()])
        .unwrap()
}

fn nodes(config: &RoundConfig) -> Vec<ComputeNode> {
    (0..config.n_nodes())
        .map(|k| ComputeNode::new(config, NodeIndex(k)).unwrap())
        .collect()
}

/// Client 1 shards twice (a retry): node 0 holds attempt 1, nodes 1 and 2 attempt 2. The pair
/// agreement leaves client 1 out and the release is the exact sum of the others; the attempts
/// are never summed together.
#[test]
fn mixed_retry_is_excluded_by_the_pair_agreement() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = RoundConfig::new(&params(5, 3, 1, 4, mode)).unwrap();
        let mut nodes = nodes(&config);
        let first = shard(&config, 1, 100);
        let retry = shard(&config, 1, 101);
        assert_ne!(first[0].shard, retry[0].shard);
        assert!(first.iter().all(|m| m.shard == first[0].shard));
        for c in [0u64, 2, 3, 4] {
            for (node, msg) in nodes.iter_mut().zip(shard(&config, c, c)) {
                node.absorb(&msg).unwrap();
            }
        }
        nodes[0].absorb(&first[0]).unwrap();
        nodes[1].absorb(&retry[1]).unwrap();
        nodes[2].absorb(&retry[2]).unwrap();
        // Every node received client 1, so agreeing on ids alone would include it.
        assert!(
            nodes
                .iter()
                .all(|n| n.received().clients().contains(ClientId(1)))
        );
        let received: Vec<&ShardSet> = nodes.iter().map(ComputeNode::received).collect();
        let agreed = agree(&received).unwrap();
        assert!(!agreed.clients().contains(ClientId(1)));
        assert_eq!(agreed.len(), 4);
        // Full shares of the excluded attempts must be taken back first.
        nodes[0].retract(&first[0]).unwrap();
        if mode == ShareMode::Full {
            nodes[1].retract(&retry[1]).unwrap();
            nodes[2].retract(&retry[2]).unwrap();
        }
        let mut agg = Aggregator::new(&config).unwrap();
        for node in &nodes {
            agg.add(&node.finalize(&agreed).unwrap()).unwrap();
        }
        let release = agg.release().unwrap();
        // 1/4 + 3/4 + 4/4 + 5/4 = 13/4, by hand.
        assert_eq!(release.sum, vec![3.25; 4], "{mode:?}");
        assert_eq!(release.n_included, 4);
    }
}

/// The same mix where the hosts agreed on client ids only and each node filled in its own
/// attempt: the aggregator sees different attempts of client 1 and refuses to release.
#[test]
fn mixed_retry_agreed_by_ids_only_is_refused_by_the_aggregator() {
    let config = RoundConfig::new(&params(3, 2, 0, 2, ShareMode::Seed)).unwrap();
    let mut nodes = nodes(&config);
    for c in [0u64, 2] {
        for (node, msg) in nodes.iter_mut().zip(shard(&config, c, c)) {
            node.absorb(&msg).unwrap();
        }
    }
    nodes[0].absorb(&shard(&config, 1, 7)[0]).unwrap();
    nodes[1].absorb(&shard(&config, 1, 8)[1]).unwrap();
    let everyone = ClientSet::full(3);
    let sums: Vec<_> = nodes
        .iter()
        .map(|n| {
            n.finalize(&n.received().restricted_to(&everyone).unwrap())
                .unwrap()
        })
        .collect();
    let mut agg = Aggregator::new(&config).unwrap();
    agg.add(&sums[0]).unwrap();
    let err = agg.add(&sums[1]).unwrap_err();
    assert_eq!(
        err,
        Error::AttemptMismatch {
            node: NodeIndex(1),
            client: ClientId(1)
        }
    );
    assert!(err.to_string().contains("sharded more than once"), "{err}");
    assert!(matches!(
        agg.release(),
        Err(Error::MissingNodeSums { have: 1, need: 2 })
    ));
    // A node handed the other node's attempt refuses to finalize at all.
    let err = nodes[0].finalize(nodes[1].received()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShardMismatch {
                client: ClientId(1),
                node: NodeIndex(0),
                ..
            }
        ),
        "{err}"
    );
    // With T = 0 the exclusion itself leaves too few clients: a clear refusal, nothing out.
    let received: Vec<&ShardSet> = nodes.iter().map(ComputeNode::received).collect();
    let agreed = agree(&received).unwrap();
    assert!(matches!(
        nodes[1].finalize(&agreed),
        Err(Error::TooManyDropped { missing: 1, .. })
    ));
}

#[test]
fn retract_refuses_anything_but_the_absorbed_share_and_changes_nothing() {
    let config = RoundConfig::new(&params(3, 2, 1, 3, ShareMode::Seed)).unwrap();
    let mut seed_node = ComputeNode::new(&config, NodeIndex(1)).unwrap();
    let mut full_node = ComputeNode::new(&config, NodeIndex(0)).unwrap();
    let msgs = shard(&config, 2, 5);
    seed_node.absorb(&msgs[1]).unwrap();
    full_node.absorb(&msgs[0]).unwrap();
    let (seed_before, full_before) = (seed_node.snapshot(), full_node.snapshot());

    let other_seed = ShareMessage {
        payload: SharePayload::Seed(Seed::from_bytes([0x5a; 16])),
        ..msgs[1].clone()
    };
    assert_eq!(
        seed_node.retract(&other_seed),
        Err(Error::RetractMismatch {
            client: ClientId(2),
            what: "seed"
        })
    );
    let retry = shard(&config, 2, 6);
    for (node, msg, before) in [
        (&mut seed_node, &retry[1], &seed_before),
        (&mut full_node, &retry[0], &full_before),
    ] {
        assert_eq!(
            node.retract(msg),
            Err(Error::RetractMismatch {
                client: ClientId(2),
                what: "shard id"
            })
        );
        assert!(node.retract_bytes(&msg.get_encoded().unwrap()).is_err());
        assert_eq!(node.snapshot(), *before);
    }
    assert_eq!(seed_node.snapshot(), seed_before);
    // The absorbed share itself is taken back, from bytes as well.
    seed_node
        .retract_bytes(&msgs[1].get_encoded().unwrap())
        .unwrap();
    full_node.retract(&msgs[0]).unwrap();
    assert!(seed_node.received().is_empty() && full_node.received().is_empty());
    assert!(seed_node.snapshot().0.iter().all(|&w| w == 0));
    assert!(full_node.snapshot().0.iter().all(|&w| w == 0));
}

/// Round id 5 reused with other parameters: messages and node sums of the old round are
/// refused by the new one, whether absorbed as messages or as bytes.
#[test]
fn old_round_replayed_under_the_same_id_is_refused() {
    let old = RoundConfig::new(&RoundParams {
        round: RoundId(5),
        ..params(4, 2, 1, 3, ShareMode::Seed)
    })
    .unwrap();
    // Same id, d and precision; only N differs, which nothing else in a message would show.
    let new = RoundConfig::new(&RoundParams {
        round: RoundId(5),
        frac_bits: Some(old.codec().frac_bits()),
        ..params(5, 2, 1, 3, ShareMode::Seed)
    })
    .unwrap();
    assert_ne!(old.digest(), new.digest());
    let replay = shard(&old, 0, 1);
    let mut node = ComputeNode::new(&new, NodeIndex(1)).unwrap();
    let before = node.snapshot();
    for err in [
        node.absorb(&replay[1]).unwrap_err(),
        node.absorb_bytes(&replay[1].get_encoded().unwrap())
            .unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::WrongConfig {
                    round: RoundId(5),
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("reused"), "{err}");
    }
    assert_eq!(node.snapshot(), before);
    // An old node sum is refused by the new round's aggregator.
    let mut old_nodes = nodes(&old);
    for c in 0..4 {
        for (n, msg) in old_nodes.iter_mut().zip(shard(&old, c, c)) {
            n.absorb(&msg).unwrap();
        }
    }
    let old_sum = old_nodes[0].finalize(old_nodes[0].received()).unwrap();
    let mut agg = Aggregator::new(&new).unwrap();
    assert!(matches!(agg.add(&old_sum), Err(Error::WrongConfig { .. })));
    assert!(matches!(
        <crate::NodeSum as crate::Decode<_>>::get_decoded(&new, &old_sum.get_encoded().unwrap()),
        Err(Error::WrongConfig { .. })
    ));
}

/// Absorbing wire bytes in place equals decoding and absorbing the message, and a rejected
/// byte string changes nothing.
#[test]
fn absorbing_bytes_equals_absorbing_messages() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = RoundConfig::new(&params(4, 3, 1, 37, mode)).unwrap();
        let mut by_msg = nodes(&config);
        let mut by_bytes = nodes(&config);
        for c in 0..4 {
            for (k, msg) in shard(&config, c, 30 + c).iter().enumerate() {
                by_msg[k].absorb(msg).unwrap();
                by_bytes[k]
                    .absorb_bytes(&msg.get_encoded().unwrap())
                    .unwrap();
            }
        }
        for (a, b) in by_msg.iter().zip(&by_bytes) {
            assert_eq!(a.snapshot(), b.snapshot(), "{mode:?}");
        }
        let again = shard(&config, 0, 30);
        let before = by_bytes[0].snapshot();
        let bytes = again[0].get_encoded().unwrap();
        assert!(matches!(
            by_bytes[0].absorb_bytes(&bytes),
            Err(Error::DuplicateClient { .. })
        ));
        assert!(by_bytes[0].absorb_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(
            by_bytes[0]
                .absorb_bytes(&again[1].get_encoded().unwrap())
                .is_err()
        );
        assert_eq!(by_bytes[0].snapshot(), before);
    }
}
