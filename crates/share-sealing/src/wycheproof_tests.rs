//! Project Wycheproof's X25519 vectors (`tests-data/wycheproof/x25519_test.json`, vendored with
//! its license): 518 cases — RFC 7748 known answers, edge cases of the arithmetic, points on
//! the twist, non-canonical and low-order public values.
//!
//! Checked: the X25519 function itself (x25519-dalek 3's ladder, which the `hpke` crate runs, and
//! x25519-dalek 2's, which the tests' RFC 9180 reference runs), and each vector as an HPKE open on
//! both paths (`hpke` and the reference), with the vector's private key as the node's key and its public
//! value as `enc` — a share sealed with the vector's shared secret as the DH output opens, and
//! one whose shared secret is all zero is refused (RFC 9180 §7.1.4).

use serde_json::Value;

use crate::interop_tests::seal_with_dh;
use crate::rfc9180_vectors::hex32;
use crate::seal::{Path, open_on};
use crate::{Error, NodeKeyPair, SealContext};

struct Case {
    id: u64,
    private: [u8; 32],
    public: [u8; 32],
    shared: [u8; 32],
    result: String,
}

fn cases() -> Vec<Case> {
    let text = include_str!("../tests-data/wycheproof/x25519_test.json");
    let json: Value = serde_json::from_str(text).expect("the vendored JSON parses");
    let mut out = Vec::new();
    for group in json["testGroups"].as_array().expect("testGroups") {
        assert_eq!(group["curve"], "curve25519");
        for t in group["tests"].as_array().expect("tests") {
            let field = |name: &str| t[name].as_str().expect(name).to_string();
            out.push(Case {
                id: t["tcId"].as_u64().expect("tcId"),
                private: hex32(&field("private")),
                public: hex32(&field("public")),
                shared: hex32(&field("shared")),
                result: field("result"),
            });
        }
    }
    assert_eq!(
        out.len() as u64,
        json["numberOfTests"].as_u64().expect("numberOfTests")
    );
    out
}

#[test]
fn every_vector_on_both_x25519_implementations() {
    let cases = cases();
    assert_eq!(cases.len(), 518);
    for c in &cases {
        // Every result is "valid" or "acceptable": X25519 as a function is defined for all of
        // them, and both implementations must give the vector's output.
        assert!(c.result == "valid" || c.result == "acceptable", "{}", c.id);
        assert_eq!(
            x25519_dalek::x25519(c.private, c.public),
            c.shared,
            "x25519-dalek 2, tcId {}",
            c.id
        );
        assert_eq!(
            x25519_dalek_3::x25519(c.private, c.public),
            c.shared,
            "x25519-dalek 3, tcId {}",
            c.id
        );
    }
}

#[test]
fn every_vector_as_an_hpke_open_on_both_paths() {
    let ctx = SealContext {
        round: 3,
        config_hash: [0x77; 32],
        client: 9,
        node: 1,
    };
    let (mut opened, mut refused) = (0, 0);
    for c in cases() {
        let node = NodeKeyPair::from_secret_bytes(&c.private).unwrap();
        let sealed = seal_with_dh(&c.shared, &c.public, &node.public, &ctx.aad(), b"share");
        for path in Path::ALL {
            let got = open_on(path, &node.secret, &ctx, &sealed);
            if c.shared == [0u8; 32] {
                assert_eq!(got, Err(Error::OpenFailed), "{path:?} tcId {}", c.id);
            } else {
                assert_eq!(got.as_deref(), Ok(&b"share"[..]), "{path:?} tcId {}", c.id);
            }
        }
        if c.shared == [0u8; 32] {
            refused += 1;
        } else {
            opened += 1;
        }
    }
    // 31 vectors have an all-zero shared secret (flag ZeroSharedSecret).
    assert_eq!((opened, refused), (487, 31));
}
