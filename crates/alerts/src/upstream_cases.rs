//! PipelineWise's alert formatter cases (its `tests/units/data_diff/test_alerts.py`), ported:
//! the same inputs, and the exact texts upstream's `format_data_diff_alert` and
//! `format_data_diff_index_warning` produce for them.

use chrono::{DateTime, Duration, TimeZone, Utc};
use datadiff_diff_core::{
    attempt::{
        Bounds, CheckId, CheckIdentity, CheckResult, PreflightFacts, PreflightStatus, ResultStatus, ResultType, RunId,
        RunSummary, SummaryStatus, TriggerType,
    },
    definition::{CheckType, SourceType},
};
use serde_json::{Value as Json, json};
use uuid::Uuid;

use crate::{Alert, FailureGroup, IndexWarning};

const RUN_ID: &str = "2bd3e725-38fc-48c1-b565-b4f20e5bc7dd";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 9, 9, 30, 5).unwrap()
}

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 10, 9, hour, 0, 0).unwrap()
}

fn check() -> CheckIdentity {
    CheckIdentity {
        check_id: CheckId::new(Uuid::from_u128(1)),
        revision: 1,
        is_current: true,
        full_check_name: "snowflake/payments/public/transfers".into(),
        target_id: "snowflake".into(),
        tap_id: "payments".into(),
        source_type: SourceType::TapPostgres,
        source_database: "payments".into(),
        source_schema: "public".into(),
        source_table: "transfers".into(),
        source_timestamp_column: "updated_at".into(),
        target_database: "ANALYTICS".into(),
        target_schema: "PAYMENTS".into(),
        target_table: "TRANSFERS".into(),
        target_timestamp_column: "updated_at".into(),
    }
}

fn count_result(check: CheckType, source: Json, target: Json) -> CheckResult {
    CheckResult {
        check_type: ResultType::Check(check),
        status: ResultStatus::Fail,
        source_value: source,
        target_value: target,
        source_query_seconds: Some(2.4),
        target_query_seconds: Some(1.8),
        error: None,
    }
}

fn row_count(source: Json, target: Json) -> CheckResult {
    count_result(CheckType::RowCount, source, target)
}

/// Upstream's `_summary()`: attempt 3 (RETRY) of the 09:00 slot failed both counts.
fn summary() -> RunSummary {
    let mut summary = RunSummary::failed_without_run(check(), "row_count FAIL; distinct_key_count FAIL");
    summary.status = SummaryStatus::Fail;
    summary.run_id = Some(RunId::new(Uuid::parse_str(RUN_ID).unwrap()));
    summary.attempt = Some(3);
    summary.trigger = Some(TriggerType::Retry);
    summary.scheduled_for = Some(at(9));
    summary.bounds = Some(Bounds { start: Some(at(8)), end: at(9) });
    summary.results = vec![
        row_count(json!("100000"), json!("99980")),
        count_result(CheckType::DistinctKeyCount, json!("100000"), json!("99980")),
    ];
    summary
}

fn error(reason: &str) -> RunSummary {
    let mut summary = summary();
    summary.status = SummaryStatus::Error;
    summary.results.clear();
    summary.reason = Some(reason.into());
    summary
}

fn runless(reason: &str) -> RunSummary {
    RunSummary::failed_without_run(check(), reason)
}

fn blocked_preflight(findings: &[&str]) -> PreflightFacts {
    preflight(PreflightStatus::Blocked, findings)
}

fn preflight(status: PreflightStatus, findings: &[&str]) -> PreflightFacts {
    PreflightFacts {
        status,
        index_warning: false,
        table_rows: None,
        row_limit: None,
        findings: findings.iter().map(|finding| (*finding).to_owned()).collect(),
        has_leading_index: Some(false),
        metadata_only: false,
        placeholder: false,
    }
}

fn alert_at(summaries: &[RunSummary], now: DateTime<Utc>) -> Alert {
    let groups = FailureGroup::of(summaries);
    assert_eq!(groups.len(), 1, "one check, one alert");
    groups[0].alert(now)
}

