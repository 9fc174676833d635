//! The end-to-end lifecycle of upstream's PostgreSQL test (runs note §4.4): a history typed
//! by hand as PipelineWise's own tool leaves it (import, historical first run PASS, forced
//! rerun FAIL) is continued by datadiff's repositories (remediation PASS, next slot PASS),
//! giving the events INITIALIZE → INVALIDATE → ADVANCE → ADVANCE and state versions 1–4.

use chrono::{DateTime, Utc};
use datadiff_backend_store::{Completion, DefinitionFilter, NewPreflight, StartOutcome, SyncScope};
use datadiff_diff_core::{
    attempt::{
        Bounds, CheckId, CheckResult, PreflightStatus, ResultStatus, ResultType, RunId, RunStatus, TriggerType,
        due_slots,
    },
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
};
use serde_json::json;
use uuid::Uuid;

use crate::support::{at, repo, scheduled};

const CHECK: &str = "5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01";
const PASSED: &str = "7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c01";
const FAILED: &str = "7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02";
const CANONICAL: &str = r#"{"checks":["row_count","row_checksum"],"frequency":"0 * * * *","initial_full_scan":true,"source_compare_columns":["status","amount"],"source_database":"payments","source_key_column":"id","source_schema":"public","source_table":"transfers","source_timestamp_column":"updated_at","source_type":"tap-postgres","statement_timeout_seconds":60,"tap_id":"payments","target_compare_columns":["status","amount"],"target_database":"warehouse","target_id":"postgres","target_key_column":"id","target_schema":"replicated_payments","target_table":"transfers","target_timestamp_column":"updated_at","target_type":"target-postgres","window_end_seconds":0,"window_start_seconds":3600}"#;
/// SHA-256 of `CANONICAL`, computed with Python's hashlib.
const HASH: &str = "1e10191db101419fa807b9cc07e8bc6c10194e192123a2b32445e1227e4b4c11";

/// What PipelineWise's tool wrote: the import, the first (historical) run that passed, a
/// forced rerun of the same slot that failed, with their preflights, results, slot state,
/// watermark state and events.
const UPSTREAM_HISTORY: &str = r#"
INSERT INTO public.dd_check_definitions (check_id, full_check_name, revision, config_hash, canonical_config,
    target_id, tap_id, source_type, target_type, source_database, target_database, source_schema, source_table,
    target_schema, target_table, source_key_column, target_key_column, source_timestamp_column,
    target_timestamp_column, checks, frequency, window_start_seconds, window_end_seconds, statement_timeout_seconds,
    is_current, created_at, superseded_at)
VALUES ('5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', 'postgres/payments/public/transfers', 1,
    '1e10191db101419fa807b9cc07e8bc6c10194e192123a2b32445e1227e4b4c11', $canonical$, 'postgres', 'payments',
    'tap-postgres', 'target-postgres', 'payments', 'warehouse', 'public', 'transfers', 'replicated_payments',
    'transfers', 'id', 'id', 'updated_at', 'updated_at', '["row_count", "row_checksum"]', '0 * * * *', 3600, 0, 60,
    TRUE, '2026-07-22 09:00:00.123456+00', NULL);

INSERT INTO public.dd_preflight_log VALUES
    ('a0000000-0000-4000-8000-000000000001', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', 'PASS',
     '2026-07-22 13:00:06.5+00', 'f2ca1bb6c7e907d06dafe4687e579fce76b37e4e93b7605022da52e6ccc26fd2',
     '[{"name": "transfers_updated_at_idx", "columns": ["updated_at"], "method": "btree", "valid": true}]',
     '[]', NULL, NULL, NULL, TRUE),
    ('a0000000-0000-4000-8000-000000000002', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', 'PASS',
     '2026-07-22 13:10:01+00', 'f2ca1bb6c7e907d06dafe4687e579fce76b37e4e93b7605022da52e6ccc26fd2',
     '[{"name": "transfers_updated_at_idx", "columns": ["updated_at"], "method": "btree", "valid": true}]',
     '[]', NULL, NULL, NULL, TRUE);

INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, attempt,
    trigger_type, status, rerun_of_run_id, remediation_reference, preflight_id, started_at, finished_at, error)
VALUES
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c01', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', '2026-07-22 13:00:00+00',
     '2026-07-22 09:30:00+00', '2026-07-22 13:00:00+00', 1, 'SCHEDULED', 'PASS', NULL, NULL,
     'a0000000-0000-4000-8000-000000000001', '2026-07-22 13:00:05+00', '2026-07-22 13:00:09+00', NULL),
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', '2026-07-22 13:00:00+00',
     '2026-07-22 09:30:00+00', '2026-07-22 13:00:00+00', 2, 'MANUAL', 'FAIL', NULL, NULL,
     'a0000000-0000-4000-8000-000000000002', '2026-07-22 13:10:00+00', '2026-07-22 13:10:04+00',
     'row_checksum FAIL');

INSERT INTO public.dd_run_results VALUES
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c01', 'row_count', 'PASS', '"4"', '"4"', 0.004, 0.003, NULL),
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c01', 'row_checksum', 'PASS', '"181442033815354"', '"181442033815354"',
     0.004, 0.003, NULL),
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', 'row_count', 'PASS', '"4"', '"4"', 0.005, 0.004, NULL),
    ('7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', 'row_checksum', 'FAIL', '"181442033815354"', '"207349011276543"',
     0.005, 0.004, NULL);

INSERT INTO public.dd_run_slot_state VALUES
    ('5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', '2026-07-22 13:00:00+00', '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', 2,
     '2026-07-22 09:30:00+00', '2026-07-22 13:00:00+00', 'FAIL');

INSERT INTO public.dd_watermark_state VALUES
    ('5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01', '2026-07-22 09:30:00+00', '2026-07-22 09:30:00+00',
     '2026-07-22 13:00:00+00', 'BLOCKED', '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02',
     '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', 'INVALIDATE', 2, '2026-07-22 13:10:04+00',
     'Run 7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02 has status FAIL at the coverage boundary');

INSERT INTO public.dd_watermark_events (watermark_event_id, check_id, evaluated_run_id, event_type, verified_start,
    previous_verified_end, verified_end, furthest_observed_end, verified_status, blocking_run_id, recorded_at, reason)
VALUES
    ('e0000000-0000-4000-8000-000000000001', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01',
     '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c01', 'INITIALIZE', '2026-07-22 09:30:00+00', NULL,
     '2026-07-22 13:00:00+00', '2026-07-22 13:00:00+00', 'CONTIGUOUS', NULL, '2026-07-22 13:00:09+00',
     'All observed timestamp intervals are covered by successful runs'),
    ('e0000000-0000-4000-8000-000000000002', '5f0c6a36-0d5e-4a8f-9a57-2f7d7c1e0a01',
     '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02', 'INVALIDATE', '2026-07-22 09:30:00+00', '2026-07-22 13:00:00+00',
     '2026-07-22 09:30:00+00', '2026-07-22 13:00:00+00', 'BLOCKED', '7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02',
     '2026-07-22 13:10:04+00', 'Run 7b1d2c3e-4f50-4a6b-8c7d-9e0f1a2b3c02 has status FAIL at the coverage boundary');
"#;

/// The definition PipelineWise imported, as the config crate would build it from the YAML.
fn transfers() -> CheckDefinition {
    CheckDefinition {
        full_check_name: "postgres/payments/public/transfers".into(),
        target_id: "postgres".into(),
        tap_id: "payments".into(),
        source_type: SourceType::TapPostgres,
        target_type: TargetType::TargetPostgres,
        source_database: "payments".into(),
        target_database: "warehouse".into(),
        source_schema: "public".into(),
        source_table: "transfers".into(),
        target_schema: "replicated_payments".into(),
        target_table: "transfers".into(),
        source_key_column: "id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: vec!["status".into(), "amount".into()],
        target_compare_columns: vec!["status".into(), "amount".into()],
        checks: vec![CheckType::RowCount, CheckType::RowChecksum],
        frequency: "0 * * * *".into(),
        window_start_seconds: 3600,
        window_end_seconds: 0,
        statement_timeout_seconds: 60,
        initial_full_scan: true,
        extensions: Extensions::default(),
    }
}

