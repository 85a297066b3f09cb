//! A compute node's X25519 key pair.

use rand_core::{OsRng, RngCore, TryRngCore};
use zeroize::Zeroizing;

use crate::{Error, Result};

/// Length of a serialized public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Length of a serialized secret key.
pub const SECRET_KEY_LEN: usize = 32;

/// A node's public key: what clients seal to. Published in the round configuration. Any 32
/// bytes parse (as with RFC 7748's X25519, which takes every u-coordinate); a low-order key is
/// refused when sealing to it (its DH output is all zero).
#[derive(Clone, PartialEq, Eq)]
pub struct NodePublicKey(pub(crate) [u8; PUBLIC_KEY_LEN]);

/// A node's secret key. Never leaves the node. Keeps its serialized public key beside it (for
/// [`NodeSecretKey::public_key`]; the `hpke` crate recomputes it inside every open, for the KEM
/// context of RFC 9180 §4.1).
#[derive(Clone)]
pub struct NodeSecretKey {
    /// The 32 bytes as stored (clamped when used; wiped on drop).
    pub(crate) secret: Zeroizing<[u8; SECRET_KEY_LEN]>,
    /// `SerializePublicKey(pk(secret))`.
    pub(crate) public: [u8; PUBLIC_KEY_LEN],
}

/// Both halves.
#[derive(Clone)]
pub struct NodeKeyPair {
    /// The secret half.
    pub secret: NodeSecretKey,
    /// The public half.
    pub public: NodePublicKey,
}

impl NodeKeyPair {
    /// A fresh key pair from the operating system's CSPRNG (32 uniform bytes, clamped when
    /// used, as RFC 9180 §7.1.3 allows for `GenerateKeyPair`).
    pub fn generate() -> Self {
        let mut bytes = Zeroizing::new([0u8; SECRET_KEY_LEN]);
        OsRng.unwrap_err().fill_bytes(&mut bytes[..]);
        let secret = NodeSecretKey::from_array(&bytes);
        let public = secret.public_key();
        NodeKeyPair { secret, public }
    }

    /// The key pair of a stored secret key (the public half is recomputed).
    pub fn from_secret_bytes(bytes: &[u8]) -> Result<Self> {
        let secret = NodeSecretKey::from_bytes(bytes)?;
        let public = secret.public_key();
        Ok(NodeKeyPair { secret, public })
    }
}

impl NodePublicKey {
    /// Parses 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <[u8; PUBLIC_KEY_LEN]>::try_from(bytes)
            .map(NodePublicKey)
            .map_err(|_| Error::InvalidKey {
                which: "public",
                len: bytes.len(),
            })
    }

    /// The 32 bytes.
    pub fn to_bytes(&self) -> [u8; PUBLIC_KEY_LEN] {
        self.0
    }
}

impl std::fmt::Debug for NodePublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: String = self.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "NodePublicKey({hex})")
    }
}

impl NodeSecretKey {
    fn from_array(bytes: &[u8; SECRET_KEY_LEN]) -> Self {
        let public = crate::hpke_path::public_key(bytes);
        NodeSecretKey {
            secret: Zeroizing::new(*bytes),
            public,
        }
    }

    /// Parses 32 bytes (any 32 bytes: the scalar is clamped when used, RFC 7748 §5).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let array: Zeroizing<[u8; SECRET_KEY_LEN]> =
            Zeroizing::new(bytes.try_into().map_err(|_| Error::InvalidKey {
                which: "secret",
                len: bytes.len(),
            })?);
        Ok(Self::from_array(&array))
    }

    /// The 32 bytes (for storing the key in the node's key file).
    pub fn to_bytes(&self) -> [u8; SECRET_KEY_LEN] {
        *self.secret
    }

    /// Its public key.
    pub fn public_key(&self) -> NodePublicKey {
        NodePublicKey(self.public)
    }
}

impl std::fmt::Debug for NodeSecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeSecretKey(..)")
    }
}

#[cfg(test)]
mod wipe_tests {
    /// The node's secret bytes sit in `Zeroizing` (wiped on drop); `hpke`'s private key made
    /// from them for each open is an x25519-dalek `StaticSecret`, wiped on drop as well.
    #[test]
    fn the_node_secret_key_is_wiped_on_drop() {
        fn zeroize_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        zeroize_on_drop::<zeroize::Zeroizing<[u8; 32]>>();
        assert!(std::mem::needs_drop::<super::NodeSecretKey>());
        assert!(!std::mem::needs_drop::<[u8; 32]>());
    }
}
