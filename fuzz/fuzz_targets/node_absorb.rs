//! A compute node fed a sequence of arbitrary byte strings as share messages (absorbed or
//! retracted straight from the bytes), then finalised over what it received. Input: a selector
//! byte (bit 0: seed / full mode; bits 1..: node index mod M), then records `[op][len u16][bytes]`
//! (see `dpdist_fuzz::records`). Checks: no panic; a rejected message leaves the received pairs
//! unchanged; an accepted absorb can be retracted and absorbed again.
#![no_main]

use dpdist_fuzz::{N_NODES, fixture_config, mode_from, records};
use fixedpoint_shares::wire::ShareView;
use fixedpoint_shares::{ComputeNode, NodeIndex};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let config = fixture_config(mode_from(selector));
    let node_index = NodeIndex(u16::from(selector >> 1) % N_NODES);
    let mut node = ComputeNode::new(&config, node_index).expect("fixture node");
    for (op, body) in records(rest) {
        let before = node.received().clone();
        let result = if op & 1 == 0 {
            node.absorb_bytes(body)
        } else {
            node.retract_bytes(body)
        };
        match result {
            Err(_) => assert_eq!(
                *node.received(),
                before,
                "a rejected message changed the node"
            ),
            Ok(()) => {
                let view = ShareView::inspect(body).expect("an accepted message is well-formed");
                if op & 1 == 0 {
                    assert_eq!(node.received().shard(view.client), Some(view.shard));
                    node.retract_bytes(body)
                        .expect("an absorbed message retracts");
                    assert_eq!(*node.received(), before, "retract did not undo absorb");
                    node.absorb_bytes(body)
                        .expect("a retracted message absorbs again");
                } else {
                    assert!(!node.received().clients().contains(view.client));
                }
            }
        }
    }
    let received = node.received().clone();
    let _ = node.finalize(&received);
});
