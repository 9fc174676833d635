//! The reports on a history typed by hand, against hand-written expected rows.

use chrono::{DateTime, NaiveDate, TimeDelta, TimeZone, Utc};
use datadiff_backend_store::{
    DailyReportRow, Error, FailureReportRow, LagProblem, LagVerdict, LastAttempt, RemediationReportRow,
    StoredDifference, WatermarkReportRow, WatermarkStatus,
};
use datadiff_diff_core::{
    attempt::{CheckId, ResultStatus, ResultType, RunId, RunStatus, TriggerType},
    merge::DifferenceKind,
};
use serde_json::json;
use uuid::Uuid;

use crate::support::{Repo, repo};

fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0000 | n)
}

fn run(n: u128) -> RunId {
    RunId::new(id(n))
}

fn t(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, day, hour, minute, 0).unwrap()
}

const ORDERS_1: u128 = 0xa1;
const ORDERS_2: u128 = 0xa2;
const REFUNDS: u128 = 0xb1;
const USERS: u128 = 0xc1;

fn definition(check: u128, tap: &str, table: &str, revision: i32, current: bool) -> String {
    let superseded = if current { "NULL" } else { "'2026-07-22 00:00Z'" };
    format!(
        "INSERT INTO public.dd_check_definitions VALUES ('{check_id}', 'postgres/{tap}/public/{table}', {revision}, \
         repeat('0', 64), '{{}}', 'postgres', '{tap}', 'tap-postgres', 'target-postgres', '{tap}_db', 'warehouse', \
         'public', '{table}', 'replicated_{tap}', '{table}', 'id', 'id', 'updated_at', 'updated_at', \
         '[\"row_count\"]', '0 * * * *', 3600, 0, 60, {current}, '2026-07-01 00:00Z', {superseded});",
        check_id = id(check)
    )
}

#[allow(clippy::too_many_arguments)]
fn attempt(
    n: u128,
    check: u128,
    slot: &str,
    start: &str,
    end: &str,
    number: i32,
    trigger: &str,
    status: &str,
    rerun_of: Option<u128>,
    reference: &str,
    started: &str,
    finished: &str,
    error: &str,
) -> String {
    let rerun_of = rerun_of.map_or("NULL".to_owned(), |root| format!("'{}'", id(root)));
    format!(
        "INSERT INTO public.dd_run_attempts VALUES ('{}', '{}', '{slot}', {start}, '{end}', {number}, '{trigger}', \
         '{status}', {rerun_of}, {reference}, NULL, '{started}', {finished}, {error});",
        id(n),
        id(check)
    )
}

fn result(n: u128, check_type: &str, status: &str, error: &str) -> String {
    format!(
        "INSERT INTO public.dd_run_results VALUES ('{}', '{check_type}', '{status}', '\"1\"', '\"2\"', 0.1, 0.2, {error});",
        id(n)
    )
}

fn slot(check: u128, slot: &str, n: u128, attempt: i32, start: &str, end: &str, status: &str) -> String {
    format!(
        "INSERT INTO public.dd_run_slot_state VALUES ('{}', '{slot}', '{}', {attempt}, {start}, '{end}', '{status}');",
        id(check),
        id(n)
    )
}

