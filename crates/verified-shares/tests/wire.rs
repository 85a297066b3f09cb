//! A verified round through the wire encodings, as the services run it (each message encoded by
//! its sender and decoded by its receiver): the release equals the in-process round's bit for
//! bit; a client whose node-0 share is inflated is found invalid; every malformed message is
//! refused; each node message is exactly as long as `node_message_lens` says.

use dp_noise::rng::RngSource;
use fixedpoint_shares::{ClientId, RoundConfig, RoundId, RoundParams, ShareMode};
use prio::field::Field128;
use prio::vdaf::prio3::Prio3InputShare;
use verified_shares::wire::{encode_verdict, encode_verifier_share};
use verified_shares::{
    L2Bound, LinfBound, Relay, ValidityBound, VerifiedClient, VerifiedReport, VerifyingNode,
    node_message_lens, simulate_verified_round,
};

const SEED: u64 = 41;
const KEY: [u8; 32] = [7; 32];

fn config() -> RoundConfig {
    RoundConfig::new(&RoundParams {
        round: RoundId(9),
        n_clients: 6,
        n_nodes: 3,
        max_dropped: 2,
        dim: 4,
        bound: 1.0,
        mode: ShareMode::Seed,
        noise_sigma_total: Some(0.5),
        frac_bits: None,
    })
    .unwrap()
}

fn inputs() -> Vec<Vec<f64>> {
    (0..6)
        .map(|i| (0..4).map(|j| ((i * 4 + j) as f64 * 0.61).cos()).collect())
        .collect()
}

/// Runs the round through the encodings; `cheat` tampers with client 3's report.
fn over_the_wire(
    bound: ValidityBound,
    cheat: bool,
) -> (Vec<i64>, Vec<ClientId>, Vec<Vec<Vec<u8>>>) {
    let config = config();
    let mut nodes: Vec<_> = (0..3)
        .map(|k| VerifyingNode::new(&config, bound, k, KEY).unwrap())
        .collect();
    let relay = Relay::new(&config, bound).unwrap();
    let rng = RngSource::InsecureFixedSeed(SEED);
    let mut messages = Vec::new();
    let (mut valid, mut invalid) = (Vec::new(), Vec::new());
    for (i, x) in inputs().iter().enumerate() {
        let mut report: VerifiedReport =
            VerifiedClient::new(&config, bound, ClientId(i as u64), rng.derive(i as u64))
                .unwrap()
                .shard(x)
                .unwrap();
        if cheat && i == 3 {
            inflate(&mut report);
        }
        let sent: Vec<Vec<u8>> = (0..3).map(|k| report.node_message(k).unwrap()).collect();
        let shares: Vec<_> = nodes
            .iter()
            .zip(&sent)
            .map(|(node, bytes)| node.decode_share(bytes).unwrap())
            .collect();
        let verifier_bytes: Vec<Vec<u8>> = nodes
            .iter()
            .zip(&shares)
            .map(|(node, share)| {
                encode_verifier_share(&node.verify_share(share).unwrap().1).unwrap()
            })
            .collect();
        let verifier_shares = verifier_bytes
            .iter()
            .map(|b| relay.decode_verifier_share(b).unwrap())
            .collect();
        match relay.combine(verifier_shares) {
            None => invalid.push(ClientId(i as u64)),
            Some(verdict) => {
                let verdict = encode_verdict(&verdict).unwrap();
                for (node, share) in nodes.iter_mut().zip(&shares) {
                    node.accept_share(ClientId(i as u64), share, &verdict)
                        .unwrap();
                }
                valid.push(i);
            }
        }
        messages.push(sent);
    }
    let sums = nodes
        .iter()
        .map(|node| relay.decode_sum(&node.encoded_sum().unwrap()).unwrap())
        .collect();
    (
        relay.sum_units(sums, valid.len(), bound).unwrap(),
        invalid,
        messages,
    )
}

fn inflate(report: &mut VerifiedReport) {
    if let Prio3InputShare::Leader {
        measurement_share, ..
    } = &mut report.input_shares[0]
    {
        measurement_share[0] += Field128::from(1_000_000u128 << 20);
    }
}

fn bounds() -> [ValidityBound; 2] {
    let config = config();
    [
        LinfBound::new(&config, 1e-9).unwrap().into(),
        L2Bound::for_round(&config, 2.0, 1e-9).unwrap().into(),
    ]
}

#[test]
fn a_round_through_the_encodings_releases_the_in_process_sum() {
    for bound in bounds() {
        let (sum, invalid, messages) = over_the_wire(bound, false);
        let in_process = simulate_verified_round(
            &config(),
            bound,
            &inputs(),
            &[],
            None,
            RngSource::InsecureFixedSeed(SEED),
        )
        .unwrap();
        assert!(invalid.is_empty());
        assert_eq!(sum, in_process.release.sum_units);
        let lens = node_message_lens(&config(), bound).unwrap();
        for sent in &messages {
            let got: Vec<usize> = sent.iter().map(Vec::len).collect();
            assert_eq!(got, lens);
        }
        assert!(lens[0] > lens[1] && lens[1] == lens[2]);
    }
}

#[test]
fn an_inflated_share_is_found_invalid_through_the_encodings() {
    for bound in bounds() {
        let (sum, invalid, _) = over_the_wire(bound, true);
        assert_eq!(invalid, vec![ClientId(3)]);
        let honest = simulate_verified_round(
            &config(),
            bound,
            &inputs(),
            &[ClientId(3)],
            None,
            RngSource::InsecureFixedSeed(SEED),
        )
        .unwrap();
        assert_eq!(sum, honest.release.sum_units);
    }
}

#[test]
fn malformed_messages_are_refused() {
    let config = config();
    let bound = bounds()[0];
    let node0 = VerifyingNode::new(&config, bound, 0, KEY).unwrap();
    let node1 = VerifyingNode::new(&config, bound, 1, KEY).unwrap();
    let relay = Relay::new(&config, bound).unwrap();
    let report = VerifiedClient::new(&config, bound, ClientId(0), RngSource::InsecureFixedSeed(1))
        .unwrap()
        .shard(&inputs()[0])
        .unwrap();
    let (m0, m1) = (
        report.node_message(0).unwrap(),
        report.node_message(1).unwrap(),
    );
    assert!(node0.decode_share(&m0[..m0.len() - 1]).is_err());
    assert!(node0.decode_share(&[m0.clone(), vec![0]].concat()).is_err());
    assert!(node0.decode_share(&m0[..10]).is_err());
    // A helper's message is not node 0's.
    assert!(node0.decode_share(&m1).is_err());
    let share = node1.decode_share(&m1).unwrap();
    let (pending, verifier) = node1.verify_share(&share).unwrap();
    let bytes = encode_verifier_share(&verifier).unwrap();
    assert!(relay.decode_verifier_share(&bytes[1..]).is_err());
    assert!(
        relay
            .decode_verifier_share(&[bytes.clone(), vec![0]].concat())
            .is_err()
    );
    assert!(node1.decode_verdict(&pending, &[0; 31]).is_err());
    assert!(relay.decode_sum(&[0; 17]).is_err());
}
