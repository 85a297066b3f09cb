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
//! Expansion adds the keystream straight into the accumulator a few blocks at a time, so adding
//! a mask of any length allocates nothing and makes one pass over the accumulator.

use std::fmt;

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit};
use rand_core::{CryptoRng, RngCore};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

use aes_keystream::{Aes128Ctr, Backend, Op};

use crate::ids::{ClientId, NodeIndex, RoundId};

/// A 16-byte secret that expands into one mask. `Debug` does not print it, `==` compares in
/// constant time, and the bytes are wiped when it is dropped.
#[derive(Clone)]
pub struct Seed([u8; 16]);

impl PartialEq for Seed {
    fn eq(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

impl Eq for Seed {}

impl Drop for Seed {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl ZeroizeOnDrop for Seed {}

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
        let mut seed = Self([0u8; 16]);
        rng.fill_bytes(&mut seed.0);
        seed
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

/// Whether a mask is added to or subtracted from the accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sign {
    Add,
    Sub,
}

fn keystream(seed: &Seed, domain: MaskDomain) -> Aes128Ctr {
    let kdf = Aes128::new(&seed.0.into());
    let mut block = [0u8; 16];
    block[..8].copy_from_slice(&domain.round.0.to_le_bytes());
    block[8..].copy_from_slice(&domain.client.0.to_le_bytes());
    let mut key = block.into();
    kdf.encrypt_block(&mut key);
    let mut nonce = [0u8; 8];
    nonce[..2].copy_from_slice(&domain.node.0.to_le_bytes());
    nonce[2..].copy_from_slice(b"dpdmsk");
    let stream = Aes128Ctr::new(key.into(), nonce);
    key.as_mut_slice().zeroize();
    stream
}

/// `acc[j] ±= r[start_word + j]` for the mask of `seed` in `domain`.
///
/// The keystream is generated a register group at a time (32 blocks with VAES-512) and added
/// straight into `acc`: no buffer pass, nothing allocated.
pub(crate) fn apply_mask(
    seed: &Seed,
    domain: MaskDomain,
    start_word: u64,
    acc: &mut [u64],
    sign: Sign,
) {
    let stream = keystream(seed, domain);
    let mut block = start_word / 2;
    let acc = if start_word % 2 == 1 {
        // Starts in the middle of a block: use its second word, continue at the next block.
        let Some((first, rest)) = acc.split_first_mut() else {
            return;
        };
        let k = stream.block_words(block)[1];
        *first = match sign {
            Sign::Add => first.wrapping_add(k),
            Sign::Sub => first.wrapping_sub(k),
        };
        block += 1;
        rest
    } else {
        acc
    };
    let op = match sign {
        Sign::Add => Op::Add(acc),
        Sign::Sub => Op::Sub(acc),
    };
    stream.apply(block, op);
}

/// Writes the mask of `seed` in `domain` (words 0..out.len()) into `out`.
#[cfg(test)]
pub(crate) fn fill_mask(seed: &Seed, domain: MaskDomain, out: &mut [u64]) {
    out.fill(0);
    apply_mask(seed, domain, 0, out, Sign::Add);
}

/// `mask[j] = r[j]` and `balancing[j] -= r[j]` for the mask r of `seed` in `domain`, over the
/// shorter of the two slices.
///
/// One pass: each group of keystream blocks is written to `mask` and subtracted from
/// `balancing` while it is still in registers, so `mask` is never zeroed or re-read.
pub(crate) fn split_mask(seed: &Seed, domain: MaskDomain, mask: &mut [u64], balancing: &mut [u64]) {
    let len = mask.len().min(balancing.len());
    let (Some(mask), Some(balancing)) = (mask.get_mut(..len), balancing.get_mut(..len)) else {
        return;
    };
    keystream(seed, domain).apply(0, Op::Split { mask, balancing });
}

/// The AES-128-CTR kernel this process dispatches to ("vaes512", "vaes256", "aesni" or
/// "portable"), for benchmark output.
pub fn keystream_backend() -> &'static str {
    Backend::detect().name()
}

/// Raw keystream rate reference: XORs the keystream words of `seed` (round 0, client 0, node 0)
/// onto `buf` (for benchmarks that compare mask absorption with bare AES-CTR).
pub fn raw_keystream(seed: &Seed, buf: &mut [u64]) {
    let domain = MaskDomain {
        round: RoundId(0),
        client: ClientId(0),
        node: NodeIndex(0),
    };
    keystream(seed, domain).apply(0, Op::Xor(buf));
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
        fill_mask(seed, d, &mut out);
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

    /// Words produced by the `aes` 0.8 + `ctr` 0.9 stack (a reference independent of the SIMD
    /// kernels), pinned so that the keystream never changes under any backend.
    #[test]
    fn keystream_pinned_from_the_aes_ctr_crates_on_every_backend() {
        let seed = Seed::from_bytes(*b"dpdist-pinned-kA");
        let d = domain(7, 123_456, 2);
        let first: [u64; 6] = [
            0xef72_a07a_7b2d_71ff,
            0x08e7_39f0_49f0_4b81,
            0xc35b_57e0_765f_b696,
            0xb978_4c10_4736_cc1a,
            0xa29e_5d8f_312b_df40,
            0x94a3_b5cf_1f8c_bb9a,
        ];
        assert_eq!(mask(&seed, d, 6), first);
        // 4099 words from the odd word 77, folded; the fold was computed with the old stack.
        let fold = |words: &[u64]| {
            words.iter().enumerate().fold(0u64, |h, (j, &w)| {
                (h ^ w).rotate_left(5).wrapping_add(j as u64)
            })
        };
        let mut long = vec![0u64; 4099];
        apply_mask(&seed, d, 77, &mut long, Sign::Add);
        assert_eq!(fold(&long), 0xf68d_8b4a_3f51_538a);
        assert_eq!(long[4098], 0xe8c8_9ed3_eee5_db8f);
        // The same words from every backend the CPU has, the portable one forced included.
        let stream = keystream(&seed, d);
        for backend in Backend::available() {
            let mut words = vec![0u64; 4100];
            stream.apply_with(backend, 38, Op::Add(&mut words));
            assert_eq!(fold(&words[1..]), 0xf68d_8b4a_3f51_538a, "{backend:?}");
            let mut six = [0u64; 6];
            stream.apply_with(backend, 0, Op::Xor(&mut six));
            assert_eq!(six, first, "{backend:?}");
        }
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
        for start in [0usize, 1, 2, 5, 15, 16, 17, 1023, 1024, 1025, 2047, 2999] {
            let mut part = vec![0u64; 3000 - start];
            apply_mask(&seed, domain(1, 2, 3), start as u64, &mut part, Sign::Add);
            assert_eq!(part, base[start..], "start {start}");
            apply_mask(&seed, domain(1, 2, 3), start as u64, &mut part, Sign::Sub);
            assert!(part.iter().all(|&w| w == 0));
        }
    }

    #[test]
    fn split_mask_writes_the_mask_and_subtracts_it_in_one_pass() {
        let seed = Seed::from_bytes([3; 16]);
        let d = domain(4, 1, 2);
        // Lengths around the parallel width (16 words with AES-NI) and odd tails.
        for len in [0usize, 1, 2, 3, 15, 16, 17, 31, 33, 1000, 1001] {
            let expect = mask(&seed, d, len);
            let original: Vec<u64> = (0..len as u64)
                .map(|j| j.wrapping_mul(0x9e37_79b9))
                .collect();
            let mut balancing = original.clone();
            // Stale contents in the mask buffer must be overwritten, not added to.
            let mut out = vec![u64::MAX; len];
            split_mask(&seed, d, &mut out, &mut balancing);
            assert_eq!(out, expect, "len {len}");
            for j in 0..len {
                assert_eq!(
                    balancing[j],
                    original[j].wrapping_sub(expect[j]),
                    "len {len} j {j}"
                );
            }
        }
    }

    #[test]
    fn seeds_compare_by_value() {
        let a = Seed::from_bytes([9; 16]);
        assert_eq!(a, a.clone());
        let mut last_differs = [9; 16];
        last_differs[15] = 8;
        assert_ne!(a, Seed::from_bytes(last_differs));
        assert_ne!(a, Seed::from_bytes([0; 16]));
    }

    #[test]
    fn seed_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", Seed::from_bytes([1; 16])),
            "Seed(<redacted>)"
        );
    }
}