fn alert_of(summary: RunSummary) -> Alert {
    alert_at(&[summary], now())
}

/// Upstream's `_fields`: `name: value` lines, both sides trimmed.
fn fields(details: &str) -> Vec<(String, String)> {
    details
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect()
}

fn field(details: &str, name: &str) -> Option<String> {
    fields(details).into_iter().find(|(field, _)| field == name).map(|(_, value)| value)
}

fn metric_cells<'a>(details: &'a str, check: &str) -> Option<Vec<&'a str>> {
    details.lines().find(|line| line.starts_with(check)).map(|line| line.split_whitespace().collect())
}

#[test]
fn mismatch_alert_contains_operational_context_and_canonical_counts() {
    let alert = alert_of(summary());
    assert_eq!(alert.message, "FAIL data-diff payments/public.transfers — target has 20 fewer rows");
    assert_eq!(
        alert.details,
        "alert_utc_time    : 2026-10-09 09:30:05\n\
         tap_id            : payments\n\
         target_id         : snowflake\n\
         run_id            : 2bd3e725-38fc-48c1-b565-b4f20e5bc7dd\n\
         attempt           : 3 (RETRY)\n\
         scheduled_utc     : 2026-10-09 09:00:00\n\
         source_table      : payments.public.transfers\n\
         target_table      : ANALYTICS.PAYMENTS.TRANSFERS\n\
         timestamp_column  : updated_at\n\
         window_start_utc  : 2026-10-09 08:00:00 (inclusive)\n\
         window_end_utc    : 2026-10-09 09:00:00 (exclusive)\n\
         query_seconds     : source=2.40, target=1.80\n\
         failed_checks     : row_count, distinct_key_count\n\
         error_detail      : row_count FAIL; distinct_key_count FAIL\n\
         \n\
         Check               Source  Target  Difference\n\
         row_count           100000   99980         -20\n\
         distinct_key_count  100000   99980         -20\n\
         \n\
         Difference = target - source"
    );
    assert_eq!(
        alert.next_action,
        "- Check replication lag and investigate the mismatch.\n\
         - Failed windows retry automatically on scheduled runs.\n\
         - To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`."
    );
    assert!(!alert.details.contains("```"));
    assert_eq!(
        alert.text(),
        format!("{}\n{}\n\nNext action:\n{}", alert.message, alert.details, alert.next_action),
        "VictorOps and the other handlers: message, details, next action"
    );
}

#[test]
fn large_counts_and_differences_are_exact() {
    let source = "100000000000000000000000000000000000000000";
    let target = "99999999999999999999999999999999999999998";
    let mut large = summary();
    large.results = vec![row_count(json!(source), json!(target))];
    let alert = alert_of(large);
    assert!(alert.message.ends_with("target has 2 fewer rows"), "{}", alert.message);
    assert_eq!(metric_cells(&alert.details, "row_count").unwrap(), ["row_count", source, target, "-2"]);
    // Decimal spellings Python reads as the same integers.
    let mut spelt = summary();
    spelt.results =
        vec![row_count(json!(" 1E41 "), json!("99_999_999_999_999_999_999_999_999_999_999_999_999_998.00"))];
    assert_eq!(
        metric_cells(&alert_at(&[spelt], now()).details, "row_count").unwrap(),
        ["row_count", source, target, "-2"]
    );
    // Python's Decimal reads these as integers too.
    for (text, read) in
        [("1__0", "10"), ("_1", "1"), ("+5", "5"), ("-0", "0"), ("1.", "1"), ("\t7\n", "7"), ("1e1_0", "10000000000")]
    {
        let mut spelt = summary();
        spelt.results = vec![row_count(json!(text), json!("0"))];
        let cells = metric_cells(&alert_at(&[spelt], now()).details, "row_count").map(|cells| cells[1].to_owned());
        assert_eq!(cells.as_deref(), Some(read), "{text:?}");
    }
    let mut integers = summary();
    integers.results = vec![row_count(json!(18_446_744_073_709_551_615u64), json!(0))];
    let details = alert_of(integers).details;
    assert_eq!(
        metric_cells(&details, "row_count").unwrap(),
        ["row_count", "18446744073709551615", "0", "-18446744073709551615"]
    );
}

