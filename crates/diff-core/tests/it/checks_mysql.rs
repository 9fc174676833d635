//! The MySQL forms run on a real MariaDB server beside the PostgreSQL forms on a real
//! PostgreSQL cluster, over the same rows: identical data gives identical values for every
//! metric, `row_checksum` included, for each type tap-mysql replicates that the checksum
//! supports; a planted difference fails the checksum of the window holding it. Also the
//! catalog, index and session statements of the module, on the real server.
//!
//! The MariaDB side is planned like the runner will plan it: its catalog read with
//! [`COLUMNS_QUERY`], the [`AggregatePlan`] built from both catalogs, the source query from
//! [`MetricQuery::mysql_sql`] with the plan's metrics and checksum columns (the same text [`AggregatePlan::metric_sql`] holds for a `tap-mysql` source), the target query from the
//! plan.

use chrono::{DateTime, Datelike, Timelike, Utc};
use datadiff_diff_core::mysql::{
    COLUMNS_QUERY, MySqlEngine, MySqlPlaceholders, StatisticsRow, VISIBILITY_PROBE_QUERY, VisibilityColumn,
    VisibilityProbe, bounded_count_sql, index_query, indexes_from_statistics, session_statements,
};
use datadiff_diff_core::{
    Side,
    attempt::RunStatus,
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
    merge::{Numeric, Value},
    plan::{AggregatePlan, CatalogColumn, TableColumns, TypeFamily},
};
use datadiff_testkit::{MariaDbDatabase, shared_cluster, shared_mariadb};
use mysql::prelude::Queryable;
use mysql::{Conn, Row};
use postgres::Client;
use serde_json::json;

