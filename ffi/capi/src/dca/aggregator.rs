//! The DCA aggregator: adds the M node sums (the masks cancel) and decodes the release
//! (`fixedpoint_shares::Aggregator`).

use fixedpoint_shares::{Aggregator, Release};

use crate::dca::ledger::dpd_round_ledger;
use crate::dca::node_sum::dpd_node_sum;
use crate::dca::round::dpd_round_config;
use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_mut, handle_ref, into_handle};
use crate::ptr::{check_out, reserve_array, write_array, write_out};
use crate::status::dpd_status;

/// What a released sum contains and the guarantee it carries.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct dpd_release_info {
    /// N: clients registered for the round.
    pub n_clients: usize,
    /// Clients whose values are in the sum (the agreed set).
    pub n_included: usize,
    /// T: missing or colluding clients the noise was calibrated for.
    pub max_dropped: usize,
    /// Fixed-point fractional bits of the round.
    pub frac_bits: u32,
    /// σ_total the round was configured with (value units; 0 without noise).
    pub noise_sigma_total: f64,
    /// σ each client added (value units; 0 without noise).
    pub noise_sigma_client: f64,
    /// σ of the noise actually in the sum, σ_client·sqrt(n_included) (0 without noise).
    pub noise_sigma_released: f64,
}

impl From<&Release> for dpd_release_info {
    fn from(r: &Release) -> Self {
        Self {
            n_clients: r.n_clients,
            n_included: r.n_included,
            max_dropped: r.max_dropped,
            frac_bits: r.frac_bits,
            noise_sigma_total: r.noise.map_or(0.0, |n| n.sigma_total),
            noise_sigma_client: r.noise.map_or(0.0, |n| n.sigma_client),
            noise_sigma_released: r.noise_sigma_released,
        }
    }
}

/// Writes a release's sum (query-size pattern) and, if `info` is not NULL, its description.
///
/// # Safety
/// `(out_sum, out_cap, out_len)` as in the header's output-array rule; `info` NULL or writable.
pub(crate) unsafe fn write_release(
    release: &Release,
    out_sum: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    info: *mut dpd_release_info,
) -> FfiResult<()> {
    // SAFETY: forwarded caller contract.
    unsafe {
        write_array(&release.sum, out_sum, out_cap, out_len, "out_sum")?;
        if !info.is_null() {
            write_out(info, dpd_release_info::from(release), "info")?;
        }
    }
    Ok(())
}

/// Collects the M node sums of a round.
pub struct dpd_aggregator {
    inner: Aggregator,
    /// d of the round: the length of the released sum, known before it is computed.
    dim: usize,
}

/// Creates the aggregator of the round. It holds d words: `DPD_ERR_ALLOC` when they cannot be
/// allocated (never an abort). A party that keeps a `dpd_round_ledger` uses
/// `dpd_aggregator_new_admitted` instead.
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL or a writable
/// `dpd_aggregator*`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_aggregator_new(
    config: *const dpd_round_config,
    out: *mut *mut dpd_aggregator,
) -> dpd_status {
    ffi_entry("dpd_aggregator_new", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `config`.
        let config = unsafe { handle_ref(config, "config") }?.unverified()?;
        let handle = into_handle(dpd_aggregator {
            inner: Aggregator::new(config)?,
            dim: config.dim(),
        });
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// As `dpd_aggregator_new`, admitting the round through `ledger` (see
/// `dpd_round_ledger_admit`): a round id the ledger has seen with another configuration →
/// `DPD_ERR_WRONG_ROUND`, nothing created. The round is recorded only if the aggregator could
/// be created.
///
/// # Safety
/// `ledger` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently; `config`
/// and `out` as `dpd_aggregator_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_aggregator_new_admitted(
    ledger: *mut dpd_round_ledger,
    config: *const dpd_round_config,
    out: *mut *mut dpd_aggregator,
) -> dpd_status {
    ffi_entry("dpd_aggregator_new_admitted", || {
        check_out(out, "out")?;
        // SAFETY: header contract for `ledger` and `config`.
        let (ledger, config) = unsafe {
            (
                handle_mut(ledger, "ledger")?,
                handle_ref(config, "config")?.unverified()?,
            )
        };
        let handle = into_handle(dpd_aggregator {
            inner: ledger.inner.aggregator(config)?,
            dim: config.dim(),
        });
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, handle, "out") }
    })
}

/// Adds one node's sum (the aggregator copies it; free `sum` when convenient). Errors, with the
/// aggregator unchanged: `DPD_ERR_WRONG_ROUND`, `DPD_ERR_UNKNOWN_NODE`,
/// `DPD_ERR_INVALID_ARGUMENT` (a second sum of the same node, or a client set different from
/// the other nodes'), `DPD_ERR_MALFORMED` (other precision), `DPD_ERR_LENGTH_MISMATCH`.
///
/// # Safety
/// `aggregator` NULL or a live handle not used concurrently; `sum` NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_aggregator_add(
    aggregator: *mut dpd_aggregator,
    sum: *const dpd_node_sum,
) -> dpd_status {
    ffi_entry("dpd_aggregator_add", || {
        // SAFETY: header contract for `aggregator` and `sum`.
        let (aggregator, sum) = unsafe {
            (
                handle_mut(aggregator, "aggregator")?,
                handle_ref(sum, "sum")?,
            )
        };
        aggregator.inner.add(&sum.inner)?;
        Ok(())
    })
}

/// Decodes the released sum (d doubles, query-size pattern into `out_sum`) once all M node
/// sums are in, and describes it in `*info` (optional, may be NULL). Errors:
/// `DPD_ERR_INVALID_STATE` (node sums missing), `DPD_ERR_TOO_MANY_DROPPED`. The aggregator is
/// not changed, so a size query followed by the real call is fine.
///
/// # Safety
/// `aggregator` NULL or a live handle; `out_sum` NULL with `out_cap == 0` or `out_cap` writable
/// doubles; `out_len` NULL (→ error) or writable; `info` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_aggregator_release(
    aggregator: *const dpd_aggregator,
    out_sum: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    info: *mut dpd_release_info,
) -> dpd_status {
    ffi_entry("dpd_aggregator_release", || {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `aggregator`.
        let aggregator = unsafe { handle_ref(aggregator, "aggregator") }?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(aggregator.dim, out_cap, out_len, "out_sum") }?;
        let release = aggregator.inner.release()?;
        // SAFETY: header contract for the outputs.
        unsafe { write_release(&release, out_sum, out_cap, out_len, info) }
    })
}

/// Frees an aggregator; NULL is a no-op.
///
/// # Safety
/// `aggregator` must be NULL or a handle from `dpd_aggregator_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_aggregator_free(aggregator: *mut dpd_aggregator) {
    // SAFETY: header contract.
    unsafe { free_handle(aggregator) }
}
