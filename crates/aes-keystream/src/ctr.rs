//! AES-128-CTR with an 8-byte nonce and a 64-bit big-endian block counter (the `ctr` crate's
//! `Ctr64BE` layout): block j of the keystream is AES_K(nonce ‖ (j as u64 BE)), and keystream
//! word w is bytes 8w..8w+8 read little-endian. Dispatches at run time to the fastest kernel
//! of the `vaes` module and finishes short tails on the portable path (the `aes` crate's block
//! function), so every backend yields the same words.

use aes::Aes128;
use aes::cipher::generic_array::GenericArray;
use aes::cipher::{BlockEncrypt, KeyInit};
use zeroize::Zeroize;

use crate::vaes::{self, Backend, Op};

/// Blocks the portable path encrypts per `encrypt_blocks` call (the `aes` crate's own
/// parallel width with AES-NI).
const PORTABLE_BLOCKS: usize = 8;

/// One AES-128-CTR keystream.
pub struct Aes128Ctr {
    key: [u8; 16],
    nonce: [u8; 8],
}

impl Drop for Aes128Ctr {
    /// The key is a secret derived from a seed: wiped when the stream is done.
    fn drop(&mut self) {
        self.key.zeroize();
    }
}

impl Aes128Ctr {
    /// The stream under `key` and `nonce`; the key is wiped when the stream is dropped.
    pub fn new(key: [u8; 16], nonce: [u8; 8]) -> Self {
        Self { key, nonce }
    }

    /// Applies keystream words `2·first_block ..` to `op`, on the fastest backend.
    pub fn apply(&self, first_block: u64, op: Op<'_>) {
        self.apply_with(Backend::detect(), first_block, op);
    }

    /// Applies keystream words `2·first_block ..` to `op` on `backend` (tests force each one).
    pub fn apply_with(&self, backend: Backend, first_block: u64, mut op: Op<'_>) {
        let done = vaes::run(backend, &self.key, self.nonce, first_block, &mut op);
        self.apply_portable(first_block + (done / 2) as u64, op.tail(done));
    }

    /// Keystream block `index`, as two words.
    pub fn block_words(&self, index: u64) -> [u64; 2] {
        let mut ks = [0u64; 2];
        self.apply_portable(index, Op::Xor(&mut ks));
        ks
    }

