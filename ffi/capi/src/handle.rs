//! Opaque handles: a Rust value boxed on the heap and given to C as a typed pointer.
//!
//! A handle is created by a `dpd_*_new` (or a call that returns one through `T** out`), used
//! through the other functions of its type and released by its NULL-safe `dpd_*_free`. A handle
//! may move between threads but must not be used by two threads at once.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{FfiError, FfiResult};

/// Moves `value` to the heap and hands its ownership to C.
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Borrows a live handle.
///
/// # Safety
/// A non-NULL `ptr` must come from [`into_handle`] for this `T`, not yet freed, and not be
/// mutated during `'a`.
pub(crate) unsafe fn handle_ref<'a, T>(ptr: *const T, name: &str) -> FfiResult<&'a T> {
    // SAFETY: NULL is handled by `as_ref`; liveness is the caller's contract.
    unsafe { ptr.as_ref() }.ok_or_else(|| FfiError::null(name))
}

/// Borrows a live handle mutably.
///
/// # Safety
/// As [`handle_ref`], and no other reference to it may exist during `'a`.
pub(crate) unsafe fn handle_mut<'a, T>(ptr: *mut T, name: &str) -> FfiResult<&'a mut T> {
    // SAFETY: NULL is handled by `as_mut`; liveness and exclusivity are the caller's contract.
    unsafe { ptr.as_mut() }.ok_or_else(|| FfiError::null(name))
}

/// Frees a handle; NULL is a no-op. A panic in a destructor is swallowed (there is no status
/// to report it through, and it must not cross the ABI).
///
/// # Safety
/// A non-NULL `ptr` must come from [`into_handle`] for this `T` and not be used afterwards.
pub(crate) unsafe fn free_handle<T>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the caller passes ownership of a pointer produced by Box::into_raw.
    let boxed = unsafe { Box::from_raw(ptr) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}
