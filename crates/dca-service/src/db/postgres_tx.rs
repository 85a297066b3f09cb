//! Connections and transactions on PostgreSQL, shared by the node's and the aggregator's
//! stores (their schemas: [`crate::db::migrations`]): a connection that opens itself again once the
//! server closed it (a restart, a failover, an idle connection cut by a firewall), and a
//! transaction retried a bounded number of times on a serialization failure, a deadlock or a
//! connection lost before its commit was sent.
//!
//! A connection lost while its transaction's COMMIT was under way leaves the outcome unknown:
//! that transaction is never retried here; its error says so, and the caller's request fails
//! (every request that changes state is idempotent or a compare-and-swap, so the client's
//! retry gets the right answer).

use std::time::{Duration, Instant};

use postgres::error::SqlState;
use postgres::{Client, IsolationLevel, NoTls, Transaction};

use crate::{Error, Result};

/// Times a transaction is tried when PostgreSQL reports a serialization failure (40001) or a
/// deadlock (40P01) before the error is returned.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// Times a lost connection is opened again, one after another, before a call gives up (the
/// next call tries again).
pub(crate) const RECONNECT_ATTEMPTS: u32 = 5;

/// The pause before the second attempt to connect again, doubled before each later one: 0.1,
/// 0.2, 0.4 and 0.8 s, 1.5 s in all besides the attempts themselves.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// A connection to one database that connects again, on its next use, once the server has
/// closed it. Dropped on an async thread, the client is closed on a thread of its own: closing
/// blocks on the client's own runtime, which tokio refuses (panics) on a thread that runs
/// async tasks.
pub(crate) struct PgConnection {
    config: Box<postgres::Config>,
    shown: String,
    client: Option<Box<Client>>,
    /// Connections opened so far: a statement prepared on one is valid on that one only.
    generation: u64,
    /// Statements prepared on the current connection, by their SQL ([`Self::prepared`]).
    prepared: Vec<(&'static str, postgres::Statement)>,
}

impl PgConnection {
    /// Connects once (a store that cannot reach its database at start is an error, not a
    /// wait); `shown` names the database in errors and logs (no password).
    pub(crate) fn open(config: &postgres::Config, shown: &str) -> Result<Self> {
        let client = config
            .connect(NoTls)
            .map_err(|e| Error::Postgres(format!("{shown}: cannot connect: {}", cause(&e))))?;
        Ok(PgConnection {
            config: Box::new(config.clone()),
            shown: shown.to_string(),
            client: Some(Box::new(client)),
            generation: 1,
            prepared: Vec::new(),
        })
    }

    /// The database as it may be shown.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Which connection [`Self::client`] gives: it changes when a lost one is replaced.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The client, connected again first if the server closed the connection.
    ///
    /// # Errors
    /// [`Error::Postgres`] naming the database and the last cause, after
    /// [`RECONNECT_ATTEMPTS`] failed attempts to connect again.
    pub(crate) fn client(&mut self) -> Result<&mut Client> {
        if self.client.as_ref().is_none_or(|c| c.is_closed()) {
            self.reconnect()?;
        }
        self.client
            .as_deref_mut()
            .ok_or_else(|| Error::Postgres(format!("{}: not connected", self.shown)))
    }

    /// `sql` prepared on the current connection, once per connection: a pooled connection
    /// serves many callers, and a lookup made per upload would otherwise be parsed per upload.
    pub(crate) fn prepared(
        &mut self,
        sql: &'static str,
    ) -> std::result::Result<postgres::Statement, TxError> {
        self.client()?;
        if let Some((_, stmt)) = self.prepared.iter().find(|(s, _)| *s == sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.client()?.prepare(sql)?;
        self.prepared.push((sql, stmt.clone()));
        Ok(stmt)
    }

    /// Whether the connection is known to be closed (it is opened again on next use).
    pub(crate) fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_closed())
    }

    /// Runs `read`, which must change nothing (it may be run twice), and runs it once more on a
    /// new connection if the connection was lost under it.
    pub(crate) fn read<T>(
        &mut self,
        mut read: impl FnMut(&mut Client) -> std::result::Result<T, TxError>,
    ) -> Result<T> {
        let first = self.client().map_err(TxError::Other).and_then(&mut read);
        let outcome = match first {
            Err(TxError::Pg(e)) if connection_lost(&e) || self.is_closed() => {
                tracing::warn!(
                    store = self.shown,
                    "PostgreSQL: a read lost its connection ({}); reading again",
                    cause(&e)
                );
                self.forget();
                self.client().map_err(TxError::Other).and_then(&mut read)
            }
            other => other,
        };
        match outcome {
            Ok(value) => Ok(value),
            Err(TxError::Pg(e)) => Err(e.into()),
            Err(TxError::Other(e)) => Err(e),
        }
    }

    /// Gives the connection up after an error that says it is gone ([`connection_lost`]),
    /// which the client may not have noticed yet: the next use connects again.
    pub(crate) fn forget(&mut self) {
        self.prepared.clear();
        if let Some(old) = self.client.take() {
            tracing::warn!(store = self.shown, "PostgreSQL: the connection was lost");
            close_off_async_threads(old);
        }
    }

