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
        "error: backend schema is at 003, datadiff needs 004 (+ extensions 1): run datadiff import_config --dir {}",
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
