//! `row_diff` attempts: missing, extra and changed rows named by key and column for bigint,
//! uuid and text keys, duplicate keys, the examples cap, plan errors, the preflight
//! fingerprint of a `row_diff`-only definition, a statement timeout and an interruption —
//! asserted on the backend's rows.

use std::time::Duration;

use datadiff_access::Environment;
use datadiff_diff_core::{
    attempt::RunId,
    definition::{CheckDefinition, CheckType, Extensions, RowDiffSettings, SourceType, TargetType},
    segment::Strategy,
};
use datadiff_runner::{Connections, Error, ExecutionOptions, InFlight, SummaryStatus, execute};
use datadiff_testkit::{Cluster, ClusterOptions, SUPERUSER};
use serde_json::{Value as Json, json};

use crate::context::{Context, ResultRow, counts, db_conn, result, scheduled, sha256_hex, slot, wait_for_a_lock_wait};

/// A stored difference: `(ordinal, kind, key, fields)`.
pub(crate) type StoredDifference = (i32, String, Json, Vec<String>);

/// The attempt's `datadiff_run_differences` rows, read with SQL, in ordinal order.
pub(crate) fn differences(context: &Context, run_id: RunId) -> Vec<StoredDifference> {
    context
        .backend_sql()
        .query(
            "SELECT ordinal, kind, key, fields, check_type FROM public.datadiff_run_differences \
              WHERE run_id = $1 ORDER BY ordinal",
            &[&run_id.get()],
        )
        .unwrap()
        .iter()
        .map(|row| {
            assert_eq!(row.get::<_, String>(4), "row_diff");
            (row.get(0), row.get(1), row.get(2), row.get(3))
        })
        .collect()
}

pub(crate) fn difference(ordinal: i32, kind: &str, key: Json, fields: &[&str]) -> StoredDifference {
    (ordinal, kind.to_owned(), key, fields.iter().map(|field| field.to_string()).collect())
}

/// A definition over `public.items` on both sides: key `k`, timestamp `updated_at`, compare
/// columns `amount` and `note`, `row_count` and `row_diff` (20 examples), the hourly window
/// `[12:00, 13:00)` of the context's slot.
pub(crate) fn items_definition(context: &Context) -> CheckDefinition {
    CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", "items"),
        target_id: "postgres".into(),
        tap_id: "payments".into(),
        source_type: SourceType::TapPostgres,
        target_type: TargetType::TargetPostgres,
        source_database: context.source.name().to_owned(),
        target_database: context.replica.name().to_owned(),
        source_schema: "public".into(),
        source_table: "items".into(),
        target_schema: "public".into(),
        target_table: "items".into(),
        source_key_column: "k".into(),
        target_key_column: "k".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: vec!["amount".into(), "note".into()],
        target_compare_columns: vec!["amount".into(), "note".into()],
        checks: vec![CheckType::RowCount],
        frequency: "0 * * * *".into(),
        window_start_seconds: 3600,
        window_end_seconds: 0,
        statement_timeout_seconds: 60,
        initial_full_scan: false,
        extensions: Extensions {
            row_diff: Some(RowDiffSettings::default()),
            exclude_soft_deleted: false,
            ..Extensions::default()
        },
    }
}

/// `public.items` with `key_type` keys and an index on `updated_at`, filled with `rows`
/// (`(key literal, time of day on 2026-07-22, amount, note literal)`).
pub(crate) fn items_sql(key_type: &str, rows: &[(&str, &str, &str, &str)]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|(key, time, amount, note)| format!("({key}, '2026-07-22 {time}+00', {amount}, {note})"))
        .collect();
    format!(
        "CREATE TABLE public.items (k {key_type} PRIMARY KEY, updated_at timestamptz, amount numeric(12,2), note text); \
         CREATE INDEX items_updated_at_idx ON public.items (updated_at); \
         INSERT INTO public.items VALUES {};",
        values.join(", ")
    )
}

