//! Errors of the services.

/// What went wrong in a service, a client or the aggregator. Errors of the crates below keep
/// their own type and are the [`std::error::Error::source`] of the variant that wraps them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A round configuration is invalid (message says why).
    #[error("invalid round configuration: {0}")]
    InvalidSpec(String),
    /// The DCA core refused (bad values, wrong round, ...).
    #[error("DCA: {0}")]
    Dca(#[from] fixedpoint_shares::Error),
    /// A verified round's proof system refused (a client's data past the round's bound, a
    /// malformed verified message).
    #[error("verified round: {0}")]
    Verified(#[from] verified_shares::Error),
    /// Sealing or opening failed.
    #[error("sealing: {0}")]
    Sealing(#[from] share_sealing::Error),
    /// SQLite failed.
    #[cfg(feature = "server")]
    #[error("storage: {0}")]
    Storage(#[from] rusqlite::Error),
    /// PostgreSQL failed (message names the store, the cause and its SQLSTATE).
    #[cfg(feature = "server")]
    #[error("PostgreSQL: {0}")]
    Postgres(String),
    /// TLS setup failed (certificates, keys).
    #[error("TLS: {0}")]
    Tls(String),
    /// An HTTP exchange failed or a peer answered with an unexpected status.
    #[error("HTTP: {0}")]
    Http(String),
    /// More than T clients are missing: the round is aborted, nothing is released.
    #[error(
        "round aborted: {missing} clients missing, more than T = {max_dropped}; nothing released"
    )]
    Aborted {
        /// Clients missing from the agreed set.
        missing: usize,
        /// T.
        max_dropped: usize,
    },
    /// The round was already released (the aggregator releases once).
    #[error("round already released")]
    AlreadyReleased,
    /// Another aggregator sharing the store holds the round's release lease: it is releasing
    /// the round (the detail names the holder and the lease's expiry); ask again later.
    #[error("release in progress: {0}")]
    ReleaseInProgress(String),
    /// This aggregator no longer drives a job: another aggregator sharing the store took the
    /// job's driver lease over, or the job ended; nothing was written.
    #[error("job lease: {0}")]
    JobLeaseLost(String),
    /// The round was aborted earlier (reason as recorded); it is never released.
    #[error("round was aborted: {0}")]
    RoundAborted(String),
    /// The round's release became impossible after its agreed set was recorded (a node
    /// reported its stored state damaged): the round ended as "failed" with the cause, as
    /// recorded; it is never released, and its charge stays.
    #[error("round failed: {0}; nothing was released and the round is never retried")]
    RoundFailed(String),
    /// The privacy budget does not allow this round.
    #[error("privacy budget: {0}")]
    Budget(#[source] dp_noise::Error),
    /// A job's rounds would spend more than the budget reserved for the job.
    #[error(
        "job {job}: its rounds would spend zCDP ρ = {would_spend}, more than the ρ = {reserved} \
         reserved for it"
    )]
    JobBudget {
        /// Hex job id.
        job: String,
        /// ρ of the job's rounds with this one.
        would_spend: f64,
        /// ρ reserved when the job was created.
        reserved: f64,
    },
    /// A participant's ledger cannot be trusted (missing, damaged, edited, another token's) or
    /// disagrees with the aggregator's record: the participant answers nothing until it is
    /// restored or rebuilt (the message names the cause and both ways back).
    #[error("participant ledger: {0}")]
    Ledger(String),
    /// A job is not known, not in the state the request needs, or refused the caller.
    #[error("job: {0}")]
    Job(String),
    /// File or socket I/O.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A bounded wait ran out.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A store's schema cannot be used (written by a newer version).
    #[error("store schema: {0}")]
    Schema(String),
    /// The node's key file cannot be used (message names the file and why).
    #[error("node key: {0}")]
    Key(String),
    /// Stored data failed its integrity check (message names what); nothing is released
    /// from it.
    #[error(
        "integrity check failed: {0}; refusing to use it (restore the store from a backup, or \
         abort the round)"
    )]
    Integrity(String),
    /// The learner (data preparation, fit) failed.
    #[error("learning: {0}")]
    Learning(#[from] blr::Error),
    /// The iterative trainer refused or failed (budget, records, divergence).
    #[error("training: {0}")]
    Training(#[from] dca_learning::Error),
}

impl From<reqwest::Error> for Error {
    /// The whole cause chain ("error sending request for url (…): client error (Connect):
    /// invalid peer certificate: UnknownIssuer"), not only reqwest's outermost line.
    fn from(e: reqwest::Error) -> Self {
        Error::Http(cause_chain(&e))
    }
}

/// `e` and every `source()` under it, joined by ": " (repeats of the same text dropped), with a
/// hint for the causes people meet first: an unknown issuer (wrong `--ca`), a name mismatch (the
/// certificate lacks the host's name), a refused connection and plain HTTP on a TLS port.
pub fn cause_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    let chain = parts.join(": ");
    let hint = if chain.contains("UnknownIssuer") || chain.contains("BadSignature") {
        " (the server's certificate does not chain to the --ca certificate)"
    } else if chain.contains("NotValidForName") || chain.contains("not valid for name") {
        " (the server's certificate is not valid for the host name or IP in the URL; \
         scripts/make-dev-certs.sh makes one for 127.0.0.1 and localhost)"
    } else if chain.contains("onnection refused") {
        " (nothing listens at that address: is the server running, on that port?)"
    } else if chain.contains("InvalidContentType") || chain.contains("corrupt message") {
        " (the server did not answer TLS: plain HTTP on that port?)"
    } else {
        ""
    };
    format!("{chain}{hint}")
}
