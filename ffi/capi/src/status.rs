//! The status code every fallible entry point returns.

/// Result of a dpdist call. `DPD_OK` (0) is success; every other value is an error whose
/// message can be read with `dpd_last_error_message` on the same thread.
///
/// The numeric values are part of the ABI: new codes are only ever appended.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum dpd_status {
    /// Success.
    DPD_OK = 0,
    /// A required pointer argument was NULL.
    DPD_ERR_NULL_POINTER = 1,
    /// An argument is out of its documented range (e.g. epsilon <= 0, unknown enum value).
    DPD_ERR_INVALID_ARGUMENT = 2,
    /// Array lengths disagree with each other or with the dimension fixed earlier.
    DPD_ERR_LENGTH_MISMATCH = 3,
    /// An input value is NaN or infinite.
    DPD_ERR_NON_FINITE = 4,
    /// A value does not fit the fixed-point ring (or another integer range) without wrapping.
    DPD_ERR_OVERFLOW = 5,
    /// The same client id was absorbed twice in one round.
    DPD_ERR_DUPLICATE_CLIENT = 6,
    /// Wire bytes or a node sum belong to a different round.
    DPD_ERR_WRONG_ROUND = 7,
    /// A compute-node index outside 0..M, or a share addressed to another node.
    DPD_ERR_UNKNOWN_NODE = 8,
    /// More clients are missing than the round tolerates; nothing is released.
    DPD_ERR_TOO_MANY_DROPPED = 9,
    /// Wire bytes could not be parsed (bad magic, version, kind, truncated, trailing bytes).
    DPD_ERR_MALFORMED = 10,
    /// The privacy accountant refused a charge that would exceed the budget.
    DPD_ERR_BUDGET_EXCEEDED = 11,
    /// An output buffer is too small; the required length was written to the length out-pointer.
    DPD_ERR_BUFFER_TOO_SMALL = 12,
    /// A Rust panic was caught at the ABI boundary (a bug in dpdist; please report it).
    /// Handles used by the failing call are left in an unspecified state: free them.
    DPD_ERR_PANIC = 13,
    /// `dpd_set_num_threads` was called after the thread pool was already built.
    DPD_ERR_ALREADY_INITIALIZED = 14,
    /// The call is not allowed in the handle's current state (e.g. absorb after finalize).
    DPD_ERR_INVALID_STATE = 15,
    /// A numerical routine failed (e.g. a matrix could not be factorised, no convergence).
    DPD_ERR_NUMERICAL = 16,
    /// An error a wrapped crate reported that has no more specific code.
    DPD_ERR_OTHER = 17,
    /// The operating system's random number generator failed.
    DPD_ERR_RNG = 18,
    /// A buffer whose size comes from the arguments (a dimension, a client count, a length)
    /// could not be allocated. Nothing was changed; the process is intact.
    DPD_ERR_ALLOC = 19,
    /// ε, δ, a sensitivity Δ or a noise σ is outside its documented range (see the header's
    /// "Privacy parameters" section); the message names the range.
    DPD_ERR_INVALID_PRIVACY_PARAMETER = 20,
}

