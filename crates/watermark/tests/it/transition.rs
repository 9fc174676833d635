//! The store transition: the choice of incremental / copy / recompute, state_version, the
//! event row, DEFERRED, and invalid inputs (runs note §4.1, the repository and end-to-end tests).

use datadiff_diff_core::attempt::{CheckId, RunStatus};
use datadiff_watermark::{
    Coverage, Error, EventType, FinishedAttempt, Method, SlotWrite, Transition, VerifiedInterval, VerifiedStatus,
    Violation,
};
use uuid::Uuid;

use crate::support::{CHECK, Store, at, attempt, first, h, run, slot};

#[test]
fn end_to_end_lifecycle_initialize_invalidate_advance_then_append() {
    // Historical first run [03:00, 12:00) passes; a forced rerun of the slot fails; the
    // remediation passes; the next hourly slot is appended.
    let mut store = Store::default();
    let pass = store.evaluate(attempt(1, Some(h(3)), h(12), 1, RunStatus::Pass));
    let forced = store.evaluate(attempt(2, Some(h(3)), h(12), 2, RunStatus::Fail));
    assert_eq!(forced.outcome.state.coverage.verified, Some(VerifiedInterval { start: h(3), end: h(3) }));
    assert_eq!(forced.outcome.state.coverage.status, VerifiedStatus::Blocked);
    assert_eq!(forced.outcome.state.coverage.blocking_run_id, Some(run(2)));
    let remediation = store.evaluate(attempt(3, Some(h(3)), h(12), 3, RunStatus::Pass));
    let next = store.evaluate(first(4, 12, 13, RunStatus::Pass));

    let rows: Vec<_> = [&pass, &forced, &remediation, &next]
        .iter()
        .map(|f| {
            (
                f.method,
                f.outcome.state.event_type,
                f.outcome.state.state_version,
                f.outcome.state.coverage.verified_end(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (Method::Recompute, EventType::Initialize, 1, Some(h(12))),
            (Method::Recompute, EventType::Invalidate, 2, Some(h(3))),
            (Method::Recompute, EventType::Advance, 3, Some(h(12))),
            (Method::Incremental, EventType::Advance, 4, Some(h(13))),
        ]
    );
    assert_eq!(store.slots.len(), 2);
    assert_eq!(store.events.len(), 4);
}

#[test]
fn state_and_event_rows_carry_every_column() {
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Pass));
    let recorded_at = at(12, 5);
    let finished = store.finish(first(2, 11, 12, RunStatus::Fail), recorded_at).unwrap().unwrap();
    let coverage = Coverage {
        verified: Some(VerifiedInterval { start: h(10), end: h(11) }),
        furthest_observed_end: h(12),
        status: VerifiedStatus::Blocked,
        blocking_run_id: Some(run(2)),
        reason: "Run 00000000-0000-0000-0000-000000000002 has status FAIL at the coverage boundary".to_owned(),
    };
    let state = &finished.outcome.state;
    assert_eq!(state.check_id, CHECK);
    assert_eq!(state.coverage, coverage);
    assert_eq!(state.last_evaluated_run_id, run(2));
    assert_eq!(state.event_type, EventType::Block);
    assert_eq!(state.state_version, 2);
    assert_eq!(state.updated_at, recorded_at);
    let event = &finished.outcome.event;
    assert_eq!(event.watermark_event_id, Uuid::from_u128(0xe001));
    assert_eq!(event.check_id, CHECK);
    assert_eq!(event.evaluated_run_id, run(2));
    assert_eq!(event.event_type, EventType::Block);
    assert_eq!(event.previous_verified_end, Some(h(11)));
    assert_eq!(event.coverage, coverage);
    assert_eq!(event.recorded_at, recorded_at);
}

