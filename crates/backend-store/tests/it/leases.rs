//! The lease: preflight records, historical starts and finishes write only while the attempt
//! is RUNNING; the stale sweep expires abandoned attempts (of superseded revisions too).

use chrono::{DateTime, Utc};
use datadiff_backend_store::{Completion, Difference, Error, NewPreflight};
use datadiff_diff_core::{
    attempt::{
        CheckId, CheckResult, PreflightId, PreflightStatus, ResultStatus, ResultType, RunId, RunStatus,
        STALE_SWEEP_ERROR, SkipReason, TriggerType,
    },
    definition::CheckType,
    merge::DifferenceKind,
};
use serde_json::json;
use uuid::Uuid;

use crate::support::{Repo, at, repo, scheduled, table};

fn indexed_pass() -> NewPreflight {
    NewPreflight {
        status: PreflightStatus::Pass,
        query_fingerprint: "ab".repeat(32),
        index_metadata: json!([{"name": "t_updated_at_idx", "columns": ["updated_at"], "method": "btree"}]),
        findings: json!([]),
        error: None,
        table_rows: None,
        row_limit: None,
        has_leading_index: Some(true),
    }
}

type PreflightRow = (Uuid, String, DateTime<Utc>, String, serde_json::Value, serde_json::Value, Option<String>);
/// `(table_rows, row_limit, has_leading_index)`.
type Counts = (Option<i64>, Option<i64>, Option<bool>);
/// `(evaluated_run_id, event_type, verified_end, verified_status, blocking_run_id, recorded_at)`.
type EventRow = (Uuid, String, Option<DateTime<Utc>>, String, Option<Uuid>, DateTime<Utc>);

fn preflight_rows(repo: &Repo) -> Vec<(PreflightRow, Counts)> {
    repo.sql()
        .query(
            "SELECT check_id, status, checked_at, query_fingerprint::text, index_metadata, findings, error, \
             table_rows, row_limit, has_leading_index FROM public.dd_preflight_log ORDER BY checked_at",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| {
            (
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5), row.get(6)),
                (row.get(7), row.get(8), row.get(9)),
            )
        })
        .collect()
}

fn linked_preflight(repo: &Repo, run_id: RunId) -> Option<Uuid> {
    repo.sql()
        .query_one("SELECT preflight_id FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
        .unwrap()
        .get(0)
}

/// Sweeps at `now` every attempt older than the definition's budget (60 s → 34 minutes).
fn sweep(repo: &Repo, check_id: CheckId, now: DateTime<Utc>) -> Vec<RunId> {
    let definition = repo.store.definition(check_id).unwrap().unwrap();
    repo.store.sweep_stale(&definition, now).unwrap().into_iter().map(|swept| swept.attempt.run_id).collect()
}

#[test]
fn a_preflight_is_recorded_and_linked_once_per_attempt() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let id = repo.store.record_preflight(attempt.run_id, definition.check_id, &indexed_pass(), at(13, 6)).unwrap();
    assert_eq!(linked_preflight(&repo, attempt.run_id), Some(id.get()));
    let rows = preflight_rows(&repo);
    assert_eq!(rows.len(), 1);
    let preflight = indexed_pass();
    assert_eq!(
        rows[0],
        (
            (
                definition.check_id.get(),
                "PASS".to_owned(),
                at(13, 6),
                "ab".repeat(32),
                preflight.index_metadata.clone(),
                json!([]),
                None
            ),
            (None, None, Some(true))
        )
    );
    // One preflight per attempt: a second record returns the linked one and writes nothing.
    let again = repo.store.record_preflight(attempt.run_id, definition.check_id, &indexed_pass(), at(13, 7)).unwrap();
    assert_eq!(again, id);
    assert_eq!(preflight_rows(&repo).len(), 1);

    // An unindexed table's bounded count evidence.
    for (n, rows) in [75_000_i64, 100_000].into_iter().enumerate() {
        let attempt = repo.start(&definition, at(14 + n as u32, 0), scheduled(false), at(14 + n as u32, 5));
        let bounded = NewPreflight {
            status: if rows < 100_000 { PreflightStatus::Pass } else { PreflightStatus::Blocked },
            index_metadata: json!([]),
            findings: json!(["no usable index"]),
            table_rows: Some(rows),
            row_limit: Some(100_000),
            has_leading_index: Some(false),
            ..indexed_pass()
        };
        repo.store.record_preflight(attempt.run_id, definition.check_id, &bounded, at(14 + n as u32, 6)).unwrap();
    }
    let evidence: Vec<(String, Counts)> =
        preflight_rows(&repo).into_iter().skip(1).map(|(row, counts)| (row.1, counts)).collect();
    assert_eq!(
        evidence,
        [
            ("PASS".to_owned(), (Some(75_000), Some(100_000), Some(false))),
            ("BLOCKED".to_owned(), (Some(100_000), Some(100_000), Some(false)))
        ]
    );
}

