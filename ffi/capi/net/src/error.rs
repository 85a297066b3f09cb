//! Status codes, the thread-local last-error message and the panic guard of every entry point.

use std::cell::RefCell;
use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

use dca_service::Error;

/// Result of a dpdist_net call. `DPD_NET_OK` (0) is success; every other value is an error whose
/// message can be read with `dpd_net_last_error_message` on the same thread.
///
/// The numeric values are part of the ABI: new codes are only ever appended.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_net_status {
    /// Success.
    DPD_NET_OK = 0,
    /// A required pointer argument was NULL.
    DPD_NET_ERR_NULL_POINTER = 1,
    /// An argument is not what the function takes (not UTF-8, an unknown enum value, a matrix
    /// with a missing value, a policy file that does not parse, ...); the message says which.
    DPD_NET_ERR_INVALID_ARGUMENT = 2,
    /// A file or directory named by the host cannot be read or written; the message names it.
    DPD_NET_ERR_IO = 3,
    /// The CA file is not a usable PEM certificate.
    DPD_NET_ERR_TLS = 4,
    /// The aggregator answered with an error that is not about the job; the message carries
    /// the whole cause. (Unreachable aggregators and 5xx answers are retried, not returned.)
    DPD_NET_ERR_NETWORK = 5,
    /// The aggregator does not know the job or refuses this participant's token, or a round of
    /// the job failed a check of this participant (another ε, dimension, node keys or T than it
    /// accepted; rows the round cannot hold): it left the job.
    DPD_NET_ERR_JOB = 6,
    /// `dpd_net_participant_stop` was called; the participant stays stopped.
    DPD_NET_ERR_STOPPED = 7,
    /// The handle is in use or not ready (no rows set before following a job).
    DPD_NET_ERR_INVALID_STATE = 8,
    /// A Rust panic was caught at the ABI boundary (a bug in dpdist; please report it).
    DPD_NET_ERR_PANIC = 9,
    /// Any other failure; the message says what.
    DPD_NET_ERR_OTHER = 10,
}

const ALL: [dpd_net_status; 11] = [
    dpd_net_status::DPD_NET_OK,
    dpd_net_status::DPD_NET_ERR_NULL_POINTER,
    dpd_net_status::DPD_NET_ERR_INVALID_ARGUMENT,
    dpd_net_status::DPD_NET_ERR_IO,
    dpd_net_status::DPD_NET_ERR_TLS,
    dpd_net_status::DPD_NET_ERR_NETWORK,
    dpd_net_status::DPD_NET_ERR_JOB,
    dpd_net_status::DPD_NET_ERR_STOPPED,
    dpd_net_status::DPD_NET_ERR_INVALID_STATE,
    dpd_net_status::DPD_NET_ERR_PANIC,
    dpd_net_status::DPD_NET_ERR_OTHER,
];

impl dpd_net_status {
    fn name(self) -> &'static CStr {
        use dpd_net_status::*;
        match self {
            DPD_NET_OK => c"DPD_NET_OK",
            DPD_NET_ERR_NULL_POINTER => c"DPD_NET_ERR_NULL_POINTER",
            DPD_NET_ERR_INVALID_ARGUMENT => c"DPD_NET_ERR_INVALID_ARGUMENT",
            DPD_NET_ERR_IO => c"DPD_NET_ERR_IO",
            DPD_NET_ERR_TLS => c"DPD_NET_ERR_TLS",
            DPD_NET_ERR_NETWORK => c"DPD_NET_ERR_NETWORK",
            DPD_NET_ERR_JOB => c"DPD_NET_ERR_JOB",
            DPD_NET_ERR_STOPPED => c"DPD_NET_ERR_STOPPED",
            DPD_NET_ERR_INVALID_STATE => c"DPD_NET_ERR_INVALID_STATE",
            DPD_NET_ERR_PANIC => c"DPD_NET_ERR_PANIC",
            DPD_NET_ERR_OTHER => c"DPD_NET_ERR_OTHER",
        }
    }
}

/// The name of a status code (e.g. `"DPD_NET_ERR_IO"`) as a static NUL-terminated string;
/// `"DPD_NET_UNKNOWN_STATUS"` for a value that is not a `dpd_net_status`. Never free it.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_net_status_name(status: u32) -> *const c_char {
    ALL.iter()
        .find(|s| **s as u32 == status)
        .map_or(c"DPD_NET_UNKNOWN_STATUS", |s| s.name())
        .as_ptr()
}

