//! Bad input gets a clear error and changes nothing.

use dp_noise::rng::RngSource;

use super::{ids, params};
use crate::message::{ShareMessage, SharePayload};
use crate::{
    Aggregator, Client, ClientId, ClientSet, ComputeNode, Error, NodeIndex, RoundConfig, RoundId,
    RoundParams, Seed, ShardId, ShardSet, ShareMode, simulate_round,
};

fn setup(mode: ShareMode) -> (RoundConfig, Vec<Vec<ShareMessage>>) {
    let config = RoundConfig::new(&params(4, 3, 1, 5, mode)).unwrap();
    let shards = (0..4u64)
        .map(|i| {
            Client::new(&config, ClientId(i), RngSource::InsecureFixedSeed(i))
                .unwrap()
                .shard(&[0.5, -1.0, 2.5, 0.0, 1.25])
                .unwrap()
        })
        .collect();
    (config, shards)
}

#[test]
fn client_rejects_bad_values_and_unknown_ids() {
    let config = RoundConfig::new(&params(4, 3, 1, 3, ShareMode::Seed)).unwrap();
    let mut client = Client::new(&config, ClientId(0), RngSource::InsecureFixedSeed(1)).unwrap();
    assert!(matches!(
        client.shard(&[0.0, f64::NAN, 0.0]),
        Err(Error::NonFinite { index: 1, .. })
    ));
    assert!(matches!(
        client.shard(&[f64::INFINITY, 0.0, 0.0]),
        Err(Error::NonFinite { index: 0, .. })
    ));
    assert!(matches!(
        client.shard(&[0.0, 0.0, f64::NEG_INFINITY]),
        Err(Error::NonFinite { index: 2, .. })
    ));
    assert!(matches!(
        client.shard(&[0.0, 0.0, -2.6]),
        Err(Error::OutOfBound { index: 2, .. })
    ));
    assert!(matches!(
        client.shard(&[0.0, 0.0]),
        Err(Error::LengthMismatch {
            expected: 3,
            actual: 2,
            ..
        })
    ));
    // Rejections draw no randomness: the next shard equals a fresh client's first shard.
    let ok = client.shard(&[1.0, 2.0, -2.5]).unwrap();
    let fresh = Client::new(&config, ClientId(0), RngSource::InsecureFixedSeed(1))
        .unwrap()
        .shard(&[1.0, 2.0, -2.5])
        .unwrap();
    assert_eq!(ok, fresh);
    assert!(matches!(
        Client::new(&config, ClientId(4), RngSource::Os),
        Err(Error::UnknownClient { .. })
    ));
}

#[test]
fn overflowing_configurations_are_refused() {
    // 2^33 clients would not even be accepted; 2^31 clients with |x| <= 2^33: 2^64 > 2^63.
    let p = RoundParams {
        bound: 2f64.powi(33),
        ..params(1 << 31, 2, 0, 1, ShareMode::Seed)
    };
    assert!(matches!(RoundConfig::new(&p), Err(Error::Capacity { .. })));
    let p = RoundParams {
        frac_bits: Some(61),
        ..params(4, 2, 0, 1, ShareMode::Seed)
    };
    assert!(matches!(RoundConfig::new(&p), Err(Error::Capacity { .. })));
}

