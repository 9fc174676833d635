//! `list_data_diff_checks`: documented columns and JSON fields.

use crate::support::{CHECK, Fixture, RUN_AT};

#[test]
fn the_table_and_json_list_current_revisions_and_versioned_ones_on_request() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let outcome = fixture.run(&["list_data_diff_checks"]);
    outcome.expect(0);
    let header = outcome.stdout.lines().next().unwrap_or_default();
    for column in [
        "Check",
        "Revision",
        "Current",
        "Frequency",
        "Window",
        "Checks",
        "Full scan",
        "Initial scan pending",
        "Verified status",
        "Verified start",
        "Verified end",
        "Check ID",
    ] {
        assert!(header.contains(column), "{column} missing: {header}");
    }
    outcome.stdout_has(CHECK).stdout_has("-1h .. 0s").stdout_has("CONTIGUOUS").stdout_has("2026-07-22T12:00:00+00:00");

    // A second revision: only the current one by default.
    let mut files = fixture.files();
    files.tap = files.tap.replace("frequency: \"0 * * * *\"", "frequency: \"30 * * * *\"");
    fixture.write(&files);
    fixture.run(&["import"]).expect(0);
    let current = fixture.run(&["list", "--target", "postgres", "--tap", "payments", "--output-format", "json"]);
    let checks = current.expect(0).json()["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 1);
    let check = &checks[0];
    for field in [
        "full_check_name",
        "revision",
        "is_current",
        "frequency",
        "window",
        "checks",
        "initial_full_scan",
        "historical_scan_pending",
        "verified_status",
        "verified_start",
        "verified_end",
        "check_id",
        "target_id",
        "tap_id",
        "source_compare_columns",
        "target_compare_columns",
        "window_start_seconds",
        "window_end_seconds",
        "statement_timeout_seconds",
        "furthest_observed_end",
        "blocking_run_id",
        "created_at",
        "superseded_at",
    ] {
        assert!(check.get(field).is_some(), "{field} missing from {check}");
    }
    assert_eq!((check["revision"].as_i64(), check["is_current"].as_bool()), (Some(2), Some(true)));
    assert_eq!(check["frequency"], "30 * * * *");
    assert_eq!(check["verified_status"], "NOT_RUN");
    assert_eq!(check["initial_full_scan"], false);
    assert_eq!(check["window_start_seconds"], 3600);
    assert_eq!(check["source_compare_columns"], serde_json::json!(["status", "note"]));

    let all = fixture.run(&["list", "--include-versioned", "--output-format", "json"]).expect(0).json();
    let revisions: Vec<(i64, bool)> = all["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| (check["revision"].as_i64().unwrap(), check["is_current"].as_bool().unwrap()))
        .collect();
    assert_eq!(revisions, [(1, false), (2, true)]);
    assert_eq!(all["checks"][0]["verified_end"], "2026-07-22T13:00:00Z");
    fixture.run(&["list", "--target", "elsewhere"]).expect(0).stdout_has("No data-diff checks found");
}
