//! HTTP plumbing shared by the servers and the parties that call them: TLS, serving with
//! limits, bounded request bodies, problem documents and `/metrics`.

#[cfg(feature = "server")]
pub mod body;
#[cfg(feature = "server")]
pub mod metrics;
#[cfg(feature = "server")]
pub mod problem;
#[cfg(feature = "server")]
pub mod serve;
pub mod tls;
