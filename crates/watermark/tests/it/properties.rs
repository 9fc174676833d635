//! Property tests of the pure functions. Case counts come from proptest's defaults (256), or
//! `PROPTEST_CASES` for longer local runs.

use chrono::{DateTime, Duration, Utc};
use datadiff_diff_core::attempt::RunStatus;
use datadiff_watermark::{Coverage, FinishedAttempt, Slot, VerifiedStatus, advance, effective_slots, recompute};
use proptest::prelude::*;
use proptest::sample::Index;

use crate::support::h;

fn hours(n: i64) -> Duration {
    Duration::hours(n)
}

fn base() -> DateTime<Utc> {
    h(0)
}

pub(crate) fn slot_status() -> impl Strategy<Value = RunStatus> {
    prop_oneof![3 => Just(RunStatus::Pass), 1 => Just(RunStatus::Fail), 1 => Just(RunStatus::Error)]
}

/// Effective slots with distinct `scheduled_for`, windows anywhere within a day (overlapping,
/// nested, gapped), any status, and now and then an unresolved ERROR.
fn slot_set() -> impl Strategy<Value = Vec<Slot>> {
    prop::collection::vec((0..24i64, 1..6i64, slot_status(), 1..4i32, prop::bool::weighted(0.05)), 1..10).prop_map(
        |specs| {
            specs
                .into_iter()
                .enumerate()
                .map(|(index, (start, width, status, attempt, unresolved))| {
                    let start = base() + hours(start);
                    let unresolved = unresolved && status == RunStatus::Error;
                    Slot {
                        scheduled_for: base() + hours(index as i64 * 7 % 50) + Duration::minutes(index as i64),
                        window_start: (!unresolved).then_some(start),
                        window_end: start + hours(width),
                        status,
                        run_id: crate::support::run(index as u128 + 1),
                        attempt,
                    }
                })
                .collect()
        },
    )
}

/// Slots appended in window order: each `(start, end)` after every earlier one's, starts
/// non-decreasing, widths 1–4 hours, gaps of up to 2 hours between starts.
fn in_order_appends() -> impl Strategy<Value = Vec<Slot>> {
    prop::collection::vec((0..3i64, 1..5i64, slot_status()), 1..14).prop_map(|specs| {
        let mut slots: Vec<Slot> = Vec::new();
        for (index, (delta, width, status)) in specs.into_iter().enumerate() {
            let (start, mut end) = match slots.last() {
                None => (base(), base() + hours(width)),
                Some(last) => {
                    let start = last.window_start.unwrap_or_default() + hours(delta);
                    (start, start + hours(width))
                }
            };
            if let Some(last) = slots.last()
                && last.window_start == Some(start)
            {
                end = end.max(last.window_end + hours(1));
            }
            slots.push(Slot {
                scheduled_for: base() + hours(index as i64),
                window_start: Some(start),
                window_end: end,
                status,
                run_id: crate::support::run(index as u128 + 1),
                attempt: 1,
            });
        }
        slots
    })
}

/// Upstream clears the blocker of metadata-only definitions in its incremental rule only.
fn comparable(mut coverage: Coverage, metadata_only: bool) -> Coverage {
    if metadata_only {
        coverage.blocking_run_id = None;
    }
    coverage
}

