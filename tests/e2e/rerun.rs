//! `rerun_data_diff_check`: remediation of a failed run (runs note §2.2, §6).

use crate::support::{CHECK, Fixture, MARKER, RUN_AT};

/// A fixture whose slot 13:00 FAILed (a row missing in the replica); returns the run id.
fn failed() -> (Fixture, String) {
    let fixture = Fixture::new();
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let run_id = fixture.newest_run_id();
    (fixture, run_id)
}

#[test]
fn a_repaired_failure_is_remediated_linked_to_its_run_and_exits_zero() {
    let (fixture, failed_run) = failed();
    // The repair: the missing row again, as the source has it.
    fixture.replica_sql(&format!(
        "INSERT INTO payments.transfers (id, updated_at, status, note) \
         VALUES (7, '2026-07-22 12:07:00+00', 'paid {MARKER} 7', 'note {MARKER} 7')"
    ));

    let outcome = fixture.run(&[
        "rerun_data_diff_check",
        "--run-id",
        &failed_run,
        "--remediation-ref",
        "INC-42",
        "--at",
        "2026-07-22T13:30:00Z",
    ]);
    outcome.expect(0);
    let header: Vec<&str> = outcome
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "Check",
            "Status",
            "Attempt",
            "UTC start",
            "UTC end",
            "Original run ID",
            "Remediation run ID",
            "Remediation reference",
            "Reason"
        ]
    );
    outcome.stdout_has(CHECK).stdout_has("PASS").stdout_has(&failed_run).stdout_has("INC-42");
    let row = fixture
        .backend_sql()
        .query_one(
            "SELECT status, trigger_type, attempt, rerun_of_run_id::text, remediation_reference, \
                    started_at = '2026-07-22T13:30:00Z' \
               FROM public.dd_run_attempts WHERE trigger_type = 'REMEDIATION'",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "PASS");
    assert_eq!(row.get::<_, i32>(2), 2);
    assert_eq!(row.get::<_, String>(3), failed_run);
    assert_eq!(row.get::<_, String>(4), "INC-42");
    assert!(row.get::<_, bool>(5));
    let status: String =
        fixture.backend_sql().query_one("SELECT verified_status FROM public.dd_watermark_state", &[]).unwrap().get(0);
    assert_eq!(status, "CONTIGUOUS", "the remediation repaired the coverage");
}

#[test]
fn a_failing_remediation_exits_one_and_json_has_the_rerun_fields() {
    let (fixture, failed_run) = failed();
    let outcome = fixture.run(&[
        "rerun",
        "--run-id",
        &failed_run,
        "--remediation-ref",
        "INC-43",
        "--at",
        "2026-07-22T13:30:00Z",
        "--output-format",
        "json",
    ]);
    outcome.expect(1);
    let summary = &outcome.json()["summaries"][0];
    assert_eq!(summary["status"], "FAIL");
    assert_eq!(summary["attempt"], 2);
    assert_eq!(summary["trigger_type"], "REMEDIATION");
    assert_eq!(summary["rerun_of_run_id"], failed_run.as_str());
    assert_eq!(summary["remediation_reference"], "INC-43");
    assert!(summary["reason"].as_str().is_some_and(|reason| reason.contains("row_count FAIL")), "{summary}");
}

#[test]
fn invalid_reruns_exit_two_with_one_line() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let passed = fixture.newest_run_id();
    fixture
        .run(&["rerun", "--run-id", &passed, "--remediation-ref", "INC-1"])
        .expect(2)
        .one_error_line()
        .stderr_has(&format!("Only failed or errored runs can be remediated; run '{passed}' is PASS"));
    fixture
        .run(&["rerun", "--run-id", "6f1c1a52-0000-4000-8000-000000000000", "--remediation-ref", "INC-1"])
        .expect(2)
        .one_error_line()
        .stderr_has("has no run 6f1c1a52-0000-4000-8000-000000000000");
    fixture
        .run(&["rerun", "--run-id", &passed, "--remediation-ref", " "])
        .expect(2)
        .stderr_has("You must specify the repair or incident reference using --remediation-ref");
    fixture.run(&["rerun", "--run-id", &passed]).expect(2).stderr_has("--remediation-ref");
    assert_eq!(fixture.attempts().len(), 1, "nothing was started");
}
