//! The type matrix on a real PipelineWise pipeline: `tap-postgres` (FULL_TABLE) piped into
//! `target-postgres`, both installed from PyPI into virtual environments by the test itself
//! (cached under Cargo's test temporary directory), replicating one column of every source
//! type a PostgreSQL user replicates. The test records what the target creates
//! (`information_schema.columns`), asserts it is the README's table, and runs `row_diff` and
//! `audit` on the replica: PASS when equal (with `empty_string_as_null` for the target's `''`
//! → NULL), FAIL naming the key and the column of every planted difference, and an ERROR
//! naming the column and both types where no faithful comparison exists.
//!
//! Without python3, its `venv` module or PyPI, the pipeline part is skipped with a printed
//! reason; the same assertions then run on a hand-made replica of the README's types and
//! the values the target writes (padded `char(n)`, `''` as NULL, dates at midnight, uuids as
//! text), and the README's table is checked against the matrix below either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use datadiff_audit::{AuditOptions, Status};
use datadiff_diff_core::definition::{CheckDefinition, CheckType, RowDiffSettings};
use datadiff_runner::SummaryStatus;
use datadiff_testkit::{SUPERUSER, shared_cluster};
use serde_json::{Value as Json, json};

use crate::context::{Context, counts, result};
use crate::row_diff::{difference, differences, items_definition};

/// The pinned connectors: PipelineWise installs each in a virtual environment of its own
/// (their pins conflict: the tap needs `psycopg2-binary==2.9.3`, the target `2.9.5`).
const TAP: &str = "pipelinewise-tap-postgres==1.8.4";
const TARGET: &str = "pipelinewise-target-postgres==2.1.2";

/// The schema target-postgres writes into (its `default_target_schema`).
const REPLICA_SCHEMA: &str = "tap_public";

