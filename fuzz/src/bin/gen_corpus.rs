//! Writes the seed corpus of every fuzz target into `corpus/<target>/`: valid messages of the
//! fixture rounds (see `dpdist_fuzz`), produced by real clients and nodes with a fixed seed, so
//! that the fuzzers start past the header checks. Deterministic: re-running it rewrites the
//! same files. Run: `cargo +nightly run --manifest-path fuzz/Cargo.toml --bin gen_corpus`.

use std::fs;
use std::path::Path;

use dp_noise::rng::RngSource;
use dpdist_fuzz::node_http::Op;
use dpdist_fuzz::{N_CLIENTS, N_NODES, fixture_config, push_record};
use fixedpoint_shares::{
    Client, ClientId, ClientSet, ComputeNode, Encode, NodeIndex, ShareMessage, ShareMode,
};

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::create_dir_all(dir).expect("create corpus dir");
    fs::write(dir.join(name), bytes).expect("write corpus file");
}

/// Every client's M messages for the fixture round in `mode`.
fn shares(mode: ShareMode) -> Vec<Vec<ShareMessage>> {
    let config = fixture_config(mode);
    let rng = RngSource::InsecureFixedSeed(2024);
    (0..N_CLIENTS as u64)
        .map(|i| {
            let mut client = Client::new(&config, ClientId(i), rng.derive(i)).expect("client");
            let values: Vec<f64> = (0..config.dim())
                .map(|j| (i as f64 - j as f64) / 8.0)
                .collect();
            client.shard(&values).expect("shard")
        })
        .collect()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (selector, mode, tag) in [
        (0u8, ShareMode::Seed, "seed"),
        (1u8, ShareMode::Full, "full"),
    ] {
        let config = fixture_config(mode);
        let all = shares(mode);
        // decode_share: one file per (client, node) of two clients.
        for (i, msgs) in all.iter().take(2).enumerate() {
            for msg in msgs {
                let bytes = msg.get_encoded().expect("encode");
                write(
                    &root.join("decode_share"),
                    &format!("{tag}-c{i}-n{}", msg.node.0),
                    &bytes,
                );
            }
        }
        // node_absorb: for each node, all clients' messages, the last one also retracted.
        for k in 0..N_NODES {
            let mut input = vec![selector | ((k as u8) << 1)];
            for msgs in &all {
                push_record(
                    &mut input,
                    0,
                    &msgs[usize::from(k)].get_encoded().expect("encode"),
                );
            }
            let last = &all[N_CLIENTS - 1][usize::from(k)];
            push_record(&mut input, 1, &last.get_encoded().expect("encode"));
            write(&root.join("node_absorb"), &format!("{tag}-n{k}"), &input);
        }
        // Node sums of the full client set, and a dropout of client 0.
        let mut nodes: Vec<ComputeNode> = (0..N_NODES)
            .map(|k| ComputeNode::new(&config, NodeIndex(k)).expect("node"))
            .collect();
        for msgs in &all {
            for msg in msgs {
                nodes[usize::from(msg.node.0)].absorb(msg).expect("absorb");
            }
        }
        // Every node received the same attempt of every client: node 0's pairs are the agreed set.
        let full = nodes[0].received().clone();
        let ids: Vec<ClientId> = (1..N_CLIENTS as u64).map(ClientId).collect();
        let dropped_one = full
            .restricted_to(&ClientSet::from_ids(N_CLIENTS, &ids).expect("set"))
            .expect("pairs");
        for (set_tag, set) in [("all", &full), ("drop0", &dropped_one)] {
            let mut input = vec![selector];
            for node in &mut nodes {
                let mut node_for_set = node.finalize(set);
                if node_for_set.is_err() {
                    // Full mode: client 0's full share must be retracted first.
                    node.retract(&all[0][usize::from(node.node().0)])
                        .expect("retract");
                    node_for_set = node.finalize(set);
                }
                let sum = node_for_set.expect("finalize");
                let bytes = sum.get_encoded().expect("encode node sum");
                write(
                    &root.join("decode_node_sum"),
                    &format!("{tag}-{set_tag}-n{}", sum.node.0),
                    &bytes,
                );
                push_record(&mut input, 0, &bytes);
            }
            write(
                &root.join("aggregator_add"),
                &format!("{tag}-{set_tag}"),
                &input,
            );
        }
    }
    // round_config: a few byte strings (the target interprets them structurally).
    for (i, bytes) in [
        &[0u8; 64][..],
        &[0x55; 64],
        &[0xaa; 64],
        &[7, 3, 2, 2, 9, 2, 2, 2, 7, 1, 0],
    ]
    .iter()
    .enumerate()
    {
        write(&root.join("round_config"), &format!("seed{i}"), bytes);
    }
    // node_http: per (mode, node), every client's honest upload, a retry, a conflicting attempt,
    // a mutated and a wrongly authorised upload, a close over the received set, reads, and an
    // upload after the close.
    for selector in 0u8..4 {
        let mut input = vec![selector];
        for client in 0..N_CLIENTS as u8 {
            push_record(&mut input, Op::HonestUpload as u8, &[client, client]);
        }
        push_record(&mut input, Op::HonestUpload as u8, &[0, 0]);
        push_record(&mut input, Op::HonestUpload as u8, &[1, 99]);
        push_record(&mut input, Op::MutatedUpload as u8, &[2, 2, 0, 0, 0, 0, 1]);
        push_record(&mut input, Op::WrongToken as u8, b"\x03not-a-token");
        push_record(&mut input, Op::CloseReceived as u8, &[]);
        push_record(&mut input, Op::Read as u8, &[]);
        push_record(&mut input, Op::HonestUpload as u8, &[4, 4]);
        write(
            &root.join("node_http"),
            &format!("round-{selector}"),
            &input,
        );
    }
    println!("corpus written to {}", root.display());
}