    fn reconnect(&mut self) -> Result<()> {
        self.forget();
        let started = Instant::now();
        let mut last = String::new();
        for attempt in 0..RECONNECT_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(RECONNECT_PAUSE * (1 << (attempt - 1)));
            }
            match self.config.connect(NoTls) {
                Ok(client) => {
                    self.client = Some(Box::new(client));
                    self.generation += 1;
                    tracing::info!(
                        store = self.shown,
                        attempts = attempt + 1,
                        "PostgreSQL: connected again"
                    );
                    return Ok(());
                }
                Err(e) => {
                    last = cause(&e);
                    tracing::warn!(
                        store = self.shown,
                        attempt = attempt + 1,
                        "PostgreSQL: cannot connect again: {last}"
                    );
                }
            }
        }
        tracing::error!(
            store = self.shown,
            "PostgreSQL: no connection after {RECONNECT_ATTEMPTS} attempts; the next call tries again"
        );
        Err(Error::Postgres(format!(
            "{}: the connection was lost and {RECONNECT_ATTEMPTS} attempts to connect again \
             in {:.1} s failed: {last}",
            self.shown,
            started.elapsed().as_secs_f64()
        )))
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            close_off_async_threads(client);
        }
    }
}

fn close_off_async_threads(client: Box<Client>) {
    if tokio::runtime::Handle::try_current().is_ok() {
        let _ = std::thread::Builder::new()
            .name("dpdist-pg-close".into())
            .spawn(move || drop(client));
    } else {
        drop(client);
    }
}

/// Whether `e` means the connection is gone (rather than that a statement failed on a live
/// one): the client saw it closed, or the server said it is shutting the session down
/// (SQLSTATE class 08, connection exception; 57P01–57P03, administrator or crash shutdown,
/// cannot connect now).
pub(crate) fn connection_lost(e: &postgres::Error) -> bool {
    e.is_closed()
        || e.code().is_some_and(|c| {
            let c = c.code();
            c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03")
        })
}

/// A PostgreSQL error with its SQLSTATE and the server's detail, for logs (never for HTTP
/// answers: handlers answer "internal error" and log this).
pub(crate) fn cause(e: &postgres::Error) -> String {
    let mut s = crate::error::cause_chain(e);
    if let Some(code) = e.code() {
        s.push_str(&format!(" (SQLSTATE {})", code.code()));
    }
    s
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Self {
        Error::Postgres(cause(&e))
    }
}

/// The error of one try of a transaction: PostgreSQL's (maybe retried) or ours (never).
pub(crate) enum TxError {
    Pg(postgres::Error),
    Other(Error),
}

impl From<postgres::Error> for TxError {
    fn from(e: postgres::Error) -> Self {
        TxError::Pg(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Other(e)
    }
}

impl From<std::io::Error> for TxError {
    fn from(e: std::io::Error) -> Self {
        TxError::Other(e.into())
    }
}

fn retryable(e: &postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// Runs `f` in a transaction at `isolation` and commits; runs it again (at most
/// [`MAX_ATTEMPTS`] times in all, after a short pause) when PostgreSQL reports a serialization
/// failure or a deadlock, in `f` or at commit, or when the connection is lost before the
/// COMMIT was sent (the server then rolls the transaction back; the retry connects again). A
/// connection lost during the COMMIT is an error that says the outcome is unknown.
pub(crate) fn in_tx<T>(
    conn: &mut PgConnection,
    isolation: IsolationLevel,
    mut f: impl FnMut(&mut Transaction<'_>) -> std::result::Result<T, TxError>,
) -> Result<T> {
    let mut attempt = 1;
    loop {
        let mut committing = false;
        let outcome = conn
            .client()
            .map_err(TxError::Other)
            .and_then(|client| try_once(client, isolation, &mut f, &mut committing));
        match outcome {
            Ok(value) => return Ok(value),
            Err(TxError::Pg(e)) if retryable(&e) && attempt < MAX_ATTEMPTS => {
                tracing::warn!(
                    attempt,
                    "PostgreSQL: {}; trying the transaction again",
                    cause(&e)
                );
                std::thread::sleep(Duration::from_millis(10 << attempt));
                attempt += 1;
            }
            Err(TxError::Pg(e)) if connection_lost(&e) || conn.is_closed() => {
                conn.forget();
                if committing {
                    tracing::error!(
                        store = conn.shown(),
                        "PostgreSQL: the connection was lost during a COMMIT: {}",
                        cause(&e)
                    );
                    return Err(Error::Postgres(format!(
                        "{}: the connection was lost while a transaction committed; whether \
                         it did is unknown, and it is not retried: {}",
                        conn.shown(),
                        cause(&e)
                    )));
                }
                if attempt >= MAX_ATTEMPTS {
                    return Err(Error::Postgres(format!(
                        "{}: the connection was lost ({MAX_ATTEMPTS} tries): {}",
                        conn.shown(),
                        cause(&e)
                    )));
                }
                tracing::warn!(
                    store = conn.shown(),
                    attempt,
                    "PostgreSQL: the connection was lost before the commit ({}); trying the \
                     transaction again",
                    cause(&e)
                );
                attempt += 1;
            }
            Err(TxError::Pg(e)) => return Err(e.into()),
            Err(TxError::Other(e)) => return Err(e),
        }
    }
}

/// One try of [`in_tx`]; `committing` is set once the COMMIT is about to be sent.
fn try_once<T>(
    client: &mut Client,
    isolation: IsolationLevel,
    f: &mut impl FnMut(&mut Transaction<'_>) -> std::result::Result<T, TxError>,
    committing: &mut bool,
) -> std::result::Result<T, TxError> {
    let mut tx = client
        .build_transaction()
        .isolation_level(isolation)
        .start()?;
    let value = f(&mut tx)?;
    *committing = true;
    tx.commit()?;
    Ok(value)
}
