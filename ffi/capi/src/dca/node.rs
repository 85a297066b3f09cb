//! The DCA compute node: absorbs one share per client from wire bytes and outputs the sum of
//! the agreed (client, shard id) pairs (`fixedpoint_shares::ComputeNode`).

use fixedpoint_shares::{ClientId, ComputeNode, NodeIndex, RoundConfig, ShardId, ShardSet};

use crate::dca::ledger::dpd_round_ledger;
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
/// balancing shares; in seed mode nodes 1..M receive 16-byte seeds. The node holds d words
/// and N bits: when they cannot be allocated (e.g. d = 2^32 needs 32 GiB) the call returns
/// `DPD_ERR_ALLOC` (never aborts the process); `node >= M` → `DPD_ERR_UNKNOWN_NODE`. A party
/// that keeps a `dpd_round_ledger` uses `dpd_node_new_admitted` instead.
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
        let config = unsafe { handle_ref(config, "config") }?.unverified()?;
        let inner = ComputeNode::new(config, node_index(config, node)?)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_node(out, inner, config) }
    })
}

/// As `dpd_node_new`, admitting the round through `ledger` (see `dpd_round_ledger_admit`): a
/// round id the ledger has seen with another configuration → `DPD_ERR_WRONG_ROUND`, nothing
/// created. The round is recorded only if the node could be created.
///
/// # Safety
/// `ledger` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `config`
/// and `out` as `dpd_node_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_new_admitted(
    ledger: *mut dpd_round_ledger,
    config: *const dpd_round_config,
    node: u32,
    out: *mut *mut dpd_node,
) -> dpd_status {
    ffi_entry("dpd_node_new_admitted", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `ledger` and `config`.
        let (ledger, config) = unsafe {
            (
                handle_mut(ledger, "ledger")?,
                handle_ref(config, "config")?.unverified()?,
            )
        };
        let inner = ledger
            .inner
            .compute_node(config, node_index(config, node)?)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_node(out, inner, config) }
    })
}

fn node_index(config: &RoundConfig, node: u32) -> FfiResult<NodeIndex> {
    u16::try_from(node).map(NodeIndex).map_err(|_| {
        FfiError::new(
            dpd_status::DPD_ERR_UNKNOWN_NODE,
            format!(
                "unknown node {node}: the round has nodes 0..{}",
                config.n_nodes()
            ),
        )
    })
}

/// # Safety
/// `out` non-NULL and writable.
unsafe fn write_node(
    out: *mut *mut dpd_node,
    inner: ComputeNode,
    config: &RoundConfig,
) -> FfiResult<()> {
    let handle = into_handle(dpd_node {
        inner,
        n_clients: config.n_clients(),
    });
    // SAFETY: the caller's contract.
    unsafe { write_out(out, handle, "out") }
}

/// Parses untrusted wire bytes against the node's round and adds the share to the node's sum
/// (a full share is added straight from the bytes). On any error the node is unchanged:
/// `DPD_ERR_MALFORMED` (bad bytes, wrong payload kind or precision), `DPD_ERR_WRONG_ROUND`
/// (another round, or bytes of an earlier round that used this round id with another
/// configuration), `DPD_ERR_UNKNOWN_NODE` (addressed to another node),
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
        node.inner.absorb_bytes(bytes)?;
        Ok(())
    })
}

/// Removes a share absorbed earlier, given the identical wire bytes. Needed before
/// `dpd_node_finalize` for every client outside the agreed set whose FULL share this node
/// absorbed (always the case on node 0); seed shares are removed automatically.
/// Not absorbed → `DPD_ERR_INVALID_STATE`; another shard attempt of the client than the one
/// absorbed, or another seed → `DPD_ERR_INVALID_ARGUMENT` (node unchanged); otherwise errors as
/// `dpd_node_absorb`.
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
        node.inner.retract_bytes(bytes)?;
        Ok(())
    })
}

/// Copies the (client id, shard id) pairs whose shares are in the node's sum, ascending by
/// client, into `out_ids[i]`, `out_shards[i]` (query-size pattern: both arrays have capacity
/// `out_cap`, `*out_len` is the number of pairs). The nodes publish these lists and agree on
/// the pairs every node holds; a client whose nodes hold different shard attempts (it sharded
/// twice) is not in that intersection.
///
/// # Safety
/// `node` NULL or a live handle; `out_ids` and `out_shards` each NULL with `out_cap == 0` or
/// `out_cap` writable `uint64_t`; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_received(
    node: *const dpd_node,
    out_ids: *mut u64,
    out_shards: *mut u64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_node_received", || -> FfiResult<()> {
        // SAFETY: header contract for `node`.
        let node = unsafe { handle_ref(node, "node") }?;
        let (ids, shards): (Vec<u64>, Vec<u64>) = node
            .inner
            .received()
            .iter()
            .map(|(c, s)| (c.0, s.0))
            .unzip();
        // Both arrays or neither: nothing is written unless both can be.
        for (ptr, name) in [(out_ids, "out_ids"), (out_shards, "out_shards")] {
            if out_cap > 0 && ptr.is_null() {
                return Err(FfiError::null(name));
            }
        }
        // SAFETY: header contract for `(out_ids, out_shards, out_cap, out_len)`; on a too-small
        // capacity the first call fails before writing anything.
        unsafe {
            write_array(&shards, out_shards, out_cap, out_len, "out_shards")?;
            write_array(&ids, out_ids, out_cap, out_len, "out_ids")
        }
    })
}

/// Computes the node's sum over the agreed pairs (`agreed_ids[i]`, `agreed_shards[i]`),
/// i < `n_agreed` — the pairs every node reported in `dpd_node_received` — into a new
/// `dpd_node_sum`. The node is not changed. Errors: `DPD_ERR_TOO_MANY_DROPPED` (more than T of
/// N clients missing: nothing may be released), `DPD_ERR_INVALID_ARGUMENT` (an agreed client
/// this node never received, a shard id other than the one this node absorbed for that
/// client, or an id >= N), `DPD_ERR_DUPLICATE_CLIENT` (a client listed twice),
/// `DPD_ERR_INVALID_STATE` (a full share outside the set was not retracted).
///
/// # Safety
/// `node` NULL or a live handle; `agreed_ids` and `agreed_shards` each NULL with
/// `n_agreed == 0` or `n_agreed` readable `uint64_t`; `out` NULL or a writable `dpd_node_sum*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_node_finalize(
    node: *const dpd_node,
    agreed_ids: *const u64,
    agreed_shards: *const u64,
    n_agreed: usize,
    out: *mut *mut dpd_node_sum,
) -> dpd_status {
    ffi_entry("dpd_node_finalize", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `node`, `(agreed_ids, n_agreed)` and
        // `(agreed_shards, n_agreed)`.
        let (node, ids, shards) = unsafe {
            (
                handle_ref(node, "node")?,
                slice_in(agreed_ids, n_agreed, "agreed_ids")?,
                slice_in(agreed_shards, n_agreed, "agreed_shards")?,
            )
        };
        let pairs: Vec<(ClientId, ShardId)> = ids
            .iter()
            .zip(shards)
            .map(|(&c, &s)| (ClientId(c), ShardId(s)))
            .collect();
        let agreed = ShardSet::from_pairs(node.n_clients, &pairs)?;
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