#[test]
fn a_preflight_for_another_check_or_a_bad_fingerprint_is_refused_without_writing() {
    let repo = repo();
    let stored = repo.import(&[table("t", "x"), table("t", "y")], at(0, 0));
    let attempt = repo.start(&stored[0], at(13, 0), scheduled(false), at(13, 5));
    let error =
        repo.store.record_preflight(attempt.run_id, stored[1].check_id, &indexed_pass(), at(13, 6)).unwrap_err();
    assert!(matches!(error, Error::PreflightCheckMismatch { given, .. } if given == stored[1].check_id));
    let bad = NewPreflight { query_fingerprint: "AB".repeat(32), ..indexed_pass() };
    let error = repo.store.record_preflight(attempt.run_id, stored[0].check_id, &bad, at(13, 6)).unwrap_err();
    assert!(matches!(error, Error::InvalidFingerprint(_)));
    assert!(preflight_rows(&repo).is_empty());
    assert_eq!(linked_preflight(&repo, attempt.run_id), None);
}

#[test]
fn a_lost_lease_rejects_late_preflight_start_and_finish_writes() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    let definition = repo.import_one(&definition, at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    // 34 minutes later (60 s budget) the sweep expires it.
    assert!(sweep(&repo, definition.check_id, at(13, 38)).is_empty(), "not stale yet");
    assert_eq!(sweep(&repo, definition.check_id, at(13, 39)), [attempt.run_id]);
    let swept_state = repo.store.watermark_state(definition.check_id).unwrap();

    let lost = |error: Error| {
        let reason = error.lease_lost().expect("a lost lease");
        assert_eq!(reason, SkipReason::LeaseLost { run_id: attempt.run_id, status: RunStatus::Error });
        assert!(
            reason.message().ends_with("its lease expired or it was already completed. Late results were discarded.")
        );
    };
    lost(repo.store.record_preflight(attempt.run_id, definition.check_id, &indexed_pass(), at(13, 40)).unwrap_err());
    lost(repo.store.resolve_historical_start(attempt.run_id, at(9, 0)).unwrap_err());
    let late = Completion {
        run_id: attempt.run_id,
        status: RunStatus::Pass,
        preflight_id: Some(PreflightId::new(Uuid::new_v4())),
        error: None,
        results: vec![CheckResult {
            check_type: ResultType::Check(CheckType::RowCount),
            status: ResultStatus::Pass,
            source_value: json!("4"),
            target_value: json!("4"),
            source_query_seconds: Some(0.5),
            target_query_seconds: Some(0.5),
            error: None,
        }],
        differences: vec![Difference {
            check_type: ResultType::RowDiff,
            kind: DifferenceKind::MissingInTarget,
            key: json!({"id": "1"}),
            fields: vec![],
        }],
        finished_at: at(13, 41),
    };
    lost(repo.store.finish_attempt(&late).unwrap_err());

    // Nothing of the late worker is stored: the sweep's outcome stands.
    let row = repo
        .sql()
        .query_one(
            "SELECT status, window_start, finished_at, error, preflight_id FROM public.dd_run_attempts WHERE run_id = $1",
            &[&attempt.run_id.get()],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "ERROR");
    assert_eq!(row.get::<_, Option<DateTime<Utc>>>(1), None);
    assert_eq!(row.get::<_, Option<DateTime<Utc>>>(2), Some(at(13, 39)));
    assert_eq!(row.get::<_, Option<String>>(3).as_deref(), Some(STALE_SWEEP_ERROR));
    assert_eq!(row.get::<_, Option<Uuid>>(4), None);
    assert_eq!(repo.count("SELECT * FROM public.dd_preflight_log"), 0);
    assert_eq!(repo.count("SELECT * FROM public.dd_run_results"), 0);
    assert_eq!(repo.count("SELECT * FROM public.datadiff_run_differences"), 0);
    assert_eq!(repo.count("SELECT * FROM public.dd_watermark_events"), 1, "only the sweep's event");
    assert_eq!(repo.store.watermark_state(definition.check_id).unwrap(), swept_state);
}

