//! Errors of the watermark model. They are data (`Clone`, `PartialEq`) and carry the datum that
//! identifies the problem: the run, the slot, the offending instants.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, RunId, RunStatus};

/// Why an input was refused. Every invalid input is one of these, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A window whose start is not strictly before its end (the `window_start < window_end`
    /// CHECK of attempts and slot rows).
    #[error("run {run_id} has window start {start} not before its end {end}")]
    EmptyWindow {
        /// The run that carries the window.
        run_id: RunId,
        /// The inclusive start.
        start: DateTime<Utc>,
        /// The exclusive end.
        end: DateTime<Utc>,
    },
    /// A PASS or FAIL outcome without a resolved window start: only an ERROR may keep an
    /// unresolved historical start (`ck_dd_run_slot_state_resolved_window`).
    #[error("run {run_id} has status {status} but no resolved window start")]
    UnresolvedStart {
        /// The run.
        run_id: RunId,
        /// Its outcome.
        status: RunStatus,
    },
    /// An attempt number below 1 (`dd_run_slot_state_attempt_check`).
    #[error("run {run_id} has attempt number {attempt}, attempts start at 1")]
    InvalidAttempt {
        /// The run.
        run_id: RunId,
        /// The attempt number given.
        attempt: i32,
    },
    /// Two effective slots for one `scheduled_for`: a slot has exactly one outcome.
    #[error("two outcomes for the slot scheduled for {scheduled_for}")]
    DuplicateSlot {
        /// The slot given twice.
        scheduled_for: DateTime<Utc>,
    },
    /// Two different attempts share one attempt number of one slot
    /// (`UNIQUE (check_id, scheduled_for, attempt)`).
    #[error("attempt {attempt} of the slot scheduled for {scheduled_for} has two outcomes")]
    DuplicateAttempt {
        /// The slot.
        scheduled_for: DateTime<Utc>,
        /// The attempt number given twice.
        attempt: i32,
    },
    /// Coverage of nothing: a recomputation needs at least one effective slot.
    #[error("coverage needs at least one effective slot")]
    NoSlots,
    /// A coverage or state that breaks a CHECK constraint of the watermark tables.
    #[error("invalid watermark: {0}")]
    InvalidCoverage(Violation),
    /// The previous state row belongs to another check definition.
    #[error("the previous watermark state belongs to check {found}, not {expected}")]
    CheckMismatch {
        /// The check being evaluated.
        expected: CheckId,
        /// The check of the state row given.
        found: CheckId,
    },
    /// The existing slot row given is not the run's slot.
    #[error("run {run_id} is scheduled for {expected} but the existing slot row is scheduled for {found}")]
    SlotMismatch {
        /// The run being evaluated.
        run_id: RunId,
        /// The run's `scheduled_for`.
        expected: DateTime<Utc>,
        /// The slot row's `scheduled_for`.
        found: DateTime<Utc>,
    },
    /// [`advance`](crate::advance) was given a slot that is not an in-order append: an
    /// unresolved start on either side, or a run starting before the verified start.
    #[error("run {run_id} is not an in-order append to the verified interval")]
    NotAnAppend {
        /// The run.
        run_id: RunId,
    },
    /// A recomputation was given effective slots without the slot the evaluated run just
    /// wrote (loaded before the upsert, or not at all).
    #[error("the effective slots lack the slot row written by run {run_id}")]
    MissingEvaluatedSlot {
        /// The run being evaluated.
        run_id: RunId,
    },
    /// `state_version` cannot be incremented further.
    #[error("state version {version} cannot be incremented")]
    StateVersionOverflow {
        /// The previous version.
        version: i64,
    },
    /// An attempt still RUNNING given as finished.
    #[error("run {run_id} is still RUNNING: coverage reads finished attempts only")]
    NotFinished {
        /// The run.
        run_id: RunId,
    },
    /// A slot row whose status is not an outcome (PASS, FAIL or ERROR).
    #[error("run {run_id} has slot status {status}, not PASS, FAIL or ERROR")]
    NotAnOutcome {
        /// The run.
        run_id: RunId,
        /// The status given.
        status: RunStatus,
    },
    /// Text that is not one of a vocabulary's database values.
    #[error("unknown {kind} {text:?}")]
    UnknownText {
        /// The vocabulary (`"slot status"`, `"event type"`...).
        kind: &'static str,
        /// The text given.
        text: String,
    },
}

/// Which CHECK constraint of `dd_watermark_state` / `dd_watermark_events` a coverage breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// `verified_start <= verified_end` is false.
    #[error("verified start {start} is after verified end {end}")]
    StartAfterEnd {
        /// The verified start.
        start: DateTime<Utc>,
        /// The verified end.
        end: DateTime<Utc>,
    },
    /// `verified_end <= furthest_observed_end` is false.
    #[error("verified end {end} is after the furthest observed end {furthest}")]
    EndAfterFurthest {
        /// The verified end.
        end: DateTime<Utc>,
        /// The furthest observed end.
        furthest: DateTime<Utc>,
    },
    /// Exactly one of the two verified bounds is NULL.
    #[error("only one verified bound is set")]
    HalfBounds,
    /// Both bounds are NULL but the status is not BLOCKED or there is no blocking run.
    #[error("unresolved bounds need BLOCKED with a blocking run")]
    UnresolvedNotBlocked,
    /// `state_version > 0` is false.
    #[error("state version {0} is not positive")]
    StateVersion(i64),
}
