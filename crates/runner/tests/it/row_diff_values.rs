//! `row_diff` canonical values against a real Singer-style replica (`double precision` for an
//! exact numeric, naive timestamps, `varchar` columns and `_sdc_deleted_at`), NULL against
//! empty, unscaled numerics against floats, and a marker value that must never leave the
//! databases: not in results, evidence, attempt errors, preflights or logs.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use datadiff_diff_core::{
    attempt::RunId,
    definition::{CheckDefinition, CheckType},
};
use datadiff_runner::SummaryStatus;
use serde_json::json;

use crate::context::{Context, counts, result};
use crate::row_diff::{difference, differences, items_definition};

/// The source: exact numerics, `timestamptz`, `char(n)`, text, a date and a boolean.
const SOURCE_SQL: &str = r#"
CREATE TABLE public.orders (
    id bigint PRIMARY KEY,
    updated_at timestamptz NOT NULL,
    amount numeric(12,2),
    rate numeric(6,4),
    status char(8),
    note text,
    due date,
    paid boolean
);
CREATE INDEX orders_updated_at_idx ON public.orders (updated_at);
INSERT INTO public.orders VALUES
    (1, '2026-07-22 12:00:00+00', 19.99, 0.1000, 'open', 'first', '2026-08-01', false),
    (2, '2026-07-22 12:05:00.123456+00', 0.10, 1.2345, 'paid', '', '2026-08-02', true),
    (3, '2026-07-22 12:10:00+00', -1234567.89, NULL, 'void', NULL, NULL, NULL),
    (4, '2026-07-22 12:20:00+00', 100.00, 3.0000, 'open', 'ünïcödé ✓', '2026-08-04', false),
    (5, '2026-07-22 12:59:59.999999+00', 0.01, 0.0001, 'open', 'last', '2026-08-05', true);
"#;

/// The replica as PipelineWise's target-postgres writes it: lower-case names, `double
/// precision` for the numerics, naive UTC timestamps, `varchar`, the `_sdc_*` columns with
/// `_sdc_deleted_at` as `varchar`, no primary key. Rows 6 and 7 were deleted at the source
/// and are soft-deleted here.
const REPLICA_SQL: &str = r#"
CREATE SCHEMA tap_public;
CREATE TABLE tap_public.orders (
    id bigint,
    updated_at timestamp without time zone,
    amount double precision,
    rate double precision,
    status character varying,
    note character varying,
    due date,
    paid boolean,
    _sdc_extracted_at timestamp without time zone,
    _sdc_batched_at timestamp without time zone,
    _sdc_deleted_at character varying
);
INSERT INTO tap_public.orders VALUES
    (1, '2026-07-22 12:00:00', 19.99, 0.1, 'open', 'first', '2026-08-01', false, '2026-07-22 12:01', '2026-07-22 12:02', NULL),
    (2, '2026-07-22 12:05:00.123456', 0.1, 1.2345, 'paid', '', '2026-08-02', true, '2026-07-22 12:06', '2026-07-22 12:07', NULL),
    (3, '2026-07-22 12:10:00', -1234567.89, NULL, 'void', NULL, NULL, NULL, '2026-07-22 12:11', '2026-07-22 12:12', NULL),
    (4, '2026-07-22 12:20:00', 100, 3, 'open', 'ünïcödé ✓', '2026-08-04', false, '2026-07-22 12:21', '2026-07-22 12:22', NULL),
    (5, '2026-07-22 12:59:59.999999', 0.01, 0.0001, 'open', 'last', '2026-08-05', true, '2026-07-22 13:01', '2026-07-22 13:02', NULL),
    (6, '2026-07-22 12:30:00', 5, 0.5, 'open', 'gone', NULL, NULL, '2026-07-22 12:31', '2026-07-22 12:32', '2026-07-22T12:40:00.000000+00:00'),
    (7, '2026-07-22 12:31:00', 7, 0.7, 'open', 'gone', NULL, NULL, '2026-07-22 12:31', '2026-07-22 12:32', '2026-07-22T12:41:00.000000+00:00');
