//! A round config as it travels between parties: the round's spec (JSON, opaque to this crate;
//! everything but the client token list) and then its token list ([`TokenList`] layout):
//!
//! ```text
//! offset   size field
//!      0      4 magic "DPDC"
//!      4      2 version (u16) = 1
//!      6      2 reserved, must be 0
//!      8      8 L: length of the spec (u64, 1..=MAX_ROUND_SPEC_LEN)
//!     16      L the spec (UTF-8 JSON)
//!   16+L        the token list: "DPDT" header, then 32 bytes per client
//! ```
//!
//! The spec's size grows with the number of nodes, never with the number of clients, so a
//! reader may hold it whole; the token list is read on as a stream ([`TokenListReader`]).

use std::io::Read;

#[cfg(doc)]
use super::token_list::TokenListReader;
use super::token_list::{TokenList, read_full};
use super::{Encode, WireError};
use crate::{Error, Result};

/// First four bytes of a round config.
pub const ROUND_CONFIG_MAGIC: [u8; 4] = *b"DPDC";
/// The round-config envelope version this crate writes and reads.
pub const ROUND_CONFIG_VERSION: u16 = 1;
/// Length of a round config's header in bytes.
pub const ROUND_CONFIG_HEADER_LEN: usize = 16;
/// The longest spec a round config may carry (ample for 2^16 node keys).
pub const MAX_ROUND_SPEC_LEN: usize = 16 << 20;

/// The header of a round config whose spec is `spec_len` bytes long.
///
/// # Errors
/// [`Error::InvalidParameter`] for an empty spec or one longer than [`MAX_ROUND_SPEC_LEN`].
pub fn round_config_header(spec_len: usize) -> Result<[u8; ROUND_CONFIG_HEADER_LEN]> {
    if spec_len == 0 || spec_len > MAX_ROUND_SPEC_LEN {
        return Err(Error::InvalidParameter {
            name: "round spec length",
            value: spec_len as f64,
            requirement: "in 1..=16 MiB",
        });
    }
    let mut h = [0u8; ROUND_CONFIG_HEADER_LEN];
    h[..4].copy_from_slice(&ROUND_CONFIG_MAGIC);
    h[4..6].copy_from_slice(&ROUND_CONFIG_VERSION.to_le_bytes());
    h[8..16].copy_from_slice(&(spec_len as u64).to_le_bytes());
    Ok(h)
}

/// The round config of `spec` with client token hashes `tokens`.
///
/// # Errors
/// As [`round_config_header`], and for more than 2^32 hashes.
pub fn encode_round_config(spec: &[u8], tokens: &TokenList) -> Result<Vec<u8>> {
    let head = round_config_header(spec.len())?;
    let mut out = Vec::with_capacity(head.len() + spec.len() + tokens.encoded_len());
    out.extend_from_slice(&head);
    out.extend_from_slice(spec);
    tokens.encode_into(&mut out)?;
    Ok(out)
}

/// Reads a round config's header and spec off the front of `source`, which is left at the
/// start of the token list (open it with [`TokenListReader::open`] once the spec says how many
/// clients there are).
///
/// # Errors
/// [`Error::Wire`] for a malformed or truncated header or spec, [`WireError::SpecTooLong`] for
/// a declared length above [`MAX_ROUND_SPEC_LEN`] (nothing is allocated for it);
/// [`Error::Transport`] if `source` fails.
pub fn read_round_spec(source: &mut impl Read) -> Result<Vec<u8>> {
    let mut head = [0u8; ROUND_CONFIG_HEADER_LEN];
    let got = read_full(source, &mut head)?;
    if got < ROUND_CONFIG_HEADER_LEN {
        return Err(WireError::Truncated {
            expected: ROUND_CONFIG_HEADER_LEN,
            actual: got,
        }
        .into());
    }
    if head[..4] != ROUND_CONFIG_MAGIC {
        return Err(WireError::BadMagic.into());
    }
    let version = u16::from_le_bytes([head[4], head[5]]);
    if version != ROUND_CONFIG_VERSION {
        return Err(WireError::UnsupportedRoundConfigVersion(version).into());
    }
    if head[6..8] != [0, 0] {
        return Err(WireError::ReservedNotZero.into());
    }
    let len = u64::from_le_bytes(head[8..16].try_into().unwrap_or([0; 8]));
    if len == 0 || len > MAX_ROUND_SPEC_LEN as u64 {
        return Err(WireError::SpecTooLong(len).into());
    }
    let mut spec = vec![0u8; len as usize];
    let got = read_full(source, &mut spec)?;
    if got < spec.len() {
        return Err(WireError::Truncated {
            expected: ROUND_CONFIG_HEADER_LEN + spec.len(),
            actual: ROUND_CONFIG_HEADER_LEN + got,
        }
        .into());
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TokenListReader;

    fn tokens() -> TokenList {
        TokenList(vec![[7; 32], [9; 32]])
    }

    #[test]
    fn encodes_the_documented_layout_and_reads_back() {
        let spec = br#"{"n":2}"#;
        let bytes = encode_round_config(spec, &tokens()).unwrap();
        let mut want = b"DPDC".to_vec();
        want.extend_from_slice(&[1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(spec);
        want.extend_from_slice(b"DPDT");
        want.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[7; 32]);
        want.extend_from_slice(&[9; 32]);
        assert_eq!(bytes, want);
        let mut source = &bytes[..];
        assert_eq!(read_round_spec(&mut source).unwrap(), spec);
        let mut list = TokenListReader::open(source, 2).unwrap();
        assert_eq!(list.next_hash().unwrap(), Some([7; 32]));
        assert_eq!(list.next_hash().unwrap(), Some([9; 32]));
        list.finish().unwrap();
    }

    #[test]
    fn malformed_configs_are_refused_with_their_cause() {
        let good = encode_round_config(b"{}", &tokens()).unwrap();
        let edit = |at: usize, b: u8| {
            let mut v = good.clone();
            v[at] = b;
            v
        };
        let open = |bytes: &[u8]| {
            let mut source = bytes;
            read_round_spec(&mut source)
                .and_then(|_| TokenListReader::open(source, 2))
                .and_then(TokenListReader::finish)
                .unwrap_err()
        };
        assert_eq!(
            open(&good[..3]),
            WireError::Truncated {
                expected: 16,
                actual: 3
            }
            .into()
        );
        assert_eq!(
            open(b"{\"round\": 1, \"n_clients\": 2}"),
            WireError::BadMagic.into()
        );
        assert_eq!(
            open(&edit(4, 9)),
            WireError::UnsupportedRoundConfigVersion(9).into()
        );
        assert_eq!(open(&edit(6, 1)), WireError::ReservedNotZero.into());
        assert_eq!(
            open(&edit(15, 1)),
            WireError::SpecTooLong(1 << 56 | 2).into()
        );
        let mut empty = good.clone();
        empty[8] = 0;
        assert_eq!(open(&empty), WireError::SpecTooLong(0).into());
        assert_eq!(
            open(&good[..17]),
            WireError::Truncated {
                expected: 18,
                actual: 17
            }
            .into()
        );
        // The token list's own checks follow the spec.
        assert_eq!(open(&edit(18, b'X')), WireError::BadMagic.into());
        assert_eq!(
            open(&good[..good.len() - 1]),
            WireError::Truncated {
                expected: 16 + 64,
                actual: 16 + 63
            }
            .into()
        );
        assert!(encode_round_config(b"", &tokens()).is_err());
    }
}
