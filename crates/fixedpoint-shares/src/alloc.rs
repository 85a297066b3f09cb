//! Fallible allocation of the buffers whose size comes from a round's parameters (d, N, M) or
//! from a caller: a request the allocator refuses becomes [`Error::Allocation`] instead of
//! aborting the whole host process (`Vec` and `vec!` abort on allocation failure, and no
//! `catch_unwind` can catch that).

use crate::{Error, Result};

/// A vector of `len` zeros, or [`Error::Allocation`] if the allocator refuses `len` elements.
///
/// The zeros are written (a `memset`) rather than taken from fresh `calloc` pages: stable Rust
/// has no fallible zeroed allocation, and every buffer allocated here is written in full by
/// its first use anyway.
pub(crate) fn zeroed<T: Copy + Default>(len: usize, what: &'static str) -> Result<Vec<T>> {
    let mut buffer = Vec::new();
    buffer
        .try_reserve_exact(len)
        .map_err(|_| Error::Allocation {
            what,
            bytes: len.saturating_mul(size_of::<T>()),
        })?;
    buffer.resize(len, T::default());
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_requests_are_errors_not_aborts() {
        // More bytes than the address space has: refused before any allocator is asked.
        let e = zeroed::<u64>(usize::MAX / 4, "test buffer").unwrap_err();
        assert_eq!(
            e,
            Error::Allocation {
                what: "test buffer",
                bytes: usize::MAX,
            }
        );
        assert!(e.to_string().contains("test buffer"));
        assert_eq!(zeroed::<u64>(3, "small").unwrap(), [0, 0, 0]);
        assert!(zeroed::<u64>(0, "empty").unwrap().is_empty());
    }
}
