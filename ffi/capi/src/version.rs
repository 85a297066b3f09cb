//! Library and ABI version.

use std::ffi::c_char;

/// The ABI version this header describes. It changes whenever a signature, a struct layout, an
/// existing enum value or the accepted inputs of an existing function change (3:
/// `dpd_round_config_new` refuses σ = 0; the exact sum is `dpd_round_config_new_exact`);
/// compare it with `dpd_abi_version()` at start-up. build.rs reads this line for the shared
/// library's SONAME (`libdpdist.so.N`).
pub const DPD_ABI_VERSION: u32 = 3;

const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The library version (e.g. `"0.1.0"`) as a static NUL-terminated string. Never free it.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_version() -> *const c_char {
    VERSION.as_ptr().cast()
}

/// The ABI version the library was built with; equals `DPD_ABI_VERSION` of a matching header.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_abi_version() -> u32 {
    DPD_ABI_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: dpd_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(dpd_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert_eq!(dpd_abi_version(), DPD_ABI_VERSION);
    }
}
