//! The terms on which this aggregator holds leases: who it is as their holder, and how long
//! each kind lasts between renewals (a round's release lease, a job's driver lease).

use std::time::Duration;

use crate::aggregator::{DEFAULT_JOB_LEASE, DEFAULT_RELEASE_LEASE};
use crate::{Error, Result};

/// Who holds, and for how long.
pub(in crate::aggregator) struct LeaseTerms {
    /// Who this aggregator is when it holds a lease: its process id (so that an operator can
    /// tell which process holds it) and random bytes (so that no other aggregator, here or in
    /// another process, ever has the same name).
    pub(in crate::aggregator) holder: String,
    /// How long a round's release lease lasts between renewals.
    pub(in crate::aggregator) release: Duration,
    /// How long a job's driver lease lasts between renewals.
    pub(in crate::aggregator) job: Duration,
}

impl LeaseTerms {
    /// A new holder's name, with the default lengths.
    pub(in crate::aggregator) fn new() -> Self {
        LeaseTerms {
            holder: lease_holder(),
            release: DEFAULT_RELEASE_LEASE,
            job: DEFAULT_JOB_LEASE,
        }
    }
}

/// `lease` as the length of a `what` lease.
///
/// # Errors
/// [`Error::InvalidSpec`] for a lease under 300 ms (renewed every third of it, it would
/// expire between renewals on a busy machine).
pub(in crate::aggregator) fn checked_length(what: &str, lease: Duration) -> Result<Duration> {
    if lease < Duration::from_millis(300) {
        return Err(Error::InvalidSpec(format!(
            "{what} lease of {} ms: it must be at least 300 ms",
            lease.as_millis()
        )));
    }
    Ok(lease)
}

/// A lease holder's name: this process's id and 64 random bits.
fn lease_holder() -> String {
    use rand_core::TryRngCore;
    let mut random = [0u8; 8];
    if rand_core::OsRng.try_fill_bytes(&mut random).is_err() {
        // Distinct enough without the OS's randomness: the time to the nanosecond.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        random = nanos.to_le_bytes();
    }
    format!("pid {} {}", std::process::id(), crate::hex::encode(&random))
}