/// Three current definitions (orders at revision 2, refunds never run, users blocked) and a
/// superseded revision of orders, with attempts of every kind.
fn seed(repo: &Repo) {
    let statements = [
        definition(ORDERS_1, "pay", "orders", 1, false),
        definition(ORDERS_2, "pay", "orders", 2, true),
        definition(REFUNDS, "pay", "refunds", 1, true),
        definition(USERS, "crm", "users", 1, true),
        // orders, revision 1: a FAIL remediated by a PASS, and an ERROR never remediated.
        attempt(
            1,
            ORDERS_1,
            "2026-07-21 10:00Z",
            "'2026-07-21 09:00Z'",
            "2026-07-21 10:00Z",
            1,
            "SCHEDULED",
            "FAIL",
            None,
            "NULL",
            "2026-07-21 10:01Z",
            "'2026-07-21 10:05Z'",
            "'row_count FAIL'",
        ),
        result(1, "row_count", "FAIL", "NULL"),
        attempt(
            2,
            ORDERS_1,
            "2026-07-21 10:00Z",
            "'2026-07-21 09:00Z'",
            "2026-07-21 10:00Z",
            2,
            "REMEDIATION",
            "PASS",
            Some(1),
            "'INC-1'",
            "2026-07-21 10:55Z",
            "'2026-07-21 11:00Z'",
            "NULL",
        ),
        result(2, "row_count", "PASS", "NULL"),
        slot(ORDERS_1, "2026-07-21 10:00Z", 2, 2, "'2026-07-21 09:00Z'", "2026-07-21 10:00Z", "PASS"),
        attempt(
            10,
            ORDERS_1,
            "2026-07-21 11:00Z",
            "'2026-07-21 10:00Z'",
            "2026-07-21 11:00Z",
            1,
            "SCHEDULED",
            "ERROR",
            None,
            "NULL",
            "2026-07-21 11:01Z",
            "'2026-07-21 11:10Z'",
            "'timeout'",
        ),
        slot(ORDERS_1, "2026-07-21 11:00Z", 10, 1, "'2026-07-21 10:00Z'", "2026-07-21 11:00Z", "ERROR"),
        // orders, revision 2: a PASS and a RUNNING attempt.
        attempt(
            3,
            ORDERS_2,
            "2026-07-22 12:00Z",
            "'2026-07-22 11:00Z'",
            "2026-07-22 12:00Z",
            1,
            "SCHEDULED",
            "PASS",
            None,
            "NULL",
            "2026-07-22 12:01Z",
            "'2026-07-22 12:05Z'",
            "NULL",
        ),
        result(3, "row_count", "PASS", "NULL"),
        result(3, "row_checksum", "PASS", "NULL"),
        slot(ORDERS_2, "2026-07-22 12:00Z", 3, 1, "'2026-07-22 11:00Z'", "2026-07-22 12:00Z", "PASS"),
        attempt(
            4,
            ORDERS_2,
            "2026-07-22 13:00Z",
            "'2026-07-22 12:00Z'",
            "2026-07-22 13:00Z",
            1,
            "SCHEDULED",
            "RUNNING",
            None,
            "NULL",
            "2026-07-22 13:01Z",
            "NULL",
            "NULL",
        ),
        // users: a run-level ERROR (being remediated), a FAIL with results and evidence, a
        // DEFERRED attempt, and an ERROR never finished whose start is just before midnight
        // UTC (01:59:59 at +02).
        attempt(
            5,
            USERS,
            "2026-07-22 11:00Z",
            "'2026-07-22 10:00Z'",
            "2026-07-22 11:00Z",
            1,
            "SCHEDULED",
            "ERROR",
            None,
            "NULL",
            "2026-07-22 11:01Z",
            "'2026-07-22 11:03Z'",
            "'source unreachable'",
        ),
        slot(USERS, "2026-07-22 11:00Z", 5, 1, "'2026-07-22 10:00Z'", "2026-07-22 11:00Z", "ERROR"),
        attempt(
            8,
            USERS,
            "2026-07-22 11:00Z",
            "'2026-07-22 10:00Z'",
            "2026-07-22 11:00Z",
            2,
            "REMEDIATION",
            "RUNNING",
            Some(5),
            "'INC-2'",
            "2026-07-22 13:00Z",
            "NULL",
            "NULL",
        ),
        attempt(
            6,
            USERS,
            "2026-07-22 12:00Z",
            "'2026-07-22 11:00Z'",
            "2026-07-22 12:00Z",
            1,
            "SCHEDULED",
            "FAIL",
            None,
            "NULL",
            "2026-07-22 12:01Z",
            "'2026-07-22 12:04Z'",
            "'row_count FAIL; bad checksum; row_diff FAIL'",
        ),
        result(6, "null_key_count", "PASS", "NULL"),
        result(6, "row_count", "FAIL", "NULL"),
        result(6, "row_checksum", "ERROR", "'bad checksum'"),
        result(6, "row_diff", "FAIL", "NULL"),
        slot(USERS, "2026-07-22 12:00Z", 6, 1, "'2026-07-22 11:00Z'", "2026-07-22 12:00Z", "FAIL"),
        attempt(
            7,
            USERS,
            "2026-07-22 13:00Z",
            "NULL",
            "2026-07-22 13:00Z",
            1,
            "SCHEDULED",
            "DEFERRED",
            None,
            "NULL",
            "2026-07-22 13:01Z",
            "'2026-07-22 13:02Z'",
            "'pending'",
        ),
        attempt(
            9,
            USERS,
            "2026-07-22 00:00Z",
            "'2026-07-21 23:00Z'",
            "2026-07-22 00:00Z",
            1,
            "RETRY",
            "ERROR",
            None,
            "NULL",
            "2026-07-22 01:59:59+02",
            "NULL",
            "'killed'",
        ),
        format!(
            "INSERT INTO public.datadiff_run_differences VALUES \
             ('{r6}', 'row_diff', 2, 'CHANGED', '{{\"id\": \"8\"}}', '{{status,amount}}'), \
             ('{r6}', 'row_diff', 1, 'MISSING_IN_TARGET', '{{\"id\": \"3\"}}', '{{}}');",
            r6 = id(6)
        ),
        format!(
            "INSERT INTO public.dd_watermark_state VALUES \
             ('{orders}', '2026-07-20 00:00Z', '2026-07-22 12:00Z', '2026-07-22 12:00Z', 'CONTIGUOUS', NULL, '{r3}', \
              'ADVANCE', 7, '2026-07-22 12:05Z', 'All observed timestamp intervals are covered by successful runs'), \
             ('{users}', '2026-07-22 10:00Z', '2026-07-22 10:00Z', '2026-07-22 12:00Z', 'BLOCKED', '{r5}', '{r6}', \
              'BLOCK', 2, '2026-07-22 12:04Z', 'Run {r5} has status ERROR at the coverage boundary');",
            orders = id(ORDERS_2),
            users = id(USERS),
            r3 = id(3),
            r5 = id(5),
            r6 = id(6)
        ),
    ];
    repo.sql().batch_execute(&statements.join("\n")).unwrap();
}

