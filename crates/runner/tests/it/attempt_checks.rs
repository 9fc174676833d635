//! Attempts of the aggregate checks against a PipelineWise-shaped replica: every check type,
//! soft deletes, seeded differences, the checksum vector and incompatible types, asserted on
//! the backend's rows.

use datadiff_diff_core::{attempt::RunStatus, definition::CheckType};
use datadiff_runner::{ExecutionOptions, SummaryStatus, execute};
use serde_json::json;

use crate::context::{Context, Verdict, at, result, scheduled, sha256_hex, slot, verdicts};

fn metric(check: &str, status: &str, source: &str, target: &str) -> Verdict {
    (check.to_owned(), status.to_owned(), json!(source), json!(target))
}

#[test]
fn identical_windows_pass_every_check_type_and_initialize_coverage() {
    let context = Context::pipelinewise();
    let summary = context.run(&context.definition());
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();

    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("PASS", None));
    assert_eq!((attempt.window_start, attempt.window_end), (Some(at(12, 0)), at(13, 0)));
    assert_eq!((attempt.attempt, attempt.trigger.as_str()), (1, "SCHEDULED"));
    assert_eq!((attempt.started_at, attempt.finished_at), (at(13, 5), Some(at(13, 5))));

    let preflight = context.preflight_row(run_id);
    assert_eq!(preflight.status, "PASS");
    assert!(preflight.same_check);
    assert_eq!((preflight.has_leading_index, preflight.table_rows, preflight.row_limit), (Some(true), None, None));
    assert_eq!(preflight.findings, json!([]));
    assert_eq!(preflight.index_metadata[0]["index_name"], json!("Transfers_UpdatedAt_idx"));
    assert_eq!(preflight.checked_at, at(13, 5));
    assert_ne!(preflight.fingerprint, sha256_hex(&context, "preflight-not-built"));

    let rows = context.result_rows(run_id);
    assert_eq!(rows.len(), 8);
    assert_eq!(
        verdicts(&rows),
        vec![
            metric("distinct_key_count", "PASS", "5", "5"),
            metric("duplicate_key_count", "PASS", "0", "0"),
            metric("max_key", "PASS", "6", "6"),
            metric("min_key", "PASS", "2", "2"),
            metric("null_key_count", "PASS", "0", "0"),
            metric("row_count", "PASS", "5", "5"),
        ]
    );
    let checksum = result(&rows, "row_checksum");
    assert_eq!(checksum.status, "PASS");
    assert_eq!(checksum.source_value, checksum.target_value);
    let digits = checksum.source_value.as_str().unwrap();
    assert!(digits.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()), "{digits}");
    // Each side's single query time repeats on every metric row.
    let seconds: Vec<_> = rows
        .iter()
        .filter(|row| row.check_type != "schema_compatibility")
        .map(|row| (row.source_seconds, row.target_seconds))
        .collect();
    assert!(seconds.iter().all(|pair| *pair == seconds[0] && pair.0.is_some() && pair.1.is_some()));

    let schema = result(&rows, "schema_compatibility");
    assert_eq!((schema.status.as_str(), schema.error.as_deref()), ("PASS", None));
    assert_eq!((schema.source_seconds, schema.target_seconds), (None, None));
    let target_columns = &schema.target_value["columns"];
    assert_eq!(target_columns[1]["logical_name"], json!("UpdatedAt"));
    assert_eq!(target_columns[1]["resolved_name"], json!("updatedat"), "resolved case-insensitively");
    assert_eq!(target_columns[1]["data_type"], json!("timestamp with time zone"));
    assert_eq!(schema.source_value["columns"][2]["numeric_scale"], json!(2));
    assert_eq!(target_columns[2]["numeric_scale"], json!(4));

    assert_eq!(context.slot_state(run_id), Some(("PASS".into(), Some(at(12, 0)), at(13, 0))));
    assert_eq!(
        context.watermark(&summary),
        Some(("CONTIGUOUS".into(), Some(at(12, 0)), Some(at(13, 0)), vec!["INITIALIZE".into()]))
    );

    // The summary carries what was stored.
    assert_eq!(summary.slot_status, Some(RunStatus::Pass));
    assert_eq!(summary.counts(CheckType::RowCount), Some((5, 5)));
    assert!(summary.query_seconds().is_some());
    let preflight = summary.preflight.unwrap();
    assert!(!preflight.index_warning && !preflight.metadata_only);
}

