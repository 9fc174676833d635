//! The tick's order of work for one definition (SPEC §4, runs note §1–§3), as properties of
//! the pure plan over random facts and random store answers — no database.

use chrono::{DateTime, Duration, TimeZone, Utc};
use datadiff_diff_core::{
    attempt::{AttemptFacts, Bounds, MAX_CATCH_UP, RunId, RunStatus, SkipReason, StartKind, TriggerType, due_slots},
    schedule::{CheckTickPlan, Schedule, TickFacts, TickStep, Window},
};
use proptest::prelude::*;
use uuid::Uuid;

fn hour(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 20, 0, 0, 0).unwrap() + Duration::hours(n)
}

fn window(slot: DateTime<Utc>) -> Option<Window> {
    Window::from_offsets(
        slot,
        datadiff_diff_core::definition::Duration::from_seconds(-7200),
        datadiff_diff_core::definition::Duration::from_seconds(-3600),
    )
}

fn attempt(slot: DateTime<Utc>, status: RunStatus) -> AttemptFacts {
    AttemptFacts {
        run_id: RunId::new(Uuid::from_u128(7)),
        attempt: 1,
        trigger: TriggerType::Scheduled,
        status,
        bounds: Bounds { start: Some(slot - Duration::hours(2)), end: slot - Duration::hours(1) },
        started_at: slot + Duration::minutes(1),
        finished_at: (status != RunStatus::Running).then(|| slot + Duration::minutes(2)),
        rerun_of_run_id: None,
    }
}

/// Random facts: the current slot at hour 100 of an hourly schedule, the newest attempted
/// slot up to 40 hours before it (or none), the overview's flags, a known newest attempt of
/// the current slot, and `--force`.
fn facts() -> impl Strategy<Value = TickFacts> {
    (
        proptest::option::of(0_i64..=40),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(prop_oneof![
            Just(RunStatus::Pass),
            Just(RunStatus::Fail),
            Just(RunStatus::Error),
            Just(RunStatus::Running),
        ]),
        any::<bool>(),
    )
        .prop_map(|(behind, has_stale_attempt, has_retry_candidate, newest, force)| {
            let current = hour(100);
            TickFacts {
                current,
                latest_attempted: behind.map(|hours| current - Duration::hours(hours)),
                has_stale_attempt,
                has_retry_candidate,
                current_slot_newest: newest.map(|status| attempt(current, status)),
                force,
            }
        })
}

/// Drives a plan to its end, answering the sweep with `swept` and the retry listing with
/// `candidates` retry slots (hours before the current one); returns every step.
fn drive(facts: &TickFacts, swept: bool, candidates: usize) -> Vec<TickStep> {
    let schedule = Schedule::parse("0 * * * *").unwrap();
    let mut plan = CheckTickPlan::new(&schedule, facts.clone(), window);
    let mut steps = Vec::new();
    loop {
        let step = plan.next_step();
        match &step {
            TickStep::Sweep => plan.swept(swept),
            TickStep::ListRetries => {
                plan.retry_candidates((0..candidates).map(|n| hour(50 + i64::try_from(n).unwrap())));
            }
            TickStep::Done => {
                steps.push(step);
                return steps;
            }
            _ => {}
        }
        steps.push(step);
        assert!(steps.len() < 200, "the plan does not end");
    }
}

