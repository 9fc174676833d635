//! Finishing attempts: results, `row_diff` evidence, slot state and watermark transitions in
//! one transaction (runs note §3.1 T4 and §4), asserted on the rows written.

use chrono::{DateTime, Utc};
use datadiff_backend_store::{AdvisoryLock, Completion, Difference, StoredDefinition};
use datadiff_diff_core::{
    attempt::{CheckResult, ResultStatus, ResultType, RunId, RunStatus},
    definition::CheckType,
    merge::DifferenceKind,
};
use serde_json::json;
use uuid::Uuid;

use crate::support::{Repo, at, repo, scheduled, table, wait_for_lock_waiters};

/// `(verified_start, verified_end, furthest_observed_end, verified_status, blocking_run_id,
/// last_evaluated_run_id, event_type, state_version, updated_at, reason)`.
type StateRow = (
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
    String,
    Option<Uuid>,
    Uuid,
    String,
    i64,
    DateTime<Utc>,
    String,
);

fn state(repo: &Repo, definition: &StoredDefinition) -> Option<StateRow> {
    repo.sql()
        .query_opt(
            "SELECT verified_start, verified_end, furthest_observed_end, verified_status, blocking_run_id, \
             last_evaluated_run_id, event_type, state_version, updated_at, reason FROM public.dd_watermark_state \
             WHERE check_id = $1",
            &[&definition.check_id.get()],
        )
        .unwrap()
        .map(|row| {
            (
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get(5),
                row.get(6),
                row.get(7),
                row.get(8),
                row.get(9),
            )
        })
}

/// `(evaluated_run_id, event_type, previous_verified_end, verified_end, verified_status)`.
type EventRow = (Uuid, String, Option<DateTime<Utc>>, Option<DateTime<Utc>>, String);
/// `(scheduled_for, run_id, attempt, window_start, window_end, status)`.
type SlotRow = (DateTime<Utc>, Uuid, i32, Option<DateTime<Utc>>, DateTime<Utc>, String);

