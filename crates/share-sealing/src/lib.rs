//! HPKE sealing of DCA shares (RFC 9180, base mode) to the public key of the compute node that
//! will sum them.
//!
//! Suite: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305 (RFC 9180 ids 0x0020,
//! 0x0001, 0x0003). TLS protects one hop; a sealed share stays unreadable through any relay,
//! queue or aggregator it passes, and the associated data ([`SealContext`]: round id, round
//! config hash, client id, node index) makes it unusable anywhere else: a share replayed into
//! another round, moved to another client's slot or sent to another node fails to open.
//!
//! The share bytes themselves are opaque here (this crate does not parse the wire format of
//! `fixedpoint-shares`), and the crate has no network dependency, so the C library can offer
//! sealing to hosts that upload with their own HTTP client.
//!
//! HPKE is the `hpke` crate (rust-hpke) on x25519-dalek. The crate's own RFC 9180 code, kept
//! earlier for speed, was retired once `hpke` 0.15 came within 20% of it in a seed node's CPU per
//! upload (measured: `docs/src/results/crates-vs-own.md`); it survives only as the tests'
//! independent reference (`src/rfc9180.rs`, compiled for tests only), against which `hpke` is
//! checked both ways, with RFC 9180's vectors and Wycheproof's X25519 vectors.
//!
//! Sealed layout: `enc` (32 bytes, the sender's ephemeral X25519 public key) ‖ AEAD ciphertext
//! (plaintext length + 16-byte tag).
//!
//! ```
//! use share_sealing::{NodeKeyPair, SEAL_OVERHEAD, SealContext, open, seal};
//!
//! let node = NodeKeyPair::generate();
//! let slot = SealContext { round: 7, config_hash: [0x11; 32], client: 42, node: 1 };
//! let share = b"wire bytes of one share message";
//!
//! let sealed = seal(&node.public, &slot, share)?;
//! assert_eq!(sealed.len(), share.len() + SEAL_OVERHEAD);
//! assert_eq!(open(&node.secret, &slot, &sealed)?, share);
//!
//! // Replayed into another client's slot, it does not open.
//! let elsewhere = SealContext { client: 43, ..slot };
//! assert!(open(&node.secret, &elsewhere, &sealed).is_err());
//! # Ok::<(), share_sealing::Error>(())
//! ```

mod context;
mod error;
mod hpke_path;
mod keys;
#[cfg(test)]
mod rfc9180;
mod seal;

#[cfg(test)]
mod interop_tests;
#[cfg(test)]
mod rfc9180_vectors;
#[cfg(test)]
mod wycheproof_tests;

pub use context::{AAD_LABEL, AAD_LEN, HPKE_INFO, SealContext};
pub use error::Error;
pub use keys::{NodeKeyPair, NodePublicKey, NodeSecretKey, PUBLIC_KEY_LEN, SECRET_KEY_LEN};
pub use seal::{ENC_LEN, SEAL_OVERHEAD, TAG_LEN, open, seal, sealed_len};

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
