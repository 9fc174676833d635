//! `datadiff.yml` `replica_table` and `column_map`: a replica another loader named (dlt's
//! snake_case here, built by hand as dlt's `sql_database` → `postgres` lays it out) is checked
//! by every upstream check type, `row_diff` and `doctor`.

use datadiff_testkit::quote_ident;

use crate::support::{ALL_CHECKS, Fixture, RUN_AT};

/// The definition of `public."CustomerOrders"`.
const CHECK: &str = "postgres/payments/public/CustomerOrders";

/// The naming that reaches the dlt-loaded replica.
const NAMING: &str = "    replica_table: dlt_app.customer_orders\n    \
     column_map: {OrderId: order_id, UpdatedAt: updated_at, Status: status}\n    row_diff: {max_examples: 5}\n";

/// A fixture whose tap checks `public."CustomerOrders"` (`OrderId`, `UpdatedAt`, `Status`) with
/// every upstream check; the replica holds the same 50 rows in `dlt_app.customer_orders`
/// (`order_id`, `updated_at`, `status` and dlt's own columns). `datadiff.yml` holds `settings`
/// for the check, when given.
fn dlt_fixture(settings: Option<&str>) -> Fixture {
    let fixture = Fixture::new();
    let reader = quote_ident(&fixture.reader.name);
    let rows = |table: &str, columns: &str, extra: &str| {
        format!(
            "INSERT INTO {table} ({columns}) SELECT g, timestamptz '2026-07-22 12:00:00+00' + g * interval '1 minute', \
             'paid ' || g{extra} FROM generate_series(0, 49) g;"
        )
    };
    fixture
        .source
        .client()
        .unwrap()
        .batch_execute(&format!(
            "CREATE TABLE public.\"CustomerOrders\" (\"OrderId\" bigint PRIMARY KEY, \"UpdatedAt\" timestamptz, \
                 \"Status\" text);
             CREATE INDEX ON public.\"CustomerOrders\" (\"UpdatedAt\");
             {rows}
             GRANT SELECT ON public.\"CustomerOrders\" TO {reader};",
            rows = rows("public.\"CustomerOrders\"", "\"OrderId\", \"UpdatedAt\", \"Status\"", ""),
        ))
        .unwrap();
    fixture.replica_sql(&format!(
        "CREATE SCHEMA dlt_app;
         CREATE TABLE dlt_app.customer_orders (order_id bigint NOT NULL, updated_at timestamptz, status varchar,
             _dlt_load_id varchar NOT NULL, _dlt_id varchar NOT NULL);
         {rows}
         GRANT USAGE ON SCHEMA dlt_app TO {reader};
         GRANT SELECT ON dlt_app.customer_orders TO {reader};",
        rows = rows(
            "dlt_app.customer_orders",
            "order_id, updated_at, status, _dlt_load_id, _dlt_id",
            ", '1764720000.1', md5(g::text)"
        ),
    ));
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace("table_name: transfers", "table_name: CustomerOrders")
        .replace("key_column: id", "key_column: OrderId")
        .replace("timestamp_column: updated_at", "timestamp_column: UpdatedAt")
        .replace("compare_columns: [status, note]", "compare_columns: [Status]");
    files.datadiff = settings.map(|settings| format!("checks:\n  {CHECK}:\n{settings}"));
    fixture.write(&files);
    fixture
}

/// `(status, detail)` of the doctor's `check` finding for the definition.
fn finding(json: &serde_json::Value, check: &str) -> (String, String) {
    let found = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["scope"] == CHECK && finding["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding: {json}"));
    (found["status"].as_str().unwrap_or_default().to_owned(), found["detail"].as_str().unwrap_or_default().to_owned())
}

/// `(check_type, status)` of every result of `run_id`, by check type.
fn results(fixture: &Fixture, run_id: &str) -> Vec<(String, String)> {
    fixture
        .backend_sql()
        .query(
            "SELECT check_type, status FROM public.dd_run_results WHERE run_id::text = $1 ORDER BY check_type",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

#[test]
fn without_a_naming_the_replica_table_is_reported_missing_by_name() {
    let fixture = dlt_fixture(None);
    fixture.run(&["migrate"]).expect(0);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    assert_eq!(
        finding(&json, "columns"),
        ("FAIL".into(), "table payments.customerorders does not exist in the target database".into())
    );
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let attempts = fixture.attempts();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].0, "ERROR");
    assert_eq!(
        attempts[0].3.as_deref(),
        Some(
            "Table payments.customerorders does not exist in the target database \
             (or the role may read none of its columns)"
        ),
        "a missing table, not its key column"
    );
}

