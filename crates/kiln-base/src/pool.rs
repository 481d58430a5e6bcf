//! When a render has work for more than one thread.
//!
//! A `kiln helm template` or `kiln kustomize` process renders one chart or kustomization on
//! its main thread, and the machine's other cores help only with the work an engine hands
//! out beside it: templates parsed and schemas compiled ahead, two prime searches at once.
//! Starting those threads costs every process (a clone, a stack, an allocator heap faulted
//! in), and while they run they slow the render's thread where the cores share a physical
//! one. A small chart (nats: 25 KB of templates) rendered 7 % faster by wall time and used
//! 12 % less CPU with no second thread (ADR 0055).
//!
//! So an engine says when it has such work ([`widen`]), and whoever built the pool starts
//! its other threads then ([`set_widen`]; the `kiln` binary's `engine_pool`). Where nobody
//! set it (inside `kiln render`, whose pool runs from the start) `widen` does nothing. It
//! changes when work runs, never what it gives.

use std::sync::OnceLock;

static WIDEN: OnceLock<fn()> = OnceLock::new();

/// What [`widen`] calls: set once, by the process that owns the thread pool.
pub fn set_widen(start_threads: fn()) {
    let _ = WIDEN.set(start_threads);
}

/// Says that work for more threads than this one is about to be handed out.
pub fn widen() {
    if let Some(start_threads) = WIDEN.get() {
        start_threads();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static STARTS: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        STARTS.fetch_add(1, Ordering::Relaxed);
    }

    /// Nothing happens until the pool's owner says what to call; then each `widen` calls it.
    #[test]
    fn widen_calls_what_the_pools_owner_set() {
        super::widen();
        assert_eq!(STARTS.load(Ordering::Relaxed), 0);
        super::set_widen(count);
        super::widen();
        super::widen();
        assert_eq!(STARTS.load(Ordering::Relaxed), 2);
    }
}