/// Seven keys, in the roles the drift fixture gives them: 0 differs outside the window, 1
/// and 6 are equal, 2 is missing in the target, 3 extra, 4 has a changed note, 5 a changed
/// amount and note; 7 is extra in the target at the window's end (outside it).
fn drift(key_type: &str, keys: [&str; 8]) -> Context {
    let source = items_sql(
        key_type,
        &[
            (keys[0], "11:30:00", "1.00", "'before'"),
            (keys[1], "12:00:00", "10.00", "'same'"),
            (keys[2], "12:10:00", "20.00", "'missing'"),
            (keys[4], "12:30:00", "40.00", "'old'"),
            (keys[5], "12:40:00", "50.00", "'five'"),
            (keys[6], "12:59:59.999999", "60.00", "NULL"),
        ],
    );
    let target = items_sql(
        key_type,
        &[
            (keys[0], "11:30:00", "1.00", "'before, changed'"),
            (keys[1], "12:00:00", "10.00", "'same'"),
            (keys[3], "12:20:00", "30.00", "'extra'"),
            (keys[4], "12:30:00", "40.00", "'new'"),
            (keys[5], "12:40:00", "50.50", "'FIVE'"),
            (keys[6], "12:59:59.999999", "60.00", "NULL"),
            (keys[7], "13:00:00", "70.00", "'at the end'"),
        ],
    );
    Context::new(&source, &target)
}

/// Runs the drift fixture and checks the counts; returns the stored differences.
fn drift_differences(context: &Context) -> Vec<StoredDifference> {
    let summary = context.run(&items_definition(context));
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "FAIL", "{rows:?}");
    assert_eq!(row_diff.source_value, json!({"rows": "5"}));
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "5", "missing": "1", "extra": "1", "changed": "2"}));
    assert!(row_diff.source_seconds.is_some() && row_diff.target_seconds.is_some());
    assert_eq!(result(&rows, "row_count").status, "PASS");
    let attempt = context.attempt_row(run_id);
    let expected =
        format!("row_diff FAIL: 1 missing, 1 extra, 2 changed (datadiff report differences --run-id {run_id})");
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("FAIL", Some(expected.as_str())));
    assert_eq!(summary.status, SummaryStatus::Fail);
    differences(context, run_id)
}

#[test]
fn bigint_keys_name_missing_extra_and_changed_rows() {
    let context = drift("bigint", ["-100", "1", "-5", "3", "100", "1099511627776", "7", "8"]);
    assert_eq!(
        drift_differences(&context),
        vec![
            difference(1, "MISSING_IN_TARGET", json!({"k": "-5"}), &[]),
            difference(2, "EXTRA_IN_TARGET", json!({"k": "3"}), &[]),
            difference(3, "CHANGED", json!({"k": "100"}), &["note"]),
            difference(4, "CHANGED", json!({"k": "1099511627776"}), &["amount", "note"]),
        ]
    );
}

#[test]
fn uuid_keys_are_ordered_by_their_bytes() {
    let keys = ["e", "2", "f", "0", "8", "1", "a", "b"]
        .iter()
        .enumerate()
        .map(|(last, first)| format!("'{first}0000000-0000-4000-8000-0000000000{last:02x}'::uuid"))
        .collect::<Vec<_>>();
    let context = drift("uuid", std::array::from_fn(|index| keys[index].as_str()));
    assert_eq!(
        drift_differences(&context),
        vec![
            difference(1, "EXTRA_IN_TARGET", json!({"k": "00000000-0000-4000-8000-000000000003"}), &[]),
            difference(2, "CHANGED", json!({"k": "10000000-0000-4000-8000-000000000005"}), &["amount", "note"]),
            difference(3, "CHANGED", json!({"k": "80000000-0000-4000-8000-000000000004"}), &["note"]),
            difference(4, "MISSING_IN_TARGET", json!({"k": "f0000000-0000-4000-8000-000000000002"}), &[]),
        ]
    );
}

