//! Fallible allocation for entry points: a buffer whose size comes from the caller's arguments
//! is reserved with `try_reserve_exact`, so an impossible size becomes `DPD_ERR_ALLOC` instead
//! of aborting the host process (an allocation failure in `vec!` aborts; `catch_unwind` cannot
//! catch it).

use crate::error::{FfiError, FfiResult};
use crate::status::dpd_status;

fn refused(len: usize, element: usize, what: &str) -> FfiError {
    FfiError::new(
        dpd_status::DPD_ERR_ALLOC,
        format!(
            "cannot allocate {} bytes for the {what}: the allocator refused",
            len.saturating_mul(element)
        ),
    )
}

/// `len` zeros, or `DPD_ERR_ALLOC`.
pub(crate) fn zeroed<T: Copy + Default>(len: usize, what: &str) -> FfiResult<Vec<T>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| refused(len, size_of::<T>(), what))?;
    buffer.resize(len, T::default());
    Ok(buffer)
}

/// An owned copy of a caller's array, or `DPD_ERR_ALLOC`.
pub(crate) fn copied<T: Copy>(values: &[T], what: &str) -> FfiResult<Vec<T>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(values.len())
        .map_err(|_| refused(values.len(), size_of::<T>(), what))?;
    buffer.extend_from_slice(values);
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_alloc_status() {
        let e = zeroed::<f64>(usize::MAX / 2, "test buffer").unwrap_err();
        assert_eq!(e.status, dpd_status::DPD_ERR_ALLOC);
        assert!(e.message.contains("test buffer"), "{}", e.message);
        assert_eq!(zeroed::<u64>(2, "x").unwrap(), [0, 0]);
        assert_eq!(copied(&[1.5, 2.5], "x").unwrap(), [1.5, 2.5]);
    }
}
