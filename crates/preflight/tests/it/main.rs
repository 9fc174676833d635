//! Integration tests of the gatherer against a real PostgreSQL server.
//!
//! Each test takes a fresh database of the binary's shared throwaway cluster, builds a
//! source table with `generate_series`, and runs the preflight in a read-only transaction,
//! as the runner does.

mod counts;
mod failures;
mod indexes;

use datadiff_preflight::{PreflightRecord, QueryFingerprint, SourceTable, preflight};
use datadiff_testkit::{Database, shared_cluster};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The source query text a check would fingerprint.
const CHECK_SQL: &str = r#"SELECT COUNT(*) FROM "public"."payments" WHERE "updated_at" >= $1 AND "updated_at" < $2"#;

/// `public.payments` with its timestamp column `updated_at`.
const PAYMENTS: SourceTable<'static> =
    SourceTable { schema: "public", table: "payments", timestamp_column: "updated_at" };

/// A fresh database and a superuser connection to it.
fn fresh() -> Result<(Database<'static>, postgres::Client), Box<dyn std::error::Error>> {
    let database = shared_cluster().fresh_database()?;
    let client = database.client()?;
    Ok((database, client))
}

/// Creates `public.payments (id bigint PRIMARY KEY, updated_at timestamptz, status text)`
/// with `rows` rows, every timestamp distinct and non-NULL.
fn payments(client: &mut postgres::Client, rows: i64) -> Result<(), postgres::Error> {
    client
        .batch_execute("CREATE TABLE public.payments (id bigint PRIMARY KEY, updated_at timestamptz, status text)")?;
    insert_payments(client, 1, rows, false)
}

/// Inserts ids `first..=last` into `public.payments`; timestamps NULL when `null_timestamps`.
fn insert_payments(
    client: &mut postgres::Client,
    first: i64,
    last: i64,
    null_timestamps: bool,
) -> Result<(), postgres::Error> {
    let timestamp = if null_timestamps {
        "NULL::timestamptz"
    } else {
        "timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'"
    };
    client.execute(
        &format!(
            "INSERT INTO public.payments (id, updated_at, status) \
             SELECT i, {timestamp}, CASE WHEN i % 2 = 0 THEN 'paid' ELSE 'open' END \
             FROM generate_series($1::bigint, $2::bigint) AS i"
        ),
        &[&first, &last],
    )?;
    Ok(())
}

/// Runs the preflight as the runner does: in a read-only transaction, then rolled back.
fn run(client: &mut postgres::Client, table: &SourceTable<'_>) -> Result<PreflightRecord, postgres::Error> {
    let mut transaction = client.build_transaction().read_only(true).start()?;
    let record = preflight(&mut transaction, table, QueryFingerprint::of_sql(CHECK_SQL));
    transaction.rollback()?;
    Ok(record)
}

/// `SELECT count(*)` of a table, read back independently of the preflight.
fn count_all(client: &mut postgres::Client, table: &str) -> Result<i64, postgres::Error> {
    client.query_one(&format!("SELECT count(*) FROM {table}"), &[])?.try_get(0)
}

/// The findings of a PASS for an unindexed table of `rows` (Python's `{n:,}` written out).
fn allow_finding(grouped_rows: &str) -> Vec<String> {
    vec![format!(
        "Allow the unindexed source table with {grouped_rows} rows; \
         a usable leading timestamp index is required at 100,000 rows"
    )]
}

/// The two findings of a BLOCKED table; `ignored` is the `; ignored as unusable: ...` tail.
fn blocked_findings(timestamp_column: &str, ignored: &str) -> Vec<String> {
    vec![
        format!("No usable source index starts with timestamp column '{timestamp_column}'{ignored}"),
        "Add a source index beginning with the timestamp column; PipelineWise will not create it automatically"
            .to_owned(),
    ]
}