#[test]
fn the_watermark_report_lists_current_definitions_with_lag_from_the_given_now() {
    let repo = repo();
    seed(&repo);
    let rows = repo.store.watermark_report(t(22, 14, 30)).unwrap();
    let expected = vec![
        WatermarkReportRow {
            check_id: CheckId::new(id(USERS)),
            full_check_name: "postgres/crm/public/users".into(),
            revision: 1,
            source_database: "crm_db".into(),
            source_schema: "public".into(),
            source_table: "users".into(),
            target_database: "warehouse".into(),
            target_schema: "replicated_crm".into(),
            target_table: "users".into(),
            verified_status: WatermarkStatus::Blocked,
            verified_start: Some(t(22, 10, 0)),
            verified_end: Some(t(22, 10, 0)),
            furthest_observed_end: Some(t(22, 12, 0)),
            verification_lag: Some(TimeDelta::minutes(270)),
            blocking_run_id: Some(run(5)),
            last_evaluated_run_id: Some(run(6)),
            watermark_updated_at: Some(t(22, 12, 4)),
            reason: Some(format!("Run {} has status ERROR at the coverage boundary", id(5))),
            oldest_verification: None,
            oldest_verification_age: None,
        },
        WatermarkReportRow {
            check_id: CheckId::new(id(ORDERS_2)),
            full_check_name: "postgres/pay/public/orders".into(),
            revision: 2,
            source_database: "pay_db".into(),
            source_schema: "public".into(),
            source_table: "orders".into(),
            target_database: "warehouse".into(),
            target_schema: "replicated_pay".into(),
            target_table: "orders".into(),
            verified_status: WatermarkStatus::Contiguous,
            verified_start: Some(t(20, 0, 0)),
            verified_end: Some(t(22, 12, 0)),
            furthest_observed_end: Some(t(22, 12, 0)),
            verification_lag: Some(TimeDelta::minutes(150)),
            blocking_run_id: None,
            last_evaluated_run_id: Some(run(3)),
            watermark_updated_at: Some(t(22, 12, 5)),
            reason: Some("All observed timestamp intervals are covered by successful runs".into()),
            // Its one PASS slot (12:00) was last attempted at 12:05; the 13:00 slot still runs.
            oldest_verification: Some(t(22, 12, 5)),
            oldest_verification_age: Some(TimeDelta::minutes(145)),
        },
        WatermarkReportRow {
            check_id: CheckId::new(id(REFUNDS)),
            full_check_name: "postgres/pay/public/refunds".into(),
            revision: 1,
            source_database: "pay_db".into(),
            source_schema: "public".into(),
            source_table: "refunds".into(),
            target_database: "warehouse".into(),
            target_schema: "replicated_pay".into(),
            target_table: "refunds".into(),
            verified_status: WatermarkStatus::NotRun,
            verified_start: None,
            verified_end: None,
            furthest_observed_end: None,
            verification_lag: None,
            blocking_run_id: None,
            last_evaluated_run_id: None,
            watermark_updated_at: None,
            reason: None,
            oldest_verification: None,
            oldest_verification_age: None,
        },
    ];
    assert_eq!(rows, expected);

    // --max-lag: BLOCKED and NOT_RUN always offend; orders only beyond 2h30.
    let verdict = LagVerdict::judge(&rows, TimeDelta::hours(3));
    let offenders: Vec<(&str, LagProblem)> =
        verdict.offenders.iter().map(|offender| (offender.full_check_name.as_str(), offender.problem)).collect();
    assert_eq!(
        offenders,
        [("postgres/crm/public/users", LagProblem::Blocked), ("postgres/pay/public/refunds", LagProblem::NotRun)]
    );
    let strict = LagVerdict::judge(&rows, TimeDelta::hours(2));
    assert_eq!(strict.offenders[1].problem, LagProblem::Lagging { lag: TimeDelta::minutes(150) });
    assert!(!strict.passed());
    // A replay in the past has a negative lag.
    let replay = repo.store.watermark_report(t(22, 11, 0)).unwrap();
    assert_eq!(replay[1].verification_lag, Some(TimeDelta::minutes(-60)));
}