"#;

const COMPARED: [&str; 6] = ["amount", "rate", "status", "note", "due", "paid"];

fn singer_definition(context: &Context) -> CheckDefinition {
    let mut definition = items_definition(context);
    definition.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", "orders");
    definition.source_table = "orders".into();
    definition.target_schema = "tap_public".into();
    definition.target_table = "orders".into();
    definition.source_key_column = "id".into();
    definition.target_key_column = "id".into();
    definition.source_compare_columns = COMPARED.iter().map(|name| name.to_string()).collect();
    definition.target_compare_columns = definition.source_compare_columns.clone();
    definition.checks = vec![CheckType::RowCount, CheckType::MaxKey];
    definition.extensions.exclude_soft_deleted = true;
    definition
}

#[test]
fn a_singer_style_replica_passes_when_equal() {
    let context = Context::new(SOURCE_SQL, REPLICA_SQL);
    let summary = context.run(&singer_definition(&context));
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert!(rows.iter().all(|row| row.status == "PASS"), "{rows:?}");
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "5", "missing": "0", "extra": "0", "changed": "0"})
    );
    assert!(differences(&context, run_id).is_empty());

    // Without exclude_soft_deleted the soft-deleted rows are extra (a new revision).
    let mut counting = singer_definition(&context);
    counting.extensions.exclude_soft_deleted = false;
    let run_id = context.run(&counting).run_id.unwrap();
    assert_eq!(
        differences(&context, run_id),
        vec![
            difference(1, "EXTRA_IN_TARGET", json!({"id": "6"}), &[]),
            difference(2, "EXTRA_IN_TARGET", json!({"id": "7"}), &[])
        ]
    );
}

#[test]
fn a_double_replica_holds_the_exact_values_nearest_double_and_null_differs_from_empty() {
    let context = Context::new(SOURCE_SQL, REPLICA_SQL);
    context
        .replica
        .client()
        .unwrap()
        .batch_execute(
            // 19.99 → 19.98 differs; 0.1 → 0.10000000001 is not 0.1000's nearest double (a
            // corruption the source's scale used to forgive); '' → NULL differs; 12:10:00 →
            // 12:10:00.000001 differs; 'open' vs ' open' differs from char(8)'s 'open' (only
            // trailing blanks are not significant).
            "UPDATE tap_public.orders SET amount = 19.98, rate = 0.10000000001 WHERE id = 1; \
             UPDATE tap_public.orders SET note = NULL WHERE id = 2; \
             UPDATE tap_public.orders SET updated_at = '2026-07-22 12:10:00.000001' WHERE id = 3; \
             UPDATE tap_public.orders SET status = ' open' WHERE id = 4;",
        )
        .unwrap();
    let run_id = context.run(&singer_definition(&context)).run_id.unwrap();
    assert_eq!(
        differences(&context, run_id),
        vec![
            difference(1, "CHANGED", json!({"id": "1"}), &["amount", "rate"]),
            difference(2, "CHANGED", json!({"id": "2"}), &["note"]),
            difference(3, "CHANGED", json!({"id": "3"}), &["updated_at"]),
            difference(4, "CHANGED", json!({"id": "4"}), &["status"]),
        ]
    );
}

#[test]
fn an_unscaled_numeric_against_a_float_compares_its_nearest_double() {
    let context = Context::new(SOURCE_SQL, REPLICA_SQL);
    context.source.client().unwrap().batch_execute("ALTER TABLE public.orders ALTER COLUMN rate TYPE numeric").unwrap();
    let run_id = context.run(&singer_definition(&context)).run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_diff").status, "PASS", "{rows:?}");
    assert_eq!(context.attempt_row(run_id).status, "PASS");
}

