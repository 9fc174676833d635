//! One coverage transition: what the store writes when an attempt finishes or is swept.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::CheckId;
use uuid::Uuid;

use crate::coverage::{Coverage, advance, recompute};
use crate::error::Error;
use crate::event::{WatermarkEvent, event_type};
use crate::slot::{FinishedAttempt, Slot, SlotWrite};
use crate::state::WatermarkState;

/// What the store knows inside its finish (or sweep) transaction, after taking the coverage
/// lock and before upserting the slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The check definition of the attempt.
    pub check_id: CheckId,
    /// Whether the definition has no data check (only `schema_compatibility`).
    pub metadata_only: bool,
    /// The `dd_watermark_state` row, read `FOR UPDATE`, if there is one.
    pub previous: Option<WatermarkState>,
    /// The `dd_run_slot_state` row of the attempt's slot, read `FOR UPDATE` before the upsert.
    pub existing_slot: Option<Slot>,
    /// Whether a slot row with a later `scheduled_for` exists for the check.
    pub has_later_slot: bool,
    /// The attempt being finished.
    pub attempt: FinishedAttempt,
}

/// How the new coverage is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// [`advance`] the previous coverage by the new slot: an in-order append.
    Incremental,
    /// Keep the previous coverage: the upsert changed no slot.
    Copy,
    /// [`recompute`] from every effective slot of the check, read after the upsert.
    Recompute,
}

/// A planned evaluation of one PASS, FAIL or ERROR attempt: upsert [`Evaluation::slot`] as
/// [`Evaluation::slot_write`] says, then [`Evaluation::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    check_id: CheckId,
    metadata_only: bool,
    previous: Option<WatermarkState>,
    slot: Slot,
    slot_write: SlotWrite,
    method: Method,
}

/// The rows an evaluation writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The new `dd_watermark_state` row (insert or update).
    pub state: WatermarkState,
    /// The new `dd_watermark_events` row.
    pub event: WatermarkEvent,
}

impl Transition {
    /// Validates the inputs and decides the slot write and the method, as upstream does:
    ///
    /// * DEFERRED → `None`: no slot row, no state and no event are written.
    /// * **incremental** when the slot had no row (so the upsert inserts it), a previous state
    ///   with bounds exists (CONTIGUOUS or BLOCKED, metadata-only or not), no later slot
    ///   exists, and the attempt has a resolved start at or after `verified_start`;
    /// * **copy** when the upsert changes nothing (the attempt number is not greater than the
    ///   slot's) and a previous state exists;
    /// * **recompute** otherwise: the first evaluation, retries, remediations and forced
    ///   reruns (which replace a slot row), out-of-order slots, unresolved starts, and a
    ///   rolling window starting before the historical start.
    pub fn plan(self) -> Result<Option<Evaluation>, Error> {
        let Some(slot) = self.attempt.slot()? else { return Ok(None) };
        if let Some(previous) = &self.previous {
            if previous.check_id != self.check_id {
                return Err(Error::CheckMismatch { expected: self.check_id, found: previous.check_id });
            }
            if let Some(violation) = previous.violation() {
                return Err(Error::InvalidCoverage(violation));
            }
        }
        if let Some(existing) = &self.existing_slot {
            existing.validate()?;
            if existing.scheduled_for != slot.scheduled_for {
                return Err(Error::SlotMismatch {
                    run_id: slot.run_id,
                    expected: slot.scheduled_for,
                    found: existing.scheduled_for,
                });
            }
        }

        let slot_write = SlotWrite::of(self.existing_slot.as_ref(), &slot);
        // Upstream's condition, BLOCKED and metadata-only coverage included (the crate docs
        // name the two cases where the incremental rule then disagrees with a recomputation).
        let previous_bounds = self.previous.as_ref().and_then(|previous| previous.coverage.verified);
        let appends = match (previous_bounds, slot.window_start) {
            (Some(previous), Some(start)) => start >= previous.start,
            _ => false,
        };
        let method = if slot_write == SlotWrite::Insert && appends && !self.has_later_slot {
            Method::Incremental
        } else if !slot_write.changes_slot() && self.previous.is_some() {
            Method::Copy
        } else {
            Method::Recompute
        };
        Ok(Some(Evaluation {
            check_id: self.check_id,
            metadata_only: self.metadata_only,
            previous: self.previous,
            slot,
            slot_write,
            method,
        }))
    }
}

impl Evaluation {
    /// The slot row the attempt writes (when [`slot_write`](Self::slot_write) changes it).
    pub fn slot(&self) -> &Slot {
        &self.slot
    }

    /// Insert, replace, or keep the slot row: the store's upsert must do the same
    /// (`ON CONFLICT ... DO UPDATE ... WHERE` the new attempt is greater).
    pub fn slot_write(&self) -> SlotWrite {
        self.slot_write
    }

    /// How the coverage will be obtained.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Whether [`apply`](Self::apply) needs every effective slot of the check, read after
    /// the upsert; otherwise it ignores them and `&[]` will do.
    pub fn needs_effective_slots(&self) -> bool {
        self.method == Method::Recompute
    }

    /// Computes the new state and event rows. `effective_slots` are all slot rows of the
    /// check after the upsert (only read for [`Method::Recompute`]); `recorded_at` is the
    /// attempt's `finished_at` or the sweep time; `watermark_event_id` is a fresh id.
    pub fn apply(
        self,
        effective_slots: &[Slot],
        recorded_at: DateTime<Utc>,
        watermark_event_id: Uuid,
    ) -> Result<Outcome, Error> {
        let previous_coverage = self.previous.as_ref().map(|previous| &previous.coverage);
        let coverage = match (self.method, previous_coverage) {
            (Method::Incremental, Some(previous)) => advance(previous, &self.slot, self.metadata_only)?,
            (Method::Copy, Some(previous)) => previous.clone(),
            _ => self.recompute(effective_slots)?,
        };
        let state_version = match &self.previous {
            None => 1,
            Some(previous) => previous
                .state_version
                .checked_add(1)
                .ok_or(Error::StateVersionOverflow { version: previous.state_version })?,
        };
        let event_type = event_type(previous_coverage, &coverage);
        let event = WatermarkEvent {
            watermark_event_id,
            check_id: self.check_id,
            evaluated_run_id: self.slot.run_id,
            event_type,
            previous_verified_end: previous_coverage.and_then(Coverage::verified_end),
            coverage: coverage.clone(),
            recorded_at,
        };
        let state = WatermarkState {
            check_id: self.check_id,
            coverage,
            last_evaluated_run_id: self.slot.run_id,
            event_type,
            state_version,
            updated_at: recorded_at,
        };
        Ok(Outcome { state, event })
    }

    /// Recomputes after checking that the slots were read after the upsert: the attempt's
    /// slot must be there, as written when the upsert changed it.
    fn recompute(&self, effective_slots: &[Slot]) -> Result<Coverage, Error> {
        let written = effective_slots.iter().find(|slot| slot.scheduled_for == self.slot.scheduled_for);
        let consistent = match written {
            Some(written) if self.slot_write.changes_slot() => written == &self.slot,
            Some(_) => true,
            None => false,
        };
        if !consistent {
            return Err(Error::MissingEvaluatedSlot { run_id: self.slot.run_id });
        }
        recompute(effective_slots, self.metadata_only)
    }
}
