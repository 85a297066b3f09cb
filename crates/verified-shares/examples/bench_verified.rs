//! What verification costs a compute node per report, in process (no TLS, HPKE or database):
//! DCA's absorb of one client's share (today, mode off), the verified mode's check and add (L∞,
//! then L2 with the data's norm bound sqrt(d)), and libprio's own `Prio3SumVec` prepare
//! (verify_init + verify_next) at the same d and bit width, measured in the same run,
//! interleaved; medians of the repetitions. Reports, never asserts.
//!
//! ```text
//! cargo run --release -p verified-shares --example bench_verified -- [N_CLIENTS] [REPS]
//! ```
//! One thread; the round is N clients (default 10 000), M = 3 nodes, T = N/10, bound 1, σ_total
//! = 1 (seed mode), so the grid and the slice bound are those of such a round.

use std::time::{Duration, Instant};

use dp_noise::rng::RngSource;
use fixedpoint_shares::{
    Client, ClientId, ComputeNode, NodeIndex, RoundConfig, RoundId, RoundParams, ShareMode,
};
use prio::codec::Encode;
use prio::vdaf::prio3::Prio3SumVec;
use prio::vdaf::{Aggregatable, Aggregator, Client as _, VerifyTransition};
use verified_shares::{L2Bound, LinfBound, Relay, ValidityBound, VerifiedClient, VerifyingNode};

const REPORTS: usize = 8;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(10_000, |a| a.parse().expect("N_CLIENTS"));
    let reps: usize = args.next().map_or(5, |a| a.parse().expect("REPS"));
    println!(
        "| mode | d | bits per entry | node 0 bytes per report: DCA / verified | DCA absorb, node 0 / node 1 | verified check + add, node 0 / node 1 | libprio Prio3SumVec prepare, node 0 / node 1 | verified / libprio, node 0 / node 1 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for l2 in [false, true] {
        for dim in [100, 1000] {
            row(n, dim, reps, l2);
        }
    }
}

fn row(n: usize, dim: usize, reps: usize, l2: bool) {
    let config = RoundConfig::new(&RoundParams {
        round: RoundId(1),
        n_clients: n,
        n_nodes: 3,
        max_dropped: n / 10,
        dim,
        bound: 1.0,
        mode: ShareMode::Seed,
        noise_sigma_total: Some(1.0),
        frac_bits: None,
    })
    .unwrap();
    let bound: ValidityBound = if l2 {
        L2Bound::for_round(&config, (dim as f64).sqrt(), 1e-9)
            .unwrap()
            .into()
    } else {
        LinfBound::new(&config, 1e-9).unwrap().into()
    };
    let max_measurement = 2 * u128::from(bound.units());
    let bits = (128 - max_measurement.leading_zeros()) as usize;
    let mode = if l2 { "L2" } else { "L∞" };
    eprintln!(
        "{mode}, d = {dim}: {} fractional bits, shift {} units",
        config.codec().frac_bits(),
        bound.units()
    );
    let values: Vec<f64> = (0..dim).map(|j| (j as f64 * 0.1).sin()).collect();
    let rng = |i: usize| RngSource::InsecureFixedSeed(i as u64);

    let dca: Vec<_> = (0..REPORTS)
        .map(|i| {
            Client::new(&config, ClientId(i as u64), rng(i))
                .unwrap()
                .shard(&values)
                .unwrap()
        })
        .collect();
    let reports: Vec<_> = (0..REPORTS)
        .map(|i| {
            VerifiedClient::new(&config, bound, ClientId(i as u64), rng(i))
                .unwrap()
                .shard(&values)
                .unwrap()
        })
        .collect();
    let key = [7u8; 32];
    let relay = Relay::new(&config, bound).unwrap();
    // libprio alone: the same instance parameters as the verified mode's (M, 2B, d, chunk).
    let chunk = ((dim * bits) as f64).sqrt().ceil() as usize;
    let prio = Prio3SumVec::new_sum_vec(3, max_measurement, dim, chunk).unwrap();
    let measurement: Vec<u128> = vec![max_measurement / 2; dim];
    let prio_reports: Vec<_> = (0..REPORTS)
        .map(|i| {
            let nonce = [i as u8; 16];
            let (public, shares) = prio.shard(b"bench", &measurement, &nonce).unwrap();
            (nonce, public, shares)
        })
        .collect();

    let (mut t_dca, mut t_ver, mut t_prio) = ([vec![], vec![]], [vec![], vec![]], [vec![], vec![]]);
    for _ in 0..reps {
        for node in 0..2 {
            let mut dca_node = ComputeNode::new(&config, NodeIndex(node as u16)).unwrap();
            t_dca[node].push(per_report(|| {
                for shares in &dca {
                    dca_node.absorb(&shares[node]).unwrap();
                }
            }));

            let mut nodes: Vec<_> = (0..3)
                .map(|k| VerifyingNode::new(&config, bound, k, key).unwrap())
                .collect();
            // The verdicts come from all three nodes' shares, computed outside the timing.
            let verdicts: Vec<_> = reports
                .iter()
                .map(|r| relay.combine(nodes.iter().map(|k| k.verify(r).unwrap().1).collect()))
                .collect();
            let timed = &mut nodes[node];
            t_ver[node].push(per_report(|| {
                for (r, verdict) in reports.iter().zip(&verdicts) {
                    let (pending, _share) = timed.verify(r).unwrap();
                    timed
                        .accept(r.client, pending, verdict.as_ref().unwrap())
                        .unwrap();
                }
            }));

            let mut sum = prio.aggregate_init(&());
            let messages: Vec<_> = prio_reports
                .iter()
                .map(|(nonce, public, shares)| {
                    let verifier_shares = (0..3).map(|k| {
                        prio.verify_init(&key, b"bench", k, &(), nonce, public, &shares[k])
                            .unwrap()
                            .1
                    });
                    prio.verifier_shares_to_message(b"bench", &(), verifier_shares)
                        .unwrap()
                })
                .collect();
            t_prio[node].push(per_report(|| {
                for ((nonce, public, shares), message) in prio_reports.iter().zip(&messages) {
                    let (state, _share) = prio
                        .verify_init(&key, b"bench", node, &(), nonce, public, &shares[node])
                        .unwrap();
                    match prio.verify_next(b"bench", state, message.clone()).unwrap() {
                        VerifyTransition::Finish(out) => sum.accumulate(&out).unwrap(),
                        VerifyTransition::Continue(..) => unreachable!("one round"),
                    }
                }
            }));
        }
    }
    let m = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (d0, d1, v0, v1, p0, p1) = (
        m(&mut t_dca[0]),
        m(&mut t_dca[1]),
        m(&mut t_ver[0]),
        m(&mut t_ver[1]),
        m(&mut t_prio[0]),
        m(&mut t_prio[1]),
    );
    let leader_bytes = reports[0].input_shares[0].get_encoded().unwrap().len();
    println!(
        "| {mode} | {dim} | {bits} | {} / {leader_bytes} | {d0:.1?} / {d1:.1?} | {v0:.1?} / {v1:.1?} | {p0:.1?} / {p1:.1?} | {:.2} / {:.2} |",
        8 * dim,
        v0.as_secs_f64() / p0.as_secs_f64(),
        v1.as_secs_f64() / p1.as_secs_f64(),
    );
}

/// Wall time per report of `f` over [`REPORTS`] reports.
fn per_report(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed() / REPORTS as u32
}
