//! Issue 43's verified rounds (`verified_shares`): a round-config option that makes every client
//! prove, on its secret shares, that its contribution (encoded data plus its clamped noise
//! slice) lies within ±B per coordinate (L∞) or has L2 norm at most R (L2); an invalid client is
//! left out like a dropout and named.
//! In process only so far (`dpd_simulate_round_verified`); the distributed parties refuse a
//! config with the option on (`dpd_round_config::unverified`).

use fixedpoint_shares::{ClientId, ClientSet, RoundConfig};
use prio::field::Field128;
use prio::vdaf::prio3::Prio3InputShare;
use verified_shares::{
    Error, L2Bound, LinfBound, Relay, ValidityBound, VerifiedReport, simulate_verified_round,
};

use crate::dca::aggregator::{dpd_release_info, write_release};
use crate::dca::round::dpd_round_config;
use crate::error::{FfiError, FfiResult};
use crate::guard::ffi_entry;
use crate::handle::{handle_mut, handle_ref};
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::rng::dpd_rng;
use crate::status::dpd_status;

/// The validity check of a round (the `kind` argument of `dpd_round_config_set_validity`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_validity {
    /// No check (the default): the round is DCA's, bit for bit.
    DPD_VALIDITY_NONE = 0,
    /// Every coordinate of each client's contribution within ±B grid units (L∞), B = the
    /// codec's bound on |enc(x)| plus the noise slice bound τ; proved with libprio's
    /// Prio3SumVec.
    DPD_VALIDITY_LINF = 1,
    /// Each client's contribution has L2 norm at most R grid units, R = the data's L2 bound
    /// plus the noise slice's norm bound τ₂; proved with a circuit on libprio's FLP. Set with
    /// `dpd_round_config_set_validity_l2`, which takes the data's norm bound.
    DPD_VALIDITY_L2 = 2,
}

/// A round's validity mode as set on its config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Validity {
    /// The δ_t asked for.
    target: f64,
    pub(crate) bound: ValidityBound,
}

/// A round config's validity mode and the bound it implies (`dpd_round_config_validity_info`).
/// Grid units are those of the round's fixed-point codec: a value x is round(x·2^frac_bits).
/// σ below is the client's noise σ in grid units, N the number of clients, d the dimension.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct dpd_validity_info {
    /// A `dpd_validity` value: `DPD_VALIDITY_NONE` (every other field 0), `DPD_VALIDITY_LINF`
    /// or `DPD_VALIDITY_L2`.
    pub kind: u32,
    /// The truncation δ asked for in `dpd_round_config_set_validity` or
    /// `dpd_round_config_set_validity_l2`.
    pub truncation_delta_target: f64,
    /// L∞: the codec's bound on |enc(x)| for |x| ≤ the round's bound. L2: the data's norm
    /// bound on the grid, ⌈data_norm·2^frac_bits⌉. Grid units.
    pub data_units: u64,
    /// L∞: τ, each honest noise value is clamped into [−τ, τ], τ = ⌈σ·sqrt(2·ln(2·N·d/δ_t))⌉.
    /// L2: τ₂, an honest noise slice longer than τ₂ (L2 norm) is scaled back to it,
    /// τ₂ = ⌈σ·sqrt(d + 2·sqrt(d·x) + 2x)⌉ with x = ln(N/δ_t). Grid units; 0 without noise.
    pub slice_units: u64,
    /// L∞: B = data_units + slice_units, the bound each coordinate of a contribution is checked
    /// against. L2: R = data_units + slice_units, the bound on the L2 norm of a contribution.
    pub bound_units: u64,
    /// The probability bound on any honest noise value (L∞) or slice (L2) reaching τ or τ₂ (0
    /// without noise). L∞: δ_t = 2·N·d·exp(−τ²/(2σ²)). L2: δ_t = N·exp(−y²) with
    /// y = (sqrt(2t − d) − sqrt(d))/2, t = τ₂²/σ² (the x at which τ₂ is reached exactly). At most
    /// the target. Add it to the round's δ with `dpd_verified_total_delta`.
    pub truncation_delta: f64,
}

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let error = match error {
            Error::Round(inner) => return FfiError::from(inner),
            other => other,
        };
        let status = match &error {
            Error::InvalidParameter {
                name: "truncation_delta",
                ..
            } => dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
            Error::InvalidParameter {
                name: "bound (grid units)" | "radius (grid units)",
                ..
            }
            | Error::SumOverflow { .. } => dpd_status::DPD_ERR_OVERFLOW,
            // A client whose data are longer than the round's L2 bound refuses to take part.
            Error::DataPastBound { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            Error::InvalidParameter { .. } => dpd_status::DPD_ERR_INVALID_ARGUMENT,
            Error::TooManyMissing {
                dropped,
                invalid,
                invalid_clients,
                max_dropped,
            } => {
                // verified-shares' message prints the ids as Rust values; C hosts get numbers.
                let ids: Vec<String> = invalid_clients.iter().map(|c| c.0.to_string()).collect();
                return FfiError::new(
                    dpd_status::DPD_ERR_TOO_MANY_DROPPED,
                    format!(
                        "{dropped} clients dropped and {invalid} sent invalid contributions \
                         (clients {}): more than T = {max_dropped} missing, nothing released",
                        ids.join(", ")
                    ),
                );
            }
            _ => dpd_status::DPD_ERR_OTHER,
        };
        FfiError::new(status, error.to_string())
    }
}

/// `bound` for `config` at `truncation_delta`, after checking that libprio can run the round.
fn validity(
    config: &RoundConfig,
    bound: ValidityBound,
    truncation_delta: f64,
) -> FfiResult<Validity> {
    // Builds the round's Prio3 instance: refuses more than 255 nodes and what libprio refuses.
    Relay::new(config, bound)?;
    Ok(Validity {
        target: truncation_delta,
        bound,
    })
}