/// What `row_diff` and `audit` do with one matrix row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Compared; the text says how (the README's words).
    Compares(&'static str),
    /// An ERROR naming the column and both types.
    Error(&'static str),
    /// The tap does not replicate the type: the replica has no such column.
    NotReplicated,
}

/// One row of the matrix: the source column, its type as the README shows it, what
/// target-postgres creates (`information_schema.columns.data_type`), and the outcome.
struct MatrixRow {
    column: &'static str,
    source_type: &'static str,
    replica_type: Option<&'static str>,
    outcome: Outcome,
}

const fn row(
    column: &'static str,
    source_type: &'static str,
    replica_type: Option<&'static str>,
    outcome: Outcome,
) -> MatrixRow {
    MatrixRow { column, source_type, replica_type, outcome }
}

const SAME: Outcome = Outcome::Compares("by value");
const NEAREST_DOUBLE: &str = "equal only when the replica holds the source value's nearest double (what the target stores); any other double is CHANGED";
const NO_JSON: &str =
    "no faithful comparison: jsonb normalises keys and spacing and the tap's Python floats change numbers";

/// The matrix, in the source table's column order. The README's table is made of exactly
/// these rows (see [`readme_rows`]).
const MATRIX: [MatrixRow; 22] = [
    row("c_smallint", "smallint", Some("smallint"), SAME),
    row("c_integer", "integer", Some("integer"), SAME),
    row("c_bigint", "bigint", Some("bigint"), SAME),
    row("c_numeric_p_s", "numeric(12,2)", Some("double precision"), Outcome::Compares(NEAREST_DOUBLE)),
    row("c_numeric", "numeric", Some("double precision"), Outcome::Compares(NEAREST_DOUBLE)),
    row("c_real", "real", Some("double precision"), Outcome::Compares("the replica as the nearest real")),
    row("c_double", "double precision", Some("double precision"), SAME),
    row("c_boolean", "boolean", Some("boolean"), SAME),
    row(
        "c_text",
        "text",
        Some("character varying"),
        Outcome::Compares("byte for byte; `''` is NULL on the replica: FAIL unless `empty_string_as_null`"),
    ),
    row(
        "c_varchar",
        "varchar(40)",
        Some("character varying"),
        Outcome::Compares("byte for byte; `''` is NULL on the replica: FAIL unless `empty_string_as_null`"),
    ),
    row(
        "c_char",
        "char(8)",
        Some("character varying"),
        Outcome::Compares("trailing blanks ignored on both sides (the replica keeps the padding)"),
    ),
    row(
        "c_date",
        "date",
        Some("timestamp without time zone"),
        Outcome::Compares("the date as midnight; another time of day is CHANGED"),
    ),
    row("c_time", "time", Some("time without time zone"), SAME),
    row("c_timestamp", "timestamp", Some("timestamp without time zone"), SAME),
    row("c_timestamptz", "timestamptz", Some("timestamp without time zone"), Outcome::Compares("as UTC")),
    row(
        "c_uuid",
        "uuid",
        Some("character varying"),
        Outcome::Compares("the replica's text read as a uuid (any case); unparsable text is CHANGED; also as a key"),
    ),
    row("c_json", "json", Some("jsonb"), Outcome::Error(NO_JSON)),
    row("c_jsonb", "jsonb", Some("jsonb"), Outcome::Error(NO_JSON)),
    row("c_bytea", "bytea", None, Outcome::NotReplicated),
    row("c_int_array", "integer[]", Some("jsonb"), Outcome::Error(NO_JSON)),
    row("c_enum", "enum", Some("character varying"), Outcome::Compares("by label, as text")),
    row("c_interval", "interval", None, Outcome::NotReplicated),
];

/// The source: one column per matrix row, rows 1 and 2 with edge values (`''`, a padded
/// `char`, negative numbers, a date before 2000), rows 3–18 plain; all in the window
/// `[12:00, 13:00)` of 2026-07-22. And `by_uuid`, keyed by a uuid.
const SOURCE_SQL: &str = r#"
CREATE TYPE public.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE public.matrix (
    id bigint PRIMARY KEY,
    updated_at timestamptz NOT NULL,
    c_smallint smallint, c_integer integer, c_bigint bigint, c_numeric_p_s numeric(12,2),
    c_numeric numeric, c_real real, c_double double precision, c_boolean boolean, c_text text,
    c_varchar varchar(40), c_char char(8), c_date date, c_time time, c_timestamp timestamp,
    c_timestamptz timestamptz, c_uuid uuid, c_json json, c_jsonb jsonb, c_bytea bytea,
    c_int_array integer[], c_enum public.mood, c_interval interval
);
CREATE INDEX matrix_updated_at_idx ON public.matrix (updated_at);
INSERT INTO public.matrix VALUES
    (1, '2026-07-22 12:00:00+00', 1, 2, 3, 19.99, 1.5, 0.1, 0.1, true, 'text', 'varchar', 'ab', '2026-07-01',
     '12:34:56.789', '2026-07-01 12:00:00.5', '2026-07-01 14:00:00+02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
     '{"a": 1}', '{"b": [1, 2]}', '\x0102', '{1,2}', 'ok', '1 day 02:00:00'),
    (2, '2026-07-22 12:01:00+00', -1, -2, -3, 0.10, 123.456, -2.5, 1e-10, false, '', '', 'x', '1999-12-31',
     '00:00:00', '1999-12-31 23:59:59.999999', '1999-12-31 23:59:59+00', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12',
     '[]', '{}', '\x', '{}', 'sad', '3 months');
INSERT INTO public.matrix
SELECT n, '2026-07-22 12:00:00+00'::timestamptz + n * interval '1 minute', n, n * 1000, n * 1000000000::bigint,
       n + 0.25, n + 0.5, n + 0.75, n + 0.125, n % 2 = 0, 'text ' || n, 'varchar ' || n, 'c' || n,
       date '2026-07-01' + n, time '08:00' + n * interval '1 second', timestamp '2026-07-01 08:00' + n * interval '1 hour',
       timestamptz '2026-07-01 08:00+00' + n * interval '1 hour', ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid,
       '{}', '{}', '\x00', ARRAY[n], 'happy', n * interval '1 day'
  FROM generate_series(3, 18) AS n;
CREATE TABLE public.by_uuid (id uuid PRIMARY KEY, updated_at timestamptz NOT NULL, note text);
CREATE INDEX by_uuid_updated_at_idx ON public.by_uuid (updated_at);
INSERT INTO public.by_uuid VALUES
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2026-07-22 12:00:00+00', 'one'),
    ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '2026-07-22 12:30:00+00', ''),
    ('00000000-0000-4000-8000-000000000003', '2026-07-22 12:45:00+00', 'three');