#[test]
fn heading_states_mismatch_direction_and_singular_rows() {
    for (source, target, description) in [
        ("0", "1", "target has 1 more row"),
        ("0", "20", "target has 20 more rows"),
        ("1", "0", "target has 1 fewer row"),
    ] {
        let mut summary = summary();
        summary.results = vec![row_count(json!(source), json!(target))];
        let message = alert_of(summary).message;
        assert!(message.ends_with(description), "{message}");
    }
}

#[test]
fn invalid_counts_do_not_produce_a_misleading_difference() {
    let invalid = [
        Json::Null,
        json!(true),
        json!(false),
        json!(-1),
        json!(1.5),
        json!(1.0),
        json!("not-a-count"),
        json!("-1"),
        json!("1.5"),
        json!("NaN"),
        json!("Infinity"),
        json!("_"),
        json!("1 2"),
        json!("0x10"),
        json!("15e-1"),
        json!(""),
    ];
    for value in invalid {
        for source_side in [true, false] {
            let mut result = row_count(json!("100000"), json!("99980"));
            if source_side {
                result.source_value = value.clone();
            } else {
                result.target_value = value.clone();
            }
            let mut summary = summary();
            summary.results = vec![result];
            summary.reason = None;
            let alert = alert_of(summary);
            assert!(alert.message.ends_with("data mismatch"), "{value}: {}", alert.message);
            assert!(!alert.details.lines().any(|line| line.starts_with("row_count")), "{value}: {}", alert.details);
            assert!(!alert.details.contains("Difference = target - source"), "{value}");
            assert!(!alert.details.contains("error_detail"), "{value}");
        }
    }
}

#[test]
fn count_table_can_include_passed_metrics_without_claiming_a_row_mismatch() {
    let mut summary = summary();
    summary.results[0] = CheckResult { status: ResultStatus::Pass, ..row_count(json!("100000"), json!("100000")) };
    let alert = alert_of(summary);
    assert!(alert.message.ends_with("data mismatch"), "{}", alert.message);
    assert_eq!(metric_cells(&alert.details, "row_count").unwrap(), ["row_count", "100000", "100000", "0"]);
    assert_eq!(metric_cells(&alert.details, "distinct_key_count").unwrap()[3], "-20");
}

#[test]
fn alerts_never_disclose_non_allowlisted_aggregate_or_schema_values() {
    let mut summary = summary();
    summary.reason = None;
    summary.results = vec![row_count(json!("100000"), json!("99980"))];
    for check in [
        CheckType::MinKey,
        CheckType::MaxKey,
        CheckType::RowChecksum,
        CheckType::SchemaCompatibility,
        CheckType::NullKeyCount,
    ] {
        let name = check.as_str();
        summary.results.push(count_result(
            check,
            json!(format!("source-secret-{name}")),
            json!(format!("target-secret-{name}")),
        ));
    }
    let alert = alert_of(summary);
    let rendered = format!("{}\n{}\n{}", alert.message, alert.details, alert.next_action);
    assert!(rendered.contains("row_count"));
    assert!(!rendered.contains("source-secret"), "{rendered}");
    assert!(!rendered.contains("target-secret"), "{rendered}");
}

#[test]
fn the_alert_time_is_shown_to_the_second() {
    let alert = alert_at(&[summary()], now() + Duration::microseconds(123_456));
    assert_eq!(field(&alert.details, "alert_utc_time").unwrap(), "2026-10-09 09:30:05");
    assert_eq!(field(&alert.details, "scheduled_utc").unwrap(), "2026-10-09 09:00:00");
}

#[test]
fn historical_window_preserves_meaningful_timestamp_fractions() {
    let mut summary = summary();
    summary.bounds = Some(Bounds {
        start: Some(at(8) + Duration::microseconds(123_456)),
        end: at(9) + Duration::microseconds(500_000),
    });
    let details = alert_of(summary).details;
    assert!(details.contains("\nwindow_start_utc  : 2026-10-09 08:00:00.123456 (inclusive)\n"), "{details}");
    assert!(details.contains("\nwindow_end_utc    : 2026-10-09 09:00:00.500000 (exclusive)\n"), "{details}");
}

