//! The C ABI of dpdist: the only crate of the workspace with `unsafe`.
//!
//! Conventions (modelled on rustls-ffi; repeated in `include/dpdist.h`):
//! - every symbol starts with `dpd_`; every fallible function returns a [`dpd_status`] and
//!   writes its results through out-pointers only on success;
//! - the message of the most recent failure on a thread is read with
//!   `dpd_last_error_message`;
//! - a panic never crosses the ABI: each entry point runs inside [`guard::ffi_entry`] and a
//!   caught panic becomes `DPD_ERR_PANIC`;
//! - numeric arrays are allocated by the caller (see [`ptr`] for the NULL/length rules and
//!   the query-size pattern of outputs);
//! - stateful objects are opaque handles with a `_new` and a NULL-safe `_free`;
//! - nothing calls back into the host.
//!
//! Type names are the C names (`dpd_node`, `dpd_status`, ...) so that the header and the Rust
//! code read the same.
//!
//! Each module holds one idea: infrastructure first, then one module per wrapped crate.

// The C names are the Rust names (see above).
#![allow(non_camel_case_types)]

mod alloc;
mod blr;
mod dca;
mod error;
mod guard;
mod handle;
mod iterative;
mod noise;
#[cfg(test)]
mod null_tests;
mod plr;
mod privacy;
mod ptr;
mod rng;
#[cfg(test)]
mod size_sweep_tests;
mod status;
mod threads;
mod version;

pub use status::dpd_status;
pub use version::DPD_ABI_VERSION;
