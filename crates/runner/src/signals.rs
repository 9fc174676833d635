//! SIGTERM, SIGINT and SIGHUP during an invocation: every in-flight attempt is recorded ERROR
//! before the process exits by the signal (runs note §3.4, §3.6; SPEC §4). SIGHUP (a closed
//! terminal or SSH session) is datadiff's addition: upstream dies by it and leaves the attempt
//! RUNNING for the stale sweep.
//!
//! Upstream installs its handlers around each attempt of its single thread. datadiff runs
//! attempts on `--jobs` threads, with each side's statement on a thread of its own, so the
//! handler itself does nothing but wake a watcher thread (through a pipe: `write` is one of
//! the few things a signal handler may do). The watcher, on any of the three:
//!
//! 1. tells the invocation to start nothing more;
//! 2. interrupts every in-flight attempt ([`InFlight::interrupt_all`]: running statements are
//!    cancelled on the source and target) and records each ERROR with upstream's text,
//!    `Terminated by SIGTERM before the check completed` (or SIGINT), through
//!    [`record_interrupted`] — again for attempts registered meanwhile, until the invocation
//!    has wound down or [`GRACE`] has passed (an attempt still connecting, say);
//! 3. restores the disposition the process had before the invocation and re-raises the
//!    signal, so the process dies by it (exit status "killed by signal 15") — or, when that
//!    disposition does not end the process (an embedding program's own handler), lets the
//!    invocation return normally.
//!
//! A worker whose attempt returns [`Error::Interrupted`] records it too (the attempt may have
//! left the registry before the watcher looked); the backend's lease check makes the two
//! recordings exclusive. An attempt started but not yet registered when the grace ends stays
//! RUNNING until the stale sweep retires it, as upstream's worker threads do.
//!
//! A signal the process was started with ignored (SIGINT in a background job of a
//! non-interactive shell, under `nohup`) stays ignored, as in Python.
//!
//! The handlers are installed only for the duration of a tick or remediation and the
//! previous ones are put back afterwards, so a program calling `tick` in a loop keeps its own
//! behaviour between ticks. One invocation per process may hold them at a time. The only global state is the
//! pipe's descriptor, which a signal handler can reach no other way.
//!
//! Why not `signal-hook`: its registry chains real handlers but cannot put a disposition back
//! (an action unregistered leaves its handler installed, swallowing the signal between ticks)
//! and overrides an inherited `SIG_IGN` — so `nohup datadiff run …` would die by the SIGHUP
//! nohup ignores. Keeping those two promises needs `sigaction` itself.

// The POSIX calls (sigaction, write from the handler, raise) have no safe wrapper in the
// chosen dependencies; each `unsafe` block below is one such call.
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use datadiff_backend_store::Store;
use datadiff_diff_core::attempt::{RunId, Signal};

use crate::clock::Clock;
use crate::error::Error;
use crate::execute::record_interrupted;
use crate::in_flight::{InFlight, InFlightAttempt};

/// How long the watcher waits for an interrupted invocation to wind down (cancelled
/// statements return at once; a connection attempt may take up to its connect timeout)
/// before recording what is still in flight and re-raising anyway.
pub const GRACE: Duration = Duration::from_secs(10);

/// The write end of the wake-up pipe while handlers are installed, else -1.
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// The byte that stops the watcher (no signal is numbered 0).
const STOP: u8 = 0;

/// Whether (and by which signal) an invocation has been told to stop. Shared by the
/// invocation's workers, which start nothing more once it is set.
#[derive(Debug, Default)]
pub(crate) struct Interruption {
    signal: AtomicU8,
}

impl Interruption {
    /// The signal that stopped the invocation, if any.
    pub(crate) fn signal(&self) -> Option<Signal> {
        match i32::from(self.signal.load(Ordering::SeqCst)) {
            libc::SIGTERM => Some(Signal::Term),
            libc::SIGINT => Some(Signal::Int),
            libc::SIGHUP => Some(Signal::Hup),
            _ => None,
        }
    }

    /// Whether the invocation must start nothing more.
    pub(crate) fn is_set(&self) -> bool {
        self.signal().is_some()
    }

    fn set(&self, signal: Signal) {
        self.signal.store(number(signal) as u8, Ordering::SeqCst);
    }
}

/// What the watcher needs to record interrupted attempts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch<'a> {
    /// The backend.
    pub(crate) store: &'a Store,
    /// The invocation's in-flight attempts.
    pub(crate) in_flight: &'a InFlight,
    /// The invocation's clock (`finished_at` of the recorded attempts).
    pub(crate) clock: Clock,
}

