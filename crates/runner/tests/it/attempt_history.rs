//! Historical first runs (runs note §1.5) and preflights that stop an attempt, asserted on the
//! backend's rows.

use datadiff_diff_core::{
    attempt::{Bounds, RunStatus},
    definition::CheckType,
};
use datadiff_runner::SummaryStatus;
use serde_json::json;

use crate::context::{Context, REPLICA_SQL, SOURCE_SQL, at, result, sha256_hex};

fn full_scan(context: &Context) -> datadiff_diff_core::definition::CheckDefinition {
    let mut definition = context.definition();
    definition.initial_full_scan = true;
    definition
}

#[test]
fn a_historical_start_is_the_later_minimum_persisted_before_comparing() {
    let context = Context::pipelinewise();
    // The replica's history starts at 12:00:00, the source's at 11:59:59.999999.
    context.replica.client().unwrap().batch_execute("DELETE FROM payments_public.transfers WHERE id = 1").unwrap();
    let summary = context.run(&full_scan(&context));
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error), ("PASS", None));
    assert_eq!((attempt.window_start, attempt.window_end), (Some(at(12, 0)), at(13, 0)));
    assert_eq!(summary.bounds, Some(Bounds { start: Some(at(12, 0)), end: at(13, 0) }));
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_count").source_value, json!("5"), "compared from the later minimum");
    assert_eq!(context.slot_state(run_id), Some(("PASS".into(), Some(at(12, 0)), at(13, 0))));
}

#[test]
fn a_resolved_start_survives_a_failing_comparison() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'x' WHERE id = 3")
        .unwrap();
    let summary = context.run(&full_scan(&context));
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    let start = chrono::DateTime::parse_from_rfc3339("2026-07-22T11:59:59.999999Z").unwrap().to_utc();
    assert_eq!((attempt.status.as_str(), attempt.window_start), ("FAIL", Some(start)));
    assert_eq!(attempt.error.as_deref(), Some("row_checksum FAIL"));
    assert_eq!(result(&context.result_rows(run_id), "row_count").source_value, json!("6"));
}

#[test]
fn an_empty_history_on_both_sides_defers_without_coverage() {
    let context = Context::new(
        &format!("{SOURCE_SQL} DELETE FROM public.\"Transfers\";"),
        &format!("{REPLICA_SQL} DELETE FROM payments_public.transfers;"),
    );
    let summary = context.run(&full_scan(&context));
    let run_id = summary.run_id.unwrap();
    let expected = "Historical comparison is pending: both source and target have no non-NULL timestamp before the \
                    cutoff 2026-07-22T13:00:00+00:00";
    assert_eq!((summary.status, summary.reason.as_deref()), (SummaryStatus::Deferred, Some(expected)));
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("DEFERRED", Some(expected)));
    assert_eq!((attempt.window_start, attempt.window_end), (None, at(13, 0)));
    assert_eq!(context.preflight_row(run_id).status, "PASS", "the preflight is recorded before MIN");
    assert!(context.result_rows(run_id).is_empty());
    assert_eq!(context.slot_state(run_id), None, "DEFERRED leaves the slot state alone");
    assert_eq!(context.watermark(&summary), None, "and the watermark");
}

#[test]
fn history_on_one_side_only_is_an_error_that_blocks_coverage_without_a_start() {
    let context = Context::new(SOURCE_SQL, &format!("{REPLICA_SQL} DELETE FROM payments_public.transfers;"));
    let summary = context.run(&full_scan(&context));
    let run_id = summary.run_id.unwrap();
    let expected = "Historical comparison cannot start: target has no non-NULL timestamp before the cutoff 2026-07-22T13:00:00+00:00";
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(attempt.window_start, None);
    assert!(context.result_rows(run_id).is_empty());
    assert_eq!(context.slot_state(run_id), Some(("ERROR".into(), None, at(13, 0))));
    assert_eq!(context.watermark(&summary), Some(("BLOCKED".into(), None, None, vec!["INITIALIZE".into()])));
    assert!(summary.start_unresolved());
}

