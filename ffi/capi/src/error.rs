//! The error carried from a failing call to its status code and the thread-local last-error
//! message.

use std::cell::RefCell;
use std::ffi::c_char;

use crate::status::dpd_status;

/// A failed call: the status returned to C and the message kept for `dpd_last_error_message`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FfiError {
    pub(crate) status: dpd_status,
    pub(crate) message: String,
}

impl FfiError {
    pub(crate) fn new(status: dpd_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(argument: &str) -> Self {
        Self::new(
            dpd_status::DPD_ERR_NULL_POINTER,
            format!("argument `{argument}` is NULL"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(dpd_status::DPD_ERR_INVALID_ARGUMENT, message)
    }
}

/// Shorthand for the result of an entry point's body.
pub(crate) type FfiResult<T> = Result<T, FfiError>;

thread_local! {
    /// The message of the most recent failed call on this thread (errno-like: successful calls
    /// leave it alone).
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: String) {
    // A message with an interior NUL would be cut short in C; make it visible instead.
    let message = message.replace('\0', "\\0");
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
}

/// Copies the message of the most recent failed dpdist call on the calling thread into `buf`.
///
/// The message is UTF-8 and always NUL-terminated when `len > 0`; when it does not fit it is
/// truncated (at a character boundary) to `len - 1` bytes. `*out_len` (if `out_len` is not
/// NULL) receives the full message length in bytes, excluding the NUL, so a caller detects
/// truncation by `*out_len >= len` and can query the size with `buf = NULL, len = 0`.
/// The message is empty if no call has failed on this thread yet. Successful calls do not clear
/// it, so read it right after a call returned a status other than `DPD_OK`.
///
/// Returns `DPD_OK`, or `DPD_ERR_NULL_POINTER` if `buf` is NULL while `len > 0`.
///
/// # Safety
/// `buf` must point to `len` writable bytes (or be NULL with `len == 0`); `out_len` must be NULL
/// or point to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_last_error_message(
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> dpd_status {
    if buf.is_null() && len > 0 {
        // Do not overwrite the message the caller is trying to read.
        return dpd_status::DPD_ERR_NULL_POINTER;
    }
    LAST_ERROR.with(|last| {
        let last = last.borrow();
        if len > 0 {
            let mut n = last.len().min(len - 1);
            while !last.is_char_boundary(n) {
                n -= 1;
            }
            // SAFETY: `buf` is non-NULL here and the caller guarantees `len` writable bytes;
            // we write n + 1 <= len bytes, from a source that cannot overlap a Rust String.
            unsafe {
                std::ptr::copy_nonoverlapping(last.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        if !out_len.is_null() {
            // SAFETY: the caller guarantees a non-NULL `out_len` points to a writable size_t.
            unsafe { *out_len = last.len() };
        }
    });
    dpd_status::DPD_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn read(len: usize) -> (dpd_status, Vec<u8>, usize) {
        let mut buf = vec![0x55u8; len.max(1)];
        let mut out_len = usize::MAX;
        let ptr = if len == 0 {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr().cast()
        };
        // SAFETY: buf has len bytes (or ptr is NULL with len 0); out_len is a local.
        let status = unsafe { dpd_last_error_message(ptr, len, &mut out_len) };
        (status, buf, out_len)
    }

    #[test]
    fn message_is_copied_nul_terminated_and_truncated_safely() {
        set_last_error("héllo".to_string()); // 6 bytes: 'é' is two.
        let (status, buf, out_len) = read(64);
        assert_eq!(status, dpd_status::DPD_OK);
        assert_eq!(out_len, 6);
        assert_eq!(
            CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap(),
            "héllo"
        );

        // Room for 2 bytes + NUL would split 'é': only "h" is written.
        let (_, buf, out_len) = read(3);
        assert_eq!(out_len, 6);
        assert_eq!(&buf[..2], b"h\0");

        let (status, _, out_len) = read(0);
        assert_eq!(status, dpd_status::DPD_OK);
        assert_eq!(out_len, 6);
    }

    #[test]
    fn null_buffer_with_length_is_refused() {
        // SAFETY: NULL buf is checked before any write; out_len NULL is allowed.
        let status =
            unsafe { dpd_last_error_message(std::ptr::null_mut(), 8, std::ptr::null_mut()) };
        assert_eq!(status, dpd_status::DPD_ERR_NULL_POINTER);
    }

    #[test]
    fn interior_nul_is_escaped() {
        set_last_error("a\0b".to_string());
        let (_, buf, out_len) = read(16);
        assert_eq!(out_len, 4);
        assert_eq!(
            CStr::from_bytes_until_nul(&buf).unwrap().to_str().unwrap(),
            "a\\0b"
        );
    }
}