#[test]
fn node_errors_change_nothing() {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let (config, shards) = setup(mode);
        let mut node = ComputeNode::new(&config, NodeIndex(1)).unwrap();
        node.absorb(&shards[0][1]).unwrap();
        let before = node.snapshot();
        let good = shards[1][1].clone();
        type IsExpected = fn(&Error) -> bool;
        let mut bad_cases: Vec<(ShareMessage, IsExpected)> = vec![
            (shards[0][1].clone(), |e| {
                matches!(
                    e,
                    Error::DuplicateClient {
                        client: ClientId(0)
                    }
                )
            }),
            (
                ShareMessage {
                    round: RoundId(78),
                    ..good.clone()
                },
                |e| matches!(e, Error::WrongRound { .. }),
            ),
            (shards[1][2].clone(), |e| {
                matches!(e, Error::WrongNode { .. })
            }),
            (
                ShareMessage {
                    node: NodeIndex(7),
                    ..good.clone()
                },
                |e| matches!(e, Error::WrongNode { .. }),
            ),
            (
                ShareMessage {
                    frac_bits: good.frac_bits - 1,
                    ..good.clone()
                },
                |e| matches!(e, Error::WrongFracBits { .. }),
            ),
            (
                ShareMessage {
                    client: ClientId(4),
                    ..good.clone()
                },
                |e| matches!(e, Error::UnknownClient { .. }),
            ),
            (
                ShareMessage {
                    dim: 6,
                    ..good.clone()
                },
                |e| matches!(e, Error::LengthMismatch { .. }),
            ),
        ];
        match mode {
            ShareMode::Seed => bad_cases.push((
                ShareMessage {
                    payload: SharePayload::Full(vec![0; 5]),
                    ..good.clone()
                },
                |e| matches!(e, Error::WrongPayloadKind { .. }),
            )),
            ShareMode::Full => {
                bad_cases.push((
                    ShareMessage {
                        payload: SharePayload::Full(vec![0; 4]),
                        ..good.clone()
                    },
                    |e| matches!(e, Error::LengthMismatch { .. }),
                ));
                bad_cases.push((
                    ShareMessage {
                        payload: SharePayload::Seed(Seed::from_bytes([0; 16])),
                        ..good.clone()
                    },
                    |e| matches!(e, Error::WrongPayloadKind { .. }),
                ));
            }
        }
        for (msg, is_expected) in &bad_cases {
            let err = node.absorb(msg).unwrap_err();
            assert!(is_expected(&err), "{mode:?}: {err}");
            assert!(!err.to_string().is_empty());
            assert_eq!(node.snapshot(), before, "{mode:?}: state changed by {err}");
            // In a batch with good messages: all-or-nothing.
            let err = node
                .absorb_batch(&[shards[2][1].clone(), msg.clone(), shards[3][1].clone()])
                .unwrap_err();
            assert!(is_expected(&err), "{mode:?} batch: {err}");
            assert_eq!(node.snapshot(), before);
        }
        // Duplicates inside one batch.
        assert!(matches!(
            node.absorb_batch(&[good.clone(), shards[2][1].clone(), good.clone()]),
            Err(Error::DuplicateClient {
                client: ClientId(1)
            })
        ));
        assert_eq!(node.snapshot(), before);
        // Retracting a client that was never absorbed.
        assert!(matches!(
            node.retract(&good),
            Err(Error::NotAbsorbed { .. })
        ));
        assert_eq!(node.snapshot(), before);
        // Finalize over a set containing a client this node never received; over another N.
        assert!(matches!(
            node.finalize(&ShardSet::from_pairs(4, &[(ClientId(1), good.shard)]).unwrap()),
            Err(Error::AgreedNotReceived {
                client: ClientId(1),
                ..
            })
        ));
        assert!(node.finalize(&ShardSet::empty(5)).is_err());
        assert_eq!(node.snapshot(), before);
        // Absorb then retract restores the state exactly.
        node.absorb(&good).unwrap();
        node.retract(&good).unwrap();
        assert_eq!(node.snapshot(), before);
    }
    let (config, _) = setup(ShareMode::Seed);
    assert!(matches!(
        ComputeNode::new(&config, NodeIndex(3)),
        Err(Error::UnknownNode { n_nodes: 3, .. })
    ));
}

