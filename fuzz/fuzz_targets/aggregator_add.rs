//! The aggregator fed a sequence of arbitrary byte strings as node sums, then asked to release.
//! Input: a selector byte (bit 0: seed / full mode), then records `[op][len u16][bytes]` (op
//! ignored). Checks: no panic; a rejected node sum leaves the set of received nodes unchanged;
//! a release happens only once every node's sum is in.
#![no_main]

use dpdist_fuzz::{N_NODES, fixture_config, mode_from, records};
use fixedpoint_shares::{Aggregator, Decode, NodeIndex, NodeSum};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let config = fixture_config(mode_from(selector));
    let mut agg = Aggregator::new(&config).expect("fixture aggregator");
    for (_, body) in records(rest) {
        let Ok(sum) = NodeSum::get_decoded(&config, body) else {
            continue;
        };
        let before: Vec<NodeIndex> = agg.received_nodes().collect();
        if agg.add(&sum).is_err() {
            let after: Vec<NodeIndex> = agg.received_nodes().collect();
            assert_eq!(after, before, "a rejected node sum changed the aggregator");
        }
    }
    let have = agg.received_nodes().count();
    if let Ok(release) = agg.release() {
        assert_eq!(
            have,
            usize::from(N_NODES),
            "released without every node's sum"
        );
        assert_eq!(release.sum.len(), config.dim());
    }
});
