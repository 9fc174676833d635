//! The `tap-mysql → target-postgres` route through the binary: a tap on a throwaway MariaDB
//! server (a SELECT-only user) imports, runs every check and PASSes against its replica, and a
//! planted difference FAILs the slot — no longer SKIPPED.

use datadiff_testkit::{MariaDbDatabase, shared_mariadb};
use mysql::prelude::Queryable;

use crate::support::{ALL_CHECKS, Fixture, MARKER, PASSWORD_TAG, RUN_AT};

/// A MariaDB database holding the fixture's 50 rows (the replica's), read by a SELECT-only
/// user, and the tap file that points at it.
fn mariadb_tap() -> (MariaDbDatabase<'static>, String) {
    let source = shared_mariadb().fresh_database().unwrap();
    source
        .client()
        .unwrap()
        .query_drop(format!(
            "CREATE TABLE transfers (id bigint PRIMARY KEY, updated_at datetime(6), status text, note text,
                 KEY transfers_updated_at_idx (updated_at)) CHARACTER SET utf8mb4;
             INSERT INTO transfers (id, updated_at, status, note)
                 WITH RECURSIVE g (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < 49)
                 SELECT n, TIMESTAMP('2026-07-22 12:00:00') + INTERVAL n MINUTE,
                        CONCAT('paid {MARKER} ', n), CONCAT('note {MARKER} ', n) FROM g;"
        ))
        .unwrap();
    let (user, password) = (format!("e2e_mysql_{}", source.name()), format!("{PASSWORD_TAG}-mysql"));
    source.create_user(&user, &password, &["SELECT"]).unwrap();
    let server = shared_mariadb();
    let tap = format!(
        "id: payments\nname: Payments\ntype: tap-mysql\nowner: e2e\ntarget: postgres\ndb_conn:\n  \
         host: {host}\n  port: {port}\n  user: {user}\n  password: \"{password}\"\n  dbname: {db}\n\
         data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
         schemas:\n  - source_schema: {db}\n    target_schema: payments\n    tables:\n      \
         - table_name: transfers\n        data_diff:\n          checks: {ALL_CHECKS}\n          \
         key_column: id\n          timestamp_column: updated_at\n          compare_columns: [status, note]\n",
        host = server.host(),
        port = server.port(),
        db = source.name(),
    );
    (source, tap)
}

/// A project directory whose tap is [`mariadb_tap`]'s (the MariaDB database kept alive).
fn mariadb_project() -> (Fixture, MariaDbDatabase<'static>) {
    let fixture = Fixture::new();
    let (source, tap) = mariadb_tap();
    let mut files = fixture.files();
    files.tap = tap;
    fixture.write(&files);
    (fixture, source)
}

#[test]
fn a_mariadb_tap_runs_every_check_and_fails_on_drift() {
    let (fixture, source) = mariadb_project();
    fixture.import();
    let check = format!("postgres/payments/{}/transfers", source.name());

    let outcome = fixture.run(&["run_data_diff_checks", "--all", "--at", RUN_AT]);
    outcome.expect(0);
    assert!(!outcome.stdout.contains("SKIPPED"), "{}", outcome.stdout);
    assert!(!outcome.stdout.contains(MARKER) && !outcome.stderr.contains(MARKER), "no row value is printed");
    assert!(!outcome.stdout.contains(PASSWORD_TAG) && !outcome.stderr.contains(PASSWORD_TAG), "no password");
    let row = outcome.stdout.lines().find(|line| line.starts_with(&check)).expect("a row for the check");
    assert!(row.contains("PASS"), "{row}");
    let results = fixture.count("SELECT count(*) FROM public.dd_run_results WHERE status = 'PASS'");
    assert_eq!(results, 8, "every check type passed");
    assert_eq!(fixture.attempts()[0].0, "PASS");

    // A drifted replica row fails the forced rerun of the slot: row_checksum only.
    fixture.replica_sql("UPDATE payments.transfers SET note = 'changed' WHERE id = 7");
    let outcome = fixture.run(&["run", "--all", "--force", "--check", &check, "--at", RUN_AT]);
    outcome.expect(1).stdout_has("FAIL");
    let attempts = fixture.attempts();
    assert_eq!((attempts[1].0.as_str(), attempts[1].3.as_deref()), ("FAIL", Some("row_checksum FAIL")));
}

