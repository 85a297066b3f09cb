//! The node-sum decoder on arbitrary bytes: never panics, and whatever it accepts round-trips.
#![no_main]

use fixedpoint_shares::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(sum) = wire::decode_node_sum(data) {
        let bytes = wire::encode_node_sum(&sum).expect("a decoded node sum re-encodes");
        assert_eq!(bytes.len(), wire::node_sum_encoded_len(&sum));
        let again = wire::decode_node_sum(&bytes).expect("an encoded node sum decodes");
        assert_eq!(again, sum, "decode(encode(s)) != s");
    }
});