#[test]
fn a_duplicate_completion_keeps_the_first_result_and_watermark() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let first = repo.finish(attempt.run_id, RunStatus::Pass, at(13, 6));
    let error = repo.store.finish_attempt(&Completion {
        run_id: attempt.run_id,
        status: RunStatus::Fail,
        preflight_id: None,
        error: Some("row_count FAIL".into()),
        results: Vec::new(),
        differences: Vec::new(),
        finished_at: at(13, 7),
    });
    assert!(matches!(error, Err(Error::LeaseLost { status: RunStatus::Pass, .. })));
    assert_eq!(repo.store.attempt(attempt.run_id).unwrap().unwrap(), first.attempt);
    assert_eq!(repo.store.watermark_state(definition.check_id).unwrap(), first.coverage.map(|outcome| outcome.state));
    assert!(matches!(
        repo.store.finish_attempt(&Completion { run_id: RunId::new(Uuid::nil()), ..completion_of(attempt.run_id) }),
        Err(Error::UnknownRun(_))
    ));
}

fn completion_of(run_id: RunId) -> Completion {
    Completion {
        run_id,
        status: RunStatus::Pass,
        preflight_id: None,
        error: None,
        results: Vec::new(),
        differences: Vec::new(),
        finished_at: at(23, 0),
    }
}

#[test]
fn a_historical_start_is_written_only_for_its_unresolved_running_attempt() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    let definition = repo.import_one(&definition, at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.store.resolve_historical_start(attempt.run_id, at(9, 30)).unwrap();
    assert_eq!(repo.attempt_rows(definition.check_id)[0].4, Some(at(9, 30)));
    // A resolved start is never overwritten.
    let error = repo.store.resolve_historical_start(attempt.run_id, at(8, 0)).unwrap_err();
    assert!(matches!(error, Error::StartAlreadyResolved { run_id } if run_id == attempt.run_id));
    // The start survives a later failure of the comparison.
    repo.finish(attempt.run_id, RunStatus::Error, at(13, 6));
    assert_eq!(repo.attempt_rows(definition.check_id)[0].4, Some(at(9, 30)));
    // A rolling attempt has nothing to resolve.
    let rolling = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    assert!(matches!(
        repo.store.resolve_historical_start(rolling.run_id, at(9, 0)),
        Err(Error::StartAlreadyResolved { .. })
    ));
    assert!(matches!(
        repo.store.resolve_historical_start(RunId::new(Uuid::nil()), at(9, 0)),
        Err(Error::UnknownRun(_))
    ));
}