/// A floating-point source: `whole`, `price` and `big` are `double precision`, `ratio` is
/// `real`. Rows 1–4 hold values a narrower replica type cannot keep; 5 and 6 hold values it
/// keeps exactly.
const FLOAT_SOURCE_SQL: &str = r#"
CREATE TABLE public.readings (
    id bigint PRIMARY KEY,
    updated_at timestamptz NOT NULL,
    whole double precision,
    price double precision,
    big double precision,
    ratio real
);
CREATE INDEX readings_updated_at_idx ON public.readings (updated_at);
INSERT INTO public.readings VALUES
    (1, '2026-07-22 12:01:00+00', 3.7, 1.004, 16777217, 0.125),
    (2, '2026-07-22 12:02:00+00', 3.2, 0.1, 0.5, 0.1),
    (3, '2026-07-22 12:03:00+00', -0.4, 1.5, 16777216, 0.25),
    (4, '2026-07-22 12:04:00+00', 2.5, 19.99, -2.25, 1),
    (5, '2026-07-22 12:05:00+00', 4, -0.0, 0.1, 0.5),
    (6, '2026-07-22 12:06:00+00', 16777217, 123456.78, NULL, NULL);
"#;

/// The replica with narrower types: `integer`, `numeric(12,2)`, `real`, `numeric(12,2)`.
/// Rows 1–4 hold what the narrowing rounds to (4/3/0/3 for 3.7/3.2/-0.4/2.5, 1.00 for
/// 1.004, 16777216 for 16777217, 0.13 for 0.125); 5 and 6 hold the source's values.
const NARROW_REPLICA_SQL: &str = r#"
CREATE TABLE public.readings (
    id bigint,
    updated_at timestamptz,
    whole integer,
    price numeric(12,2),
    big real,
    ratio numeric(12,2)
);
INSERT INTO public.readings VALUES
    (1, '2026-07-22 12:01:00+00', 4, 1.00, 16777216, 0.13),
    (2, '2026-07-22 12:02:00+00', 3, 0.10, 0.5, 0.10),
    (3, '2026-07-22 12:03:00+00', 0, 1.50, 16777216, 0.25),
    (4, '2026-07-22 12:04:00+00', 3, 19.99, -2.25, 1.00),
    (5, '2026-07-22 12:05:00+00', 4, 0.00, 0.1, 0.50),
    (6, '2026-07-22 12:06:00+00', 16777217, 123456.78, NULL, NULL);
"#;

#[test]
fn a_narrower_replica_of_a_float_source_is_changed_where_it_lost_digits() {
    let context = Context::new(FLOAT_SOURCE_SQL, NARROW_REPLICA_SQL);
    let mut definition = items_definition(&context);
    definition.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", "readings");
    definition.source_table = "readings".into();
    definition.target_table = "readings".into();
    definition.source_key_column = "id".into();
    definition.target_key_column = "id".into();
    definition.source_compare_columns = ["whole", "price", "big", "ratio"].map(String::from).to_vec();
    definition.target_compare_columns = definition.source_compare_columns.clone();
    let summary = context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Fail, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    assert_eq!(
        counts(&result(&context.result_rows(run_id), "row_diff").target_value),
        json!({"rows": "6", "missing": "0", "extra": "0", "changed": "5"})
    );
    // The replica is the lossy side: its rounding is a change. Only what the source's own
    // type cannot tell apart is equal: 0.1 against 0.10, 4 against 4.0, -0 against 0. A
    // real keeps 0.5 exactly but not the double 0.1 (row 5's `big`).
    assert_eq!(
        differences(&context, run_id),
        vec![
            difference(1, "CHANGED", json!({"id": "1"}), &["whole", "price", "big", "ratio"]),
            difference(2, "CHANGED", json!({"id": "2"}), &["whole"]),
            difference(3, "CHANGED", json!({"id": "3"}), &["whole"]),
            difference(4, "CHANGED", json!({"id": "4"}), &["whole"]),
            difference(5, "CHANGED", json!({"id": "5"}), &["big"]),
        ]
    );
}

