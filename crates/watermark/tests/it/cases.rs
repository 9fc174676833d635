//! Upstream's coverage cases (runs note §7, test_coverage.py) and SPEC §6's worked example,
//! each with its expected rows written out.

use datadiff_diff_core::attempt::RunStatus;
use datadiff_watermark::{
    Coverage, EventType, Method, VerifiedInterval, VerifiedStatus, WatermarkEvent, advance, event_type, recompute,
};

use crate::support::{CHECK, Store, attempt, first, h, run, slot, year_one};

const ALL_COVERED: &str = "All observed timestamp intervals are covered by successful runs";
const UNCOVERED: &str = "No successful run covers the next timestamp interval";
const METADATA: &str = "Metadata-only checks cannot advance table coverage";

fn interval(start: chrono::DateTime<chrono::Utc>, end: chrono::DateTime<chrono::Utc>) -> Option<VerifiedInterval> {
    Some(VerifiedInterval { start, end })
}

#[test]
fn spec_worked_example_pass_fail_pass_then_remediation() {
    let mut store = Store::default();

    let a = store.evaluate(first(1, 10, 11, RunStatus::Pass));
    assert_eq!(a.method, Method::Recompute);
    assert_eq!(a.outcome.state.coverage.verified, interval(h(10), h(11)));
    assert_eq!(a.outcome.state.coverage.status, VerifiedStatus::Contiguous);
    assert_eq!(a.outcome.event.event_type, EventType::Initialize);

    let b = store.evaluate(first(2, 11, 12, RunStatus::Fail));
    assert_eq!(b.method, Method::Incremental);
    assert_eq!(b.outcome.state.coverage.verified_end(), Some(h(11)));
    assert_eq!(b.outcome.state.coverage.status, VerifiedStatus::Blocked);
    assert_eq!(b.outcome.state.coverage.blocking_run_id, Some(run(2)));
    assert_eq!(
        b.outcome.state.coverage.reason,
        "Run 00000000-0000-0000-0000-000000000002 has status FAIL at the coverage boundary"
    );

    let c = store.evaluate(first(3, 12, 13, RunStatus::Pass));
    assert_eq!(c.method, Method::Incremental, "an in-order append to BLOCKED coverage, as upstream");
    assert_eq!(c.outcome.state.coverage.verified_end(), Some(h(11)), "a later pass never jumps the gap");
    assert_eq!(c.outcome.state.coverage.furthest_observed_end, h(13));
    assert_eq!(c.outcome.state.coverage.blocking_run_id, Some(run(2)));

    let remediation = store.evaluate(attempt(4, Some(h(11)), h(12), 2, RunStatus::Pass));
    assert_eq!(remediation.method, Method::Recompute);
    assert_eq!(
        remediation.outcome.state.coverage,
        Coverage {
            verified: interval(h(10), h(13)),
            furthest_observed_end: h(13),
            status: VerifiedStatus::Contiguous,
            blocking_run_id: None,
            reason: ALL_COVERED.to_owned(),
        }
    );
    assert_eq!(remediation.outcome.event.event_type, EventType::Advance);
    let events: Vec<_> = store.events.iter().map(|event| (event.event_type, event.coverage.verified_end())).collect();
    assert_eq!(
        events,
        [
            (EventType::Initialize, Some(h(11))),
            (EventType::Block, Some(h(11))),
            (EventType::Block, Some(h(11))),
            (EventType::Advance, Some(h(13))),
        ]
    );
}

#[test]
fn failed_interval_blocks_later_successful_coverage() {
    let slots = [
        slot(1, h(10), h(11), RunStatus::Pass),
        slot(2, h(11), h(12), RunStatus::Fail),
        slot(3, h(12), h(13), RunStatus::Pass),
    ];
    assert_eq!(
        recompute(&slots, false),
        Ok(Coverage {
            verified: interval(h(10), h(11)),
            furthest_observed_end: h(13),
            status: VerifiedStatus::Blocked,
            blocking_run_id: Some(run(2)),
            reason: "Run 00000000-0000-0000-0000-000000000002 has status FAIL at the coverage boundary".to_owned(),
        })
    );
}

