//! Progress of the long commands on stderr, one mechanism for all of them: a bar (indicatif)
//! when stderr is a terminal, plain lines otherwise (a log file, CI, a pipe), so a log
//! never fills with redraws and a person at a terminal sees the whole run at a glance.
//!
//! - An experiment's runs ([`Runs`]): runs done of all, simulated events per second,
//!   time left; each finished run's line printed above the bar (or alone, as a line).
//! - A single run's heartbeat ([`heartbeat`]): messages verified of all where the end is
//!   known (else the simulated cycle), events per second, time left.

use std::cell::RefCell;
use std::io::{self, IsTerminal, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::api::{self, MopedError};

/// Whether progress on stderr is drawn as a bar: stderr is a terminal.
pub(super) fn drawn() -> bool {
    io::stderr().is_terminal()
}

/// A bar on stderr over `len` steps, named `prefix`, counting `unit`.
fn bar(prefix: &str, len: u64, unit: &str) -> ProgressBar {
    let template = format!(
        "{{prefix}} [{{bar:30.cyan/blue}}] {{pos}}/{{len}} {unit}  {{msg}}  \
         {{elapsed}} elapsed, about {{eta}} left"
    );
    let style = ProgressStyle::with_template(&template)
        .expect("the template is valid")
        .progress_chars("=> ");
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(style);
    bar.set_prefix(prefix.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The progress of an experiment's `n` runs.
pub(super) struct Runs {
    bar: Option<ProgressBar>,
    n: usize,
    started: Instant,
    /// Events of the runs simulated so far (reused ones took none).
    events: AtomicU64,
    /// Runs finished so far, over every part and pass of the experiment.
    done: AtomicUsize,
}

impl Runs {
    /// Progress of `n` runs of the experiment `what`: a bar when stderr is a terminal.
    pub(super) fn new(what: &str, n: usize) -> Runs {
        Runs {
            bar: drawn().then(|| bar(what, n as u64, "runs")),
            n,
            started: Instant::now(),
            events: AtomicU64::new(0),
            done: AtomicUsize::new(0),
        }
    }

    /// Hears of a finished run and its outcome.
    pub(super) fn finished(&self, r: &Result<api::experiments::Outcome, MopedError>) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let line = api::figure10::progress_line(done, self.n, r, self.started);
        let Some(bar) = &self.bar else {
            // A closed stderr loses the lines, not the run.
            let _ = writeln!(io::stderr(), "{line}");
            return;
        };
        if let Ok(o) = r {
            if !o.reused {
                self.events.fetch_add(o.events, Ordering::Relaxed);
            }
        }
        let seconds = self.started.elapsed().as_secs_f64().max(1e-9);
        let rate = self.events.load(Ordering::Relaxed) as f64 / seconds / 1e6;
        bar.println(line);
        bar.set_message(format!("{rate:.1} M events/s"));
        bar.set_position(done as u64);
    }

    /// The callback the experiments take.
    pub(super) fn callback(
        &self,
    ) -> impl Fn(usize, usize, &Result<api::experiments::Outcome, MopedError>) + Sync + '_ {
        move |_i, _done, r| self.finished(r)
    }
}

impl Drop for Runs {
    /// The bar leaves the screen when the experiment ends, its lines above it stay.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Runs `f` (one run, `what`, whose driver counts its way to the end in `unit`: messages
/// verified, checks) with its heartbeat on stderr when `on`: a bar redrawn twice a second
/// on a terminal (a spinner where the end is not known), else a line every
/// [`api::heartbeat::INTERVAL`].
pub(super) fn heartbeat<T>(
    on: bool,
    (what, unit): (&'static str, &'static str),
    f: impl FnOnce() -> T,
) -> T {
    if !on {
        return f();
    }
    if !drawn() {
        let beat = move |b: &api::heartbeat::Beat| {
            // A closed stderr loses the heartbeat, not the run.
            let _ = writeln!(io::stderr(), "{what}: {}", heartbeat_line(b, unit));
        };
        return api::heartbeat::with(beat, f);
    }
    let shown: Rc<RefCell<Option<ProgressBar>>> = Rc::default();
    let drawn = Rc::clone(&shown);
    let beat = move |b: &api::heartbeat::Beat| {
        let mut drawn = drawn.borrow_mut();
        let bar = drawn.get_or_insert_with(|| match b.done {
            Some((_, of)) => bar(what, of, unit),
            None => spinner(what),
        });
        if let Some((done, of)) = b.done {
            bar.set_length(of);
            bar.set_position(done);
        }
        let rate = b.events_per_second() / 1e6;
        bar.set_message(format!("cycle {}, {rate:.1} M events/s", b.cycle));
    };
    let out = api::heartbeat::with_every(Duration::from_millis(500), beat, f);
    if let Some(bar) = shown.borrow_mut().take() {
        bar.finish_and_clear();
    }
    out
}

/// A spinner on stderr named `prefix`, for a run whose end is not known.
fn spinner(prefix: &str) -> ProgressBar {
    let style = ProgressStyle::with_template("{prefix} {spinner} {msg}  {elapsed} elapsed")
        .expect("the template is valid");
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(style);
    bar.set_prefix(prefix.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// `cycle 1,234,567, 40.2 M events (13.1 M/s), 1,204 of 2,960 messages verified, about
/// 12 s left` (`unit` names what is counted).
fn heartbeat_line(b: &api::heartbeat::Beat, unit: &str) -> String {
    let mut line = format!(
        "cycle {}, {:.1} M events ({:.1} M/s)",
        b.cycle,
        b.events as f64 / 1e6,
        b.events_per_second() / 1e6
    );
    if let Some((done, of)) = b.done {
        line.push_str(&format!(", {done} of {of} {unit}"));
    }
    if let Some(eta) = b.eta_seconds() {
        line.push_str(&format!(", about {eta:.0} s left"));
    }
    line
}