#[test]
fn new_latest_slot_advances_coverage_without_reading_the_slots() {
    let mut store = Store::default();
    let previous = store.evaluate(first(1, 10, 11, RunStatus::Pass)).outcome.state;
    let transition = Transition {
        check_id: CHECK,
        metadata_only: false,
        previous: Some(previous),
        existing_slot: None,
        has_later_slot: false,
        attempt: first(2, 11, 12, RunStatus::Pass),
    };
    let evaluation = transition.plan().unwrap().unwrap();
    assert_eq!(evaluation.slot_write(), SlotWrite::Insert);
    assert_eq!(evaluation.method(), Method::Incremental);
    assert!(!evaluation.needs_effective_slots());
    let outcome = evaluation.apply(&[], h(12), Uuid::nil()).unwrap();
    assert_eq!(outcome.state.coverage.verified, Some(VerifiedInterval { start: h(10), end: h(12) }));
    assert_eq!(outcome.state.event_type, EventType::Advance);
}

#[test]
fn new_slot_after_unresolved_error_recalculates_and_preserves_blocker() {
    let mut store = Store::default();
    store.evaluate(attempt(1, None, h(12), 1, RunStatus::Error));
    let later = store.evaluate(first(2, 12, 13, RunStatus::Pass));
    assert_eq!(later.method, Method::Recompute);
    assert_eq!(later.outcome.event.event_type, EventType::Block);
    assert_eq!(later.outcome.state.coverage.verified, None);
    assert_eq!(later.outcome.state.coverage.furthest_observed_end, h(13));
    assert_eq!(later.outcome.state.coverage.blocking_run_id, Some(run(1)));
    assert_eq!(later.outcome.state.state_version, 2);
}

#[test]
fn error_before_historical_resolution_records_null_coverage_and_blocker() {
    let mut store = Store::default();
    let finished = store.evaluate(attempt(1, None, h(12), 1, RunStatus::Error));
    assert_eq!(finished.method, Method::Recompute);
    assert_eq!(finished.outcome.state.event_type, EventType::Initialize);
    assert_eq!(finished.outcome.state.coverage.verified_start(), None);
    assert_eq!(finished.outcome.state.coverage.verified_end(), None);
    assert_eq!(finished.outcome.state.coverage.status, VerifiedStatus::Blocked);
    assert_eq!(finished.outcome.state.coverage.blocking_run_id, Some(run(1)));
    assert_eq!(store.slots[0].window_start, None);
}

#[test]
fn replacement_attempt_recalculates_from_effective_slots() {
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Fail));
    store.evaluate(first(2, 11, 12, RunStatus::Pass));
    let retry = store.evaluate(attempt(3, Some(h(10)), h(11), 2, RunStatus::Pass));
    assert_eq!((retry.slot_write, retry.method), (SlotWrite::Replace, Method::Recompute));
    assert_eq!(retry.outcome.state.coverage.verified, Some(VerifiedInterval { start: h(10), end: h(12) }));
    assert_eq!(retry.outcome.state.coverage.status, VerifiedStatus::Contiguous);
    assert_eq!(store.slots.iter().find(|s| s.scheduled_for == h(11)).map(|s| s.run_id), Some(run(3)));
}

#[test]
fn rolling_failure_before_historical_start_recalculates_and_keeps_a_valid_watermark() {
    // The historical scan found data only from 11:30; the next rolling window [11:00, 13:00)
    // starts before that and fails.
    let mut store = Store::default();
    store.evaluate(attempt(1, Some(at(11, 30)), h(12), 1, RunStatus::Pass));
    let rolling = store.evaluate(first(2, 11, 13, RunStatus::Fail));
    assert_eq!(rolling.method, Method::Recompute);
    let coverage = rolling.outcome.state.coverage;
    assert_eq!(coverage.verified, Some(VerifiedInterval { start: h(11), end: h(11) }));
    assert_eq!(coverage.blocking_run_id, Some(run(2)));
    assert_eq!(rolling.outcome.event.event_type, EventType::Invalidate);
}

