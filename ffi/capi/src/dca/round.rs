//! The public parameters of one DCA round (`fixedpoint_shares::RoundConfig`).

use fixedpoint_shares::{RoundConfig, RoundId, RoundParams, ShareMode};

use crate::dca::verified::Validity;
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
    /// Issue 43's validity mode (`dpd_round_config_set_validity`); `None` by default.
    pub(crate) validity: Option<Validity>,
}

impl dpd_round_config {
    /// The configuration for a party or round that does not check validity: refused when
    /// validity is on, since verified rounds run only in process so far
    /// (`dpd_simulate_round_verified`), and a party that ignored the option would run an
    /// unchecked round while its caller believes it checked.
    pub(crate) fn unverified(&self) -> FfiResult<&RoundConfig> {
        match self.validity {
            None => Ok(&self.inner),
            Some(_) => Err(FfiError::invalid(
                "`config` has validity on (dpd_round_config_set_validity), which only the \
                 in-process round dpd_simulate_round_verified implements so far; create the \
                 config without it (or set DPD_VALIDITY_NONE) for this call",
            )),
        }
    }
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

/// Creates the configuration of a differentially private round `round`: N = `n_clients`
/// clients with ids 0..N, M = `n_nodes` >= 2 compute nodes (0..M), at most T = `max_dropped` < N
/// clients missing or colluding, vectors of length `dim` >= 1 with every element |x| <= `bound`.
///
/// Each client adds exact discrete Gaussian noise of σ_total/sqrt(N − T − 1) (value units) so
/// that the released sum carries N(0, σ_total²) per coordinate even if T clients are missing or
/// collude. `noise_sigma_total` must be in [`DPD_SIGMA_MIN`, `DPD_SIGMA_MAX`]: 0, a negative
/// value or NaN is refused with `DPD_ERR_INVALID_PRIVACY_PARAMETER` (0 is what an unchecked,
/// failed `dpd_gaussian_sigma_analytic` would leave behind). An exact, NON-PRIVATE sum is only
/// available under its own name, `dpd_round_config_new_exact`. `frac_bits` is
/// `DPD_FRAC_BITS_AUTO` or an explicit number of fractional bits (an error if unsafe).
///
/// Limits: 1 <= N <= 2^32, 2 <= M <= 65535, 1 <= d <= 2^32 (the wire format's maximum). The
/// configuration itself is small; nodes and aggregators allocate d words each, clients M·d
/// words when sharding, and report `DPD_ERR_ALLOC` when the memory is not there.
///
/// Errors: `DPD_ERR_INVALID_PRIVACY_PARAMETER` (σ), `DPD_ERR_INVALID_ARGUMENT` (N, M, T, d,
/// bound, mode, N − T − 1 < 1), `DPD_ERR_NON_FINITE`, `DPD_ERR_OVERFLOW` (no precision lets the
/// sum fit the ring).
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
        let sigma = privacy::round_sigma("noise_sigma_total", noise_sigma_total)?;
        let params = round_params(
            round,
            n_clients,
            n_nodes,
            max_dropped,
            dim,
            bound,
            mode,
            Some(sigma),
            frac_bits,
        )?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_config(&params, out) }
    })
}

/// NON-PRIVATE: creates the configuration of a round that releases the EXACT sum, with no
/// noise at all. The sum hides the individual inputs from the nodes and the aggregator, but the
/// released value is not differentially private: anyone who sees it can learn about single
/// records from it. Use it for tests, benchmarks and data that is not personal; for a private
/// round calibrate σ (`dpd_gaussian_sigma_analytic`) and call `dpd_round_config_new`.
///
/// The arguments are those of `dpd_round_config_new` without the noise; the same limits and
/// errors apply. `dpd_round_config_info` reports σ_client = 0 for such a round.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `dpd_round_config*`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // As dpd_round_config_new.
pub unsafe extern "C" fn dpd_round_config_new_exact(
    round: u64,
    n_clients: usize,
    n_nodes: u32,
    max_dropped: usize,
    dim: usize,
    bound: f64,
    mode: u32,
    frac_bits: u32,
    out: *mut *mut dpd_round_config,
) -> dpd_status {
    ffi_entry("dpd_round_config_new_exact", || {
        check_out(out, "out")?;
        let params = round_params(
            round,
            n_clients,
            n_nodes,
            max_dropped,
            dim,
            bound,
            mode,
            None,
            frac_bits,
        )?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_config(&params, out) }
    })
}

