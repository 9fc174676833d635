//! Failure alerts after the run table: delivered to a webhook, or exit 1 when undelivered.

use crate::support::{CHECK, Fixture, Hook, MARKER, RUN_AT, closed_port};

#[test]
fn a_failure_alert_reaches_the_webhook_and_the_log() {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n  log: {{path: alerts.jsonl}}\n", hook.url));
    fixture.write(&files);
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    assert!(hook.bodies().is_empty(), "a PASS alerts nobody");

    fixture.replica_sql("DELETE FROM payments.transfers WHERE id BETWEEN 3 AND 5");
    fixture.run(&["run", "--all", "--force", "--at", RUN_AT]).expect(1);
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 1, "one alert per failed check: {bodies:?}");
    let alert: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    let text = alert.to_string();
    assert!(text.contains("payments/public.transfers") || text.contains(CHECK), "{text}");
    assert!(text.contains("3 fewer row"), "{text}");
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
}

#[test]
fn an_alert_no_destination_accepts_exits_one_with_one_line() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"http://127.0.0.1:{}/hook\"}}\n", closed_port()));
    fixture.write(&files);
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 1");
    let outcome = fixture.run(&["run", "--all", "--force", "--at", RUN_AT]);
    outcome.expect(1).stderr_has("error: failure alert not delivered for").stderr_has(CHECK);
    assert!(!outcome.stderr.contains("/hook"), "the URL is not printed: {}", outcome.stderr);
}

/// `rerun_data_diff_check` alerts a failed remediation as upstream does (its
/// `_alert_data_diff_failures([summary])`), and a passing one alerts nobody.
#[test]
fn a_failed_remediation_alerts_and_an_undelivered_one_exits_one() {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff = Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n", hook.url));
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let failed_run = fixture.newest_run_id();
    assert_eq!(hook.bodies().len(), 1, "the run's own alert");

    let rerun = |reference: &str| {
        fixture.run(&["rerun", "--run-id", &failed_run, "--remediation-ref", reference, "--at", "2026-07-22T13:30:00Z"])
    };
    rerun("INC-1").expect(1);
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 2, "one alert for the failed remediation: {bodies:?}");
    let alert: serde_json::Value = serde_json::from_str(&bodies[1]).unwrap();
    let remediation = fixture.newest_run_id();
    assert_eq!(alert["run_id"], remediation.as_str());
    assert_eq!(alert["message"], "FAIL data-diff payments/public.transfers — target has 1 fewer row");
    assert!(alert["details"].as_str().unwrap().contains("\nattempt           : 2 (REMEDIATION)\n"), "{alert}");

    // The same failure with the only destination down: one error line, exit 1.
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"http://127.0.0.1:{}/hook\"}}\n", closed_port()));
    fixture.write(&files);
    let outcome = rerun("INC-2");
    outcome.expect(1).stderr_has("error: failure alert not delivered for").stderr_has(CHECK);

    // A repaired replica: the remediation passes and nobody is alerted.
    let mut files = fixture.files();
    files.datadiff = Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n", hook.url));
    fixture.write(&files);
    fixture.replica_sql(&format!(
        "INSERT INTO payments.transfers (id, updated_at, status, note) \
         VALUES (7, '2026-07-22 12:07:00+00', 'paid {MARKER} 7', 'note {MARKER} 7')"
    ));
    rerun("INC-3").expect(0);
    assert_eq!(hook.bodies().len(), 2, "a PASS alerts nobody");
}

/// A relative `--dir` (`datadiff run --dir project` from the project's parent, as a crontab
/// line run in a working directory does) appends the `log` alert to the project's file: the
/// relative path is resolved against the project directory once, never twice.
#[test]
fn a_relative_dir_appends_the_log_alert_to_the_projects_file() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff = Some("alert_handlers:\n  log: {path: alerts.jsonl}\n".to_owned());
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 4");
    let (parent, name) = (fixture.path().parent().unwrap(), fixture.path().file_name().unwrap());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["run", "--all", "--at", RUN_AT, "--dir"])
        .arg(name)
        .current_dir(parent)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Exit 1 for the FAIL; the alert itself was delivered (no undelivered-alert line).
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("not delivered"), "{stderr}");
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap_or_default();
    assert_eq!(log.lines().count(), 1, "one alert in the project's log: {log:?}\n{stderr}");
    let alert: serde_json::Value = serde_json::from_str(log.trim_end()).unwrap();
    assert_eq!(alert["message"], "FAIL data-diff payments/public.transfers — target has 1 fewer row");
    assert!(!fixture.path().join(name).exists(), "no doubled project directory inside the project");
}
