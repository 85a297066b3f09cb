//! The public parameters of one DCA round (`fixedpoint_shares::RoundConfig`).

use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};

use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{free_handle, handle_ref, into_handle};
use crate::privacy;
use crate::ptr::{check_out, write_out};
use crate::status::dpd_status;

/// Pass as `frac_bits` to let the round pick the most fractional bits that are safe.
pub const DPD_FRAC_BITS_AUTO: u32 = 4294967295;

/// How the M − 1 masks of a client travel (the `mode` argument of `dpd_round_config_new`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_share_mode {
    /// Every node receives a full vector (the DCA paper's protocol; the benchmark baseline).
    DPD_SHARE_MODE_FULL = 0,
    /// Node 0 receives the full balancing share, nodes 1..M a 16-byte seed they expand.
    DPD_SHARE_MODE_SEED = 1,
}

/// A validated round configuration. Every party (clients, nodes, aggregator) builds it from
/// the same parameters and so agrees on the fixed-point precision and the noise.
pub struct dpd_round_config {
    pub(crate) inner: RoundConfig,
}

pub(crate) fn share_mode(mode: u32) -> FfiResult<ShareMode> {
    match mode {
        0 => Ok(ShareMode::Full),
        1 => Ok(ShareMode::Seed),
        other => Err(FfiError::invalid(format!(
            "`mode` must be DPD_SHARE_MODE_FULL (0) or DPD_SHARE_MODE_SEED (1), got {other}"
        ))),
    }
}

/// Creates the configuration of round `round`: N = `n_clients` clients with ids 0..N, M =
/// `n_nodes` >= 2 compute nodes (0..M), at most T = `max_dropped` < N clients missing or
/// colluding, vectors of length `dim` >= 1 with every element |x| <= `bound`.
///
/// `noise_sigma_total` > 0 makes the round differentially private: each client adds exact
/// discrete Gaussian noise of σ_total/sqrt(N − T − 1) (value units) so that the released sum
/// carries N(0, σ_total²) per coordinate even if T clients are missing or collude;
/// `noise_sigma_total = 0` gives an exact, NON-private sum; any other value must be in
/// [1e-15, 1e20] (`DPD_ERR_INVALID_PRIVACY_PARAMETER`). `frac_bits` is
/// `DPD_FRAC_BITS_AUTO` or an explicit number of fractional bits (an error if unsafe).
///
/// Limits: 1 <= N <= 2^32, 2 <= M <= 65535, 1 <= d <= 2^32 (the wire format's maximum). The
/// configuration itself is small; nodes and aggregators allocate d words each, clients M·d
/// words when sharding, and report `DPD_ERR_ALLOC` when the memory is not there.
///
/// Errors: `DPD_ERR_INVALID_ARGUMENT` (N, M, T, d, bound, mode, N − T − 1 < 1 with noise),
/// `DPD_ERR_NON_FINITE`, `DPD_ERR_OVERFLOW` (no precision lets the sum fit the ring).
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_round_config*`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // Flat scalars bind more easily from R/Julia than a struct.
pub unsafe extern "C" fn dpd_round_config_new(
    round: u64,
    n_clients: usize,
    n_nodes: u32,
    max_dropped: usize,
    dim: usize,
    bound: f64,
    mode: u32,
    noise_sigma_total: f64,
    frac_bits: u32,
    out: *mut *mut dpd_round_config,
) -> dpd_status {
    ffi_entry("dpd_round_config_new", || {
        check_out(out, "out")?;
        let n_nodes = u16::try_from(n_nodes)
            .map_err(|_| FfiError::invalid(format!("`n_nodes` = {n_nodes} exceeds 65535")))?;
        let params = RoundParams {
            round: RoundId(round),
            n_clients,
            n_nodes,
            max_dropped,
            dim,
            bound,
            mode: share_mode(mode)?,
            noise_sigma_total: if noise_sigma_total == 0.0 {
                None
            } else {
                Some(privacy::sigma("noise_sigma_total", noise_sigma_total)?)
            },
            frac_bits: (frac_bits != DPD_FRAC_BITS_AUTO).then_some(frac_bits),
        };
        let inner = RoundConfig::new(&params)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, into_handle(dpd_round_config { inner }), "out") }
    })
}

/// Writes the round's fixed-point fractional bits, the per-client noise σ (value units; 0
/// without noise) and the vector length d. Any out-pointer may be NULL (not reported).
///
/// # Safety
/// `config` must be NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; each out-pointer NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_info(
    config: *const dpd_round_config,
    out_frac_bits: *mut u32,
    out_sigma_client: *mut f64,
    out_dim: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_round_config_info", || -> FfiResult<()> {
        // SAFETY: header contract for `config`.
        let config = &unsafe { handle_ref(config, "config") }?.inner;
        let sigma_client = config.noise().map_or(0.0, |n| n.sigma_client);
        // SAFETY: each pointer is written only when non-NULL; writable by the header contract.
        unsafe {
            if !out_frac_bits.is_null() {
                write_out(out_frac_bits, config.codec().frac_bits(), "out_frac_bits")?;
            }
            if !out_sigma_client.is_null() {
                write_out(out_sigma_client, sigma_client, "out_sigma_client")?;
            }
            if !out_dim.is_null() {
                write_out(out_dim, config.dim(), "out_dim")?;
            }
        }
        Ok(())
    })
}

/// Frees a round configuration; NULL is a no-op. Handles created from it stay valid (they keep
/// their own copy).
///
/// # Safety
/// `config` must be NULL or a handle from `dpd_round_config_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_free(config: *mut dpd_round_config) {
    // SAFETY: header contract.
    unsafe { free_handle(config) }
}
