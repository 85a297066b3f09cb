//! Where randomness comes from.
//!
//! Production paths use [`RngSource::Os`]: a ChaCha20 generator keyed from the operating system's
//! CSPRNG. [`RngSource::InsecureFixedSeed`] exists for tests and reproducible experiments only —
//! anyone who knows the seed knows every "secret" mask and every noise value.
//!
//! Every generator handed out is a [`SecretRng`]: its key and buffered output are overwritten
//! when it is dropped, so a client's mask seeds and noise do not outlive it in freed memory.

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, RngCore, SeedableRng};

use crate::{Error, Result};

/// Domain tag mixed into a fixed seed when deriving a child, so that a child's seed is not an
/// output of the parent's own stream.
const DERIVE_TAG: u64 = 0x6470_6469_7374_2d64; // "dpdist-d"

/// A choice of randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RngSource {
    /// ChaCha20 keyed from the OS CSPRNG (fresh key on every [`RngSource::rng`] call).
    Os,
    /// ChaCha20 keyed deterministically from a 64-bit seed. NOT SECRET: for tests and
    /// reproducible experiments only.
    InsecureFixedSeed(u64),
}

impl RngSource {
    /// A generator from this source.
    ///
    /// # Panics
    /// If the operating system's random number generator fails (only for [`RngSource::Os`]);
    /// use [`RngSource::try_rng`] to get an error instead.
    pub fn rng(&self) -> SecretRng {
        SecretRng(match self {
            RngSource::Os => ChaCha20Rng::from_os_rng(),
            RngSource::InsecureFixedSeed(seed) => ChaCha20Rng::seed_from_u64(*seed),
        })
    }

    /// Like [`RngSource::rng`] but reports an OS failure as [`Error::OsRng`].
    pub fn try_rng(&self) -> Result<SecretRng> {
        Ok(SecretRng(match self {
            RngSource::Os => {
                ChaCha20Rng::try_from_os_rng().map_err(|e| Error::OsRng(e.to_string()))?
            }
            RngSource::InsecureFixedSeed(seed) => ChaCha20Rng::seed_from_u64(*seed),
        }))
    }

    /// An independent child source for `stream` (e.g. a client index).
    ///
    /// `Os` stays `Os` (every generator is freshly keyed anyway). A fixed seed derives a new
    /// fixed seed deterministically: the first word of ChaCha20 keyed by the tagged parent seed,
    /// on ChaCha stream `stream`. Different streams give unrelated seeds.
    pub fn derive(&self, stream: u64) -> RngSource {
        match self {
            RngSource::Os => RngSource::Os,
            RngSource::InsecureFixedSeed(seed) => {
                let mut keyed = ChaCha20Rng::seed_from_u64(seed ^ DERIVE_TAG);
                keyed.set_stream(stream);
                RngSource::InsecureFixedSeed(keyed.next_u64())
            }
        }
    }

    /// True for the fixed-seed variant.
    pub fn is_insecure(&self) -> bool {
        matches!(self, RngSource::InsecureFixedSeed(_))
    }
}

/// A ChaCha20 generator that overwrites its state when dropped.
///
/// `rand_chacha` does not implement `zeroize`, and reaching the generator's bytes would take
/// `unsafe`, which this crate does not use. Instead `drop` assigns a generator keyed with zeros
/// over the whole value — key, counter, stream and the 256-byte output buffer — and hands it to
/// [`std::hint::black_box`], so the store is treated as observed and not removed as dead. This
/// is best effort in the same sense as `zeroize` itself: copies made by earlier moves of the
/// value (before it reached its final place) are not reached.
pub struct SecretRng(ChaCha20Rng);

impl SecretRng {
    fn wipe(&mut self) {
        self.0 = ChaCha20Rng::from_seed([0; 32]);
        std::hint::black_box(&mut self.0);
    }
}

impl Drop for SecretRng {
    fn drop(&mut self) {
        self.wipe();
    }
}

/// Redacted: the state is the secret.
impl std::fmt::Debug for SecretRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretRng(..)")
    }
}

impl RngCore for SecretRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
}

impl CryptoRng for SecretRng {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_seed_is_reproducible_and_os_is_not() {
        let a = RngSource::InsecureFixedSeed(7).rng().next_u64();
        let b = RngSource::InsecureFixedSeed(7).rng().next_u64();
        assert_eq!(a, b);
        let c = RngSource::InsecureFixedSeed(8).rng().next_u64();
        assert_ne!(a, c);
        // Two OS-keyed generators agree on a 128-bit prefix with probability 2^-128.
        let mut x = RngSource::Os.rng();
        let mut y = RngSource::Os.rng();
        assert_ne!((x.next_u64(), x.next_u64()), (y.next_u64(), y.next_u64()));
        assert!(RngSource::Os.try_rng().is_ok());
    }

    #[test]
    fn derive_is_deterministic_and_separates_streams() {
        let parent = RngSource::InsecureFixedSeed(42);
        assert_eq!(parent.derive(3), parent.derive(3));
        assert_ne!(parent.derive(3), parent.derive(4));
        assert_ne!(parent.derive(0), parent);
        // The child's seed is not the parent's first output.
        let first = parent.rng().next_u64();
        assert_ne!(parent.derive(0), RngSource::InsecureFixedSeed(first));
        assert_eq!(RngSource::Os.derive(9), RngSource::Os);
        assert!(parent.derive(1).is_insecure());
        assert!(!RngSource::Os.is_insecure());
    }

    #[test]
    fn secret_rng_is_the_plain_chacha20_stream() {
        // Wrapping changes nothing about the output: reproducible runs stay reproducible.
        let mut wrapped = RngSource::InsecureFixedSeed(11).rng();
        let mut plain = ChaCha20Rng::seed_from_u64(11);
        for _ in 0..100 {
            assert_eq!(wrapped.next_u64(), plain.next_u64());
        }
        let (mut a, mut b) = ([0u8; 77], [0u8; 77]);
        wrapped.fill_bytes(&mut a);
        plain.fill_bytes(&mut b);
        assert_eq!(a, b);
        assert_eq!(format!("{wrapped:?}"), "SecretRng(..)");
    }

    #[test]
    fn wipe_leaves_the_zero_keyed_generator() {
        // What drop leaves behind is the zero-keyed generator at its start, whatever the key
        // and position were.
        let mut wiped = RngSource::InsecureFixedSeed(12).rng();
        wiped.next_u64();
        wiped.wipe();
        let mut zero = ChaCha20Rng::from_seed([0; 32]);
        assert_eq!(wiped.next_u64(), zero.next_u64());
    }
}
