//! Bindings of `share_sealing`: HPKE-seal a share message to its compute node, so a host can
//! upload it with its own HTTP client (and a host that runs a node can open it).

use share_sealing::{
    Error, NodeKeyPair, NodePublicKey, SEAL_OVERHEAD, SealContext, open, seal, sealed_len,
};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::ptr::{reserve_array, slice_in, write_array};
use crate::status::dpd_status;

/// The slot a sealed share is bound to (the HPKE associated data). A share opens only with the
/// same four values it was sealed with.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct dpd_seal_context {
    /// Round id.
    pub round: u64,
    /// SHA-256 of the round's configuration, as published by the aggregator.
    pub config_hash: [u8; 32],
    /// Client id.
    pub client: u64,
    /// Index of the compute node the share is for (0..65535).
    pub node: u32,
}

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::InvalidKey { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            Error::Truncated { .. } | Error::OpenFailed => dpd_status::DPD_ERR_MALFORMED,
            _ => dpd_status::DPD_ERR_OTHER,
        };
        FfiError::new(status, error.to_string())
    }
}

/// # Safety
/// `ctx` must be NULL (→ error) or point to a readable `dpd_seal_context`.
unsafe fn read_context(ctx: *const dpd_seal_context) -> FfiResult<SealContext> {
    if ctx.is_null() {
        return Err(FfiError::null("ctx"));
    }
    // SAFETY: non-NULL (checked); readability is the caller's contract; the struct is Copy.
    let c = unsafe { ctx.read_unaligned() };
    let node = u16::try_from(c.node)
        .map_err(|_| FfiError::invalid(format!("node index {} exceeds 65535", c.node)))?;
    Ok(SealContext {
        round: c.round,
        config_hash: c.config_hash,
        client: c.client,
        node,
    })
}

/// Seals `share` (e.g. the bytes of `dpd_shares_message` for node `ctx->node`) to that node's
/// 32-byte X25519 public key with HPKE (RFC 9180 base mode, DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, ChaCha20-Poly1305), binding round, config hash, client and node. The result is
/// `share_len + 48` bytes (32-byte encapsulated key ‖ ciphertext ‖ 16-byte tag); query-size
/// pattern: too small an `out_cap` → `DPD_ERR_BUFFER_TOO_SMALL` with the length in `*out_len`.
/// The ephemeral key comes from the operating system's CSPRNG. A key that is not 32 bytes, or
/// a low-order point (its Diffie–Hellman output is all zero, RFC 9180 §7.1.4: anyone could
/// open the share) → `DPD_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `node_public_key` has `key_len` readable bytes; `ctx` readable; `share` NULL with
/// `share_len == 0` or `share_len` readable bytes; `out` NULL with `out_cap == 0` or `out_cap`
/// writable bytes; `out_len` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_share_seal(
    node_public_key: *const u8,
    key_len: usize,
    ctx: *const dpd_seal_context,
    share: *const u8,
    share_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_share_seal", || -> FfiResult<()> {
        // SAFETY: header contract for each pointer.
        let key = unsafe { slice_in(node_public_key, key_len, "node_public_key") }?;
        let ctx = unsafe { read_context(ctx) }?;
        let share = unsafe { slice_in(share, share_len, "share") }?;
        if out_len.is_null() {
            return Err(FfiError::null("out_len"));
        }
        let key = NodePublicKey::from_bytes(key)?;
        // Sealing draws a fresh ephemeral key: size the output before, not by sealing twice.
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(sealed_len(share.len()), out_cap, out_len, "out") }?;
        let sealed = seal(&key, &ctx, share)?;
        // SAFETY: header contract for `(out, out_cap)` and `out_len`.
        unsafe { write_array(&sealed, out, out_cap, out_len, "out") }
    })
}