#[test]
fn the_preflight_fingerprints_upstreams_text_and_both_sides_bind_the_same_window() {
    let context = Context::pipelinewise();
    let mut definition = context.definition();
    definition.checks = vec![CheckType::RowCount, CheckType::MaxKey];
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let upstream_text = r#"SELECT COUNT(*) AS "row_count", MAX("Id") AS "max_key" FROM "public"."Transfers" WHERE "UpdatedAt" >= %s AND "UpdatedAt" < %s"#;
    assert_eq!(context.preflight_row(run_id).fingerprint, sha256_hex(&context, upstream_text));
    // A naive source column and an aware replica column see the same instants: 12:00:00
    // is in on both sides, 13:00:00 out on both sides.
    assert_eq!(
        verdicts(&context.result_rows(run_id)),
        vec![metric("max_key", "PASS", "6", "6"), metric("row_count", "PASS", "5", "5")]
    );
    assert_eq!(context.attempt_row(run_id).status, "PASS");
}

#[test]
fn a_soft_deleted_replica_row_fails_row_count_by_exactly_that_row_unless_excluded() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute(
            "INSERT INTO payments_public.transfers VALUES \
             (9, '2026-07-22 12:40:00+00', 3.0000, 'paid', '2026-07-22 12:41', '2026-07-22 12:42', \
              '2026-07-22T12:50:00.000000+00:00')",
        )
        .unwrap();
    let upstream = context.run(&context.definition());
    let run_id = upstream.run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_count").source_value, json!("5"));
    assert_eq!(result(&rows, "row_count").target_value, json!("6"));
    assert_eq!(result(&rows, "row_count").status, "FAIL");
    assert_eq!(result(&rows, "row_checksum").status, "FAIL");
    let attempt = context.attempt_row(run_id);
    assert_eq!(attempt.status, "FAIL");
    assert_eq!(
        attempt.error.as_deref(),
        Some("row_count FAIL; distinct_key_count FAIL; max_key FAIL; row_checksum FAIL")
    );
    assert_eq!(context.slot_state(run_id).map(|state| state.0), Some("FAIL".into()));

    let mut excluding = context.definition();
    excluding.extensions.exclude_soft_deleted = true;
    let summary = context.run(&excluding);
    assert_ne!(summary.check.check_id, upstream.check.check_id, "a new revision");
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error), ("PASS", None));
    let rows = context.result_rows(run_id);
    assert!(rows.iter().all(|row| row.status == "PASS"), "{rows:?}");
    assert_eq!(result(&rows, "row_count").target_value, json!("5"));
}

#[test]
fn exclude_soft_deleted_without_the_column_is_an_error_attempt() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("ALTER TABLE payments_public.transfers DROP COLUMN _sdc_deleted_at")
        .unwrap();
    let mut definition = context.definition();
    definition.extensions.exclude_soft_deleted = true;
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let expected = "Column '_sdc_deleted_at' does not exist in payments_public.transfers";
    assert_eq!((summary.status, summary.reason.as_deref()), (SummaryStatus::Error, Some(expected)));
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(preflight.fingerprint, sha256_hex(&context, "preflight-not-built"), "a placeholder");
    assert!(context.result_rows(run_id).is_empty());
}

/// Runs the fixtures' definition after `replica_change`, returning the metric verdicts and
/// the attempt's status and error.
fn seeded(replica_change: &str) -> (Vec<Verdict>, String, Option<String>, String) {
    let context = Context::pipelinewise();
    context.replica.client().unwrap().batch_execute(replica_change).unwrap();
    let summary = context.run(&context.definition());
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let attempt = context.attempt_row(run_id);
    assert_eq!(summary.reason, attempt.error, "the summary reports the stored error");
    let checksum = result(&rows, "row_checksum").status.clone();
    (verdicts(&rows), attempt.status, attempt.error, checksum)
}

