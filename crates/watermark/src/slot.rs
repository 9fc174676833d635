//! Effective slots: the one outcome per scheduled slot that coverage is computed from, and the
//! slot-state rule that selects it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{RunId, RunStatus};

use crate::error::Error;

/// One terminal attempt of a slot: the columns of `dd_run_attempts` that coverage reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedAttempt {
    /// `run_id`.
    pub run_id: RunId,
    /// The cron slot (`scheduled_for`).
    pub scheduled_for: DateTime<Utc>,
    /// The attempt number within the slot, shared by every trigger type.
    pub attempt: i32,
    /// Inclusive window start; `None` while a historical start is unresolved.
    pub window_start: Option<DateTime<Utc>>,
    /// Exclusive window end.
    pub window_end: DateTime<Utc>,
    /// The terminal status: PASS, FAIL, ERROR or DEFERRED (a RUNNING attempt is not finished
    /// and is refused by [`FinishedAttempt::slot`]).
    pub status: RunStatus,
}

impl FinishedAttempt {
    /// The slot row this attempt would write, validated; `None` for DEFERRED, which writes no
    /// slot row (it says nothing about the data).
    pub fn slot(&self) -> Result<Option<Slot>, Error> {
        let status = match self.status {
            RunStatus::Deferred => return Ok(None),
            RunStatus::Running => return Err(Error::NotFinished { run_id: self.run_id }),
            outcome => outcome,
        };
        let slot = Slot {
            scheduled_for: self.scheduled_for,
            window_start: self.window_start,
            window_end: self.window_end,
            status,
            run_id: self.run_id,
            attempt: self.attempt,
        };
        slot.validate()?;
        Ok(Some(slot))
    }
}

/// An effective slot: a row of `dd_run_slot_state`, the highest-numbered PASS, FAIL or ERROR
/// attempt of one `scheduled_for`.
///
/// Fields are public so that a store can build it from a row; every function of this crate
/// that takes slots checks them with [`Slot::validate`] first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Slot {
    /// The cron slot.
    pub scheduled_for: DateTime<Utc>,
    /// Inclusive window start; `None` only for an ERROR whose historical start is unresolved.
    pub window_start: Option<DateTime<Utc>>,
    /// Exclusive window end.
    pub window_end: DateTime<Utc>,
    /// The outcome: PASS, FAIL or ERROR ([`Slot::validate`] refuses another status).
    pub status: RunStatus,
    /// The attempt that recorded the outcome.
    pub run_id: RunId,
    /// Its attempt number (at least 1).
    pub attempt: i32,
}

impl Slot {
    /// Checks the constraints of a slot row: `window_start < window_end`, a NULL start only
    /// for ERROR, and an attempt number of at least 1.
    pub fn validate(&self) -> Result<(), Error> {
        if !self.status.is_outcome() {
            return Err(Error::NotAnOutcome { run_id: self.run_id, status: self.status });
        }
        if self.attempt < 1 {
            return Err(Error::InvalidAttempt { run_id: self.run_id, attempt: self.attempt });
        }
        match self.window_start {
            Some(start) if start >= self.window_end => {
                Err(Error::EmptyWindow { run_id: self.run_id, start, end: self.window_end })
            }
            None if self.status != RunStatus::Error => {
                Err(Error::UnresolvedStart { run_id: self.run_id, status: self.status })
            }
            _ => Ok(()),
        }
    }
}

/// What the slot-state upsert does with an incoming outcome: the rule that a higher attempt
/// replaces the slot's outcome and anything else leaves it alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotWrite {
    /// The slot had no row: the outcome is inserted.
    Insert,
    /// The incoming attempt number is greater than the recorded one: it replaces the row.
    Replace,
    /// The incoming attempt number is not greater: the row stays as it is (a late or duplicate
    /// completion).
    Keep,
}

impl SlotWrite {
    /// Applies the rule to the slot row read before the upsert (if any) and the incoming one.
    pub fn of(existing: Option<&Slot>, incoming: &Slot) -> SlotWrite {
        match existing {
            None => SlotWrite::Insert,
            Some(existing) if incoming.attempt > existing.attempt => SlotWrite::Replace,
            Some(_) => SlotWrite::Keep,
        }
    }

    /// Whether the upsert changes the slot row.
    pub fn changes_slot(self) -> bool {
        !matches!(self, SlotWrite::Keep)
    }
}

