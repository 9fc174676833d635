//! `datadiff.yml` `key_columns`: a scheduled `row_diff` over a line-item table keyed by
//! `(order_id, line_no)`, whose `key_column` (`order_id`) alone repeats. Equal tables PASS under
//! `--strategy segments` and `stream`; a lost delete, a changed value and a missing row are
//! stored and reported naming every key column, the same under both strategies; `doctor`
//! checks the tuple's uniqueness.

use datadiff_testkit::quote_ident;
use serde_json::{Value as Json, json};

use crate::support::{ALL_CHECKS, Fixture, RUN_AT};

/// The definition of `public.order_lines`.
const CHECK: &str = "postgres/payments/public/order_lines";

/// A fixture whose tap checks `public.order_lines` (key `order_id`, compare `sku` and `qty`)
/// with every upstream check but `duplicate_key_count` (which cannot pass on one part of a
/// composite key), and `row_diff` keyed by `key_columns: [order_id, line_no]`; the replica
/// holds the same 200 lines (50 orders of 4 lines, in the window [12:00, 13:00)) in
/// `payments.order_lines`, without a primary key, as a loader may leave it.
fn lines_fixture() -> Fixture {
    let fixture = Fixture::new();
    let reader = quote_ident(&fixture.reader.name);
    let rows = |table: &str| {
        format!(
            "INSERT INTO {table} (order_id, line_no, updated_at, sku, qty) SELECT g / 4, g % 4 + 1, \
             timestamptz '2026-07-22 12:00:00+00' + g * interval '15 seconds', 'sku-' || g, g % 7 \
             FROM generate_series(0, 199) g;"
        )
    };
    fixture
        .source
        .client()
        .unwrap()
        .batch_execute(&format!(
            "CREATE TABLE public.order_lines (order_id bigint, line_no integer, updated_at timestamptz, sku text, \
                 qty integer, PRIMARY KEY (order_id, line_no));
             CREATE INDEX ON public.order_lines (updated_at);
             {rows}
             GRANT SELECT ON public.order_lines TO {reader};",
            rows = rows("public.order_lines"),
        ))
        .unwrap();
    fixture.replica_sql(&format!(
        "CREATE TABLE payments.order_lines (order_id bigint, line_no bigint, updated_at timestamptz, sku varchar, \
             qty integer);
         {rows}
         GRANT SELECT ON payments.order_lines TO {reader};",
        rows = rows("payments.order_lines"),
    ));
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace("table_name: transfers", "table_name: order_lines")
        .replace("key_column: id", "key_column: order_id")
        .replace("compare_columns: [status, note]", "compare_columns: [sku, qty]")
        .replace(ALL_CHECKS, &ALL_CHECKS.replace("duplicate_key_count, ", ""));
    files.datadiff = Some(format!(
        "checks:\n  {CHECK}:\n    row_diff: {{max_examples: 10}}\n    key_columns: [order_id, line_no]\n"
    ));
    fixture.write(&files);
    fixture
}

/// `(status of row_diff, (kind, key, fields) of each stored difference)` of `run_id`.
fn stored(fixture: &Fixture, run_id: &str) -> (String, Vec<(String, Json, Vec<String>)>) {
    let mut backend = fixture.backend_sql();
    let status = backend
        .query_one(
            "SELECT status FROM public.dd_run_results WHERE run_id::text = $1 AND check_type = 'row_diff'",
            &[&run_id],
        )
        .unwrap()
        .get(0);
    let differences = backend
        .query(
            "SELECT kind, key::text, fields FROM public.datadiff_run_differences \
              WHERE run_id::text = $1 AND check_type = 'row_diff' ORDER BY ordinal",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), serde_json::from_str(row.get(1)).unwrap(), row.get(2)))
        .collect();
    (status, differences)
}

