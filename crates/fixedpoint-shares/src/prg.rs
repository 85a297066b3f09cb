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
use ctr::cipher::consts::U16;
use ctr::cipher::generic_array::GenericArray;
use ctr::cipher::typenum::Unsigned;
use ctr::cipher::{
    BlockSizeUser, KeyIvInit, ParBlocks, StreamBackend, StreamCipherCore, StreamCipherSeekCore,
    StreamClosure,
};
use rand_core::{CryptoRng, RngCore};

use crate::ids::{ClientId, NodeIndex, RoundId};

type Keystream = ctr::CtrCore<Aes128, ctr::flavors::Ctr64BE>;
type Block = GenericArray<u8, U16>;

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
///
/// The keystream is generated a few AES blocks at a time (the backend's parallel width, 8 with
/// AES-NI) and added straight into `acc`: no buffer pass, nothing allocated.
pub(crate) fn apply_mask(
    seed: &Seed,
    domain: MaskDomain,
    start_word: u64,
    acc: &mut [u64],
    sign: Sign,
) {
    let mut stream = keystream(seed, domain);
    stream.set_block_pos(start_word / 2);
    let acc = if start_word % 2 == 1 {
        // Starts in the middle of a block: use its second word, continue at the next block.
        let Some((first, rest)) = acc.split_first_mut() else {
            return;
        };
        let mut block = Block::default();
        stream.write_keystream_block(&mut block);
        let v = u128::from_le_bytes(block.into());
        add_pair(std::slice::from_mut(first), [(v >> 64) as u64, 0], sign);
        rest
    } else {
        acc
    };
    stream.process_with_backend(AddKeystream { acc, sign });
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
    keystream(seed, domain).process_with_backend(SplitKeystream { mask, balancing });
}

/// The closure run with the cipher backend: `acc ±= keystream words`.
struct AddKeystream<'a> {
    acc: &'a mut [u64],
    sign: Sign,
}

impl BlockSizeUser for AddKeystream<'_> {
    type BlockSize = U16;
}

impl StreamClosure for AddKeystream<'_> {
    fn call<B: StreamBackend<BlockSize = U16>>(self, backend: &mut B) {
        let mut par = ParBlocks::<B>::default();
        let mut chunks = self.acc.chunks_exact_mut(2 * B::ParBlocksSize::USIZE);
        for chunk in &mut chunks {
            backend.gen_par_ks_blocks(&mut par);
            add_words(chunk, &par, self.sign);
        }
        let mut block = Block::default();
        for pair in chunks.into_remainder().chunks_mut(2) {
            backend.gen_ks_block(&mut block);
            add_words(pair, std::slice::from_ref(&block), self.sign);
        }
    }
}

/// The closure run with the cipher backend: `mask = keystream words, balancing -= them`.
/// Both slices have the same length (see [`split_mask`]).
struct SplitKeystream<'a> {
    mask: &'a mut [u64],
    balancing: &'a mut [u64],
}

impl BlockSizeUser for SplitKeystream<'_> {
    type BlockSize = U16;
}

impl StreamClosure for SplitKeystream<'_> {
    fn call<B: StreamBackend<BlockSize = U16>>(self, backend: &mut B) {
        let width = 2 * B::ParBlocksSize::USIZE;
        let mut par = ParBlocks::<B>::default();
        let mut masks = self.mask.chunks_exact_mut(width);
        let mut bals = self.balancing.chunks_exact_mut(width);
        for (mask, bal) in (&mut masks).zip(&mut bals) {
            backend.gen_par_ks_blocks(&mut par);
            split_words(mask, bal, &par);
        }
        let mut block = Block::default();
        let tails = masks.into_remainder().chunks_mut(2);
        for (mask, bal) in tails.zip(bals.into_remainder().chunks_mut(2)) {
            backend.gen_ks_block(&mut block);
            split_words(mask, bal, std::slice::from_ref(&block));
        }
    }
}

/// `mask = words of blocks, balancing -= them` (same word order as [`add_words`]).
#[inline(always)]
fn split_words(mask: &mut [u64], balancing: &mut [u64], blocks: &[Block]) {
    let (mask_pairs, mask_tail) = mask.as_chunks_mut::<2>();
    let (bal_pairs, bal_tail) = balancing.as_chunks_mut::<2>();
    let n_pairs = mask_pairs.len();
    for ((m, b), block) in mask_pairs.iter_mut().zip(bal_pairs).zip(blocks) {
        let v = u128::from_le_bytes((*block).into());
        *m = [v as u64, (v >> 64) as u64];
        add_pair(b, *m, Sign::Sub);
    }
    if let (Some(m), Some(b), Some(block)) = (
        mask_tail.first_mut(),
        bal_tail.first_mut(),
        blocks.get(n_pairs),
    ) {
        let k = u128::from_le_bytes((*block).into()) as u64;
        *m = k;
        *b = b.wrapping_sub(k);
    }
}

/// `acc ±= words of blocks` (block j holds words 2j and 2j + 1, little-endian); stops at the
/// shorter of the two.
#[inline(always)]
fn add_words(acc: &mut [u64], blocks: &[Block], sign: Sign) {
    let (pairs, tail) = acc.as_chunks_mut::<2>();
    for (pair, block) in pairs.iter_mut().zip(blocks) {
        let v = u128::from_le_bytes((*block).into());
        add_pair(pair, [v as u64, (v >> 64) as u64], sign);
    }
    if let (Some(last), Some(block)) = (tail.first_mut(), blocks.get(pairs.len())) {
        let v = u128::from_le_bytes((*block).into());
        add_pair(std::slice::from_mut(last), [v as u64, 0], sign);
    }
}

#[inline(always)]
fn add_pair(acc: &mut [u64], words: [u64; 2], sign: Sign) {
    for (a, k) in acc.iter_mut().zip(words) {
        *a = match sign {
            Sign::Add => a.wrapping_add(k),
            Sign::Sub => a.wrapping_sub(k),
        };
    }
}

/// Raw keystream rate reference: XORs the keystream of `seed` onto `buf` (for benchmarks that
/// compare mask absorption with bare AES-CTR).
pub fn raw_keystream(seed: &Seed, buf: &mut [u8]) {
    let stream = keystream(
        seed,
        MaskDomain {
            round: RoundId(0),
            client: ClientId(0),
            node: NodeIndex(0),
        },
    );
    use ctr::cipher::StreamCipher;
    ctr::cipher::StreamCipherCoreWrapper::from_core(stream).apply_keystream(buf);
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
    fn seed_debug_is_redacted() {
        assert_eq!(
            format!("{:?}", Seed::from_bytes([1; 16])),
            "Seed(<redacted>)"
        );
    }
}
