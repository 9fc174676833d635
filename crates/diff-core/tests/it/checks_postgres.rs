//! The generated PostgreSQL text of the aggregate checks, run on a real server: the config
//! note's checksum vector, the rules of the window, scales, NULL markers, soft deletes, and
//! identifier quoting.
//!
//! Each test reads the tables' catalog rows the way the runner does, plans the attempt with
//! [`AggregatePlan`], runs the SQL it hands out and judges the rows read back.

use chrono::{DateTime, NaiveDateTime, Utc};
use datadiff_diff_core::{
    Side,
    attempt::{HistoricalStart, RunStatus},
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
    merge::{Numeric, Value},
    plan::{AggregatePlan, CatalogColumn, TableColumns, quote_ident},
};
use datadiff_testkit::shared_cluster;
use postgres::Client;
use postgres::types::ToSql;
use proptest::prelude::*;
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A superuser connection to a fresh database, its session in UTC as the runner's are.
fn fresh() -> Result<(datadiff_testkit::Database<'static>, Client), Box<dyn std::error::Error>> {
    let database = shared_cluster().fresh_database()?;
    let mut client = database.client()?;
    client.batch_execute("SET TimeZone = 'UTC'")?;
    Ok((database, client))
}

/// One table's columns from `information_schema.columns`.
pub(crate) fn catalog(client: &mut Client, schema: &str, table: &str) -> Result<TableColumns, postgres::Error> {
    let rows = client.query(
        "SELECT column_name::text, data_type::text, udt_name::text, numeric_precision::int, \
                numeric_scale::int, datetime_precision::int, is_nullable::text \
           FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
        &[&schema, &table],
    )?;
    let columns = rows
        .iter()
        .map(|row| CatalogColumn {
            name: row.get(0),
            data_type: row.get(1),
            udt_name: row.get(2),
            numeric_precision: row.get(3),
            numeric_scale: row.get(4),
            datetime_precision: row.get(5),
            nullable: row.get::<_, String>(6) == "YES",
        })
        .collect();
    Ok(TableColumns::new(schema, table, columns))
}

fn definition(target_schema: &str, checks: &[CheckType], compare: &[&str]) -> CheckDefinition {
    CheckDefinition {
        full_check_name: "postgres/tap/public/vector".into(),
        target_id: "postgres".into(),
        tap_id: "tap".into(),
        source_type: SourceType::TapPostgres,
        target_type: TargetType::TargetPostgres,
        source_database: "source".into(),
        target_database: "target".into(),
        source_schema: "public".into(),
        source_table: "vector".into(),
        target_schema: target_schema.into(),
        target_table: "vector".into(),
        source_key_column: "id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: compare.iter().map(|name| name.to_string()).collect(),
        target_compare_columns: compare.iter().map(|name| name.to_string()).collect(),
        checks: checks.to_vec(),
        frequency: "0 * * * *".into(),
        window_start_seconds: 86_400,
        window_end_seconds: 0,
        statement_timeout_seconds: 60,
        initial_full_scan: false,
        extensions: Extensions::default(),
    }
}

fn plan(client: &mut Client, definition: &CheckDefinition) -> Result<AggregatePlan, Box<dyn std::error::Error>> {
    let source = catalog(client, &definition.source_schema, &definition.source_table)?;
    let target = catalog(client, &definition.target_schema, &definition.target_table)?;
    Ok(AggregatePlan::new(definition, &source, &target)?)
}

pub(crate) fn instant(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc)).unwrap_or_default()
}

/// Runs one side's aggregate over `[start, end)` and decodes its row as the runner would: every
/// metric read as text (the test's decoder), counts and sums as numerics, keys as integers.
pub(crate) fn aggregate(
    client: &mut Client,
    plan: &AggregatePlan,
    side: Side,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let columns =
        plan.metrics().iter().map(|check| format!("q.{}::text", quote_ident(check.as_str()).unwrap_or_default()));
    let sql = format!("SELECT {} FROM ({}) AS q", columns.collect::<Vec<_>>().join(", "), plan.metric_sql(side));
    let timestamp = match side {
        Side::Source => plan.columns().source_timestamp(),
        Side::Target => plan.columns().target_timestamp(),
    };
    let (naive_start, naive_end) = (start.naive_utc(), end.naive_utc());
    let params: [&(dyn ToSql + Sync); 2] =
        if timestamp.is_naive_timestamp() { [&naive_start, &naive_end] } else { [&start, &end] };
    let row = client.query_one(&sql, &params)?;
    let mut values = Vec::new();
    for index in 0..plan.metrics().len() {
        let text: Option<String> = row.get(index);
        values.push(match text {
            None => Value::Null,
            Some(text) => Value::Numeric(Numeric::parse(&text)?),
        });
    }
    Ok(values)
}