#[test]
fn an_empty_history_with_a_failed_schema_is_an_error_not_a_deferral() {
    let context = Context::new(
        &format!("{SOURCE_SQL} DELETE FROM public.\"Transfers\";"),
        &format!(
            "{REPLICA_SQL} DELETE FROM payments_public.transfers; ALTER TABLE payments_public.transfers DROP COLUMN amount;"
        ),
    );
    let mut definition = full_scan(&context);
    definition.checks = vec![CheckType::SchemaCompatibility, CheckType::RowCount];
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    let finding = "Amount: source exact_numeric is not compatible with target missing";
    assert_eq!(
        (attempt.status.as_str(), attempt.error.as_deref(), attempt.window_start),
        ("ERROR", Some(finding), None)
    );
    let rows = context.result_rows(run_id);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].check_type.as_str(), rows[0].status.as_str()), ("schema_compatibility", "FAIL"));
}

#[test]
fn a_blocked_preflight_keeps_the_schema_result_and_reads_no_data() {
    // 100,000 rows and no index on the timestamp column.
    let context = Context::new(
        "CREATE TABLE public.\"Transfers\" (\"Id\" bigint PRIMARY KEY, \"UpdatedAt\" timestamp, \
           \"Amount\" numeric(12,2), \"Status\" text); \
         INSERT INTO public.\"Transfers\" SELECT n, '2026-07-22 12:00'::timestamp + n * interval '1 ms', 1, 'x' \
           FROM generate_series(1, 100000) AS n;",
        REPLICA_SQL,
    );
    let mut definition = context.definition();
    definition.checks = vec![CheckType::SchemaCompatibility, CheckType::RowCount];
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let findings = [
        "No usable source index starts with timestamp column 'UpdatedAt'",
        "Add a source index beginning with the timestamp column; PipelineWise will not create it automatically",
    ];
    let attempt = context.attempt_row(run_id);
    assert_eq!(attempt.status, "ERROR");
    assert_eq!(attempt.error, Some(findings.join("; ")));
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.error), ("BLOCKED", None));
    assert_eq!(preflight.findings, json!(findings));
    assert_eq!(
        (preflight.table_rows, preflight.row_limit, preflight.has_leading_index),
        (Some(100_000), Some(100_000), Some(false))
    );
    assert_eq!(
        preflight.index_metadata[0]["columns"],
        json!(["Id"]),
        "the primary key, not leading with the timestamp"
    );
    assert_ne!(preflight.fingerprint, sha256_hex(&context, "preflight-not-built"));
    let rows = context.result_rows(run_id);
    assert_eq!(rows.len(), 1, "only the metadata result: no data was read");
    assert_eq!((rows[0].check_type.as_str(), rows[0].status.as_str()), ("schema_compatibility", "PASS"));
    assert_eq!(summary.slot_status, Some(RunStatus::Error));
    let facts = summary.preflight.unwrap();
    assert_eq!(
        (facts.status, facts.table_rows, facts.index_warning),
        (datadiff_diff_core::attempt::PreflightStatus::Blocked, Some(100_000), false)
    );
}

#[test]
fn an_unindexed_source_in_the_warning_band_passes_with_an_index_warning() {
    let context = Context::new(
        "CREATE TABLE public.\"Transfers\" (\"Id\" bigint PRIMARY KEY, \"UpdatedAt\" timestamp, \
           \"Amount\" numeric(12,2), \"Status\" text); \
         INSERT INTO public.\"Transfers\" SELECT n, '2026-07-21 00:00'::timestamp + n * interval '1 ms', 1, 'x' \
           FROM generate_series(1, 75000) AS n;",
        REPLICA_SQL,
    );
    let mut definition = context.definition();
    definition.checks = vec![CheckType::RowCount];
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.table_rows), ("PASS", Some(75_000)));
    // The source window is empty (its rows are a day older), the replica's is not.
    let rows = context.result_rows(run_id);
    assert_eq!(
        (result(&rows, "row_count").source_value.clone(), result(&rows, "row_count").target_value.clone()),
        (json!("0"), json!("5"))
    );
    assert_eq!(context.attempt_row(run_id).status, "FAIL");
    let facts = summary.preflight.unwrap();
    assert!(facts.index_warning, "50,000–99,999 unindexed rows warn");
    assert_eq!(facts.has_leading_index, Some(false));
}
