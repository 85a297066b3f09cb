//! Jobs on the aggregator: their records, the driver that runs each
//! job's rounds, and the lease that lets one aggregator drive it at a time.

pub(crate) mod acquirer;
pub mod driver;
mod lease;
mod record;
