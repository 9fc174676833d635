//! The attempts a process is executing right now, so that something outside them (a signal
//! handler, a shutdown path) can stop them and record them as ERROR before the process exits
//! (runs note §3.6; the handlers themselves arrive with the scheduler).
//!
//! Each executing attempt registers its run id and check id, and the cancel handles of its
//! source and target sessions once they are open. [`InFlight::interrupt_all`] marks every
//! registered attempt interrupted and cancels its running statements; an interrupted attempt
//! then stops at its next step **without** finishing (its execution returns
//! [`Error::Interrupted`](crate::Error::Interrupted)), leaving the attempt RUNNING for the
//! interrupter, which records it with [`record_interrupted`](crate::record_interrupted). The
//! backend's lease check (a finish only succeeds while the attempt is RUNNING) makes the two
//! paths exclusive even if they race.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use datadiff_diff_core::attempt::{CheckId, RunId};

use datadiff_access::AnyCanceller;

/// One attempt being executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlightAttempt {
    /// The attempt.
    pub run_id: RunId,
    /// Its definition revision.
    pub check_id: CheckId,
}

struct Entry {
    attempt: InFlightAttempt,
    interrupted: Arc<AtomicBool>,
    cancellers: Vec<AnyCanceller>,
}

/// A registry of executing attempts, shared by clones (one per process, handed to every
/// execution through [`ExecutionOptions`](crate::ExecutionOptions)).
///
/// ```
/// use datadiff_runner::InFlight;
///
/// let in_flight = InFlight::new();
/// assert!(in_flight.attempts().is_empty());
/// in_flight.interrupt_all(); // nothing running: nothing to do
/// ```
#[derive(Clone, Default)]
pub struct InFlight {
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight").field("attempts", &self.attempts()).finish()
    }
}

impl InFlight {
    /// An empty registry.
    pub fn new() -> InFlight {
        InFlight::default()
    }

    /// The attempts executing now.
    pub fn attempts(&self) -> Vec<InFlightAttempt> {
        self.lock().iter().map(|entry| entry.attempt).collect()
    }

    /// Marks every executing attempt interrupted and cancels their running statements. Each
    /// stops at its next step, leaving its attempt RUNNING for the caller to record.
    pub fn interrupt_all(&self) {
        for entry in self.lock().iter() {
            entry.interrupted.store(true, Ordering::SeqCst);
            for canceller in &entry.cancellers {
                canceller.cancel();
            }
        }
    }

    /// Registers an attempt until the returned guard is dropped.
    pub(crate) fn register(&self, attempt: InFlightAttempt) -> Registration {
        let interrupted = Arc::new(AtomicBool::new(false));
        self.lock().push(Entry { attempt, interrupted: Arc::clone(&interrupted), cancellers: Vec::new() });
        Registration { registry: Some(self.clone()), run_id: attempt.run_id, interrupted }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        // A panic while holding the lock leaves a consistent Vec: keep using it.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An attempt's place in an [`InFlight`] registry (or none); removes itself when dropped.
pub(crate) struct Registration {
    registry: Option<InFlight>,
    run_id: RunId,
    interrupted: Arc<AtomicBool>,
}

impl Registration {
    /// For an execution without a registry: never interrupted.
    pub(crate) fn none(run_id: RunId) -> Registration {
        Registration { registry: None, run_id, interrupted: Arc::new(AtomicBool::new(false)) }
    }

    /// Whether the attempt was interrupted.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Adds the cancel handle of an open session; cancels at once when already interrupted.
    pub(crate) fn add_canceller(&self, canceller: AnyCanceller) {
        let Some(registry) = &self.registry else { return };
        let mut entries = registry.lock();
        if self.interrupted() {
            canceller.cancel();
        }
        if let Some(entry) = entries.iter_mut().find(|entry| entry.attempt.run_id == self.run_id) {
            entry.cancellers.push(canceller);
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(registry) = &self.registry {
            registry.lock().retain(|entry| entry.attempt.run_id != self.run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn attempt(n: u128) -> InFlightAttempt {
        InFlightAttempt { run_id: RunId::new(Uuid::from_u128(n)), check_id: CheckId::new(Uuid::from_u128(100 + n)) }
    }

    #[test]
    fn registrations_are_listed_until_dropped_and_interrupts_reach_them() {
        let in_flight = InFlight::new();
        let first = in_flight.register(attempt(1));
        let second = in_flight.clone().register(attempt(2));
        assert_eq!(in_flight.attempts(), [attempt(1), attempt(2)]);
        assert!(!first.interrupted());
        in_flight.interrupt_all();
        assert!(first.interrupted() && second.interrupted());
        drop(first);
        assert_eq!(in_flight.attempts(), [attempt(2)]);
        let later = in_flight.register(attempt(3));
        assert!(!later.interrupted(), "an interrupt does not reach attempts registered after it");
        drop((second, later));
        assert!(in_flight.attempts().is_empty());
        assert!(!Registration::none(attempt(4).run_id).interrupted());
    }
}