#[test]
fn an_error_blocks_with_its_own_status_in_the_reason() {
    let slots = [slot(1, h(10), h(11), RunStatus::Pass), slot(2, h(11), h(12), RunStatus::Error)];
    let coverage = recompute(&slots, false);
    assert_eq!(
        coverage.map(|c| c.reason),
        Ok("Run 00000000-0000-0000-0000-000000000002 has status ERROR at the coverage boundary".to_owned())
    );
}

#[test]
fn successful_remediation_fills_gap_and_advances_over_later_passes() {
    let mut remediated = slot(4, h(11), h(12), RunStatus::Pass);
    remediated.attempt = 2;
    let slots = [
        slot(1, h(10), h(11), RunStatus::Pass),
        remediated,
        slot(3, h(12), h(13), RunStatus::Pass),
        slot(5, h(13), h(14), RunStatus::Pass),
    ];
    let coverage = recompute(&slots, false);
    assert_eq!(coverage.as_ref().map(|c| c.verified), Ok(interval(h(10), h(14))));
    assert_eq!(coverage.as_ref().map(|c| c.status), Ok(VerifiedStatus::Contiguous));
    assert_eq!(coverage.map(|c| c.reason), Ok(ALL_COVERED.to_owned()));
}

#[test]
fn later_failed_revalidation_invalidates_previous_coverage() {
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Pass));
    let second = store.evaluate(first(2, 11, 12, RunStatus::Pass));
    assert_eq!(second.outcome.state.coverage.verified_end(), Some(h(12)));

    // A forced rerun of the first slot fails: the earlier pass no longer counts.
    let rerun = store.evaluate(attempt(3, Some(h(10)), h(11), 2, RunStatus::Fail));
    assert_eq!(rerun.method, Method::Recompute);
    assert_eq!(rerun.outcome.event.event_type, EventType::Invalidate);
    assert_eq!(rerun.outcome.event.previous_verified_end, Some(h(12)));
    assert_eq!(rerun.outcome.state.coverage.verified, interval(h(10), h(10)));
    assert_eq!(rerun.outcome.state.coverage.blocking_run_id, Some(run(3)));
}

#[test]
fn a_failure_overlapping_earlier_passes_pulls_the_end_back_to_its_start() {
    // Wide windows: the 14:00 slot's window [11:00, 14:00) overlaps the passes before it.
    let slots = [
        slot(1, h(9), h(12), RunStatus::Pass),
        slot(2, h(10), h(13), RunStatus::Pass),
        slot(3, h(11), h(14), RunStatus::Fail),
    ];
    let coverage = recompute(&slots, false);
    assert_eq!(coverage.as_ref().map(|c| c.verified), Ok(interval(h(9), h(11))));
    assert_eq!(coverage.map(|c| c.blocking_run_id), Ok(Some(run(3))));
}

#[test]
fn metadata_only_definition_never_advances_coverage() {
    let slots = [slot(1, h(10), h(11), RunStatus::Pass), slot(2, h(11), h(12), RunStatus::Pass)];
    assert_eq!(
        recompute(&slots, true),
        Ok(Coverage {
            verified: interval(h(10), h(10)),
            furthest_observed_end: h(12),
            status: VerifiedStatus::Blocked,
            blocking_run_id: None,
            reason: METADATA.to_owned(),
        })
    );

    let mut store = Store::metadata_only();
    store.evaluate(first(1, 10, 11, RunStatus::Pass));
    let appended = store.evaluate(first(2, 11, 12, RunStatus::Pass));
    assert_eq!(appended.method, Method::Incremental, "an in-order append, as upstream");
    assert_eq!(appended.outcome.state.coverage.verified, interval(h(10), h(10)));
    assert_eq!(appended.outcome.state.coverage.reason, METADATA);
    assert_eq!(appended.outcome.event.event_type, EventType::Block);
}