/// The events of a revision, in order.
fn events(repo: &Repo, definition: &StoredDefinition) -> Vec<EventRow> {
    repo.sql()
        .query(
            "SELECT evaluated_run_id, event_type, previous_verified_end, verified_end, verified_status \
             FROM public.dd_watermark_events WHERE check_id = $1 ORDER BY event_sequence",
            &[&definition.check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
        .collect()
}

/// Every slot row of a revision, by slot.
fn slots(repo: &Repo, definition: &StoredDefinition) -> Vec<SlotRow> {
    repo.sql()
        .query(
            "SELECT scheduled_for, run_id, attempt, window_start, window_end, status FROM public.dd_run_slot_state \
             WHERE check_id = $1 ORDER BY scheduled_for",
            &[&definition.check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5)))
        .collect()
}

const COVERED: &str = "All observed timestamp intervals are covered by successful runs";

fn result(check_type: &str, status: ResultStatus, source: serde_json::Value, target: serde_json::Value) -> CheckResult {
    CheckResult {
        check_type: check_type.parse().unwrap(),
        status,
        source_value: source,
        target_value: target,
        source_query_seconds: Some(0.25),
        target_query_seconds: Some(0.5),
        error: (status != ResultStatus::Pass).then(|| format!("{check_type} {status}")),
    }
}

#[test]
fn a_finish_writes_results_evidence_slot_watermark_and_event_together() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.checks = vec![CheckType::SchemaCompatibility, CheckType::RowCount];
    let definition = repo.import_one(&definition, at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let completion = Completion {
        run_id: attempt.run_id,
        status: RunStatus::Fail,
        preflight_id: None,
        error: Some("row_diff FAIL".into()),
        // Given out of the definition's order: read back in declared order, row_diff last.
        results: vec![
            result(
                "row_diff",
                ResultStatus::Fail,
                json!({"rows": "4"}),
                json!({"rows": "4", "missing": "1", "extra": "1", "changed": "1"}),
            ),
            result("row_count", ResultStatus::Pass, json!("4"), json!("4")),
            result("schema_compatibility", ResultStatus::Pass, json!({"columns": []}), json!(null)),
        ],
        differences: vec![
            Difference {
                check_type: ResultType::RowDiff,
                kind: DifferenceKind::MissingInTarget,
                key: json!({"id": "1"}),
                fields: vec![],
            },
            Difference {
                check_type: ResultType::RowDiff,
                kind: DifferenceKind::Changed,
                key: json!({"id": "2"}),
                fields: vec!["status".into(), "amount".into()],
            },
            Difference {
                check_type: ResultType::RowDiff,
                kind: DifferenceKind::ExtraInTarget,
                key: json!({"id": "3"}),
                fields: vec![],
            },
        ],
        finished_at: at(13, 7),
    };
    let finished = repo.store.finish_attempt(&completion).unwrap();
    assert_eq!((finished.attempt.status, finished.attempt.finished_at), (RunStatus::Fail, Some(at(13, 7))));

    let row = repo
        .sql()
        .query_one(
            "SELECT status, finished_at, error FROM public.dd_run_attempts WHERE run_id = $1",
            &[&attempt.run_id.get()],
        )
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, Option<DateTime<Utc>>>(1), row.get::<_, Option<String>>(2)),
        ("FAIL".into(), Some(at(13, 7)), Some("row_diff FAIL".into()))
    );
    // Results: JSON strings stay JSON strings; a JSON null is JSON null, not SQL NULL.
    type Stored = (String, String, Option<serde_json::Value>, bool, Option<f64>);
    let stored: Vec<Stored> = repo
        .sql()
        .query(
            "SELECT check_type, status, source_value, target_value IS NOT NULL AND target_value = 'null'::jsonb, \
             target_query_seconds FROM public.dd_run_results WHERE run_id = $1 ORDER BY check_type",
            &[&attempt.run_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
        .collect();
    assert_eq!(
        stored,
        [
            ("row_count".into(), "PASS".into(), Some(json!("4")), false, Some(0.5)),
            ("row_diff".into(), "FAIL".into(), Some(json!({"rows": "4"})), false, Some(0.5)),
            ("schema_compatibility".into(), "PASS".into(), Some(json!({"columns": []})), true, Some(0.5)),
        ]
    );
    let read: Vec<String> = repo
        .store
        .run_results(attempt.run_id)
        .unwrap()
        .into_iter()
        .map(|result| result.check_type.to_string())
        .collect();
    assert_eq!(read, ["schema_compatibility", "row_count", "row_diff"]);
    // Evidence: ordinals from 1 in the given order, empty fields unless CHANGED.
    let differences: Vec<(i32, String, serde_json::Value, Vec<String>)> = repo
        .sql()
        .query(
            "SELECT ordinal, kind, key, fields FROM public.datadiff_run_differences WHERE run_id = $1 ORDER BY ordinal",
            &[&attempt.run_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect();
    assert_eq!(
        differences,
        [
            (1, "MISSING_IN_TARGET".into(), json!({"id": "1"}), vec![]),
            (2, "CHANGED".into(), json!({"id": "2"}), vec!["status".to_owned(), "amount".to_owned()]),
            (3, "EXTRA_IN_TARGET".into(), json!({"id": "3"}), vec![]),
        ]
    );
    assert_eq!(repo.store.run_differences(attempt.run_id).unwrap().len(), 3);
    // Slot, watermark and event.
    let run = attempt.run_id.get();
    assert_eq!(slots(&repo, &definition), [(at(13, 0), run, 1, Some(at(12, 0)), at(13, 0), "FAIL".into())]);
    assert_eq!(
        state(&repo, &definition),
        Some((
            Some(at(12, 0)),
            Some(at(12, 0)),
            at(13, 0),
            "BLOCKED".into(),
            Some(run),
            run,
            "INITIALIZE".into(),
            1,
            at(13, 7),
            format!("Run {run} has status FAIL at the coverage boundary"),
        ))
    );
    assert_eq!(events(&repo, &definition), [(run, "INITIALIZE".into(), None, Some(at(12, 0)), "BLOCKED".into())]);
    let recorded: DateTime<Utc> = repo
        .sql()
        .query_one("SELECT recorded_at FROM public.dd_watermark_events WHERE evaluated_run_id = $1", &[&run])
        .unwrap()
        .get(0);
    assert_eq!(recorded, at(13, 7));
}

#[test]
fn a_finish_waits_for_the_coverage_lock_with_everything_uncommitted() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let key = AdvisoryLock::Coverage(definition.check_id).key();
    assert_eq!(key, format!("pipelinewise.data_diff.coverage:{}", definition.check_id));
    let mut holder = repo.sql();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key]).unwrap();
    std::thread::scope(|scope| {
        let finish = scope.spawn(|| {
            repo.store.finish_attempt(&Completion {
                run_id: attempt.run_id,
                status: RunStatus::Pass,
                preflight_id: None,
                error: None,
                results: vec![result("row_count", ResultStatus::Pass, json!("1"), json!("1"))],
                differences: Vec::new(),
                finished_at: at(13, 6),
            })
        });
        wait_for_lock_waiters(&mut repo.sql(), &key, 1);
        assert_eq!(repo.store.attempt(attempt.run_id).unwrap().unwrap().status, RunStatus::Running);
        assert_eq!(repo.count("SELECT * FROM public.dd_run_results"), 0);
        tx.commit().unwrap();
        finish.join().unwrap().unwrap();
    });
    assert_eq!(repo.count("SELECT * FROM public.dd_run_results"), 1);
    assert_eq!(state(&repo, &definition).unwrap().7, 1);
}