proptest! {
    #[test]
    fn the_order_of_work_follows_the_runs_note(facts in facts(), swept in any::<bool>(), candidates in 0_usize..30) {
        let steps = drive(&facts, swept, candidates);
        let schedule = Schedule::parse("0 * * * *").unwrap();
        let due = due_slots(&schedule, facts.latest_attempted, facts.current);
        let swept = facts.has_stale_attempt && swept;

        // 1. The sweep comes first, exactly when an attempt is stale.
        prop_assert_eq!(steps.first() == Some(&TickStep::Sweep), facts.has_stale_attempt);
        prop_assert!(steps.iter().filter(|step| **step == TickStep::Sweep).count() <= 1);

        // 2. Retries are listed exactly when a candidate is known or the sweep failed an attempt.
        let listed = steps.contains(&TickStep::ListRetries);
        prop_assert_eq!(listed, facts.has_retry_candidate || swept);

        // 3. Retries (never forced, valid only before the current slot) start before every due
        // slot, in the store's order, at most 24.
        let retries: Vec<_> = steps.iter().filter_map(|step| match step {
            TickStep::Start { slot, kind: StartKind::Retry { retry_before } } => {
                assert_eq!(*retry_before, facts.current);
                Some(*slot)
            }
            _ => None,
        }).collect();
        let expected_retries: Vec<_> = if listed {
            (0..candidates.min(MAX_CATCH_UP)).map(|n| hour(50 + i64::try_from(n).unwrap())).collect()
        } else {
            Vec::new()
        };
        prop_assert_eq!(&retries, &expected_retries);
        let last_retry = steps.iter().rposition(|step| matches!(step, TickStep::Start { kind: StartKind::Retry { .. }, .. }));
        let first_due = steps.iter().position(|step| matches!(step, TickStep::Skip { .. } | TickStep::Start { kind: StartKind::Scheduled { .. }, .. }));
        if let (Some(last_retry), Some(first_due)) = (last_retry, first_due) {
            prop_assert!(last_retry < first_due);
        }

        // 4. The due slots were computed before retries: every one of them, oldest first, at
        // most 24, each started with `--force` as given or answered SKIPPED.
        let slots: Vec<_> = steps.iter().filter_map(|step| match step {
            TickStep::Start { slot, kind: StartKind::Scheduled { force } } => {
                assert_eq!(*force, facts.force);
                Some(*slot)
            }
            TickStep::Skip { slot, .. } => Some(*slot),
            _ => None,
        }).collect();
        prop_assert_eq!(&slots, &due);
        prop_assert!(slots.len() <= MAX_CATCH_UP);

        // 5. A skip without the store only for the unforced current slot with a known newest
        // attempt that no sweep changed — and then with decide_start's reason.
        for step in &steps {
            if let TickStep::Skip { slot, skip } = step {
                prop_assert!(!facts.force && !swept && *slot == facts.current);
                let newest = facts.current_slot_newest.as_ref().expect("a skip needs a known attempt");
                let reason = if newest.status == RunStatus::Running { SkipReason::AlreadyRunning } else { SkipReason::AlreadyAttempted };
                prop_assert_eq!(&skip.reason, &reason);
            }
        }
        let skippable = !facts.force && !swept && facts.current_slot_newest.is_some() && due.contains(&facts.current);
        prop_assert_eq!(steps.iter().any(|step| matches!(step, TickStep::Skip { .. })), skippable);

        // 6. It ends, and stays ended.
        prop_assert_eq!(steps.last(), Some(&TickStep::Done));
    }
}

#[test]
fn a_step_that_failed_ends_the_definitions_work_for_this_tick() {
    let schedule = Schedule::parse("0 * * * *").unwrap();
    let facts = TickFacts {
        current: hour(100),
        latest_attempted: Some(hour(98)),
        has_stale_attempt: true,
        has_retry_candidate: true,
        current_slot_newest: None,
        force: false,
    };
    let mut plan = CheckTickPlan::new(&schedule, facts.clone(), window);
    assert_eq!(plan.next_step(), TickStep::Sweep);
    // The sweep failed: no report. Nothing else is attempted.
    assert_eq!(plan.next_step(), TickStep::Done);
    assert_eq!(plan.next_step(), TickStep::Done);

    let mut plan = CheckTickPlan::new(&schedule, facts, window);
    assert_eq!(plan.next_step(), TickStep::Sweep);
    plan.swept(false);
    assert_eq!(plan.next_step(), TickStep::ListRetries);
    assert_eq!(plan.next_step(), TickStep::Done, "the listing failed");
}
