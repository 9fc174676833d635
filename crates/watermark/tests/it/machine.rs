//! The store transition as a state machine (`proptest-state-machine`): histories of appends,
//! historical first slots, retries and remediations, DEFERRED attempts, late slots and late
//! lower attempts, for definitions whose windows are narrower than, equal to or wider than
//! their cadence. After every step: the CHECK invariants, `state_version` = the number of
//! evaluated attempts, the slot rows = the effective slots of the history, recompute
//! independent of order, DEFERRED changing nothing, and for every in-order append upstream's
//! incremental rule: equal to a recomputation after CONTIGUOUS coverage, the bounds of a
//! recomputation without a blocker for metadata-only definitions, and everything but the
//! furthest observed end kept after BLOCKED coverage.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use datadiff_diff_core::attempt::RunStatus;
use datadiff_watermark::{Coverage, FinishedAttempt, Method, Slot, VerifiedStatus, effective_slots, recompute};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

use crate::support::{Store, year_one};

fn base() -> DateTime<Utc> {
    crate::support::h(0) - Duration::days(20)
}

/// The definition's schedule: hourly units, fixed offsets.
#[derive(Debug, Clone)]
pub(crate) struct Definition {
    cadence: i64,
    width: i64,
    end_offset: i64,
    metadata_only: bool,
    initial_full_scan: bool,
}

impl Definition {
    fn scheduled_for(&self, slot: i64) -> DateTime<Utc> {
        base() + Duration::hours(slot * self.cadence)
    }

    fn window(&self, slot: i64) -> (DateTime<Utc>, DateTime<Utc>) {
        let end = self.scheduled_for(slot) - Duration::hours(self.end_offset);
        (end - Duration::hours(self.width), end)
    }

    fn slot_index(&self, scheduled_for: DateTime<Utc>) -> i64 {
        (scheduled_for - base()).num_hours() / self.cadence
    }
}

/// The reference: the attempt history a backend would hold.
#[derive(Debug, Clone)]
pub(crate) struct History {
    definition: Definition,
    attempts: Vec<FinishedAttempt>,
    evaluated: i64,
}

impl History {
    fn used(&self, scheduled_for: DateTime<Utc>, number: i32) -> bool {
        self.attempts.iter().any(|a| a.scheduled_for == scheduled_for && a.attempt == number)
    }

    /// Oracle of the slot-state rule, independent of the crate's.
    fn expected_slots(&self) -> Vec<(DateTime<Utc>, datadiff_diff_core::attempt::RunId)> {
        let mut best: Vec<&FinishedAttempt> = Vec::new();
        for attempt in self.attempts.iter().filter(|a| a.status != RunStatus::Deferred) {
            match best.iter_mut().find(|b| b.scheduled_for == attempt.scheduled_for) {
                Some(current) if attempt.attempt > current.attempt => *current = attempt,
                Some(_) => {}
                None => best.push(attempt),
            }
        }
        let mut slots: Vec<_> = best.iter().map(|a| (a.scheduled_for, a.run_id)).collect();
        slots.sort();
        slots
    }
}

/// What a step does (for readable shrunk failures); the attempt is what the store finishes.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Append,
    Historical,
    Retry,
    Late,
    LateLower,
}

#[derive(Debug, Clone)]
pub(crate) struct Step {
    #[expect(dead_code, reason = "read through Debug in shrunk failures")]
    kind: Kind,
    attempt: FinishedAttempt,
}

fn status() -> BoxedStrategy<RunStatus> {
    prop_oneof![
        5 => Just(RunStatus::Pass),
        2 => Just(RunStatus::Fail),
        2 => Just(RunStatus::Error),
        1 => Just(RunStatus::Deferred),
    ]
    .boxed()
}

/// An attempt with an unresolved start (ERROR or DEFERRED), or one that resolved it (any
/// outcome; year one now and then).
fn historical(end: DateTime<Utc>) -> BoxedStrategy<(Option<DateTime<Utc>>, RunStatus)> {
    prop_oneof![
        1 => prop_oneof![Just(RunStatus::Error), Just(RunStatus::Deferred)].prop_map(|s| (None, s)),
        3 => (1..40i64, status()).prop_map(move |(back, s)| {
            let status = if s == RunStatus::Deferred { RunStatus::Pass } else { s };
            (Some(end - Duration::hours(back)), status)
        }),
        1 => status().prop_map(|s| (Some(year_one()), if s == RunStatus::Deferred { RunStatus::Error } else { s })),
    ]
    .boxed()
}

