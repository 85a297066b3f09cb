//! The mask generator: AES-128-CTR keystreams read as little-endian `u64` words.
//!
//! A mask r_{i,k} (client i, node k >= 1, round ρ) is the keystream of a fresh 16-byte seed s:
//!
//! ```text
//!   K      = AES-128_s(ρ as u64 LE ‖ i as u64 LE)          (per-(round, client) subkey)
//!   IV     = k as u16 LE ‖ "dpdmsk" ‖ 0u64                   (node in the nonce, 64-bit BE counter)
//!   r[j]   = u64::from_le_bytes(keystream[8j .. 8j + 8])
//! ```
//!
//! Why this is enough: AES-128 is a PRF, so under a uniformly random seed K is pseudorandom and
//! independent across (round, client); CTR mode under a pseudorandom key with distinct nonces
//! per node is a PRG, so the words are computationally indistinguishable from uniform over the
//! whole ring Z_2^64 (every bit of the keystream is used, nothing is reduced into a range). A
//! 64-bit block counter never wraps (2^64 blocks = 2^65 words is far beyond any dim). The
//! derivation is domain separation: seeds are fresh from the CSPRNG for every message anyway,
//! but a reused or fixed (insecure test) seed still never repeats a keystream across rounds,
//! clients or nodes.
//!
//! Expansion goes through a fixed 8 KiB buffer (fits L1), so adding a mask of any length into an
//! accumulator allocates nothing that grows with the dimension.

use std::fmt;

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit};
use ctr::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use rand_core::{CryptoRng, RngCore};

use crate::ids::{ClientId, NodeIndex, RoundId};
use crate::kernels;

type Keystream = ctr::Ctr64BE<Aes128>;

/// Words expanded per buffer fill (8 KiB).
pub(crate) const CHUNK_WORDS: usize = 1024;

/// The fixed-size zero input that the keystream is XORed onto (`apply_keystream_b2b`), so the
/// buffer never needs re-zeroing.
static ZEROS: [u8; CHUNK_WORDS * 8] = [0; CHUNK_WORDS * 8];

/// A 16-byte secret that expands into one mask. `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct Seed([u8; 16]);

impl Seed {
    /// Wraps raw bytes (e.g. from the wire).
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The raw bytes (e.g. for the wire). Secret.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// A fresh seed from a cryptographically secure generator.
    pub fn random<R: RngCore + CryptoRng>(rng: &mut R) -> Self {
        let mut bytes = [0u8; 16];
        rng.fill_bytes(&mut bytes);
        Self(bytes)
    }
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Seed(<redacted>)")
    }
}

/// Where a mask belongs: the inputs of the domain separation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MaskDomain {
    pub round: RoundId,
    pub client: ClientId,
    pub node: NodeIndex,
}

/// Reusable expansion buffer (one per thread).
pub(crate) struct Scratch(Box<[[u8; 8]; CHUNK_WORDS]>);

impl Scratch {
    pub fn new() -> Self {
        Self(Box::new([[0u8; 8]; CHUNK_WORDS]))
    }
}

/// Whether a mask is added to or subtracted from the accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sign {
    Add,
    Sub,
}

fn keystream(seed: &Seed, domain: MaskDomain) -> Keystream {
    let kdf = Aes128::new(&seed.0.into());
    let mut block = [0u8; 16];
    block[..8].copy_from_slice(&domain.round.0.to_le_bytes());
    block[8..].copy_from_slice(&domain.client.0.to_le_bytes());
    let mut key = block.into();
    kdf.encrypt_block(&mut key);
    let mut iv = [0u8; 16];
    iv[..2].copy_from_slice(&domain.node.0.to_le_bytes());
    iv[2..8].copy_from_slice(b"dpdmsk");
    Keystream::new(&key, &iv.into())
}

/// `acc[j] ±= r[start_word + j]` for the mask of `seed` in `domain`.
pub(crate) fn apply_mask(
    seed: &Seed,
    domain: MaskDomain,
    start_word: u64,
    acc: &mut [u64],
    sign: Sign,
    scratch: &mut Scratch,
) {
    let mut stream = keystream(seed, domain);
    // Byte offsets below 2^68 are always valid for a 64-bit block counter; the call cannot fail
    // for any dimension that fits in memory.
    let _ = stream.try_seek(start_word.saturating_mul(8));
    for chunk in acc.chunks_mut(CHUNK_WORDS) {
        let words = &mut scratch.0[..chunk.len()];
        let bytes = words.as_flattened_mut();
        let _ = stream.apply_keystream_b2b(&ZEROS[..bytes.len()], bytes);
        match sign {
            Sign::Add => kernels::add_le_words(chunk, words),
            Sign::Sub => kernels::sub_le_words(chunk, words),
        }
    }
}