#[test]
fn a_new_latest_slot_advances_and_a_replacement_recalculates() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    for (slot, status) in [(13, RunStatus::Pass), (14, RunStatus::Pass)] {
        let attempt = repo.start(&definition, at(slot, 0), scheduled(false), at(slot, 5));
        repo.finish(attempt.run_id, status, at(slot, 6));
    }
    let advanced = state(&repo, &definition).unwrap();
    assert_eq!((advanced.0, advanced.1, advanced.3.as_str()), (Some(at(12, 0)), Some(at(14, 0)), "CONTIGUOUS"));
    assert_eq!((advanced.6.as_str(), advanced.7, advanced.9.as_str()), ("ADVANCE", 2, COVERED));

    // A forced rerun of the first slot fails: the end is pulled back to its start.
    let forced = repo.start(&definition, at(13, 0), scheduled(true), at(14, 30));
    repo.finish(forced.run_id, RunStatus::Fail, at(14, 31));
    let invalidated = state(&repo, &definition).unwrap();
    assert_eq!(
        (invalidated.1, invalidated.4, invalidated.6.as_str()),
        (Some(at(12, 0)), Some(forced.run_id.get()), "INVALIDATE")
    );
    assert_eq!(slots(&repo, &definition)[0].2, 2, "the higher attempt is the slot's outcome");
}

#[test]
fn an_out_of_order_slot_recalculates_from_the_effective_slots() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let early = repo.start(&definition, at(13, 0), scheduled(false), at(14, 5));
    let late = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    repo.finish(late.run_id, RunStatus::Pass, at(14, 6));
    let first = state(&repo, &definition).unwrap();
    assert_eq!((first.0, first.1, first.3.as_str()), (Some(at(13, 0)), Some(at(14, 0)), "CONTIGUOUS"));
    repo.finish(early.run_id, RunStatus::Pass, at(14, 7));
    let second = state(&repo, &definition).unwrap();
    assert_eq!((second.0, second.1, second.6.as_str(), second.7), (Some(at(12, 0)), Some(at(14, 0)), "CONFIRM", 2));
}

