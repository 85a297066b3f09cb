//! A compute node's X25519 key pair.

use hpke::kem::X25519HkdfSha256;
use hpke::{Deserializable, Kem as _, Serializable};
use rand_core::{OsRng, TryRngCore};

use crate::{Error, Result};

type Kem = X25519HkdfSha256;

/// Length of a serialized public key.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Length of a serialized secret key.
pub const SECRET_KEY_LEN: usize = 32;

/// A node's public key: what clients seal to. Published in the round configuration.
#[derive(Clone, PartialEq, Eq)]
pub struct NodePublicKey(pub(crate) <Kem as hpke::Kem>::PublicKey);

/// A node's secret key. Never leaves the node.
#[derive(Clone)]
pub struct NodeSecretKey(pub(crate) <Kem as hpke::Kem>::PrivateKey);

/// Both halves.
#[derive(Clone)]
pub struct NodeKeyPair {
    /// The secret half.
    pub secret: NodeSecretKey,
    /// The public half.
    pub public: NodePublicKey,
}

impl NodeKeyPair {
    /// A fresh key pair from the operating system's CSPRNG.
    pub fn generate() -> Self {
        let (sk, pk) = Kem::gen_keypair(&mut OsRng.unwrap_err());
        NodeKeyPair {
            secret: NodeSecretKey(sk),
            public: NodePublicKey(pk),
        }
    }

    /// The key pair of a stored secret key (the public half is recomputed).
    pub fn from_secret_bytes(bytes: &[u8]) -> Result<Self> {
        let secret = NodeSecretKey::from_bytes(bytes)?;
        let public = NodePublicKey(<Kem as hpke::Kem>::sk_to_pk(&secret.0));
        Ok(NodeKeyPair { secret, public })
    }
}

impl NodePublicKey {
    /// Parses 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Kem as hpke::Kem>::PublicKey::from_bytes(bytes)
            .map(NodePublicKey)
            .map_err(|_| Error::InvalidKey {
                which: "public",
                len: bytes.len(),
            })
    }

    /// The 32 bytes.
    pub fn to_bytes(&self) -> [u8; PUBLIC_KEY_LEN] {
        let mut out = [0u8; PUBLIC_KEY_LEN];
        out.copy_from_slice(&self.0.to_bytes());
        out
    }
}

impl std::fmt::Debug for NodePublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: String = self.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        write!(f, "NodePublicKey({hex})")
    }
}

impl NodeSecretKey {
    /// Parses 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Kem as hpke::Kem>::PrivateKey::from_bytes(bytes)
            .map(NodeSecretKey)
            .map_err(|_| Error::InvalidKey {
                which: "secret",
                len: bytes.len(),
            })
    }

    /// The 32 bytes (for storing the key in the node's key file).
    pub fn to_bytes(&self) -> [u8; SECRET_KEY_LEN] {
        let mut out = [0u8; SECRET_KEY_LEN];
        out.copy_from_slice(&self.0.to_bytes());
        out
    }
}

impl std::fmt::Debug for NodeSecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeSecretKey(..)")
    }
}

#[cfg(test)]
mod wipe_tests {
    /// hpke's X25519 secret key is an `x25519_dalek::StaticSecret` (a `[u8; 32]`); only with
    /// x25519-dalek's `zeroize` feature, which this crate's manifest turns on, does it implement
    /// `Zeroize` and get the `#[zeroize(drop)]` Drop impl. Without the feature this fails to
    /// compile, and a plain byte array would not need dropping at all.
    #[test]
    fn the_node_secret_key_is_wiped_on_drop() {
        fn zeroizable<T: zeroize::Zeroize>() {}
        zeroizable::<x25519_dalek::StaticSecret>();
        assert!(std::mem::needs_drop::<x25519_dalek::StaticSecret>());
        assert!(!std::mem::needs_drop::<[u8; 32]>());
    }
}