"#;

/// The replica as target-postgres 2.1.2 writes the source (what the pipeline part
/// observes): the matrix's replica types, `char(8)` padded with blanks, `''` as NULL, dates
/// at midnight, `timestamptz` as naive UTC, uuids and enum labels as text, json and arrays
/// as jsonb, no bytea or interval column.
fn hand_made_replica_sql() -> String {
    let columns: Vec<String> = MATRIX
        .iter()
        .filter_map(|row| row.replica_type.map(|replica_type| format!("{} {replica_type}", row.column)))
        .collect();
    format!(
        r#"
CREATE SCHEMA {REPLICA_SCHEMA};
CREATE TABLE {REPLICA_SCHEMA}.matrix (id bigint, updated_at timestamp without time zone, {columns},
    _sdc_extracted_at timestamp without time zone, _sdc_batched_at timestamp without time zone,
    _sdc_deleted_at character varying);
INSERT INTO {REPLICA_SCHEMA}.matrix (id, updated_at, {names}) VALUES
    (1, '2026-07-22 12:00:00', 1, 2, 3, 19.99, 1.5, 0.1::real, 0.1, true, 'text', 'varchar', 'ab      ',
     '2026-07-01 00:00:00', '12:34:56.789', '2026-07-01 12:00:00.5', '2026-07-01 12:00:00',
     'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{"a": 1}}', '{{"b": [1, 2]}}', '[1, 2]', 'ok'),
    (2, '2026-07-22 12:01:00', -1, -2, -3, 0.1, 123.456, -2.5, 1e-10, false, NULL, NULL, 'x       ',
     '1999-12-31 00:00:00', '00:00:00', '1999-12-31 23:59:59.999999', '1999-12-31 23:59:59',
     'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '[]', '{{}}', '[]', 'sad');
INSERT INTO {REPLICA_SCHEMA}.matrix (id, updated_at, {names})
SELECT n, timestamp '2026-07-22 12:00:00' + n * interval '1 minute', n, n * 1000, n * 1000000000::bigint,
       n + 0.25, n + 0.5, n + 0.75, n + 0.125, n % 2 = 0, 'text ' || n, 'varchar ' || n, rpad('c' || n, 8),
       timestamp '2026-07-01' + n * interval '1 day', time '08:00' + n * interval '1 second',
       timestamp '2026-07-01 08:00' + n * interval '1 hour', timestamp '2026-07-01 08:00' + n * interval '1 hour',
       '00000000-0000-4000-8000-' || lpad(n::text, 12, '0'), '{{}}', '{{}}', jsonb_build_array(n), 'happy'
  FROM generate_series(3, 18) AS n;
CREATE TABLE {REPLICA_SCHEMA}.by_uuid (id character varying, updated_at timestamp without time zone, note character varying);
INSERT INTO {REPLICA_SCHEMA}.by_uuid VALUES
    ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2026-07-22 12:00:00', 'one'),
    ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', '2026-07-22 12:30:00', NULL),
    ('00000000-0000-4000-8000-000000000003', '2026-07-22 12:45:00', 'three');
"#,
        columns = columns.join(", "),
        names =
            MATRIX.iter().filter(|row| row.replica_type.is_some()).map(|row| row.column).collect::<Vec<_>>().join(", "),
    )
}

/// The README's table rows for the matrix, in order.
fn readme_rows() -> Vec<String> {
    MATRIX
        .iter()
        .map(|row| {
            let replica = row.replica_type.map_or("— (the tap skips the type)".to_owned(), |t| format!("`{t}`"));
            let outcome = match row.outcome {
                Outcome::Compares(how) => format!("compared: {how}"),
                Outcome::Error(why) => format!("**ERROR**: {why}"),
                Outcome::NotReplicated => {
                    "— (no replica column: `audit` refuses unless it is left out with `--exclude-columns`, \
                     `row_diff` names it missing)"
                        .to_owned()
                }
            };
            format!("| `{}` | {replica} | {outcome} |", row.source_type)
        })
        .collect()
}

/// The columns `row_diff` and `audit` compare.
fn compared() -> Vec<&'static str> {
    MATRIX.iter().filter(|row| matches!(row.outcome, Outcome::Compares(_))).map(|row| row.column).collect()
}

