//! The audit's client-side deadline: a server that stops answering ends the audit.
//!
//! PostgreSQL bounds every audit statement by its `statement_timeout` (the seed's 15
//! minutes unless `--statement-timeout` says otherwise), so a healthy server answers each
//! step — a catalog read, a count, a whole streamed `COPY` — within it. A server that cannot
//! answer at all (its process frozen, a host paused, packets dropped without a reset) would
//! block the synchronous driver for ever. So the audit runs on a helper thread while the
//! caller watches it: the helper marks each side busy for the step it waits on ([`Watch::busy`],
//! [`Watch::scanning`]); when a side has been busy for longer than the statement timeout
//! plus [`ANSWER_GRACE`] (during the scan: while its reader has not read its whole answer),
//! the caller sends both sides a cancel request and returns [`Error::NoAnswer`], abandoning
//! the helper and its connections, which close when the server answers, when their sockets
//! close, or with the process.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use datadiff_access::stream::StreamStopper;
use datadiff_access::{ANSWER_GRACE, Canceller};

use crate::error::Error;

/// A side of the audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Source,
    Replica,
}

impl Role {
    fn index(self) -> usize {
        match self {
            Role::Source => 0,
            Role::Replica => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::Source => "source",
            Role::Replica => "replica",
        }
    }
}

/// Both sides.
pub(crate) const BOTH: [Role; 2] = [Role::Source, Role::Replica];

/// What one side is waiting for.
#[derive(Debug, Clone)]
struct Busy {
    since: Instant,
    step: &'static str,
    /// During the scan: the side's reader, which says when it has read its whole answer.
    reader: Option<StreamStopper>,
}

/// What the audit's helper thread waits for, per side, and how to cancel it.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    busy: [Mutex<Option<Busy>>; 2],
    cancellers: [OnceLock<Canceller>; 2],
}

/// Clears the sides a step marked busy when it ends (dropped).
pub(crate) struct BusyGuard<'a> {
    watch: &'a Watch,
    roles: Vec<Role>,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        for role in &self.roles {
            *self.watch.slot(*role) = None;
        }
    }
}

impl Watch {
    fn slot(&self, role: Role) -> std::sync::MutexGuard<'_, Option<Busy>> {
        self.busy[role.index()].lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers how to cancel `role`'s session.
    pub(crate) fn set_canceller(&self, role: Role, canceller: Canceller) {
        let _ = self.cancellers[role.index()].set(canceller);
    }

    /// Marks `roles` busy with `step` until the guard is dropped.
    pub(crate) fn busy(&self, step: &'static str, roles: &[Role]) -> BusyGuard<'_> {
        let since = Instant::now();
        for role in roles {
            *self.slot(*role) = Some(Busy { since, step, reader: None });
        }
        BusyGuard { watch: self, roles: roles.to_vec() }
    }

    /// Marks both sides busy with the scan, each until its reader has read its whole answer.
    pub(crate) fn scanning(&self, source: StreamStopper, replica: StreamStopper) -> BusyGuard<'_> {
        let since = Instant::now();
        for (role, reader) in [(Role::Source, source), (Role::Replica, replica)] {
            *self.slot(role) = Some(Busy { since, step: "scanning", reader: Some(reader) });
        }
        BusyGuard { watch: self, roles: BOTH.to_vec() }
    }

    /// The sides waiting longer than `deadline` for their server, with the step, if any.
    pub(crate) fn overdue(&self, deadline: Duration) -> Option<(Vec<Role>, &'static str)> {
        let mut late = Vec::new();
        let mut step = "";
        for role in BOTH {
            let busy = self.slot(role).clone();
            if let Some(busy) = busy {
                let waiting = busy.reader.as_ref().is_none_or(|reader| !reader.reader_completed());
                if waiting && busy.since.elapsed() > deadline {
                    late.push(role);
                    step = busy.step;
                }
            }
        }
        (!late.is_empty()).then_some((late, step))
    }

    /// Sends both sessions a cancel request, each from a thread of its own (a cancel
    /// request opens a connection, which may hang as well); best effort.
    pub(crate) fn cancel(&self) {
        for canceller in self.cancellers.iter().filter_map(OnceLock::get) {
            let canceller = canceller.clone();
            let _ =
                std::thread::Builder::new().name("datadiff-audit-cancel".to_owned()).spawn(move || canceller.cancel());
        }
    }
}

/// The error of sides that did not answer `step` within `statement_timeout` plus the grace.
pub(crate) fn no_answer(roles: &[Role], step: &'static str, statement_timeout: Duration) -> Error {
    let databases = match roles {
        [role] => format!("the {} database", role.name()),
        _ => "the source and replica databases".to_owned(),
    };
    Error::NoAnswer {
        databases,
        step,
        seconds: statement_timeout.as_secs() + ANSWER_GRACE.as_secs(),
        statement_timeout: statement_timeout.as_secs(),
        grace: ANSWER_GRACE.as_secs(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_is_overdue_only_while_busy_past_the_deadline() {
        let watch = Watch::default();
        assert_eq!(watch.overdue(Duration::ZERO), None, "idle sides are never overdue");
        let guard = watch.busy("counting rows", &[Role::Replica]);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(watch.overdue(Duration::from_secs(60)), None, "within the deadline");
        assert_eq!(watch.overdue(Duration::ZERO), Some((vec![Role::Replica], "counting rows")));
        drop(guard);
        assert_eq!(watch.overdue(Duration::ZERO), None, "a finished step clears its sides");
    }

    #[test]
    fn the_error_names_the_sides_the_step_and_the_deadline() {
        let error = no_answer(&[Role::Replica], "scanning", Duration::from_secs(900));
        assert_eq!(
            error.to_string(),
            "no answer from the replica database within 905 s (statement_timeout 900 s + 5 s grace) while \
             scanning; a cancel request was sent and the connections abandoned"
        );
        let both = no_answer(&BOTH, "reading the catalogs", Duration::from_secs(2)).to_string();
        assert!(both.starts_with("no answer from the source and replica databases within 7 s"), "{both}");
    }
}
