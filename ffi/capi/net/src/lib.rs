//! `libdpdist_net`: the network side of dpdist's C ABI (header `include/dpdist_net.h`). A host —
//! a hospital's C++ system, an R session, a Julia program — hands a participant its own rows and
//! its files and lets it follow a job on the aggregator; the rows never leave the process except
//! as sealed shares.
//!
//! This is the second crate with `unsafe` (raw pointers from C), like `ffi/capi`: every entry
//! point checks its pointers, runs its body under a panic guard and reports failures as a
//! status plus a thread-local message. The core library `libdpdist` stays free of network code.

/// The ABI version of this library and of `dpdist_net.h`; it changes with every incompatible
/// change, and the shared library's SONAME is `libdpdist_net.so.N` (build.rs).
pub const DPD_NET_ABI_VERSION: u32 = 1;

/// The ABI version of the loaded library (`DPD_NET_ABI_VERSION` of the header it was built with):
/// a host compares it with the header's constant before anything else.
#[unsafe(no_mangle)]
pub extern "C" fn dpd_net_abi_version() -> u32 {
    DPD_NET_ABI_VERSION
}

mod error;
mod participant;

pub use error::{dpd_net_last_error_message, dpd_net_status, dpd_net_status_name};
pub use participant::{
    dpd_net_job_state, dpd_net_layout, dpd_net_outcome, dpd_net_participant,
    dpd_net_participant_follow_job, dpd_net_participant_free, dpd_net_participant_new,
    dpd_net_participant_outcome_reason, dpd_net_participant_set_insecure_fixed_seed,
    dpd_net_participant_set_poll_ms, dpd_net_participant_set_rows, dpd_net_participant_stop,
};

#[cfg(test)]
mod tests {
    #[test]
    fn the_soname_carries_the_abi_version() {
        let build = include_str!("../build.rs");
        let soname = format!("-soname,libdpdist_net.so.{}\"", super::DPD_NET_ABI_VERSION);
        assert!(build.contains(&soname), "build.rs must set {soname}");
    }
}
