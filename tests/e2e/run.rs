//! `run_data_diff_checks`: one tick, upstream's table, exit 1 iff a FAIL or ERROR summary.

use crate::support::{CHECK, Fixture, RUN_AT, closed_port};

#[test]
fn a_passing_run_prints_upstreams_table_and_records_the_attempt_at_the_given_time() {
    let fixture = Fixture::new();
    fixture.import();
    let outcome = fixture.run(&["run_data_diff_checks", "--all", "--at", RUN_AT]);
    outcome.expect(0);
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    let header: Vec<&str> = lines[0].split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect();
    assert_eq!(
        header,
        ["Check", "Status", "Slot status", "UTC start", "UTC end", "Run ID", "Reason"],
        "{}",
        outcome.stdout
    );
    let row = lines.iter().find(|line| line.starts_with(CHECK)).expect("a row for the check");
    for cell in ["PASS", "2026-07-22T12:00:00+00:00", "2026-07-22T13:00:00+00:00"] {
        assert!(row.contains(cell), "{row}");
    }
    assert!(!outcome.stdout.contains("None"), "{}", outcome.stdout);
    // As upstream: columns two spaces apart, the slot status blank on an executed row.
    let slot_status = lines[0].find("  Slot status  ").expect("two spaces around the header") + 2;
    assert_eq!(
        row.get(slot_status..slot_status + "Slot status".len() + 2).map(str::trim),
        Some(""),
        "{}",
        outcome.stdout
    );
    let attempt = fixture
        .backend_sql()
        .query_one(
            "SELECT status, trigger_type, attempt, started_at = '2026-07-22T13:05:00Z', scheduled_for = '2026-07-22T13:00:00Z' \
               FROM public.dd_run_attempts",
            &[],
        )
        .unwrap();
    assert_eq!(attempt.get::<_, String>(0), "PASS");
    assert_eq!(attempt.get::<_, String>(1), "SCHEDULED");
    assert!(attempt.get::<_, bool>(3) && attempt.get::<_, bool>(4), "--at decides the slot and the recorded times");
    assert!(row.contains(&fixture.newest_run_id()), "the run id is printed");

    // The same slot again: SKIPPED with the slot's status, exit 0, nothing written.
    let outcome = fixture.run(&["run", "--target", "postgres", "--tap", "payments", "--at", RUN_AT]);
    outcome.expect(0).stdout_has("SKIPPED").stdout_has("This cron slot has already been attempted");
    let skipped = outcome.stdout.lines().find(|line| line.starts_with(CHECK)).expect("a row for the check");
    assert_eq!(skipped.get(slot_status..slot_status + 4), Some("PASS"), "a skip shows the slot's status: {skipped}");
    assert_eq!(fixture.attempts().len(), 1);

    // A check that does not exist: exit 2 naming it (a misspelt crontab line must fail).
    let outcome = fixture.run(&["run", "--all", "--check", "postgres/payments/public/nope", "--at", RUN_AT]);
    outcome.expect(2).one_error_line().stderr_has("unknown check 'postgres/payments/public/nope'");
    assert!(outcome.stdout.is_empty(), "{}", outcome.stdout);
}

#[test]
fn drift_fails_the_forced_rerun_of_the_slot_and_exits_one() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    let outcome = fixture.run(&["run", "--all", "--force", "--check", CHECK, "--at", RUN_AT]);
    outcome.expect(1).stdout_has("FAIL");
    let attempts = fixture.attempts();
    assert_eq!(attempts.len(), 2);
    assert_eq!((attempts[1].0.as_str(), attempts[1].1.as_str(), attempts[1].2), ("FAIL", "MANUAL", 2));
    assert!(attempts[1].3.as_deref().is_some_and(|error| error.contains("row_count FAIL")), "{attempts:?}");
}

#[test]
fn an_unreachable_source_is_an_error_attempt_and_exit_one() {
    let fixture = Fixture::new();
    fixture.import();
    let mut files = fixture.files();
    let port = datadiff_testkit::shared_cluster().port();
    // The source's port only (the target keeps the cluster's).
    files.tap = files.tap.replacen(&format!("port: {port}"), &format!("port: {}", closed_port()), 1);
    fixture.write(&files);
    let outcome = fixture.run(&["run", "--all", "--at", RUN_AT]);
    outcome.expect(1).stdout_has("ERROR").stdout_has("cannot connect to the source database");
    let attempts = fixture.attempts();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].0, "ERROR");
}

#[test]
fn json_output_has_the_documented_fields() {
    let fixture = Fixture::new();
    fixture.import();
    let outcome = fixture.run(&["run", "--all", "--jobs", "2", "--at", RUN_AT, "--output-format", "json"]);
    outcome.expect(0);
    let json = outcome.json();
    assert_eq!(json["at"], "2026-07-22T13:05:00Z");
    let summary = &json["summaries"][0];
    for field in [
        "full_check_name",
        "status",
        "slot_status",
        "window_start",
        "window_end",
        "run_id",
        "reason",
        "check_id",
        "revision",
        "target_id",
        "tap_id",
        "scheduled_for",
        "attempt",
        "trigger_type",
        "rerun_of_run_id",
        "remediation_reference",
        "checks",
    ] {
        assert!(summary.get(field).is_some(), "{field} missing from {summary}");
    }
    assert_eq!(summary["full_check_name"], CHECK);
    assert_eq!(summary["status"], "PASS");
    assert_eq!(summary["window_start"], "2026-07-22T12:00:00Z");
    assert_eq!(summary["window_end"], "2026-07-22T13:00:00Z");
    assert_eq!(summary["scheduled_for"], "2026-07-22T13:00:00Z");
    assert_eq!(summary["reason"], serde_json::Value::Null);
    assert_eq!(summary["run_id"], fixture.newest_run_id().as_str());
    assert_eq!(summary["checks"].as_array().map(Vec::len), Some(8));
    assert_eq!(summary["checks"][1], serde_json::json!({"check_type": "row_count", "status": "PASS", "error": null}));
}

