//! Lower-case hex for keys, hashes and round ids.

/// Hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// Hex of `bytes` written into `buf` (which needs twice their length; digits that do not fit
/// are left out), without allocating.
pub fn encode_into<'a>(bytes: &[u8], buf: &'a mut [u8]) -> &'a str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = buf.len().min(2 * bytes.len()) & !1;
    for (pair, b) in buf[..n].chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[..n]).unwrap_or_default()
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Exactly `N` bytes from `2N` hex digits (either case); `None` otherwise.
pub fn decode_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(s[2 * i])? << 4) | digit(s[2 * i + 1])?;
    }
    Some(out)
}

/// The bytes of an even number of hex digits (either case); `None` otherwise.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|pair| Some((digit(pair[0])? << 4) | digit(pair[1])?))
        .collect()
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
        assert_eq!(decode_array::<2>("zz00"), None);
    }
}
