//! A bulk random source for the samplers: AES-128-CTR keyed from the caller's CSPRNG.
//!
//! The exact samplers draw a few words per sample, each decision consuming a word (see
//! `lazy_exp.rs`). Generating those words 256 AES blocks at a time with the `aes-keystream`
//! kernels (VAES / AES-NI, chosen at run time, ≈ 15–20 GB/s per core) makes the randomness
//! nearly free, and the caller's generator is touched once per [`AesCtrRng::from_rng`] (16 bytes
//! of key) however many samples follow — its secret state is used the same way whatever the
//! noise values turn out to be.
//!
//! Security: AES-128 in counter mode under a uniformly random key is a PRG (AES is a PRP, hence
//! a PRF up to the birthday term q²/2^129 for q blocks: below 2^−80 for the 2^24 blocks of even
//! a very large fill), the standard CTR-DRBG construction without reseeding.

use aes_keystream::{Aes128Ctr, Op};
use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroize;

/// Blocks generated per refill (4 KiB of keystream).
const BLOCKS: usize = 256;

/// The nonce of every sampler stream: each stream has its own random key, so a fixed nonce
/// only separates these streams from the share masks' layout by construction.
const NONCE: [u8; 8] = *b"dp-noise";

/// AES-128-CTR keystream words (`aes-keystream` layout: block j is AES_K(nonce ‖ j as u64
/// big-endian), counter from 0, each block read as two little-endian `u64`).
pub(crate) struct AesCtrRng {
    stream: Aes128Ctr,
    next_block: u64,
    words: [u64; 2 * BLOCKS],
    used: usize,
}

impl AesCtrRng {
    /// A generator keyed with 16 bytes from `rng`.
    pub(crate) fn from_rng<R: RngCore + CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut key = [0u8; 16];
        rng.fill_bytes(&mut key);
        AesCtrRng {
            // `Aes128Ctr` wipes its copy of the key when dropped; this one is a stack temporary.
            stream: Aes128Ctr::new(key, NONCE),
            next_block: 0,
            words: [0; 2 * BLOCKS],
            used: 2 * BLOCKS,
        }
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self) {
        self.stream
            .apply(self.next_block, Op::Store(&mut self.words));
        self.next_block += BLOCKS as u64;
        self.used = 0;
    }

    /// [`Self::fill_words`] for a fixed-size batch: when the buffer holds N more words they
    /// are copied with a length known at compile time (inline vector moves, no library call).
    #[inline]
    pub(crate) fn fill_array<const N: usize>(&mut self, dst: &mut [u64; N]) {
        match self.words.get(self.used..self.used + N) {
            Some(src) => {
                dst.copy_from_slice(src);
                self.used += N;
            }
            None => self.fill_words(dst),
        }
    }

    /// `dst.len()` words of the stream, the same words as that many [`RngCore::next_u64`] calls.
    pub(crate) fn fill_words(&mut self, dst: &mut [u64]) {
        let mut dst = dst;
        while !dst.is_empty() {
            if self.used == self.words.len() {
                // Whole blocks go straight into `dst`, without the copy through the buffer.
                let direct = dst.len() / 2 * 2;
                if direct >= self.words.len() {
                    let (head, tail) = dst.split_at_mut(direct);
                    self.stream.apply(self.next_block, Op::Store(head));
                    self.next_block += (direct / 2) as u64;
                    dst = tail;
                    continue;
                }
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

/// The buffered words decide noise values, which are as secret as the data they hide.
impl Drop for AesCtrRng {
    fn drop(&mut self) {
        self.words.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// Word j is half of AES_K(nonce ‖ ⌊j/2⌋ BE) computed block by block with the `aes` crate,
    /// across refills and the direct path.
    #[test]
    fn words_are_the_aes_ctr_keystream() {
        use aes::Aes128;
        use aes::cipher::generic_array::GenericArray;
        use aes::cipher::{BlockEncrypt, KeyInit};
        let mut seed_rng = ChaCha20Rng::seed_from_u64(5);
        let mut key = [0u8; 16];
        seed_rng.clone().fill_bytes(&mut key);
        let mut rng = AesCtrRng::from_rng(&mut seed_rng);
        let cipher = Aes128::new(&key.into());
        let want = |j: u64| {
            let mut block = GenericArray::from([0u8; 16]);
            block[..8].copy_from_slice(&NONCE);
            block[8..].copy_from_slice(&(j / 2).to_be_bytes());
            cipher.encrypt_block(&mut block);
            let half = if j.is_multiple_of(2) {
                &block[..8]
            } else {
                &block[8..]
            };
            u64::from_le_bytes(half.try_into().unwrap())
        };
        let mut j = 0u64;
        for _ in 0..(2 * BLOCKS + 7) {
            assert_eq!(rng.next_u64(), want(j), "word {j}");
            j += 1;
        }
        // Drain the buffer, then a bulk request large enough for the direct path.
        let rest = 2 * BLOCKS - 7;
        let mut bulk = vec![0u64; rest + 5 * BLOCKS + 3];
        rng.fill_words(&mut bulk);
        for w in bulk {
            assert_eq!(w, want(j), "word {j}");
            j += 1;
        }
        assert_eq!(rng.next_u64(), want(j), "word {j}");
    }
}