#[test]
fn the_sweep_expires_every_stale_attempt_of_the_check_with_coverage_and_nothing_younger() {
    let repo = repo();
    let mut definition = table("t", "x");
    definition.initial_full_scan = true;
    let definition = repo.import_one(&definition, at(0, 0));
    let other = repo.import_one(&table("t", "other"), at(0, 0));
    let historical = repo.start(&definition, at(10, 0), scheduled(false), at(10, 0));
    // Any slot, any trigger: a rolling attempt inserted by hand as another worker's retry.
    let retry = Uuid::new_v4();
    repo.sql()
        .execute(
            "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, attempt, \
             trigger_type, status, started_at) VALUES ($1, $2, $3, $4, $3, 2, 'RETRY', 'RUNNING', $5)",
            &[&retry, &definition.check_id.get(), &at(9, 0), &at(8, 0), &at(10, 1)],
        )
        .unwrap();
    let young = RunId::new(Uuid::new_v4());
    repo.sql()
        .execute(
            "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, attempt, \
             trigger_type, status, started_at) VALUES ($1, $2, $3, $4, $3, 1, 'MANUAL', 'RUNNING', $5)",
            &[&young.get(), &definition.check_id.get(), &at(11, 0), &at(10, 0), &at(10, 2)],
        )
        .unwrap();
    let elsewhere = repo.start(&other, at(10, 0), scheduled(false), at(10, 0));

    // The cutoff is inclusive: started_at <= now - 34 min.
    let swept = repo.store.sweep_stale(&definition, at(10, 35)).unwrap();
    let ids: Vec<RunId> = swept.iter().map(|swept| swept.attempt.run_id).collect();
    assert_eq!(ids, [RunId::new(retry), historical.run_id], "slot order");
    assert!(swept.iter().all(|swept| swept.attempt.status == RunStatus::Error));
    let statuses: Vec<(i32, String, String)> = repo
        .sql()
        .query(
            "SELECT attempt, status, coalesce(error, '') FROM public.dd_run_attempts WHERE check_id = $1 \
             ORDER BY scheduled_for, attempt",
            &[&definition.check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    assert_eq!(
        statuses,
        [
            (2, "ERROR".to_owned(), STALE_SWEEP_ERROR.to_owned()),
            (1, "ERROR".to_owned(), STALE_SWEEP_ERROR.to_owned()),
            (1, "RUNNING".to_owned(), String::new())
        ]
    );
    assert_eq!(repo.store.attempt(young).unwrap().unwrap().status, RunStatus::Running);
    assert_eq!(repo.store.attempt(elsewhere.run_id).unwrap().unwrap().status, RunStatus::Running, "other checks");
    // Each swept run was evaluated: the unresolved historical one blocks with NULL bounds.
    let events: Vec<EventRow> = repo
        .sql()
        .query(
            "SELECT evaluated_run_id, event_type, verified_end, verified_status, blocking_run_id, recorded_at \
             FROM public.dd_watermark_events ORDER BY event_sequence",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5)))
        .collect();
    assert_eq!(
        events,
        [
            (retry, "INITIALIZE".into(), Some(at(8, 0)), "BLOCKED".into(), Some(retry), at(10, 35)),
            (
                historical.run_id.get(),
                "INVALIDATE".into(),
                None,
                "BLOCKED".into(),
                Some(historical.run_id.get()),
                at(10, 35)
            ),
        ]
    );
    assert!(sweep(&repo, definition.check_id, at(10, 35)).is_empty(), "nothing left to sweep");
}