#[test]
fn the_metrics_report_adds_latest_attempts_and_open_failures_to_the_watermarks() {
    let repo = repo();
    seed(&repo);
    let now = t(22, 14, 30);
    let rows = repo.store.metrics_report(now).unwrap();
    let watermarks: Vec<WatermarkReportRow> = rows.iter().map(|row| row.watermark.clone()).collect();
    assert_eq!(watermarks, repo.store.watermark_report(now).unwrap(), "the watermark report's rows and order");
    let summary: Vec<(&str, &str, i64)> =
        rows.iter().map(|row| (row.target_id.as_str(), row.tap_id.as_str(), row.open_failures)).collect();
    // users: the 11:00 ERROR and 12:00 FAIL slots; orders' ERROR slot is of its superseded
    // revision.
    assert_eq!(summary, [("postgres", "crm", 2), ("postgres", "pay", 0), ("postgres", "pay", 0)]);
    // users: the DEFERRED attempt started at 13:01 is newer than the remediation started at
    // 13:00 (still RUNNING); its age counts from its finish.
    assert_eq!(
        rows[0].last_attempt,
        Some(LastAttempt {
            run_id: run(7),
            status: RunStatus::Deferred,
            trigger_type: TriggerType::Scheduled,
            started_at: t(22, 13, 1),
            finished_at: Some(t(22, 13, 2)),
            age: TimeDelta::minutes(88),
        })
    );
    // orders: a RUNNING attempt's age counts from its start.
    let orders = rows[1].last_attempt.as_ref().unwrap();
    assert_eq!((orders.run_id, orders.status, orders.finished_at), (run(4), RunStatus::Running, None));
    assert_eq!(orders.age, TimeDelta::minutes(89));
    // refunds never ran.
    assert_eq!(rows[2].last_attempt, None);
}

#[test]
fn the_daily_report_counts_results_and_run_level_errors_per_utc_day() {
    let repo = repo();
    seed(&repo);
    let row = |table: &str, tap: &str, day: u32, successful: i64, failed: i64, errors: i64| DailyReportRow {
        full_check_name: format!("postgres/{tap}/public/{table}"),
        source_database: format!("{tap}_db"),
        source_schema: "public".into(),
        source_table: table.into(),
        target_database: "warehouse".into(),
        target_schema: format!("replicated_{tap}"),
        target_table: table.into(),
        check_date: NaiveDate::from_ymd_opt(2026, 7, day).unwrap(),
        successful_check_results: successful,
        failed_check_results: failed,
        run_level_errors: errors,
    };
    assert_eq!(
        repo.store.daily_report().unwrap(),
        [
            row("users", "crm", 22, 1, 3, 1),
            row("orders", "pay", 22, 2, 0, 0),
            row("users", "crm", 21, 0, 0, 1),
            row("orders", "pay", 21, 1, 1, 1),
        ]
    );
}