/// Turns the validity check of the round on (`DPD_VALIDITY_LINF`, with the truncation δ_t
/// target `truncation_delta`, strictly between 0 and 1, e.g. 1e-9) or off (`DPD_VALIDITY_NONE`;
/// `truncation_delta` is then ignored). Off is the default; a round with it off is the round it
/// was, bit for bit.
///
/// With it on, each honest client clamps its noise into [−τ, τ] and proves that every
/// coordinate of its contribution lies within ±B; τ is chosen so that the clamping changes
/// anything with probability at most δ_t, which costs (1 + e^ε)·δ_t of δ
/// (`dpd_verified_total_delta`). `dpd_round_config_validity_info` reports τ, B and δ_t.
///
/// So far only the in-process round `dpd_simulate_round_verified` runs such a round: clients,
/// nodes, aggregators, ledgers and `dpd_simulate_round` refuse a config with validity on
/// (`DPD_ERR_INVALID_ARGUMENT`), rather than run a round that checks nothing. Handles created
/// from the config before keep their own copy and are not affected.
///
/// Errors, with the config unchanged: `DPD_ERR_INVALID_ARGUMENT` (unknown `kind`,
/// `DPD_VALIDITY_L2`: set it with `dpd_round_config_set_validity_l2`, more than 255 nodes:
/// Prio3's limit), `DPD_ERR_INVALID_PRIVACY_PARAMETER` (`truncation_delta` not in
/// (0, 1), NaN), `DPD_ERR_OVERFLOW` (B too large for the proof's field: 2·B·N ≥ 2^120).
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_set_validity(
    config: *mut dpd_round_config,
    kind: u32,
    truncation_delta: f64,
) -> dpd_status {
    ffi_entry("dpd_round_config_set_validity", || -> FfiResult<()> {
        // SAFETY: header contract for `config`.
        let config = unsafe { handle_mut(config, "config") }?;
        config.validity = match kind {
            0 => None,
            1 => {
                let bound = LinfBound::new(&config.inner, truncation_delta)?;
                Some(validity(&config.inner, bound.into(), truncation_delta)?)
            }
            2 => {
                return Err(FfiError::invalid(
                    "`kind` DPD_VALIDITY_L2 (2) needs the data's norm bound: call \
                     dpd_round_config_set_validity_l2(config, data_norm, truncation_delta)",
                ));
            }
            other => {
                return Err(FfiError::invalid(format!(
                    "`kind` must be DPD_VALIDITY_NONE (0) or DPD_VALIDITY_LINF (1), got {other}"
                )));
            }
        };
        Ok(())
    })
}

/// Turns the L2 validity check of the round on (`DPD_VALIDITY_L2`): each client proves that its
/// contribution — encoded data plus its noise slice — has L2 norm at most R grid units, where
/// R = ⌈`data_norm`·2^frac_bits⌉ + τ₂ and `data_norm` bounds the L2 norm of every client's data
/// row (value units, e.g. a clipped gradient's norm). τ₂ is chosen so that an honest slice is
/// longer with probability at most δ_t ≤ `truncation_delta` (strictly between 0 and 1, e.g.
/// 1e-9); such a slice is scaled back to τ₂, which costs (1 + e^ε)·δ_t of δ
/// (`dpd_verified_total_delta`). `dpd_round_config_validity_info` reports τ₂, R and δ_t.
/// A client whose data are longer than `data_norm` (on the grid) refuses to take part: the
/// round fails (`dpd_simulate_round_verified`) rather than leave it out.
///
/// As with `dpd_round_config_set_validity`, only `dpd_simulate_round_verified` runs such a
/// round so far; `dpd_round_config_set_validity(config, DPD_VALIDITY_NONE, 0)` turns it off.
///
/// Errors, with the config unchanged: `DPD_ERR_INVALID_ARGUMENT` (`data_norm` negative, NaN,
/// infinite or at least 2^62 grid units; R = 0, i.e. `data_norm` 0 on an exact round; more than
/// 255 nodes), `DPD_ERR_INVALID_PRIVACY_PARAMETER` (`truncation_delta` not in (0, 1), NaN),
/// `DPD_ERR_OVERFLOW` (R too large for the proof's field: 2·R·N ≥ 2^120, R ≥ 2^62 or
/// (d + 1)·R² ≥ 2^127).
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle not used concurrently.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_set_validity_l2(
    config: *mut dpd_round_config,
    data_norm: f64,
    truncation_delta: f64,
) -> dpd_status {
    ffi_entry("dpd_round_config_set_validity_l2", || -> FfiResult<()> {
        // SAFETY: header contract for `config`.
        let config = unsafe { handle_mut(config, "config") }?;
        let bound = L2Bound::for_round(&config.inner, data_norm, truncation_delta)?;
        config.validity = Some(validity(&config.inner, bound.into(), truncation_delta)?);
        Ok(())
    })
}

/// Writes the round's validity mode and, when it is on, its bound (see `dpd_validity_info`).
///
/// # Safety
/// `config` NULL (→ `DPD_ERR_NULL_POINTER`) or a live handle; `out` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_round_config_validity_info(
    config: *const dpd_round_config,
    out: *mut dpd_validity_info,
) -> dpd_status {
    ffi_entry("dpd_round_config_validity_info", || -> FfiResult<()> {
        check_out(out, "out")?;
        // SAFETY: header contract for `config`.
        let config = unsafe { handle_ref(config, "config") }?;
        let info = match config.validity {
            None => dpd_validity_info {
                kind: dpd_validity::DPD_VALIDITY_NONE as u32,
                truncation_delta_target: 0.0,
                data_units: 0,
                slice_units: 0,
                bound_units: 0,
                truncation_delta: 0.0,
            },
            Some(Validity {
                target,
                bound: ValidityBound::Linf(bound),
            }) => dpd_validity_info {
                kind: dpd_validity::DPD_VALIDITY_LINF as u32,
                truncation_delta_target: target,
                data_units: bound.data_units,
                slice_units: bound.slice_units,
                bound_units: bound.units(),
                truncation_delta: bound.truncation_delta,
            },
            Some(Validity {
                target,
                bound: ValidityBound::L2(bound),
            }) => dpd_validity_info {
                kind: dpd_validity::DPD_VALIDITY_L2 as u32,
                truncation_delta_target: target,
                data_units: bound.data_units,
                slice_units: bound.slice_units,
                bound_units: bound.units(),
                truncation_delta: bound.truncation_delta,
            },
        };
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, info, "out") }
    })
}

