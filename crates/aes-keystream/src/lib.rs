//! AES-128-CTR keystreams read as little-endian `u64` words, applied to the caller's words in
//! one pass at the rate of the CPU's widest AES instructions.
//!
//! Layout (the `ctr` crate's `Ctr64BE`): block j of the stream under key K and 8-byte nonce n is
//! AES_K(n ‖ j as u64 big-endian), and word w is bytes 8w..8w+8 of the stream, little-endian.
//! [`Aes128Ctr::apply`] adds, subtracts, XORs or stores words `2·first_block ..` into a slice
//! ([`Op`]); the kernel is chosen at run time ([`Backend::detect`]: VAES-512, VAES-256, AES-NI,
//! or the `aes` crate's block function as the portable path), and every backend yields the same
//! words — checked against NIST SP 800-38A and against the portable path for every operation,
//! offset and length.
//!
//! Two crates use it: `fixedpoint-shares` expands share masks with it, `dp-noise` draws the
//! samplers' random words from it. It is its own crate so that both reach the same kernels
//! (`dp-noise` sits below `fixedpoint-shares`).
//!
//! `src/vaes.rs` holds the `std::arch` intrinsics and is the crate's only module allowed
//! `unsafe`: each block states its safety argument. The crate's lint is `unsafe_code = "deny"`
//! rather than the workspace's `forbid` only so that this module can opt out.
//!
//! ```
//! use aes_keystream::{Aes128Ctr, Op};
//!
//! let stream = Aes128Ctr::new(*b"a 16-byte key!!!", *b"nonce-01");
//! let mut words = [0u64; 5];
//! stream.apply(0, Op::Store(&mut words));
//! let mut acc = [1u64; 5];
//! stream.apply(0, Op::Sub(&mut acc));
//! assert!(acc.iter().zip(&words).all(|(a, w)| a.wrapping_add(*w) == 1));
//! ```

mod ctr;
mod vaes;

pub use ctr::Aes128Ctr;
pub use vaes::{Backend, Op};
