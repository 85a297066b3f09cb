//! The one leased worker of every leased kind of work: a job's driver (aggregator), a round's
//! release (aggregator) and a node sum on a shared store (node replicas). The store decides who
//! holds a lease and refuses every write of a holder whose lease another took over; this file
//! keeps a held lease alive while its holder works, as Janus's job driver does.
//!
//! A lease is renewed every third of its length, so that one late or failed renewal still
//! leaves a third of it before it expires. Its expiry is read on the injected clock (tests
//! move a mock clock past it); the wait between renewals is real time.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use crate::Result;
use crate::clock::Clock;

/// Until when a lease of length `lease` taken or renewed now lasts, in ms since the Unix epoch.
pub(crate) fn lease_until(clock: &dyn Clock, lease: Duration) -> u64 {
    clock.now_ms().saturating_add(lease.as_millis() as u64)
}

/// What holding a lease while working came to.
pub(crate) enum Held<T> {
    /// The work ended with the lease still held.
    Done(T),
    /// A renewal found the lease taken over (`None`) or failed; the work was stopped there.
    Lost(Option<crate::Error>),
}

/// Runs `work` while `renew` renews its lease (`Ok(false)`: another holder took it over) every
/// third of `lease`. The work is dropped at the first renewal that does not succeed: a holder
/// that cannot show its lease is live stops, since another may be doing the same work. Giving
/// the lease up is the caller's, who knows whether the work is over for good.
pub(crate) async fn hold<T>(
    lease: Duration,
    work: impl Future<Output = T>,
    mut renew: impl FnMut() -> Result<bool>,
) -> Held<T> {
    tokio::pin!(work);
    let every = lease / 3;
    loop {
        tokio::select! {
            done = &mut work => return Held::Done(done),
            () = tokio::time::sleep(every) => match renew() {
                Ok(true) => {}
                Ok(false) => return Held::Lost(None),
                Err(e) => return Held::Lost(Some(e)),
            },
        }
    }
}

/// [`hold`] for blocking `work` on the calling thread, renewing from a thread of its own. Work
/// that cannot be stopped midway is not: once the lease is taken over the renewals stop, and
/// the work's own write, which the store refuses to a holder whose lease is not live, says
/// whether it counted. A failed renewal is logged and tried again at the next third.
pub(crate) fn hold_blocking<T>(
    lease: Duration,
    work: impl FnOnce() -> T,
    mut renew: impl FnMut() -> Result<bool> + Send + 'static,
    what: &'static str,
) -> T {
    let (stop, stopped) = mpsc::channel::<()>();
    let renewer = std::thread::spawn(move || {
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(lease / 3) {
            match renew() {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!("renewing the {what}'s lease: {e}"),
            }
        }
    });
    let done = work();
    drop(stop);
    let _ = renewer.join();
    done
}