/// Opens a sealed share with a node's 32-byte X25519 secret key in the slot `ctx`. Anything
/// but the exact slot, key and bytes it was sealed with → `DPD_ERR_MALFORMED`, nothing
/// written. The plaintext is `sealed_len - 48` bytes; query-size pattern as `dpd_share_seal`.
///
/// # Safety
/// As `dpd_share_seal`, with `node_secret_key` of `key_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_share_open(
    node_secret_key: *const u8,
    key_len: usize,
    ctx: *const dpd_seal_context,
    sealed: *const u8,
    sealed_len: usize,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_share_open", || -> FfiResult<()> {
        // SAFETY: header contract for each pointer.
        let key = unsafe { slice_in(node_secret_key, key_len, "node_secret_key") }?;
        let ctx = unsafe { read_context(ctx) }?;
        let sealed = unsafe { slice_in(sealed, sealed_len, "sealed") }?;
        if out_len.is_null() {
            return Err(FfiError::null("out_len"));
        }
        let keys = NodeKeyPair::from_secret_bytes(key)?;
        // A sealed share shorter than the overhead fails to open below, whatever the capacity.
        if let Some(plain_len) = sealed.len().checked_sub(SEAL_OVERHEAD) {
            // SAFETY: `out_len` checked non-NULL and writable by the header contract.
            unsafe { reserve_array(plain_len, out_cap, out_len, "out") }?;
        }
        let share = open(&keys.secret, &ctx, sealed)?;
        // SAFETY: header contract for `(out, out_cap)` and `out_len`.
        unsafe { write_array(&share, out, out_cap, out_len, "out") }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::{null, null_mut};

    fn ctx() -> dpd_seal_context {
        dpd_seal_context {
            round: 9,
            config_hash: [5; 32],
            client: 3,
            node: 2,
        }
    }

    #[test]
    fn seal_then_open_and_errors_write_nothing() {
        let kp = NodeKeyPair::generate();
        let pk = kp.public.to_bytes();
        let sk = kp.secret.to_bytes();
        let share = [1u8, 2, 3, 4];
        let mut sealed = [0u8; 64];
        let mut len = 0usize;
        // SAFETY: every pointer is a live local of the stated length.
        unsafe {
            let s = dpd_share_seal(
                pk.as_ptr(),
                32,
                &ctx(),
                share.as_ptr(),
                4,
                null_mut(),
                0,
                &mut len,
            );
            assert_eq!(s, dpd_status::DPD_ERR_BUFFER_TOO_SMALL);
            assert_eq!(len, 52);
            let s = dpd_share_seal(
                pk.as_ptr(),
                32,
                &ctx(),
                share.as_ptr(),
                4,
                sealed.as_mut_ptr(),
                64,
                &mut len,
            );
            assert_eq!(s, dpd_status::DPD_OK);
            let mut back = [0u8; 4];
            let mut n = 0usize;
            let s = dpd_share_open(
                sk.as_ptr(),
                32,
                &ctx(),
                sealed.as_ptr(),
                len,
                back.as_mut_ptr(),
                4,
                &mut n,
            );
            assert_eq!((s, n, back), (dpd_status::DPD_OK, 4, share));
            let other = dpd_seal_context { client: 4, ..ctx() };
            let mut n2 = 77usize;
            let s = dpd_share_open(
                sk.as_ptr(),
                32,
                &other,
                sealed.as_ptr(),
                len,
                back.as_mut_ptr(),
                4,
                &mut n2,
            );
            assert_eq!((s, n2), (dpd_status::DPD_ERR_MALFORMED, 77));
            let big = dpd_seal_context {
                node: 70_000,
                ..ctx()
            };
            let s = dpd_share_seal(
                pk.as_ptr(),
                32,
                &big,
                share.as_ptr(),
                4,
                sealed.as_mut_ptr(),
                64,
                &mut n2,
            );
            assert_eq!((s, n2), (dpd_status::DPD_ERR_INVALID_ARGUMENT, 77));
            // A key of 31 bytes; u = 0 and u = 1, low-order points (the DH output would be
            // all zero).
            let mut one = [0u8; 32];
            one[0] = 1;
            for key in [&pk[..31], &[0u8; 32][..], &one[..]] {
                let s = dpd_share_seal(
                    key.as_ptr(),
                    key.len(),
                    &ctx(),
                    share.as_ptr(),
                    4,
                    sealed.as_mut_ptr(),
                    64,
                    &mut n2,
                );
                assert_eq!((s, n2), (dpd_status::DPD_ERR_INVALID_ARGUMENT, 77));
            }
            let s = dpd_share_seal(
                pk.as_ptr(),
                32,
                null(),
                share.as_ptr(),
                4,
                sealed.as_mut_ptr(),
                64,
                &mut n2,
            );
            assert_eq!((s, n2), (dpd_status::DPD_ERR_NULL_POINTER, 77));
        }
    }
}