#[test]
fn a_schema_behind_is_refused_with_the_gate_message() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["migrate", "--to", "003", "--drop-extensions"]).expect(0);
    let expected = format!(
        "error: backend schema is at 003, datadiff needs 004 (+ extensions 3): run datadiff import_config --dir {}",
        fixture.dir_arg()
    );
    for args in [&["run", "--all"][..], &["list"], &["report", "watermarks"], &["doctor"]] {
        let outcome = fixture.run(args);
        if args[0] == "doctor" {
            outcome.expect(1).stdout_has("backend schema is at 003");
        } else {
            outcome.expect(2).one_error_line();
            assert_eq!(outcome.stderr.trim_end(), expected, "{args:?}");
        }
    }
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
}

#[test]
fn a_definition_edited_since_the_import_is_run_as_stored_with_a_warning_naming_it() {
    let fixture = Fixture::new();
    fixture.import();
    let mut files = fixture.files();
    files.tap = files.tap.replace("compare_columns: [status, note]", "compare_columns: [status]");
    fixture.write(&files);
    let outcome = fixture.run(&["run", "--all", "--at", RUN_AT]);
    outcome.expect(0).stderr_has(&format!("warning: {CHECK}: definition changed since import; run import_config"));
    // `run` executes the stored revision and writes none of its own.
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_check_definitions"), 1);
    // After the import the warning is gone.
    fixture.import();
    let outcome = fixture.run(&["run", "--all", "--at", "2026-07-22T14:05:00Z"]);
    assert!(!outcome.stderr.contains("definition changed since import"), "{}", outcome.stderr);
}

/// `checks.<name>.reverify` through the command line: a delete lost for a row last updated
/// inside a verified window is found by the re-verification the first tick after the period,
/// exit 1 and one alert like any failure, the watermark leaves CONTIGUOUS; `report watermarks`
/// and `report metrics` show the age of the oldest verification before it.
#[test]
fn reverify_finds_a_lost_delete_in_verified_history() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  log: {{path: alerts.jsonl}}\nchecks:\n  {CHECK}:\n    reverify: 3h\n"));
    fixture.write(&files);
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    // Row 10 (updated 12:10, inside the verified [12:00, 13:00)) is deleted on the source only.
    fixture.source.client().unwrap().batch_execute("DELETE FROM public.transfers WHERE id = 10").unwrap();
    for at in ["2026-07-22T14:05:00Z", "2026-07-22T15:05:00Z", "2026-07-22T16:05:00Z"] {
        fixture.run(&["run", "--all", "--at", at]).expect(0);
    }
    let watermark =
        |at: &str| fixture.run(&["report", "--output-format", "json", "watermarks", "--at", at]).expect(0).json();
    let before = watermark("2026-07-22T16:30:00Z");
    let row = &before["rows"][0];
    assert_eq!(row["verified_status"], "CONTIGUOUS");
    assert_eq!(row["verified_end"], "2026-07-22T16:00:00Z");
    assert_eq!(row["oldest_verification"], "2026-07-22T13:05:00Z");
    assert_eq!(row["oldest_verification_age_seconds"], 3.0 * 3600.0 + 25.0 * 60.0);
    let metrics = fixture.run(&["report", "metrics", "--at", "2026-07-22T16:30:00Z"]);
    assert!(
        metrics
            .expect(0)
            .stdout
            .lines()
            .any(|line| line.starts_with("datadiff_oldest_verification_age_seconds{") && line.ends_with(" 12300")),
        "{}",
        metrics.stdout
    );
    assert!(!fixture.path().join("alerts.jsonl").exists(), "no alert yet");

    // 17:05: the 13:00 slot was last attempted at 13:05, more than 3 h ago: re-verified, FAIL.
    let found = fixture.run(&["run", "--all", "--at", "2026-07-22T17:05:00Z"]);
    found.expect(1);
    let manual: Vec<(String, i32, String, String)> = fixture
        .backend_sql()
        .query(
            "SELECT scheduled_for::text, attempt, status, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') \
               FROM public.dd_run_attempts WHERE trigger_type = 'MANUAL'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect();
    assert_eq!(manual, [("2026-07-22 13:00:00+00".to_owned(), 2, "FAIL".to_owned(), "12:00".to_owned())]);
    let after = watermark("2026-07-22T17:30:00Z");
    assert_eq!(after["rows"][0]["verified_status"], "BLOCKED");
    assert_eq!(after["rows"][0]["verified_end"], "2026-07-22T12:00:00Z");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_watermark_events WHERE event_type = 'INVALIDATE'"), 1);
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "one alert: {log}");
    assert!(log.contains("FAIL data-diff payments/public.transfers"), "{log}");
}