#[test]
fn the_slot_keeps_the_highest_attempt_when_completions_arrive_out_of_order() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    // Two RUNNING attempts of one slot, as two workers of different tools may leave them.
    let [first, second] = [1, 2].map(|attempt| {
        let run_id = Uuid::new_v4();
        repo.sql()
            .execute(
                "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, \
                 attempt, trigger_type, status, started_at) VALUES ($1, $2, $3, $4, $3, $5, 'SCHEDULED', 'RUNNING', $6)",
                &[&run_id, &definition.check_id.get(), &at(13, 0), &at(12, 0), &attempt, &at(13, 5)],
            )
            .unwrap();
        RunId::new(run_id)
    });
    repo.finish(second, RunStatus::Pass, at(13, 10));
    let kept = repo.finish(first, RunStatus::Fail, at(13, 11));
    assert_eq!(slots(&repo, &definition), [(at(13, 0), second.get(), 2, Some(at(12, 0)), at(13, 0), "PASS".into())]);
    // The late lower attempt is still evaluated: same coverage, a new version and event.
    let row = state(&repo, &definition).unwrap();
    assert_eq!(
        (row.1, row.3.as_str(), row.5, row.6.as_str(), row.7),
        (Some(at(13, 0)), "CONTIGUOUS", first.get(), "CONFIRM", 2)
    );
    assert_eq!(kept.coverage.unwrap().event.evaluated_run_id, first);
}

#[test]
fn an_unresolved_historical_error_blocks_with_null_bounds_until_a_start_is_resolved() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    let definition = repo.import_one(&definition, at(0, 0));
    let historical = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(historical.run_id, RunStatus::Error, at(13, 6));
    let run = historical.run_id.get();
    let blocked = state(&repo, &definition).unwrap();
    assert_eq!(
        blocked,
        (
            None,
            None,
            at(13, 0),
            "BLOCKED".into(),
            Some(run),
            run,
            "INITIALIZE".into(),
            1,
            at(13, 6),
            format!("Run {run} has not resolved its historical comparison start")
        )
    );
    assert_eq!(slots(&repo, &definition)[0].3, None, "the slot keeps the unresolved start");

    // A later rolling pass only moves the furthest end: BLOCK, bounds still NULL.
    let next = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    repo.finish(next.run_id, RunStatus::Pass, at(14, 6));
    let still = state(&repo, &definition).unwrap();
    assert_eq!(
        (still.0, still.1, still.2, still.4, still.6.as_str(), still.7),
        (None, None, at(14, 0), Some(run), "BLOCK", 2)
    );

    // A remediation that resolves the start replaces the blocker.
    let fix = repo.store.start_remediation(historical.run_id, "backfill", at(14, 10)).unwrap().attempt;
    repo.store.resolve_historical_start(fix.run_id, at(9, 0)).unwrap();
    repo.finish(fix.run_id, RunStatus::Pass, at(14, 11));
    let repaired = state(&repo, &definition).unwrap();
    assert_eq!(
        (repaired.0, repaired.1, repaired.3.as_str(), repaired.4, repaired.6.as_str(), repaired.7),
        (Some(at(9, 0)), Some(at(14, 0)), "CONTIGUOUS", None, "ADVANCE", 3)
    );
}

#[test]
fn a_rolling_failure_before_the_historical_start_keeps_a_valid_watermark() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    definition.window_start_seconds = 3 * 3600;
    let definition = repo.import_one(&definition, at(0, 0));
    let historical = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.store.resolve_historical_start(historical.run_id, at(12, 30)).unwrap();
    repo.finish(historical.run_id, RunStatus::Pass, at(13, 6));
    let rolling = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    assert_eq!(rolling.bounds.start, Some(at(11, 0)));
    repo.finish(rolling.run_id, RunStatus::Fail, at(14, 6));
    let row = state(&repo, &definition).unwrap();
    assert_eq!(
        (row.0, row.1, row.3.as_str(), row.4, row.6.as_str()),
        (Some(at(11, 0)), Some(at(11, 0)), "BLOCKED", Some(rolling.run_id.get()), "INVALIDATE")
    );
}