#[test]
fn out_of_order_new_slot_recalculates_from_effective_slots() {
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Pass));
    store.evaluate(first(2, 12, 13, RunStatus::Pass));
    let late = store.evaluate(first(3, 11, 12, RunStatus::Pass));
    assert_eq!((late.slot_write, late.method), (SlotWrite::Insert, Method::Recompute));
    assert_eq!(late.outcome.state.coverage.verified, Some(VerifiedInterval { start: h(10), end: h(13) }));
    assert_eq!(late.outcome.state.event_type, EventType::Advance);
}

#[test]
fn deferred_run_changes_no_slot_state_or_watermark() {
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Fail));
    let before = store.clone();
    let deferred_retry = attempt(2, None, h(11), 2, RunStatus::Deferred);
    assert_eq!(store.finish(deferred_retry, h(12)), Ok(None));
    let deferred_first = attempt(3, None, h(12), 1, RunStatus::Deferred);
    assert_eq!(store.finish(deferred_first, h(12)), Ok(None));
    assert_eq!(store.slots, before.slots);
    assert_eq!(store.state, before.state);
    assert_eq!(store.events.len(), 1);
    assert_eq!(store.state.map(|s| s.coverage.blocking_run_id), Some(Some(run(1))));
}

#[test]
fn a_late_lower_attempt_copies_the_coverage_but_is_still_evaluated() {
    let mut store = Store::default();
    store.evaluate(attempt(1, Some(h(10)), h(11), 3, RunStatus::Pass));
    let before = store.state.clone().unwrap();
    let late = store.evaluate(attempt(2, Some(h(10)), h(11), 2, RunStatus::Fail));
    assert_eq!((late.slot_write, late.method), (SlotWrite::Keep, Method::Copy));
    assert_eq!(late.outcome.state.coverage, before.coverage);
    assert_eq!(late.outcome.state.event_type, EventType::Confirm);
    assert_eq!(late.outcome.state.state_version, 2);
    assert_eq!(late.outcome.state.last_evaluated_run_id, run(2));
    assert_eq!(late.outcome.event.evaluated_run_id, run(2));
    assert_eq!(store.slots[0].run_id, run(1));

    // An equal attempt number also keeps the row.
    let equal = store.evaluate(attempt(3, Some(h(10)), h(11), 3, RunStatus::Error));
    assert_eq!(equal.slot_write, SlotWrite::Keep);
    assert_eq!(equal.outcome.state.state_version, 3);
}

#[test]
fn a_kept_slot_without_previous_state_recomputes() {
    let existing = slot(1, h(10), h(11), RunStatus::Pass);
    let transition = Transition {
        check_id: CHECK,
        metadata_only: false,
        previous: None,
        existing_slot: Some(existing.clone()),
        has_later_slot: false,
        attempt: first(2, 10, 11, RunStatus::Fail),
    };
    let evaluation = transition.plan().unwrap().unwrap();
    assert_eq!((evaluation.slot_write(), evaluation.method()), (SlotWrite::Keep, Method::Recompute));
    let outcome = evaluation.apply(&[existing], h(11), Uuid::nil()).unwrap();
    assert_eq!(outcome.state.coverage.status, VerifiedStatus::Contiguous);
    assert_eq!(outcome.state.last_evaluated_run_id, run(2));
}

#[test]
fn recompute_refuses_slots_read_before_the_upsert() {
    let transition = Transition {
        check_id: CHECK,
        metadata_only: false,
        previous: None,
        existing_slot: None,
        has_later_slot: false,
        attempt: first(1, 10, 11, RunStatus::Pass),
    };
    let evaluation = transition.plan().unwrap().unwrap();
    assert_eq!(evaluation.clone().apply(&[], h(11), Uuid::nil()), Err(Error::MissingEvaluatedSlot { run_id: run(1) }));
    let stale = slot(9, h(10), h(11), RunStatus::Fail);
    assert_eq!(evaluation.apply(&[stale], h(11), Uuid::nil()), Err(Error::MissingEvaluatedSlot { run_id: run(1) }));
}