fn matrix_definition(context: &Context, columns: &[&str], empty_string_as_null: bool) -> CheckDefinition {
    let mut definition = items_definition(context);
    definition.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", "matrix");
    definition.source_table = "matrix".into();
    definition.target_schema = REPLICA_SCHEMA.into();
    definition.target_table = "matrix".into();
    definition.source_key_column = "id".into();
    definition.target_key_column = "id".into();
    definition.source_compare_columns = columns.iter().map(|name| name.to_string()).collect();
    definition.target_compare_columns = definition.source_compare_columns.clone();
    definition.checks = vec![CheckType::RowCount];
    definition.extensions.row_diff = Some(RowDiffSettings::default().with_empty_string_as_null(empty_string_as_null));
    definition
}

fn audit_options(context: &Context, table: &str, columns: Option<&[&str]>, empty_string_as_null: bool) -> AuditOptions {
    let password = shared_cluster().superuser_password();
    let mut options = AuditOptions::new(
        context.source.url(SUPERUSER, password),
        context.replica.url(SUPERUSER, password),
        format!("public.{table}").parse().unwrap(),
    );
    options.replica_table = Some(format!("{REPLICA_SCHEMA}.{table}").parse().unwrap());
    options.columns = columns.map(|columns| columns.iter().map(|name| name.to_string()).collect());
    options.cutover_ready = true;
    options.empty_string_as_null = empty_string_as_null;
    options
}

fn audit(options: &AuditOptions) -> Result<datadiff_audit::AuditReport, datadiff_audit::Error> {
    datadiff_audit::audit(options, &datadiff_access::Environment::from_pairs([("USER", "nobody")]), &mut |_| {})
}

/// The audit's examples as `(key, kind, fields)`.
fn examples(report: &datadiff_audit::AuditReport) -> Vec<Json> {
    serde_json::to_value(&report.examples).unwrap().as_array().unwrap().clone()
}

