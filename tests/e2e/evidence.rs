//! Evidence in production: `report run` (one attempt's whole record), the counts and the
//! differences command in a `row_diff` failure's texts and alert, tables in pipes, and the
//! invocation lines `run`, `rerun` and `audit` log without `-v`.

use chrono::DateTime;

use crate::support::{CHECK, Fixture, Hook, MARKER, RUN_AT};

/// A fixture with `row_diff` and a webhook whose 13:00 slot FAILs with two changed rows
/// (ids 1 and 2), one missing (40) and one extra (100): source 50 rows, target 50.
fn drifted() -> (Fixture, Hook, String) {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff = Some(format!(
        "checks:\n  {CHECK}:\n    row_diff: {{max_examples: 10}}\nalert_handlers:\n  webhook: {{url: \"{}\"}}\n",
        hook.url
    ));
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql(
        "UPDATE payments.transfers SET note = 'drifted' WHERE id IN (1, 2);
         DELETE FROM payments.transfers WHERE id = 40;
         INSERT INTO payments.transfers (id, updated_at, status, note)
             VALUES (100, '2026-07-22 12:30:30+00', 'extra', 'extra');",
    );
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let run_id = fixture.newest_run_id();
    (fixture, hook, run_id)
}

#[test]
fn a_row_diff_failure_says_its_counts_and_the_command_that_lists_the_rows() {
    let (fixture, hook, run_id) = drifted();
    let command = format!("datadiff report differences --run-id {run_id}");
    // The stored texts: row_diff's result error has the counts; upstream's checks keep
    // PipelineWise's bare texts (a FAIL result has no error, the attempt joins `<check> FAIL`).
    let mut backend = fixture.backend_sql();
    let errors: Vec<(String, Option<String>)> = backend
        .query(
            "SELECT check_type, error FROM public.dd_run_results WHERE run_id = $1::text::uuid AND status = 'FAIL' \
             ORDER BY check_type",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(
        errors,
        [
            ("max_key".to_owned(), None),
            ("row_checksum".to_owned(), None),
            ("row_diff".to_owned(), Some("row_diff FAIL: 1 missing, 1 extra, 2 changed".to_owned())),
        ]
    );
    let attempt_error: Option<String> = backend
        .query_one("SELECT error FROM public.dd_run_attempts WHERE run_id = $1::text::uuid", &[&run_id])
        .unwrap()
        .get(0);
    assert_eq!(
        attempt_error.as_deref(),
        Some("max_key FAIL; row_checksum FAIL; row_diff FAIL: 1 missing, 1 extra, 2 changed")
    );

    // The alert: the counts in its error detail and its own line, the command in its next action.
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let alert: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    let details = alert["details"].as_str().unwrap_or_default();
    assert!(details.contains("row_diff FAIL: 1 missing, 1 extra, 2 changed"), "{details}");
    assert!(details.contains("row_diff_counts   : 1 missing, 1 extra, 2 changed"), "{details}");
    assert!(alert["next_action"].as_str().unwrap_or_default().contains(&command), "{alert}");
    assert!(!bodies[0].contains(MARKER), "no row value in the alert");

    // The run table's reason adds the command (the run id is known there).
    let rerun = fixture.run(&["run", "--all", "--force", "--at", RUN_AT, "--output-format", "json"]);
    let json = rerun.expect(1).json();
    let forced = fixture.newest_run_id();
    assert_eq!(
        json["summaries"][0]["reason"],
        format!(
            "max_key FAIL; row_checksum FAIL; row_diff FAIL: 1 missing, 1 extra, 2 changed; \
             see datadiff report differences --run-id {forced}"
        )
    );
    // And the command it names works.
    fixture
        .run(&["report", "differences", "--run-id", &forced])
        .expect(0)
        .stdout_has("4 differences found (1 missing, 1 extra, 2 changed)");
}

#[test]
fn report_run_prints_one_attempt_as_the_backend_keeps_it() {
    let (fixture, _hook, run_id) = drifted();
    let mut backend = fixture.backend_sql();
    let preflight = backend
        .query_one(
            "SELECT p.status, p.query_fingerprint::text, p.table_rows FROM public.dd_preflight_log p \
             JOIN public.dd_run_attempts a ON a.preflight_id = p.preflight_id WHERE a.run_id = $1::text::uuid",
            &[&run_id],
        )
        .unwrap();
    let (preflight_status, fingerprint, table_rows): (String, String, Option<i64>) =
        (preflight.get(0), preflight.get(1), preflight.get(2));
    let results = backend
        .query(
            "SELECT check_type, status, source_value, target_value, source_query_seconds, target_query_seconds \
               FROM public.dd_run_results WHERE run_id = $1::text::uuid",
            &[&run_id],
        )
        .unwrap();
    assert_eq!(results.len(), 9, "eight upstream checks and row_diff");

    // JSON: the attempt, its preflight, every result with both values, the row_diff totals.
    let json = fixture.run(&["report", "--output-format", "json", "run", "--run-id", &run_id]).expect(0).json();
    assert_eq!(json["report"], "run");
    assert_eq!(json["run_id"], run_id.as_str());
    assert_eq!(json["full_check_name"], CHECK);
    assert_eq!(json["revision"], 1);
    assert_eq!(json["window_start"], "2026-07-22T12:00:00Z");
    assert_eq!(json["window_end"], "2026-07-22T13:00:00Z");
    assert_eq!(json["scheduled_for"], "2026-07-22T13:00:00Z");
    assert_eq!(json["trigger_type"], "SCHEDULED");
    assert_eq!(json["attempt"], 1);
    assert_eq!(json["status"], "FAIL");
    assert_eq!(json["error"], "max_key FAIL; row_checksum FAIL; row_diff FAIL: 1 missing, 1 extra, 2 changed");
    assert_eq!(json["started_at"], "2026-07-22T13:05:00Z");
    assert_eq!(json["preflight"]["status"], preflight_status.as_str());
    assert_eq!(json["preflight"]["query_fingerprint"], fingerprint.trim_end());
    assert_eq!(json["preflight"]["table_rows"], serde_json::json!(table_rows));
    assert_eq!(
        json["row_diff"],
        serde_json::json!({"source_rows": 50, "target_rows": 50, "missing": 1, "extra": 1, "changed": 2, "matched": 47})
    );
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), results.len(), "{rows:?}");
    for result in &results {
        let check_type: String = result.get("check_type");
        let row = rows.iter().find(|row| row["check_type"] == check_type.as_str()).unwrap();
        assert_eq!(row["status"], result.get::<_, String>("status").as_str(), "{check_type}");
        for (field, seconds) in [("source_value", "source_query_seconds"), ("target_value", "target_query_seconds")] {
            let value: Option<serde_json::Value> = result.get(field);
            assert_eq!(row[field], value.unwrap_or_default(), "{check_type} {field}");
            assert_eq!(row[seconds].as_f64(), result.get::<_, Option<f64>>(seconds), "{check_type} {seconds}");
        }
    }
    let row_count = rows.iter().find(|row| row["check_type"] == "row_count").unwrap();
    assert_eq!((row_count["status"].as_str(), row_count["source_value"].as_str()), (Some("PASS"), Some("50")));
    assert_eq!(rows.last().map(|row| row["check_type"].clone()), Some("row_diff".into()), "row_diff last");

    // The table: the same facts for a reader, and the command that lists the rows.
    let table = fixture.run(&["report", "run", "--run-id", &run_id]);
    table
        .expect(0)
        .stdout_has(&run_id)
        .stdout_has(&format!("{CHECK} (revision 1)"))
        .stdout_has("2026-07-22T12:00:00+00:00 .. 2026-07-22T13:00:00+00:00")
        .stdout_has("SCHEDULED")
        .stdout_has(&format!("Preflight         {preflight_status}"))
        .stdout_has(fingerprint.trim_end())
        .stdout_has("row_diff: 1 missing, 1 extra, 2 changed, 47 matched (source 50 rows, target 50 rows)")
        .stdout_has(&format!("The rows: datadiff report differences --run-id {run_id}"));
    let header = table.stdout.lines().find(|line| line.starts_with("Check type")).unwrap_or_default();
    let header: Vec<&str> = header.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect();
    assert_eq!(
        header,
        ["Check type", "Status", "Source value", "Target value", "Source seconds", "Target seconds", "Error"]
    );
    assert!(
        table.stdout.lines().any(|line| line.starts_with("row_count") && line.contains("PASS")),
        "{}",
        table.stdout
    );
    let schema = table.stdout.lines().find(|line| line.starts_with("schema_compatibility")).unwrap_or_default();
    assert_eq!(schema.matches("4 columns").count(), 2, "the type descriptions stay in JSON: {schema}");
    assert!(!table.stdout.contains(MARKER) && !table.stderr.contains(MARKER), "no row value");

    // CSV: the result rows.
    let csv = fixture.run(&["report", "run", "--run-id", &run_id, "--output-format", "csv"]).expect(0).stdout.clone();
    assert!(csv.starts_with("check_type,status,source_value,target_value,"), "{csv}");
    assert_eq!(csv.split("\r\n").filter(|line| !line.is_empty()).count(), 1 + results.len(), "{csv}");

    // An unknown run: one line, exit 2, as `report differences`.
    fixture
        .run(&["report", "run", "--run-id", "6f1c1a52-0000-4000-8000-000000000000"])
        .expect(2)
        .one_error_line()
        .stderr_has("has no run 6f1c1a52-0000-4000-8000-000000000000");
}