proptest! {
    #[test]
    fn recompute_depends_only_on_the_set_of_effective_slots(
        (slots, shuffled) in slot_set().prop_flat_map(|slots| (Just(slots.clone()), Just(slots).prop_shuffle())),
        metadata_only in any::<bool>(),
    ) {
        prop_assert_eq!(recompute(&shuffled, metadata_only), recompute(&slots, metadata_only));
    }

    /// An oracle written independently of the walk: the verified interval is covered by
    /// passing windows, no failure starts inside it, and it stops exactly at a failure or a
    /// gap.
    #[test]
    fn recompute_is_sound_and_stops_only_at_a_failure_or_a_gap(slots in slot_set(), metadata_only in any::<bool>()) {
        let coverage = recompute(&slots, metadata_only).expect("valid slots");
        prop_assert_eq!(coverage.violation(), None);
        prop_assert_eq!(Some(coverage.furthest_observed_end), slots.iter().map(|s| s.window_end).max());
        if let Some(unresolved) = slots.iter().filter(|s| s.window_start.is_none()).min_by_key(|s| s.scheduled_for) {
            prop_assert_eq!(coverage.verified, None);
            prop_assert_eq!(coverage.blocking_run_id, Some(unresolved.run_id));
            return Ok(());
        }
        let verified = coverage.verified.expect("resolved slots give bounds");
        prop_assert_eq!(Some(verified.start), slots.iter().filter_map(|s| s.window_start).min());
        let covered_by_pass = |instant: DateTime<Utc>| slots.iter().any(|s| {
            s.status == RunStatus::Pass && s.window_start.is_some_and(|start| start <= instant) && instant < s.window_end
        });
        let failure_starts: Vec<_> = slots.iter().filter(|s| s.status != RunStatus::Pass).filter_map(|s| s.window_start).collect();
        if metadata_only {
            prop_assert_eq!(verified.end, verified.start);
            prop_assert_eq!(coverage.status, VerifiedStatus::Blocked);
        } else {
            // Every hour (windows are whole hours) of the interval is inside a passing window,
            // and no failure starts inside it.
            let mut instant = verified.start;
            while instant < verified.end {
                prop_assert!(covered_by_pass(instant), "{instant} is not covered");
                instant += hours(1);
            }
            prop_assert!(failure_starts.iter().all(|start| *start >= verified.end));
            prop_assert_eq!(
                coverage.status == VerifiedStatus::Contiguous,
                verified.end >= coverage.furthest_observed_end
            );
        }
        match coverage.blocking_run_id {
            Some(blocker) => {
                let blocking = slots.iter().find(|s| s.run_id == blocker).expect("the blocker is a slot");
                prop_assert!(blocking.status != RunStatus::Pass);
                prop_assert_eq!(blocking.window_start, Some(verified.end));
                prop_assert_eq!(coverage.status, VerifiedStatus::Blocked);
            }
            None => {
                prop_assert!(!failure_starts.contains(&verified.end));
                if !metadata_only && coverage.status == VerifiedStatus::Blocked {
                    prop_assert!(!covered_by_pass(verified.end), "stopped at {} without a gap", verified.end);
                }
            }
        }
    }

    /// Upstream's `test_incremental_coverage_matches_full_calculation_*`, generalised to any
    /// widths, gaps and overlaps in window order.
    #[test]
    fn incremental_equals_recompute_for_every_in_order_append(slots in in_order_appends(), metadata_only in any::<bool>()) {
        let mut incremental = recompute(&slots[..1], metadata_only).expect("valid slot");
        for count in 2..=slots.len() {
            incremental = advance(&incremental, &slots[count - 1], metadata_only).expect("an in-order append");
            prop_assert_eq!(incremental.violation(), None);
            let full = recompute(&slots[..count], metadata_only).expect("valid slots");
            prop_assert_eq!(comparable(incremental.clone(), metadata_only), comparable(full, metadata_only));
            if metadata_only {
                prop_assert_eq!(incremental.blocking_run_id, None);
            }
        }
    }

    #[test]
    fn effective_slots_keep_the_highest_terminal_attempt_whatever_the_order(
        (history, order) in attempt_history().prop_flat_map(|history| {
            let len = history.len();
            (Just(history), prop::collection::vec(any::<Index>(), len))
        }),
    ) {
        let mut shuffled = history.clone();
        for (position, index) in order.iter().enumerate() {
            let other = index.index(shuffled.len());
            shuffled.swap(position, other);
        }
        let slots = effective_slots(&history).expect("distinct attempt numbers");
        prop_assert_eq!(effective_slots(&shuffled), Ok(slots.clone()));
        // Oracle: per slot, the largest attempt number that is not DEFERRED.
        let mut expected: Vec<(DateTime<Utc>, i32)> = Vec::new();
        for attempt in &history {
            if attempt.status == RunStatus::Deferred {
                continue;
            }
            match expected.iter_mut().find(|(at, _)| *at == attempt.scheduled_for) {
                Some(entry) => entry.1 = entry.1.max(attempt.attempt),
                None => expected.push((attempt.scheduled_for, attempt.attempt)),
            }
        }
        expected.sort();
        let found: Vec<_> = slots.iter().map(|slot| (slot.scheduled_for, slot.attempt)).collect();
        prop_assert_eq!(found, expected);
        let coverage = if slots.is_empty() { None } else { Some(recompute(&slots, false)) };
        let reshuffled = effective_slots(shuffled.iter().rev()).expect("same attempts");
        prop_assert_eq!(if reshuffled.is_empty() { None } else { Some(recompute(&reshuffled, false)) }, coverage);
    }
}

/// Attempts of up to four slots, attempt numbers distinct per slot, DEFERRED among them.
fn attempt_history() -> impl Strategy<Value = Vec<FinishedAttempt>> {
    let status =
        prop_oneof![Just(RunStatus::Pass), Just(RunStatus::Fail), Just(RunStatus::Error), Just(RunStatus::Deferred)];
    prop::collection::vec((0..4i64, prop::collection::btree_set(1..6i32, 1..4), prop::collection::vec(status, 5)), 0..5)
        .prop_map(|slots| {
            let mut history = Vec::new();
            let mut used = std::collections::BTreeSet::new();
            for (slot, numbers, statuses) in slots {
                for (number, status) in numbers.into_iter().zip(statuses) {
                    if !used.insert((slot, number)) {
                        continue;
                    }
                    let end = base() + hours(slot + 1);
                    let start = (status != RunStatus::Deferred).then_some(end - hours(1));
                    history.push(FinishedAttempt {
                        run_id: crate::support::run(history.len() as u128 + 1),
                        scheduled_for: end,
                        attempt: number,
                        window_start: start,
                        window_end: end,
                        status,
                    });
                }
            }
            history
        })
}