#[test]
fn doctor_opens_a_mariadb_tap_and_resolves_its_columns() {
    let (fixture, source) = mariadb_project();
    fixture.run(&["migrate"]).expect(0);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    let findings = json["findings"].as_array().unwrap();
    let finding = |scope: &str, check: &str| {
        findings
            .iter()
            .find(|finding| finding["scope"] == scope && finding["check"] == check)
            .map(|finding| {
                (finding["status"].as_str().unwrap_or_default(), finding["detail"].as_str().unwrap_or_default())
            })
            .unwrap_or_else(|| panic!("no {scope} {check} finding: {json}"))
    };
    let (status, detail) = finding("tap payments", "read-only session");
    assert_eq!(status, "OK", "{detail}");
    assert!(detail.contains("read-only") && detail.contains("MariaDB"), "{detail}");
    let check = format!("postgres/payments/{}/transfers", source.name());
    assert_eq!(finding(&check, "columns").0, "OK");
    assert_eq!(finding(&check, "schema_compatibility").0, "OK");
    assert_eq!(finding(&check, "preflight").0, "SKIP");
    assert!(!fixture.run(&["doctor"]).stdout.contains(PASSWORD_TAG), "no password");
}

#[test]
fn a_mariadb_failure_is_retried_then_remediated_and_the_watermark_recovers() {
    let (fixture, _source) = mariadb_project();
    fixture.import();
    fixture.replica_sql("UPDATE payments.transfers SET note = 'changed' WHERE id = 7");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let failed_run = fixture.newest_run_id();

    // The next interval retries the failed slot (RETRY, attempt 2) before its own slot.
    fixture.run(&["run", "--all", "--at", "2026-07-22T14:05:00Z"]).expect(1);
    let retry = fixture
        .backend_sql()
        .query_one(
            "SELECT status, attempt FROM public.dd_run_attempts \
              WHERE trigger_type = 'RETRY' AND window_end = '2026-07-22T13:00:00Z'",
            &[],
        )
        .unwrap();
    assert_eq!((retry.get::<_, String>(0), retry.get::<_, i32>(1)), ("FAIL".to_owned(), 2));
    let status: String =
        fixture.backend_sql().query_one("SELECT verified_status FROM public.dd_watermark_state", &[]).unwrap().get(0);
    assert_eq!(status, "BLOCKED");

    // Repaired, the failed run is remediated: PASS, linked, and the coverage recovers.
    fixture.replica_sql(&format!("UPDATE payments.transfers SET note = 'note {MARKER} 7' WHERE id = 7"));
    fixture
        .run(&[
            "rerun_data_diff_check",
            "--run-id",
            &failed_run,
            "--remediation-ref",
            "INC-7",
            "--at",
            "2026-07-22T14:30:00Z",
        ])
        .expect(0)
        .stdout_has("PASS");
    let remediation = fixture
        .backend_sql()
        .query_one(
            "SELECT status, rerun_of_run_id::text, remediation_reference FROM public.dd_run_attempts \
              WHERE trigger_type = 'REMEDIATION'",
            &[],
        )
        .unwrap();
    assert_eq!(remediation.get::<_, String>(0), "PASS");
    assert_eq!(remediation.get::<_, String>(1), failed_run);
    assert_eq!(remediation.get::<_, String>(2), "INC-7");
    let status: String =
        fixture.backend_sql().query_one("SELECT verified_status FROM public.dd_watermark_state", &[]).unwrap().get(0);
    assert_eq!(status, "CONTIGUOUS", "the remediation repaired the coverage");
}