/// What the replica's tables look like: `(table, column, data_type)` of `REPLICA_SCHEMA`.
fn replica_types(context: &Context, table: &str) -> Vec<(String, String)> {
    context
        .replica
        .client()
        .unwrap()
        .query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
              WHERE table_schema = $1 AND table_name = $2 ORDER BY column_name",
            &[&REPLICA_SCHEMA, &table],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// Every assertion of the matrix on a replica of [`SOURCE_SQL`] in `REPLICA_SCHEMA`.
fn assert_matrix(context: &Context) {
    // The replica's types are the matrix's.
    let mut expected: Vec<(String, String)> = MATRIX
        .iter()
        .filter_map(|row| row.replica_type.map(|t| (row.column.to_owned(), t.to_owned())))
        .chain([
            ("id".to_owned(), "bigint".to_owned()),
            ("updated_at".to_owned(), "timestamp without time zone".to_owned()),
        ])
        .collect();
    expected.sort();
    let observed = replica_types(context, "matrix");
    let observed: Vec<(String, String)> = observed.into_iter().filter(|(name, _)| !name.starts_with("_sdc_")).collect();
    assert_eq!(observed, expected, "what target-postgres creates is the README's matrix");

    let columns = compared();
    // Exact by default: the target's '' → NULL is a change in row 2's text and varchar.
    let run_id = context.run(&matrix_definition(context, &columns, false)).run_id.unwrap();
    assert_eq!(
        differences(context, run_id),
        vec![difference(1, "CHANGED", json!({"id": "2"}), &["c_text", "c_varchar"])]
    );
    let report = audit(&audit_options(context, "matrix", Some(&columns), false)).unwrap();
    assert_eq!((report.status, report.changed, report.matched), (Status::Block, 1, 17));

    // With empty_string_as_null every compared column PASSes.
    let summary = context.run(&matrix_definition(context, &columns, true));
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "18", "missing": "0", "extra": "0", "changed": "0"}),
        "{rows:?}"
    );
    assert_eq!(summary.status, SummaryStatus::Pass);
    let report = audit(&audit_options(context, "matrix", Some(&columns), true)).unwrap();
    assert_eq!((report.status, report.matched), (Status::Pass, 18), "{}", report.to_json());

    assert_soft_deletes(context, &columns);

    // Each ERROR row is an error naming the column and both types; row_count still runs.
    for row in MATRIX.iter().filter(|row| matches!(row.outcome, Outcome::Error(_))) {
        let run_id = context.run(&matrix_definition(context, &[row.column], true)).run_id.unwrap();
        let rows = context.result_rows(run_id);
        let error = result(&rows, "row_diff").error.clone().unwrap();
        let replica_type = row.replica_type.unwrap();
        let source_type = row.source_type;
        assert!(error.contains(&format!("column {} ", row.column)), "{error}");
        assert!(error.contains(&format!("({source_type} on the source, {replica_type} on the target)")), "{error}");
        assert_eq!(result(&rows, "row_count").status, "PASS");
        let error = audit(&audit_options(context, "matrix", Some(&[row.column]), true)).unwrap_err().to_string();
        assert!(error.contains(&format!("({source_type} on the source, {replica_type} on the replica)")), "{error}");
    }
    // audit without --columns compares every source column: the columns the tap skipped stop
    // it, named, before any ERROR column.
    let error = audit(&audit_options(context, "matrix", None, true)).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "2 source columns of public.matrix have no column in {REPLICA_SCHEMA}.matrix on the replica database \
             (c_bytea: tried c_bytea; c_interval: tried c_interval)"
        )),
        "{error}"
    );
    // A column the tap skipped is missing on the replica.
    let run_id = context.run(&matrix_definition(context, &["c_bytea"], true)).run_id.unwrap();
    let error = result(&context.result_rows(run_id), "row_diff").error.clone().unwrap();
    assert!(error.contains("c_bytea"), "{error}");

    // by_uuid: a uuid key stored as character varying is matched by its text.
    let mut by_uuid = matrix_definition(context, &["note"], true);
    by_uuid.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", "by_uuid");
    by_uuid.source_table = "by_uuid".into();
    by_uuid.target_table = "by_uuid".into();
    let summary = context.run(&by_uuid);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let report = audit(&audit_options(context, "by_uuid", None, true)).unwrap();
    assert_eq!((report.status, report.matched), (Status::Pass, 3), "{}", report.to_json());

    // Plant one difference per compared column, column k in row k + 2, and changes the
    // source cannot tell apart elsewhere (another uuid case, more char padding): exactly the
    // planted keys and columns FAIL.
    let plants = [
        ("c_smallint", "c_smallint + 1"),
        ("c_integer", "c_integer + 1"),
        ("c_bigint", "c_bigint + 1"),
        ("c_numeric_p_s", "c_numeric_p_s + 0.01"),
        ("c_numeric", "-c_numeric"),
        ("c_real", "c_real + 1"),
        ("c_double", "c_double + 1e-9"),
        ("c_boolean", "NOT c_boolean"),
        ("c_text", "c_text || ' '"),
        ("c_varchar", "upper(c_varchar)"),
        ("c_char", "' ' || c_char"),
        ("c_date", "c_date + interval '1 second'"),
        ("c_time", "c_time + interval '1 microsecond'"),
        ("c_timestamp", "c_timestamp - interval '1 microsecond'"),
        ("c_timestamptz", "c_timestamptz + interval '1 hour'"),
        ("c_uuid", "'not a uuid'"),
        ("c_enum", "'sad'"),
    ];
    assert_eq!(plants.map(|(column, _)| column).to_vec(), columns, "one plant per compared column");
    let mut sql = String::new();
    for (k, (column, value)) in plants.iter().enumerate() {
        sql.push_str(&format!("UPDATE {REPLICA_SCHEMA}.matrix SET {column} = {value} WHERE id = {};\n", k + 2));
    }
    sql.push_str(&format!(
        "UPDATE {REPLICA_SCHEMA}.matrix SET c_uuid = upper(c_uuid), c_char = c_char || '   ' WHERE id = 1;\n\
         DELETE FROM {REPLICA_SCHEMA}.by_uuid WHERE id = 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12';\n\
         UPDATE {REPLICA_SCHEMA}.by_uuid SET note = 'changed' WHERE id = '00000000-0000-4000-8000-000000000003';"
    ));
    context.replica.client().unwrap().batch_execute(&sql).unwrap();

    let mut planted = matrix_definition(context, &columns, true);
    planted.extensions.row_diff = Some(RowDiffSettings::new(50).unwrap().with_empty_string_as_null(true));
    let summary = context.run(&planted);
    assert_eq!(summary.status, SummaryStatus::Fail);
    let expected: Vec<_> = plants
        .iter()
        .enumerate()
        .map(|(k, (column, _))| difference(k as i32 + 1, "CHANGED", json!({"id": (k + 2).to_string()}), &[column]))
        .collect();
    assert_eq!(differences(context, summary.run_id.unwrap()), expected);
    let report = audit(&audit_options(context, "matrix", Some(&columns), true)).unwrap();
    assert_eq!((report.status, report.changed, report.matched), (Status::Block, 17, 1));
    let audit_expected: Vec<Json> = plants
        .iter()
        .enumerate()
        .map(|(k, (column, _))| json!({"id": k + 2, "kind": "CHANGED", "fields": [column]}))
        .collect();
    assert_eq!(examples(&report), audit_expected);

    let mut by_uuid_planted = by_uuid.clone();
    by_uuid_planted.extensions.row_diff = Some(RowDiffSettings::new(7).unwrap().with_empty_string_as_null(true));
    let summary = context.run(&by_uuid_planted);
    assert_eq!(summary.status, SummaryStatus::Fail);
    assert_eq!(
        differences(context, summary.run_id.unwrap()),
        vec![
            difference(1, "CHANGED", json!({"id": "00000000-0000-4000-8000-000000000003"}), &["note"]),
            difference(2, "MISSING_IN_TARGET", json!({"id": "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"}), &[]),
        ]
    );
    let report = audit(&audit_options(context, "by_uuid", None, true)).unwrap();
    assert_eq!((report.missing, report.changed), (1, 1), "{}", report.to_json());
    assert_eq!(
        examples(&report),
        vec![
            json!({"id": "00000000-0000-4000-8000-000000000003", "kind": "CHANGED", "fields": ["note"]}),
            json!({"id": "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12", "kind": "MISSING_IN_REPLICA"}),
        ]
    );
}