#[test]
fn metadata_only_blocker_is_written_by_recomputation_and_cleared_by_an_append() {
    // Recomputation: the barrier at verified_start blocks (its id is kept).
    let slots = [slot(1, h(10), h(11), RunStatus::Fail), slot(2, h(11), h(12), RunStatus::Pass)];
    assert_eq!(recompute(&slots, true).map(|c| c.blocking_run_id), Ok(Some(run(1))));
    // A schema-only definition whose first slot FAILs: recomputed, BLOCKED by that run.
    let mut store = Store::metadata_only();
    let initial = store.evaluate(first(1, 10, 11, RunStatus::Fail));
    assert_eq!(initial.method, Method::Recompute);
    assert_eq!(
        initial.outcome.state.coverage,
        Coverage {
            verified: interval(h(10), h(10)),
            furthest_observed_end: h(11),
            status: VerifiedStatus::Blocked,
            blocking_run_id: Some(run(1)),
            reason: METADATA.to_owned(),
        }
    );
    assert_eq!(initial.outcome.event.event_type, EventType::Initialize);
    // The in-order slots after it take upstream's incremental path, which writes no blocker
    // (`advance_coverage` returns none without a data check), whatever their status.
    for (n, status) in [(2, RunStatus::Pass), (3, RunStatus::Fail), (4, RunStatus::Pass)] {
        let appended = store.evaluate(first(n, 10 + n as u32 - 1, 10 + n as u32, status));
        assert_eq!(appended.method, Method::Incremental, "slot {n}");
        let expected = Coverage {
            verified: interval(h(10), h(10)),
            furthest_observed_end: h(10 + n as u32),
            status: VerifiedStatus::Blocked,
            blocking_run_id: None,
            reason: METADATA.to_owned(),
        };
        assert_eq!(appended.outcome.state.coverage, expected, "slot {n}");
        assert_eq!(appended.outcome.event.coverage, expected, "slot {n}: the event row too");
        assert_eq!(appended.outcome.event.event_type, EventType::Block);
        assert_eq!(appended.outcome.state.state_version, n as i64);
    }
    // A recomputation (here: a retry of the first slot) names the failure at the start again.
    let retried = store.evaluate(attempt(5, Some(h(10)), h(11), 2, RunStatus::Fail));
    assert_eq!(retried.method, Method::Recompute);
    assert_eq!(retried.outcome.state.coverage.blocking_run_id, Some(run(5)));
}

#[test]
fn unresolved_historical_error_blocks_later_success_without_inventing_a_start() {
    let mut unresolved = slot(1, h(0), h(12), RunStatus::Error);
    unresolved.window_start = None;
    let slots = [unresolved, slot(2, h(12), h(13), RunStatus::Pass)];
    assert_eq!(
        recompute(&slots, false),
        Ok(Coverage {
            verified: None,
            furthest_observed_end: h(13),
            status: VerifiedStatus::Blocked,
            blocking_run_id: Some(run(1)),
            reason: "Run 00000000-0000-0000-0000-000000000001 has not resolved its historical comparison start"
                .to_owned(),
        })
    );
    // The unresolved rule comes first, even for metadata-only definitions.
    assert_eq!(recompute(&slots, true).map(|c| c.verified), Ok(None));
}

#[test]
fn resolved_remediation_replaces_unresolved_historical_blocker() {
    let mut store = Store::default();
    let error = store.evaluate(attempt(1, None, h(12), 1, RunStatus::Error));
    assert_eq!(error.outcome.state.coverage.verified, None);
    let later = store.evaluate(first(2, 12, 13, RunStatus::Pass));
    assert_eq!(later.method, Method::Recompute);
    assert_eq!(later.outcome.event.event_type, EventType::Block);
    assert_eq!(later.outcome.state.coverage.blocking_run_id, Some(run(1)));

    // The remediation resolves the start (the later of the two sides' minimums) and passes.
    let remediation = store.evaluate(attempt(3, Some(h(3)), h(12), 2, RunStatus::Pass));
    assert_eq!(remediation.outcome.event.event_type, EventType::Advance);
    assert_eq!(remediation.outcome.event.previous_verified_end, None);
    assert_eq!(
        remediation.outcome.state.coverage,
        Coverage {
            verified: interval(h(3), h(13)),
            furthest_observed_end: h(13),
            status: VerifiedStatus::Contiguous,
            blocking_run_id: None,
            reason: ALL_COVERED.to_owned(),
        }
    );
}