#[test]
fn blocked_initial_scan_identifies_missing_index_and_preserves_cutoff() {
    let reason = "No usable source index starts with timestamp column 'updated_at'";
    let mut summary = error(reason);
    summary.bounds = Some(Bounds { start: None, end: at(9) });
    summary.preflight = Some(blocked_preflight(&[]));
    let alert = alert_of(summary);
    assert!(alert.message.ends_with("source index missing"), "{}", alert.message);
    assert!(
        alert.details.ends_with(
            "timestamp_column  : updated_at\n\
             window_start_utc  : unresolved (initial scan)\n\
             window_end_utc    : 2026-10-09 09:00:00 (exclusive)\n\
             error_detail      : No usable source index starts with timestamp column 'updated_at'"
        ),
        "{}",
        alert.details
    );
    assert_eq!(
        alert.next_action,
        "- Add a usable source index starting with updated_at.\n\
         - Failed windows retry automatically on scheduled runs.\n\
         - To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`."
    );
}

#[test]
fn blocked_alert_shows_index_advice_once_and_preserves_diagnostics() {
    for diagnostic in [
        "No usable source index starts with timestamp column 'updated_at'",
        "No usable source index starts with timestamp column 'updated_at'; ignored as unusable: idx_partial",
    ] {
        let findings = [
            diagnostic,
            "Add a source index beginning with the timestamp column; PipelineWise will not create it automatically",
        ];
        let mut summary = error(&findings.join("; "));
        summary.preflight = Some(blocked_preflight(&findings));
        let alert = alert_of(summary);
        assert!(alert.message.ends_with("source index missing"));
        assert_eq!(field(&alert.details, "tap_id").unwrap(), "payments");
        assert!(alert.details.ends_with(&format!("\nerror_detail      : {diagnostic}")), "{}", alert.details);
        assert!(!alert.details.contains("Add a source index"));
        assert!(!alert.details.contains("PipelineWise will not create it"));
        assert_eq!(alert.next_action.matches("Add a usable source index starting with updated_at.").count(), 1);
    }
}

#[test]
fn alert_retains_error_details_that_are_not_repeated_index_advice() {
    let findings = ["Source diagnostic", "Further diagnostic"];
    for status in [PreflightStatus::Blocked, PreflightStatus::Error, PreflightStatus::Pass] {
        let reason = if status == PreflightStatus::Blocked {
            "Additional source diagnostic".to_owned()
        } else {
            findings.join("; ")
        };
        let mut summary = error(&reason);
        summary.preflight = Some(preflight(status, &findings));
        let details = alert_of(summary).details;
        assert!(details.ends_with(&format!("\nerror_detail      : {reason}")), "{status:?}: {details}");
    }
}

#[test]
fn generic_execution_error_has_a_distinct_heading_and_recovery_action() {
    let alert = alert_of(error("Target statement timeout"));
    assert_eq!(alert.message, "ERROR data-diff payments/public.transfers — check could not complete");
    assert!(alert.details.ends_with("\nerror_detail      : Target statement timeout"), "{}", alert.details);
    assert!(!alert.details.contains("query_seconds"));
    assert!(!alert.details.contains("failed_checks"));
    assert_eq!(
        alert.next_action,
        "- Resolve the reported error.\n\
         - Failed windows retry automatically on scheduled runs.\n\
         - To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`."
    );
}

