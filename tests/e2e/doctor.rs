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
        (CHECK, "source queries"),
        (CHECK, "target queries"),
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
    outcome.stdout_has("the source server plans the aggregate query (row_count, distinct_key_count,");
    outcome.stdout_has("the target server plans the aggregate query");
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

/// The finding `(status, detail)` of `check` for `scope` in the doctor's JSON.
fn finding(json: &serde_json::Value, scope: &str, check: &str) -> (String, String) {
    let found = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["scope"] == scope && finding["check"] == check)
        .unwrap_or_else(|| panic!("no {scope} {check} finding: {json}"));
    (found["status"].as_str().unwrap_or_default().to_owned(), found["detail"].as_str().unwrap_or_default().to_owned())
}

#[test]
fn each_server_plans_the_queries_and_a_query_it_would_refuse_fails() {
    let fixture = Fixture::new();
    fixture.run(&["migrate"]).expect(0);
    let reader = datadiff_testkit::quote_ident(&fixture.reader.name);
    let table = "(id uuid PRIMARY KEY, updated_at timestamptz, status text, note text)";
    fixture
        .source
        .client()
        .unwrap()
        .batch_execute(&format!("CREATE TABLE public.accounts {table}; GRANT SELECT ON public.accounts TO {reader};"))
        .unwrap();
    fixture.replica_sql(&format!(
        "CREATE TABLE payments.accounts {table}; GRANT SELECT ON payments.accounts TO {reader};"
    ));
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace("table_name: transfers", "table_name: accounts")
        .replace(crate::support::ALL_CHECKS, "[schema_compatibility, row_count, min_key]");
    fixture.write(&files);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    let check = "postgres/payments/public/accounts";
    assert_eq!(finding(&json, check, "schema_compatibility").0, "OK", "{json}");
    for side in ["source", "target"] {
        let (status, detail) = finding(&json, check, &format!("{side} queries"));
        assert_eq!(status, "FAIL", "{detail}");
        assert!(detail.contains("aggregate query (row_count, min_key): function min(uuid) does not exist"), "{detail}");
    }
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
}

#[test]
fn the_row_diff_select_is_planned_on_both_sides() {
    let fixture = Fixture::new();
    fixture.run(&["migrate"]).expect(0);
    let mut files = fixture.files();
    files.tap = files.tap.replace(crate::support::ALL_CHECKS, "[schema_compatibility]");
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n    row_diff: {{max_examples: 5}}\n"));
    fixture.write(&files);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    for side in ["source", "target"] {
        let (status, detail) = finding(&json, CHECK, &format!("{side} queries"));
        assert_eq!(
            (status.as_str(), detail.as_str()),
            ("OK", &*format!("the {side} server plans the row_diff SELECT"))
        );
    }
}

#[test]
fn a_missing_table_is_named_as_a_table() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.tap = files.tap.replace("table_name: transfers", "table_name: refunds");
    fixture.write(&files);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    let (status, detail) = finding(&json, "postgres/payments/public/refunds", "columns");
    assert_eq!(status, "FAIL");
    assert_eq!(detail, "table public.refunds does not exist in the source database");

    // Present at the source, missing at the target.
    fixture
        .source
        .client()
        .unwrap()
        .batch_execute(&format!(
            "CREATE TABLE public.refunds (id bigint PRIMARY KEY, updated_at timestamptz, status text, note text); \
             GRANT SELECT ON public.refunds TO {};",
            datadiff_testkit::quote_ident(&fixture.reader.name)
        ))
        .unwrap();
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    let (_, detail) = finding(&json, "postgres/payments/public/refunds", "columns");
    assert_eq!(detail, "table payments.refunds does not exist in the target database");
}

/// The fixture with a 30-day window (so rows placed days ago are inside it whatever the hour)
/// and the doctor's `(status, detail)` of `check` after `sql` ran on the source and
/// `replica_sql` on the replica.
fn key_uniqueness(fixture: &Fixture, source_sql: &str, replica_sql: &str) -> [(String, String); 2] {
    fixture.source.client().unwrap().batch_execute(source_sql).unwrap();
    fixture.replica_sql(replica_sql);
    let json = fixture.run(&["doctor", "--output-format", "json"]).json();
    [finding(&json, CHECK, "source key uniqueness"), finding(&json, CHECK, "target key uniqueness")]
}

/// Two rows of key `id` `days` days ago, in `table`.
fn twice(table: &str, id: i64, days: i64) -> String {
    format!(
        "INSERT INTO {table} (id, updated_at, status, note) \
         SELECT {id}, now() - interval '{days} days', 'paid', 'note' FROM generate_series(1, 2);"
    )
}

fn month_window_fixture() -> Fixture {
    let fixture = Fixture::new();
    fixture.run(&["migrate"]).expect(0);
    let mut files = fixture.files();
    files.tap = files.tap.replace("window_start: \"-1h\"", "window_start: \"-30d\"");
    fixture.write(&files);
    fixture
}