#[test]
fn a_deferred_outcome_writes_no_slot_watermark_or_event() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    let definition = repo.import_one(&definition, at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let text = "Historical comparison is pending: both source and target have no non-NULL timestamp before the \
                cutoff 2026-07-22T13:00:00Z";
    let finished = repo
        .store
        .finish_attempt(&Completion {
            run_id: attempt.run_id,
            status: RunStatus::Deferred,
            preflight_id: None,
            error: Some(text.into()),
            results: Vec::new(),
            differences: Vec::new(),
            finished_at: at(13, 6),
        })
        .unwrap();
    assert!(finished.coverage.is_none());
    let stored = repo.store.attempt(attempt.run_id).unwrap().unwrap();
    assert_eq!((stored.status, stored.bounds.start, stored.error.as_deref()), (RunStatus::Deferred, None, Some(text)));
    assert!(slots(&repo, &definition).is_empty());
    assert_eq!(state(&repo, &definition), None);
    assert!(events(&repo, &definition).is_empty());
}

#[test]
fn a_metadata_only_definition_never_advances() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.checks = vec![CheckType::SchemaCompatibility];
    let definition = repo.import_one(&definition, at(0, 0));
    for slot in [13, 14] {
        let attempt = repo.start(&definition, at(slot, 0), scheduled(false), at(slot, 5));
        repo.finish(attempt.run_id, RunStatus::Pass, at(slot, 6));
    }
    let row = state(&repo, &definition).unwrap();
    assert_eq!(
        (row.0, row.1, row.2, row.3.as_str(), row.9.as_str()),
        (Some(at(12, 0)), Some(at(12, 0)), at(14, 0), "BLOCKED", "Metadata-only checks cannot advance table coverage")
    );
    // The row_diff extension reads data: such a definition advances.
    let mut row_diff = table("t", "rowdiff");
    row_diff.checks = vec![CheckType::SchemaCompatibility];
    row_diff.extensions.row_diff = Some(datadiff_diff_core::definition::RowDiffSettings::default());
    let row_diff = repo.import_one(&row_diff, at(0, 0));
    let attempt = repo.start(&row_diff, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(attempt.run_id, RunStatus::Pass, at(13, 6));
    let row = state(&repo, &row_diff).unwrap();
    assert_eq!((row.1, row.3.as_str(), row.9.as_str()), (Some(at(13, 0)), "CONTIGUOUS", COVERED));
}

/// Issue: a schema-only definition whose slot FAILs, then in-order slots. PipelineWise's
/// store takes its incremental path for those slots, and that path writes no blocking run
/// for a definition without a data check; the rows must be upstream's.
#[test]
fn a_metadata_only_failure_then_in_order_slots_writes_upstreams_rows() {
    let repo = repo();
    let mut definition = table("t", "schema_only");
    definition.checks = vec![CheckType::SchemaCompatibility];
    let definition = repo.import_one(&definition, at(0, 0));
    let failed = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(13, 6));
    let mut runs = vec![failed.run_id.get()];
    for (slot, status) in [(14, RunStatus::Pass), (15, RunStatus::Fail), (16, RunStatus::Pass)] {
        let attempt = repo.start(&definition, at(slot, 0), scheduled(false), at(slot, 5));
        repo.finish(attempt.run_id, status, at(slot, 6));
        runs.push(attempt.run_id.get());
    }
    let blockers: Vec<Option<Uuid>> = repo
        .sql()
        .query(
            "SELECT blocking_run_id FROM public.dd_watermark_events WHERE check_id = $1 ORDER BY event_sequence",
            &[&definition.check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(blockers, [Some(runs[0]), None, None, None], "the first evaluation recomputes, the appends do not");
    let events: Vec<(String, Option<DateTime<Utc>>, String)> =
        events(&repo, &definition).into_iter().map(|(_, event, _, end, status)| (event, end, status)).collect();
    let blocked = |event: &str| (event.to_owned(), Some(at(12, 0)), "BLOCKED".to_owned());
    assert_eq!(events, [blocked("INITIALIZE"), blocked("BLOCK"), blocked("BLOCK"), blocked("BLOCK")]);
    let row = state(&repo, &definition).unwrap();
    assert_eq!(
        row,
        (
            Some(at(12, 0)),
            Some(at(12, 0)),
            at(16, 0),
            "BLOCKED".to_owned(),
            None,
            runs[3],
            "BLOCK".to_owned(),
            4,
            at(16, 6),
            "Metadata-only checks cannot advance table coverage".to_owned(),
        )
    );
}
