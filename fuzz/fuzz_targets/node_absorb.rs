//! A compute node fed a sequence of arbitrary byte strings as share messages (absorb or
//! retract), then finalised over what it received. Input: a selector byte (bit 0: seed / full
//! mode; bits 1..: node index mod M), then records `[op][len u16][bytes]` (see
//! `dpdist_fuzz::records`). Checks: no panic; a rejected message leaves the received set
//! unchanged; an accepted absorb can be retracted and absorbed again.
#![no_main]

use dpdist_fuzz::{N_NODES, fixture_config, mode_from, records};
use fixedpoint_shares::{ComputeNode, NodeIndex, wire};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let config = fixture_config(mode_from(selector));
    let node_index = NodeIndex(u16::from(selector >> 1) % N_NODES);
    let mut node = ComputeNode::new(&config, node_index).expect("fixture node");
    for (op, body) in records(rest) {
        let Ok(msg) = wire::decode(body) else {
            continue;
        };
        let before = node.received().clone();
        let result = if op & 1 == 0 {
            node.absorb(&msg)
        } else {
            node.retract(&msg)
        };
        match result {
            Err(_) => assert_eq!(
                *node.received(),
                before,
                "a rejected message changed the node"
            ),
            Ok(()) if op & 1 == 0 => {
                assert!(node.received().contains(msg.client));
                node.retract(&msg).expect("an absorbed message retracts");
                assert_eq!(*node.received(), before, "retract did not undo absorb");
                node.absorb(&msg)
                    .expect("a retracted message absorbs again");
            }
            Ok(()) => assert!(!node.received().contains(msg.client)),
        }
    }
    let received = node.received().clone();
    let _ = node.finalize(&received);
});
