//! A long run's heartbeat: every few seconds of host time, what the run has done so far,
//! handed to a sink the caller installs for the thread that runs it ([`with`]). The
//! command line prints it on stderr; without a sink the event loop's look costs one
//! thread-local read every [`super::host_memory::EVERY`] events.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// Host time between two beats.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// What a run has done when a beat is due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Beat {
    /// Simulated cycle.
    pub cycle: u64,
    /// Events processed.
    pub events: u64,
    /// Host seconds since the run started (since the sink was installed).
    pub host_seconds: f64,
    /// The driver's progress toward a known end, `(done, of)` (an MPI run's messages
    /// verified of those its workload sends).
    pub done: Option<(u64, u64)>,
}

impl Beat {
    /// Events per host second so far.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.host_seconds.max(1e-9)
    }

    /// Host seconds left, extrapolated from the progress so far, where the end is known.
    pub fn eta_seconds(&self) -> Option<f64> {
        let (done, of) = self.done?;
        (done > 0 && of >= done).then(|| self.host_seconds * (of - done) as f64 / done as f64)
    }
}

struct Sink {
    started: Instant,
    last: Instant,
    every: Duration,
    beat: Box<dyn FnMut(&Beat)>,
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Runs `f` with `beat` hearing this thread's runs every [`INTERVAL`] (the previous sink
/// is restored after, so calls nest).
pub fn with<T>(beat: impl FnMut(&Beat) + 'static, f: impl FnOnce() -> T) -> T {
    with_every(INTERVAL, beat, f)
}

/// [`with`], a beat every `every` of host time (a progress bar redraws more often than a
/// log takes lines).
pub fn with_every<T>(
    every: Duration,
    beat: impl FnMut(&Beat) + 'static,
    f: impl FnOnce() -> T,
) -> T {
    let now = Instant::now();
    let sink = Sink {
        started: now,
        last: now,
        every,
        beat: Box::new(beat),
    };
    super::interrupt::with_local(&SINK, sink, f)
}

/// Hands the sink a beat if one is due; `beat` makes it (given the host seconds so far)
/// only then.
pub(crate) fn tick(beat: impl FnOnce(f64) -> Beat) {
    SINK.with(|s| {
        let mut s = s.borrow_mut();
        let Some(sink) = s.as_mut() else { return };
        let now = Instant::now();
        if now.duration_since(sink.last) < sink.every {
            return;
        }
        sink.last = now;
        let b = beat(now.duration_since(sink.started).as_secs_f64());
        (sink.beat)(&b);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_extrapolates_the_progress_so_far() {
        let b = Beat {
            cycle: 10,
            events: 1000,
            host_seconds: 4.0,
            done: Some((25, 100)),
        };
        assert_eq!(b.eta_seconds(), Some(12.0));
        assert_eq!(b.events_per_second(), 250.0);
        assert_eq!(Beat { done: None, ..b }.eta_seconds(), None);
        assert_eq!(
            Beat {
                done: Some((0, 9)),
                ..b
            }
            .eta_seconds(),
            None
        );
    }

    #[test]
    fn a_sink_hears_nothing_before_the_interval_and_is_removed_after() {
        use std::rc::Rc;
        let heard = Rc::new(RefCell::new(0));
        let h = Rc::clone(&heard);
        with(
            move |_| *h.borrow_mut() += 1,
            || {
                tick(|_| unreachable!("no beat is due at once"));
            },
        );
        assert_eq!(*heard.borrow(), 0);
        SINK.with(|s| assert!(s.borrow().is_none()));
    }
}