/// A failed call: its status and message.
#[derive(Debug)]
pub(crate) struct NetError {
    pub(crate) status: dpd_net_status,
    pub(crate) message: String,
}

impl NetError {
    pub(crate) fn new(status: dpd_net_status, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(argument: &str) -> Self {
        Self::new(
            dpd_net_status::DPD_NET_ERR_NULL_POINTER,
            format!("argument `{argument}` is NULL"),
        )
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(dpd_net_status::DPD_NET_ERR_INVALID_ARGUMENT, message)
    }
}

impl From<Error> for NetError {
    fn from(e: Error) -> Self {
        use dpd_net_status::*;
        let status = match &e {
            Error::Io(_) => DPD_NET_ERR_IO,
            Error::Tls(_) => DPD_NET_ERR_TLS,
            Error::Http(_) | Error::Timeout(_) => DPD_NET_ERR_NETWORK,
            Error::InvalidSpec(_) => DPD_NET_ERR_INVALID_ARGUMENT,
            Error::Job(_)
            | Error::Ledger(_)
            | Error::JobBudget { .. }
            | Error::Integrity(_)
            | Error::Dca(_)
            | Error::Verified(_)
            | Error::Sealing(_)
            | Error::Learning(_)
            | Error::Training(_)
            | Error::Aborted { .. }
            | Error::RoundAborted(_)
            | Error::AlreadyReleased => DPD_NET_ERR_JOB,
            _ => DPD_NET_ERR_OTHER,
        };
        let message = match e {
            // Its own message says what was wrong; the variant's "invalid round configuration"
            // prefix would mislead a host that only handed over rows or a policy.
            Error::InvalidSpec(m) => m,
            e => e.to_string(),
        };
        NetError::new(status, message)
    }
}

pub(crate) type NetResult<T> = Result<T, NetError>;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs an entry point's body: `Ok` → `DPD_NET_OK`; `Err` → its status, with the message
/// (prefixed by `function`) kept for `dpd_net_last_error_message`; a panic → `DPD_NET_ERR_PANIC`.
pub(crate) fn entry(function: &str, body: impl FnOnce() -> NetResult<()>) -> dpd_net_status {
    // AssertUnwindSafe: after a panic the handle is documented as unusable (free it).
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return dpd_net_status::DPD_NET_OK,
        Ok(Err(e)) => e,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            NetError::new(
                dpd_net_status::DPD_NET_ERR_PANIC,
                format!("internal panic (a dpdist bug, please report it): {what}"),
            )
        }
    };
    let message = format!("{function}: {}", failure.message).replace('\0', "\\0");
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
    failure.status
}

/// Copies `text` into `buf` (`len` bytes, NUL-terminated, cut at a character boundary when it
/// does not fit) and its full length into `*out_len` when `out_len` is not NULL.
///
/// # Safety
/// `buf` points to `len` writable bytes or is NULL with `len == 0`; `out_len` is NULL or points
/// to a writable `size_t`.
pub(crate) unsafe fn copy_out(
    text: &str,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> NetResult<()> {
    if buf.is_null() && len > 0 {
        return Err(NetError::null("buf"));
    }
    if len > 0 {
        let mut n = text.len().min(len - 1);
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        // SAFETY: buf has len > n bytes (caller's contract); the source is n valid bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    if !out_len.is_null() {
        // SAFETY: out_len is writable (caller's contract).
        unsafe { *out_len = text.len() };
    }
    Ok(())
}

/// Copies the message of the most recent failed dpdist_net call on the calling thread into `buf`
/// (UTF-8, NUL-terminated when `len > 0`, truncated at a character boundary to `len - 1` bytes).
/// `*out_len` (if not NULL) receives the full length in bytes without the NUL: query the size
/// with `buf = NULL, len = 0`. Successful calls leave the message alone.
///
/// Returns `DPD_NET_OK`, or `DPD_NET_ERR_NULL_POINTER` if `buf` is NULL while `len > 0`.
///
/// # Safety
/// `buf` must point to `len` writable bytes (or be NULL with `len == 0`); `out_len` must be NULL
/// or point to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dpd_net_last_error_message(
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> dpd_net_status {
    let message = LAST_ERROR.with(|last| last.borrow().clone());
    // Not through `entry`: reading the message must not overwrite it.
    // SAFETY: the caller's contract is copy_out's.
    match unsafe { copy_out(&message, buf, len, out_len) } {
        Ok(()) => dpd_net_status::DPD_NET_OK,
        Err(e) => e.status,
    }
}
