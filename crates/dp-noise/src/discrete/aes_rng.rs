//! A bulk random source for the samplers: AES-128-CTR keyed from the caller's CSPRNG.
//!
//! The exact samplers draw ≈ 10 words per sample, each decision consuming a word (see
//! `lazy_exp.rs`). Generating those words 256 AES blocks at a time (AES-NI through the `aes`
//! crate, several GB/s per core) makes the randomness nearly free, and the caller's generator
//! is touched once per [`AesCtrRng::from_rng`] (16 bytes of key) however many samples follow —
//! its secret state is used the same way whatever the noise values turn out to be.
//!
//! Security: AES-128 in counter mode under a uniformly random key is a PRG (AES is a PRP, hence
//! a PRF up to the birthday term q²/2^129 for q blocks: below 2^−80 for the 2^24 blocks of even
//! a very large fill), the standard CTR-DRBG construction without reseeding.

use aes::Aes128;
use aes::cipher::consts::U16;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockEncrypt, KeyInit};
use rand_core::{CryptoRng, RngCore};

/// Blocks generated per refill (4 KiB of keystream).
const BLOCKS: usize = 256;

/// AES-128-CTR keystream words (128-bit little-endian block counter from 0, each block read as
/// two little-endian `u64`).
pub(crate) struct AesCtrRng {
    cipher: Aes128,
    next_block: u128,
    words: [u64; 2 * BLOCKS],
    used: usize,
}

impl AesCtrRng {
    /// A generator keyed with 16 bytes from `rng`.
    pub(crate) fn from_rng<R: RngCore + CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut key = [0u8; 16];
        rng.fill_bytes(&mut key);
        AesCtrRng {
            cipher: Aes128::new(&key.into()),
            next_block: 0,
            words: [0; 2 * BLOCKS],
            used: 2 * BLOCKS,
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        let mut blocks = [GenericArray::<u8, U16>::default(); BLOCKS];
        for block in &mut blocks {
            block.copy_from_slice(&self.next_block.to_le_bytes());
            self.next_block = self.next_block.wrapping_add(1);
        }
        self.cipher.encrypt_blocks(&mut blocks);
        for (pair, block) in self.words.chunks_exact_mut(2).zip(&blocks) {
            let v = u128::from_le_bytes((*block).into());
            pair[0] = v as u64;
            pair[1] = (v >> 64) as u64;
        }
        self.used = 0;
    }
}

impl AesCtrRng {
    /// `dst.len()` words of the stream, the same words as that many [`RngCore::next_u64`] calls.
    pub(crate) fn fill_words(&mut self, dst: &mut [u64]) {
        let mut dst = dst;
        while !dst.is_empty() {
            if self.used == self.words.len() {
                self.refill();
            }
            let n = dst.len().min(self.words.len() - self.used);
            let (head, tail) = dst.split_at_mut(n);
            head.copy_from_slice(&self.words[self.used..self.used + n]);
            self.used += n;
            dst = tail;
        }
    }
}

impl RngCore for AesCtrRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        if self.used == self.words.len() {
            self.refill();
        }
        let w = self.words[self.used];
        self.used += 1;
        w
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let w = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

impl CryptoRng for AesCtrRng {}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::BlockEncrypt;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// Bulk words are the same stream as single words, across refills.
    #[test]
    fn fill_words_is_the_same_stream() {
        let mut a = AesCtrRng::from_rng(&mut ChaCha20Rng::seed_from_u64(6));
        let mut b = AesCtrRng::from_rng(&mut ChaCha20Rng::seed_from_u64(6));
        let mut bulk = vec![0u64; 3 * BLOCKS + 5];
        a.next_u64();
        b.next_u64();
        a.fill_words(&mut bulk[..7]);
        a.fill_words(&mut bulk[7..]);
        let single: Vec<u64> = (0..bulk.len()).map(|_| b.next_u64()).collect();
        assert_eq!(bulk, single);
        assert_eq!(a.next_u64(), b.next_u64());
    }

    /// Word j is half of AES_K(counter ⌊j/2⌋) computed block by block, across refills.
    #[test]
    fn words_are_the_aes_ctr_keystream() {
        let mut seed_rng = ChaCha20Rng::seed_from_u64(5);
        let mut key = [0u8; 16];
        seed_rng.clone().fill_bytes(&mut key);
        let mut rng = AesCtrRng::from_rng(&mut seed_rng);
        let cipher = Aes128::new(&key.into());
        for j in 0..(2 * BLOCKS as u128 + 7) {
            let mut block = GenericArray::from((j / 2).to_le_bytes());
            cipher.encrypt_block(&mut block);
            let v = u128::from_le_bytes(block.into());
            let want = if j % 2 == 0 {
                v as u64
            } else {
                (v >> 64) as u64
            };
            assert_eq!(rng.next_u64(), want, "word {j}");
        }
    }
}