/// Validates `params` and writes the new handle (validity off) to `out`.
///
/// # Safety
/// `out` must be non-NULL and writable.
unsafe fn write_config(params: &RoundParams, out: *mut *mut dpd_round_config) -> FfiResult<()> {
    let inner = RoundConfig::new(params)?;
    let config = dpd_round_config {
        inner,
        validity: None,
    };
    // SAFETY: forwarded caller contract.
    unsafe { write_out(out, into_handle(config), "out") }
}

#[allow(clippy::too_many_arguments)] // The flat arguments of the two constructors.
fn round_params(
    round: u64,
    n_clients: usize,
    n_nodes: u32,
    max_dropped: usize,
    dim: usize,
    bound: f64,
    mode: u32,
    noise_sigma_total: Option<f64>,
    frac_bits: u32,
) -> FfiResult<RoundParams> {
    let n_nodes = u16::try_from(n_nodes)
        .map_err(|_| FfiError::invalid(format!("`n_nodes` = {n_nodes} exceeds 65535")))?;
    Ok(RoundParams {
        round: RoundId(round),
        n_clients,
        n_nodes,
        max_dropped,
        dim,
        bound,
        mode: share_mode(mode)?,
        noise_sigma_total,
        frac_bits: (frac_bits != DPD_FRAC_BITS_AUTO).then_some(frac_bits),
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
/// `config` must be NULL or a handle from `dpd_round_config_new` or
/// `dpd_round_config_new_exact` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_free(config: *mut dpd_round_config) {
    // SAFETY: header contract.
    unsafe { free_handle(config) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::dpd_last_error_message;

    fn last_error() -> String {
        let mut buf = [0u8; 512];
        let mut len = 0usize;
        // SAFETY: `buf` and `len` are live locals of the stated size.
        unsafe { dpd_last_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut len) };
        String::from_utf8_lossy(&buf[..len.min(buf.len() - 1)]).into_owned()
    }

    #[test]
    fn a_private_round_refuses_sigma_zero_negative_and_nan_and_leaves_out_alone() {
        for bad in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
            let sentinel = std::ptr::dangling_mut::<dpd_round_config>();
            let mut out = sentinel;
            // SAFETY: `out` is a local.
            let status = unsafe {
                dpd_round_config_new(1, 10, 2, 1, 3, 1.0, 1, bad, DPD_FRAC_BITS_AUTO, &mut out)
            };
            assert_eq!(
                status,
                dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "{bad}"
            );
            assert_eq!(out, sentinel, "out written on failure ({bad})");
            let message = last_error();
            assert!(message.starts_with("dpd_round_config_new: "), "{message}");
            assert!(message.contains("dpd_round_config_new_exact"), "{message}");
            assert!(message.contains("NON-PRIVATE"), "{message}");
        }
    }

    #[test]
    fn the_exact_constructor_is_the_only_way_to_a_round_without_noise() {
        let mut exact = std::ptr::null_mut();
        let mut noisy = std::ptr::null_mut();
        let (mut sigma_exact, mut sigma_noisy) = (f64::NAN, f64::NAN);
        // SAFETY: every pointer is a local; the handles are freed below.
        unsafe {
            let s =
                dpd_round_config_new_exact(1, 10, 2, 1, 3, 1.0, 1, DPD_FRAC_BITS_AUTO, &mut exact);
            assert_eq!(s, dpd_status::DPD_OK);
            let s =
                dpd_round_config_new(1, 10, 2, 1, 3, 1.0, 1, 4.0, DPD_FRAC_BITS_AUTO, &mut noisy);
            assert_eq!(s, dpd_status::DPD_OK);
            let null = std::ptr::null_mut();
            dpd_round_config_info(exact, null, &mut sigma_exact, std::ptr::null_mut());
            dpd_round_config_info(noisy, null, &mut sigma_noisy, std::ptr::null_mut());
            dpd_round_config_free(exact);
            dpd_round_config_free(noisy);
        }
        assert_eq!(sigma_exact, 0.0);
        // N − T − 1 = 8 clients' noise makes up σ_total = 4: σ_client = 4/√8.
        assert!(
            (sigma_noisy - 4.0 / 8f64.sqrt()).abs() < 1e-12,
            "{sigma_noisy}"
        );
    }
}