/// An unused attempt number below a recorded one: slot, number, and that attempt's bounds.
type LowerAttempt = (DateTime<Utc>, i32, Option<DateTime<Utc>>, DateTime<Utc>);

pub(crate) struct Reference;

impl ReferenceStateMachine for Reference {
    type State = History;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<History> {
        (1..=3i64, 1..=4i64, 0..=2i64, prop::bool::weighted(0.2), prop::bool::weighted(0.4))
            .prop_map(|(cadence, width, end_offset, metadata_only, initial_full_scan)| History {
                definition: Definition { cadence, width, end_offset, metadata_only, initial_full_scan },
                attempts: Vec::new(),
                evaluated: 0,
            })
            .boxed()
    }

    fn transitions(history: &History) -> BoxedStrategy<Step> {
        let definition = history.definition.clone();
        let run_id = crate::support::run(history.attempts.len() as u128 + 1);
        let observed: BTreeSet<i64> = history.attempts.iter().map(|a| definition.slot_index(a.scheduled_for)).collect();
        let latest = observed.iter().copied().max().unwrap_or(0);
        let mut options: Vec<(u32, BoxedStrategy<Step>)> = Vec::new();

        // The next slot(s): historical while no attempt other than DEFERRED exists.
        let pending_history = definition.initial_full_scan
            && !definition.metadata_only
            && history.attempts.iter().all(|a| a.status == RunStatus::Deferred);
        let append_definition = definition.clone();
        options.push((
            6,
            (0..3i64, status(), any::<u64>())
                .prop_flat_map(move |(skip, status, _)| {
                    let definition = append_definition.clone();
                    let slot = latest + 1 + skip;
                    let scheduled_for = definition.scheduled_for(slot);
                    let (start, end) = definition.window(slot);
                    if pending_history {
                        historical(end)
                            .prop_map(move |(start, status)| Step {
                                kind: Kind::Historical,
                                attempt: FinishedAttempt {
                                    run_id,
                                    scheduled_for,
                                    attempt: 1,
                                    window_start: start,
                                    window_end: end,
                                    status,
                                },
                            })
                            .boxed()
                    } else {
                        let start = (status != RunStatus::Deferred).then_some(start);
                        Just(Step {
                            kind: Kind::Append,
                            attempt: FinishedAttempt {
                                run_id,
                                scheduled_for,
                                attempt: 1,
                                window_start: start,
                                window_end: end,
                                status,
                            },
                        })
                        .boxed()
                    }
                })
                .boxed(),
        ));

        // Retries, forced reruns and remediations of an attempted slot: the next attempt
        // number (sometimes skipping one), the slot's resolved bounds if any, else a chance
        // to resolve them.
        if !history.attempts.is_empty() {
            let attempts = history.attempts.clone();
            let slots: Vec<DateTime<Utc>> = attempts.iter().map(|a| a.scheduled_for).collect();
            options.push((
                4,
                (select(slots), 0..2i32, status())
                    .prop_flat_map(move |(scheduled_for, skip, status)| {
                        let of_slot: Vec<&FinishedAttempt> =
                            attempts.iter().filter(|a| a.scheduled_for == scheduled_for).collect();
                        let number = of_slot.iter().map(|a| a.attempt).max().unwrap_or(0) + 1 + skip;
                        let newest = of_slot.iter().max_by_key(|a| a.attempt).map(|a| a.window_end);
                        let end = newest.unwrap_or(scheduled_for);
                        let resolved = of_slot.iter().filter(|a| a.window_start.is_some()).max_by_key(|a| a.attempt);
                        let make = move |start: Option<DateTime<Utc>>, end: DateTime<Utc>, status| Step {
                            kind: Kind::Retry,
                            attempt: FinishedAttempt {
                                run_id,
                                scheduled_for,
                                attempt: number,
                                window_start: start,
                                window_end: end,
                                status,
                            },
                        };
                        match resolved {
                            Some(resolved) => {
                                let (start, end) = (resolved.window_start, resolved.window_end);
                                let start = if status == RunStatus::Deferred { None } else { start };
                                Just(make(start, end, status)).boxed()
                            }
                            None => historical(end).prop_map(move |(start, status)| make(start, end, status)).boxed(),
                        }
                    })
                    .boxed(),
            ));
        }

        // A slot before the latest one that was never attempted (a late or backfilled slot).
        let unobserved: Vec<i64> = (1..latest).filter(|slot| !observed.contains(slot)).collect();
        if !unobserved.is_empty() {
            let late_definition = definition.clone();
            options.push((
                2,
                (select(unobserved), status())
                    .prop_map(move |(slot, status)| {
                        let (start, end) = late_definition.window(slot);
                        Step {
                            kind: Kind::Late,
                            attempt: FinishedAttempt {
                                run_id,
                                scheduled_for: late_definition.scheduled_for(slot),
                                attempt: 1,
                                window_start: (status != RunStatus::Deferred).then_some(start),
                                window_end: end,
                                status,
                            },
                        }
                    })
                    .boxed(),
            ));
        }

        // A late completion of an attempt numbered below the slot's row (the copy path).
        let lower: Vec<LowerAttempt> = history
            .attempts
            .iter()
            .flat_map(|a| {
                (1..a.attempt)
                    .filter(|n| !history.used(a.scheduled_for, *n))
                    .map(|n| (a.scheduled_for, n, a.window_start, a.window_end))
                    .collect::<Vec<_>>()
            })
            .collect();
        if !lower.is_empty() {
            options.push((
                2,
                (select(lower), status())
                    .prop_map(move |((scheduled_for, number, start, end), status)| {
                        let status = match (start, status) {
                            (None, RunStatus::Pass | RunStatus::Fail) => RunStatus::Error,
                            (_, status) => status,
                        };
                        Step {
                            kind: Kind::LateLower,
                            attempt: FinishedAttempt {
                                run_id,
                                scheduled_for,
                                attempt: number,
                                window_start: if status == RunStatus::Deferred { None } else { start },
                                window_end: end,
                                status,
                            },
                        }
                    })
                    .boxed(),
            ));
        }
        Union::new_weighted(options).boxed()
    }