#[test]
fn a_duplicate_key_on_the_replica_is_a_finding_and_a_unique_index_skips_the_scan() {
    let fixture = month_window_fixture();
    let [source, target] = key_uniqueness(&fixture, "", &twice("payments.transfers", 1000, 2));
    assert_eq!(
        source,
        (
            "OK".to_owned(),
            "unique index transfers_pkey covers exactly the key column id of public.transfers: nothing scanned"
                .to_owned()
        )
    );
    assert_eq!(target.0, "FAIL", "{target:?}");
    assert!(target.1.starts_with("duplicate key 1000 in id, the window ["), "{target:?}");
    assert!(
        target.1.ends_with(") of payments.transfers: a run would ERROR (the key column must be unique)"),
        "{target:?}"
    );
    assert_eq!(fixture.run(&["doctor"]).code, 1);
    assert_eq!(written(&fixture), 0, "the doctor writes nothing");

    // Deduplicated and constrained: nothing is scanned.
    let [_, target] = key_uniqueness(
        &fixture,
        "",
        "DELETE FROM payments.transfers WHERE id = 1000; \
         ALTER TABLE payments.transfers ADD CONSTRAINT transfers_id_key UNIQUE (id);",
    );
    assert_eq!(
        target,
        (
            "OK".to_owned(),
            "unique index transfers_id_key covers exactly the key column id of payments.transfers: nothing scanned"
                .to_owned()
        )
    );
}

#[test]
fn a_duplicate_key_outside_the_window_is_not_reported_and_one_inside_on_the_source_is() {
    let fixture = month_window_fixture();
    let drop_key = "ALTER TABLE public.transfers DROP CONSTRAINT transfers_pkey;";
    let [source, target] = key_uniqueness(
        &fixture,
        &format!("{drop_key} {}", twice("public.transfers", 2000, 60)),
        &twice("payments.transfers", 2000, 60),
    );
    for (side, table) in [(&source, "public.transfers"), (&target, "payments.transfers")] {
        assert_eq!(side.0, "OK", "{side:?}");
        assert!(side.1.starts_with("no duplicate id in the window ["), "{side:?}");
        assert!(
            side.1.ends_with(&format!(") of {table} (scanned: no unique index covers exactly the key column)")),
            "{side:?}"
        );
    }
    let [source, target] = key_uniqueness(&fixture, &twice("public.transfers", 3000, 1), "");
    assert_eq!(source.0, "FAIL", "{source:?}");
    assert!(source.1.starts_with("duplicate key 3000 in id, the window ["), "{source:?}");
    assert_eq!(target.0, "OK", "{target:?}");
}

#[test]
fn a_composite_key_is_checked_for_uniqueness_as_a_tuple() {
    let fixture = month_window_fixture();
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace(crate::support::ALL_CHECKS, "[schema_compatibility]")
        .replace("window_start: \"-1h\"", "window_start: \"-30d\"");
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n    row_diff: {{}}\n    key_columns: [id, status]\n"));
    fixture.write(&files);
    // Key 1001 twice on the replica, with two statuses: the tuple is unique.
    let rows = "INSERT INTO payments.transfers (id, updated_at, status, note) VALUES \
                (1001, now() - interval '2 days', 'paid', 'n'), (1001, now() - interval '2 days', 'refunded', 'n');";
    let [source, target] = key_uniqueness(&fixture, "", rows);
    assert_eq!(
        source,
        (
            "OK".to_owned(),
            "unique index transfers_pkey covers the key columns (id, status) of public.transfers: nothing scanned"
                .to_owned()
        )
    );
    assert_eq!(target.0, "OK", "{target:?}");
    assert!(target.1.starts_with("no duplicate (id, status) in the window ["), "{target:?}");
    assert!(
        target.1.ends_with(") of payments.transfers (scanned: no unique index covers the key columns)"),
        "{target:?}"
    );
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    assert_eq!(finding(&json, CHECK, "target queries").0, "OK", "the composite row_diff stream is planned: {json}");
    assert!(
        json["findings"].as_array().unwrap().iter().all(|finding| finding["check"] != "row_diff key_columns"),
        "{json}"
    );

    // The same tuple twice is a duplicate, named by both columns.
    let [_, target] = key_uniqueness(&fixture, "", &twice("payments.transfers", 1000, 2));
    assert_eq!(target.0, "FAIL", "{target:?}");
    assert!(target.1.starts_with("duplicate key (1000, paid) in (id, status), the window ["), "{target:?}");
    assert!(
        target.1.ends_with(") of payments.transfers: a run would ERROR (the key columns must be unique together)"),
        "{target:?}"
    );
    assert_eq!(written(&fixture), 0, "the doctor writes nothing");
}
