//! Where randomness comes from.
//!
//! Production paths use [`RngSource::Os`]: a ChaCha20 generator keyed from the operating system's
//! CSPRNG. [`RngSource::InsecureFixedSeed`] exists for tests and reproducible experiments only —
//! anyone who knows the seed knows every "secret" mask and every noise value.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

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
    pub fn rng(&self) -> ChaCha20Rng {
        match self {
            RngSource::Os => ChaCha20Rng::from_os_rng(),
            RngSource::InsecureFixedSeed(seed) => ChaCha20Rng::seed_from_u64(*seed),
        }
    }

    /// Like [`RngSource::rng`] but reports an OS failure as [`Error::OsRng`].
    pub fn try_rng(&self) -> Result<ChaCha20Rng> {
        match self {
            RngSource::Os => {
                ChaCha20Rng::try_from_os_rng().map_err(|e| Error::OsRng(e.to_string()))
            }
            RngSource::InsecureFixedSeed(seed) => Ok(ChaCha20Rng::seed_from_u64(*seed)),
        }
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
}