#[test]
fn year_one_is_a_real_resolved_boundary() {
    let slots = [slot(1, year_one(), h(12), RunStatus::Pass), slot(2, h(12), h(13), RunStatus::Pass)];
    let coverage = recompute(&slots, false);
    assert_eq!(coverage.as_ref().map(|c| c.verified), Ok(interval(year_one(), h(13))));
    assert_eq!(coverage.map(|c| c.status), Ok(VerifiedStatus::Contiguous));

    let failed = [slot(1, year_one(), h(12), RunStatus::Fail)];
    let coverage = recompute(&failed, false);
    assert_eq!(coverage.as_ref().map(|c| c.verified), Ok(interval(year_one(), year_one())));
    assert_eq!(coverage.map(|c| c.blocking_run_id), Ok(Some(run(1))));

    let mut store = Store::default();
    store.evaluate(attempt(1, Some(year_one()), h(12), 1, RunStatus::Pass));
    let appended = store.evaluate(first(2, 12, 13, RunStatus::Pass));
    assert_eq!(appended.method, Method::Incremental);
    assert_eq!(appended.outcome.event.coverage.verified, interval(year_one(), h(13)));
}

#[test]
fn coverage_events_accept_unresolved_boundaries() {
    let mut store = Store::default();
    let initial = store.evaluate(attempt(1, None, h(12), 1, RunStatus::Error));
    assert_eq!(
        initial.outcome.event,
        WatermarkEvent {
            watermark_event_id: uuid::Uuid::from_u128(0xe000),
            check_id: CHECK,
            evaluated_run_id: run(1),
            event_type: EventType::Initialize,
            previous_verified_end: None,
            coverage: Coverage {
                verified: None,
                furthest_observed_end: h(12),
                status: VerifiedStatus::Blocked,
                blocking_run_id: Some(run(1)),
                reason: "Run 00000000-0000-0000-0000-000000000001 has not resolved its historical comparison start"
                    .to_owned(),
            },
            recorded_at: h(12),
        }
    );
    let unresolved = initial.outcome.state.coverage;
    let resolved = recompute(&[slot(2, h(11), h(12), RunStatus::Pass)], false).unwrap();
    assert_eq!(event_type(Some(&unresolved), &unresolved), EventType::Block);
    assert_eq!(event_type(Some(&unresolved), &resolved), EventType::Advance);
    assert_eq!(event_type(Some(&resolved), &unresolved), EventType::Invalidate);
}

#[test]
fn missing_interval_is_reported_as_blocked_without_failure_run() {
    let slots = [slot(1, h(10), h(11), RunStatus::Pass), slot(2, h(12), h(13), RunStatus::Pass)];
    assert_eq!(
        recompute(&slots, false),
        Ok(Coverage {
            verified: interval(h(10), h(11)),
            furthest_observed_end: h(13),
            status: VerifiedStatus::Blocked,
            blocking_run_id: None,
            reason: UNCOVERED.to_owned(),
        })
    );
}

#[test]
fn a_failure_after_a_gap_does_not_block() {
    let slots = [slot(1, h(10), h(11), RunStatus::Pass), slot(2, h(12), h(13), RunStatus::Fail)];
    let coverage = recompute(&slots, false);
    assert_eq!(coverage.as_ref().map(|c| c.blocking_run_id), Ok(None));
    assert_eq!(coverage.map(|c| c.reason), Ok(UNCOVERED.to_owned()));
}

#[test]
fn window_narrower_than_cadence_blocks_coverage() {
    // Every 2 hours, a one-hour window: [10,11) then [12,13) leave [11,12) unchecked.
    let mut store = Store::default();
    store.evaluate(first(1, 10, 11, RunStatus::Pass));
    let second = store.evaluate(first(2, 12, 13, RunStatus::Pass));
    assert_eq!(second.method, Method::Incremental);
    assert_eq!(second.outcome.state.coverage.verified, interval(h(10), h(11)));
    assert_eq!(second.outcome.state.coverage.status, VerifiedStatus::Blocked);
    assert_eq!(second.outcome.state.coverage.reason, UNCOVERED);
    assert_eq!(second.outcome.event.event_type, EventType::Block);
}

#[test]
fn window_wider_than_cadence_keeps_coverage_contiguous() {
    // Hourly, a three-hour window.
    let mut store = Store::default();
    for (n, end) in [(1, 11), (2, 12), (3, 13)] {
        let finished = store.evaluate(first(n, end - 3, end, RunStatus::Pass));
        assert_eq!(finished.outcome.state.coverage.verified, interval(h(8), h(end)));
        assert_eq!(finished.outcome.state.coverage.status, VerifiedStatus::Contiguous);
    }
}