const ALL_METRICS: [CheckType; 8] = [
    CheckType::SchemaCompatibility,
    CheckType::RowCount,
    CheckType::DistinctKeyCount,
    CheckType::NullKeyCount,
    CheckType::DuplicateKeyCount,
    CheckType::MinKey,
    CheckType::MaxKey,
    CheckType::RowChecksum,
];

/// The config note's vector: (id bigint, updated_at timestamp, status text) rows
/// `(1, '2026-07-01 00:00:00', 'A')` and `(2, '2026-07-01 00:30:00', NULL)`.
const VECTOR: &str = "CREATE TABLE public.vector (id bigint, updated_at timestamp, status text);
     INSERT INTO public.vector VALUES (1, '2026-07-01 00:00:00', 'A'), (2, '2026-07-01 00:30:00', NULL);";

#[test]
fn checksum_vector_reproduces_on_postgresql() -> TestResult {
    let (_database, mut client) = fresh()?;
    // The replica: a timestamptz and a varchar where the source has timestamp and text, a NULL
    // timestamp that no window contains, and the same two rows.
    client.batch_execute(&format!(
        "{VECTOR}
         CREATE SCHEMA replica;
         CREATE TABLE replica.vector (id bigint, updated_at timestamptz, status varchar(10));
         INSERT INTO replica.vector VALUES (1, '2026-07-01 00:00:00+00', 'A'), (2, '2026-07-01 00:30:00+00', NULL),
                                           (3, NULL, 'late');"
    ))?;
    let definition = definition("replica", &ALL_METRICS, &["status"]);
    let plan = plan(&mut client, &definition)?;
    let (start, end) = (instant("2026-07-01T00:00:00Z"), instant("2026-07-02T00:00:00Z"));
    let source = aggregate(&mut client, &plan, Side::Source, start, end)?;
    let target = aggregate(&mut client, &plan, Side::Target, start, end)?;
    let outcome = plan.outcome(plan.compare(&source, &target, 0.01, 0.02)?);

    let checksum = outcome.results.iter().find(|r| r.check_type.as_str() == "row_checksum").ok_or("no checksum")?;
    assert_eq!(checksum.source_value, json!("181442033815354"), "config note §2.4 test vector");
    assert_eq!(checksum.target_value, json!("181442033815354"), "timestamptz in UTC hashes like timestamp");
    let values: Vec<_> =
        outcome.results.iter().map(|r| (r.check_type.as_str(), r.source_value.clone(), r.status.as_str())).collect();
    assert_eq!(
        values,
        [
            ("schema_compatibility", outcome.results[0].source_value.clone(), "PASS"),
            ("row_count", json!("2"), "PASS"),
            ("distinct_key_count", json!("2"), "PASS"),
            ("null_key_count", json!("0"), "PASS"),
            ("duplicate_key_count", json!("0"), "PASS"),
            ("min_key", json!("1"), "PASS"),
            ("max_key", json!("2"), "PASS"),
            ("row_checksum", json!("181442033815354"), "PASS"),
        ]
    );
    assert_eq!((outcome.status, outcome.error), (RunStatus::Pass, None));
    Ok(())
}

#[test]
fn a_changed_value_fails_only_the_checksum() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(&format!(
        "{VECTOR}
         CREATE SCHEMA replica;
         CREATE TABLE replica.vector AS SELECT * FROM public.vector;
         UPDATE replica.vector SET status = '' WHERE id = 2;"
    ))?;
    let plan = plan(&mut client, &definition("replica", &ALL_METRICS, &["status"]))?;
    let (start, end) = (instant("2026-07-01T00:00:00Z"), instant("2026-07-02T00:00:00Z"));
    let source = aggregate(&mut client, &plan, Side::Source, start, end)?;
    let target = aggregate(&mut client, &plan, Side::Target, start, end)?;
    let outcome = plan.outcome(plan.compare(&source, &target, 0.0, 0.0)?);
    assert_eq!(outcome.status, RunStatus::Fail);
    assert_eq!(outcome.error.as_deref(), Some("row_checksum FAIL"), "NULL and '' hash differently");
    Ok(())
}