#[test]
fn text_keys_are_merged_bytewise_whatever_the_column_collation() {
    // Under the ICU root collation these keys sort `_x, a, b, B, C, Z`; bytewise they sort
    // `B, C, Z, _x, a, b`. Streaming them in the column's own order would be out of order
    // for the merge.
    let context = drift("text COLLATE \"und-x-icu\"", ["'zero'", "'a'", "'B'", "'b'", "'C'", "'_x'", "'Z'", "'zz'"]);
    let icu_order: Vec<String> = context
        .source
        .client()
        .unwrap()
        .query("SELECT k FROM public.items WHERE k IN ('B', 'C', '_x') ORDER BY k", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(icu_order, ["_x", "B", "C"], "the column's collation is not bytewise");
    assert_eq!(
        drift_differences(&context),
        vec![
            difference(1, "MISSING_IN_TARGET", json!({"k": "B"}), &[]),
            difference(2, "CHANGED", json!({"k": "C"}), &["note"]),
            difference(3, "CHANGED", json!({"k": "_x"}), &["amount", "note"]),
            difference(4, "EXTRA_IN_TARGET", json!({"k": "b"}), &[]),
        ]
    );
}

/// `public.items` without a primary key, so a key may repeat.
fn items_without_key(rows: &str) -> String {
    format!(
        "CREATE TABLE public.items (k bigint, updated_at timestamptz, amount numeric(12,2), note text); \
         CREATE INDEX items_updated_at_idx ON public.items (updated_at); \
         INSERT INTO public.items VALUES {rows};"
    )
}

#[test]
fn a_duplicate_key_on_either_side_is_an_error_naming_it() {
    let unique = "(1, '2026-07-22 12:00+00', 1.00, 'a'), (2, '2026-07-22 12:10+00', 2.00, 'b'), \
                  (4, '2026-07-22 12:20+00', 4.00, 'd')";
    let repeated = format!("{unique}, (4, '2026-07-22 12:30+00', 4.00, 'd')");
    for (source, target, side) in [(&repeated, unique, "source"), (&unique.to_owned(), repeated.as_str(), "target")] {
        let context = Context::new(&items_without_key(source), &items_without_key(target));
        let summary = context.run(&items_definition(&context));
        let run_id = summary.run_id.unwrap();
        let expected =
            format!("row_diff: duplicate key 4 in public.items on the {side}: the key column must be unique");
        let rows = context.result_rows(run_id);
        let row_diff = result(&rows, "row_diff");
        assert_eq!((row_diff.status.as_str(), row_diff.error.as_deref()), ("ERROR", Some(expected.as_str())));
        assert_eq!((&row_diff.source_value, &row_diff.target_value), (&Json::Null, &Json::Null));
        assert_eq!(result(&rows, "row_count").status, "FAIL", "the aggregate checks still ran");
        let attempt = context.attempt_row(run_id);
        assert_eq!(attempt.status, "ERROR");
        assert_eq!(attempt.error.as_deref(), Some(format!("row_count FAIL; {expected}").as_str()));
        assert!(differences(&context, run_id).is_empty());
    }
}

#[test]
fn examples_are_capped_at_max_examples_and_counts_stay_exact() {
    let source: Vec<String> = (1..=40)
        .map(|k| format!("({k}, '2026-07-22 12:00+00'::timestamptz + {k} * interval '1 minute', {k}, 'n')"))
        .collect();
    // 1..=30 are missing from the target; 31..=40 are there, 35 changed.
    let target: Vec<String> = (31..=40)
        .map(|k| {
            let note = if k == 35 { "'changed'" } else { "'n'" };
            format!("({k}, '2026-07-22 12:00+00'::timestamptz + {k} * interval '1 minute', {k}, {note})")
        })
        .collect();
    let context = Context::new(&items_without_key(&source.join(", ")), &items_without_key(&target.join(", ")));
    let mut definition = items_definition(&context);
    definition.extensions.row_diff = RowDiffSettings::new(5);
    let run_id = context.run(&definition).run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "10", "missing": "30", "extra": "0", "changed": "1"})
    );
    assert_eq!(result(&rows, "row_diff").source_value, json!({"rows": "40"}));
    let stored = differences(&context, run_id);
    assert_eq!(
        stored,
        (1..=5).map(|k| difference(k, "MISSING_IN_TARGET", json!({"k": k.to_string()}), &[])).collect::<Vec<_>>()
    );
}

