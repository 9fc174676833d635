//! Never a password or a row value in any output (SPEC §8): every command with `-v` and
//! `RUST_LOG=trace` over rows carrying a marker in every compared column, alerts captured by
//! a local HTTP server and a log file, and every backend row.

use crate::support::{Fixture, Hook, MARKER, Outcome, PASSWORD_TAG, RUN_AT, closed_port};

#[test]
fn no_password_or_row_value_reaches_any_output_alert_or_backend_row() {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n  log: {{path: alerts.jsonl}}\n", hook.url));
    fixture.write(&files);
    let trace = [("RUST_LOG", "trace")];
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut run = |args: &[&str], code: i32| {
        let mut all = vec!["-v"];
        all.extend_from_slice(args);
        let outcome = fixture.run_with(&all, &trace);
        outcome.expect(code);
        outcomes.push(outcome);
    };

    run(&["validate"], 0);
    run(&["migrate", "--status"], 0);
    run(&["migrate"], 0);
    run(&["import_config", "--at", "2026-07-22T12:00:00Z"], 0);
    run(&["doctor"], 0);
    run(&["run_data_diff_checks", "--all", "--at", RUN_AT], 0);
    // Drift whose changed value carries the marker too; a forced rerun of the slot fails and
    // alerts.
    fixture.replica_sql(&format!("UPDATE payments.transfers SET status = 'changed {MARKER}' WHERE id = 3"));
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 4");
    run(&["run_data_diff_checks", "--all", "--force", "--at", RUN_AT, "--output-format", "json"], 1);
    let failed = fixture.newest_run_id();
    run(
        &["rerun_data_diff_check", "--run-id", &failed, "--remediation-ref", "INC-7", "--at", "2026-07-22T13:30:00Z"],
        1,
    );
    run(&["list_data_diff_checks", "--include-versioned"], 0);
    run(&["list_data_diff_checks", "--output-format", "json"], 0);
    for report in ["watermarks", "daily", "failures", "remediations"] {
        for format in ["table", "json", "csv"] {
            run(&["report", report, "--output-format", format], 0);
        }
    }
    run(&["report", "differences", "--run-id", &failed, "--output-format", "json"], 0);
    for format in ["table", "json", "csv"] {
        run(&["report", "run", "--run-id", &failed, "--output-format", format], 0);
    }
    run(&["doctor", "--output-format", "json"], 0);
    // Failures print errors: the source unreachable, then the backend's DDL login refused.
    let mut broken = fixture.files();
    broken.datadiff = files.datadiff.clone();
    let port = datadiff_testkit::shared_cluster().port();
    broken.tap = broken.tap.replacen(&format!("port: {port}"), &format!("port: {}", closed_port()), 1);
    fixture.write(&broken);
    run(&["run_data_diff_checks", "--all", "--at", "2026-07-22T14:05:00Z"], 1);
    run(&["doctor"], 1);
    broken.config = broken.config.replace(&fixture.app.password, &format!("{PASSWORD_TAG}-wrong"));
    fixture.write(&broken);
    run(&["list_data_diff_checks"], 2);
    run(&["import_config"], 2);

    let alerts = hook.bodies();
    assert!(alerts.len() >= 2, "the failures alerted: {alerts:?}");
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap();
    let mut texts: Vec<(String, String)> = Vec::new();
    for (i, outcome) in outcomes.iter().enumerate() {
        texts.push((format!("stdout of command {i}"), outcome.stdout.clone()));
        texts.push((format!("stderr of command {i}"), outcome.stderr.clone()));
    }
    texts.extend(alerts.iter().map(|body| ("an alert body".to_owned(), body.clone())));
    texts.push(("the alert log".to_owned(), log));
    assert!(
        outcomes.iter().any(|outcome| outcome.stderr.contains("TRACE") || outcome.stderr.contains("DEBUG")),
        "the logs were on"
    );
    for (what, text) in &texts {
        assert!(!text.contains(MARKER), "a row value in {what}:\n{text}");
        assert!(!text.contains(PASSWORD_TAG), "a password in {what}:\n{text}");
    }

    // Every row of every backend table, whole, as text.
    let mut sql = fixture.backend_sql();
    let tables: Vec<String> = sql
        .query(
            "SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = 'public' \
               AND (tablename LIKE 'dd\\_%' OR tablename LIKE 'datadiff\\_%' OR tablename = 'alembic_version')",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(tables.len() >= 9, "{tables:?}");
    for table in &tables {
        for secret in [MARKER, PASSWORD_TAG] {
            let found: i64 = sql
                .query_one(
                    &format!(
                        "SELECT count(*) FROM public.{} t WHERE strpos(t::text, $1) > 0",
                        datadiff_testkit::quote_ident(table)
                    ),
                    &[&secret],
                )
                .unwrap()
                .get(0);
            assert_eq!(found, 0, "{secret} stored in {table}");
        }
    }
    assert!(fixture.count("SELECT count(*) FROM public.dd_run_results") > 0, "results were stored");
}