#[test]
fn the_window_is_half_open_and_excludes_null_timestamps() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.vector (id bigint, updated_at timestamptz);
         INSERT INTO public.vector VALUES (1, '2026-07-01 00:00:00+00'), (2, '2026-07-01 00:59:59.999999+00'),
                                          (3, '2026-07-01 01:00:00+00'), (NULL, '2026-07-01 00:10:00+00'),
                                          (1, '2026-07-01 00:20:00+00'), (4, NULL);",
    )?;
    let checks = [
        CheckType::RowCount,
        CheckType::DistinctKeyCount,
        CheckType::NullKeyCount,
        CheckType::DuplicateKeyCount,
        CheckType::MinKey,
        CheckType::MaxKey,
    ];
    let plan = plan(&mut client, &definition("public", &checks, &[]))?;
    let values =
        aggregate(&mut client, &plan, Side::Source, instant("2026-07-01T00:00:00Z"), instant("2026-07-01T01:00:00Z"))?;
    let numeric = |text: &str| Numeric::parse(text).map(Value::Numeric);
    assert_eq!(values, [numeric("4")?, numeric("2")?, numeric("1")?, numeric("1")?, numeric("1")?, numeric("2")?]);
    let outcome = plan.outcome(plan.compare(&values, &values, 0.0, 0.0)?);
    assert_eq!(outcome.error.as_deref(), Some("null_key_count FAIL; duplicate_key_count FAIL"));

    // An empty window: counts are 0 and MIN/MAX are NULL, which pass against each other.
    let empty =
        aggregate(&mut client, &plan, Side::Source, instant("2027-01-01T00:00:00Z"), instant("2027-01-02T00:00:00Z"))?;
    let outcome = plan.outcome(plan.compare(&empty, &empty, 0.0, 0.0)?);
    assert_eq!(outcome.status, RunStatus::Pass);
    assert_eq!(outcome.results[4].source_value, serde_json::Value::Null);
    assert_eq!(outcome.results[0].source_value, json!("0"));
    Ok(())
}

#[test]
fn checksum_scale_keeps_the_wider_precision_and_boolean_null_differs_from_false() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.vector (id bigint, updated_at timestamptz, amount numeric(12, 4), ok boolean);
         INSERT INTO public.vector VALUES (1, '2026-07-01 00:00:00+00', 1.2345, NULL);
         CREATE SCHEMA rounded;
         CREATE TABLE rounded.vector (id bigint, updated_at timestamptz, amount numeric(12, 2), ok boolean);
         INSERT INTO rounded.vector VALUES (1, '2026-07-01 00:00:00+00', 1.23, NULL);
         CREATE SCHEMA falsy;
         CREATE TABLE falsy.vector (id bigint, updated_at timestamptz, amount numeric(12, 4), ok boolean);
         INSERT INTO falsy.vector VALUES (1, '2026-07-01 00:00:00+00', 1.2345, false);
         CREATE SCHEMA same;
         CREATE TABLE same.vector AS SELECT * FROM public.vector;",
    )?;
    let (start, end) = (instant("2026-07-01T00:00:00Z"), instant("2026-07-02T00:00:00Z"));
    let mut checksum_status = |target: &str| -> Result<RunStatus, Box<dyn std::error::Error>> {
        let plan = plan(&mut client, &definition(target, &[CheckType::RowChecksum], &["amount", "ok"]))?;
        let source = aggregate(&mut client, &plan, Side::Source, start, end)?;
        let target = aggregate(&mut client, &plan, Side::Target, start, end)?;
        Ok(plan.outcome(plan.compare(&source, &target, 0.0, 0.0)?).status)
    };
    assert_eq!(checksum_status("same")?, RunStatus::Pass);
    assert_eq!(checksum_status("rounded")?, RunStatus::Fail, "1.2345 against 1.23 at scale 4");
    assert_eq!(checksum_status("falsy")?, RunStatus::Fail, "NULL against false");
    Ok(())
}