#[test]
fn doctor_checks_the_mariadb_key_by_its_primary_key_else_by_a_scan_of_the_window() {
    let (fixture, source) = mariadb_project();
    fixture.run(&["migrate"]).expect(0);
    let mut files = fixture.files();
    files.tap = std::fs::read_to_string(fixture.path().join("tap_payments.yml"))
        .unwrap()
        .replace("window_start: \"-1h\"", "window_start: \"-30d\"");
    fixture.write(&files);
    let check = format!("postgres/payments/{}/transfers", source.name());
    let source_key = |fixture: &Fixture| {
        let json = fixture.run(&["doctor", "--output-format", "json"]).json();
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|finding| finding["scope"] == check.as_str() && finding["check"] == "source key uniqueness")
            .map(|finding| {
                (
                    finding["status"].as_str().unwrap_or_default().to_owned(),
                    finding["detail"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .unwrap_or_else(|| panic!("no source key uniqueness finding: {json}"))
    };
    let (status, detail) = source_key(&fixture);
    assert_eq!(status, "OK", "{detail}");
    assert!(detail.starts_with("unique index PRIMARY covers exactly the key column id of "), "{detail}");

    // Without the primary key: two rows of id 500 two days ago are found; 60 days ago, not.
    let mut client = source.client().unwrap();
    client
        .query_drop(
            "ALTER TABLE transfers DROP PRIMARY KEY;
             INSERT INTO transfers (id, updated_at, status, note)
                 VALUES (600, UTC_TIMESTAMP() - INTERVAL 60 DAY, 'a', 'b'), (600, UTC_TIMESTAMP() - INTERVAL 60 DAY, 'a', 'b');",
        )
        .unwrap();
    let (status, detail) = source_key(&fixture);
    assert_eq!(status, "OK", "{detail}");
    assert!(detail.contains("(scanned: no unique index covers exactly the key column)"), "{detail}");
    client
        .query_drop(
            "INSERT INTO transfers (id, updated_at, status, note)
                 VALUES (500, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a', 'b'), (500, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a', 'b');",
        )
        .unwrap();
    let (status, detail) = source_key(&fixture);
    assert_eq!(status, "FAIL", "{detail}");
    assert!(detail.starts_with("duplicate key 500 in id, the window ["), "{detail}");
}

#[test]
fn a_mariadb_line_item_table_is_compared_on_its_composite_key_naming_every_key_column() {
    let fixture = Fixture::new();
    let source = shared_mariadb().fresh_database().unwrap();
    let mut client = source.client().unwrap();
    client
        .query_drop(
            "CREATE TABLE order_lines (order_id bigint NOT NULL, line_no int NOT NULL, updated_at datetime(6),
                 sku varchar(20), PRIMARY KEY (order_id, line_no), KEY order_lines_updated_at (updated_at))
                 CHARACTER SET utf8mb4;
             INSERT INTO order_lines (order_id, line_no, updated_at, sku)
                 WITH RECURSIVE g (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < 199)
                 SELECT n DIV 4, n MOD 4 + 1, TIMESTAMP('2026-07-22 12:00:00') + INTERVAL n * 15 SECOND,
                        CONCAT('sku-', n) FROM g;",
        )
        .unwrap();
    let reader = datadiff_testkit::quote_ident(&fixture.reader.name);
    fixture.replica_sql(&format!(
        "CREATE TABLE payments.order_lines (order_id bigint, line_no bigint, updated_at timestamp, sku varchar);
         INSERT INTO payments.order_lines SELECT g / 4, g % 4 + 1,
             timestamp '2026-07-22 12:00:00' + g * interval '15 seconds', 'sku-' || g FROM generate_series(0, 199) g;
         GRANT SELECT ON payments.order_lines TO {reader};"
    ));
    let (user, password) = (format!("e2e_mysql_{}", source.name()), format!("{PASSWORD_TAG}-mysql"));
    source.create_user(&user, &password, &["SELECT"]).unwrap();
    let server = shared_mariadb();
    let mut files = fixture.files();
    files.tap = format!(
        "id: payments\nname: Payments\ntype: tap-mysql\nowner: e2e\ntarget: postgres\ndb_conn:\n  \
         host: {host}\n  port: {port}\n  user: {user}\n  password: \"{password}\"\n  dbname: {db}\n\
         data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-30d\"\n  window_end: \"0s\"\n\
         schemas:\n  - source_schema: {db}\n    target_schema: payments\n    tables:\n      \
         - table_name: order_lines\n        data_diff:\n          checks: [row_count]\n          \
         key_column: order_id\n          timestamp_column: updated_at\n          compare_columns: [sku]\n",
        host = server.host(),
        port = server.port(),
        db = source.name(),
    );
    let check = format!("postgres/payments/{}/order_lines", source.name());
    files.datadiff = Some(format!("checks:\n  {check}:\n    row_diff: {{}}\n    key_columns: [order_id, line_no]\n"));
    fixture.write(&files);
    fixture.run(&["migrate"]).expect(0);
    let source_key = |fixture: &Fixture| {
        let json = fixture.run(&["doctor", "--output-format", "json"]).json();
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|finding| finding["scope"] == check.as_str() && finding["check"] == "source key uniqueness")
            .map(|finding| {
                (
                    finding["status"].as_str().unwrap_or_default().to_owned(),
                    finding["detail"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .unwrap_or_else(|| panic!("no source key uniqueness finding: {json}"))
    };
    let (status, detail) = source_key(&fixture);
    assert_eq!(status, "OK", "{detail}");
    assert!(detail.starts_with("unique index PRIMARY covers the key columns (order_id, line_no) of "), "{detail}");
    fixture.import();
    let rerun = ["run", "--all", "--force", "--check", &check, "--at", RUN_AT];
    fixture.run(&rerun).expect(0);
    assert_eq!(fixture.attempts()[0].0, "PASS");

    // A changed line, a missing one and one the source deleted, beside equal lines of the
    // same orders: stored with both key columns.
    fixture.replica_sql(
        "UPDATE payments.order_lines SET sku = 'changed' WHERE order_id = 12 AND line_no = 3;
         DELETE FROM payments.order_lines WHERE order_id = 20 AND line_no = 2;
         INSERT INTO payments.order_lines VALUES (30, 5, timestamp '2026-07-22 12:30:00', 'gone');",
    );
    fixture.run(&rerun).expect(1);
    let run_id = fixture.newest_run_id();
    let stored: Vec<(String, String)> = fixture
        .backend_sql()
        .query(
            "SELECT kind, key::text FROM public.datadiff_run_differences WHERE run_id::text = $1 ORDER BY ordinal",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(
        stored,
        [
            ("CHANGED".to_owned(), r#"{"line_no": "3", "order_id": "12"}"#.to_owned()),
            ("MISSING_IN_TARGET".to_owned(), r#"{"line_no": "2", "order_id": "20"}"#.to_owned()),
            ("EXTRA_IN_TARGET".to_owned(), r#"{"line_no": "5", "order_id": "30"}"#.to_owned()),
        ]
    );

    // Without the primary key, the same line twice in the window is named by both columns.
    client
        .query_drop(
            "ALTER TABLE order_lines DROP PRIMARY KEY;
             INSERT INTO order_lines VALUES (500, 1, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a'),
                 (500, 1, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a'), (501, 1, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a'),
                 (501, 2, UTC_TIMESTAMP() - INTERVAL 2 DAY, 'a');",
        )
        .unwrap();
    let (status, detail) = source_key(&fixture);
    assert_eq!(status, "FAIL", "{detail}");
    assert!(detail.starts_with("duplicate key (500, 1) in (order_id, line_no), the window ["), "{detail}");
}
