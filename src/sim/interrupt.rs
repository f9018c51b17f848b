//! Stopping a run on request. Ctrl-C (SIGINT) in the command line sets a process-wide
//! flag ([`request`]); a caller can also give the thread that runs a simulation a check of
//! its own ([`with_check`]): Python's signal check, or a run pool's cancel flag. The event
//! loop asks [`requested`] every [`EVERY`] events (well under a millisecond of host
//! time), and a run that sees it ends with [`SimError::Interrupted`](super::SimError).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::thread::LocalKey;

/// Events between two looks at the flags: a power of two, tested with a mask.
pub const EVERY: u64 = 4096;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The signal that asked, where one did (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Bumped by [`stop_started`]: a run whose check compares it with the value it started
/// under stops when it changes, and runs started later are not affected.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static CHECK: RefCell<Option<Rc<dyn Fn() -> bool>>> = const { RefCell::new(None) };
}

/// Asks every run in the process to stop (the command line's Ctrl-C handler).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// [`request`], made by the signal numbered `signal` (SIGINT, SIGTERM).
pub fn request_by(signal: i32) {
    SIGNAL.store(signal, Ordering::SeqCst);
    request();
}

/// The signal that asked the runs to stop, if one did.
pub fn signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Asks the runs started so far whose checks watch [`generation`] to stop (Python's
/// sweeps on Ctrl-C: runs in an executor's threads cannot see the main thread's signal).
pub fn stop_started() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// The current generation: a check made with it asks whether [`stop_started`] was
/// called since.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Whether the runs of this thread should stop: the process-wide request, or this
/// thread's own check.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed) || CHECK.with(|c| c.borrow().as_ref().is_some_and(|f| f()))
}

/// Runs `f` with `check` as this thread's own stop check (the previous one is restored
/// after, so calls nest).
pub fn with_check<T>(check: impl Fn() -> bool + 'static, f: impl FnOnce() -> T) -> T {
    with_local(&CHECK, Rc::new(check), f)
}

/// Runs `f` with `value` in the thread-local `slot`, the slot's previous value restored
/// after, on unwinding too (a guard, not a statement after `f`), so calls nest.
pub(crate) fn with_local<S: 'static, T>(
    slot: &'static LocalKey<RefCell<Option<S>>>,
    value: S,
    f: impl FnOnce() -> T,
) -> T {
    struct Restore<S: 'static> {
        slot: &'static LocalKey<RefCell<Option<S>>>,
        old: Option<S>,
    }
    impl<S: 'static> Drop for Restore<S> {
        fn drop(&mut self) {
            let old = self.old.take();
            self.slot.with(|s| *s.borrow_mut() = old);
        }
    }
    let old = slot.with(|s| s.replace(Some(value)));
    let _restore = Restore { slot, old };
    f()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_thread_check_holds_only_within_its_call() {
        assert!(!requested());
        let asked = Rc::new(Cell::new(0));
        let seen = asked.clone();
        let inside = with_check(
            move || {
                seen.set(seen.get() + 1);
                true
            },
            requested,
        );
        assert!(inside);
        assert_eq!(asked.get(), 1);
        assert!(!requested());
    }
}