/// The effective slots of a history of terminal attempts, ordered by `scheduled_for`: per slot,
/// the highest-numbered PASS/FAIL/ERROR attempt; DEFERRED attempts are ignored.
///
/// The result does not depend on the order of `attempts` (the slot-state rule is a maximum).
/// The same attempt given twice is harmless; two different attempts with one number in one
/// slot are [`Error::DuplicateAttempt`].
pub fn effective_slots<'a>(attempts: impl IntoIterator<Item = &'a FinishedAttempt>) -> Result<Vec<Slot>, Error> {
    let mut seen: BTreeMap<(DateTime<Utc>, i32), &FinishedAttempt> = BTreeMap::new();
    let mut slots: BTreeMap<DateTime<Utc>, Slot> = BTreeMap::new();
    for attempt in attempts {
        if let Some(other) = seen.insert((attempt.scheduled_for, attempt.attempt), attempt) {
            if other != attempt {
                return Err(Error::DuplicateAttempt { scheduled_for: attempt.scheduled_for, attempt: attempt.attempt });
            }
            continue;
        }
        let Some(slot) = attempt.slot()? else { continue };
        let existing = slots.get(&slot.scheduled_for);
        if SlotWrite::of(existing, &slot).changes_slot() {
            slots.insert(slot.scheduled_for, slot);
        }
    }
    Ok(slots.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, 0, 0).single().unwrap_or_default()
    }

    fn attempt(n: i32, status: RunStatus) -> FinishedAttempt {
        FinishedAttempt {
            run_id: RunId::new(uuid::Uuid::from_u128(n as u128)),
            scheduled_for: at(13),
            attempt: n,
            window_start: Some(at(12)),
            window_end: at(13),
            status,
        }
    }

    #[test]
    fn a_running_attempt_is_not_finished_and_a_deferred_one_writes_no_slot() {
        let mut running = attempt(1, RunStatus::Running);
        assert!(matches!(running.slot(), Err(Error::NotFinished { .. })));
        running.status = RunStatus::Deferred;
        assert_eq!(running.slot(), Ok(None));
        let slot = Slot { status: RunStatus::Deferred, ..attempt(1, RunStatus::Pass).slot().unwrap().unwrap() };
        assert!(matches!(slot.validate(), Err(Error::NotAnOutcome { status: RunStatus::Deferred, .. })));
    }

    #[test]
    fn a_higher_attempt_replaces_and_a_lower_or_equal_one_keeps() {
        let first = attempt(1, RunStatus::Fail).slot().ok().flatten();
        let second = attempt(2, RunStatus::Pass).slot().ok().flatten();
        let (Some(first), Some(second)) = (first, second) else { panic!("valid slots") };
        assert_eq!(SlotWrite::of(None, &first), SlotWrite::Insert);
        assert_eq!(SlotWrite::of(Some(&first), &second), SlotWrite::Replace);
        assert_eq!(SlotWrite::of(Some(&second), &first), SlotWrite::Keep);
        assert_eq!(SlotWrite::of(Some(&second), &second), SlotWrite::Keep);
        assert!(!SlotWrite::Keep.changes_slot());
    }

    #[test]
    fn deferred_writes_no_slot_and_never_wins() {
        assert_eq!(attempt(3, RunStatus::Deferred).slot(), Ok(None));
        let history = [attempt(1, RunStatus::Fail), attempt(2, RunStatus::Deferred)];
        let slots = effective_slots(&history).unwrap_or_default();
        assert_eq!(slots.len(), 1);
        assert_eq!((slots[0].attempt, slots[0].status), (1, RunStatus::Fail));
    }

    #[test]
    fn effective_slots_ignore_the_order_of_attempts() {
        let forward = [attempt(1, RunStatus::Fail), attempt(2, RunStatus::Pass)];
        let backward = [attempt(2, RunStatus::Pass), attempt(1, RunStatus::Fail)];
        let expected = effective_slots(&forward);
        assert_eq!(expected.as_ref().map(|slots| slots[0].status), Ok(RunStatus::Pass));
        assert_eq!(effective_slots(&backward), expected);
    }

    #[test]
    fn two_outcomes_for_one_attempt_number_are_an_error() {
        let pass = attempt(1, RunStatus::Pass);
        let mut fail = attempt(1, RunStatus::Fail);
        fail.run_id = RunId::new(uuid::Uuid::from_u128(99));
        assert_eq!(effective_slots([&pass, &fail]), Err(Error::DuplicateAttempt { scheduled_for: at(13), attempt: 1 }));
        assert_eq!(effective_slots([&pass, &pass]).map(|slots| slots.len()), Ok(1));
    }

    #[test]
    fn invalid_slot_rows_are_typed_errors() {
        let mut empty = attempt(1, RunStatus::Pass);
        empty.window_start = Some(at(13));
        assert_eq!(empty.slot(), Err(Error::EmptyWindow { run_id: empty.run_id, start: at(13), end: at(13) }));
        let mut unresolved = attempt(1, RunStatus::Pass);
        unresolved.window_start = None;
        assert_eq!(
            unresolved.slot(),
            Err(Error::UnresolvedStart { run_id: unresolved.run_id, status: RunStatus::Pass })
        );
        unresolved.status = RunStatus::Error;
        assert!(matches!(unresolved.slot(), Ok(Some(_))));
        let zero = attempt(0, RunStatus::Fail);
        assert_eq!(zero.slot(), Err(Error::InvalidAttempt { run_id: zero.run_id, attempt: 0 }));
    }
}
