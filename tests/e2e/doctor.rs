//! `doctor`: findings about the backend, connections, columns and preflight; writes nothing.

use crate::support::{CHECK, Fixture, closed_port};

/// Every row of every table the doctor could write.
fn written(fixture: &Fixture) -> i64 {
    fixture.count(
        "SELECT (SELECT count(*) FROM public.dd_run_attempts) + (SELECT count(*) FROM public.dd_preflight_log) \
              + (SELECT count(*) FROM public.dd_check_definitions)",
    )
}

#[test]
fn a_healthy_project_passes_every_check_and_nothing_is_written() {
    let fixture = Fixture::new();
    fixture.run(&["migrate"]).expect(0);
    let outcome = fixture.run(&["doctor"]);
    outcome.expect(0);
    for (scope, check) in [
        ("backend", "application role"),
        ("backend", "DDL role"),
        ("backend", "schema"),
        ("backend", "grants"),
        ("tap payments", "read-only session"),
        ("target postgres", "read-only session"),
        (CHECK, "columns"),
        (CHECK, "timestamp types"),
        (CHECK, "schema_compatibility"),
        (CHECK, "preflight"),
    ] {
        let line = outcome
            .stdout
            .lines()
            .find(|line| line.starts_with(scope) && line.contains(check))
            .unwrap_or_else(|| panic!("no {scope} {check} finding:\n{}", outcome.stdout));
        assert!(line.contains("OK"), "{line}");
    }
    outcome.stdout_has("an index leads with the timestamp column");
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    assert_eq!(json["passed"], true);
    let finding = &json["findings"][0];
    for field in ["scope", "check", "status", "detail"] {
        assert!(finding.get(field).is_some(), "{field} missing from {finding}");
    }
    assert_eq!(written(&fixture), 0, "the doctor writes nothing");
}

#[test]
fn problems_are_fail_findings_and_exit_one() {
    let fixture = Fixture::new();
    fixture.import();
    let mut files = fixture.files();
    let port = datadiff_testkit::shared_cluster().port();
    files.tap = files.tap.replace("compare_columns: [status, note]", "compare_columns: [status, colour]");
    // The target is unreachable.
    files.target = files.target.replace(&format!("port: {port}"), &format!("port: {}", closed_port()));
    fixture.write(&files);
    let outcome = fixture.run(&["doctor"]);
    outcome.expect(1);
    let target = outcome.stdout.lines().find(|line| line.starts_with("target postgres")).unwrap_or_default();
    assert!(target.contains("FAIL") && target.contains("cannot connect"), "{}", outcome.stdout);

    let mut files = fixture.files();
    files.tap = files.tap.replace("compare_columns: [status, note]", "compare_columns: [status, colour]");
    fixture.write(&files);
    let outcome = fixture.run(&["doctor", "--output-format", "json"]);
    let json = outcome.expect(1).json();
    assert_eq!(json["passed"], false);
    let columns = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["scope"] == CHECK && finding["check"] == "columns")
        .cloned()
        .unwrap_or_default();
    assert_eq!(columns["status"], "FAIL", "{json}");
    assert!(columns["detail"].as_str().is_some_and(|detail| detail.contains("colour")), "{columns}");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
}

#[test]
fn an_unreachable_backend_is_a_fail_finding() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    let port = datadiff_testkit::shared_cluster().port();
    files.config = files.config.replace(&format!("port: {port}"), &format!("port: {}", closed_port()));
    fixture.write(&files);
    let outcome = fixture.run(&["doctor"]);
    outcome.expect(1);
    let line = outcome.stdout.lines().find(|line| line.starts_with("backend")).unwrap_or_default();
    assert!(line.contains("FAIL") && line.contains("application role"), "{}", outcome.stdout);
}
