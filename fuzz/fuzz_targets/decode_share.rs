//! The share-message decoder on arbitrary bytes: never panics, never allocates more than the
//! input justifies (libFuzzer's -rss_limit_mb catches that), and whatever it accepts re-encodes
//! to a message that decodes to the same value.
#![no_main]

use fixedpoint_shares::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(msg) = wire::decode(data) {
        let bytes = wire::encode(&msg).expect("a decoded message re-encodes");
        assert_eq!(bytes.len(), wire::encoded_len(&msg));
        let again = wire::decode(&bytes).expect("an encoded message decodes");
        assert_eq!(again, msg, "decode(encode(m)) != m");
    }
});