#[test]
fn soft_deleted_target_rows_are_left_out() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(&format!(
        "{VECTOR}
         CREATE SCHEMA replica;
         CREATE TABLE replica.vector (id bigint, updated_at timestamp, status text, _sdc_deleted_at varchar);
         INSERT INTO replica.vector VALUES (1, '2026-07-01 00:00:00', 'A', NULL), (2, '2026-07-01 00:30:00', NULL, NULL),
                                           (9, '2026-06-01 00:00:00', 'gone', '2026-07-01T02:00:00Z'),
                                           (7, '2026-07-01 00:40:00', 'gone', '2026-07-01T02:00:00Z');"
    ))?;
    let mut soft = definition("replica", &[CheckType::RowCount, CheckType::RowChecksum], &["status"]);
    let (start, end) = (instant("2026-07-01T00:00:00Z"), instant("2026-07-02T00:00:00Z"));

    let plain = plan(&mut client, &soft)?;
    let source = aggregate(&mut client, &plain, Side::Source, start, end)?;
    let target = aggregate(&mut client, &plain, Side::Target, start, end)?;
    let outcome = plain.outcome(plain.compare(&source, &target, 0.0, 0.0)?);
    assert_eq!(outcome.error.as_deref(), Some("row_count FAIL; row_checksum FAIL"), "upstream counts soft deletes");

    soft.extensions.exclude_soft_deleted = true;
    let excluding = plan(&mut client, &soft)?;
    let source = aggregate(&mut client, &excluding, Side::Source, start, end)?;
    let target = aggregate(&mut client, &excluding, Side::Target, start, end)?;
    let outcome = excluding.outcome(excluding.compare(&source, &target, 0.0, 0.0)?);
    assert_eq!((outcome.status, outcome.error), (RunStatus::Pass, None));
    assert_eq!(outcome.results[1].target_value, json!("181442033815354"));

    // The historical start ignores soft-deleted target rows too.
    let cutoff = instant("2026-07-02T00:00:00Z");
    let source_minimum: Option<NaiveDateTime> =
        client.query_one(excluding.minimum_sql(Side::Source), &[&cutoff.naive_utc()])?.get(0);
    let target_minimum: Option<NaiveDateTime> =
        client.query_one(excluding.minimum_sql(Side::Target), &[&cutoff.naive_utc()])?.get(0);
    let start = excluding.historical_start(
        source_minimum.map(|at| at.and_utc()),
        target_minimum.map(|at| at.and_utc()),
        cutoff,
    );
    assert_eq!(start, HistoricalStart::Resolved(instant("2026-07-01T00:00:00Z")));
    Ok(())
}

#[test]
fn historical_minimum_is_the_later_side_and_empty_history_defers() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.vector (id bigint, updated_at timestamptz);
         INSERT INTO public.vector VALUES (1, '2026-06-01 10:00:00+00'), (2, NULL), (3, '2026-08-01 00:00:00+00');
         CREATE SCHEMA replica;
         CREATE TABLE replica.vector (id bigint, updated_at timestamp);
         INSERT INTO replica.vector VALUES (1, '2026-06-02 11:00:00'), (3, '2026-08-01 00:00:00');",
    )?;
    let plan = plan(&mut client, &definition("replica", &[CheckType::RowCount], &[]))?;
    let minimum = |client: &mut Client, cutoff: DateTime<Utc>| -> Result<_, postgres::Error> {
        let source: Option<DateTime<Utc>> = client.query_one(plan.minimum_sql(Side::Source), &[&cutoff])?.get(0);
        let target: Option<NaiveDateTime> =
            client.query_one(plan.minimum_sql(Side::Target), &[&cutoff.naive_utc()])?.get(0);
        Ok((source, target.map(|at| at.and_utc())))
    };
    let cutoff = instant("2026-07-01T00:00:00Z");
    let (source, target) = minimum(&mut client, cutoff)?;
    assert_eq!(
        plan.historical_start(source, target, cutoff),
        HistoricalStart::Resolved(instant("2026-06-02T11:00:00Z"))
    );

    let early = instant("2026-01-01T00:00:00Z");
    let (source, target) = minimum(&mut client, early)?;
    match plan.historical_start(source, target, early) {
        HistoricalStart::Stop(outcome) => {
            assert_eq!(outcome.status, RunStatus::Deferred);
            assert!(outcome.error.unwrap_or_default().ends_with("before the cutoff 2026-01-01T00:00:00+00:00"));
        }
        other => return Err(format!("expected a deferral, got {other:?}").into()),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// PostgreSQL reads every quoted name back as exactly the name (up to its 63-byte limit).
    #[test]
    fn quoted_identifiers_round_trip_through_postgresql(name in "[^\\x00]{1,20}") {
        prop_assume!(name.len() <= 63);
        let mut client = QUOTING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let statement = client.prepare(&format!("SELECT 1 AS {}", quote_ident(&name).unwrap_or_default())).unwrap();
        prop_assert_eq!(statement.columns()[0].name(), name.as_str());
    }
}

/// One connection for the quoting property (its cases are many and cheap).
static QUOTING: std::sync::LazyLock<std::sync::Mutex<Client>> = std::sync::LazyLock::new(|| {
    let cluster = shared_cluster();
    std::sync::Mutex::new(cluster.connect("postgres").unwrap_or_else(|error| panic!("connecting: {error}")))
});