/// A row deleted at the source and kept on the replica as a soft delete (`_sdc_deleted_at`
/// set, as target-postgres keeps a replicated delete): `row_diff` with
/// `exclude_soft_deleted` and `audit --deleted-column _sdc_deleted_at` PASS (the tombstone
/// counted), and name the right key when a live row differs. The replica is restored after.
fn assert_soft_deletes(context: &Context, columns: &[&str]) {
    let mut replica = context.replica.client().unwrap();
    replica
        .batch_execute(&format!(
            "INSERT INTO {REPLICA_SCHEMA}.matrix (id, updated_at, c_text, _sdc_deleted_at) \
             VALUES (99, '2026-07-22 12:30:00', 'gone', '2026-07-22T12:31:00.000000+00:00')"
        ))
        .unwrap();
    // Each run is a revision of its own (a slot is attempted once per revision): the example
    // limit tells them apart.
    let revision = |max_examples: u32, exclude_soft_deleted: bool| {
        let mut definition = matrix_definition(context, columns, true);
        definition.extensions.row_diff =
            Some(RowDiffSettings::new(max_examples).unwrap().with_empty_string_as_null(true));
        definition.extensions.exclude_soft_deleted = exclude_soft_deleted;
        definition
    };
    let with_tombstones = |deleted: bool| {
        let mut options = audit_options(context, "matrix", Some(columns), true);
        options.deleted_column = deleted.then(|| "_sdc_deleted_at".to_owned());
        options
    };

    // Counted as data, the soft-deleted row is extra.
    let extra = context.run(&revision(41, false));
    assert_eq!(
        differences(context, extra.run_id.unwrap()),
        vec![difference(1, "EXTRA_IN_TARGET", json!({"id": "99"}), &[])]
    );
    let report = audit(&with_tombstones(false)).unwrap();
    assert_eq!((report.status, report.extra), (Status::Block, 1));

    // Left out as a soft delete, the replica equals its source.
    let summary = context.run(&revision(42, true));
    assert_eq!(summary.status, SummaryStatus::Pass, "{:?}", summary.reason);
    let report = audit(&with_tombstones(true)).unwrap();
    assert_eq!((report.status, report.matched, report.tombstones), (Status::Pass, 18, 1), "{}", report.to_json());

    // A live row that differs is named, the tombstone still left out.
    replica.batch_execute(&format!("UPDATE {REPLICA_SCHEMA}.matrix SET c_bigint = c_bigint + 1 WHERE id = 1")).unwrap();
    let summary = context.run(&revision(43, true));
    assert_eq!(summary.status, SummaryStatus::Fail);
    assert_eq!(
        differences(context, summary.run_id.unwrap()),
        vec![difference(1, "CHANGED", json!({"id": "1"}), &["c_bigint"])]
    );
    let report = audit(&with_tombstones(true)).unwrap();
    assert_eq!(examples(&report), vec![json!({"id": 1, "kind": "CHANGED", "fields": ["c_bigint"]})]);
    assert_eq!((report.status, report.tombstones), (Status::Block, 1));

    replica
        .batch_execute(&format!(
            "UPDATE {REPLICA_SCHEMA}.matrix SET c_bigint = c_bigint - 1 WHERE id = 1; \
             DELETE FROM {REPLICA_SCHEMA}.matrix WHERE id = 99"
        ))
        .unwrap();
}