#[test]
fn a_line_item_table_is_compared_on_its_composite_key_and_differences_name_every_key_column() {
    let fixture = lines_fixture();
    fixture.run(&["migrate"]).expect(0);
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(0).json();
    let finding = |check: &str| {
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|finding| finding["scope"] == CHECK && finding["check"] == check)
            .map(|finding| (finding["status"].as_str().unwrap().to_owned(), finding["detail"].to_string()))
            .unwrap_or_else(|| panic!("no {check} finding: {json}"))
    };
    assert_eq!(finding("source key uniqueness").0, "OK");
    assert!(finding("source key uniqueness").1.contains("order_lines_pkey covers the key columns (order_id, line_no)"));
    assert_eq!(finding("target key uniqueness").0, "OK", "{json}");
    assert!(finding("target key uniqueness").1.contains("no duplicate (order_id, line_no) in the window"), "{json}");
    assert_eq!(finding("target queries").0, "OK", "{json}");
    fixture.import();

    for strategy in ["segments", "stream"] {
        fixture.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(0);
        let run_id = fixture.newest_run_id();
        assert_eq!(stored(&fixture, &run_id), ("PASS".to_owned(), Vec::new()), "{strategy}");
        let strategy_used: String = fixture
            .backend_sql()
            .query_one(
                "SELECT target_value ->> 'strategy' FROM public.dd_run_results \
                  WHERE run_id::text = $1 AND check_type = 'row_diff'",
                &[&run_id],
            )
            .unwrap()
            .get(0);
        assert_eq!(strategy_used, strategy);
    }

    // Order 12's line 3 changed, order 20's line 2 never arrived, and order 30's line 5 (which
    // the source deleted) is still there; every other line of those orders is equal.
    fixture.replica_sql(
        "UPDATE payments.order_lines SET qty = qty + 100 WHERE order_id = 12 AND line_no = 3;
         DELETE FROM payments.order_lines WHERE order_id = 20 AND line_no = 2;
         INSERT INTO payments.order_lines (order_id, line_no, updated_at, sku, qty)
             VALUES (30, 5, timestamptz '2026-07-22 12:30:00+00', 'sku-gone', 1);",
    );
    let expected = vec![
        ("CHANGED".to_owned(), json!({"order_id": "12", "line_no": "3"}), vec!["qty".to_owned()]),
        ("MISSING_IN_TARGET".to_owned(), json!({"order_id": "20", "line_no": "2"}), Vec::new()),
        ("EXTRA_IN_TARGET".to_owned(), json!({"order_id": "30", "line_no": "5"}), Vec::new()),
    ];
    for strategy in ["segments", "stream"] {
        fixture.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(1);
        let run_id = fixture.newest_run_id();
        assert_eq!(stored(&fixture, &run_id), ("FAIL".to_owned(), expected.clone()), "{strategy}");
        let report = fixture.run(&["report", "differences", "--run-id", &run_id]);
        report.expect(0).stdout_has("3 differences found (1 missing, 1 extra, 1 changed)");
        for (order, line) in [("12", "3"), ("20", "2"), ("30", "5")] {
            let named = report.stdout.lines().any(|row| {
                row.contains(&format!("\"order_id\":\"{order}\"")) && row.contains(&format!("\"line_no\":\"{line}\""))
            });
            assert!(named, "({order}, {line}) is not named by both key columns:\n{}", report.stdout);
        }
        let json =
            fixture.run(&["report", "--output-format", "json", "differences", "--run-id", &run_id]).expect(0).json();
        let keys: Vec<&Json> =
            json["rows"].as_array().unwrap_or_else(|| panic!("{json}")).iter().map(|row| &row["key"]).collect();
        assert_eq!(keys, [&expected[0].1, &expected[1].1, &expected[2].1], "{strategy}");
    }
    assert_eq!(fixture.attempts().last().unwrap().0, "FAIL");

    // A line twice on the replica: doctor names the tuple (in the window of the schedule's
    // current slot, which it checks) before a run ERRORs on it (in the 13:00 slot's).
    fixture.replica_sql(
        "INSERT INTO payments.order_lines (order_id, line_no, updated_at, sku, qty)
             SELECT 40, 1, now() - interval '1 hour', 'sku', 1 FROM generate_series(1, 2);
         INSERT INTO payments.order_lines (order_id, line_no, updated_at, sku, qty)
             SELECT order_id, line_no, updated_at, sku, qty FROM payments.order_lines
              WHERE order_id = 40 AND line_no = 1 AND updated_at < timestamptz '2026-07-23 00:00:00+00';",
    );
    let json = fixture.run(&["doctor", "--output-format", "json"]).expect(1).json();
    let target = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["scope"] == CHECK && finding["check"] == "target key uniqueness")
        .cloned()
        .unwrap_or_default();
    assert_eq!(target["status"], "FAIL", "{json}");
    assert!(
        target["detail"].as_str().unwrap_or_default().starts_with("duplicate key (40, 1) in (order_id, line_no)"),
        "{target}"
    );
    fixture.run(&["run", "--all", "--force", "--strategy", "stream", "--at", RUN_AT]).expect(1);
    let error = fixture.attempts().last().unwrap().3.clone().unwrap_or_default();
    assert!(
        error.contains("duplicate key (order_id, line_no) = (40, 1) in payments.order_lines on the target"),
        "{error}"
    );
}