#[test]
fn a_missing_row_fails_the_counts_and_the_checksum() {
    let (verdicts, status, error, checksum) = seeded("DELETE FROM payments_public.transfers WHERE id = 4");
    assert_eq!(
        verdicts,
        vec![
            metric("distinct_key_count", "FAIL", "5", "4"),
            metric("duplicate_key_count", "PASS", "0", "0"),
            metric("max_key", "PASS", "6", "6"),
            metric("min_key", "PASS", "2", "2"),
            metric("null_key_count", "PASS", "0", "0"),
            metric("row_count", "FAIL", "5", "4"),
        ]
    );
    assert_eq!((status.as_str(), checksum.as_str()), ("FAIL", "FAIL"));
    assert_eq!(error.as_deref(), Some("row_count FAIL; distinct_key_count FAIL; row_checksum FAIL"));
}

#[test]
fn an_extra_row_fails_the_counts_the_max_key_and_the_checksum() {
    let (verdicts, status, error, _) = seeded(
        "INSERT INTO payments_public.transfers (id, updatedat, amount, status) \
         VALUES (10, '2026-07-22 12:10:00+00', 5.0000, 'open')",
    );
    assert_eq!(
        verdicts,
        vec![
            metric("distinct_key_count", "FAIL", "5", "6"),
            metric("duplicate_key_count", "PASS", "0", "0"),
            metric("max_key", "FAIL", "6", "10"),
            metric("min_key", "PASS", "2", "2"),
            metric("null_key_count", "PASS", "0", "0"),
            metric("row_count", "FAIL", "5", "6"),
        ]
    );
    assert_eq!(status, "FAIL");
    assert_eq!(error.as_deref(), Some("row_count FAIL; distinct_key_count FAIL; max_key FAIL; row_checksum FAIL"));
}

#[test]
fn a_changed_row_fails_only_the_checksum() {
    let (verdicts, status, error, checksum) =
        seeded("UPDATE payments_public.transfers SET status = 'paid' WHERE id = 5");
    assert!(verdicts.iter().all(|verdict| verdict.1 == "PASS"), "{verdicts:?}");
    assert_eq!((status.as_str(), checksum.as_str(), error.as_deref()), ("FAIL", "FAIL", Some("row_checksum FAIL")));
}

#[test]
fn a_duplicated_key_fails_row_count_and_duplicate_key_count() {
    let (verdicts, status, error, _) = seeded(
        "INSERT INTO payments_public.transfers (id, updatedat, amount, status) \
         VALUES (3, '2026-07-22 12:15:00+00', 0.1000, 'paid')",
    );
    assert_eq!(
        verdicts,
        vec![
            metric("distinct_key_count", "PASS", "5", "5"),
            metric("duplicate_key_count", "FAIL", "0", "1"),
            metric("max_key", "PASS", "6", "6"),
            metric("min_key", "PASS", "2", "2"),
            metric("null_key_count", "PASS", "0", "0"),
            metric("row_count", "FAIL", "5", "6"),
        ]
    );
    assert_eq!(status, "FAIL");
    assert_eq!(error.as_deref(), Some("row_count FAIL; duplicate_key_count FAIL; row_checksum FAIL"));
}

#[test]
fn a_null_key_fails_null_key_count() {
    let (verdicts, _, error, _) = seeded(
        "INSERT INTO payments_public.transfers (id, updatedat, amount, status) \
         VALUES (NULL, '2026-07-22 12:20:00+00', 2.0000, 'open')",
    );
    assert!(verdicts.contains(&metric("null_key_count", "FAIL", "0", "1")), "{verdicts:?}");
    assert!(verdicts.contains(&metric("distinct_key_count", "PASS", "5", "5")), "{verdicts:?}");
    assert_eq!(error.as_deref(), Some("row_count FAIL; null_key_count FAIL; row_checksum FAIL"));
}

