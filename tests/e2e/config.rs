//! `validate` and the configuration errors every command reports the same way (SPEC §2, §8).

use crate::support::{Fixture, datadiff};

#[test]
fn validate_passes_a_good_project_and_contacts_no_database() {
    let fixture = Fixture::new();
    let outcome = fixture.run(&["validate"]);
    outcome.expect(0).stdout_has("1 data-diff definition(s), 1 tap(s), 1 target(s)");
    assert!(outcome.stderr.is_empty(), "{}", outcome.stderr);
    assert_eq!(fixture.count("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'"), 0);
}

#[test]
fn every_problem_of_the_directory_is_listed_with_its_file_and_line_and_exits_two() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace("frequency: \"0 * * * *\"", "frequency: \"61 * * * *\"")
        .replace("window_start: \"-1h\"", "window_start: \"-1hour\"")
        .replace("key_column: id", "key_column: id\n          colour: blue");
    fixture.write(&files);
    for command in ["validate", "import_config", "run_data_diff_checks", "list_data_diff_checks"] {
        let mut args = vec![command];
        if command == "run_data_diff_checks" {
            args.push("--all");
        }
        let outcome = fixture.run(&args);
        outcome.expect(2).one_error_line().stderr_has("problem(s) in");
        let problems: Vec<&str> = outcome.stderr.lines().filter(|line| line.starts_with("tap_payments.yml:")).collect();
        assert!(problems.len() >= 3, "{command}: every problem listed:\n{}", outcome.stderr);
        assert!(outcome.stderr.contains("colour"), "the unknown key is named:\n{}", outcome.stderr);
        assert!(outcome.stderr.contains("Invalid duration '1hour'"), "{}", outcome.stderr);
        assert!(outcome.stdout.is_empty());
    }
    // Nothing was written: no import, no schema.
    assert_eq!(fixture.count("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'"), 0);
}

#[test]
fn malformed_yaml_and_six_field_crons_are_errors_naming_the_file() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.target = "id: postgres\nname: [unclosed\n".to_owned();
    fixture.write(&files);
    let outcome = fixture.run(&["validate"]);
    outcome.expect(2).stderr_has("target_postgres.yml:");

    let mut files = fixture.files();
    files.tap = files.tap.replace("frequency: \"0 * * * *\"", "frequency: \"0 0 * * * *\"");
    fixture.write(&files);
    fixture.run(&["validate"]).expect(2).stderr_has("tap_payments.yml:").stderr_has("5 fields");
}

#[test]
fn without_backend_db_validate_and_import_warn_and_pass_but_other_commands_exit_two() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.config = "alert_handlers: {}\n".to_owned();
    fixture.write(&files);
    let warning =
        "Ignoring 1 data_diff definition(s): config.yml does not define backend_db. Replication is unaffected.";
    fixture.run(&["validate"]).expect(0).stderr_has(warning);
    fixture
        .run(&["import_config"])
        .expect(0)
        .stderr_has(warning)
        .stdout_has("Initial data-diff scans pending: not configured");
    for args in [
        vec!["run_data_diff_checks", "--all"],
        vec!["list_data_diff_checks"],
        vec!["report", "watermarks"],
        vec!["rerun_data_diff_check", "--run-id", "00000000-0000-0000-0000-000000000001", "--remediation-ref", "x"],
        vec!["migrate", "--status"],
    ] {
        let outcome = fixture.run(&args);
        outcome.expect(2).one_error_line().stderr_has("does not define backend_db");
        // One line, the one that names the fix: not the import's warning first.
        assert_eq!(outcome.stderr.lines().count(), 1, "{:?}: {}", args, outcome.stderr);
    }
}

#[test]
fn usage_errors_exit_two_with_one_message() {
    let fixture = Fixture::new();
    fixture.run(&["run_data_diff_checks"]).expect(2).stderr_has("--all, or --target TARGET --tap TAP");
    fixture.run(&["run_data_diff_checks", "--target", "postgres"]).expect(2);
    fixture.run(&["run_data_diff_checks", "--tap", "payments"]).expect(2).stderr_has("--target");
    fixture.run(&["list_data_diff_checks", "--tap", "payments"]).expect(2).stderr_has("--target");
    fixture.run(&["run_data_diff_checks", "--all", "--at", "2026-07-22T13:05:00"]).expect(2).stderr_has("no zone");
    fixture.run(&["report", "watermarks", "--at", "2026-07-22 13:05"]).expect(2).stderr_has("no zone");
    fixture.run(&["rerun_data_diff_check", "--run-id", "42", "--remediation-ref", "x"]).expect(2);
    fixture.run(&["migrate", "--to", "005"]).expect(2);
    fixture.run(&["report", "watermarks", "--max-lag", "1hour"]).expect(2).stderr_has("Invalid duration");
    datadiff(&["validate"]).expect(2).stderr_has("--dir");
    datadiff(&["no_such_command"]).expect(2);
}

#[test]
fn version_names_the_backend_schema_it_needs() {
    let outcome = datadiff(&["--version"]);
    outcome.expect(0).stdout_has("backend schema: PipelineWise 004 (+ extensions 3)");
}

/// A `db_conn.service` naming a service no file has, or a service file with parameters
/// before any `[service]` section, stops `run` before any attempt (exit 2, one line naming the
/// tap, the service or the file and line) instead of ERRORing every attempt or silently using
/// libpq's defaults. `PGSERVICE` is not read for project connections at all.
#[test]
fn a_connection_service_that_cannot_be_read_stops_the_command_with_exit_two() {
    let fixture = Fixture::new();
    fixture.import();
    let file = fixture.path().join("pg_service.conf");
    std::fs::write(&file, "[dd]\nconnect_timeout=10\n").unwrap();
    let service_file = file.display().to_string();
    let mut files = fixture.files();
    files.tap = files.tap.replacen("db_conn:\n", "db_conn:\n  service: dd\n", 1);
    fixture.write(&files);
    let run = |service: &str| {
        fixture.run_with(
            &["run", "--all", "--at", crate::support::RUN_AT],
            &[("PGSERVICE", service), ("PGSERVICEFILE", service_file.as_str())],
        )
    };
    // PGSERVICE names nothing datadiff reads: a warning, and the run goes on.
    run("nope").expect(0).stderr_has("PGSERVICE is not used");
    std::fs::write(&file, "host=elsewhere\n[dd]\nconnect_timeout=10\n").unwrap();
    run("nope").expect(2).one_error_line().stderr_has(&format!("{service_file}:1: ")).stderr_has("Tap 'payments'");
    let attempts = fixture.count("SELECT count(*) FROM public.dd_run_attempts");
    files.tap = files.tap.replacen("service: dd", "service: dd_gone", 1);
    fixture.write(&files);
    std::fs::write(&file, "[dd]\nconnect_timeout=10\n").unwrap();
    run("nope").expect(2).one_error_line().stderr_has("dd_gone");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), attempts, "no attempt was started");
}