#[test]
fn the_sweep_also_retires_stale_attempts_of_superseded_revisions() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let failed = repo.start(&definition, at(10, 0), scheduled(false), at(10, 0));
    repo.finish(failed.run_id, RunStatus::Fail, at(10, 1));
    let remediation = repo.store.start_remediation(failed.run_id, "INC-1", at(10, 2)).unwrap().attempt;
    assert_eq!(remediation.trigger, TriggerType::Remediation);
    // A new revision is imported while the remediation's worker has died.
    let mut changed = table("t", "x");
    changed.statement_timeout_seconds = 120;
    let current = repo.import_one(&changed, at(10, 5));
    assert_ne!(current.check_id, definition.check_id);
    // Sweeping the current revision leaves the old one alone…
    assert!(repo.store.sweep_stale(&current, at(12, 0)).unwrap().is_empty());
    // … the superseded sweep retires it, with its own revision's budget and coverage.
    let filter = datadiff_backend_store::DefinitionFilter { tap: Some("t".into()), ..Default::default() };
    assert!(repo.store.sweep_superseded(&filter, at(10, 33)).unwrap().is_empty(), "31 minutes: not stale");
    let swept = repo.store.sweep_superseded(&filter, at(10, 36)).unwrap();
    assert_eq!(swept.len(), 1);
    assert_eq!((swept[0].attempt.run_id, swept[0].attempt.status), (remediation.run_id, RunStatus::Error));
    let state = swept[0].coverage.as_ref().unwrap();
    assert_eq!(state.state.last_evaluated_run_id, remediation.run_id);
    assert_eq!(state.state.state_version, 2);
    let slot_run: Uuid = repo
        .sql()
        .query_one("SELECT run_id FROM public.dd_run_slot_state WHERE check_id = $1", &[&definition.check_id.get()])
        .unwrap()
        .get(0);
    assert_eq!(slot_run, remediation.run_id.get(), "the higher attempt is the slot's outcome");
    let other_tap = datadiff_backend_store::DefinitionFilter { tap: Some("u".into()), ..Default::default() };
    assert!(repo.store.sweep_superseded(&other_tap, at(23, 0)).unwrap().is_empty());
}

/// PipelineWise stores any `statement_timeout` (`88000w` is 53,222,400,000 s); 30 minutes plus
/// four times that reaches back to 4720 BC, before PostgreSQL's first timestamp. Such a
/// revision must neither fail the sweep nor the schedule overview of the others.
#[test]
fn a_stored_timeout_beyond_postgresqls_limit_does_not_stop_the_sweep_of_the_others() {
    let repo = repo();
    let mut huge = table("t", "huge");
    huge.statement_timeout_seconds = 88_000 * 604_800;
    let huge = repo.import_one(&huge, at(0, 0));
    let normal = repo.import_one(&table("t", "normal"), at(0, 0));
    let huge_attempt = repo.start(&huge, at(10, 0), scheduled(false), at(10, 0));
    let normal_attempt = repo.start(&normal, at(10, 0), scheduled(false), at(10, 0));

    // One query for every definition: it reads, and only the 60 s revision is stale at 10:35.
    let overview = repo.store.schedule_overview(&[(&huge, at(10, 0)), (&normal, at(10, 0))], at(10, 35)).unwrap();
    let stale: Vec<bool> = overview.iter().map(|entry| entry.has_stale_attempt).collect();
    assert_eq!(stale, [false, true]);
    assert!(repo.store.sweep_stale(&huge, at(10, 35)).unwrap().is_empty());
    assert_eq!(sweep(&repo, normal.check_id, at(10, 35)), [normal_attempt.run_id]);
    assert_eq!(repo.store.attempt(huge_attempt.run_id).unwrap().unwrap().status, RunStatus::Running);

    // Its lease counts PostgreSQL's longest timeout (2,147,483 s): 30 min + 4 × that later it
    // is swept like any other.
    let lease = chrono::TimeDelta::minutes(30) + chrono::TimeDelta::seconds(4 * 2_147_483);
    assert!(repo.store.sweep_stale(&huge, at(10, 0) + lease - chrono::TimeDelta::seconds(1)).unwrap().is_empty());
    let swept = repo.store.sweep_stale(&huge, at(10, 0) + lease).unwrap();
    assert_eq!(swept.iter().map(|swept| swept.attempt.run_id).collect::<Vec<_>>(), [huge_attempt.run_id]);

    // A superseded revision with such a timeout is swept with the others too.
    let stuck = repo.start(&huge, at(11, 0), scheduled(false), at(11, 0));
    let old_normal = repo.start(&normal, at(11, 0), scheduled(false), at(11, 0));
    let mut huge_again = table("t", "huge");
    huge_again.statement_timeout_seconds = i64::MAX;
    let mut normal_again = table("t", "normal");
    normal_again.statement_timeout_seconds = 120;
    repo.import(&[huge_again, normal_again], at(11, 5));
    let filter = datadiff_backend_store::DefinitionFilter { tap: Some("t".into()), ..Default::default() };
    let swept = repo.store.sweep_superseded(&filter, at(11, 35)).unwrap();
    assert_eq!(swept.iter().map(|swept| swept.attempt.run_id).collect::<Vec<_>>(), [old_normal.run_id]);
    assert_eq!(repo.store.attempt(stuck.run_id).unwrap().unwrap().status, RunStatus::Running);
    let current = repo.store.definitions(&filter).unwrap();
    let overview = repo.store.schedule_overview(&[(&current[0], at(12, 0)), (&current[1], at(12, 0))], at(12, 0));
    assert_eq!(overview.unwrap().len(), 2, "an i64::MAX timeout reads too");
}