#[test]
fn tables_in_a_pipe_keep_every_row_on_one_line_whatever_columns_says() {
    let (fixture, _hook, run_id) = drifted();
    let outcome = fixture.run_with(&["report", "failures"], &[("COLUMNS", "40")]);
    let lines: Vec<&str> = outcome.expect(0).stdout.lines().collect();
    assert_eq!(lines.len(), 2 + 3, "header, rule, one line per failed check: {}", outcome.stdout);
    assert!(lines[2..].iter().all(|line| line.contains(&run_id) && line.chars().count() > 40), "{}", outcome.stdout);
}

/// The lines of `stderr` logged at INFO whose message starts with `message`, without their
/// time; each line's time is checked to be UTC RFC 3339.
fn info_lines<'a>(stderr: &'a str, message: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter_map(|line| {
            let (time, rest) = line.split_once(' ')?;
            let rest = rest.trim_start().strip_prefix("INFO ")?;
            if !rest.starts_with(message) {
                return None;
            }
            assert!(time.ends_with('Z') && DateTime::parse_from_rfc3339(time).is_ok(), "a UTC time: {line}");
            Some(rest)
        })
        .collect()
}

/// `duration_seconds=<n> ` removed (its value is not asserted).
fn without_duration(line: &str) -> String {
    let (before, after) = line.split_once("duration_seconds=").expect("a duration");
    let (seconds, rest) = after.split_once(' ').unwrap_or((after, ""));
    assert!(seconds.parse::<f64>().is_ok_and(|seconds| seconds >= 0.0), "{line}");
    format!("{before}{rest}")
}