#[test]
fn a_named_snake_case_replica_passes_every_check_and_a_changed_value_fails_naming_the_key() {
    let fixture = dlt_fixture(Some(NAMING));
    fixture.run(&["migrate"]).expect(0);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    assert_eq!(finding(&json, "columns"), ("OK".into(), "key OrderId / order_id, 1 compare column(s)".into()));
    for check in ["schema_compatibility", "source queries", "target queries", "preflight"] {
        assert_eq!(finding(&json, check).0, "OK", "{check}: {json}");
    }
    fixture.import();
    let stored: (String, String, String, String) = {
        let row = fixture
            .backend_sql()
            .query_one(
                "SELECT target_schema, target_table, target_key_column, target_timestamp_column \
                   FROM public.dd_check_definitions WHERE full_check_name = $1 AND is_current",
                &[&CHECK],
            )
            .unwrap();
        (row.get(0), row.get(1), row.get(2), row.get(3))
    };
    assert_eq!(stored, ("dlt_app".into(), "customer_orders".into(), "order_id".into(), "updated_at".into()));

    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let run_id = fixture.newest_run_id();
    let mut expected: Vec<(String, String)> = ALL_CHECKS
        .trim_matches(['[', ']'])
        .split(", ")
        .chain(["row_diff"])
        .map(|check| (check.to_owned(), "PASS".to_owned()))
        .collect();
    expected.sort();
    assert_eq!(results(&fixture, &run_id), expected, "every upstream check type and row_diff PASS");
    assert_eq!(fixture.attempts()[0].0, "PASS");

    // A changed value: row_checksum and row_diff FAIL, the difference keyed by the source's key.
    fixture.replica_sql("UPDATE dlt_app.customer_orders SET status = 'void' WHERE order_id = 7");
    fixture.run(&["run", "--all", "--force", "--check", CHECK, "--at", RUN_AT]).expect(1);
    let run_id = fixture.newest_run_id();
    let failed: Vec<String> =
        results(&fixture, &run_id).into_iter().filter(|(_, status)| status == "FAIL").map(|(check, _)| check).collect();
    assert_eq!(failed, ["row_checksum", "row_diff"]);
    let difference = fixture
        .backend_sql()
        .query_one(
            "SELECT kind, key::text, fields FROM public.datadiff_run_differences WHERE run_id::text = $1",
            &[&run_id],
        )
        .unwrap();
    assert_eq!(difference.get::<_, String>(0), "CHANGED");
    assert_eq!(difference.get::<_, String>(1), r#"{"OrderId": "7"}"#);
    assert_eq!(difference.get::<_, Vec<String>>(2), ["Status"]);
}

#[test]
fn a_missing_replica_table_is_named_and_a_new_table_starts_a_new_revision() {
    let fixture = dlt_fixture(Some(NAMING));
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let watermarked = |fixture: &Fixture| {
        fixture.count(
            "SELECT count(*) FROM public.dd_watermark_state w JOIN public.dd_check_definitions d USING (check_id) \
              WHERE d.is_current AND w.verified_end IS NOT NULL",
        )
    };
    assert_eq!(watermarked(&fixture), 1, "the slot verified against dlt_app.customer_orders");

    // Pointed at a table that does not exist: a new revision, nothing verified, the table named.
    let mut files = fixture.files();
    files.tap = std::fs::read_to_string(fixture.path().join("tap_payments.yml")).unwrap();
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n{}", NAMING.replace("customer_orders", "orders_v2")));
    fixture.write(&files);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    assert_eq!(
        finding(&json, "columns"),
        ("FAIL".into(), "table dlt_app.orders_v2 does not exist in the target database".into())
    );
    fixture.import();
    let revisions = fixture
        .count("SELECT count(*) FROM public.dd_check_definitions WHERE full_check_name = 'postgres/payments/public/CustomerOrders'");
    assert_eq!(revisions, 2, "a changed replica_table is a new revision");
    assert_eq!(watermarked(&fixture), 0, "coverage verified against the old table is not claimed for the new one");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let newest = fixture.attempts().pop().unwrap();
    assert_eq!(newest.0, "ERROR");
    assert!(
        newest
            .3
            .as_deref()
            .is_some_and(|error| error.starts_with("Table dlt_app.orders_v2 does not exist in the target")),
        "{newest:?}"
    );
}

#[test]
fn a_column_map_key_the_source_lacks_fails_doctor_and_the_run_naming_it() {
    let fixture = dlt_fixture(Some(&NAMING.replace("Status: status}", "Status: status, Colour: colour}")));
    fixture.run(&["migrate"]).expect(0);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    let message = "column_map names column 'Colour', which the source table public.CustomerOrders does not have \
                   (column_map keys are source column names, case-sensitive)";
    assert_eq!(finding(&json, "columns"), ("FAIL".into(), message.into()));
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let attempts = fixture.attempts();
    assert_eq!((attempts[0].0.as_str(), attempts[0].3.as_deref()), ("ERROR", Some(message)));
}

#[test]
fn a_bad_column_map_entry_is_a_config_error_naming_its_key_path() {
    let fixture = dlt_fixture(Some(NAMING));
    fixture.run(&["migrate"]).expect(0);
    let bad = NAMING.replace("UpdatedAt: updated_at", "UpdatedAt: [updated_at]");
    std::fs::write(fixture.path().join("datadiff.yml"), format!("checks:\n  {CHECK}:\n{bad}")).unwrap();
    for command in [&["validate"][..], &["import_config"], &["run", "--all", "--at", RUN_AT], &["doctor"]] {
        let outcome = fixture.run(command);
        outcome.expect(2).stderr_has(&format!("checks.{CHECK}.column_map.UpdatedAt"));
    }
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_check_definitions"), 0);
}