fn number(signal: Signal) -> libc::c_int {
    match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Int => libc::SIGINT,
        Signal::Hup => libc::SIGHUP,
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = WAKE.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    let saved = errno::get();
    let byte = u8::try_from(signal).unwrap_or(u8::MAX);
    // SAFETY: `write` is async-signal-safe; the buffer is one valid byte; the descriptor is
    // the pipe's non-blocking write end, open while WAKE holds it.
    unsafe {
        libc::write(fd, std::ptr::from_ref(&byte).cast(), 1);
    }
    errno::set(saved);
}

#[cfg(target_os = "linux")]
mod errno {
    pub(super) fn get() -> libc::c_int {
        // SAFETY: the thread's errno location is always valid.
        unsafe { *libc::__errno_location() }
    }
    pub(super) fn set(value: libc::c_int) {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = value }
    }
}

#[cfg(not(target_os = "linux"))]
mod errno {
    pub(super) fn get() -> libc::c_int {
        0
    }
    pub(super) fn set(_: libc::c_int) {}
}

/// The dispositions the process had before [`guarded`] installed its handlers.
struct Previous {
    term: libc::sigaction,
    int: libc::sigaction,
    hup: libc::sigaction,
}

impl Previous {
    fn of(&self, signal: libc::c_int) -> &libc::sigaction {
        match signal {
            libc::SIGTERM => &self.term,
            libc::SIGHUP => &self.hup,
            _ => &self.int,
        }
    }
}

/// Installs the handler for `signal` and returns the disposition it replaced — unless the
/// signal is ignored: a process started with SIGINT ignored (a background job of a
/// non-interactive shell, `nohup`) keeps ignoring it, as Python (and so PipelineWise) does.
fn install(signal: libc::c_int) -> std::io::Result<libc::sigaction> {
    // SAFETY: zeroed sigaction structs are valid (empty masks, no flags); `sigaction` gets
    // valid pointers; the handler only calls async-signal-safe functions.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if current.sa_sigaction == libc::SIG_IGN {
            return Ok(current);
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &action, &mut previous) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(previous)
    }
}

fn restore(signal: libc::c_int, previous: &libc::sigaction) {
    // SAFETY: `previous` was filled by `sigaction` for this signal.
    unsafe {
        libc::sigaction(signal, previous, std::ptr::null_mut());
    }
}

fn set_nonblocking(writer: &PipeWriter) -> std::io::Result<()> {
    let fd = writer.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Runs `work` with SIGTERM, SIGINT and SIGHUP handled as the module docs say; `interruption` is
/// what `work`'s workers watch. Returns `work`'s value, unless the signal's previous
/// disposition ends the process first.
///
/// [`Error::Signals`] when the handlers cannot be installed, or another invocation of this
/// process holds them.
pub(crate) fn guarded<T>(watch: Watch<'_>, interruption: &Interruption, work: impl FnOnce() -> T) -> Result<T, Error> {
    let signals_error = |source| Error::Signals { source };
    let (reader, writer) = std::io::pipe().map_err(signals_error)?;
    set_nonblocking(&writer).map_err(signals_error)?;
    if WAKE.compare_exchange(-1, writer.as_raw_fd(), Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return Err(Error::Signals {
            source: std::io::Error::other("another invocation of this process is already handling the signals"),
        });
    }
    let term = match install(libc::SIGTERM) {
        Ok(previous) => previous,
        Err(source) => {
            WAKE.store(-1, Ordering::SeqCst);
            return Err(Error::Signals { source });
        }
    };
    let int = match install(libc::SIGINT) {
        Ok(previous) => previous,
        Err(source) => {
            restore(libc::SIGTERM, &term);
            WAKE.store(-1, Ordering::SeqCst);
            return Err(Error::Signals { source });
        }
    };
    let hup = match install(libc::SIGHUP) {
        Ok(previous) => previous,
        Err(source) => {
            restore(libc::SIGTERM, &term);
            restore(libc::SIGINT, &int);
            WAKE.store(-1, Ordering::SeqCst);
            return Err(Error::Signals { source });
        }
    };
    let previous = Previous { term, int, hup };
    let finished = AtomicBool::new(false);
    let value = std::thread::scope(|scope| {
        let watcher = Watcher { watch, interruption, finished: &finished, previous: &previous };
        scope.spawn(move || watcher.run(reader));
        // Whatever `work` does (panics included), the handlers go back and the watcher stops.
        let _ending = Ending { finished: &finished, previous: &previous, writer };
        work()
    });
    Ok(value)
}

/// Puts the previous dispositions back, then stops the watcher: any signal caught before
/// that is already in the pipe, ahead of the stop byte, and gets handled.
struct Ending<'a> {
    finished: &'a AtomicBool,
    previous: &'a Previous,
    writer: PipeWriter,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.finished.store(true, Ordering::SeqCst);
        restore(libc::SIGTERM, &self.previous.term);
        restore(libc::SIGINT, &self.previous.int);
        restore(libc::SIGHUP, &self.previous.hup);
        WAKE.store(-1, Ordering::SeqCst);
        // The pipe holds at most a few bytes: the stop byte always fits.
        let _ = self.writer.write_all(&[STOP]);
    }
}

