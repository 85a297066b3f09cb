//! The share-message decoder on arbitrary bytes, against both fixture rounds and without a round
//! (inspection): never panics, never allocates more than the round allows (libFuzzer's
//! -rss_limit_mb catches that), and whatever it accepts re-encodes to exactly the same bytes.
#![no_main]

use dpdist_fuzz::fixture_config;
use fixedpoint_shares::wire::ShareView;
use fixedpoint_shares::{Decode, Encode, ShareMessage, ShareMode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let inspected = ShareView::inspect(data);
    if let Ok(view) = &inspected {
        assert_eq!(
            view.get_encoded().expect("an inspected message re-encodes"),
            data
        );
    }
    for mode in [ShareMode::Seed, ShareMode::Full] {
        let config = fixture_config(mode);
        if let Ok(msg) = ShareMessage::get_decoded(&config, data) {
            let bytes = msg.get_encoded().expect("a decoded message re-encodes");
            assert_eq!(bytes.len(), msg.encoded_len());
            assert_eq!(bytes, data, "encode(decode(b)) != b");
            let view = inspected
                .as_ref()
                .expect("a decodable message is inspectable");
            assert_eq!(view.to_message(), msg, "inspection and decoding disagree");
        }
    }
});
