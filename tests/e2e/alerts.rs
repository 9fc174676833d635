//! Failure alerts after the run table: delivered to a webhook, or exit 1 when undelivered.

use crate::support::{CHECK, Fixture, Hook, RUN_AT, closed_port};

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
