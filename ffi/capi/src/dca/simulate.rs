//! A whole DCA round in one process (`fixedpoint_shares::simulate_round`): for simulations
//! and experiments where one party holds every client's vector.

use fixedpoint_shares::{ClientId, simulate_round};

use crate::dca::aggregator::{dpd_release_info, write_release};
use crate::dca::round::dpd_round_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref};
use crate::ptr::{check_out, reserve_array, slice_in};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// Runs one round: every client in 0..N except `dropped[0..n_dropped]` shards its row of
/// `inputs` (N × d, row-major, `len` = N·d), the nodes sum and agree, the aggregator releases.
/// Writes the sum (query-size pattern, d doubles) and, if `info` is not NULL, its description.
/// More than T dropped → `DPD_ERR_TOO_MANY_DROPPED`; `len != N·d` →
/// `DPD_ERR_LENGTH_MISMATCH`; bad values as `dpd_client_shard`.
///
/// # Safety
/// `config`, `rng` NULL or live handles (`rng` not used concurrently); input arrays NULL only
/// with length 0, else readable; `out_sum` NULL with `out_cap == 0` or `out_cap` writable
/// doubles; `out_len` NULL (→ error) or writable; `info` NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // One call for a whole round; flat arguments bind easily.
pub unsafe extern "C" fn dpd_simulate_round(
    config: *const dpd_round_config,
    inputs: *const f64,
    len: usize,
    dropped: *const u64,
    n_dropped: usize,
    rng: *mut dpd_rng,
    out_sum: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    info: *mut dpd_release_info,
) -> dpd_status {
    ffi_entry("dpd_simulate_round", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for the handles and input arrays.
        let (config, rng, inputs, dropped) = unsafe {
            (
                handle_ref(config, "config")?.unverified()?,
                handle_mut(rng, "rng")?,
                slice_in(inputs, len, "inputs")?,
                slice_in(dropped, n_dropped, "dropped")?,
            )
        };
        let (n, d) = (config.n_clients(), config.dim());
        if n.checked_mul(d) != Some(inputs.len()) {
            return Err(FfiError::new(
                dpd_status::DPD_ERR_LENGTH_MISMATCH,
                format!(
                    "`inputs` has {} values, the round needs N·d = {n}·{d}",
                    inputs.len()
                ),
            ));
        }
        // The sum has d values: size it before any share or noise is drawn.
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(d, out_cap, out_len, "out_sum") }?;
        let rows: Vec<&[f64]> = inputs.chunks_exact(d).collect();
        let dropped: Vec<ClientId> = dropped.iter().copied().map(ClientId).collect();
        let release = simulate_round(config, &rows, &dropped, rng.next_source())?;
        // SAFETY: header contract for the outputs.
        unsafe { write_release(&release, out_sum, out_cap, out_len, info) }
    })
}
