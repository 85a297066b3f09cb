//! Errors of the services.

use std::fmt;

/// What went wrong in a service, a client or the aggregator.
#[derive(Debug)]
pub enum Error {
    /// A round configuration is invalid (message says why).
    InvalidSpec(String),
    /// The DCA core refused (bad values, wrong round, ...).
    Dca(fixedpoint_shares::Error),
    /// Sealing or opening failed.
    Sealing(share_sealing::Error),
    /// SQLite failed.
    Storage(rusqlite::Error),
    /// TLS setup failed (certificates, keys).
    Tls(String),
    /// An HTTP exchange failed or a peer answered with an unexpected status.
    Http(String),
    /// More than T clients are missing: the round is aborted, nothing is released.
    Aborted {
        /// Clients missing from the agreed set.
        missing: usize,
        /// T.
        max_dropped: usize,
    },
    /// The round was already released (the aggregator releases once).
    AlreadyReleased,
    /// The round was aborted earlier (reason as recorded); it is never released.
    RoundAborted(String),
    /// The privacy budget does not allow this round.
    Budget(dp_noise::Error),
    /// File or socket I/O.
    Io(std::io::Error),
    /// A bounded wait ran out.
    Timeout(String),
    /// A store's schema cannot be used (written by a newer version).
    Schema(String),
    /// The node's key file cannot be used (message names the file and why).
    Key(String),
    /// Stored data failed its integrity check (message names what); nothing is released
    /// from it.
    Integrity(String),
    /// The learner (data preparation, fit) failed.
    Learning(blr::Error),
    /// The iterative trainer refused or failed (budget, records, divergence).
    Training(dca_learning::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidSpec(m) => write!(f, "invalid round configuration: {m}"),
            Error::Dca(e) => write!(f, "DCA: {e}"),
            Error::Sealing(e) => write!(f, "sealing: {e}"),
            Error::Storage(e) => write!(f, "storage: {e}"),
            Error::Tls(m) => write!(f, "TLS: {m}"),
            Error::Http(m) => write!(f, "HTTP: {m}"),
            Error::Aborted {
                missing,
                max_dropped,
            } => write!(
                f,
                "round aborted: {missing} clients missing, more than T = {max_dropped}; nothing released"
            ),
            Error::AlreadyReleased => write!(f, "round already released"),
            Error::RoundAborted(reason) => write!(f, "round was aborted: {reason}"),
            Error::Budget(e) => write!(f, "privacy budget: {e}"),
            Error::Io(e) => write!(f, "I/O: {e}"),
            Error::Timeout(m) => write!(f, "timed out: {m}"),
            Error::Key(m) => write!(f, "node key: {m}"),
            Error::Schema(m) => write!(f, "store schema: {m}"),
            Error::Integrity(m) => write!(
                f,
                "integrity check failed: {m}; refusing to use it (restore the store from a \
                 backup, or abort the round)"
            ),
            Error::Learning(e) => write!(f, "learning: {e}"),
            Error::Training(e) => write!(f, "training: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<fixedpoint_shares::Error> for Error {
    fn from(e: fixedpoint_shares::Error) -> Self {
        Error::Dca(e)
    }
}
impl From<share_sealing::Error> for Error {
    fn from(e: share_sealing::Error) -> Self {
        Error::Sealing(e)
    }
}
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::Storage(e)
    }
}
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}
impl From<reqwest::Error> for Error {
    /// The whole cause chain ("error sending request for url (…): client error (Connect):
    /// invalid peer certificate: UnknownIssuer"), not only reqwest's outermost line.
    fn from(e: reqwest::Error) -> Self {
        Error::Http(crate::tls::cause_chain(&e))
    }
}
impl From<blr::Error> for Error {
    fn from(e: blr::Error) -> Self {
        Error::Learning(e)
    }
}
impl From<dca_learning::Error> for Error {
    fn from(e: dca_learning::Error) -> Self {
        Error::Training(e)
    }
}