/// The δ of a verified round: δ + (1 + e^ε)·δ_t, where (ε, δ) is the guarantee of the round
/// without clamping (the σ it was configured with) and δ_t its truncation δ
/// (`dpd_validity_info.truncation_delta`). The clamped and unclamped rounds differ only on an
/// event of probability ≤ δ_t, which gives this bound.
///
/// Errors: `DPD_ERR_INVALID_PRIVACY_PARAMETER` unless ε > 0 is finite and δ, δ_t are in [0, 1)
/// (NaN included), or if the sum is not below 1.
///
/// # Safety
/// `out` NULL (→ `DPD_ERR_NULL_POINTER`) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_verified_total_delta(
    epsilon: f64,
    delta: f64,
    truncation_delta: f64,
    out: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_verified_total_delta", || -> FfiResult<()> {
        check_out(out, "out")?;
        let refuse = |name: &str, value: f64, requirement: &str| {
            FfiError::new(
                dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
                format!("`{name}` = {value} is invalid: must be {requirement}"),
            )
        };
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(refuse("epsilon", epsilon, "finite and > 0"));
        }
        for (name, value) in [("delta", delta), ("truncation_delta", truncation_delta)] {
            if !(0.0..1.0).contains(&value) {
                return Err(refuse(name, value, "in [0, 1)"));
            }
        }
        let total = verified_shares::bound::total_delta(epsilon, delta, truncation_delta);
        if total >= 1.0 {
            return Err(refuse(
                "delta + (1 + e^epsilon)·truncation_delta",
                total,
                "below 1 (no guarantee otherwise)",
            ));
        }
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, total, "out") }
    })
}

/// Runs one verified round in process: as `dpd_simulate_round` (same inputs, same noise draws
/// from `rng`), with every client's contribution checked by the nodes. The config must have
/// validity on (`dpd_round_config_set_validity`), else `DPD_ERR_INVALID_ARGUMENT`.
///
/// Writes the sum over the valid clients (query-size pattern, d doubles), the ids of the
/// clients left out for invalid contributions into `out_invalid` (increasing; `*out_n_invalid`
/// of them; `invalid_cap` must be at least T = max_dropped, the most a round that releases can
/// leave out, checked before any work: else `DPD_ERR_BUFFER_TOO_SMALL` with `*out_n_invalid` =
/// T), optionally the release's description (`info`; `n_included` counts the valid clients) and
/// δ_t (`out_truncation_delta`, 0 without noise).
///
/// Where no honest noise value reaches τ (probability ≥ 1 − δ_t), an honest round releases
/// exactly what `dpd_simulate_round` releases with the same seed. Whatever the config's share
/// mode, the reports travel as Prio3's shares (node 0 the field vector and its proof share, the
/// other nodes a seed); the mode changes nothing in the release. More than T clients dropped or
/// invalid → `DPD_ERR_TOO_MANY_DROPPED` (its message names the invalid clients), nothing
/// written. In an L2 round (`dpd_round_config_set_validity_l2`), a client whose data row is
/// longer than the data's norm bound refuses to take part: `DPD_ERR_INVALID_ARGUMENT`, the
/// message naming the client, its norm and the bound, nothing written. Other errors as
/// `dpd_simulate_round`.
///
/// # Safety
/// As `dpd_simulate_round`; `out_invalid` NULL with `invalid_cap == 0` or `invalid_cap`
/// writable `uint64_t`s; `out_n_invalid` NULL (→ error) or writable; `out_truncation_delta`
/// NULL or writable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // One call for a whole round; flat arguments bind easily.
pub unsafe extern "C" fn dpd_simulate_round_verified(
    config: *const dpd_round_config,
    inputs: *const f64,
    len: usize,
    dropped: *const u64,
    n_dropped: usize,
    rng: *mut dpd_rng,
    out_sum: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    out_invalid: *mut u64,
    invalid_cap: usize,
    out_n_invalid: *mut usize,
    info: *mut dpd_release_info,
    out_truncation_delta: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_simulate_round_verified", || {
        // SAFETY: forwarded header contract.
        unsafe {
            run_verified(
                config,
                (inputs, len),
                (dropped, n_dropped),
                None,
                rng,
                (out_sum, out_cap, out_len),
                (out_invalid, invalid_cap, out_n_invalid),
                info,
                out_truncation_delta,
            )
        }
    })
}

/// TESTING ONLY — makes clients cheat: as `dpd_simulate_round_verified`, except that each client
/// in `malicious[0..n_malicious]` sends shares whose sum is its honest contribution plus 10⁶
/// times the data bound (10⁶·`data_units` grid units, 10⁶ units when `data_units` is 0) in
/// coordinate 0, in either validity mode, with the proof of its
/// honest contribution: what a client that inflates its value by a million times the bound
/// would send. For tests and demonstrations that such a client is left out and named; no
/// production path has a reason to call it.
///
/// Errors as `dpd_simulate_round_verified`; a malicious id ≥ N or listed twice, or also in
/// `dropped` → `DPD_ERR_INVALID_ARGUMENT` (`DPD_ERR_DUPLICATE_CLIENT` for a repeated id).
///
/// # Safety
/// As `dpd_simulate_round_verified`; `malicious` NULL only with `n_malicious == 0`, else
/// readable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)] // As dpd_simulate_round_verified.
pub unsafe extern "C" fn dpd_simulate_round_verified_testing_malicious(
    config: *const dpd_round_config,
    inputs: *const f64,
    len: usize,
    dropped: *const u64,
    n_dropped: usize,
    malicious: *const u64,
    n_malicious: usize,
    rng: *mut dpd_rng,
    out_sum: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
    out_invalid: *mut u64,
    invalid_cap: usize,
    out_n_invalid: *mut usize,
    info: *mut dpd_release_info,
    out_truncation_delta: *mut f64,
) -> dpd_status {
    ffi_entry("dpd_simulate_round_verified_testing_malicious", || {
        // SAFETY: forwarded header contract.
        unsafe {
            run_verified(
                config,
                (inputs, len),
                (dropped, n_dropped),
                Some((malicious, n_malicious)),
                rng,
                (out_sum, out_cap, out_len),
                (out_invalid, invalid_cap, out_n_invalid),
                info,
                out_truncation_delta,
            )
        }
    })
}