#[test]
fn the_config_notes_checksum_vector_reproduces_across_timestamp_and_text_types() {
    let context = Context::new(
        "CREATE TABLE public.vector (id bigint, updated_at timestamp, status text); \
         INSERT INTO public.vector VALUES (1, '2026-07-01 00:00:00', 'A'), (2, '2026-07-01 00:30:00', NULL);",
        "CREATE SCHEMA payments_public; \
         CREATE TABLE payments_public.vector (id bigint, updated_at timestamptz, status varchar); \
         INSERT INTO payments_public.vector VALUES (1, '2026-07-01 00:00:00+00', 'A'), (2, '2026-07-01 00:30:00+00', NULL);",
    );
    let mut definition = context.definition();
    definition.full_check_name = "postgres/payments/public/vector".into();
    definition.source_table = "vector".into();
    definition.target_table = "vector".into();
    definition.source_key_column = "id".into();
    definition.source_timestamp_column = "updated_at".into();
    definition.target_timestamp_column = "updated_at".into();
    definition.source_compare_columns = vec!["status".into()];
    definition.target_compare_columns = vec!["status".into()];
    definition.checks = vec![CheckType::RowChecksum, CheckType::RowCount];
    let stored = context.import(&definition);
    let july_first = chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2026, 7, 1, 1, 0, 0).unwrap();
    let summary =
        execute(&context.store, &context.connections, &stored, july_first, scheduled(), &Context::options()).unwrap();
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let checksum = result(&rows, "row_checksum");
    assert_eq!(
        (checksum.source_value.clone(), checksum.target_value.clone()),
        (json!("181442033815354"), json!("181442033815354"))
    );
    assert_eq!(checksum.status, "PASS");
    assert_eq!(context.attempt_row(run_id).status, "PASS");
    // Unindexed and small: the bounded count passes it, with upstream's finding.
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.has_leading_index), ("PASS", Some(false)));
    assert_eq!((preflight.table_rows, preflight.row_limit), (Some(2), Some(100_000)));
    assert_eq!(
        preflight.findings,
        json!([
            "Allow the unindexed source table with 2 rows; a usable leading timestamp index is required at 100,000 rows"
        ])
    );
}

/// A real PipelineWise replica: target-postgres writes `numeric(12,2)` as `double
/// precision`. row_checksum's ERROR keeps PipelineWise's words, then names the replica's
/// `double precision`, the source's `numeric(12,2)`, and the fix.
#[test]
fn a_double_precision_replica_of_a_numeric_column_errors_the_checksum_naming_both_sides_and_the_fix() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("ALTER TABLE payments_public.transfers ALTER COLUMN amount TYPE double precision")
        .unwrap();
    let summary = context.run(&context.definition());
    let rows = context.result_rows(summary.run_id.unwrap());
    let checksum = result(&rows, "row_checksum");
    assert_eq!(checksum.status, "ERROR");
    let error = checksum.error.clone().unwrap_or_default();
    assert!(error.starts_with("row_checksum column 'Amount' needs declared numeric scales: "), "{error}");
    assert!(error.contains("numeric(12,2) on the source, double precision on the target;"), "{error}");
    assert!(
        error.contains("Compare Amount with row_diff instead") && error.contains("at the source's scale 2"),
        "{error}"
    );
    assert_eq!(result(&rows, "row_count").status, "PASS", "the other checks still run");
}

#[test]
fn incompatible_types_fail_the_schema_and_error_the_checksum_while_other_checks_run() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("ALTER TABLE payments_public.transfers ALTER COLUMN status TYPE jsonb USING to_jsonb(status)")
        .unwrap();
    let summary = context.run(&context.definition());
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let schema = result(&rows, "schema_compatibility");
    let finding = "Status: source string is not compatible with target semistructured";
    assert_eq!((schema.status.as_str(), schema.error.as_deref()), ("FAIL", Some(finding)));
    let checksum = result(&rows, "row_checksum");
    // PipelineWise's text, then both sides' types and the fix.
    let reason = "row_checksum column 'Status' has incompatible source and target types (string, semistructured): \
                  text on the source, jsonb on the target; the two cannot hash alike: fix the target column's type, \
                  or leave Status out of compare_columns";
    assert_eq!((checksum.status.as_str(), checksum.error.as_deref()), ("ERROR", Some(reason)));
    assert_eq!((checksum.source_value.clone(), checksum.target_value.clone()), (json!(null), json!(null)));
    assert_eq!((checksum.source_seconds, checksum.target_seconds), (None, None));
    assert!(verdicts(&rows).iter().all(|verdict| verdict.1 == "PASS"), "the other metrics still ran");
    assert_eq!(rows.len(), 8);
    let attempt = context.attempt_row(run_id);
    assert_eq!(attempt.status, "ERROR", "ERROR beats FAIL");
    assert_eq!(attempt.error, Some(format!("{finding}; {reason}")));
    assert_eq!(context.slot_state(run_id).map(|state| state.0), Some("ERROR".into()));
    assert_eq!(context.watermark(&summary).map(|w| w.0), Some("BLOCKED".into()));
}