#[test]
fn the_failure_report_lists_failed_slots_of_current_definitions() {
    let repo = repo();
    seed(&repo);
    let row = |check: &str, status: ResultStatus, error: &str| FailureReportRow {
        full_check_name: "postgres/crm/public/users".into(),
        revision: 1,
        source_schema: "public".into(),
        source_table: "users".into(),
        scheduled_for: t(22, 12, 0),
        window_start: Some(t(22, 11, 0)),
        window_end: t(22, 12, 0),
        run_id: run(6),
        attempt: 1,
        trigger_type: TriggerType::Scheduled,
        failed_check: check.into(),
        failure_status: status,
        error: Some(error.into()),
        blocks_watermark: false,
        finished_at: Some(t(22, 12, 4)),
    };
    let combined = "row_count FAIL; bad checksum; row_diff FAIL";
    assert_eq!(
        repo.store.failure_report().unwrap(),
        [
            row("row_checksum", ResultStatus::Error, "bad checksum"),
            row("row_count", ResultStatus::Fail, combined),
            row("row_diff", ResultStatus::Fail, combined),
            FailureReportRow {
                scheduled_for: t(22, 11, 0),
                window_start: Some(t(22, 10, 0)),
                window_end: t(22, 11, 0),
                run_id: run(5),
                failed_check: "<run-level error>".into(),
                failure_status: ResultStatus::Error,
                error: Some("source unreachable".into()),
                blocks_watermark: true,
                finished_at: Some(t(22, 11, 3)),
                ..row("", ResultStatus::Error, "")
            },
        ]
    );
}

#[test]
fn the_remediation_report_lists_failed_roots_with_their_remediations() {
    let repo = repo();
    seed(&repo);
    let root =
        |n: u128, name: &str, revision: i32, status: RunStatus, start: DateTime<Utc>, at: Option<DateTime<Utc>>| {
            RemediationReportRow {
                full_check_name: name.into(),
                revision,
                failed_run_id: run(n),
                failed_status: status,
                window_start: Some(start),
                window_end: start + TimeDelta::hours(1),
                failed_at: at,
                remediation_run_id: None,
                remediation_attempt: None,
                remediation_status: None,
                remediation_reference: None,
                remediation_finished_at: None,
                recovered: false,
            }
        };
    let orders = "postgres/pay/public/orders";
    let users = "postgres/crm/public/users";
    assert_eq!(
        repo.store.remediation_report().unwrap(),
        [
            RemediationReportRow {
                remediation_run_id: Some(run(2)),
                remediation_attempt: Some(2),
                remediation_status: Some(RunStatus::Pass),
                remediation_reference: Some("INC-1".into()),
                remediation_finished_at: Some(t(21, 11, 0)),
                recovered: true,
                ..root(1, orders, 1, RunStatus::Fail, t(21, 9, 0), Some(t(21, 10, 5)))
            },
            root(10, orders, 1, RunStatus::Error, t(21, 10, 0), Some(t(21, 11, 10))),
            RemediationReportRow {
                remediation_run_id: Some(run(8)),
                remediation_attempt: Some(2),
                remediation_status: Some(RunStatus::Running),
                remediation_reference: Some("INC-2".into()),
                ..root(5, users, 1, RunStatus::Error, t(22, 10, 0), Some(t(22, 11, 3)))
            },
            root(6, users, 1, RunStatus::Fail, t(22, 11, 0), Some(t(22, 12, 4))),
            root(9, users, 1, RunStatus::Error, t(21, 23, 0), None),
        ]
    );
}

#[test]
fn differences_of_a_run_come_in_ordinal_order() {
    let repo = repo();
    seed(&repo);
    assert_eq!(
        repo.store.run_differences(run(6)).unwrap(),
        [
            StoredDifference {
                check_type: ResultType::RowDiff,
                ordinal: 1,
                kind: DifferenceKind::MissingInTarget,
                key: json!({"id": "3"}),
                fields: vec![],
            },
            StoredDifference {
                check_type: ResultType::RowDiff,
                ordinal: 2,
                kind: DifferenceKind::Changed,
                key: json!({"id": "8"}),
                fields: vec!["status".into(), "amount".into()],
            },
        ]
    );
    assert!(repo.store.run_differences(run(5)).unwrap().is_empty());
    assert!(matches!(repo.store.run_differences(run(99)), Err(Error::UnknownRun(unknown)) if unknown == run(99)));
    let results: Vec<(String, ResultStatus)> = repo
        .store
        .run_results(run(6))
        .unwrap()
        .into_iter()
        .map(|result| (result.check_type.to_string(), result.status))
        .collect();
    assert_eq!(
        results,
        [
            ("row_count".to_owned(), ResultStatus::Fail),
            ("null_key_count".to_owned(), ResultStatus::Pass),
            ("row_checksum".to_owned(), ResultStatus::Error),
            ("row_diff".to_owned(), ResultStatus::Fail),
        ],
        "the declared check (row_count) first, then the others by name"
    );
}