#[test]
fn aggregator_errors_change_nothing() {
    let (config, shards) = setup(ShareMode::Seed);
    let mut nodes: Vec<ComputeNode> = (0..3)
        .map(|k| ComputeNode::new(&config, NodeIndex(k)).unwrap())
        .collect();
    for msgs in &shards[..3] {
        for (node, msg) in nodes.iter_mut().zip(msgs) {
            node.absorb(msg).unwrap();
        }
    }
    let agreed = nodes[0]
        .received()
        .restricted_to(&ClientSet::from_ids(4, &ids(&[0, 1, 2])).unwrap())
        .unwrap();
    let sums: Vec<_> = nodes.iter().map(|n| n.finalize(&agreed).unwrap()).collect();
    let mut agg = Aggregator::new(&config).unwrap();
    assert!(matches!(
        agg.release(),
        Err(Error::MissingNodeSums { have: 0, need: 3 })
    ));
    agg.add(&sums[0]).unwrap();
    let mut wrong_round = sums[1].clone();
    wrong_round.round = RoundId(1);
    let mut unknown = sums[1].clone();
    unknown.node = NodeIndex(3);
    let mut other_set = sums[1].clone();
    other_set.agreed = ShardSet::from_pairs(
        4,
        &[0usize, 1, 3].map(|c| (ClientId(c as u64), shards[c][0].shard)),
    )
    .unwrap();
    // The same clients, but another shard attempt of client 1 (a retry the nodes mixed up).
    let mut other_attempt = sums[1].clone();
    other_attempt.agreed.remove(ClientId(1));
    other_attempt
        .agreed
        .insert(ClientId(1), ShardId(shards[1][0].shard.0 ^ 1))
        .unwrap();
    let mut other_config = sums[1].clone();
    other_config.config.0[0] ^= 1;
    let mut short = sums[1].clone();
    short.sum.pop();
    let mut frac = sums[1].clone();
    frac.frac_bits += 1;
    for (bad, what) in [
        (&sums[0], "duplicate"),
        (&wrong_round, "round"),
        (&unknown, "unknown node"),
        (&other_set, "client set"),
        (&other_attempt, "shard attempt"),
        (&other_config, "config digest"),
        (&short, "length"),
        (&frac, "frac bits"),
    ] {
        assert!(agg.add(bad).is_err(), "{what}");
        assert_eq!(agg.received_nodes().count(), 1, "{what}");
    }
    assert!(matches!(
        agg.release(),
        Err(Error::MissingNodeSums { have: 1, need: 3 })
    ));
    agg.add(&sums[1]).unwrap();
    agg.add(&sums[2]).unwrap();
    let release = agg.release().unwrap();
    // 0.5 + 0.5 + 0.5 etc.: three clients with the same vector.
    assert_eq!(release.sum, [1.5, -3.0, 7.5, 0.0, 3.75]);
    assert_eq!(release.n_included, 3);
    assert_eq!(release.noise_sigma_released, 0.0);
}

#[test]
fn simulate_checks_inputs_and_dropped_ids() {
    let config = RoundConfig::new(&params(3, 2, 1, 2, ShareMode::Seed)).unwrap();
    let x = vec![vec![0.0, 1.0]; 3];
    let rng = RngSource::InsecureFixedSeed(0);
    assert!(simulate_round(&config, &x[..2], &[], rng).is_err());
    let mut bad = x.clone();
    bad[1] = vec![0.0];
    assert!(matches!(
        simulate_round(&config, &bad, &[], rng),
        Err(Error::LengthMismatch { .. })
    ));
    bad[1] = vec![0.0, f64::NAN];
    assert!(matches!(
        simulate_round(&config, &bad, &[], rng),
        Err(Error::NonFinite { index: 1, .. })
    ));
    assert!(simulate_round(&config, &x, &ids(&[3]), rng).is_err());
    assert!(simulate_round(&config, &x, &ids(&[1, 1]), rng).is_err());
    assert!(matches!(
        simulate_round(&config, &x, &ids(&[0, 1]), rng),
        Err(Error::TooManyDropped {
            missing: 2,
            max_dropped: 1,
            n_clients: 3
        })
    ));
    let r = simulate_round(&config, &x, &ids(&[2]), rng).unwrap();
    assert_eq!(r.sum, [0.0, 2.0]);
}
