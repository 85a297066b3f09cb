//! Raw pointers from C into Rust references and slices, each checked in one place.
//!
//! Conventions (also stated in the header):
//! - An input array `(const T* ptr, size_t len)` may be NULL only when `len == 0` (it is then
//!   the empty array). A non-NULL pointer must be aligned for `T` and point to `len` readable,
//!   initialised elements that are not mutated during the call.
//! - An output array `(T* out, size_t out_cap, size_t* out_len)` follows the query-size
//!   pattern: when the result needs more than `out_cap` elements the call returns
//!   `DPD_ERR_BUFFER_TOO_SMALL`, writes the required length to `*out_len` and nothing else;
//!   `out` may be NULL only when `out_cap == 0` (a pure size query). Where the length follows
//!   from the inputs, the call checks the capacity with [`reserve_array`] BEFORE computing, so
//!   a size query never runs (or draws noise for) the computation it sizes.
//! - A scalar out-pointer must be non-NULL and writable; it is written only on success.

use crate::error::{FfiError, FfiResult};
use crate::status::dpd_status;

fn check_array<T>(ptr: *const T, len: usize, name: &str) -> FfiResult<()> {
    if ptr.is_null() {
        return Err(FfiError::null(name));
    }
    if !ptr.is_aligned() {
        return Err(FfiError::invalid(format!(
            "array `{name}` is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(FfiError::invalid(format!(
            "array `{name}` length {len} is too large"
        )));
    }
    Ok(())
}

/// An input array; NULL is accepted only with `len == 0`.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` initialised `T`s, valid and unmutated for `'a`.
pub(crate) unsafe fn slice_in<'a, T>(ptr: *const T, len: usize, name: &str) -> FfiResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    check_array(ptr, len, name)?;
    // SAFETY: non-NULL, aligned, size fits isize (checked above); validity is the caller's
    // contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// An output array of capacity `cap`; NULL is accepted only with `cap == 0`.
///
/// # Safety
/// A non-NULL `ptr` must point to `cap` writable `T`s, not aliased during `'a`.
pub(crate) unsafe fn slice_out<'a, T>(
    ptr: *mut T,
    cap: usize,
    name: &str,
) -> FfiResult<&'a mut [T]> {
    if cap == 0 {
        return Ok(&mut []);
    }
    check_array(ptr, cap, name)?;
    // SAFETY: non-NULL, aligned, size fits isize (checked above); writability and exclusivity
    // are the caller's contract. `T` is a plain number type, so any bit pattern left in the
    // buffer is a valid `T`.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, cap) })
}

/// Copies `values` into the caller's array under the query-size pattern (see module docs).
///
/// # Safety
/// As [`slice_out`] for `(out, cap)`; `out_len` must be NULL or writable.
pub(crate) unsafe fn write_array<T: Copy>(
    values: &[T],
    out: *mut T,
    cap: usize,
    out_len: *mut usize,
    name: &str,
) -> FfiResult<()> {
    if out_len.is_null() {
        return Err(FfiError::null("out_len"));
    }
    if values.len() > cap {
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { *out_len = values.len() };
        return Err(FfiError::new(
            dpd_status::DPD_ERR_BUFFER_TOO_SMALL,
            format!(
                "`{name}` needs {} elements, capacity is {cap}",
                values.len()
            ),
        ));
    }
    // SAFETY: forwarded caller contract.
    let dst = unsafe { slice_out(out, cap, name) }?;
    dst[..values.len()].copy_from_slice(values);
    // SAFETY: checked non-NULL; the caller guarantees it is writable.
    unsafe { *out_len = values.len() };
    Ok(())
}

