//! The tick's order of work for one definition (SPEC §4, runs note §1–§3), as properties of
//! the pure plan over random facts and random store answers — no database.

use chrono::{DateTime, Duration, TimeZone, Utc};
use datadiff_diff_core::{
    attempt::{
        AttemptFacts, Bounds, MAX_CATCH_UP, Reverify, RunId, RunStatus, SkipReason, StartDecision, StartKind,
        StartRequest, TriggerType, decide_start, due_slots, is_reverification_due,
    },
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
        proptest::option::of((1_i64..=200, 0_usize..=5)),
    )
        .prop_map(|(behind, has_stale_attempt, has_retry_candidate, newest, force, reverify)| {
            let current = hour(100);
            let reverify = reverify.map(|(hours, per_tick)| Reverify {
                period: datadiff_diff_core::definition::Duration::from_seconds(hours * 3600),
                per_tick,
            });
            TickFacts {
                current,
                latest_attempted: behind.map(|hours| current - Duration::hours(hours)),
                has_stale_attempt,
                has_retry_candidate,
                current_slot_newest: newest.map(|status| attempt(current, status)),
                force,
                reverify,
                now: current + Duration::minutes(5),
            }
        })
}

/// Drives a plan to its end, answering the sweep with `swept` and the retry listing with
/// `candidates` retry slots (hours before the current one) and the re-verification listing
/// with `candidates` older slots; returns every step.
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
            TickStep::ListReverifications { .. } => {
                plan.reverification_candidates((0..candidates).map(|n| hour(i64::try_from(n).unwrap())));
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

        // 6. Re-verifications are listed exactly when the definition has a budget, after every
        // retry and due slot, with `now` minus the period; at most the budget start, in the
        // store's order (least recently attempted first), each a re-verification of that cutoff.
        let listing = steps.iter().position(|step| matches!(step, TickStep::ListReverifications { .. }));
        let budget = facts.reverify.map_or(0, |reverify| reverify.per_tick);
        prop_assert_eq!(listing.is_some(), budget > 0);
        if let (Some(listing), Some(reverify)) = (listing, facts.reverify) {
            let cutoff = facts.now - Duration::seconds(reverify.period.seconds());
            prop_assert_eq!(&steps[listing], &TickStep::ListReverifications { verified_before: cutoff, limit: budget });
            let is_reverification = |step: &TickStep| matches!(step, TickStep::Start { kind: StartKind::Reverify { .. }, .. });
            let before_listing = steps[..listing].iter().all(|step| !is_reverification(step));
            prop_assert!(before_listing, "a re-verification before the listing");
            let after_listing = steps[listing + 1..].iter().all(|step| is_reverification(step) || *step == TickStep::Done);
            prop_assert!(after_listing, "only re-verifications after the listing");
            let reverified: Vec<_> = steps.iter().filter_map(|step| match step {
                TickStep::Start { slot, kind: StartKind::Reverify { verified_before } } => {
                    assert_eq!(*verified_before, cutoff);
                    Some(*slot)
                }
                _ => None,
            }).collect();
            let expected: Vec<_> = (0..candidates.min(budget)).map(|n| hour(i64::try_from(n).unwrap())).collect();
            prop_assert_eq!(reverified, expected);
        }

        // 7. It ends, and stays ended.
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
        reverify: None,
        now: hour(100),
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

/// A slot's attempts: 1 to 4 of random status, trigger and times (hours 0 to 60).
fn slot_attempts() -> impl Strategy<Value = Vec<AttemptFacts>> {
    let status = prop_oneof![
        Just(RunStatus::Pass),
        Just(RunStatus::Fail),
        Just(RunStatus::Error),
        Just(RunStatus::Deferred),
        Just(RunStatus::Running),
    ];
    proptest::collection::vec((status, 0_i64..60, 0_i64..3), 1..=4).prop_map(|attempts| {
        attempts
            .into_iter()
            .enumerate()
            .map(|(index, (status, started, took))| {
                let number = i32::try_from(index).unwrap() + 1;
                AttemptFacts {
                    run_id: RunId::new(Uuid::from_u128(u128::try_from(number).unwrap())),
                    attempt: number,
                    trigger: if number == 1 { TriggerType::Scheduled } else { TriggerType::Manual },
                    status,
                    bounds: Bounds { start: Some(hour(-2)), end: hour(-1) },
                    started_at: hour(started),
                    finished_at: (status != RunStatus::Running).then(|| hour(started + took)),
                    rerun_of_run_id: None,
                }
            })
            .collect()
    })
}

proptest! {
    /// A re-verification is PipelineWise's `--force` on an attempted slot, taken only while the
    /// slot is due: effective outcome PASS, nothing RUNNING, every attempt older than the cutoff.
    #[test]
    fn a_reverification_is_a_forced_rerun_of_a_due_slot(attempts in slot_attempts(), cutoff in 0_i64..70) {
        let verified_before = hour(cutoff);
        let request = |kind| StartRequest {
            kind,
            scheduled_for: hour(0),
            slot_attempts: &attempts,
            history: Default::default(),
            full_scan_eligible: false,
            window: window(hour(0)).unwrap(),
        };
        let reverified = decide_start(&request(StartKind::Reverify { verified_before }));
        let forced = decide_start(&request(StartKind::Scheduled { force: true }));
        let effective = attempts.iter().filter(|a| matches!(a.status, RunStatus::Pass | RunStatus::Fail | RunStatus::Error)).max_by_key(|a| a.attempt);
        let due = !attempts.iter().any(|a| a.status == RunStatus::Running)
            && effective.is_some_and(|a| a.status == RunStatus::Pass)
            && attempts.iter().all(|a| a.last_activity() < verified_before);
        prop_assert_eq!(is_reverification_due(&attempts, verified_before), due);
        match &reverified {
            StartDecision::Start(new) => {
                prop_assert!(due);
                prop_assert_eq!(&reverified, &forced);
                prop_assert_eq!(new.trigger, TriggerType::Manual);
                let newest = attempts.iter().max_by_key(|a| a.attempt).unwrap();
                prop_assert_eq!((new.attempt, new.bounds), (newest.attempt + 1, newest.bounds));
            }
            StartDecision::Skip(skip) => {
                prop_assert!(!due);
                let running = attempts.iter().any(|a| a.status == RunStatus::Running);
                let reason = if running { SkipReason::AlreadyRunning } else { SkipReason::ReverificationNoLongerDue };
                prop_assert_eq!(&skip.reason, &reason);
            }
        }
    }
}
