//! The panic guard every entry point runs its body in: no panic crosses the C ABI, and every
//! error becomes a status plus a thread-local message.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::{FfiResult, set_last_error};
use crate::status::dpd_status;

/// Runs an entry point's body: `Ok` → `DPD_OK`; `Err` → its status, with the message
/// (prefixed by `function`) stored for `dpd_last_error_message`; a panic → `DPD_ERR_PANIC`.
///
/// Bodies write their out-pointers only after every check has passed, so a failing call
/// leaves the caller's memory untouched.
pub(crate) fn ffi_entry(function: &str, body: impl FnOnce() -> FfiResult<()>) -> dpd_status {
    // AssertUnwindSafe: after a panic we never touch the body's captures again; handles it was
    // mutating are documented as unspecified after DPD_ERR_PANIC.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => dpd_status::DPD_OK,
        Ok(Err(error)) => {
            set_last_error(format!("{function}: {}", error.message));
            error.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            set_last_error(format!(
                "{function}: internal panic (a dpdist bug, please report it): {what}"
            ));
            dpd_status::DPD_ERR_PANIC
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FfiError;

    fn last() -> String {
        let mut buf = [0u8; 256];
        let mut n = 0;
        // SAFETY: buf has 256 writable bytes; n is a local.
        unsafe { crate::error::dpd_last_error_message(buf.as_mut_ptr().cast(), 256, &mut n) };
        String::from_utf8_lossy(&buf[..n.min(255)]).into_owned()
    }

    #[test]
    fn ok_error_and_panic_map_to_statuses() {
        assert_eq!(ffi_entry("f", || Ok(())), dpd_status::DPD_OK);
        let s = ffi_entry("dpd_thing", || Err(FfiError::null("x")));
        assert_eq!(s, dpd_status::DPD_ERR_NULL_POINTER);
        assert_eq!(last(), "dpd_thing: argument `x` is NULL");
        let s = ffi_entry("dpd_boom", || panic!("kaboom {}", 7));
        assert_eq!(s, dpd_status::DPD_ERR_PANIC);
        assert!(last().starts_with("dpd_boom: internal panic"));
        assert!(last().ends_with("kaboom 7"));
    }
}