/// The body of both verified rounds.
///
/// # Safety
/// The header contracts of `dpd_simulate_round_verified_testing_malicious`.
#[allow(clippy::too_many_arguments)]
unsafe fn run_verified(
    config: *const dpd_round_config,
    (inputs, len): (*const f64, usize),
    (dropped, n_dropped): (*const u64, usize),
    malicious: Option<(*const u64, usize)>,
    rng: *mut dpd_rng,
    (out_sum, out_cap, out_len): (*mut f64, usize, *mut usize),
    (out_invalid, invalid_cap, out_n_invalid): (*mut u64, usize, *mut usize),
    info: *mut dpd_release_info,
    out_truncation_delta: *mut f64,
) -> FfiResult<()> {
    check_out(out_len, "out_len")?;
    check_out(out_n_invalid, "out_n_invalid")?;
    // SAFETY: header contract for the handles and input arrays.
    let (config, rng, inputs, dropped, malicious) = unsafe {
        (
            handle_ref(config, "config")?,
            handle_mut(rng, "rng")?,
            slice_in(inputs, len, "inputs")?,
            slice_in(dropped, n_dropped, "dropped")?,
            match malicious {
                Some((ptr, n)) => slice_in(ptr, n, "malicious")?,
                None => &[],
            },
        )
    };
    let Some(validity) = config.validity else {
        return Err(FfiError::invalid(
            "`config` has validity off: turn it on with dpd_round_config_set_validity(config, \
             DPD_VALIDITY_LINF, truncation_delta) or dpd_round_config_set_validity_l2, or run \
             dpd_simulate_round",
        ));
    };
    let round = &config.inner;
    let (n, d) = (round.n_clients(), round.dim());
    if n.checked_mul(d) != Some(inputs.len()) {
        return Err(FfiError::new(
            dpd_status::DPD_ERR_LENGTH_MISMATCH,
            format!(
                "`inputs` has {} values, the round needs N·d = {n}·{d}",
                inputs.len()
            ),
        ));
    }
    let dropped: Vec<ClientId> = dropped.iter().copied().map(ClientId).collect();
    let malicious: Vec<ClientId> = malicious.iter().copied().map(ClientId).collect();
    let cheats = ClientSet::from_ids(n, &malicious)?;
    if let Some(both) = dropped.iter().find(|&&id| cheats.contains(id)) {
        return Err(FfiError::invalid(format!(
            "client {both} is both in `dropped` and in `malicious`: a dropped client sends nothing"
        )));
    }
    // Both outputs are sized before any share or noise is drawn.
    // SAFETY: `out_len` and `out_n_invalid` checked non-NULL and writable by the header contract.
    unsafe {
        reserve_array(d, out_cap, out_len, "out_sum")?;
        reserve_array(
            round.max_dropped(),
            invalid_cap,
            out_n_invalid,
            "out_invalid",
        )?;
    }
    let rows: Vec<&[f64]> = inputs.chunks_exact(d).collect();
    // 10⁶ data bounds (at least 10⁶ units, for an L2 round whose data bound is 0).
    let data_units = match validity.bound {
        ValidityBound::Linf(bound) => bound.data_units,
        ValidityBound::L2(bound) => bound.data_units,
    };
    let inflate = Field128::from(u128::from(data_units.max(1)) * 1_000_000);
    let cheat = |report: &mut VerifiedReport| {
        if cheats.contains(report.client)
            && let Some(Prio3InputShare::Leader {
                measurement_share, ..
            }) = report.input_shares.first_mut()
        {
            // Coordinate 0 is the first `bits` elements, least significant bit first, in both
            // modes (L∞: Prio3SumVec's entries u = v + B ∈ [0, 2B]; L2: the circuit's
            // u = v + R ∈ [0, 2R], bits = the bit width of 2R): adding to the lowest bit's share
            // moves the shares' sum by that many units, and no bit stays a bit.
            measurement_share[0] += inflate;
        }
    };
    let tamper: Option<verified_shares::simulate::Tamper<'_>> =
        (!malicious.is_empty()).then_some(&cheat);
    let out = simulate_verified_round(
        round,
        validity.bound,
        &rows,
        &dropped,
        tamper,
        rng.next_source(),
    )?;
    let invalid: Vec<u64> = out.invalid.iter().map(|c| c.0).collect();
    // SAFETY: header contract for the outputs.
    unsafe {
        write_release(&out.release, out_sum, out_cap, out_len, info)?;
        write_array(
            &invalid,
            out_invalid,
            invalid_cap,
            out_n_invalid,
            "out_invalid",
        )?;
        if !out_truncation_delta.is_null() {
            write_out(
                out_truncation_delta,
                out.truncation_delta,
                "out_truncation_delta",
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::ptr::{null, null_mut};

    use super::*;
    use crate::dca::aggregator::dpd_aggregator_new;
    use crate::dca::client::dpd_client_new;
    use crate::dca::node::dpd_node_new;
    use crate::dca::round::{
        DPD_FRAC_BITS_AUTO, dpd_round_config_free, dpd_round_config_new, dpd_round_config_new_exact,
    };
    use crate::dca::simulate::dpd_simulate_round;
    use crate::error::dpd_last_error_message;
    use crate::rng::{dpd_rng_free, dpd_rng_new_insecure_fixed_seed};
    use crate::status::dpd_status::*;

    const LINF: u32 = dpd_validity::DPD_VALIDITY_LINF as u32;
    const L2: u32 = dpd_validity::DPD_VALIDITY_L2 as u32;

    fn last_error() -> String {
        let mut buf = [0u8; 1024];
        let mut len = 0usize;
        // SAFETY: `buf` and `len` are live locals of the stated size.
        unsafe { dpd_last_error_message(buf.as_mut_ptr().cast(), buf.len(), &mut len) };
        String::from_utf8_lossy(&buf[..len.min(buf.len() - 1)]).into_owned()
    }

    /// 6 clients, `nodes` nodes, T = 2, d = 2, bound 1, seed mode; σ_total = 0.5 or exact.
    fn config(nodes: u32, noise: bool) -> *mut dpd_round_config {
        let mut out = null_mut();
        // SAFETY: `out` is a local.
        let status = unsafe {
            if noise {
                dpd_round_config_new(7, 6, nodes, 2, 2, 1.0, 1, 0.5, DPD_FRAC_BITS_AUTO, &mut out)
            } else {
                dpd_round_config_new_exact(7, 6, nodes, 2, 2, 1.0, 1, DPD_FRAC_BITS_AUTO, &mut out)
            }
        };
        assert_eq!(status, DPD_OK);
        out
    }

    fn info(config: *const dpd_round_config) -> dpd_validity_info {
        let mut out = std::mem::MaybeUninit::uninit();
        // SAFETY: live handle and a local.
        let status = unsafe { dpd_round_config_validity_info(config, out.as_mut_ptr()) };
        assert_eq!(status, DPD_OK);
        // SAFETY: written on DPD_OK.
        unsafe { out.assume_init() }
    }

    #[test]
    fn validity_is_off_by_default_and_bad_settings_leave_the_config_alone() {
        let cfg = config(3, true);
        assert_eq!(info(cfg).kind, 0);
        assert_eq!(info(cfg).bound_units, 0);
        // SAFETY: live handle.
        let bad = |kind: u32, td: f64| unsafe { dpd_round_config_set_validity(cfg, kind, td) };
        for td in [0.0, 1.0, -1e-9, f64::NAN, f64::INFINITY] {
            assert_eq!(bad(LINF, td), DPD_ERR_INVALID_PRIVACY_PARAMETER, "{td}");
            let message = last_error();
            assert!(
                message.starts_with("dpd_round_config_set_validity: "),
                "{message}"
            );
            assert!(message.contains("truncation_delta"), "{message}");
            assert_eq!(info(cfg).kind, 0);
        }
        assert_eq!(bad(2, 1e-9), DPD_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("`kind`"), "{}", last_error());
        assert_eq!(info(cfg).kind, 0);
        // On, then a bad setting keeps it on as it was; NONE turns it off.
        assert_eq!(bad(LINF, 1e-9), DPD_OK);
        let on = info(cfg);
        assert_eq!(bad(LINF, 2.0), DPD_ERR_INVALID_PRIVACY_PARAMETER);
        assert_eq!(info(cfg), on);
        assert_eq!(bad(0, f64::NAN), DPD_OK);
        assert_eq!(info(cfg).kind, 0);
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(cfg) };
    }

    /// The bound by hand for N = 6, T = 2, d = 2, σ_total = 0.5: σ_client = 0.5/√3 (N − T − 1 =
    /// 3), σ in grid units σ_client·2^f; τ = ⌈σ·√(2·ln(2·6·2/10⁻⁹))⌉, δ_t = 2·6·2·exp(−τ²/2σ²).
    #[test]
    fn the_bound_by_hand() {
        let cfg = config(3, true);
        let mut f = 0u32;
        // SAFETY: live handle and locals.
        unsafe {
            assert_eq!(dpd_round_config_set_validity(cfg, LINF, 1e-9), DPD_OK);
            crate::dca::round::dpd_round_config_info(cfg, &mut f, null_mut(), null_mut());
        }
        let v = info(cfg);
        let scale = 2f64.powi(f as i32);
        let sigma = 0.5 / 3f64.sqrt() * scale;
        let ceiling = (sigma * (2.0 * (24.0 / 1e-9f64).ln()).sqrt()).ceil();
        let delta_at = |tau: f64| 24.0 * (-tau * tau / (2.0 * sigma * sigma)).exp();
        // Here f = 52 and τ ≈ 9·10¹⁵ > 2⁵³: at the formula's ceiling δ_t comes out a rounding
        // error above the target (1.000000000000001e-9), so verified-shares raises τ by steps of
        // τ/2⁴⁸ (31 units here) until δ_t ≤ the target as computed: one step.
        assert!(delta_at(ceiling) > 1e-9);
        let tau = ceiling + (ceiling as u64 >> 48) as f64;
        assert_eq!(ceiling as u64 >> 48, 31);
        assert!(delta_at(tau) <= 1e-9);
        assert_eq!(v.kind, 1);
        assert_eq!(v.truncation_delta_target, 1e-9);
        assert_eq!(v.data_units, 1u64 << f);
        assert_eq!(v.slice_units, tau as u64);
        assert_eq!(v.bound_units, (1u64 << f) + tau as u64);
        let dt = delta_at(tau);
        assert!((v.truncation_delta - dt).abs() <= 1e-12 * dt, "{v:?} {dt}");
        assert!(v.truncation_delta <= 1e-9, "{v:?}");
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(cfg) };
    }

    #[test]
    fn more_than_255_nodes_is_refused() {
        let cfg = config(256, false);
        // SAFETY: live handle.
        let status = unsafe { dpd_round_config_set_validity(cfg, LINF, 1e-9) };
        assert_eq!(status, DPD_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("255"), "{}", last_error());
        assert_eq!(info(cfg).kind, 0);
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(cfg) };
    }

    #[test]
    fn parties_and_the_plain_round_refuse_a_config_with_validity_on() {
        let cfg = config(3, true);
        let mut rng = null_mut();
        let inputs = [0.25; 12];
        let mut out = [0.0; 2];
        let mut len = 0;
        // SAFETY: live handles and locals; the out-pointers stay untouched on failure.
        unsafe {
            assert_eq!(dpd_rng_new_insecure_fixed_seed(1, &mut rng), DPD_OK);
            assert_eq!(dpd_round_config_set_validity(cfg, LINF, 1e-9), DPD_OK);
            let (mut client, mut node, mut aggregator) = (null_mut(), null_mut(), null_mut());
            let statuses = [
                dpd_client_new(cfg, 0, rng, &mut client),
                dpd_node_new(cfg, 0, &mut node),
                dpd_aggregator_new(cfg, &mut aggregator),
                dpd_simulate_round(
                    cfg,
                    inputs.as_ptr(),
                    12,
                    null(),
                    0,
                    rng,
                    out.as_mut_ptr(),
                    2,
                    &mut len,
                    null_mut(),
                ),
            ];
            for status in statuses {
                assert_eq!(status, DPD_ERR_INVALID_ARGUMENT);
            }
            assert!(client.is_null() && node.is_null() && aggregator.is_null());
            assert_eq!(len, 0);
            let message = last_error();
            assert!(message.starts_with("dpd_simulate_round: "), "{message}");
            assert!(message.contains("dpd_simulate_round_verified"), "{message}");
            dpd_rng_free(rng);
            dpd_round_config_free(cfg);
        }
    }

    #[test]
    fn the_verified_round_refuses_bad_calls_and_writes_nothing() {
        let cfg = config(3, true);
        let mut rng = null_mut();
        // SAFETY: a local.
        assert_eq!(
            unsafe { dpd_rng_new_insecure_fixed_seed(1, &mut rng) },
            DPD_OK
        );
        let inputs = [0.25; 12];
        let mut out = [7.0; 2];
        let mut invalid = [9u64; 2];
        let (mut len, mut n_invalid, mut dt) = (0usize, 0usize, -1.0);
        let (out_p, invalid_p) = (out.as_mut_ptr(), invalid.as_mut_ptr());
        let (len_p, n_invalid_p, dt_p): (*mut usize, *mut usize, *mut f64) =
            (&mut len, &mut n_invalid, &mut dt);
        // SAFETY: live handles and locals of the lengths passed.
        let run = |dropped: &[u64], malicious: &[u64], invalid_cap: usize| unsafe {
            dpd_simulate_round_verified_testing_malicious(
                cfg,
                inputs.as_ptr(),
                12,
                dropped.as_ptr(),
                dropped.len(),
                malicious.as_ptr(),
                malicious.len(),
                rng,
                out_p,
                2,
                len_p,
                invalid_p,
                invalid_cap,
                n_invalid_p,
                null_mut(),
                dt_p,
            )
        };
        // Validity off.
        assert_eq!(run(&[], &[], 2), DPD_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("validity off"), "{}", last_error());
        // SAFETY: live handle.
        assert_eq!(
            unsafe { dpd_round_config_set_validity(cfg, LINF, 1e-9) },
            DPD_OK
        );
        assert_eq!(run(&[1], &[1], 2), DPD_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("both"), "{}", last_error());
        assert_eq!(run(&[], &[6], 2), DPD_ERR_INVALID_ARGUMENT);
        assert_eq!(run(&[], &[3, 3], 2), DPD_ERR_DUPLICATE_CLIENT);
        // The invalid ids' buffer must hold T = 2: a size query answers T.
        assert_eq!(run(&[], &[], 1), DPD_ERR_BUFFER_TOO_SMALL);
        // SAFETY: a local.
        assert_eq!(unsafe { *n_invalid_p }, 2);
        assert!(last_error().contains("out_invalid"), "{}", last_error());
        // Three cheats and T = 2: nothing released, the cheats named.
        assert_eq!(run(&[], &[0, 2, 4], 2), DPD_ERR_TOO_MANY_DROPPED);
        let message = last_error();
        assert!(message.contains("(clients 0, 2, 4)"), "{message}");
        assert_eq!((out, invalid, len, dt), ([7.0; 2], [9; 2], 0, -1.0));
        assert_eq!(n_invalid, 2); // from the size query above
        // SAFETY: live handles, freed once.
        unsafe {
            dpd_rng_free(rng);
            dpd_round_config_free(cfg);
        }
    }

    /// δ + (1 + e^ε)·δ_t by hand: 1e-6 + (1 + e)·1e-9 = 1.003718281828459e-06.
    #[test]
    fn total_delta_by_hand_and_its_refusals() {
        let mut out = -1.0;
        // SAFETY: a local.
        let total = |e: f64, d: f64, t: f64, out: &mut f64| unsafe {
            dpd_verified_total_delta(e, d, t, out)
        };
        assert_eq!(total(1.0, 1e-6, 1e-9, &mut out), DPD_OK);
        assert!((out - 1.003718281828459e-06).abs() < 1e-20, "{out:e}");
        for (e, d, t) in [
            (0.0, 1e-6, 1e-9),
            (f64::INFINITY, 1e-6, 1e-9),
            (f64::NAN, 1e-6, 1e-9),
            (1.0, 1.0, 1e-9),
            (1.0, -1e-6, 1e-9),
            (1.0, 1e-6, f64::NAN),
            (1.0, 0.5, 0.2),
        ] {
            let mut untouched = -1.0;
            assert_eq!(
                total(e, d, t, &mut untouched),
                DPD_ERR_INVALID_PRIVACY_PARAMETER,
                "{e} {d} {t}"
            );
            assert_eq!(untouched, -1.0);
        }
        // SAFETY: NULL out.
        assert_eq!(
            unsafe { dpd_verified_total_delta(1.0, 1e-6, 1e-9, null_mut()) },
            DPD_ERR_NULL_POINTER
        );
    }

    #[test]
    fn null_handles_and_outputs_are_refused() {
        let cfg = config(3, false);
        let mut rng = null_mut();
        let inputs = [0.25; 12];
        let mut out = [0.0; 2];
        let mut invalid = [0u64; 2];
        let (mut len, mut n_invalid) = (0usize, 0usize);
        // SAFETY: every non-NULL pointer is a live local or handle.
        unsafe {
            assert_eq!(dpd_rng_new_insecure_fixed_seed(1, &mut rng), DPD_OK);
            assert_eq!(dpd_round_config_set_validity(cfg, LINF, 1e-9), DPD_OK);
            let call = |config: *const dpd_round_config,
                        rng: *mut dpd_rng,
                        out_len: *mut usize,
                        out_n_invalid: *mut usize,
                        out: &mut [f64; 2],
                        invalid: &mut [u64; 2]| {
                dpd_simulate_round_verified(
                    config,
                    inputs.as_ptr(),
                    12,
                    null(),
                    0,
                    rng,
                    out.as_mut_ptr(),
                    2,
                    out_len,
                    invalid.as_mut_ptr(),
                    2,
                    out_n_invalid,
                    null_mut(),
                    null_mut(),
                )
            };
            let cases = [
                (
                    "set_validity config",
                    dpd_round_config_set_validity(null_mut(), LINF, 1e-9),
                ),
                (
                    "set_validity_l2 config",
                    dpd_round_config_set_validity_l2(null_mut(), 1.0, 1e-9),
                ),
                (
                    "validity_info config",
                    dpd_round_config_validity_info(null(), &mut std::mem::zeroed()),
                ),
                (
                    "validity_info out",
                    dpd_round_config_validity_info(cfg, null_mut()),
                ),
                (
                    "verified config",
                    call(
                        null(),
                        rng,
                        &mut len,
                        &mut n_invalid,
                        &mut out,
                        &mut invalid,
                    ),
                ),
                (
                    "verified rng",
                    call(
                        cfg,
                        null_mut(),
                        &mut len,
                        &mut n_invalid,
                        &mut out,
                        &mut invalid,
                    ),
                ),
                (
                    "verified out_len",
                    call(cfg, rng, null_mut(), &mut n_invalid, &mut out, &mut invalid),
                ),
                (
                    "verified out_n_invalid",
                    call(cfg, rng, &mut len, null_mut(), &mut out, &mut invalid),
                ),
            ];
            for (what, status) in cases {
                assert_eq!(status, DPD_ERR_NULL_POINTER, "{what}");
            }
            assert_eq!((len, n_invalid), (0, 0));
            dpd_rng_free(rng);
            dpd_round_config_free(cfg);
        }
    }

    /// With seed mode, no noise and the insecure seed, the verified round releases the plain
    /// round's sum, and a malicious client's exclusion equals dropping it.
    #[test]
    fn verified_rounds_match_plain_rounds() {
        let plain = config(3, false);
        let verified = config(3, false);
        let inputs: Vec<f64> = (0..12).map(|i| (i as f64 * 0.37).sin()).collect();
        let run_plain = |dropped: &[u64]| {
            let mut rng = null_mut();
            let mut out = [0.0; 2];
            let mut len = 0;
            // SAFETY: live handles and locals.
            unsafe {
                assert_eq!(dpd_rng_new_insecure_fixed_seed(43, &mut rng), DPD_OK);
                let status = dpd_simulate_round(
                    plain,
                    inputs.as_ptr(),
                    12,
                    dropped.as_ptr(),
                    dropped.len(),
                    rng,
                    out.as_mut_ptr(),
                    2,
                    &mut len,
                    null_mut(),
                );
                dpd_rng_free(rng);
                assert_eq!(status, DPD_OK);
            }
            out
        };
        let run_verified = |malicious: &[u64]| {
            let mut rng = null_mut();
            let mut out = [0.0; 2];
            let mut invalid = [u64::MAX; 2];
            let (mut len, mut n_invalid) = (0, 0);
            // SAFETY: live handles and locals.
            unsafe {
                assert_eq!(dpd_rng_new_insecure_fixed_seed(43, &mut rng), DPD_OK);
                let status = dpd_simulate_round_verified_testing_malicious(
                    verified,
                    inputs.as_ptr(),
                    12,
                    null(),
                    0,
                    malicious.as_ptr(),
                    malicious.len(),
                    rng,
                    out.as_mut_ptr(),
                    2,
                    &mut len,
                    invalid.as_mut_ptr(),
                    2,
                    &mut n_invalid,
                    null_mut(),
                    null_mut(),
                );
                dpd_rng_free(rng);
                assert_eq!(status, DPD_OK, "{}", last_error());
            }
            (out, invalid[..n_invalid].to_vec())
        };
        // SAFETY: live handle.
        let status = unsafe { dpd_round_config_set_validity(verified, LINF, 1e-9) };
        assert_eq!(status, DPD_OK);
        assert_eq!(run_verified(&[]), (run_plain(&[]), vec![]));
        assert_eq!(run_verified(&[4]), (run_plain(&[4]), vec![4]));
        // The same in L2 (rows of norm ≤ √2 under the bound 1.5).
        // SAFETY: live handle.
        let status = unsafe { dpd_round_config_set_validity_l2(verified, 1.5, 1e-9) };
        assert_eq!(status, DPD_OK);
        assert_eq!(info(verified).kind, L2);
        assert_eq!(run_verified(&[]), (run_plain(&[]), vec![]));
        assert_eq!(run_verified(&[4]), (run_plain(&[4]), vec![4]));
        assert_eq!(run_verified(&[0, 5]), (run_plain(&[0, 5]), vec![0, 5]));
        // SAFETY: live handles, freed once.
        unsafe {
            dpd_round_config_free(plain);
            dpd_round_config_free(verified);
        }
    }

    /// Round 7 with 6 clients, 3 nodes, T = 2, d = 2, bound 1, σ_total = 0.5 on a 2^-20 grid.
    fn config_frac20() -> *mut dpd_round_config {
        let mut out = null_mut();
        // SAFETY: `out` is a local.
        let status = unsafe { dpd_round_config_new(7, 6, 3, 2, 2, 1.0, 1, 0.5, 20, &mut out) };
        assert_eq!(status, DPD_OK);
        out
    }

    /// τ₂, R and δ_t by hand (python3 with mpmath at 50 digits, not this crate): σ_client =
    /// 0.5/√3 (N − T − 1 = 3), σ = σ_client·2^20 = 302697.81793289051282 units; x = ln(6/10⁻⁹)
    /// = 22.515025306174466095; τ₂ = ⌈σ·√(2 + 2·√(2x) + 2x)⌉ = ⌈2353481.6158…⌉ = 2353482;
    /// data 2·2^20 = 2097152, R = 4450634; t = τ₂²/σ², y = (√(2t − 2) − √2)/2,
    /// δ_t = 6·exp(−y²) = 9.9999141221655839e-10.
    #[test]
    fn the_l2_bound_by_hand() {
        let cfg = config_frac20();
        // SAFETY: live handle.
        assert_eq!(
            unsafe { dpd_round_config_set_validity_l2(cfg, 2.0, 1e-9) },
            DPD_OK
        );
        let v = info(cfg);
        assert_eq!(v.kind, L2);
        assert_eq!(v.truncation_delta_target, 1e-9);
        assert_eq!(v.data_units, 2097152);
        assert_eq!(v.slice_units, 2353482);
        assert_eq!(v.bound_units, 4450634);
        assert!(
            (v.truncation_delta - 9.999_914_122_165_584e-10).abs() <= 1e-21,
            "{v:?}"
        );
        assert!(v.truncation_delta <= 1e-9, "{v:?}");
        // A norm bound off the grid rounds up: 0.1·2^20 = 104857.6 → 104858.
        // SAFETY: live handle.
        assert_eq!(
            unsafe { dpd_round_config_set_validity_l2(cfg, 0.1, 1e-9) },
            DPD_OK
        );
        assert_eq!(info(cfg).data_units, 104858);
        assert_eq!(info(cfg).bound_units, 104858 + 2353482);
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(cfg) };
    }

    #[test]
    fn bad_l2_settings_leave_the_config_alone() {
        let cfg = config_frac20();
        // SAFETY: live handle.
        let set = |norm: f64, td: f64| unsafe { dpd_round_config_set_validity_l2(cfg, norm, td) };
        let refused = |status: dpd_status, expected: dpd_status, needle: &str| {
            assert_eq!(status, expected, "{}", last_error());
            let message = last_error();
            assert!(
                message.starts_with("dpd_round_config_set_validity_l2: ")
                    && message.contains(needle),
                "{message}"
            );
        };
        for before in [None, Some(LINF)] {
            if let Some(kind) = before {
                // SAFETY: live handle.
                assert_eq!(
                    unsafe { dpd_round_config_set_validity(cfg, kind, 1e-6) },
                    DPD_OK
                );
            }
            let was = info(cfg);
            for norm in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e30] {
                refused(set(norm, 1e-9), DPD_ERR_INVALID_ARGUMENT, "data_norm");
            }
            for td in [0.0, 1.0, -1e-9, f64::NAN] {
                refused(
                    set(1.0, td),
                    DPD_ERR_INVALID_PRIVACY_PARAMETER,
                    "truncation_delta",
                );
            }
            // DPD_VALIDITY_L2 through the kind setter: it needs the norm bound.
            // SAFETY: live handle.
            let status = unsafe { dpd_round_config_set_validity(cfg, L2, 1e-9) };
            assert_eq!(status, DPD_ERR_INVALID_ARGUMENT);
            assert!(
                last_error().contains("dpd_round_config_set_validity_l2"),
                "{}",
                last_error()
            );
            assert_eq!(info(cfg), was);
        }
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(cfg) };

        // R = 0 (an exact round with a zero norm bound) has nothing to prove.
        let exact = config(3, false);
        // SAFETY: live handle.
        let status = unsafe { dpd_round_config_set_validity_l2(exact, 0.0, 1e-9) };
        assert_eq!(status, DPD_ERR_INVALID_ARGUMENT);
        assert!(last_error().contains("radius = 0"), "{}", last_error());
        assert_eq!(info(exact).kind, 0);
        // SAFETY: live handle, freed once.
        unsafe { dpd_round_config_free(exact) };
        let mut wide = null_mut();
        // SAFETY: `wide` is a local, then a live handle freed once. d = 16, bound 2^20 per
        // coordinate on a 2^-40 grid, exact: a norm bound of 2^22 is 2^62 units, which the data
        // bound refuses; 3.5·10⁶ is R ≈ 3.85·10¹⁸ units and (d + 1)·R² ≈ 2.5·10³⁸ ≥ 2^127
        // ≈ 1.7·10³⁸ (the circuit's field); 2^21 is R = 2^61, (d + 1)·R² = 17·2^122 < 2^127.
        unsafe {
            let status = dpd_round_config_new_exact(7, 6, 3, 2, 16, 1048576.0, 1, 40, &mut wide);
            assert_eq!(status, DPD_OK, "{}", last_error());
            assert_eq!(
                dpd_round_config_set_validity_l2(wide, 4194304.0, 1e-9),
                DPD_ERR_INVALID_ARGUMENT
            );
            assert!(last_error().contains("2^62"), "{}", last_error());
            assert_eq!(
                dpd_round_config_set_validity_l2(wide, 3.5e6, 1e-9),
                DPD_ERR_OVERFLOW
            );
            assert!(last_error().contains("2^127"), "{}", last_error());
            assert_eq!(info(wide).kind, 0);
            assert_eq!(
                dpd_round_config_set_validity_l2(wide, 2097152.0, 1e-9),
                DPD_OK,
                "{}",
                last_error()
            );
            assert_eq!(info(wide).bound_units, 1u64 << 61);
            dpd_round_config_free(wide);
        }
    }

    /// A client whose row is longer than the round's L2 bound refuses: the call fails naming it,
    /// and nothing is written.
    #[test]
    fn an_l2_client_past_the_bound_makes_the_round_fail() {
        let cfg = config_frac20();
        let mut rng = null_mut();
        // SAFETY: a local, then a live handle.
        unsafe {
            assert_eq!(dpd_rng_new_insecure_fixed_seed(1, &mut rng), DPD_OK);
            assert_eq!(dpd_round_config_set_validity_l2(cfg, 1.0, 1e-9), DPD_OK);
        }
        // The status and the outputs, which start as ([7, 7], [9, 9], 0, 0, −1).
        let run = |inputs: &[f64; 12]| {
            let mut out = [7.0; 2];
            let mut invalid = [9u64; 2];
            let (mut len, mut n_invalid, mut dt) = (0usize, 0usize, -1.0);
            // SAFETY: live handles and locals of the lengths passed.
            let status = unsafe {
                dpd_simulate_round_verified(
                    cfg,
                    inputs.as_ptr(),
                    12,
                    null(),
                    0,
                    rng,
                    out.as_mut_ptr(),
                    2,
                    &mut len,
                    invalid.as_mut_ptr(),
                    2,
                    &mut n_invalid,
                    null_mut(),
                    &mut dt,
                )
            };
            (status, (out, invalid, len, n_invalid, dt))
        };
        let untouched = ([7.0; 2], [9; 2], 0, 0, -1.0);
        let mut inputs = [0.5; 12];
        inputs[6] = 0.9; // client 3: ‖(0.9, 0.5)‖ = 1.0296 > 1
        assert_eq!(run(&inputs), (DPD_ERR_INVALID_ARGUMENT, untouched));
        let message = last_error();
        assert!(
            message.contains("client 3:") && message.contains("exceeds the round's bound 1"),
            "{message}"
        );
        // A row exactly on the bound, (1, 0), is accepted.
        inputs[6] = 1.0;
        inputs[7] = 0.0;
        let (status, (_, _, len, n_invalid, dt)) = run(&inputs);
        assert_eq!(status, DPD_OK, "{}", last_error());
        assert_eq!((len, n_invalid), (2, 0));
        assert!(dt > 0.0 && dt <= 1e-9, "{dt}");
        // SAFETY: live handles, freed once.
        unsafe {
            dpd_rng_free(rng);
            dpd_round_config_free(cfg);
        }
    }
}
