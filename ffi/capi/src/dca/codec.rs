//! The fixed-point codec over Z_2^64: x ↦ round(x·2^f) in two's complement; a sum decodes as
//! `(s as i64) / 2^f`.

use fixedpoint_shares::FixedPoint;

use crate::alloc::zeroed;
use crate::error::FfiResult;
use crate::guard::ffi_entry;
use crate::ptr::{check_out, reserve_array, slice_in, write_array, write_out};
use crate::status::dpd_status;

/// Writes the largest number of fractional bits f (<= 52) such that `n_clients` values with
/// |x| <= `bound` plus a noise sum of magnitude <= `noise_tail` (value units; 0 without noise)
/// add up without wrapping: N·ceil(bound·2^f) + ceil(tail·2^f) + N < 2^63.
/// No such f → `DPD_ERR_OVERFLOW`; bad parameters → `DPD_ERR_INVALID_ARGUMENT` /
/// `DPD_ERR_NON_FINITE`.
///
/// # Safety
/// `out` must be NULL (→ `DPD_ERR_NULL_POINTER`) or point to a writable `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_fixed_point_frac_bits_for_sum(
    n_clients: usize,
    bound: f64,
    noise_tail: f64,
    out: *mut u32,
) -> dpd_status {
    ffi_entry("dpd_fixed_point_frac_bits_for_sum", || {
        check_out(out, "out")?;
        let codec = FixedPoint::for_sum(n_clients, bound, noise_tail)?;
        // SAFETY: `out` is non-NULL (checked) and writable by the header contract.
        unsafe { write_out(out, codec.frac_bits(), "out") }
    })
}

/// Encodes `values[0..len]` (each finite with |x| <= `bound`) with `frac_bits` fractional bits
/// into `out` (query-size pattern; the result has `len` elements). All-or-nothing: NaN/inf →
/// `DPD_ERR_NON_FINITE`, |x| > bound → `DPD_ERR_OVERFLOW`, naming the first bad index.
///
/// # Safety
/// `values` must be NULL with `len == 0` or point to `len` readable doubles; `out` NULL with
/// `out_cap == 0` or `out_cap` writable `uint64_t`; `out_len` NULL (→ error) or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_fixed_point_encode(
    frac_bits: u32,
    bound: f64,
    values: *const f64,
    len: usize,
    out: *mut u64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_fixed_point_encode", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `(values, len)`.
        let values = unsafe { slice_in(values, len, "values") }?;
        let codec = FixedPoint::new(frac_bits, bound)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(values.len(), out_cap, out_len, "out") }?;
        let mut encoded = zeroed::<u64>(values.len(), "encoded values")?;
        codec.encode(values, &mut encoded)?;
        // SAFETY: header contract for `(out, out_cap, out_len)`.
        unsafe { write_array(&encoded, out, out_cap, out_len, "out") }
    })
}

/// Decodes ring sums `sums[0..len]` encoded with `frac_bits` fractional bits into `out`
/// (query-size pattern; `len` elements): `(int64_t)s / 2^frac_bits`. `frac_bits <= 62`.
///
/// # Safety
/// As `dpd_fixed_point_encode`, with `sums` in place of `values` and `double` outputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_fixed_point_decode(
    frac_bits: u32,
    sums: *const u64,
    len: usize,
    out: *mut f64,
    out_cap: usize,
    out_len: *mut usize,
) -> dpd_status {
    ffi_entry("dpd_fixed_point_decode", || -> FfiResult<()> {
        check_out(out_len, "out_len")?;
        // SAFETY: header contract for `(sums, len)`.
        let sums = unsafe { slice_in(sums, len, "sums") }?;
        // Decoding does not depend on the element bound; 1.0 is valid for every f <= 62.
        let codec = FixedPoint::new(frac_bits, 1.0)?;
        // SAFETY: `out_len` checked non-NULL and writable by the header contract.
        unsafe { reserve_array(sums.len(), out_cap, out_len, "out") }?;
        let mut decoded = zeroed::<f64>(sums.len(), "decoded values")?;
        codec.decode(sums, &mut decoded)?;
        // SAFETY: header contract for `(out, out_cap, out_len)`.
        unsafe { write_array(&decoded, out, out_cap, out_len, "out") }
    })
}
