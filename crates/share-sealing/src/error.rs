//! Errors of sealing and opening.

/// Why a share could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A key had the wrong length or is not a valid X25519 key.
    #[error("invalid X25519 {which} key ({len} bytes; expected 32)")]
    InvalidKey {
        /// Which key ("public" or "secret").
        which: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// The sealed bytes are shorter than the fixed overhead (`enc` + tag).
    #[error("sealed share of {len} bytes is shorter than the {min}-byte overhead")]
    Truncated {
        /// Length received.
        len: usize,
        /// Minimum length ([`crate::SEAL_OVERHEAD`]).
        min: usize,
    },
    /// Opening failed: wrong key, wrong context (round, config, client or node) or tampered bytes.
    /// Deliberately one variant: the reason is not revealed.
    #[error(
        "sealed share does not open: wrong node key, wrong round/config/client/node, or tampered"
    )]
    OpenFailed,
    /// The HPKE library refused to seal (should not happen with valid keys).
    #[error("HPKE sealing failed")]
    SealFailed,
}
