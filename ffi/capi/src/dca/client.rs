//! The DCA client: encodes its vector, adds its share of the noise and splits it into M
//! messages (`fixedpoint_shares::Client`).

use fixedpoint_shares::{Client, ClientId, Encode};

use crate::dca::round::dpd_round_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, slice_in, write_array, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// One client of one round.
pub struct dpd_client {
    inner: Client,
}

/// The M wire messages of one sharding; message k is for compute node k.
pub struct dpd_shares {
    messages: Vec<Vec<u8>>,
    shard: u64,
}

/// Creates client `client_id` (< N) of the round. Its mask seeds and noise come from a fresh
/// child stream of `rng` (use `dpd_rng_new_os` in production).
///
/// # Safety
/// `config`, `rng` must be NULL (→ `DPD_ERR_NULL_POINTER`) or live handles (`rng` not used
/// concurrently); `out` NULL or a writable `dpd_client*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_client_new(
    config: *const dpd_round_config,
    client_id: u64,
    rng: *mut dpd_rng,
    out: *mut *mut dpd_client,
) -> dpd_status {
    ffi_entry("dpd_client_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `config` and `rng`.
        let (config, rng) = unsafe { (handle_ref(config, "config")?, handle_mut(rng, "rng")?) };
        let inner = Client::new(config.unverified()?, ClientId(client_id), rng.next_source())?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_client { inner }), "out") }
    })
}

/// Encodes `values[0..len]` (len = d, each finite with |x| <= bound), adds the round's noise
/// and splits the result into M additive shares, returned as wire messages in a new
/// `dpd_shares` handle (read them with `dpd_shares_message`). Every call draws fresh masks and
/// noise: send each client's shares of a round only once.
///
/// Errors: `DPD_ERR_LENGTH_MISMATCH`, `DPD_ERR_NON_FINITE`, `DPD_ERR_OVERFLOW` (|x| > bound),
/// checked before any randomness is drawn; `DPD_ERR_ALLOC` when the shares (d words for node 0,
/// and for every node in full mode) cannot be allocated.
///
/// # Safety
/// `client` NULL or a live handle; `values` NULL with `len == 0` or `len` readable doubles;
/// `out` NULL or a writable `dpd_shares*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_client_shard(
    client: *mut dpd_client,
    values: *const f64,
    len: usize,
    out: *mut *mut dpd_shares,
) -> dpd_status {
    ffi_entry("dpd_client_shard", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `client` and `(values, len)`.
        let (client, values) = unsafe {
            (
                handle_mut(client, "client")?,
                slice_in(values, len, "values")?,
            )
        };
        let shares = client.inner.shard(values)?;
        let shard = shares.first().map_or(0, |m| m.shard.0);
        let messages = shares
            .iter()
            .map(Encode::get_encoded)
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_shares { messages, shard }), "out") }
    })
}

/// Frees a client; NULL is a no-op.
///
/// # Safety
/// `client` must be NULL or a handle from `dpd_client_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_client_free(client: *mut dpd_client) {
    // SAFETY: header contract.
    unsafe { free_handle(client) }
}

/// Writes the number of messages (M, one per compute node).
///
/// # Safety
/// `shares` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_shares_count(
    shares: *const dpd_shares,
    out: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_shares_count", || -> FfiResult<()> {
        // SAFETY: header contract for `shares` and `out`.
        unsafe { write_out(out, handle_ref(shares, "shares")?.messages.len(), "out") }
    })
}

/// Writes the shard id (the sharding attempt) that all M messages carry.
///
/// # Safety
/// `shares` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_shares_shard_id(
    shares: *const dpd_shares,
    out: *mut u64,
) -> dpd_status {
    ffi_entry("dpd_shares_shard_id", || -> FfiResult<()> {
        // SAFETY: header contract for `shares` and `out`.
        unsafe { write_out(out, handle_ref(shares, "shares")?.shard, "out") }
    })
}

/// Copies the wire bytes of the message for compute node `node` (0..M) into `out`
/// (query-size pattern). Node 0 always gets a full vector (60 + 8·d bytes); in seed mode nodes
/// 1..M get 60 + 16 bytes. `node >= M` → `DPD_ERR_UNKNOWN_NODE`.
///
/// # Safety
/// `shares` NULL or a live handle; `out` NULL with `out_cap == 0` or `out_cap` writable bytes;
/// `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_shares_message(
    shares: *const dpd_shares,
    node: u32,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_shares_message", || -> FfiResult<()> {
        // SAFETY: header contract for `shares`.
        let messages = &unsafe { handle_ref(shares, "shares") }?.messages;
        let message = usize::try_from(node)
            .ok()
            .and_then(|k| messages.get(k))
            .ok_or_else(|| {
                FfiError::new(
                    dpd_status::DPD_ERR_UNKNOWN_NODE,
                    format!(
                        "node {node} does not exist: the round has nodes 0..{}",
                        messages.len()
                    ),
                )
            })?;
        // SAFETY: header contract for `(out, out_cap, out_len)`.
        unsafe { write_array(message, out, out_cap, out_len, "out") }
    })
}

/// Frees a set of shares; NULL is a no-op.
///
/// # Safety
/// `shares` must be NULL or a handle from `dpd_client_shard` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_shares_free(shares: *mut dpd_shares) {
    // SAFETY: header contract.
    unsafe { free_handle(shares) }
}
