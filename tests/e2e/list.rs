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
    // PipelineWise prints a bare JSON list (its own test reads `payload[0]["full_check_name"]`):
    // a script written against its output reads datadiff's unchanged.
    let printed = current.expect(0).json();
    let checks = printed.as_array().cloned().unwrap_or_else(|| panic!("not a bare list: {printed}"));
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
    assert_eq!(check["verified_status"], serde_json::Value::Null, "upstream's null before the first evaluation");
    assert_eq!(
        (&check["verified_at"], &check["coverage_reason"]),
        (&serde_json::Value::Null, &serde_json::Value::Null)
    );
    assert_eq!(
        (check["source_type"].as_str(), check["target_type"].as_str()),
        (Some("tap-postgres"), Some("target-postgres"))
    );
    assert_eq!(check["initial_full_scan"], false);
    assert_eq!(check["window_start_seconds"], 3600);
    assert_eq!(check["source_compare_columns"], serde_json::json!(["status", "note"]));

    let all = fixture.run(&["list", "--include-versioned", "--output-format", "json"]).expect(0).json();
    let revisions: Vec<(i64, bool)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|check| (check["revision"].as_i64().unwrap(), check["is_current"].as_bool().unwrap()))
        .collect();
    assert_eq!(revisions, [(1, false), (2, true)]);
    assert_eq!(all[0]["verified_end"], "2026-07-22T13:00:00Z");

    // Every key of upstream's list rows (`checks.*` of dd_check_definitions, the watermark's
    // columns as it names them, the hydrated fields), with upstream's values.
    let mut backend = fixture.backend_sql();
    let definition_columns: Vec<String> = backend
        .query(
            "SELECT column_name FROM information_schema.columns \
              WHERE table_schema = 'public' AND table_name = 'dd_check_definitions'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(definition_columns.len() >= 20, "{definition_columns:?}");
    let coverage_keys = [
        "verified_start",
        "verified_end",
        "furthest_observed_end",
        "verified_status",
        "blocking_run_id",
        "verified_at",
        "last_evaluated_run_id",
        "coverage_reason",
        "historical_scan_pending",
        "source_compare_columns",
        "target_compare_columns",
        "initial_full_scan",
    ];
    for check in all.as_array().unwrap() {
        for key in definition_columns.iter().map(String::as_str).chain(coverage_keys) {
            assert!(check.get(key).is_some(), "upstream's {key} missing from {check}");
        }
        let check_id = check["check_id"].as_str().unwrap();
        let stored = backend
            .query_one(
                "SELECT checks.canonical_config, checks.source_type, checks.target_type, \
                        coverage.updated_at, coverage.reason \
                   FROM public.dd_check_definitions checks \
                   LEFT JOIN public.dd_watermark_state coverage ON coverage.check_id = checks.check_id \
                  WHERE checks.check_id::text = $1",
                &[&check_id],
            )
            .unwrap();
        assert_eq!(check["canonical_config"], stored.get::<_, serde_json::Value>(0));
        assert_eq!(check["source_type"], stored.get::<_, String>(1));
        assert_eq!(check["target_type"], stored.get::<_, String>(2));
        let listed = check["verified_at"].as_str().map(|text| text.parse::<chrono::DateTime<chrono::Utc>>().unwrap());
        let stored_at: Option<chrono::DateTime<chrono::Utc>> = stored.get(3);
        assert_eq!(listed, stored_at, "verified_at is the watermark state's updated_at");
        assert_eq!(check["coverage_reason"].as_str(), stored.get::<_, Option<String>>(4).as_deref());
    }
    assert!(all[0]["verified_at"].is_string(), "the run revision has a watermark");
    fixture.run(&["list", "--target", "elsewhere"]).expect(0).stdout_has("No data-diff checks found");
}