#[test]
fn a_runs_evidence_is_its_attempt_definition_preflight_and_results_in_one_read() {
    let repo = repo();
    seed(&repo);
    repo.sql()
        .batch_execute(&format!(
            "INSERT INTO public.dd_preflight_log VALUES ('{preflight}', '{check}', 'BLOCKED', '2026-07-22 12:01Z', \
             repeat('ab', 32), '[]', '[\"no index leads with updated_at\", 7]', NULL, 120000, 100000, false);
             UPDATE public.dd_run_attempts SET preflight_id = '{preflight}' WHERE run_id = '{run}';",
            preflight = id(0xf6),
            check = id(USERS),
            run = id(6),
        ))
        .unwrap();
    let evidence = repo.store.run_evidence(run(6)).unwrap();
    assert_eq!(evidence.attempt.run_id, run(6));
    assert_eq!(evidence.attempt.check_id, CheckId::new(id(USERS)));
    assert_eq!((evidence.full_check_name.as_str(), evidence.revision), ("postgres/crm/public/users", 1));
    assert_eq!(evidence.attempt.scheduled_for, t(22, 12, 0));
    assert_eq!(evidence.attempt.status, RunStatus::Fail);
    let preflight = evidence.preflight.expect("the linked preflight");
    assert_eq!(preflight.preflight_id.get(), id(0xf6));
    assert_eq!(preflight.status, datadiff_diff_core::attempt::PreflightStatus::Blocked);
    assert_eq!(preflight.checked_at, t(22, 12, 1));
    assert_eq!(preflight.query_fingerprint, "ab".repeat(32));
    assert_eq!(preflight.findings, ["no index leads with updated_at"], "strings only");
    assert_eq!(
        (preflight.table_rows, preflight.row_limit, preflight.has_leading_index, preflight.error),
        (Some(120_000), Some(100_000), Some(false), None)
    );
    let results: Vec<(String, ResultStatus, Option<f64>, Option<f64>)> = evidence
        .results
        .iter()
        .map(|result| {
            (result.check_type.to_string(), result.status, result.source_query_seconds, result.target_query_seconds)
        })
        .collect();
    assert_eq!(
        results,
        [
            ("row_count".to_owned(), ResultStatus::Fail, Some(0.1), Some(0.2)),
            ("null_key_count".to_owned(), ResultStatus::Pass, Some(0.1), Some(0.2)),
            ("row_checksum".to_owned(), ResultStatus::Error, Some(0.1), Some(0.2)),
            ("row_diff".to_owned(), ResultStatus::Fail, Some(0.1), Some(0.2)),
        ],
        "as run_results orders them"
    );
    assert_eq!(evidence.results[0].source_value, json!("1"));
    assert_eq!(evidence.results[0].target_value, json!("2"));

    // A remediation still running: its link and reference, no preflight, no results.
    let running = repo.store.run_evidence(run(8)).unwrap();
    assert_eq!(running.attempt.trigger, TriggerType::Remediation);
    assert_eq!(running.attempt.rerun_of_run_id, Some(run(5)));
    assert_eq!(running.attempt.remediation_reference.as_deref(), Some("INC-2"));
    assert_eq!((running.attempt.finished_at, running.preflight, running.results.len()), (None, None, 0));
    assert!(matches!(repo.store.run_evidence(run(99)), Err(Error::UnknownRun(unknown)) if unknown == run(99)));

    // Results are upstream's table: a backend without datadiff's extension table has them too.
    repo.sql().batch_execute("DROP TABLE public.datadiff_run_differences").unwrap();
    assert_eq!(repo.store.run_results(run(6)).unwrap().len(), 4);
    assert_eq!(repo.store.run_evidence(run(6)).unwrap().results.len(), 4);
    assert!(repo.store.run_differences(run(6)).unwrap().is_empty(), "no evidence table, no differences");
}