#[test]
fn the_readme_table_is_the_type_matrix() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let start = "<!-- type-matrix: rows asserted by crates/runner/tests/it/pipeline.rs -->";
    let section = readme.split_once(start).expect("the README's type-matrix marker").1;
    let table: Vec<&str> =
        section.lines().skip_while(|line| !line.starts_with('|')).take_while(|line| line.starts_with('|')).collect();
    assert_eq!(table.len(), MATRIX.len() + 2, "a header, a rule and one row per type:\n{}", table.join("\n"));
    assert_eq!(table[2..].to_vec(), readme_rows(), "the README's matrix rows, in order");
}

#[test]
fn a_hand_made_target_postgres_replica_compares_as_the_matrix_says() {
    let context = Context::new(SOURCE_SQL, &hand_made_replica_sql());
    assert_matrix(&context);
}

#[test]
fn a_real_pipelinewise_replica_compares_as_the_matrix_says() {
    let context = Context::new(SOURCE_SQL, "");
    let venvs = match connectors() {
        Ok(venvs) => venvs,
        Err(Skip(reason)) => {
            // Straight to the process's stderr, past the test harness's capture: a skip is
            // always seen.
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "SKIPPED the real PipelineWise pipeline: {reason}");
            return;
        }
    };
    replicate(&context, &venvs);
    assert_matrix(&context);
}

/// Why the pipeline part cannot run here.
struct Skip(String);

/// The two virtual environments' `bin` directories: tap, target.
struct Venvs {
    tap: PathBuf,
    target: PathBuf,
}