#[test]
fn row_diff_without_compare_columns_or_with_an_uncomparable_column_is_an_error_result() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'")]);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    definition.source_compare_columns.clear();
    definition.target_compare_columns.clear();
    let run_id = context.run(&definition).run_id.unwrap();
    let expected = "row_diff requires at least one compare_columns entry for public.items";
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_diff").error.as_deref(), Some(expected));
    assert_eq!(result(&rows, "row_count").status, "PASS", "the other checks still ran");
    assert_eq!(context.attempt_row(run_id).error.as_deref(), Some(expected));

    context.source.client().unwrap().batch_execute("ALTER TABLE public.items ADD COLUMN doc jsonb").unwrap();
    context.replica.client().unwrap().batch_execute("ALTER TABLE public.items ADD COLUMN doc jsonb").unwrap();
    definition.source_compare_columns = vec!["note".into(), "doc".into()];
    definition.target_compare_columns = vec!["note".into(), "doc".into()];
    let run_id = context.run(&definition).run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(
        result(&rows, "row_diff").error.as_deref(),
        Some(
            "row_diff: column doc has type jsonb on the source database, which datadiff cannot compare \
             (jsonb on the source, jsonb on the target)"
        )
    );
    assert_eq!(context.attempt_row(run_id).status, "ERROR");

    // A compare column missing on one side.
    definition.source_compare_columns = vec!["note".into(), "nope".into()];
    definition.target_compare_columns = vec!["note".into(), "also_nope".into()];
    let run_id = context.run(&definition).run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(
        result(&rows, "row_diff").error.as_deref(),
        Some("Column 'nope' does not exist in public.items"),
        "{rows:?}"
    );
}

#[test]
fn a_row_diff_only_definition_fingerprints_its_streaming_select_and_passes_when_equal() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'"), ("2", "12:30:00", "2.00", "NULL")]);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    definition.checks = vec![CheckType::SchemaCompatibility];
    let summary = context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let select = "SELECT \"k\", \"updated_at\", \"amount\", \"note\" FROM \"public\".\"items\" \
                  WHERE \"updated_at\" >= %s AND \"updated_at\" < %s ORDER BY \"k\"";
    let preflight = context.preflight_row(run_id);
    assert_eq!(preflight.status, "PASS");
    assert_eq!(preflight.fingerprint, sha256_hex(&context, select));
    let rows = context.result_rows(run_id);
    let names: Vec<&str> = rows.iter().map(|row| row.check_type.as_str()).collect();
    assert_eq!(names, ["row_diff", "schema_compatibility"]);
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "2", "missing": "0", "extra": "0", "changed": "0"})
    );
    assert_eq!(context.attempt_row(run_id).status, "PASS");
    assert!(differences(&context, run_id).is_empty());
    // Coverage advances on a row_diff-only pass.
    assert_eq!(context.watermark(&summary).map(|state| state.0), Some("CONTIGUOUS".into()));

    // Without compare columns it cannot run: ERROR before reading data, placeholder preflight.
    definition.source_compare_columns.clear();
    definition.target_compare_columns.clear();
    let run_id = context.run(&definition).run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    let expected = "row_diff requires at least one compare_columns entry for public.items";
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(context.preflight_row(run_id).error.as_deref(), Some(expected));
    let rows: Vec<ResultRow> = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_diff").status, "ERROR");
}

/// Holds an ACCESS EXCLUSIVE lock on the replica's `public.items` until dropped.
pub(crate) fn lock_replica(context: &Context) -> postgres::Client {
    let mut client = context.replica.client().unwrap();
    client.batch_execute("BEGIN; LOCK TABLE public.items IN ACCESS EXCLUSIVE MODE").unwrap();
    client
}

/// Waits (at most two minutes: a guard, not a timing assertion) until the target stream of
/// a `row_diff` waits for the [`lock_replica`] lock.
pub(crate) fn wait_for_the_target_stream_to_wait_for_the_lock(context: &Context) {
    wait_for_a_lock_wait(
        &context.replica,
        "pipelinewise-data-diff-target",
        "the row_diff stream never waited for the lock",
    );
}