#[test]
fn alerts_before_run_creation_omit_unavailable_metadata() {
    let mut summary = runless("Unable to schedule check");
    summary.check.source_database = String::new();
    summary.check.target_database = String::new();
    summary.check.target_schema = String::new();
    summary.check.target_table = String::new();
    let alert = alert_of(summary);
    assert_eq!(alert.message, "ERROR data-diff payments/public.transfers — check could not complete");
    assert_eq!(
        alert.details,
        "alert_utc_time    : 2026-10-09 09:30:05\n\
         tap_id            : payments\n\
         target_id         : snowflake\n\
         source_table      : public.transfers\n\
         timestamp_column  : updated_at\n\
         error_detail      : Unable to schedule check"
    );
    assert_eq!(
        alert.next_action,
        "- Resolve the reported error.\n\
         - Scheduled runs will attempt this check again."
    );
    let mut inactive = runless("Unable to schedule check");
    inactive.check.is_current = false;
    assert_eq!(
        alert_of(inactive).next_action,
        "- Resolve the reported error.\n\
         - Run the check again after resolving the problem."
    );
}

#[test]
fn active_checks_explain_automatic_retry_and_inactive_ones_do_not() {
    for trigger in [TriggerType::Scheduled, TriggerType::Retry, TriggerType::Remediation] {
        let mut active = summary();
        active.trigger = Some(trigger);
        assert_eq!(
            alert_of(active.clone()).next_action,
            "- Check replication lag and investigate the mismatch.\n\
             - Failed windows retry automatically on scheduled runs.\n\
             - To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`."
        );
        let mut inactive = active;
        inactive.check.is_current = false;
        assert_eq!(
            alert_of(inactive).next_action,
            "- Check replication lag and investigate the mismatch.\n\
             - This definition is inactive. To verify this window, use `rerun_data_diff_check` with `--run-id` and \
             `--remediation-ref`."
        );
    }
}

#[test]
fn single_failure_group_preserves_the_existing_alert_layout() {
    let details = alert_of(summary()).details;
    for total in ["failed_windows", "failed_attempts", "failure_statuses", "shown_window"] {
        assert!(field(&details, total).is_none(), "{total}");
    }
}

#[test]
fn grouped_alert_counts_slots_and_attempts_without_summing_representative_results() {
    let first = error("Source query failed");
    let mut second = summary();
    second.attempt = Some(4);
    second.bounds = Some(Bounds { start: Some(now() - Duration::days(3)), end: at(9) });
    let mut representative = error("Source query failed after row count");
    representative.attempt = Some(1);
    representative.trigger = Some(TriggerType::Scheduled);
    representative.scheduled_for = Some(now() + Duration::hours(1));
    representative.bounds = Some(Bounds { start: Some(now()), end: now() + Duration::hours(1) });
    representative.results = vec![row_count(json!("90"), json!("75"))];
    let alert = alert_at(&[first, second, representative], now());
    assert_eq!(alert.message, "ERROR data-diff payments/public.transfers — 2 failed windows; check could not complete");
    assert_eq!(
        alert.details,
        "alert_utc_time    : 2026-10-09 09:30:05\n\
         failed_windows    : 2\n\
         failed_attempts   : 3\n\
         failure_statuses  : ERROR=2, FAIL=1\n\
         shown_window      : representative failure\n\
         tap_id            : payments\n\
         target_id         : snowflake\n\
         run_id            : 2bd3e725-38fc-48c1-b565-b4f20e5bc7dd\n\
         attempt           : 1 (SCHEDULED)\n\
         scheduled_utc     : 2026-10-09 10:30:05\n\
         source_table      : payments.public.transfers\n\
         target_table      : ANALYTICS.PAYMENTS.TRANSFERS\n\
         timestamp_column  : updated_at\n\
         window_start_utc  : 2026-10-09 09:30:05 (inclusive)\n\
         window_end_utc    : 2026-10-09 10:30:05 (exclusive)\n\
         query_seconds     : source=2.40, target=1.80\n\
         failed_checks     : row_count\n\
         error_detail      : Source query failed after row count\n\
         \n\
         Check      Source  Target  Difference\n\
         row_count      90      75         -15\n\
         \n\
         Difference = target - source"
    );
}

