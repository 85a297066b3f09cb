//! Secret text the services hold (bearer tokens): wiped from memory when dropped (the
//! `secrecy` crate's `SecretString` underneath), compared in constant time, never printed.
//!
//! Wiping is best effort: it clears the buffers this type owns; copies that other libraries make
//! (an HTTP header being sent, the kernel's socket buffers) are outside its reach.

use std::path::Path;

use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::Result;

/// A bearer token (or other secret string) that is zeroised when dropped.
#[derive(Clone)]
pub struct SecretString(secrecy::SecretString);

// The only field is `secrecy`'s `SecretBox`, which wipes the string when it is dropped.
impl ZeroizeOnDrop for SecretString {}

impl SecretString {
    /// Takes ownership of `text`, wiping its buffer once copied (a `String`'s spare capacity
    /// would otherwise be reallocated away unwiped when `secrecy` boxes it).
    pub fn new(mut text: String) -> Self {
        let secret = secrecy::SecretString::from(text.as_str());
        text.zeroize();
        SecretString(secret)
    }

    /// Reads a token file, without surrounding whitespace; the file's whole text is wiped too.
    pub fn read_file(path: &Path) -> Result<Self> {
        let text = Zeroizing::new(std::fs::read_to_string(path)?);
        Ok(SecretString(secrecy::SecretString::from(text.trim())))
    }

    /// The secret itself, to be sent (e.g. as a bearer token) or hashed.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl From<String> for SecretString {
    fn from(text: String) -> Self {
        SecretString::new(text)
    }
}

impl From<&str> for SecretString {
    fn from(text: &str) -> Self {
        SecretString(secrecy::SecretString::from(text))
    }
}

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretString(..)")
    }
}

/// SHA-256 of a bearer token, as listed in the spec.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether `presented` hashes to `expected` (a [`token_hash`]), in time independent of where the
/// hashes differ.
pub fn token_matches(presented: &str, expected: &[u8; 32]) -> bool {
    bool::from(token_hash(presented).ct_eq(expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wiped_on_drop<T: ZeroizeOnDrop>() {}

    #[test]
    fn secret_strings_are_wiped_on_drop_and_never_printed() {
        wiped_on_drop::<SecretString>();
        let token = SecretString::from("hunter2-token");
        assert_eq!(format!("{token:?}"), "SecretString(..)");
        assert_eq!(token.expose(), "hunter2-token");
    }

    #[test]
    fn token_files_are_read_without_surrounding_whitespace() {
        let dir = crate::scratch_dir("secret");
        let path = dir.join("token");
        std::fs::write(&path, "  s3cret\n").unwrap();
        assert_eq!(SecretString::read_file(&path).unwrap().expose(), "s3cret");
        assert!(SecretString::read_file(&dir.join("absent")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_token_matches_only_its_own_hash() {
        // SHA-256("abc") from FIPS 180-2, Appendix B.1.
        let abc = [
            0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
            0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
            0xf2, 0x00, 0x15, 0xad,
        ];
        assert!(token_matches("abc", &abc));
        assert!(!token_matches("abd", &abc));
        assert!(!token_matches("", &abc));
    }
}
