//! `share_sealing::open` on arbitrary bytes and on mutations of an honest sealed share: never
//! panics; nothing but the honest sealed bytes opens in the honest slot (any other input that
//! opened would be a forgery: the attacker does not hold the node's key), and what opens is the
//! honest share. The open is the `hpke` crate's, wrapped by share-sealing.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use share_sealing::{NodeKeyPair, SealContext, open, seal};

const SHARE: &[u8] = b"a share message of the fixture round, opaque to the sealing layer";

fn slot() -> SealContext {
    SealContext {
        round: 7,
        config_hash: [0x11; 32],
        client: 42,
        node: 1,
    }
}

/// The node's key (fixed, so that runs reproduce) and one honest sealed share to it.
fn fixture() -> &'static (NodeKeyPair, Vec<u8>) {
    static FIXTURE: OnceLock<(NodeKeyPair, Vec<u8>)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let node = NodeKeyPair::from_secret_bytes(&[0x5a; 32]).expect("32 bytes");
        let sealed = seal(&node.public, &slot(), SHARE).expect("seal");
        (node, sealed)
    })
}

fuzz_target!(|data: &[u8]| {
    let (node, honest) = fixture();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let input = if mode & 1 == 0 {
        // Arbitrary bytes as a sealed share.
        rest.to_vec()
    } else {
        // The honest sealed share, XORed with the input (cycled) and cut to the input's length
        // when the second bit is set.
        let mut bytes = honest.clone();
        if !rest.is_empty() {
            for (i, b) in bytes.iter_mut().enumerate() {
                *b ^= rest[i % rest.len()];
            }
        }
        if mode & 2 != 0 {
            bytes.truncate(rest.len());
        }
        bytes
    };
    match open(&node.secret, &slot(), &input) {
        Ok(share) => {
            assert_eq!(&input, honest, "an input other than the honest share opened");
            assert_eq!(share, SHARE);
        }
        Err(_) => assert_ne!(&input, honest, "the honest share did not open"),
    }
    // Any other slot refuses everything.
    let elsewhere = SealContext {
        client: 43,
        ..slot()
    };
    assert!(open(&node.secret, &elsewhere, &input).is_err());
});