/// Writes the mask of `seed` in `domain` (words 0..out.len()) into `out`.
pub(crate) fn fill_mask(seed: &Seed, domain: MaskDomain, out: &mut [u64], scratch: &mut Scratch) {
    out.fill(0);
    apply_mask(seed, domain, 0, out, Sign::Add, scratch);
}

/// Raw keystream rate reference: XORs the keystream of `seed` onto `buf` (for benchmarks that
/// compare mask absorption with bare AES-CTR).
pub fn raw_keystream(seed: &Seed, buf: &mut [u8]) {
    let mut stream = keystream(
        seed,
        MaskDomain {
            round: RoundId(0),
            client: ClientId(0),
            node: NodeIndex(0),
        },
    );
    stream.apply_keystream(buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(round: u64, client: u64, node: u16) -> MaskDomain {
        MaskDomain {
            round: RoundId(round),
            client: ClientId(client),
            node: NodeIndex(node),
        }
    }

    fn mask(seed: &Seed, d: MaskDomain, len: usize) -> Vec<u64> {
        let mut out = vec![0; len];
        fill_mask(seed, d, &mut out, &mut Scratch::new());
        out
    }

    #[test]
    fn matches_independent_aes_ctr_computation() {
        // Recompute the first words with the block cipher directly: K = AES_seed(round‖client),
        // block j = AES_K(IV with the last 8 bytes = j as u64 BE).
        let seed = Seed::from_bytes(*b"0123456789abcdef");
        let d = domain(5, 9, 3);
        let kdf = Aes128::new(&(*seed.as_bytes()).into());
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&5u64.to_le_bytes());
        key[8..].copy_from_slice(&9u64.to_le_bytes());
        let mut key = key.into();
        kdf.encrypt_block(&mut key);
        let aes = Aes128::new(&key);
        let mut expect = Vec::new();
        for j in 0u64..3 {
            let mut block = [0u8; 16];
            block[..2].copy_from_slice(&3u16.to_le_bytes());
            block[2..8].copy_from_slice(b"dpdmsk");
            block[8..].copy_from_slice(&j.to_be_bytes());
            let mut b = block.into();
            aes.encrypt_block(&mut b);
            let b: [u8; 16] = b.into();
            expect.push(u64::from_le_bytes(b[..8].try_into().unwrap()));
            expect.push(u64::from_le_bytes(b[8..].try_into().unwrap()));
        }
        assert_eq!(mask(&seed, d, 6), expect);
    }

    #[test]
    fn domains_separate_and_seeking_matches_the_stream() {
        let seed = Seed::from_bytes([7; 16]);
        let base = mask(&seed, domain(1, 2, 3), 3000);
        for other in [domain(2, 2, 3), domain(1, 3, 3), domain(1, 2, 4)] {
            assert_ne!(mask(&seed, other, 4), base[..4]);
        }
        assert_ne!(
            mask(&Seed::from_bytes([8; 16]), domain(1, 2, 3), 4),
            base[..4]
        );
        // Any start offset, odd ones included, continues the same stream across chunk borders.
        let mut scratch = Scratch::new();
        for start in [0usize, 1, 5, 1023, 1024, 1025, 2047] {
            let mut part = vec![0u64; 3000 - start];
            apply_mask(
                &seed,
                domain(1, 2, 3),
                start as u64,
                &mut part,
                Sign::Add,
                &mut scratch,
            );
            assert_eq!(part, base[start..], "start {start}");
            apply_mask(
                &seed,
                domain(1, 2, 3),
                start as u64,
                &mut part,
                Sign::Sub,
                &mut scratch,
            );
            assert!(part.iter().all(|&w| w == 0));
        }
    }

    #[test]
    fn seed_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", Seed::from_bytes([1; 16])),
            "Seed(<redacted>)"
        );
    }
}