    fn apply(mut history: History, step: &Step) -> History {
        if step.attempt.status != RunStatus::Deferred {
            history.evaluated += 1;
        }
        history.attempts.push(step.attempt.clone());
        history
    }

    /// Shrinking may drop the steps a later one was generated after: keep attempt numbers
    /// and run ids unique.
    fn preconditions(history: &History, step: &Step) -> bool {
        !history.used(step.attempt.scheduled_for, step.attempt.attempt)
            && history.attempts.iter().all(|a| a.run_id != step.attempt.run_id)
    }
}

/// The system under test: the store of `support`, plus whether its state equals a
/// recomputation (it can differ only after an incremental step out of window order).
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    store: Store,
    consistent: bool,
}

fn recomputed(slots: &[Slot], metadata_only: bool) -> Option<Coverage> {
    if slots.is_empty() { None } else { recompute(slots, metadata_only).ok() }
}

impl StateMachineTest for Machine {
    type SystemUnderTest = Machine;
    type Reference = Reference;

    fn init_test(history: &History) -> Machine {
        Machine {
            store: Store { metadata_only: history.definition.metadata_only, ..Store::default() },
            consistent: true,
        }
    }

    fn apply(mut machine: Machine, history: &History, step: Step) -> Machine {
        let metadata_only = history.definition.metadata_only;
        let before = machine.store.clone();
        let recorded_at = step.attempt.window_end + Duration::minutes(history.attempts.len() as i64);
        let finished = machine.store.finish(step.attempt.clone(), recorded_at);
        let finished = match finished {
            Ok(finished) => finished,
            Err(error) => panic!("{step:?} was refused: {error}"),
        };
        let store = &machine.store;
        let Some(finished) = finished else {
            assert_eq!(step.attempt.status, RunStatus::Deferred);
            assert_eq!(store.slots, before.slots, "DEFERRED changed a slot");
            assert_eq!(store.state, before.state, "DEFERRED changed the watermark");
            assert_eq!(store.events.len(), before.events.len(), "DEFERRED wrote an event");
            return machine;
        };
        let state = &finished.outcome.state;
        let event = &finished.outcome.event;
        let previous = before.state.as_ref().map(|s| &s.coverage);
        assert_eq!(state.state_version, history.evaluated, "state_version is the number of evaluated attempts");
        assert_eq!(state.updated_at, recorded_at);
        assert_eq!(state.last_evaluated_run_id, step.attempt.run_id);
        assert_eq!(event.evaluated_run_id, step.attempt.run_id);
        assert_eq!(event.coverage, state.coverage);
        assert_eq!(event.event_type, state.event_type);
        assert_eq!(event.previous_verified_end, previous.and_then(Coverage::verified_end));

        let slot = store.slots.iter().find(|s| s.scheduled_for == step.attempt.scheduled_for);
        match finished.method {
            Method::Copy => {
                assert_eq!(Some(&state.coverage), previous);
                assert_eq!(store.slots, before.slots);
            }
            Method::Recompute => {
                assert_eq!(Some(&state.coverage), recomputed(&store.slots, metadata_only).as_ref());
            }
            Method::Incremental => {
                // Upstream's incremental path, modelled with its two quirks (crate docs).
                let previous = previous.expect("an append follows a state with bounds");
                let appended = slot.expect("the appended slot was written");
                let furthest = previous.furthest_observed_end.max(appended.window_end);
                if metadata_only {
                    // Bounds and furthest as a recomputation has them, but no blocker.
                    let mut full = recomputed(&store.slots, metadata_only).expect("slots exist");
                    full.blocking_run_id = None;
                    assert_eq!(state.coverage, full, "metadata-only append");
                } else if previous.status == VerifiedStatus::Blocked {
                    // Everything kept but the furthest observed end.
                    assert_eq!(
                        state.coverage,
                        Coverage { furthest_observed_end: furthest, ..previous.clone() },
                        "append to BLOCKED coverage"
                    );
                } else {
                    // CONTIGUOUS: equal to a recomputation for an append in window order (SPEC §6).
                    let key = (appended.window_start, appended.window_end);
                    let in_order = store
                        .slots
                        .iter()
                        .filter(|s| s.run_id != appended.run_id)
                        .all(|s| s.scheduled_for < appended.scheduled_for && (s.window_start, s.window_end) < key);
                    if in_order && machine.consistent {
                        let full = recomputed(&store.slots, metadata_only).expect("slots exist");
                        assert_eq!(state.coverage, full, "incremental differs from recompute");
                    }
                }
            }
        }
        machine.consistent = recomputed(&store.slots, metadata_only).is_some_and(|full| full == state.coverage);
        machine
    }

    fn check_invariants(machine: &Machine, history: &History) {
        let store = &machine.store;
        let mut rows: Vec<_> = store.slots.iter().map(|s| (s.scheduled_for, s.run_id)).collect();
        rows.sort();
        assert_eq!(rows, history.expected_slots(), "slot rows are the effective slots");
        let effective = effective_slots(&history.attempts).expect("a valid history");
        let mut sorted = store.slots.clone();
        sorted.sort_by_key(|s| s.scheduled_for);
        assert_eq!(effective, sorted);
        let metadata_only = history.definition.metadata_only;
        let reversed: Vec<Slot> = store.slots.iter().rev().cloned().collect();
        assert_eq!(recomputed(&reversed, metadata_only), recomputed(&store.slots, metadata_only));
        match &store.state {
            None => assert_eq!(history.evaluated, 0),
            Some(state) => {
                assert_eq!(state.violation(), None, "CHECK constraints hold");
                assert_eq!(state.state_version, history.evaluated);
                assert_eq!(store.events.len() as i64, history.evaluated);
            }
        }
    }
}

prop_state_machine! {
    #[test]
    fn store_transitions_keep_the_watermark_invariants(sequential 1..40 => Machine);
}