/// A subscriber that keeps every field of every event and span, at every level.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Fields<'a>(&'a Mutex<String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut text = self.0.lock().unwrap();
        let _ = write!(text, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attributes: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        attributes.record(&mut Fields(&self.0));
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&self.0));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        event.record(&mut Fields(&self.0));
        self.0.lock().unwrap().push('\n');
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// Every stored row the attempt left, as text.
fn stored_text(context: &Context, run_id: RunId) -> String {
    let mut sql = context.backend_sql();
    let mut text = String::new();
    for query in [
        "SELECT t::text FROM public.dd_run_attempts t WHERE run_id = $1",
        "SELECT t::text FROM public.dd_run_results t WHERE run_id = $1",
        "SELECT t::text FROM public.datadiff_run_differences t WHERE run_id = $1",
        "SELECT p::text FROM public.dd_preflight_log p JOIN public.dd_run_attempts a USING (preflight_id) \
          WHERE a.run_id = $1",
        "SELECT t::text FROM public.dd_run_slot_state t WHERE run_id = $1",
        "SELECT t::text FROM public.dd_watermark_events t \
          WHERE t.check_id = (SELECT check_id FROM public.dd_run_attempts WHERE run_id = $1)",
    ] {
        for row in sql.query(query, &[&run_id.get()]).unwrap() {
            text.push_str(&row.get::<_, String>(0));
            text.push('\n');
        }
    }
    text
}

/// Set in the child process that runs the marker scenario alone.
const MARKER_CHILD: &str = "DATADIFF_ROW_DIFF_MARKER_CHILD";

/// tracing caches per-callsite interest process-wide, so a subscriber of another test
/// running at the same time can hide events from this test's scoped subscriber. The
/// scenario therefore runs in a child process: this test binary again, with only this test
/// selected.
#[test]
#[allow(clippy::print_stdout, reason = "the parent process reads the child's verdict from stdout")]
fn a_marker_value_never_appears_in_results_evidence_or_logs() {
    if std::env::var_os(MARKER_CHILD).is_some() {
        marker_scenario();
        println!("marker scenario passed");
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "row_diff_values::a_marker_value_never_appears_in_results_evidence_or_logs",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MARKER_CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("marker scenario passed"), "{stdout}");
}

fn marker_scenario() {
    const MARKER: &str = "dd-marker-5b1c0e";
    let context = Context::new(SOURCE_SQL, REPLICA_SQL);
    context
        .source
        .client()
        .unwrap()
        .batch_execute(&format!(
            "UPDATE public.orders SET note = '{MARKER}', status = '{}' WHERE id = 4; \
             INSERT INTO public.orders VALUES (8, '2026-07-22 12:45:00+00', 8, 8, 'open', '{MARKER}', NULL, NULL);",
            &MARKER[..8]
        ))
        .unwrap();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute(&format!(
            "INSERT INTO tap_public.orders (id, updated_at, amount, rate, status, note) VALUES \
             (9, '2026-07-22 12:50:00', 9, 9, 'open', '{MARKER}')"
        ))
        .unwrap();
    let capture = Capture::default();
    let summary = tracing::subscriber::with_default(capture.clone(), || context.run(&singer_definition(&context)));
    let run_id = summary.run_id.unwrap();
    assert_eq!(
        differences(&context, run_id),
        vec![
            difference(1, "CHANGED", json!({"id": "4"}), &["status", "note"]),
            difference(2, "MISSING_IN_TARGET", json!({"id": "8"}), &[]),
            difference(3, "EXTRA_IN_TARGET", json!({"id": "9"}), &[]),
        ]
    );
    let logs = capture.0.lock().unwrap().clone();
    assert!(logs.contains("row_diff compared the window"), "the capture sees the runner's logs: {logs}");
    let stored = stored_text(&context, run_id);
    assert!(stored.contains("MISSING_IN_TARGET"), "{stored}");
    for (place, text) in [("logs", &logs), ("backend rows", &stored), ("summary", &format!("{summary:?}"))] {
        assert!(!text.contains(&MARKER[..8]), "a value leaked into the {place}: {text}");
    }
}