    fn apply_portable(&self, first_block: u64, mut op: Op<'_>) {
        let len = op.len();
        // The kernels usually leave no tail: no key schedule (and its copy and wipe) then.
        if len == 0 {
            return;
        }
        let cipher = Aes128::new(&self.key.into());
        let mut blocks = [GenericArray::<u8, aes::cipher::consts::U16>::default(); PORTABLE_BLOCKS];
        let mut words = [0u64; 2 * PORTABLE_BLOCKS];
        let mut counter = first_block;
        let mut at = 0;
        while at < len {
            let n_words = (len - at).min(2 * PORTABLE_BLOCKS);
            let n_blocks = n_words.div_ceil(2);
            for block in &mut blocks[..n_blocks] {
                block[..8].copy_from_slice(&self.nonce);
                block[8..].copy_from_slice(&counter.to_be_bytes());
                counter += 1;
            }
            cipher.encrypt_blocks(&mut blocks[..n_blocks]);
            for (pair, block) in words.chunks_exact_mut(2).zip(&blocks[..n_blocks]) {
                pair[0] = u64::from_le_bytes(block[..8].try_into().expect("8 bytes"));
                pair[1] = u64::from_le_bytes(block[8..].try_into().expect("8 bytes"));
            }
            op.apply_words(at, &words[..n_words]);
            at += n_words;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex16(s: &str) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    /// NIST SP 800-38A, F.5.1 CTR-AES128.Encrypt: key, initial counter block, plaintext and
    /// ciphertext of the four blocks. The counter's last 8 bytes f8f9..feff are the 64-bit BE
    /// counter (no carry into the nonce within four blocks).
    const NIST_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
    const NIST_PLAIN: [&str; 4] = [
        "6bc1bee22e409f96e93d7e117393172a",
        "ae2d8a571e03ac9c9eb76fac45af8e51",
        "30c81c46a35ce411e5fbc1191a0a52ef",
        "f69f2445df4f9b17ad2b417be66c3710",
    ];
    const NIST_CIPHER: [&str; 4] = [
        "874d6191b620e3261bef6864990db6ce",
        "9806f66b7970fdff8617187bb9fffdff",
        "5ae4df3edbd5d35e5b4f09020db03eab",
        "1e031dda2fbe03d1792170a0f3009cee",
    ];

    fn words_of(blocks: &[&str]) -> Vec<u64> {
        blocks
            .iter()
            .flat_map(|b| {
                let bytes = hex16(b);
                [
                    u64::from_le_bytes(bytes[..8].try_into().unwrap()),
                    u64::from_le_bytes(bytes[8..].try_into().unwrap()),
                ]
            })
            .collect()
    }

    #[test]
    fn nist_sp800_38a_f51_on_every_backend() {
        let key = hex16(NIST_KEY);
        let nonce: [u8; 8] = [0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7];
        let first = 0xf8f9_fafb_fcfd_feffu64;
        let backends = Backend::available();
        assert_eq!(backends.last(), Some(&Backend::Portable));
        for backend in backends {
            // The 4-block message padded to 64 blocks so that every kernel runs its SIMD
            // loop over it (the tail path alone would otherwise handle 4 blocks).
            let mut words = words_of(&NIST_PLAIN);
            words.resize(128, 0);
            Aes128Ctr::new(key, nonce).apply_with(backend, first, Op::Xor(&mut words));
            assert_eq!(words[..8], words_of(&NIST_CIPHER), "{backend:?}");
        }
    }

    #[test]
    fn every_backend_matches_portable_for_all_ops_and_lengths() {
        let ctr = Aes128Ctr::new(*b"any 16-byte key!", *b"nonce-01");
        for backend in Backend::available() {
            for first in [0u64, 1, 3, 0xffff_fffe] {
                for len in [
                    0usize, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 200, 1031,
                ] {
                    let base: Vec<u64> = (0..len as u64)
                        .map(|j| j.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                        .collect();
                    let mut expect = vec![0u64; len];
                    ctr.apply_with(Backend::Portable, first, Op::Xor(&mut expect));
                    let mut store = vec![u64::MAX; len];
                    ctr.apply_with(backend, first, Op::Store(&mut store));
                    let mut add = base.clone();
                    ctr.apply_with(backend, first, Op::Add(&mut add));
                    let mut sub = base.clone();
                    ctr.apply_with(backend, first, Op::Sub(&mut sub));
                    let mut xor = base.clone();
                    ctr.apply_with(backend, first, Op::Xor(&mut xor));
                    let mut mask = vec![u64::MAX; len];
                    let mut bal = base.clone();
                    ctr.apply_with(
                        backend,
                        first,
                        Op::Split {
                            mask: &mut mask,
                            balancing: &mut bal,
                        },
                    );
                    for j in 0..len {
                        let ctx = format!("{backend:?} first {first} len {len} j {j}");
                        assert_eq!(store[j], expect[j], "{ctx}");
                        assert_eq!(add[j], base[j].wrapping_add(expect[j]), "{ctx}");
                        assert_eq!(sub[j], base[j].wrapping_sub(expect[j]), "{ctx}");
                        assert_eq!(xor[j], base[j] ^ expect[j], "{ctx}");
                        assert_eq!(mask[j], expect[j], "{ctx}");
                        assert_eq!(bal[j], base[j].wrapping_sub(expect[j]), "{ctx}");
                    }
                }
            }
        }
    }

    /// Names, in the test log (`--nocapture`), the backends this CPU ran and those it could not:
    /// a CI runner without VAES-512 never reaches that kernel (see the crate's README).
    #[test]
    fn reports_which_backends_this_cpu_runs() {
        let (ran, not): (Vec<Backend>, Vec<Backend>) =
            Backend::ALL.into_iter().partition(|b| b.is_supported());
        eprintln!(
            "aes-keystream backends run by these tests: {:?}; not on this CPU: {:?}",
            ran.iter().map(|b| b.name()).collect::<Vec<_>>(),
            not.iter().map(|b| b.name()).collect::<Vec<_>>()
        );
        assert!(ran.contains(&Backend::Portable));
    }

    #[test]
    fn detected_backend_is_the_fastest_supported() {
        let detected = Backend::detect();
        assert!(detected.is_supported());
        assert_eq!(Some(&detected), Backend::available().first());
    }
}