/// Installs (or finds cached) the tap and the target, each in a virtual environment of its
/// own under Cargo's test temporary directory. A missing python3 or venv module, or an
/// unreachable PyPI, is a [`Skip`]; any other failure panics.
fn connectors() -> Result<Venvs, Skip> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pipelinewise");
    let install = |name: &str, package: &str| -> Result<PathBuf, Skip> {
        let dir = root.join(package.replace("==", "-"));
        let ready = dir.join("installed");
        if ready.exists() {
            return Ok(dir.join("bin"));
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&root).unwrap();
        let venv = Command::new("python3").args(["-m", "venv"]).arg(&dir).output();
        match venv {
            Err(error) => return Err(Skip(format!("python3 cannot be run ({error})"))),
            Ok(output) if !output.status.success() => {
                return Err(Skip(format!(
                    "python3 -m venv failed: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                )));
            }
            Ok(_) => {}
        }
        let output = Command::new(dir.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "--retries", "1", "--timeout", "20", package])
            .output()
            .unwrap();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let offline = [
                "NewConnectionError",
                "Temporary failure in name resolution",
                "Network is unreachable",
                "Connection refused",
                "ConnectTimeoutError",
                "ReadTimeoutError",
                "No matching distribution found",
            ];
            if offline.iter().any(|sign| stderr.contains(sign)) {
                return Err(Skip(format!("pip cannot reach PyPI to install {package}")));
            }
            panic!("pip install {package} for the {name} failed:\n{stderr}");
        }
        std::fs::write(&ready, package).unwrap();
        Ok(dir.join("bin"))
    };
    Ok(Venvs { tap: install("tap", TAP)?, target: install("target", TARGET)? })
}

/// Runs `tap-postgres` (discovery, then FULL_TABLE of `matrix` and `by_uuid`) into
/// `target-postgres` writing into the replica's `REPLICA_SCHEMA`.
fn replicate(context: &Context, venvs: &Venvs) {
    let cluster = shared_cluster();
    let work = tempfile::tempdir().unwrap();
    let connection = |database: &datadiff_testkit::Database<'_>| {
        json!({
            "host": cluster.host(),
            "port": cluster.port(),
            "user": SUPERUSER,
            "password": cluster.superuser_password(),
            "dbname": database.name(),
        })
    };
    let mut tap_config = connection(&context.source);
    tap_config["filter_schemas"] = json!("public");
    let mut target_config = connection(&context.replica);
    target_config["default_target_schema"] = json!(REPLICA_SCHEMA);
    // The `_sdc_*` columns, `_sdc_deleted_at` among them, as PipelineWise configures it.
    target_config["add_metadata_columns"] = json!(true);
    let tap_path = work.path().join("tap.json");
    let target_path = work.path().join("target.json");
    std::fs::write(&tap_path, tap_config.to_string()).unwrap();
    std::fs::write(&target_path, target_config.to_string()).unwrap();

    let discovered =
        Command::new(venvs.tap.join("tap-postgres")).arg("--config").arg(&tap_path).arg("--discover").output().unwrap();
    assert!(discovered.status.success(), "discovery failed:\n{}", String::from_utf8_lossy(&discovered.stderr));
    let mut catalog: Json = serde_json::from_slice(&discovered.stdout).unwrap();
    for stream in catalog["streams"].as_array_mut().unwrap() {
        let selected = ["matrix", "by_uuid"].contains(&stream["table_name"].as_str().unwrap_or_default());
        for entry in stream["metadata"].as_array_mut().unwrap() {
            let is_table = entry["breadcrumb"].as_array().is_some_and(Vec::is_empty);
            let metadata = &mut entry["metadata"];
            metadata["selected"] = json!(selected);
            if is_table {
                metadata["replication-method"] = json!("FULL_TABLE");
            }
        }
    }
    let catalog_path = work.path().join("catalog.json");
    std::fs::write(&catalog_path, catalog.to_string()).unwrap();

    let tap_log = std::fs::File::create(work.path().join("tap.log")).unwrap();
    let mut tap = Command::new(venvs.tap.join("tap-postgres"))
        .arg("--config")
        .arg(&tap_path)
        .arg("--properties")
        .arg(&catalog_path)
        .stdout(Stdio::piped())
        .stderr(tap_log)
        .spawn()
        .unwrap();
    let target = Command::new(venvs.target.join("target-postgres"))
        .arg("--config")
        .arg(&target_path)
        .stdin(tap.stdout.take().unwrap())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let tap_status = tap.wait().unwrap();
    let log = |name: &str| std::fs::read_to_string(work.path().join(name)).unwrap_or_default();
    assert!(tap_status.success(), "tap-postgres failed:\n{}", log("tap.log"));
    assert!(target.status.success(), "target-postgres failed:\n{}", String::from_utf8_lossy(&target.stderr));
}
