//! The DCA compute node: absorbs one share per client from wire bytes and outputs the sum of
//! the agreed client set (`fixedpoint_shares::ComputeNode`).

use fixedpoint_shares::{ClientId, ClientSet, ComputeNode, NodeIndex, wire};

use crate::dca::node_sum::dpd_node_sum;
use crate::dca::round::dpd_round_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, slice_in, write_array, write_out};
use crate::status::dpd_status;

/// One compute node of one round.
pub struct dpd_node {
    inner: ComputeNode,
    n_clients: usize,
}

/// Creates compute node `node` (0..M) of the round. Node 0 receives the clients' full
/// balancing shares; in seed mode nodes 1..M receive 16-byte seeds.
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or a writable
/// `dpd_node*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_new(
    config: *const dpd_round_config,
    node: u32,
    out: *mut *mut dpd_node,
) -> dpd_status {
    ffi_entry("dpd_node_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `config`.
        let config = &unsafe { handle_ref(config, "config") }?.inner;
        let index = u16::try_from(node).map_err(|_| {
            FfiError::new(
                dpd_status::DPD_ERR_UNKNOWN_NODE,
                format!(
                    "unknown node {node}: the round has nodes 0..{}",
                    config.n_nodes()
                ),
            )
        })?;
        let inner = ComputeNode::new(config, NodeIndex(index))?;
        let handle = into_handle(dpd_node {
            inner,
            n_clients: config.n_clients(),
        });
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Parses untrusted wire bytes and adds the share to the node's sum. On any error the node is
/// unchanged: `DPD_ERR_MALFORMED` (bad bytes, wrong payload kind or precision),
/// `DPD_ERR_WRONG_ROUND`, `DPD_ERR_UNKNOWN_NODE` (addressed to another node),
/// `DPD_ERR_LENGTH_MISMATCH` (wrong d), `DPD_ERR_INVALID_ARGUMENT` (client id >= N),
/// `DPD_ERR_DUPLICATE_CLIENT`.
///
/// # Safety
/// `node` NULL or a live handle not used concurrently; `bytes` NULL with `len == 0` or `len`
/// readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_absorb(
    node: *mut dpd_node,
    bytes: *const u8,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_node_absorb", || {
        // SAFETY: header contract for `node` and `(bytes, len)`.
        let (node, bytes) = unsafe { (handle_mut(node, "node")?, slice_in(bytes, len, "bytes")?) };
        node.inner.absorb(&wire::decode(bytes)?)?;
        Ok(())
    })
}

/// Removes a share absorbed earlier, given the identical wire bytes. Needed before
/// `dpd_node_finalize` for every client outside the agreed set whose FULL share this node
/// absorbed (always the case on node 0); seed shares are removed automatically.
/// Not absorbed → `DPD_ERR_INVALID_STATE`; otherwise errors as `dpd_node_absorb`.
///
/// # Safety
/// As `dpd_node_absorb`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_retract(
    node: *mut dpd_node,
    bytes: *const u8,
    len: usize,
) -> dpd_status {
    ffi_entry("dpd_node_retract", || {
        // SAFETY: header contract for `node` and `(bytes, len)`.
        let (node, bytes) = unsafe { (handle_mut(node, "node")?, slice_in(bytes, len, "bytes")?) };
        node.inner.retract(&wire::decode(bytes)?)?;
        Ok(())
    })
}

/// Copies the ids of the clients whose shares are in the node's sum, ascending, into `out_ids`
/// (query-size pattern). The nodes publish these lists and agree on their intersection.
///
/// # Safety
/// `node` NULL or a live handle; `out_ids` NULL with `out_cap == 0` or `out_cap` writable
/// `uint64_t`; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_received(
    node: *const dpd_node,
    out_ids: *mut u64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_node_received", || -> FfiResult<()> {
        // SAFETY: header contract for `node`.
        let node = unsafe { handle_ref(node, "node") }?;
        let ids: Vec<u64> = node.inner.received().iter().map(|c| c.0).collect();
        // SAFETY: header contract for `(out_ids, out_cap, out_len)`.
        unsafe { write_array(&ids, out_ids, out_cap, out_len, "out_ids") }
    })
}

/// Computes the node's sum over the agreed client set `agreed_ids[0..n_agreed]` (the
/// intersection of what every node received) into a new `dpd_node_sum`. The node is not
/// changed. Errors: `DPD_ERR_TOO_MANY_DROPOUTS` (more than T of N clients missing: nothing
/// may be released), `DPD_ERR_INVALID_ARGUMENT` (an agreed client this node never received,
/// or an id >= N), `DPD_ERR_DUPLICATE_CLIENT` (an id listed twice), `DPD_ERR_INVALID_STATE` (a
/// full share outside the set was not retracted).
///
/// # Safety
/// `node` NULL or a live handle; `agreed_ids` NULL with `n_agreed == 0` or `n_agreed` readable
/// `uint64_t`; `out` NULL or a writable `dpd_node_sum*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_finalize(
    node: *const dpd_node,
    agreed_ids: *const u64,
    n_agreed: usize,
    out: *mut *mut dpd_node_sum,
) -> dpd_status {
    ffi_entry("dpd_node_finalize", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `node` and `(agreed_ids, n_agreed)`.
        let (node, ids) = unsafe {
            (
                handle_ref(node, "node")?,
                slice_in(agreed_ids, n_agreed, "agreed_ids")?,
            )
        };
        let ids: Vec<ClientId> = ids.iter().copied().map(ClientId).collect();
        let agreed = ClientSet::from_ids(node.n_clients, &ids)?;
        let inner = node.inner.finalize(&agreed)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_node_sum { inner }), "out") }
    })
}

/// Frees a compute node; NULL is a no-op.
///
/// # Safety
/// `node` must be NULL or a handle from `dpd_node_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_free(node: *mut dpd_node) {
    // SAFETY: header contract.
    unsafe { free_handle(node) }
}