#[test]
fn grouped_alert_counts_window_bounds_when_scheduled_slots_are_unavailable() {
    let mut first = summary();
    first.scheduled_for = None;
    let mut repeated = first.clone();
    repeated.attempt = Some(4);
    let mut next_window = first.clone();
    next_window.bounds = Some(Bounds { start: Some(at(9)), end: at(10) });
    let alert = alert_at(&[first, repeated, next_window], now());
    assert!(alert.message.contains("— 2 failed windows; "), "{}", alert.message);
    assert!(
        alert.details.contains(
            "\nfailed_windows    : 2\nfailed_attempts   : 3\nfailure_statuses  : FAIL=3\nshown_window      : representative failure\n"
        ),
        "{}",
        alert.details
    );
}

#[test]
fn grouped_initial_scan_has_a_known_window_from_its_end_alone() {
    let mut summary = error("row_count ERROR");
    summary.scheduled_for = None;
    summary.bounds = Some(Bounds { start: None, end: at(9) });
    let mut repeated = summary.clone();
    repeated.attempt = Some(4);
    let alert = alert_at(&[summary, repeated], now());
    assert!(alert.message.contains("— 1 failed window; "), "{}", alert.message);
    assert_eq!(field(&alert.details, "failed_windows").unwrap(), "1");
    assert_eq!(field(&alert.details, "failed_attempts").unwrap(), "2");
    assert!(alert.details.contains("\nwindow_start_utc  : unresolved (initial scan)\n"));
    assert!(alert.details.contains("\nwindow_end_utc    : 2026-10-09 09:00:00 (exclusive)\n"));
}

#[test]
fn grouped_failures_before_scheduling_do_not_invent_window_counts() {
    let alert = alert_at(&[runless("Unable to schedule check"), runless("Backend connection unavailable")], now());
    assert_eq!(
        alert.message,
        "ERROR data-diff payments/public.transfers — 2 failed attempts; check could not complete"
    );
    assert!(alert.details.starts_with(
        "alert_utc_time    : 2026-10-09 09:30:05\n\
         failed_attempts   : 2\n\
         failure_statuses  : ERROR=2\n\
         shown_window      : representative failure\n"
    ));
    assert!(alert.details.ends_with("\nerror_detail      : Backend connection unavailable"));
    assert_eq!(alert.next_action, "- Resolve the reported error.\n- Scheduled runs will attempt this check again.");
}

#[test]
fn grouped_alert_only_counts_known_windows_without_assigning_unknown_failures_to_one() {
    let alert = alert_at(&[summary(), runless("Backend connection unavailable")], now());
    assert!(alert.message.contains("— 1 failed window; "), "{}", alert.message);
    assert_eq!(field(&alert.details, "failed_windows").unwrap(), "1");
    assert_eq!(field(&alert.details, "failed_attempts").unwrap(), "2");
}

#[test]
fn multiline_error_is_preserved_but_oversized_errors_are_bounded() {
    let reason = format!("Connection failed\nServer diagnostic: {}", "x".repeat(4000));
    let details = alert_of(error(&reason)).details;
    let cut: String = reason.chars().take(2000).collect();
    assert!(details.ends_with(&format!("\nerror_detail      : {cut}\n[error truncated]")), "{details}");
    assert!(details.contains("Connection failed\nServer diagnostic:"));
    assert!(!details.contains(&reason[..2001]));
    assert!(details.len() < 3000);
    // Characters, not bytes, are counted.
    let wide = "é".repeat(2001);
    let details = alert_of(error(&wide)).details;
    assert!(details.ends_with(&format!(": {}\n[error truncated]", "é".repeat(2000))));
    let exact = "z".repeat(2000);
    assert!(alert_of(error(&exact)).details.ends_with(&format!(": {exact}")));
}

#[test]
fn the_full_check_name_stands_in_for_a_missing_table_name() {
    let mut summary = summary();
    summary.check.source_schema = String::new();
    assert!(alert_of(summary).message.starts_with("FAIL data-diff snowflake/payments/public/transfers — "));
}

fn warning_summary(rows: i64) -> RunSummary {
    let mut summary = summary();
    summary.status = SummaryStatus::Pass;
    summary.reason = None;
    summary.preflight = Some(PreflightFacts {
        status: PreflightStatus::Pass,
        index_warning: true,
        table_rows: Some(rows),
        row_limit: Some(100_000),
        findings: vec!["unrelated-secret".into()],
        has_leading_index: Some(false),
        metadata_only: false,
        placeholder: false,
    });
    summary
}