#[test]
fn a_missing_key_column_is_an_error_attempt_with_a_placeholder_preflight() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("ALTER TABLE payments_public.transfers RENAME COLUMN id TO key")
        .unwrap();
    let summary = context.run(&context.definition());
    let run_id = summary.run_id.unwrap();
    let expected = "Column 'id' does not exist in payments_public.transfers";
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    assert!(attempt.has_preflight);
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(preflight.fingerprint, "a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855");
    assert_eq!((preflight.findings, preflight.index_metadata), (json!([]), json!([])));
    assert_eq!((preflight.has_leading_index, preflight.table_rows, preflight.row_limit), (None, None, None));
    assert!(context.result_rows(run_id).is_empty());
    assert_eq!(context.slot_state(run_id), Some(("ERROR".into(), Some(at(12, 0)), at(13, 0))));
    assert_eq!(summary.preflight.map(|p| p.status), Some(datadiff_diff_core::attempt::PreflightStatus::Error));
}

#[test]
fn a_schema_only_definition_reads_no_data_and_records_a_metadata_only_preflight() {
    let context = Context::pipelinewise();
    let mut definition = context.definition();
    definition.checks = vec![CheckType::SchemaCompatibility];
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error), ("PASS", None));
    let preflight = context.preflight_row(run_id);
    assert_eq!(preflight.status, "PASS");
    assert_eq!(preflight.findings, json!(["Metadata-only check; no source data query was executed"]));
    let payload = r#"{"columns": ["Id", "UpdatedAt", "Amount", "Status"], "source_schema": "public", "source_table": "Transfers", "target_schema": "payments_public", "target_table": "transfers"}"#;
    assert_eq!(preflight.fingerprint, sha256_hex(&context, payload));
    assert_eq!((preflight.has_leading_index, preflight.table_rows, preflight.row_limit), (None, None, None));
    let rows = context.result_rows(run_id);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].check_type, "schema_compatibility");
    // A metadata-only definition never advances coverage.
    assert_eq!(context.watermark(&summary).map(|w| (w.0, w.2)), Some(("BLOCKED".into(), Some(at(12, 0)))));
    assert!(summary.preflight.unwrap().metadata_only);
}

#[test]
fn sequential_sides_give_the_same_results() {
    let context = Context::pipelinewise();
    let stored = context.import(&context.definition());
    let options = ExecutionOptions { concurrent_sides: false, ..Context::options() };
    let summary = execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options).unwrap();
    let run_id = summary.run_id.unwrap();
    assert_eq!(context.attempt_row(run_id).status, "PASS");
    assert_eq!(verdicts(&context.result_rows(run_id))[5], metric("row_count", "PASS", "5", "5"));
}

#[test]
fn a_remediation_reruns_the_failed_window_and_advances_coverage() {
    let context = Context::pipelinewise();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'x' WHERE id = 3")
        .unwrap();
    let failed = context.run(&context.definition());
    assert_eq!(failed.status, SummaryStatus::Fail);
    let failed_run = failed.run_id.unwrap();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'paid' WHERE id = 3")
        .unwrap();

    let remediation = context.store.start_remediation(failed_run, "INC-42", at(14, 0)).unwrap();
    let summary = datadiff_runner::execute_started(
        &context.store,
        &context.connections,
        &remediation.definition,
        remediation.attempt,
        &ExecutionOptions { clock: datadiff_runner::Clock::at(at(14, 5)), ..Context::options() },
    )
    .unwrap();
    assert_eq!(summary.status, SummaryStatus::Pass);
    assert_eq!((summary.rerun_of_run_id, summary.remediation_reference.as_deref()), (Some(failed_run), Some("INC-42")));
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.attempt, attempt.trigger.as_str()), ("PASS", 2, "REMEDIATION"));
    assert_eq!((attempt.window_start, attempt.window_end), (Some(at(12, 0)), at(13, 0)));
    assert_eq!(context.slot_state(run_id), Some(("PASS".into(), Some(at(12, 0)), at(13, 0))));
    assert_eq!(
        context.watermark(&summary),
        Some(("CONTIGUOUS".into(), Some(at(12, 0)), Some(at(13, 0)), vec!["INITIALIZE".into(), "ADVANCE".into()]))
    );
}