#[test]
fn a_stream_over_its_statement_timeout_is_an_error_result_with_the_servers_primary_message() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'")]);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    definition.checks = vec![CheckType::SchemaCompatibility];
    definition.statement_timeout_seconds = 1;
    let lock = lock_replica(&context);
    let summary = context.run(&definition);
    drop(lock);
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let error = result(&rows, "row_diff").error.clone().unwrap();
    assert!(error.starts_with("row_diff: target "), "{error}");
    assert!(error.ends_with("failed: canceling statement due to statement timeout"), "{error}");
    assert_eq!(context.attempt_row(run_id).status, "ERROR");
}

#[test]
fn an_interrupted_row_diff_stops_its_streams_and_leaves_the_attempt_to_the_interrupter() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'")]);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    definition.checks = vec![CheckType::SchemaCompatibility];
    let stored = context.import(&definition);
    let in_flight = InFlight::new();
    let options = ExecutionOptions { in_flight: Some(in_flight.clone()), ..Context::options() };
    let lock = lock_replica(&context);
    let result = std::thread::scope(|scope| {
        let worker =
            scope.spawn(|| execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options));
        wait_for_the_target_stream_to_wait_for_the_lock(&context);
        in_flight.interrupt_all();
        worker.join().unwrap()
    });
    let run_id = RunId::new(
        context
            .backend_sql()
            .query_one("SELECT run_id FROM public.dd_run_attempts WHERE status = 'RUNNING'", &[])
            .unwrap()
            .get(0),
    );
    assert!(matches!(result, Err(Error::Interrupted { run_id: interrupted }) if interrupted == run_id), "{result:?}");
    // The stream's query was cancelled: nothing waits for the lock any more, while it is
    // still held (a guard of two minutes, not a timing assertion).
    let mut client = context.replica.client().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        assert!(std::time::Instant::now() < deadline, "the interrupted stream still waits for the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(lock);
}

#[test]
fn an_encrypted_side_streams_over_tls_and_a_plain_side_without() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'"), ("2", "12:30:00", "2.00", "'b'")]);
    let context = Context::new(&sql, "");
    let tls_cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &["127.0.0.1"])).unwrap();
    let replica = tls_cluster.fresh_database().unwrap();
    replica.client().unwrap().batch_execute(&sql).unwrap();
    // sslmode=require on the replica: its stream must negotiate TLS as its session did.
    let replica_conn = datadiff_config::DbConn {
        host: Some(tls_cluster.host().to_owned()),
        port: Some(tls_cluster.port()),
        user: Some(SUPERUSER.to_owned()),
        password: Some(datadiff_config::Secret::new(tls_cluster.superuser_password())),
        dbname: Some(replica.name().to_owned()),
        ssl: true,
        ..datadiff_config::DbConn::default()
    };
    let connections = Connections::new(Environment::default())
        .with_tap("payments", db_conn(&context.source))
        .with_target("postgres", replica_conn);
    let mut definition = items_definition(&context);
    definition.target_database = replica.name().to_owned();
    definition.checks = vec![CheckType::SchemaCompatibility];
    let stored = context.import(&definition);
    let summary = execute(&context.store, &connections, &stored, slot(), scheduled(), &Context::options()).unwrap();
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let rows = context.result_rows(summary.run_id.unwrap());
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "2", "missing": "0", "extra": "0", "changed": "0"})
    );
}