#[test]
fn run_and_rerun_log_a_start_and_an_end_line_without_v_and_one_line_per_check_with_it() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    let outcome = fixture.run(&["run", "--all", "--at", RUN_AT]);
    outcome.expect(1);
    assert_eq!(
        info_lines(&outcome.stderr, "run_data_diff_checks started"),
        ["run_data_diff_checks started at=2026-07-22T13:05:00Z jobs=1"],
        "{}",
        outcome.stderr
    );
    let ended = info_lines(&outcome.stderr, "run_data_diff_checks finished");
    assert_eq!(ended.len(), 1, "{}", outcome.stderr);
    assert_eq!(
        without_duration(ended[0]),
        "run_data_diff_checks finished checks=1 PASS=0 FAIL=1 ERROR=0 SKIPPED=0 DEFERRED=0 exit=1"
    );
    assert!(info_lines(&outcome.stderr, "check ").is_empty(), "per-check lines only with -v: {}", outcome.stderr);
    let failed = fixture.newest_run_id();

    // The same slot again, with -v: a SKIPPED line, counted, and one line per check.
    let outcome = fixture.run(&["run", "--all", "--at", RUN_AT, "-v"]);
    outcome.expect(0);
    let ended = info_lines(&outcome.stderr, "run_data_diff_checks finished");
    assert_eq!(
        ended.iter().map(|line| without_duration(line)).collect::<Vec<_>>(),
        ["run_data_diff_checks finished checks=1 PASS=0 FAIL=0 ERROR=0 SKIPPED=1 DEFERRED=0 exit=0"]
    );
    assert_eq!(
        info_lines(&outcome.stderr, "check "),
        [format!("check {CHECK} SKIPPED run_id={failed} source_query_seconds=- target_query_seconds=-")],
        "{}",
        outcome.stderr
    );

    // A rerun, with -v: its lines, and the check's query times.
    let outcome = fixture.run(&[
        "rerun",
        "--run-id",
        &failed,
        "--remediation-ref",
        "INC-7",
        "--at",
        "2026-07-22T13:30:00Z",
        "-v",
    ]);
    outcome.expect(1);
    assert_eq!(
        info_lines(&outcome.stderr, "rerun_data_diff_check started"),
        [format!("rerun_data_diff_check started run_id={failed}")]
    );
    let ended = info_lines(&outcome.stderr, "rerun_data_diff_check finished");
    assert_eq!(
        ended.iter().map(|line| without_duration(line)).collect::<Vec<_>>(),
        ["rerun_data_diff_check finished checks=1 PASS=0 FAIL=1 ERROR=0 SKIPPED=0 DEFERRED=0 exit=1"]
    );
    let remediation = fixture.newest_run_id();
    let checks = info_lines(&outcome.stderr, "check ");
    assert_eq!(checks.len(), 1, "{}", outcome.stderr);
    let prefix = format!("check {CHECK} FAIL run_id={remediation} source_query_seconds=");
    let times = checks[0].strip_prefix(&prefix).unwrap_or_else(|| panic!("{prefix} in {}", checks[0]));
    let (source, target) = times.split_once(" target_query_seconds=").unwrap();
    assert!(source.parse::<f64>().is_ok() && target.parse::<f64>().is_ok(), "{}", checks[0]);

    // RUST_LOG decides when set: `warn` silences the invocation lines.
    let outcome = fixture.run_with(&["run", "--all", "--at", RUN_AT], &[("RUST_LOG", "warn")]);
    assert!(info_lines(&outcome.stderr, "run_data_diff_checks").is_empty(), "{}", outcome.stderr);
}
