//! The node-sum decoder on arbitrary bytes, against both fixture rounds: never panics, never
//! allocates more than the round allows, and whatever it accepts re-encodes to the same bytes.
#![no_main]

use dpdist_fuzz::fixture_config;
use fixedpoint_shares::{Decode, Encode, NodeSum, ShareMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = fixture_config(mode);
        if let Ok(sum) = NodeSum::get_decoded(&config, data) {
            let bytes = sum.get_encoded().expect("a decoded node sum re-encodes");
            assert_eq!(bytes.len(), sum.encoded_len());
            assert_eq!(bytes, data, "encode(decode(b)) != b");
        }
    }
});