#[test]
fn overlapping_windows_survive_a_skipped_slot() {
    // Hourly, two-hour windows; the 12:00 slot never ran.
    let mut store = Store::default();
    store.evaluate(first(1, 9, 11, RunStatus::Pass));
    let after_skip = store.evaluate(first(2, 11, 13, RunStatus::Pass));
    assert_eq!(after_skip.outcome.state.coverage.verified, interval(h(9), h(13)));
    assert_eq!(after_skip.outcome.state.coverage.status, VerifiedStatus::Contiguous);
    assert_eq!(after_skip.outcome.event.event_type, EventType::Advance);
}

/// Upstream's `test_incremental_coverage_matches_full_for_window_and_status_combinations`,
/// exhaustively: windows 1–3 hours wide, cadence 1–2 hours, every PASS/FAIL/ERROR sequence of
/// four slots, data and metadata-only definitions.
#[test]
fn incremental_matches_full_for_every_window_and_status_combination() {
    let statuses = [RunStatus::Pass, RunStatus::Fail, RunStatus::Error];
    let mut compared = 0;
    for width in 1..=3 {
        for cadence in 1..=2 {
            for metadata_only in [false, true] {
                for code in 0..81 {
                    let slots: Vec<_> = (0..4u32)
                        .map(|index| {
                            let end = 6 + cadence * index;
                            let status = statuses[(code / 3usize.pow(index)) % 3];
                            slot(u128::from(index) + 1, h(end - width), h(end), status)
                        })
                        .collect();
                    let mut incremental = recompute(&slots[..1], metadata_only).unwrap();
                    for count in 2..=slots.len() {
                        incremental = advance(&incremental, &slots[count - 1], metadata_only).unwrap();
                        let mut full = recompute(&slots[..count], metadata_only).unwrap();
                        if metadata_only {
                            // Upstream's incremental rule clears the blocker (crate docs).
                            assert_eq!(incremental.blocking_run_id, None);
                            full.blocking_run_id = None;
                        }
                        assert_eq!(incremental, full, "width {width} cadence {cadence} slots {:?}", &slots[..count]);
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 3 * 2 * 2 * 81 * 3);
}

/// Documented in the crate root: upstream's choice only compares the new start with the
/// verified start, so it would advance incrementally a rolling window that starts before the
/// historical start but after the verified start, keeping the older blocker. SPEC §6 requires
/// incremental == recompute, so BLOCKED coverage is recomputed and the newer failure blocks.
#[test]
fn blocked_coverage_keeps_its_blocker_when_a_rolling_start_precedes_a_historical_start() {
    use crate::support::at;
    let mut store = Store::default();
    store.evaluate(attempt(1, Some(at(11, 30)), h(12), 1, RunStatus::Fail));
    let widened = store.evaluate(attempt(2, Some(at(10, 30)), h(13), 1, RunStatus::Pass));
    assert_eq!(widened.method, Method::Recompute, "starts before the verified start");
    assert_eq!(widened.outcome.state.coverage.verified, interval(at(10, 30), at(11, 30)));
    assert_eq!(widened.outcome.state.coverage.blocking_run_id, Some(run(1)));

    let rolling = store.evaluate(attempt(3, Some(h(11)), at(13, 30), 1, RunStatus::Fail));
    // An in-order append to BLOCKED coverage: upstream's incremental rule keeps the bounds,
    // the blocker and the reason, though this failure starts before the blocker.
    assert_eq!(rolling.method, Method::Incremental, "an in-order append, as upstream");
    assert_eq!(
        rolling.outcome.state.coverage,
        Coverage { furthest_observed_end: at(13, 30), ..widened.outcome.state.coverage.clone() }
    );
    assert_eq!(rolling.outcome.state.coverage.blocking_run_id, Some(run(1)));
    // A recomputation would have pulled the end back to this run's start.
    let full = recompute(&store.slots, false).unwrap();
    assert_eq!(full.verified, interval(at(10, 30), h(11)));
    assert_eq!(full.blocking_run_id, Some(run(3)));
}