/// The drift fixture's items with a `due date` column and `extra` more integer columns on
/// both sides, all compared; the target's key 4 has a changed note.
fn failing_aggregate_context(
    key_type: &str,
    keys: [&'static str; 2],
    due: &str,
    extra: usize,
) -> (Context, CheckDefinition) {
    let rows = |note: &'static str| [(keys[0], "12:00:00", "10.00", "'same'"), (keys[1], "12:30:00", "40.00", note)];
    let context = Context::new(&items_sql(key_type, &rows("'old'")), &items_sql(key_type, &rows("'new'")));
    let added: Vec<String> = (1..=extra).map(|n| format!("c{n}")).collect();
    let mut alter = format!("ALTER TABLE public.items ADD COLUMN due date DEFAULT '{due}'");
    for column in &added {
        alter.push_str(&format!(", ADD COLUMN {column} integer DEFAULT 0"));
    }
    for database in [&context.source, &context.replica] {
        database.client().unwrap().batch_execute(&alter).unwrap();
    }
    let mut definition = items_definition(&context);
    let compared: Vec<String> = ["amount", "note", "due"].iter().map(|name| name.to_string()).chain(added).collect();
    definition.source_compare_columns = compared.clone();
    definition.target_compare_columns = compared;
    (context, definition)
}

#[test]
fn a_failed_aggregate_query_keeps_the_row_diff_result_and_its_evidence() {
    let bigint = ["1", "4"];
    let uuid = ["'00000000-0000-4000-8000-000000000001'", "'00000000-0000-4000-8000-000000000004'"];
    let cases = [
        // row_checksum over 99 compare columns: CONCAT gets 101 arguments.
        ("bigint", bigint, "2026-08-01", 96, CheckType::RowChecksum, "cannot pass more than 100 arguments"),
        // A date beyond the timestamp range, which row_checksum hashes dates as.
        ("bigint", bigint, "300000-01-01", 0, CheckType::RowChecksum, "out of range"),
        // min_key on a uuid key: PostgreSQL has no min(uuid).
        ("uuid", uuid, "2026-08-01", 0, CheckType::MinKey, "min(uuid)"),
    ];
    for (key_type, keys, due, extra, check, cause) in cases {
        let (context, mut definition) = failing_aggregate_context(key_type, keys, due, extra);
        assert_eq!(definition.source_compare_columns.len(), 3 + extra);
        definition.checks = vec![CheckType::RowCount, check];
        let summary = context.run(&definition);
        let run_id = summary.run_id.unwrap();
        let attempt = context.attempt_row(run_id);
        assert_eq!(attempt.status, "ERROR", "{check}: ERROR beats FAIL");
        let error = attempt.error.unwrap();
        assert!(error.contains("aggregate query failed") && error.contains(cause), "{check}: {error}");
        let failure =
            format!("; row_diff FAIL: 0 missing, 0 extra, 1 changed (datadiff report differences --run-id {run_id})");
        assert!(error.ends_with(&failure), "{check}: {error}");
        let rows = context.result_rows(run_id);
        assert_eq!(rows.len(), 1, "{check}: only row_diff has a result: {rows:?}");
        let row_diff = result(&rows, "row_diff");
        assert_eq!(row_diff.status, "FAIL");
        assert_eq!(counts(&row_diff.target_value), json!({"rows": "2", "missing": "0", "extra": "0", "changed": "1"}));
        let key = keys[1].trim_matches('\'');
        assert_eq!(differences(&context, run_id), vec![difference(1, "CHANGED", json!({"k": key}), &["note"])]);
    }
}

/// A line-item table keyed by `(order_id, line_no)` on both sides, with `rows` as `(order_id,
/// line_no, note)`, every row in the context's window.
fn lines_sql(rows: &[(i32, i32, &str)]) -> String {
    let values: Vec<String> = rows
        .iter()
        .map(|(order, line, note)| format!("({order}, {line}, '2026-07-22 12:30:00+00', 1.00, '{note}')"))
        .collect();
    format!(
        "CREATE TABLE public.items (order_id integer, line_no integer, updated_at timestamptz, \
         amount numeric(12,2), note text, PRIMARY KEY (order_id, line_no)); \
         INSERT INTO public.items VALUES {};",
        values.join(", ")
    )
}

#[test]
fn key_columns_make_a_composite_key_named_column_by_column_in_the_evidence() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'"), ("2", "12:30:00", "2.00", "'b'")]);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    // A single entry naming the key column is the key column: the check runs as without it.
    definition.extensions.key_columns = vec!["k".into()];
    let run_id = context.run(&definition).run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_diff").status, "PASS", "{rows:?}");
    assert_eq!(context.attempt_row(run_id).status, "PASS");

    // Orders 1 and 2 have two lines each: `order_id` alone repeats. The replica missed line
    // (1, 2)'s change and line (2, 1)'s insert, and kept line (3, 2), which the source
    // deleted; (2, 2) is equal though (2, 1) is missing, which only `line_no` tells apart.
    let source = lines_sql(&[(1, 1, "a"), (1, 2, "b"), (2, 1, "c"), (2, 2, "d"), (3, 1, "e")]);
    let replica = lines_sql(&[(1, 1, "a"), (1, 2, "B"), (2, 2, "d"), (3, 1, "e"), (3, 2, "f")]);
    let context = Context::new(&source, &replica);
    let mut definition = items_definition(&context);
    definition.source_key_column = "order_id".into();
    definition.target_key_column = "order_id".into();
    definition.extensions.key_columns = vec!["order_id".into(), "line_no".into()];
    let expected = vec![
        difference(1, "CHANGED", json!({"order_id": "1", "line_no": "2"}), &["note"]),
        difference(2, "MISSING_IN_TARGET", json!({"order_id": "2", "line_no": "1"}), &[]),
        difference(3, "EXTRA_IN_TARGET", json!({"order_id": "3", "line_no": "2"}), &[]),
    ];
    for strategy in [Strategy::Stream, Strategy::Segments] {
        definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
        let run_id = context.run(&definition).run_id.unwrap();
        let rows = context.result_rows(run_id);
        let row_diff = result(&rows, "row_diff");
        assert_eq!(row_diff.status, "FAIL", "{strategy}: {rows:?}");
        assert_eq!(
            counts(&row_diff.target_value),
            json!({"rows": "5", "missing": "1", "extra": "1", "changed": "1"}),
            "{strategy}"
        );
        assert_eq!(row_diff.target_value["strategy"], json!(strategy.as_str()), "{strategy}: {rows:?}");
        assert_eq!(differences(&context, run_id), expected, "{strategy}");
    }

    // Equal tables PASS under both strategies.
    context.replica.client().unwrap().batch_execute(&format!("DROP TABLE public.items; {source}")).unwrap();
    for strategy in [Strategy::Stream, Strategy::Segments] {
        definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
        let run_id = context.run(&definition).run_id.unwrap();
        let rows = context.result_rows(run_id);
        assert_eq!(result(&rows, "row_diff").status, "PASS", "{strategy}: {rows:?}");
        assert_eq!(context.attempt_row(run_id).status, "PASS", "{strategy}");
        assert!(differences(&context, run_id).is_empty());
    }
}

