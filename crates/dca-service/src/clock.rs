//! Time as the services see it: wall-clock milliseconds since the Unix epoch, behind a trait so
//! that tests move it by hand (a round's deadline passes without anybody sleeping).

use std::sync::atomic::{AtomicU64, Ordering};

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// Milliseconds since the Unix epoch, by the system's clock.
pub fn now_ms() -> u64 {
    SystemClock.now_ms()
}

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

/// A clock that stands still until it is moved (for tests).
#[derive(Debug)]
pub struct MockClock(AtomicU64);

impl MockClock {
    /// A clock showing `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        MockClock(AtomicU64::new(now_ms))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for MockClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