use crate::checks_postgres::{aggregate, catalog, instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;
type Failure = Box<dyn std::error::Error>;

/// A fresh MariaDB database and a superuser session set up as a source session is: UTC, the
/// MariaDB statement timeout, a read-only transaction (the test's DDL runs on another
/// connection first).
fn fresh_source(ddl: &str) -> Result<(MariaDbDatabase<'static>, Conn), Failure> {
    let database = shared_mariadb().fresh_database()?;
    let mut setup = database.client()?;
    setup.query_drop(ddl)?;
    let mut conn = database.client()?;
    let engine = MySqlEngine::detect(None, shared_mariadb().version());
    for statement in session_statements(engine, 60) {
        conn.query_drop(statement)?;
    }
    Ok((database, conn))
}

/// A fresh PostgreSQL database holding the replica, its session in UTC.
fn fresh_target(ddl: &str) -> Result<(datadiff_testkit::Database<'static>, Client), Failure> {
    let database = shared_cluster().fresh_database()?;
    let mut client = database.client()?;
    client.batch_execute("SET TimeZone = 'UTC'")?;
    client.batch_execute(ddl)?;
    Ok((database, client))
}

/// A MySQL value as text: integers, decimals and strings as the server wrote them.
fn text(value: &mysql::Value) -> Result<Option<String>, Failure> {
    Ok(match value {
        mysql::Value::NULL => None,
        mysql::Value::Int(number) => Some(number.to_string()),
        mysql::Value::UInt(number) => Some(number.to_string()),
        mysql::Value::Bytes(bytes) => Some(String::from_utf8(bytes.clone())?),
        other => return Err(format!("unexpected value {other:?}").into()),
    })
}

fn number(row: &Row, index: usize) -> Result<Option<i32>, Failure> {
    let value = row.as_ref(index).ok_or("missing column")?;
    Ok(match text(value)? {
        None => None,
        Some(text) => Some(text.parse()?),
    })
}

fn string(row: &Row, index: usize) -> Result<String, Failure> {
    Ok(text(row.as_ref(index).ok_or("missing column")?)?.unwrap_or_default())
}

/// One table's columns, read with the module's catalog query.
fn mysql_catalog(conn: &mut Conn, schema: &str, table: &str) -> Result<TableColumns, Failure> {
    let rows: Vec<Row> = conn.exec(COLUMNS_QUERY, (schema, table))?;
    let columns = rows
        .iter()
        .map(|row| {
            Ok(CatalogColumn {
                name: string(row, 0)?,
                data_type: string(row, 1)?,
                udt_name: Some(string(row, 2)?),
                numeric_precision: number(row, 3)?,
                numeric_scale: number(row, 4)?,
                datetime_precision: number(row, 5)?,
                nullable: string(row, 7)? == "YES",
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    Ok(TableColumns::new(schema, table, columns))
}

fn definition(source_schema: &str, checks: &[CheckType], compare: &[&str]) -> CheckDefinition {
    CheckDefinition {
        full_check_name: "postgres/shop/shop/vector".into(),
        target_id: "postgres".into(),
        tap_id: "shop".into(),
        source_type: SourceType::TapMysql,
        target_type: TargetType::TargetPostgres,
        source_database: source_schema.into(),
        target_database: "target".into(),
        source_schema: source_schema.into(),
        source_table: "vector".into(),
        target_schema: "public".into(),
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

fn datetime(at: DateTime<Utc>) -> mysql::Value {
    let naive = at.naive_utc();
    mysql::Value::Date(
        u16::try_from(naive.year()).unwrap_or_default(),
        naive.month() as u8,
        naive.day() as u8,
        naive.hour() as u8,
        naive.minute() as u8,
        naive.second() as u8,
        naive.nanosecond() / 1000,
    )
}

/// The source's aggregate row over `[start, end)`, every metric read as a number.
fn mysql_aggregate(
    conn: &mut Conn,
    plan: &AggregatePlan,
    definition: &CheckDefinition,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<Value>, Failure> {
    let query = datadiff_diff_core::plan::MetricQuery {
        schema: &definition.source_schema,
        table: &definition.source_table,
        key_column: &plan.columns().source_key().name,
        timestamp_column: &plan.columns().source_timestamp().name,
        metrics: plan.metrics(),
        checksum: plan.checksum(),
        side: Side::Source,
        soft_delete_column: None,
    };
    let row: Row = conn
        .exec_first(query.mysql_sql(MySqlPlaceholders::Question)?, (datetime(start), datetime(end)))?
        .ok_or("no row")?;
    (0..plan.metrics().len())
        .map(|index| match text(row.as_ref(index).ok_or("missing column")?)? {
            None => Ok(Value::Null),
            Some(text) => Ok(Value::Numeric(Numeric::parse(&text)?)),
        })
        .collect()
}

/// Runs the planned checks over `[start, end)` on both servers and returns the outcome's
/// `(check, source value, target value, status)` and its run status.
#[allow(clippy::type_complexity)]
fn run(
    source: &mut Conn,
    target: &mut Client,
    definition: &CheckDefinition,
    start: &str,
    end: &str,
) -> Result<(Vec<(String, serde_json::Value, serde_json::Value, String)>, RunStatus), Failure> {
    let source_columns = mysql_catalog(source, &definition.source_schema, &definition.source_table)?;
    let target_columns = catalog(target, &definition.target_schema, &definition.target_table)?;
    let plan = AggregatePlan::new(definition, &source_columns, &target_columns)?;
    let (start, end) = (instant(start), instant(end));
    let source_row = mysql_aggregate(source, &plan, definition, start, end)?;
    let target_row = aggregate(target, &plan, Side::Target, start, end)?;
    let outcome = plan.outcome(plan.compare(&source_row, &target_row, 0.0, 0.0)?);
    let results = outcome
        .results
        .iter()
        .map(|result| {
            (
                result.check_type.as_str().to_owned(),
                result.source_value.clone(),
                result.target_value.clone(),
                result.status.as_str().to_owned(),
            )
        })
        .collect();
    Ok((results, outcome.status))
}

/// The config note's vector on MariaDB: (id bigint, updated_at datetime, status text).
#[test]
fn the_checksum_vector_reproduces_on_mariadb() -> TestResult {
    let (database, mut source) = fresh_source(
        "CREATE TABLE vector (id bigint, updated_at datetime, status text);
         INSERT INTO vector VALUES (1, '2026-07-01 00:00:00', 'A'), (2, '2026-07-01 00:30:00', NULL);",
    )?;
    let (_target_database, mut target) = fresh_target(
        "CREATE TABLE public.vector (id bigint, updated_at timestamp, status text);
         INSERT INTO public.vector VALUES (1, '2026-07-01 00:00:00', 'A'), (2, '2026-07-01 00:30:00', NULL);",
    )?;
    let definition = definition(database.name(), &[CheckType::RowChecksum], &["status"]);
    let (results, status) = run(&mut source, &mut target, &definition, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")?;
    assert_eq!(
        results,
        [("row_checksum".to_owned(), json!("181442033815354"), json!("181442033815354"), "PASS".to_owned())],
        "config note §2.4 test vector on both servers"
    );
    assert_eq!(status, RunStatus::Pass);
    Ok(())
}

const SOURCE_TABLE: &str = "CREATE TABLE vector (
        id bigint NOT NULL PRIMARY KEY, updated_at datetime(6) NULL, status varchar(20) NULL, note text NULL,
        code char(3) NULL, amount decimal(12, 2) NULL, active tinyint(1) NULL, day date NULL,
        at_time time(6) NULL, raw varbinary(16) NULL, created timestamp(6) NULL
    ) CHARACTER SET utf8mb4;
    INSERT INTO vector VALUES
        (1, '2026-07-01 00:00:00', 'A', 'plain', 'abc', 12.34, 1, '2026-07-01', '13:45:00.123456', X'00ff10',
            '2026-07-01 12:00:00.5'),
        (2, '2026-07-01 00:30:00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, '2026-07-01 01:15:30.25', 'é ünïcödé', 'emoji 😀 and ''quotes''', 'x', -0.5, 0, '1999-12-31',
            '00:00:00', X'', '1970-01-01 00:00:01'),
        (4, NULL, 'no timestamp', '', '', 0, 1, NULL, NULL, NULL, NULL),
        (5, '2026-07-03 00:00:00', 'later', 'later', 'l', 1, 1, NULL, NULL, NULL, NULL);";

/// The replica as target-postgres types it: datetime and date as timestamp, tinyint(1) as
/// boolean, varbinary as bytea, timestamp as timestamptz.
const TARGET_TABLE: &str = "CREATE TABLE public.vector (
        id bigint NOT NULL PRIMARY KEY, updated_at timestamp, status character varying, note text,
        code character varying, amount numeric(12, 2), active boolean, day timestamp, at_time time,
        raw bytea, created timestamptz
    );
    INSERT INTO public.vector VALUES
        (1, '2026-07-01 00:00:00', 'A', 'plain', 'abc', 12.34, true, '2026-07-01', '13:45:00.123456', '\\x00ff10',
            '2026-07-01 12:00:00.5+00'),
        (2, '2026-07-01 00:30:00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, '2026-07-01 01:15:30.25', 'é ünïcödé', 'emoji 😀 and ''quotes''', 'x', -0.5, false, '1999-12-31',
            '00:00:00', '\\x', '1970-01-01 00:00:01+00'),
        (4, NULL, 'no timestamp', '', '', 0, true, NULL, NULL, NULL, NULL),
        (5, '2026-07-03 00:00:00', 'later', 'later', 'l', 1, true, NULL, NULL, NULL, NULL);";

const COMPARED: [&str; 9] = ["status", "note", "code", "amount", "active", "day", "at_time", "raw", "created"];

const ALL_CHECKS: [CheckType; 8] = [
    CheckType::SchemaCompatibility,
    CheckType::RowCount,
    CheckType::DistinctKeyCount,
    CheckType::NullKeyCount,
    CheckType::DuplicateKeyCount,
    CheckType::MinKey,
    CheckType::MaxKey,
    CheckType::RowChecksum,
];

#[test]
fn identical_rows_give_identical_values_for_every_check_on_both_servers() -> TestResult {
    let (database, mut source) = fresh_source(SOURCE_TABLE)?;
    let (_target_database, mut target) = fresh_target(TARGET_TABLE)?;
    let definition = definition(database.name(), &ALL_CHECKS, &COMPARED);
    let (results, status) = run(&mut source, &mut target, &definition, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")?;
    for (check, source_value, target_value, result) in &results {
        if check != "schema_compatibility" {
            assert_eq!(source_value, target_value, "{check}");
        }
        assert_eq!(result, "PASS", "{check}: {source_value} against {target_value}");
    }
    let values: Vec<_> = results.iter().skip(1).map(|(check, value, _, _)| (check.as_str(), value.clone())).collect();
    assert_eq!(
        &values[..6],
        [
            ("row_count", json!("3")),
            ("distinct_key_count", json!("3")),
            ("null_key_count", json!("0")),
            ("duplicate_key_count", json!("0")),
            ("min_key", json!("1")),
            ("max_key", json!("3")),
        ]
    );
    assert!(values[6].1.is_string(), "row_checksum over three rows is a number: {:?}", values[6]);
    assert_eq!(status, RunStatus::Pass);

    // The empty window: counts 0, MIN/MAX/SUM NULL on both.
    let (results, status) = run(&mut source, &mut target, &definition, "2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z")?;
    assert_eq!(status, RunStatus::Pass);
    assert_eq!(results[1].1, json!("0"));
    assert_eq!((results[7].1.clone(), results[7].2.clone()), (serde_json::Value::Null, serde_json::Value::Null));
    Ok(())
}

#[test]
fn a_planted_difference_fails_the_checksum_of_its_window_only() -> TestResult {
    let (database, mut source) = fresh_source(SOURCE_TABLE)?;
    let (_target_database, mut target) = fresh_target(TARGET_TABLE)?;
    target.batch_execute("UPDATE public.vector SET amount = 12.35 WHERE id = 1")?;
    let definition = definition(database.name(), &ALL_CHECKS, &COMPARED);

    let (results, status) = run(&mut source, &mut target, &definition, "2026-07-01T00:00:00Z", "2026-07-01T01:00:00Z")?;
    let failed: Vec<_> = results.iter().filter(|result| result.3 != "PASS").map(|result| result.0.as_str()).collect();
    assert_eq!(failed, ["row_checksum"], "{results:?}");
    assert_eq!(status, RunStatus::Fail);

    // The next hour holds only row 3, which is the same on both sides.
    let (_, status) = run(&mut source, &mut target, &definition, "2026-07-01T01:00:00Z", "2026-07-01T02:00:00Z")?;
    assert_eq!(status, RunStatus::Pass);
    Ok(())
}

#[test]
fn each_supported_type_hashes_like_its_replica_column_alone() -> TestResult {
    // Per column, so that a single type whose texts differ is named.
    let (database, mut source) = fresh_source(SOURCE_TABLE)?;
    let (_target_database, mut target) = fresh_target(TARGET_TABLE)?;
    for column in COMPARED {
        let definition = definition(database.name(), &[CheckType::RowChecksum], &[column]);
        let (results, _) = run(&mut source, &mut target, &definition, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")?;
        assert_eq!(results[0].1, results[0].2, "{column}");
        assert_eq!(results[0].3, "PASS", "{column}");
    }
    Ok(())
}

#[test]
fn the_column_lookup_reads_mariadb_types_into_their_families() -> TestResult {
    let (database, mut source) = fresh_source(SOURCE_TABLE)?;
    let columns = mysql_catalog(&mut source, database.name(), "vector")?;
    let families: Vec<_> = columns.columns().iter().map(|column| (column.name.as_str(), column.family())).collect();
    assert_eq!(
        families,
        [
            ("id", TypeFamily::ExactNumeric),
            ("updated_at", TypeFamily::Timestamp),
            ("status", TypeFamily::String),
            ("note", TypeFamily::String),
            ("code", TypeFamily::String),
            ("amount", TypeFamily::ExactNumeric),
            ("active", TypeFamily::Boolean),
            ("day", TypeFamily::Date),
            ("at_time", TypeFamily::Time),
            ("raw", TypeFamily::Binary),
            ("created", TypeFamily::Timestamp),
        ]
    );
    let amount = &columns.columns()[5];
    assert_eq!((amount.numeric_precision, amount.numeric_scale), (Some(12), Some(2)));
    assert_eq!(columns.columns()[6].udt_name.as_deref(), Some("tinyint(1)"));
    assert!(columns.columns()[1].is_naive_timestamp(), "datetime binds as naive UTC");

    // MariaDB's JSON is LONGTEXT in the catalog, a name upstream's family table does not list
    // (nor MEDIUMTEXT or TINYTEXT): such columns are `unknown`, so schema_compatibility FAILs
    // them against a PostgreSQL jsonb or text and row_checksum refuses them, as upstream does.
    let (database, mut source) =
        fresh_source("CREATE TABLE vector (doc json, body mediumtext, flag bit(1), kind enum('a', 'b'))")?;
    let columns = mysql_catalog(&mut source, database.name(), "vector")?;
    let families: Vec<_> =
        columns.columns().iter().map(|column| (column.data_type.as_str(), column.family())).collect();
    assert_eq!(
        families,
        [
            ("longtext", TypeFamily::Unknown),
            ("mediumtext", TypeFamily::Unknown),
            ("bit", TypeFamily::Boolean),
            ("enum", TypeFamily::String),
        ]
    );
    Ok(())
}

#[test]
fn preflight_reads_ignored_and_prefixed_indexes_from_statistics() -> TestResult {
    let (database, mut source) = fresh_source(
        "CREATE TABLE events (id bigint PRIMARY KEY, updated_at datetime, note text, code varchar(10));
         CREATE INDEX ix_ts ON events (updated_at, id);
         CREATE INDEX ix_ignored ON events (updated_at) IGNORED;
         CREATE INDEX ix_prefix ON events (note(10));
         INSERT INTO events VALUES (1, NULL, 'a', 'x'), (2, '2026-07-01', 'b', 'y'), (3, NULL, 'c', 'z');",
    )?;
    let mut probe = VisibilityProbe::new();
    let mut probes = 0;
    let mut read = |conn: &mut Conn, probe: &mut VisibilityProbe| -> Result<_, Failure> {
        let column = probe.column(|| {
            probes += 1;
            conn.query::<String, _>(VISIBILITY_PROBE_QUERY)
        })?;
        let rows: Vec<Row> = conn.exec(index_query(column), (database.name(), "events"))?;
        let rows = rows
            .iter()
            .map(|row| {
                Ok(StatisticsRow {
                    index_name: string(row, 0)?,
                    column_name: string(row, 1)?,
                    non_unique: string(row, 3)? == "1",
                    index_type: text(row.as_ref(4).ok_or("missing")?)?,
                    sub_part: text(row.as_ref(5).ok_or("missing")?)?.map(|text| text.parse()).transpose()?,
                    visibility: text(row.as_ref(6).ok_or("missing")?)?,
                })
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        Ok((column, indexes_from_statistics(&rows, column)))
    };
    let (column, indexes) = read(&mut source, &mut probe)?;
    let _ = read(&mut source, &mut probe)?;
    assert_eq!(probes, 1, "probed once per connection");
    assert_eq!(column, Some(VisibilityColumn::Ignored), "MariaDB 10.6+ has IGNORED");
    let summary: Vec<_> = indexes
        .iter()
        .map(|index| (index.index_name.as_str(), index.columns.clone(), index.is_unique, index.is_usable))
        .collect();
    // In the server's order of names (information_schema's case-insensitive collation).
    assert_eq!(
        summary,
        [
            ("ix_ignored", vec!["updated_at".to_owned()], false, false),
            ("ix_prefix", vec!["note".to_owned()], false, false),
            ("ix_ts", vec!["updated_at".to_owned(), "id".to_owned()], false, true),
            ("PRIMARY", vec!["id".to_owned()], true, true),
        ]
    );
    assert!(indexes[2].leads_with("UPDATED_AT") && indexes[2].is_usable);

    // The bounded count: the whole table, NULL timestamps included, capped at the bound.
    let count_sql = bounded_count_sql(database.name(), "events", MySqlPlaceholders::Question)?;
    let count: Option<i64> = source.exec_first(&count_sql, (100_000_i64,))?;
    assert_eq!(count, Some(3));
    let capped: Option<i64> = source.exec_first(&count_sql, (2_i64,))?;
    assert_eq!(capped, Some(2));
    Ok(())
}

#[test]
fn the_session_is_utc_time_limited_and_read_only_and_the_mysql_timeout_is_not_mariadbs() -> TestResult {
    let (_database, mut source) = fresh_source("CREATE TABLE t (id int)")?;
    let engine = MySqlEngine::detect(None, shared_mariadb().version());
    assert_eq!(engine, MySqlEngine::MariaDb, "{}", shared_mariadb().version());
    let settings: Option<(String, f64)> =
        source.query_first("SELECT @@session.time_zone, @@session.max_statement_time")?;
    assert_eq!(settings, Some(("+00:00".to_owned(), 60.0)));
    let write = source.query_drop("INSERT INTO t VALUES (1)").unwrap_err();
    assert!(matches!(&write, mysql::Error::MySqlError(error) if error.code == 1792), "read only: {write}");

    let mut other = shared_mariadb().connect(None)?;
    // The MariaDB statement interrupts a statement that runs past it (error 1969). The error
    // comes inside the result set: reading the rows surfaces it (the driver's `query_drop`
    // would swallow it).
    other.query_drop(MySqlEngine::MariaDb.statement_timeout_sql(1))?;
    let interrupted = other.query::<Option<i64>, _>("SELECT SLEEP(5)").unwrap_err();
    assert!(matches!(&interrupted, mysql::Error::MySqlError(error) if error.code == 1969), "{interrupted}");
    let mysql_statement = MySqlEngine::MySql.statement_timeout_sql(60);
    let unknown = other.query_drop(&mysql_statement).unwrap_err();
    assert!(matches!(&unknown, mysql::Error::MySqlError(error) if error.code == 1193), "{unknown}");
    Ok(())
}
