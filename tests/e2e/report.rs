//! `report`: the four reports, differences, `--max-lag`, table / JSON / CSV.

use crate::support::{CHECK, Fixture, RUN_AT};

#[test]
fn watermarks_in_three_forms_and_the_max_lag_verdict() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);

    let table = fixture.run(&["report", "watermarks", "--at", "2026-07-22T13:30:00Z"]);
    table
        .expect(0)
        .stdout_has(CHECK)
        .stdout_has("CONTIGUOUS")
        .stdout_has("00:30:00")
        .stdout_has("2026-07-22T13:00:00+00:00");

    let json = fixture.run(&["report", "--output-format", "json", "watermarks", "--at", "2026-07-22T13:30:00Z"]);
    let json = json.expect(0).json();
    assert_eq!(json["report"], "watermarks");
    assert_eq!(json["at"], "2026-07-22T13:30:00Z");
    let row = &json["rows"][0];
    assert_eq!(row["full_check_name"], CHECK);
    assert_eq!(row["verified_status"], "CONTIGUOUS");
    assert_eq!(row["verified_start"], "2026-07-22T12:00:00Z");
    assert_eq!(row["verified_end"], "2026-07-22T13:00:00Z");
    assert_eq!(row["verification_lag_seconds"], 1800.0);
    for field in
        ["check_id", "revision", "source_table", "target_schema", "blocking_run_id", "last_evaluated_run_id", "reason"]
    {
        assert!(row.get(field).is_some(), "{field} missing from {row}");
    }

    let csv = fixture.run(&["report", "watermarks", "--output-format", "csv", "--at", "2026-07-22T13:30:00Z"]);
    let csv = csv.expect(0).stdout.clone();
    let mut lines = csv.split("\r\n");
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("full_check_name,revision,verified_status,verified_start,verified_end"), "{header}");
    let record = lines.next().unwrap_or_default();
    assert!(record.starts_with(&format!("{CHECK},1,CONTIGUOUS,2026-07-22T12:00:00Z,2026-07-22T13:00:00Z")), "{record}");

    // Monitoring: within the lag → 0; a day later → 1; the JSON says why.
    fixture.run(&["report", "watermarks", "--max-lag", "1h", "--at", "2026-07-22T13:30:00Z"]).expect(0);
    let late = fixture.run(&[
        "report",
        "watermarks",
        "--max-lag",
        "1h",
        "--at",
        "2026-07-23T13:30:00Z",
        "--output-format",
        "json",
    ]);
    let verdict = &late.expect(1).json()["max_lag"];
    assert_eq!(verdict["passed"], false);
    assert_eq!(verdict["max_lag_seconds"], 3600.0);
    assert_eq!(verdict["offenders"][0]["problem"], "LAGGING");
    assert_eq!(verdict["offenders"][0]["full_check_name"], CHECK);
    fixture
        .run(&["report", "watermarks", "--max-lag", "1h", "--at", "2026-07-23T13:30:00Z"])
        .expect(1)
        .stdout_has("LAGGING by 1 day 00:30:00");
}

#[test]
fn a_definition_not_run_yet_fails_max_lag() {
    let fixture = Fixture::new();
    fixture.import();
    let outcome = fixture.run(&["report", "watermarks", "--max-lag", "1d", "--output-format", "json"]);
    let json = outcome.expect(1).json();
    assert_eq!(json["rows"][0]["verified_status"], "NOT_RUN");
    assert_eq!(json["max_lag"]["offenders"][0]["problem"], "NOT_RUN");
}

#[test]
fn daily_failures_remediations_and_differences() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.replica_sql("UPDATE payments.transfers SET status = 'changed' WHERE id = 3");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let failed = fixture.newest_run_id();
    fixture
        .run(&["rerun", "--run-id", &failed, "--remediation-ref", "INC-9", "--at", "2026-07-22T13:40:00Z"])
        .expect(1);

    let daily = fixture.run(&["report", "daily", "--output-format", "json"]).expect(0).json();
    let row = &daily["rows"][0];
    assert_eq!(row["check_date"], "2026-07-22");
    assert_eq!(row["full_check_name"], CHECK);
    assert_eq!(row["failed_check_results"], 2, "row_checksum failed in both attempts");
    assert_eq!(row["successful_check_results"], 14);
    assert_eq!(row["run_level_errors"], 0);

    let failures = fixture.run(&["report", "failures", "--output-format", "json"]).expect(0).json();
    let rows = failures["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "one failed check of the slot's effective attempt: {rows:?}");
    assert_eq!(rows[0]["failed_check"], "row_checksum");
    assert_eq!(rows[0]["failure_status"], "FAIL");
    assert_eq!(rows[0]["attempt"], 2);
    assert_eq!(rows[0]["trigger_type"], "REMEDIATION");
    assert_eq!(rows[0]["blocks_watermark"], true);
    fixture.run(&["report", "failures"]).expect(0).stdout_has("row_checksum").stdout_has("REMEDIATION");

    let remediations = fixture.run(&["report", "remediations", "--output-format", "json"]).expect(0).json();
    let row = &remediations["rows"][0];
    assert_eq!(row["failed_run_id"], failed.as_str());
    assert_eq!(row["remediation_reference"], "INC-9");
    assert_eq!(row["remediation_status"], "FAIL");
    assert_eq!(row["recovered"], false);
    let csv = fixture.run(&["report", "remediations", "--output-format", "csv"]).expect(0).stdout.clone();
    assert!(csv.contains(",INC-9,") && csv.contains(",false\r\n"), "{csv}");

    // row_diff evidence of a run (none recorded for upstream checks); an unknown run is exit 2.
    let differences =
        fixture.run(&["report", "differences", "--run-id", &failed, "--output-format", "json"]).expect(0).json();
    assert_eq!(differences["run_id"], failed.as_str());
    assert_eq!(differences["rows"], serde_json::json!([]));
    fixture
        .run(&["report", "differences", "--run-id", "6f1c1a52-0000-4000-8000-000000000000"])
        .expect(2)
        .one_error_line()
        .stderr_has("has no run");
}

#[test]
fn differences_say_how_many_were_found_and_whether_the_list_is_truncated() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n    row_diff: {{max_examples: 3}}\n"));
    fixture.write(&files);
    fixture.import();
    // Five changed rows and two missing: seven differences, three kept as evidence.
    fixture.replica_sql(
        "UPDATE payments.transfers SET note = 'drifted' WHERE id < 5; DELETE FROM payments.transfers WHERE id IN (40, 41);",
    );
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let run_id = fixture.newest_run_id();
    let report =
        fixture.run(&["report", "differences", "--run-id", &run_id, "--output-format", "json"]).expect(0).json();
    assert_eq!(report["rows"].as_array().map(Vec::len), Some(3));
    assert_eq!(report["found"], serde_json::json!({"missing": 2, "extra": 0, "changed": 5, "total": 7}));
    assert_eq!((report["shown"].as_u64(), report["truncated"].as_bool()), (Some(3), Some(true)));
    fixture
        .run(&["report", "differences", "--run-id", &run_id])
        .expect(0)
        .stdout_has("7 differences found (2 missing, 0 extra, 5 changed); 3 shown (max_examples)");
}