/// Runs `definition` under each strategy and checks that `row_diff` FAILs with `expected`
/// stored (the counts' `changed`, `missing`, `extra` from it).
fn fails_alike_under_both_strategies(
    context: &Context,
    definition: &mut CheckDefinition,
    expected: &[StoredDifference],
) {
    let count = |kind: &str| expected.iter().filter(|(_, stored, _, _)| stored == kind).count().to_string();
    for strategy in [Strategy::Stream, Strategy::Segments] {
        definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
        let run_id = context.run(definition).run_id.unwrap();
        let rows = context.result_rows(run_id);
        let row_diff = result(&rows, "row_diff");
        assert_eq!(row_diff.status, "FAIL", "{strategy}: {rows:?}");
        assert_eq!(row_diff.target_value["strategy"], json!(strategy.as_str()), "{strategy}: {rows:?}");
        let target = counts(&row_diff.target_value);
        assert_eq!(
            (&target["missing"], &target["extra"], &target["changed"]),
            (&json!(count("MISSING_IN_TARGET")), &json!(count("EXTRA_IN_TARGET")), &json!(count("CHANGED"))),
            "{strategy}: {rows:?}"
        );
        assert_eq!(differences(context, run_id), expected, "{strategy}");
    }
}

#[test]
fn timestamptz_keys_are_ordered_as_instants_and_named_in_utc() {
    // By instant: -infinity, 0044 BC, the last microsecond of 1999, then 05:00:00Z and two
    // instants one and three microseconds later (the first written at +05), then infinity.
    let context = drift(
        "timestamptz",
        [
            "'-infinity'",
            "'2026-07-01 10:00:00+05'",
            "'2026-07-01 05:00:00.000001+00'",
            "'infinity'",
            "'1999-12-31 23:59:59.999999+00'",
            "'0044-03-15 12:00:00+00 BC'",
            "'2026-07-01 05:00:00.000003+00'",
            "'2030-01-01 00:00:00+00'",
        ],
    );
    let mut definition = items_definition(&context);
    fails_alike_under_both_strategies(
        &context,
        &mut definition,
        &[
            difference(1, "CHANGED", json!({"k": "0044-03-15T12:00:00Z BC"}), &["amount", "note"]),
            difference(2, "CHANGED", json!({"k": "1999-12-31T23:59:59.999999Z"}), &["note"]),
            difference(3, "MISSING_IN_TARGET", json!({"k": "2026-07-01T05:00:00.000001Z"}), &[]),
            difference(4, "EXTRA_IN_TARGET", json!({"k": "infinity"}), &[]),
        ],
    );
}

