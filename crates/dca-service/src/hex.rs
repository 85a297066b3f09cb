//! Lower-case hex for keys, hashes and round ids: the `hex` crate, in the shapes the services
//! use (fixed-size arrays, a caller's buffer, `Option` for what does not parse).

/// Hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Hex of `bytes` written into `buf` (which needs twice their length; digits that do not fit
/// are left out), without allocating.
pub fn encode_into<'a>(bytes: &[u8], buf: &'a mut [u8]) -> &'a str {
    let n = (buf.len() / 2).min(bytes.len());
    let out = &mut buf[..2 * n];
    match hex::encode_to_slice(&bytes[..n], out) {
        // Only ASCII digits were written.
        Ok(()) => std::str::from_utf8(out).unwrap_or_default(),
        Err(_) => "",
    }
}

/// Exactly `N` bytes from `2N` hex digits (either case); `None` otherwise.
pub fn decode_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// The bytes of an even number of hex digits (either case); `None` otherwise.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    hex::decode(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        assert_eq!(encode(&[0x00, 0xab, 0x7f]), "00ab7f");
        let mut buf = [0u8; 6];
        assert_eq!(encode_into(&[0x00, 0xab, 0x7f], &mut buf), "00ab7f");
        assert_eq!(encode_into(&[0x00, 0xab, 0x7f], &mut buf[..5]), "00ab");
        assert_eq!(decode_array::<3>("00AB7f"), Some([0x00, 0xab, 0x7f]));
        assert_eq!(decode_array::<3>("00ab7"), None);
        assert_eq!(decode_array::<3>("00ab7f00"), None);
        assert_eq!(decode_array::<2>("zz00"), None);
        assert_eq!(decode("0a0B"), Some(vec![0x0a, 0x0b]));
        assert_eq!(decode("0a0"), None);
    }
}