/// The bounds diff-core assumes, asked of a real server: `statement_timeout`'s maximum and
/// the first timestamp the stale cutoff may bind.
#[test]
fn postgresql_accepts_the_bounds_datadiff_assumes() {
    let repo = repo();
    let mut sql = repo.sql();
    let max_val: String =
        sql.query_one("SELECT max_val FROM pg_settings WHERE name = 'statement_timeout'", &[]).unwrap().get(0);
    assert_eq!(max_val, i32::MAX.to_string());
    let longest = datadiff_diff_core::definition::Duration::MAX_STATEMENT_TIMEOUT.seconds();
    let set = |client: &mut postgres::Client, seconds: i64| {
        client.query_one(&format!("SELECT set_config('statement_timeout', '{seconds}s', false)"), &[]).map(|_| ())
    };
    set(&mut sql, longest).unwrap();
    let error = set(&mut sql, longest + 1).unwrap_err();
    let message = error.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
    assert!(message.contains("statement_timeout"), "{error:?}");

    let mut sql = repo.sql();
    let first = datadiff_diff_core::attempt::stale_cutoff(DateTime::<Utc>::MIN_UTC, 60);
    let shown: String = sql.query_one("SELECT ($1::timestamptz AT TIME ZONE 'UTC')::text", &[&first]).unwrap().get(0);
    assert_eq!(shown, "4714-11-24 00:00:00 BC");
    let before = first - chrono::TimeDelta::microseconds(1);
    let error = sql.query_one("SELECT $1::timestamptz", &[&before]).unwrap_err();
    let message = error.as_db_error().map(|db| db.message().to_owned()).unwrap_or_default();
    assert_eq!(message, "timestamp out of range", "{error:?}");
}

/// A stored window reaching before PostgreSQL's first timestamp (another tool stored
/// `window_start` = 400,000 weeks) fails that revision's start with a clear error, before any
/// write; the others start.
#[test]
fn a_stored_window_before_postgresqls_first_timestamp_fails_only_its_own_start() {
    let repo = repo();
    let mut far = table("t", "far");
    far.window_start_seconds = 400_000 * 604_800;
    let far = repo.import_one(&far, at(0, 0));
    let normal = repo.import_one(&table("t", "normal"), at(0, 0));
    let error = repo.store.start_attempt(&far, at(10, 0), scheduled(false), at(10, 5)).unwrap_err();
    assert!(
        matches!(error, Error::WindowOutOfRange { check_id, scheduled_for } if check_id == far.check_id && scheduled_for == at(10, 0)),
        "{error:?}"
    );
    assert_eq!(repo.count("SELECT * FROM public.dd_run_attempts"), 0);
    repo.start(&normal, at(10, 0), scheduled(false), at(10, 5));
    assert_eq!(repo.count("SELECT * FROM public.dd_run_attempts"), 1);
}