fn warning(summary: RunSummary, now: DateTime<Utc>) -> Alert {
    let summaries = [summary];
    let pending = IndexWarning::pending(&summaries);
    assert_eq!(pending.len(), 1);
    pending[0].alert(&summaries[0], now)
}

#[test]
fn index_warning_identifies_table_and_exact_count_without_claiming_failure() {
    for (rows, shown) in [(50_000, "50,000"), (75_000, "75,000"), (99_999, "99,999")] {
        let alert = warning(warning_summary(rows), now());
        assert_eq!(alert.message, "WARNING data-diff payments/public.transfers — approaching source index requirement");
        assert_eq!(
            alert.details,
            format!(
                "alert_utc_time    : 2026-10-09 09:30:05\n\
                 tap_id            : payments\n\
                 target_id         : snowflake\n\
                 source_table      : payments.public.transfers\n\
                 timestamp_column  : updated_at\n\
                 source_rows       : {shown}\n\
                 index_required_at : 100,000 rows\n\
                 index_status      : No qualifying source index\n\
                 data_diff_status  : Checks can still run"
            )
        );
        assert_eq!(
            alert.next_action,
            "- Arrange a usable source index starting with updated_at before the table reaches 100,000 rows.\n\
             - At 100,000 rows or more, data checks will be blocked until that index exists."
        );
        assert!(!alert.details.contains("run_id"));
        assert!(!format!("{}{}", alert.details, alert.next_action).contains("unrelated-secret"));
    }
}

#[test]
fn index_warning_normalizes_time_and_falls_back_to_the_full_name() {
    let mut summary = warning_summary(75_000);
    summary.check.full_check_name = "public/transfers".into();
    summary.check.tap_id = String::new();
    summary.check.source_database = String::new();
    summary.check.source_schema = String::new();
    let alert = warning(summary, now() + Duration::microseconds(999_999));
    assert!(alert.message.starts_with("WARNING data-diff public/transfers — "), "{}", alert.message);
    assert_eq!(field(&alert.details, "alert_utc_time").unwrap(), "2026-10-09 09:30:05");
    assert_eq!(field(&alert.details, "source_table").unwrap(), "transfers");
}

#[test]
fn index_warning_keeps_its_metadata_on_single_lines() {
    let mut summary = warning_summary(75_000);
    summary.check.tap_id = "payments\nextra_line".into();
    summary.check.source_timestamp_column = "updated_at\r\nextra_column".into();
    let alert = warning(summary, now());
    assert!(alert.message.contains("payments\\nextra_line"), "{}", alert.message);
    assert_eq!(field(&alert.details, "timestamp_column").unwrap(), "updated_at\\r\\nextra_column");
    assert_eq!(alert.next_action.matches('\n').count(), 1, "{}", alert.next_action);
}

#[test]
fn row_diff_counts_and_the_differences_report_are_added_lines_only() {
    let mut with_row_diff = summary();
    with_row_diff.results.push(CheckResult {
        check_type: ResultType::RowDiff,
        status: ResultStatus::Fail,
        source_value: json!({"rows": "100000"}),
        target_value: json!({"rows": "99980", "missing": "20", "extra": "0", "changed": "3"}),
        source_query_seconds: Some(2.4),
        target_query_seconds: Some(1.8),
        error: None,
    });
    let plain = alert_of(summary());
    let extended = alert_of(with_row_diff);
    assert_eq!(extended.message, plain.message);
    assert_eq!(
        extended.details,
        format!(
            "{}\n\nrow_diff_counts   : 20 missing, 0 extra, 3 changed",
            plain.details.replace("distinct_key_count\nerror_detail", "distinct_key_count, row_diff\nerror_detail")
        )
    );
    assert_eq!(
        extended.next_action,
        format!(
            "{}\n- To list the differing rows' keys, use `datadiff report differences --run-id {RUN_ID}`.",
            plain.next_action
        )
    );
}