impl dpd_status {
    /// The enumerator's name as a static NUL-terminated string.
    pub(crate) fn name(self) -> &'static std::ffi::CStr {
        match self {
            Self::DPD_OK => c"DPD_OK",
            Self::DPD_ERR_NULL_POINTER => c"DPD_ERR_NULL_POINTER",
            Self::DPD_ERR_INVALID_ARGUMENT => c"DPD_ERR_INVALID_ARGUMENT",
            Self::DPD_ERR_LENGTH_MISMATCH => c"DPD_ERR_LENGTH_MISMATCH",
            Self::DPD_ERR_NON_FINITE => c"DPD_ERR_NON_FINITE",
            Self::DPD_ERR_OVERFLOW => c"DPD_ERR_OVERFLOW",
            Self::DPD_ERR_DUPLICATE_CLIENT => c"DPD_ERR_DUPLICATE_CLIENT",
            Self::DPD_ERR_WRONG_ROUND => c"DPD_ERR_WRONG_ROUND",
            Self::DPD_ERR_UNKNOWN_NODE => c"DPD_ERR_UNKNOWN_NODE",
            Self::DPD_ERR_TOO_MANY_DROPPED => c"DPD_ERR_TOO_MANY_DROPPED",
            Self::DPD_ERR_MALFORMED => c"DPD_ERR_MALFORMED",
            Self::DPD_ERR_BUDGET_EXCEEDED => c"DPD_ERR_BUDGET_EXCEEDED",
            Self::DPD_ERR_BUFFER_TOO_SMALL => c"DPD_ERR_BUFFER_TOO_SMALL",
            Self::DPD_ERR_PANIC => c"DPD_ERR_PANIC",
            Self::DPD_ERR_ALREADY_INITIALIZED => c"DPD_ERR_ALREADY_INITIALIZED",
            Self::DPD_ERR_INVALID_STATE => c"DPD_ERR_INVALID_STATE",
            Self::DPD_ERR_NUMERICAL => c"DPD_ERR_NUMERICAL",
            Self::DPD_ERR_OTHER => c"DPD_ERR_OTHER",
            Self::DPD_ERR_RNG => c"DPD_ERR_RNG",
            Self::DPD_ERR_ALLOC => c"DPD_ERR_ALLOC",
            Self::DPD_ERR_INVALID_PRIVACY_PARAMETER => c"DPD_ERR_INVALID_PRIVACY_PARAMETER",
        }
    }
}

/// The name of a status code (e.g. `"DPD_ERR_NULL_POINTER"`) as a static NUL-terminated string;
/// `"DPD_UNKNOWN_STATUS"` for a value that is not a `dpd_status`. Never fails; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_status_name(status: u32) -> *const std::ffi::c_char {
    let name = ALL
        .iter()
        .find(|s| **s as u32 == status)
        .map_or(c"DPD_UNKNOWN_STATUS", |s| s.name());
    name.as_ptr()
}

/// Every status, for lookups by number (a C caller may pass any integer).
const ALL: [dpd_status; 21] = [
    dpd_status::DPD_OK,
    dpd_status::DPD_ERR_NULL_POINTER,
    dpd_status::DPD_ERR_INVALID_ARGUMENT,
    dpd_status::DPD_ERR_LENGTH_MISMATCH,
    dpd_status::DPD_ERR_NON_FINITE,
    dpd_status::DPD_ERR_OVERFLOW,
    dpd_status::DPD_ERR_DUPLICATE_CLIENT,
    dpd_status::DPD_ERR_WRONG_ROUND,
    dpd_status::DPD_ERR_UNKNOWN_NODE,
    dpd_status::DPD_ERR_TOO_MANY_DROPPED,
    dpd_status::DPD_ERR_MALFORMED,
    dpd_status::DPD_ERR_BUDGET_EXCEEDED,
    dpd_status::DPD_ERR_BUFFER_TOO_SMALL,
    dpd_status::DPD_ERR_PANIC,
    dpd_status::DPD_ERR_ALREADY_INITIALIZED,
    dpd_status::DPD_ERR_INVALID_STATE,
    dpd_status::DPD_ERR_NUMERICAL,
    dpd_status::DPD_ERR_OTHER,
    dpd_status::DPD_ERR_RNG,
    dpd_status::DPD_ERR_ALLOC,
    dpd_status::DPD_ERR_INVALID_PRIVACY_PARAMETER,
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn every_status_has_its_own_name_and_numbers_are_dense() {
        for (i, s) in ALL.iter().enumerate() {
            assert_eq!(*s as usize, i, "statuses are numbered 0..n in order");
            // SAFETY: dpd_status_name returns a pointer to a static C string.
            let name = unsafe { CStr::from_ptr(dpd_status_name(i as u32)) };
            assert_eq!(name, s.name());
            assert!(name.to_str().unwrap().starts_with("DPD_"));
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(dpd_status_name(9999)) };
        assert_eq!(unknown, c"DPD_UNKNOWN_STATUS");
    }
}
