//! The verified watermark of a check definition, computed exactly as PipelineWise's data-diff
//! computes it: which contiguous interval of its timestamp column is proven equal between
//! source and target, what blocks it, and how far checks have looked.
//!
//! # Overview
//!
//! * [`Slot`]: an effective slot, the one PASS / FAIL / ERROR outcome kept per cron slot
//!   (`dd_run_slot_state`). [`FinishedAttempt`] is a terminal attempt; [`SlotWrite`] is the
//!   slot-state rule (a higher attempt number replaces the outcome, DEFERRED writes nothing)
//!   and [`effective_slots`] applies it to a whole history.
//! * [`Coverage`]: the verified interval (or none while a historical start is unresolved),
//!   the furthest observed end, CONTIGUOUS / BLOCKED, the blocking run and the [`Reason`].
//!   [`recompute`] derives it from the effective slots; [`advance`] moves it by one appended
//!   slot.
//! * [`WatermarkState`] and [`WatermarkEvent`]: the `dd_watermark_state` row and the
//!   `dd_watermark_events` row (without the store's `event_sequence`); [`event_type`] names
//!   each change.
//! * [`Transition`]: what the store knows in its finish or sweep transaction.
//!   [`Transition::plan`] chooses the slot write and the [`Method`] (incremental, copy or
//!   recompute); [`Evaluation::apply`] returns the state and event rows to write.
//!
//! # The model, on a timeline
//!
//! An hourly check whose windows are the hour before each slot (SPEC §6, the example of
//! PipelineWise's docs). Each row is one evaluated attempt; `b'` is the remediation of `b`
//! (attempt 2 of the 12:00 slot).
//!
//! | run | slot  | window          | outcome | method      | verified        | status, blocker   | event      | version |
//! |-----|-------|-----------------|---------|-------------|-----------------|-------------------|------------|---------|
//! | a   | 11:00 | [10:00, 11:00)  | PASS    | recompute   | [10:00, 11:00)  | CONTIGUOUS        | INITIALIZE | 1       |
//! | b   | 12:00 | [11:00, 12:00)  | FAIL    | incremental | [10:00, 11:00)  | BLOCKED, b        | BLOCK      | 2       |
//! | c   | 13:00 | [12:00, 13:00)  | PASS    | recompute   | [10:00, 11:00)  | BLOCKED, b (kept) | BLOCK      | 3       |
//! | b'  | 12:00 | [11:00, 12:00)  | PASS    | recompute   | [10:00, 13:00)  | CONTIGUOUS        | ADVANCE    | 4       |
//!
//! A later pass never carries the watermark over an earlier failure or gap: `c` only moves
//! the furthest observed end. The remediation replaces `b`'s slot outcome (higher attempt),
//! so the coverage is recomputed from the effective slots and the union of passing windows
//! now reaches 13:00. Had `b` been a pass and a later forced rerun of its slot failed, the
//! end would be pulled back to 11:00 (INVALIDATE): the earliest non-PASS start is a barrier.
//!
//! The rules, in full:
//!
//! * **Recomputation** ([`recompute`]): an unresolved start anywhere → no bounds, BLOCKED,
//!   blocked by the first such slot; otherwise the interval starts at the earliest start of
//!   any slot, extends over overlapping or adjacent PASS windows, stops at a gap, and is
//!   pulled back to the start of the earliest non-PASS slot once it reaches it; CONTIGUOUS
//!   iff it reaches the furthest observed end. Metadata-only definitions never advance.
//! * **Incremental** ([`advance`]): for an append in window order, a CONTIGUOUS coverage is
//!   extended by a PASS or cut at a FAIL/ERROR; a BLOCKED one only records the new furthest
//!   end.
//! * **Choice** ([`Transition::plan`]): incremental for a new slot row after every other with
//!   a start at or after the verified start, when the previous coverage is CONTIGUOUS and the
//!   definition has a data check; copy when the upsert changed nothing; recompute otherwise.
//! * **Events** ([`event_type`]): INITIALIZE, then ADVANCE / INVALIDATE by the verified end,
//!   else BLOCK or CONFIRM; `state_version` rises by one per evaluated attempt.
//!
//! # Example: the store's finish transaction
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use datadiff_diff_core::attempt::{CheckId, RunId, RunStatus};
//! use datadiff_watermark::{EventType, FinishedAttempt, Method, SlotWrite, Transition, VerifiedStatus};
//! use uuid::Uuid;
//!
//! let hour = |h| Utc.with_ymd_and_hms(2026, 7, 22, h, 0, 0).unwrap();
//! let check_id = CheckId::new(Uuid::from_u128(7));
//! let attempt = FinishedAttempt {
//!     run_id: RunId::new(Uuid::from_u128(1)),
//!     scheduled_for: hour(11),
//!     attempt: 1,
//!     window_start: Some(hour(10)),
//!     window_end: hour(11),
//!     status: RunStatus::Pass,
//! };
//! // Read under the coverage lock: no state row, no slot row, no later slot.
//! let transition = Transition {
//!     check_id,
//!     metadata_only: false,
//!     previous: None,
//!     existing_slot: None,
//!     has_later_slot: false,
//!     attempt,
//! };
//! let evaluation = transition.plan()?.expect("a PASS is evaluated (only DEFERRED is not)");
//! assert_eq!(evaluation.slot_write(), SlotWrite::Insert); // upsert evaluation.slot()
//! assert_eq!(evaluation.method(), Method::Recompute); // the first evaluation
//! // The store reads every slot row of the check after its upsert; here only the new one.
//! let slots = vec![evaluation.slot().clone()];
//! let outcome = evaluation.apply(&slots, hour(11), Uuid::from_u128(100))?;
//! assert_eq!(outcome.state.state_version, 1);
//! assert_eq!(outcome.event.event_type, EventType::Initialize);
//! assert_eq!(outcome.state.coverage.verified_end(), Some(hour(11)));
//! assert_eq!(outcome.state.coverage.status, VerifiedStatus::Contiguous);
//! # Ok::<(), datadiff_watermark::Error>(())
//! ```
//!
//! # Decisions where the sources are silent
//!
//! * **Barrier ties.** Non-PASS slots with the same start are ordered by end, then by
//!   `scheduled_for` (upstream sorts stably a list read in slot order).
//! * **Upstream's incremental path, quirks included.** [`Transition::plan`] takes the
//!   incremental path ([`advance`]) exactly where PipelineWise's store does — any previous
//!   state with bounds, CONTIGUOUS or BLOCKED, metadata-only or not — so that a backend holds
//!   the same rows whichever tool ran. There upstream's rule can disagree with a
//!   recomputation, and we write what upstream writes:
//!   * **metadata-only** definitions: the incremental rule writes `blocking_run_id` NULL,
//!     while a recomputation names a failure found at the verified start. A schema-only
//!     definition whose slot FAILs is BLOCKED by that run (the first evaluation recomputes);
//!     the next in-order slot clears the blocker, whatever its status; a retry, remediation,
//!     forced or out-of-order slot recomputes and names it again.
//!   * **BLOCKED** coverage: the incremental rule keeps the bounds, the blocker and the
//!     reason, growing only `furthest_observed_end`, even where a recomputation would move
//!     them.
//!
//!   SPEC §6's "incremental equals recompute" holds for every other in-order append (a
//!   CONTIGUOUS previous state of a definition with a data check); the property tests model
//!   the two quirks as upstream's rule rather than skip them.
//! * **Copy.** When the upsert changes nothing (a late or duplicate completion of a lower
//!   attempt), the coverage is kept but the attempt is still evaluated: a new event
//!   (BLOCK or CONFIRM), `last_evaluated_run_id` = that run, `state_version` + 1.
//! * **Equal attempt numbers** keep the existing slot row (the upsert updates only on a
//!   greater number). The "did the upsert change the slot" fact is derived from the existing
//!   slot row, so the store cannot pass an inconsistent pair.
//! * **Guards.** [`Evaluation::apply`] refuses a recomputation whose slots lack the row the
//!   attempt just wrote (read before the upsert), and an empty recomputation is an error
//!   (upstream returns an empty result there, which its caller never reaches).
//! * **Ids** are the pure layer's newtypes, `datadiff_diff_core::{CheckId, RunId}`, so a run
//!   id can never pass for a check id; only the event's own id is a plain [`uuid::Uuid`].
//!   Reasons print them lowercase hyphenated, as PostgreSQL and upstream do.
//!
//! # Tests
//!
//! Example tests pin every rule and reason text, SPEC §6's example and the coverage cases
//! of upstream's tests; property tests (proptest, `proptest-state-machine`) check that
//! incremental equals recompute for in-order appends, that recompute depends only on the
//! effective slots, the CHECK invariants and `state_version` after every step. The
//! committed default is proptest's 256 cases per property (about two seconds in a debug
//! build); locally every property, the state machine included (histories of up to 40
//! steps), passed with `PROPTEST_CASES=10000` and `PROPTEST_CASES=50000`. Seeds of past
//! failures (from deliberately broken rules) are in `tests/proptest-regressions/`.
//!
//! # What it does not do
//!
//! No I/O, no clock, no randomness: it never touches a database, a file or the current
//! time. Reading and writing the rows, the advisory lock and the transaction are
//! `datadiff-backend-store`'s; `recorded_at` and the event id are arguments.

mod coverage;
mod error;
mod event;
mod reason;
mod slot;
mod state;
mod transition;

pub use coverage::{Coverage, VerifiedInterval, VerifiedStatus, advance, recompute};
pub use error::{Error, Violation};
pub use event::{EventType, WatermarkEvent, event_type};
pub use reason::Reason;
pub use slot::{FinishedAttempt, Slot, SlotWrite, effective_slots};
pub use state::WatermarkState;
pub use transition::{Evaluation, Method, Outcome, Transition};