/// A daily fact table keyed by `(day, store)`: the source's `(date, integer)`, the
/// replica's `(timestamp, bigint)` as target-postgres loads them, with `rows` as `(day,
/// store, amount)`, every row in the context's window.
fn facts_sql(replica: bool, rows: &[(&str, i32, &str)]) -> String {
    let (day, store) = if replica { ("timestamp", "bigint") } else { ("date", "integer") };
    let values: Vec<String> = rows
        .iter()
        .map(|(day, store, amount)| format!("('{day}', {store}, '2026-07-22 12:30:00+00', {amount}, NULL)"))
        .collect();
    format!(
        "CREATE TABLE public.items (day {day}, store {store}, updated_at timestamptz, amount numeric(12,2), \
         note text, PRIMARY KEY (day, store)); INSERT INTO public.items VALUES {};",
        values.join(", ")
    )
}

#[test]
fn a_fact_table_keyed_by_day_and_store_meets_its_replica_of_midnights() {
    let same = [("2026-07-20", 1, "1.00"), ("2026-07-20", 2, "2.00"), ("2026-07-21", 1, "3.00")];
    let context = Context::new(&facts_sql(false, &same), &facts_sql(true, &same));
    let mut definition = items_definition(&context);
    definition.source_key_column = "day".into();
    definition.target_key_column = "day".into();
    definition.extensions.key_columns = vec!["day".into(), "store".into()];
    for strategy in [Strategy::Stream, Strategy::Segments] {
        definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
        let run_id = context.run(&definition).run_id.unwrap();
        let rows = context.result_rows(run_id);
        assert_eq!(result(&rows, "row_diff").status, "PASS", "{strategy}: {rows:?}");
        assert_eq!(result(&rows, "row_diff").target_value["strategy"], json!(strategy.as_str()), "{rows:?}");
        assert!(differences(&context, run_id).is_empty());
    }

    // The replica lost store 2's delete on the 20th, missed the 21st's store 2 and negated an
    // amount; a time of day other than midnight is another key.
    let source = facts_sql(false, &[("2026-07-20", 1, "1.00"), ("2026-07-21", 1, "3.00"), ("2026-07-21", 2, "4.00")]);
    let replica = facts_sql(
        true,
        &[
            ("2026-07-20", 1, "-1.00"),
            ("2026-07-20", 2, "2.00"),
            ("2026-07-21 00:00:01", 2, "4.00"),
            ("2026-07-21", 1, "3.00"),
        ],
    );
    let context = Context::new(&source, &replica);
    let mut definition = items_definition(&context);
    definition.source_key_column = "day".into();
    definition.target_key_column = "day".into();
    definition.extensions.key_columns = vec!["day".into(), "store".into()];
    fails_alike_under_both_strategies(
        &context,
        &mut definition,
        &[
            difference(1, "CHANGED", json!({"day": "2026-07-20T00:00:00Z", "store": "1"}), &["amount"]),
            difference(2, "EXTRA_IN_TARGET", json!({"day": "2026-07-20T00:00:00Z", "store": "2"}), &[]),
            difference(3, "MISSING_IN_TARGET", json!({"day": "2026-07-21T00:00:00Z", "store": "2"}), &[]),
            difference(4, "EXTRA_IN_TARGET", json!({"day": "2026-07-21T00:00:01Z", "store": "2"}), &[]),
        ],
    );
}
