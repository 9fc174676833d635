//! Builders shared by the tests: instants on one day, slots, attempts, and a minimal store.

use chrono::{DateTime, TimeZone, Utc};
use datadiff_diff_core::attempt::{CheckId, RunId, RunStatus};
use datadiff_watermark::{Error, FinishedAttempt, Method, Outcome, Slot, SlotWrite, Transition, WatermarkState};
use uuid::Uuid;

pub(crate) const CHECK: CheckId = CheckId::new(Uuid::from_u128(0xc0ffee));

/// 2026-07-22 at `hour`:`minute` UTC.
pub(crate) fn at(hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
}

/// 2026-07-22 at `hour`:00 UTC.
pub(crate) fn h(hour: u32) -> DateTime<Utc> {
    at(hour, 0)
}

/// 0001-01-01T00:00:00Z, PipelineWise's `datetime.min`.
pub(crate) fn year_one() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap()
}

/// A run id that reads well in failure output: `00000000-0000-0000-0000-0000000000<n>`.
pub(crate) fn run(n: u128) -> RunId {
    RunId::new(Uuid::from_u128(n))
}

/// An attempt of the slot that ends at `end` (the slot is scheduled at the window end).
pub(crate) fn attempt(
    n: u128,
    start: Option<DateTime<Utc>>,
    end: DateTime<Utc>,
    number: i32,
    status: RunStatus,
) -> FinishedAttempt {
    FinishedAttempt {
        run_id: run(n),
        scheduled_for: end,
        attempt: number,
        window_start: start,
        window_end: end,
        status,
    }
}

/// Attempt 1 of an hourly-window slot `[start, end)` scheduled at `end`.
pub(crate) fn first(n: u128, start: u32, end: u32, status: RunStatus) -> FinishedAttempt {
    attempt(n, Some(h(start)), h(end), 1, status)
}

/// A slot row scheduled at its window end.
pub(crate) fn slot(n: u128, start: DateTime<Utc>, end: DateTime<Utc>, status: RunStatus) -> Slot {
    Slot { scheduled_for: end, window_start: Some(start), window_end: end, status, run_id: run(n), attempt: 1 }
}

/// A store of slot rows and the watermark state, performing the finish transaction as
/// `datadiff-backend-store` will: read, plan, upsert, read the slots if needed, apply.
#[derive(Debug, Clone, Default)]
pub(crate) struct Store {
    pub(crate) metadata_only: bool,
    pub(crate) slots: Vec<Slot>,
    pub(crate) state: Option<WatermarkState>,
    pub(crate) events: Vec<datadiff_watermark::WatermarkEvent>,
}

/// What one finish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finished {
    pub(crate) slot_write: SlotWrite,
    pub(crate) method: Method,
    pub(crate) outcome: Outcome,
}

impl Store {
    pub(crate) fn metadata_only() -> Store {
        Store { metadata_only: true, ..Store::default() }
    }

    /// Finishes `attempt` at `recorded_at`; `None` for DEFERRED.
    pub(crate) fn finish(
        &mut self,
        attempt: FinishedAttempt,
        recorded_at: DateTime<Utc>,
    ) -> Result<Option<Finished>, Error> {
        let scheduled_for = attempt.scheduled_for;
        let transition = Transition {
            check_id: CHECK,
            metadata_only: self.metadata_only,
            previous: self.state.clone(),
            existing_slot: self.slots.iter().find(|slot| slot.scheduled_for == scheduled_for).cloned(),
            has_later_slot: self.slots.iter().any(|slot| slot.scheduled_for > scheduled_for),
            attempt,
        };
        let Some(evaluation) = transition.plan()? else { return Ok(None) };
        let (slot_write, method) = (evaluation.slot_write(), evaluation.method());
        if slot_write.changes_slot() {
            self.slots.retain(|slot| slot.scheduled_for != scheduled_for);
            self.slots.push(evaluation.slot().clone());
        }
        let loaded = if evaluation.needs_effective_slots() { self.slots.clone() } else { Vec::new() };
        let event_id = Uuid::from_u128(0xe000 + self.events.len() as u128);
        let outcome = evaluation.apply(&loaded, recorded_at, event_id)?;
        self.state = Some(outcome.state.clone());
        self.events.push(outcome.event.clone());
        Ok(Some(Finished { slot_write, method, outcome }))
    }

    /// Finishes and returns the outcome, failing the test on DEFERRED or an error.
    pub(crate) fn evaluate(&mut self, attempt: FinishedAttempt) -> Finished {
        let recorded_at = attempt.window_end;
        match self.finish(attempt, recorded_at) {
            Ok(Some(finished)) => finished,
            other => panic!("expected an evaluation, got {other:?}"),
        }
    }
}