#[test]
fn sessions_compare_in_utc_whatever_the_databases_time_zone() {
    let context = Context::pipelinewise();
    for database in [&context.source, &context.replica] {
        let name = datadiff_testkit::quote_ident(database.name());
        database
            .client()
            .unwrap()
            .batch_execute(&format!("ALTER DATABASE {name} SET timezone TO 'America/New_York'"))
            .unwrap();
    }
    let summary = context.run(&context.definition());
    let run_id = summary.run_id.unwrap();
    // The replica's timestamptz renders as UTC wall time in the checksum, like the source's
    // naive UTC values, only because the session's TimeZone is UTC.
    assert_eq!(result(&context.result_rows(run_id), "row_checksum").status, "PASS");
    assert_eq!(context.attempt_row(run_id).status, "PASS");
}

/// Installs, in `public` of `database`, functions and operators that shadow the built-ins the
/// checks call (`CONCAT`, `MD5`, `ROUND`, `set_config`, `>=` on timestamps), each raising when
/// called, and puts `public` before `pg_catalog` in the database's `search_path` (with an
/// identical signature the earlier schema wins; `concat(text, text)` wins over the
/// built-in's `VARIADIC "any"` wherever it is).
pub(crate) fn shadow_builtins(database: &datadiff_testkit::Database<'_>) {
    let raising = |signature: &str, returns: &str| {
        format!(
            "CREATE FUNCTION public.{signature} RETURNS {returns} LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'the shadowing public.{signature} was called'; END $$;"
        )
    };
    let mut sql = [
        raising("concat(a text, b text)", "text"),
        raising("md5(a text)", "text"),
        raising("round(a numeric, b integer)", "numeric"),
        raising("set_config(a text, b text, c boolean)", "text"),
        raising("shadow_ge(a timestamptz, b timestamptz)", "boolean"),
        raising("shadow_ge(a timestamp, b timestamp)", "boolean"),
        raising("shadow_lt(a timestamptz, b timestamptz)", "boolean"),
        raising("shadow_lt(a timestamp, b timestamp)", "boolean"),
    ]
    .concat();
    for (operator, function) in [(">=", "shadow_ge"), ("<", "shadow_lt")] {
        for kind in ["timestamptz", "timestamp"] {
            sql.push_str(&format!(
                "CREATE OPERATOR public.{operator} (LEFTARG = {kind}, RIGHTARG = {kind}, FUNCTION = public.{function});"
            ));
        }
    }
    let name = datadiff_testkit::quote_ident(database.name());
    sql.push_str(&format!("ALTER DATABASE {name} SET search_path = public, pg_catalog;"));
    database.client().unwrap().batch_execute(&sql).unwrap();
    // The shadows are live for a new session that keeps the database's search_path.
    let error = database.client().unwrap().batch_execute("SELECT md5('x')").unwrap_err();
    assert!(format!("{error:?}").contains("the shadowing public.md5"), "{error:?}");
}

#[test]
fn functions_shadowed_on_the_databases_are_never_called() {
    let with_row_diff = |context: &Context| {
        let mut definition = context.definition();
        definition.extensions.row_diff = Some(datadiff_diff_core::definition::RowDiffSettings::default());
        definition
    };
    let plain = Context::pipelinewise();
    let expected = plain.result_rows(plain.run(&with_row_diff(&plain)).run_id.unwrap());
    let shadowed = Context::pipelinewise();
    shadow_builtins(&shadowed.source);
    shadow_builtins(&shadowed.replica);
    let summary = shadowed.run(&with_row_diff(&shadowed));
    let run_id = summary.run_id.unwrap();
    assert_eq!(shadowed.attempt_row(run_id).status, "PASS", "{summary:?}");
    let rows = shadowed.result_rows(run_id);
    let values = |rows: &[crate::context::ResultRow]| -> Vec<_> {
        rows.iter()
            .map(|row| (row.check_type.clone(), row.status.clone(), row.source_value.clone(), row.target_value.clone()))
            .collect()
    };
    assert_eq!(values(&rows), values(&expected));
    assert_eq!(rows.len(), 9, "every check and row_diff");
}
