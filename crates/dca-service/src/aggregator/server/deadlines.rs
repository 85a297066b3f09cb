//! The server's own pass: every round closed and released (or aborted) at its deadline or once
//! complete, with a pause that grows for a round whose release keeps failing.

use std::sync::Arc;
use std::time::Duration;

use crate::Error;
use crate::aggregator::Aggregator;
use crate::aggregator::store::RoundPhase;
use crate::http::metrics::Metrics;

/// Longest pause between two attempts of the server's own pass at a round whose release
/// keeps failing (a node down): the pause doubles from one poll with each failure up to this.
pub const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// The rounds whose release failed on this server's passes, each with its consecutive failures
/// and when it is tried next (ms of this process's monotonic time): the pass
/// backs off, so that a node down for an hour costs a few attempts and log lines a minute, not
/// one per poll.
#[derive(Default)]
pub struct RetryBackoff {
    rounds: std::sync::Mutex<std::collections::HashMap<String, (u32, u64)>>,
}

/// Milliseconds since this process first asked. The pauses between retries are about load, so
/// they run on real time, not on the aggregator's injected clock: a test's mock clock, which
/// stands still unless the test moves it, stopped every retry of a round whose first attempt
/// failed (a node that had not yet seen its round answered 404), and its job never ended.
fn monotonic_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

impl RetryBackoff {
    /// Whether round `id` is due for an attempt at `now_ms`.
    fn due(&self, id: &str, now_ms: u64) -> bool {
        self.rounds
            .lock()
            .map_or(true, |r| r.get(id).is_none_or(|&(_, next)| now_ms >= next))
    }

    /// Records a failed attempt at round `id`; the consecutive failures so far and the pause
    /// before the next attempt.
    fn failed(&self, id: &str, now_ms: u64, poll: Duration) -> (u32, Duration) {
        let Ok(mut rounds) = self.rounds.lock() else {
            return (1, poll);
        };
        let entry = rounds.entry(id.to_string()).or_insert((0, 0));
        entry.0 += 1;
        let pause = poll
            .saturating_mul(1 << (entry.0 - 1).min(20))
            .min(MAX_RETRY_PAUSE);
        entry.1 = now_ms.saturating_add(pause.as_millis() as u64);
        (entry.0, pause)
    }

    /// Forgets round `id` (released, ended, or driven by another aggregator).
    fn forget(&self, id: &str) {
        if let Ok(mut rounds) = self.rounds.lock() {
            rounds.remove(id);
        }
    }

    /// Forgets every round not in `live`.
    fn keep_only(&self, live: &[Arc<crate::protocol::spec::Round>]) {
        if let Ok(mut rounds) = self.rounds.lock() {
            rounds.retain(|id, _| live.iter().any(|r| r.id() == *id));
        }
    }
}

/// One pass of the server's own work: re-send pending abort notices, then close and release
/// (or abort) every open round that is due. A round the accountant's budget does not allow is
/// aborted; a round whose release a node made impossible (its stored state damaged) has failed
/// and is not tried again; other errors (a node down) are logged and retried on a later pass,
/// after a pause that doubles with each failure of the round (from `poll` to
/// [`MAX_RETRY_PAUSE`]).
pub async fn tick(agg: &Aggregator, metrics: &Metrics, backoff: &RetryBackoff, poll: Duration) {
    if let Err(e) = agg.notify_pending_aborts().await {
        tracing::warn!("abort notice: {e}");
    }
    let open = match agg.open_rounds() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("reading rounds: {e}");
            return;
        }
    };
    backoff.keep_only(&open);
    for round in open {
        let id = round.id();
        if !backoff.due(&id, monotonic_ms()) {
            continue;
        }
        match agg.due(&round).await {
            Ok(true) => match agg.release(&round).await {
                Ok(r) => {
                    backoff.forget(&id);
                    metrics.round_event(RoundPhase::Released.as_str());
                    tracing::info!(
                        round = r.round,
                        clients = r.clients.len(),
                        spent_epsilon = r.spent_epsilon,
                        privacy = r.privacy.as_deref().unwrap_or("private"),
                        "released"
                    );
                }
                // The budget will not grow back: this round can never be released.
                Err(e @ (Error::Budget(_) | Error::JobBudget { .. })) => {
                    let reason = format!("the aggregator's privacy budget does not allow it: {e}");
                    tracing::warn!(round = round.spec.round, "aborted: {reason}");
                    metrics.round_event(RoundPhase::Aborted.as_str());
                    if let Err(e) = agg.abort(&round, &reason).await {
                        tracing::error!(round = round.spec.round, "abort: {e}");
                    }
                }
                // Recorded (and logged) as failed by the release: it is no longer open.
                Err(Error::RoundFailed(_)) => {
                    backoff.forget(&id);
                    metrics.round_event(RoundPhase::Failed.as_str());
                }
                // Another aggregator on the store is driving it; it is not this pass's work.
                Err(Error::ReleaseInProgress(why)) => {
                    backoff.forget(&id);
                    tracing::debug!(round = round.spec.round, "{why}");
                }
                Err(e) => {
                    if matches!(e, Error::Aborted { .. }) {
                        metrics.round_event(RoundPhase::Aborted.as_str());
                    }
                    let (failures, pause) = backoff.failed(&id, monotonic_ms(), poll);
                    tracing::warn!(
                        round = round.spec.round,
                        failures,
                        "release: {e}; trying again in {} ms",
                        pause.as_millis()
                    );
                }
            },
            // Not due yet, and its nodes answered: the failures so far were not consecutive.
            Ok(false) => backoff.forget(&id),
            Err(e) => {
                let (failures, pause) = backoff.failed(&id, monotonic_ms(), poll);
                tracing::warn!(
                    round = round.spec.round,
                    failures,
                    "{e}; trying again in {} ms",
                    pause.as_millis()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round that keeps failing is tried after one poll, then two, four, … up to
    /// `MAX_RETRY_PAUSE`: a node down for a minute costs a handful of attempts (and log lines),
    /// not one per poll; a round that is forgotten is tried at once again.
    #[test]
    fn a_failing_round_is_tried_again_after_a_doubling_pause() {
        let backoff = RetryBackoff::default();
        let poll = Duration::from_millis(50);
        let mut now = 0u64;
        let mut attempts = 0;
        while now < 60_000 {
            if backoff.due("r", now) {
                attempts += 1;
                backoff.failed("r", now, poll);
            }
            now += poll.as_millis() as u64;
        }
        // 50 ms, 100, …, 25.6 s, then every 30 s: 11 attempts in the first minute, against
        // 1,200 polls.
        assert_eq!(attempts, 11);
        let (failures, pause) = backoff.failed("r", now, poll);
        assert_eq!((failures, pause), (12, MAX_RETRY_PAUSE));
        assert!(!backoff.due("r", now + 1));
        assert!(backoff.due("other", now));
        backoff.forget("r");
        assert!(backoff.due("r", now + 1));
    }
}