fn transition(attempt: FinishedAttempt) -> Transition {
    Transition {
        check_id: CHECK,
        metadata_only: false,
        previous: None,
        existing_slot: None,
        has_later_slot: false,
        attempt,
    }
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let empty = attempt(1, Some(h(11)), h(11), 1, RunStatus::Pass);
    assert_eq!(transition(empty).plan(), Err(Error::EmptyWindow { run_id: run(1), start: h(11), end: h(11) }));
    let backwards = attempt(1, Some(h(12)), h(11), 1, RunStatus::Fail);
    assert_eq!(transition(backwards).plan(), Err(Error::EmptyWindow { run_id: run(1), start: h(12), end: h(11) }));
    let unresolved_pass = attempt(1, None, h(11), 1, RunStatus::Pass);
    assert_eq!(
        transition(unresolved_pass).plan(),
        Err(Error::UnresolvedStart { run_id: run(1), status: RunStatus::Pass })
    );
    let unresolved_fail = attempt(1, None, h(11), 1, RunStatus::Fail);
    assert_eq!(
        transition(unresolved_fail).plan(),
        Err(Error::UnresolvedStart { run_id: run(1), status: RunStatus::Fail })
    );
    let zero = attempt(1, Some(h(10)), h(11), 0, RunStatus::Pass);
    assert_eq!(transition(zero).plan(), Err(Error::InvalidAttempt { run_id: run(1), attempt: 0 }));

    let mut other_slot = transition(first(1, 10, 11, RunStatus::Pass));
    other_slot.existing_slot = Some(slot(2, h(11), h(12), RunStatus::Pass));
    assert_eq!(other_slot.plan(), Err(Error::SlotMismatch { run_id: run(1), expected: h(11), found: h(12) }));

    let mut store = Store::default();
    let state = store.evaluate(first(1, 10, 11, RunStatus::Pass)).outcome.state;
    let mut foreign = transition(first(2, 11, 12, RunStatus::Pass));
    foreign.previous =
        Some(datadiff_watermark::WatermarkState { check_id: CheckId::new(Uuid::nil()), ..state.clone() });
    assert_eq!(foreign.plan(), Err(Error::CheckMismatch { expected: CHECK, found: CheckId::new(Uuid::nil()) }));

    let mut broken = transition(first(2, 11, 12, RunStatus::Pass));
    let mut bad_state = state.clone();
    bad_state.coverage.furthest_observed_end = h(10);
    broken.previous = Some(bad_state);
    assert_eq!(broken.plan(), Err(Error::InvalidCoverage(Violation::EndAfterFurthest { end: h(11), furthest: h(10) })));
    let mut unversioned = transition(first(2, 11, 12, RunStatus::Pass));
    unversioned.previous = Some(datadiff_watermark::WatermarkState { state_version: 0, ..state.clone() });
    assert_eq!(unversioned.plan(), Err(Error::InvalidCoverage(Violation::StateVersion(0))));

    let mut exhausted = transition(first(2, 11, 12, RunStatus::Pass));
    exhausted.previous = Some(datadiff_watermark::WatermarkState { state_version: i64::MAX, ..state });
    let evaluation = exhausted.plan().unwrap().unwrap();
    assert_eq!(evaluation.apply(&[], h(12), Uuid::nil()), Err(Error::StateVersionOverflow { version: i64::MAX }));
}

#[test]
fn errors_display_one_lowercase_layer() {
    let error = Error::UnresolvedStart { run_id: run(1), status: RunStatus::Pass };
    assert_eq!(
        error.to_string(),
        "run 00000000-0000-0000-0000-000000000001 has status PASS but no resolved window start"
    );
    assert_eq!(
        Error::DuplicateSlot { scheduled_for: h(11) }.to_string(),
        "two outcomes for the slot scheduled for 2026-07-22 11:00:00 UTC"
    );
}
