//! Blocking store calls made from async code without holding up the runtime's other tasks.
//!
//! Both stores block: SQLite on its file, the PostgreSQL client on a runtime of its own, which
//! tokio refuses (panics) on a thread that runs async tasks. Code that calls a store
//! synchronously from a handler or a task runs the call through [`off_async`].

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `f`, which blocks, without blocking the async runtime it may be called from: on a
/// multi-threaded runtime the worker hands its other tasks to another thread for the call
/// (`block_in_place`); on a current-thread runtime (the tests', the CLI's one-shot commands)
/// there is no other worker, so `f` runs on a thread of its own if `needs_own_thread` (a
/// PostgreSQL call, which must not run on an async thread at all) and in place otherwise;
/// outside a runtime, in place.
pub(crate) fn off_async<T: Send>(needs_own_thread: bool, f: impl FnOnce() -> T + Send) -> T {
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        Ok(_) if needs_own_thread => std::thread::scope(|s| {
            s.spawn(f)
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        }),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::off_async;

    fn on_runtime_thread() -> bool {
        tokio::runtime::Handle::try_current().is_ok()
    }

    /// On a multi-threaded runtime the call leaves the worker's tasks to others and may use
    /// the runtime's handle; on a current-thread runtime a call that needs its own thread runs
    /// outside the runtime, and one that does not runs in place.
    #[test]
    fn calls_run_where_they_may_block() {
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        assert!(
            multi
                .block_on(async { tokio::spawn(async { off_async(true, || 7) }).await })
                .unwrap()
                == 7
        );
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!current.block_on(async { off_async(true, on_runtime_thread) }));
        assert!(current.block_on(async { off_async(false, on_runtime_thread) }));
        assert!(!off_async(true, on_runtime_thread));
    }
}