fn passing_results() -> Vec<CheckResult> {
    [CheckType::RowCount, CheckType::RowChecksum]
        .into_iter()
        .zip([json!("4"), json!("181442033815354")])
        .map(|(check, value)| CheckResult {
            check_type: ResultType::Check(check),
            status: ResultStatus::Pass,
            source_value: value.clone(),
            target_value: value,
            source_query_seconds: Some(0.004),
            target_query_seconds: Some(0.003),
            error: None,
        })
        .collect()
}

fn indexed() -> NewPreflight {
    NewPreflight {
        status: PreflightStatus::Pass,
        query_fingerprint: "f2ca1bb6c7e907d06dafe4687e579fce76b37e4e93b7605022da52e6ccc26fd2".into(),
        index_metadata: json!([{"name": "transfers_updated_at_idx", "columns": ["updated_at"]}]),
        findings: json!([]),
        error: None,
        table_rows: None,
        row_limit: None,
        has_leading_index: Some(true),
    }
}

#[test]
fn an_upstream_history_continued_by_datadiff_gives_upstreams_events_and_versions() {
    let repo = repo();
    assert_eq!(transfers().canonical_json(), CANONICAL, "our canonical JSON is upstream's");
    repo.sql().batch_execute(&UPSTREAM_HISTORY.replace("$canonical$", &format!("'{CANONICAL}'"))).unwrap();
    let store = &repo.store;
    let check_id = CheckId::new(CHECK.parse().unwrap());
    let failed = RunId::new(FAILED.parse().unwrap());

    // Re-importing the same YAML leaves upstream's row alone: same hash, unchanged.
    let report = store.sync_definitions(&[transfers()], &SyncScope::all(), at(13, 20)).unwrap();
    assert_eq!((report.unchanged, report.created, report.historical_scans_pending), (1, 0, 0));
    let stored = store.definition(check_id).unwrap().unwrap();
    assert_eq!((stored.config_hash.as_str(), &stored.definition), (HASH, &transfers()));

    // Remediation of the forced FAIL: attempt 3, linked to the failed root, same window.
    let remediation = store.start_remediation(failed, "INC-7", at(13, 30)).unwrap();
    let fix = remediation.attempt;
    assert_eq!(
        (fix.attempt, fix.trigger, fix.bounds, fix.rerun_of_run_id),
        (3, TriggerType::Remediation, Bounds { start: Some(at(9, 30)), end: at(13, 0) }, Some(failed))
    );
    let preflight = store.record_preflight(fix.run_id, check_id, &indexed(), at(13, 30)).unwrap();
    let finished = store
        .finish_attempt(&Completion {
            run_id: fix.run_id,
            status: RunStatus::Pass,
            preflight_id: Some(preflight),
            error: None,
            results: passing_results(),
            differences: Vec::new(),
            finished_at: at(13, 31),
        })
        .unwrap();
    assert_eq!(finished.coverage.as_ref().map(|outcome| outcome.state.state_version), Some(3));

    // The next cron slot: due after upstream's latest slot, rolling (the first run counted).
    let schedule = stored.definition.schedule().unwrap();
    let now = at(14, 5);
    let latest = store.latest_scheduled_for(check_id).unwrap();
    assert_eq!(latest, Some(at(13, 0)));
    let due = due_slots(&schedule, latest, schedule.current_slot(now).unwrap());
    assert_eq!(due, [at(14, 0)]);
    let StartOutcome::Started(next) = store.start_attempt(&stored, due[0], scheduled(false), now).unwrap() else {
        panic!("the next slot starts")
    };
    assert_eq!((next.attempt, next.trigger, next.bounds.start), (1, TriggerType::Scheduled, Some(at(13, 0))));
    store.record_preflight(next.run_id, check_id, &indexed(), at(14, 5)).unwrap();
    let appended = store
        .finish_attempt(&Completion {
            run_id: next.run_id,
            status: RunStatus::Pass,
            preflight_id: None,
            error: None,
            results: passing_results(),
            differences: Vec::new(),
            finished_at: at(14, 6),
        })
        .unwrap();
    assert_eq!(appended.coverage.as_ref().map(|outcome| outcome.state.state_version), Some(4));

    // The events, as rows.
    type Event = (String, Uuid, Option<DateTime<Utc>>, Option<DateTime<Utc>>, String, Option<Uuid>);
    let events: Vec<Event> = repo
        .sql()
        .query(
            "SELECT event_type, evaluated_run_id, previous_verified_end, verified_end, verified_status, \
             blocking_run_id FROM public.dd_watermark_events WHERE check_id = $1 ORDER BY event_sequence",
            &[&check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5)))
        .collect();
    let failed_uuid = failed.get();
    assert_eq!(
        events,
        [
            ("INITIALIZE".into(), PASSED.parse().unwrap(), None, Some(at(13, 0)), "CONTIGUOUS".into(), None),
            ("INVALIDATE".into(), failed_uuid, Some(at(13, 0)), Some(at(9, 30)), "BLOCKED".into(), Some(failed_uuid)),
            ("ADVANCE".into(), fix.run_id.get(), Some(at(9, 30)), Some(at(13, 0)), "CONTIGUOUS".into(), None),
            ("ADVANCE".into(), next.run_id.get(), Some(at(13, 0)), Some(at(14, 0)), "CONTIGUOUS".into(), None),
        ]
    );
    let state = repo
        .sql()
        .query_one(
            "SELECT verified_start, verified_end, furthest_observed_end, verified_status, last_evaluated_run_id, \
             event_type, state_version, updated_at FROM public.dd_watermark_state WHERE check_id = $1",
            &[&check_id.get()],
        )
        .unwrap();
    assert_eq!(state.get::<_, Option<DateTime<Utc>>>(0), Some(at(9, 30)));
    assert_eq!(state.get::<_, Option<DateTime<Utc>>>(1), Some(at(14, 0)));
    assert_eq!(state.get::<_, DateTime<Utc>>(2), at(14, 0));
    assert_eq!(state.get::<_, String>(3), "CONTIGUOUS");
    assert_eq!(state.get::<_, Uuid>(4), next.run_id.get());
    assert_eq!((state.get::<_, String>(5), state.get::<_, i64>(6)), ("ADVANCE".into(), 4));
    assert_eq!(state.get::<_, DateTime<Utc>>(7), at(14, 6));
    let slots: Vec<(DateTime<Utc>, Uuid, i32, String)> = repo
        .sql()
        .query(
            "SELECT scheduled_for, run_id, attempt, status FROM public.dd_run_slot_state WHERE check_id = $1 \
             ORDER BY scheduled_for",
            &[&check_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect();
    assert_eq!(
        slots,
        [(at(13, 0), fix.run_id.get(), 3, "PASS".into()), (at(14, 0), next.run_id.get(), 1, "PASS".into())]
    );

    // A new revision without initial_full_scan starts rolling, with its own coverage.
    let mut bounded = transfers();
    bounded.initial_full_scan = false;
    let report = store.sync_definitions(&[bounded], &SyncScope::all(), at(14, 30)).unwrap();
    assert_eq!((report.superseded, report.created), (1, 1));
    let revision_2 = store.definitions(&DefinitionFilter::default()).unwrap().remove(0);
    assert_eq!((revision_2.revision, revision_2.config_hash == HASH), (2, false));
    let StartOutcome::Started(first) =
        store.start_attempt(&revision_2, at(15, 0), scheduled(false), at(15, 5)).unwrap()
    else {
        panic!("the new revision starts")
    };
    assert_eq!(first.bounds, Bounds { start: Some(at(14, 0)), end: at(15, 0) });
    assert_eq!(store.watermark_state(revision_2.check_id).unwrap(), None);
}