/// The capacity check of the query-size pattern, for results whose length `needed` is known
/// before they are computed: call it before the computation so that a size query (or a too
/// small buffer) returns `DPD_ERR_BUFFER_TOO_SMALL` with `*out_len = needed` without running
/// — and, for a noisy call, without spending randomness or privacy on — work that would be
/// thrown away. [`write_array`] afterwards writes the result.
///
/// # Safety
/// `out_len` must be NULL (→ error) or writable.
pub(crate) unsafe fn reserve_array(
    needed: usize,
    cap: usize,
    out_len: *mut usize,
    name: &str,
) -> FfiResult<()> {
    if out_len.is_null() {
        return Err(FfiError::null("out_len"));
    }
    if needed > cap {
        // SAFETY: checked non-NULL; the caller guarantees it is writable.
        unsafe { *out_len = needed };
        return Err(FfiError::new(
            dpd_status::DPD_ERR_BUFFER_TOO_SMALL,
            format!("`{name}` needs {needed} elements, capacity is {cap}"),
        ));
    }
    Ok(())
}

/// Checks that a scalar out-pointer is non-NULL, so a body can validate all out-pointers
/// before doing any work.
pub(crate) fn check_out<T>(ptr: *mut T, name: &str) -> FfiResult<()> {
    if ptr.is_null() {
        Err(FfiError::null(name))
    } else {
        Ok(())
    }
}

/// Writes a scalar result.
///
/// # Safety
/// `ptr` must be NULL (→ error) or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(ptr: *mut T, value: T, name: &str) -> FfiResult<()> {
    check_out(ptr, name)?;
    // SAFETY: non-NULL (checked); writability is the caller's contract. `write` does not drop
    // the (possibly uninitialised) old value.
    unsafe { ptr.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_is_empty_only_with_zero_length() {
        // SAFETY: NULL pointers are never dereferenced.
        unsafe {
            assert!(
                slice_in::<f64>(std::ptr::null(), 0, "x")
                    .unwrap()
                    .is_empty()
            );
            let e = slice_in::<f64>(std::ptr::null(), 3, "x").unwrap_err();
            assert_eq!(e.status, dpd_status::DPD_ERR_NULL_POINTER);
            let e = slice_out::<f64>(std::ptr::null_mut(), 1, "y").unwrap_err();
            assert_eq!(e.status, dpd_status::DPD_ERR_NULL_POINTER);
        }
    }

    #[test]
    fn misaligned_and_huge_arrays_are_refused() {
        let bytes = [0u8; 16];
        // SAFETY: the pointer is misaligned on purpose and rejected before any read.
        let e = unsafe { slice_in::<f64>(bytes.as_ptr().add(1).cast(), 1, "x") }.unwrap_err();
        assert_eq!(e.status, dpd_status::DPD_ERR_INVALID_ARGUMENT);
        let v = [0.0f64];
        // SAFETY: the length is rejected before any read.
        let e = unsafe { slice_in(v.as_ptr(), usize::MAX / 4, "x") }.unwrap_err();
        assert_eq!(e.status, dpd_status::DPD_ERR_INVALID_ARGUMENT);
    }

    #[test]
    fn write_array_reports_required_length_and_leaves_buffer_alone() {
        let mut out = [9.0f64; 2];
        let mut n = 0usize;
        // SAFETY: out has 2 elements; n is a local.
        let e = unsafe { write_array(&[1.0, 2.0, 3.0], out.as_mut_ptr(), 2, &mut n, "out") };
        assert_eq!(e.unwrap_err().status, dpd_status::DPD_ERR_BUFFER_TOO_SMALL);
        assert_eq!((n, out), (3, [9.0, 9.0]));
        // Pure size query.
        // SAFETY: NULL with capacity 0 is never written.
        let e = unsafe { write_array(&[1.0], std::ptr::null_mut(), 0, &mut n, "out") };
        assert_eq!(e.unwrap_err().status, dpd_status::DPD_ERR_BUFFER_TOO_SMALL);
        assert_eq!(n, 1);
        // SAFETY: as above.
        unsafe { write_array(&[1.0, 2.0], out.as_mut_ptr(), 2, &mut n, "out") }.unwrap();
        assert_eq!((n, out), (2, [1.0, 2.0]));
    }
}
