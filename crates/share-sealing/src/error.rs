//! Errors of sealing and opening.

use std::fmt;

/// Why a share could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A key had the wrong length or is not a valid X25519 key.
    InvalidKey {
        /// Which key ("public" or "secret").
        which: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// The sealed bytes are shorter than the fixed overhead (`enc` + tag).
    Truncated {
        /// Length received.
        len: usize,
        /// Minimum length ([`crate::SEAL_OVERHEAD`]).
        min: usize,
    },
    /// Opening failed: wrong key, wrong context (round, config, client or node) or tampered bytes.
    /// Deliberately one variant: the reason is not revealed.
    OpenFailed,
    /// The HPKE library refused to seal (should not happen with valid keys).
    SealFailed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidKey { which, len } => {
                write!(f, "invalid X25519 {which} key ({len} bytes; expected 32)")
            }
            Error::Truncated { len, min } => {
                write!(
                    f,
                    "sealed share of {len} bytes is shorter than the {min}-byte overhead"
                )
            }
            Error::OpenFailed => write!(
                f,
                "sealed share does not open: wrong node key, wrong round/config/client/node, or tampered"
            ),
            Error::SealFailed => write!(f, "HPKE sealing failed"),
        }
    }
}

impl std::error::Error for Error {}