struct Watcher<'a> {
    watch: Watch<'a>,
    interruption: &'a Interruption,
    finished: &'a AtomicBool,
    previous: &'a Previous,
}

impl Watcher<'_> {
    fn run(self, mut reader: PipeReader) {
        let mut byte = [0_u8];
        loop {
            match reader.read(&mut byte) {
                Ok(0) => return,
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    tracing::error!(%error, "reading the signal pipe failed; signals are no longer handled");
                    return;
                }
            }
            let signal = match i32::from(byte[0]) {
                libc::SIGTERM => Signal::Term,
                libc::SIGINT => Signal::Int,
                libc::SIGHUP => Signal::Hup,
                _ => return,
            };
            self.handle(signal);
        }
    }

    fn handle(&self, signal: Signal) {
        tracing::warn!(signal = signal.name(), "recording in-flight attempts as ERROR before exiting");
        self.interruption.set(signal);
        let mut recorded = HashSet::new();
        let deadline = Instant::now() + GRACE;
        loop {
            let attempts = self.watch.in_flight.attempts();
            self.watch.in_flight.interrupt_all();
            self.record(&attempts, signal, &mut recorded);
            if self.finished.load(Ordering::SeqCst) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.record(&self.watch.in_flight.attempts(), signal, &mut recorded);
        let number = number(signal);
        restore(number, self.previous.of(number));
        // SAFETY: raising a signal at the calling thread.
        unsafe {
            libc::raise(number);
        }
        // Still alive: the previous disposition does not end the process. The invocation
        // returns with its interrupted attempts recorded.
    }

    fn record(&self, attempts: &[InFlightAttempt], signal: Signal, recorded: &mut HashSet<RunId>) {
        for attempt in attempts {
            if recorded.insert(attempt.run_id) {
                record(self.watch, *attempt, signal);
            }
        }
    }
}

/// Records one interrupted attempt ERROR, logging (never propagating) a failure: the process
/// is about to exit, and the stale sweep retires what could not be recorded.
pub(crate) fn record(watch: Watch<'_>, attempt: InFlightAttempt, signal: Signal) {
    match record_interrupted(watch.store, attempt, signal, watch.clock) {
        Ok(true) => tracing::info!(run_id = %attempt.run_id, signal = signal.name(), "recorded the attempt ERROR"),
        Ok(false) => {}
        Err(error) => {
            tracing::error!(run_id = %attempt.run_id, error = %crate::error::chain(&error), "recording an interrupted attempt failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disposition(signal: libc::c_int) -> libc::sighandler_t {
        // SAFETY: reads the disposition into a zeroed struct.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut current);
            current.sa_sigaction
        }
    }

    #[test]
    fn an_ignored_signal_stays_ignored_and_a_default_one_is_handled_then_restored() {
        // SIGINT only: no other test of this binary touches it.
        // SAFETY: standard dispositions for SIGINT.
        let before = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let previous = install(libc::SIGINT).unwrap();
        assert_eq!(disposition(libc::SIGINT), libc::SIG_IGN, "an inherited SIG_IGN is honoured");
        restore(libc::SIGINT, &previous);
        assert_eq!(disposition(libc::SIGINT), libc::SIG_IGN);

        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
        let previous = install(libc::SIGINT).unwrap();
        assert_eq!(disposition(libc::SIGINT), on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t);
        restore(libc::SIGINT, &previous);
        assert_eq!(disposition(libc::SIGINT), libc::SIG_DFL);
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGINT, before) };
    }

    #[test]
    fn an_interruption_remembers_its_signal() {
        let interruption = Interruption::default();
        assert_eq!((interruption.signal(), interruption.is_set()), (None, false));
        interruption.set(Signal::Int);
        assert_eq!(interruption.signal(), Some(Signal::Int));
        interruption.set(Signal::Term);
        assert_eq!((interruption.signal(), interruption.is_set()), (Some(Signal::Term), true));
    }
}
