//! Which indexes the gatherer sees, how it describes them, and which qualify.

use datadiff_diff_core::attempt::PreflightStatus;
use datadiff_preflight::{QueryFingerprint, SourceTable};
use serde_json::json;

use crate::{CHECK_SQL, PAYMENTS, TestResult, blocked_findings, fresh, payments, run};

fn pkey() -> serde_json::Value {
    json!({
        "index_name": "payments_pkey", "columns": ["id"], "is_unique": true, "access_method": "btree",
        "is_partial": false, "is_expression": false, "is_valid": true, "is_ready": true, "is_usable": true,
    })
}

#[test]
fn a_usable_leading_index_passes_without_counting() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX payments_updated_at_idx ON public.payments (updated_at, id)")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.has_leading_index, Some(true));
    assert_eq!((record.table_rows, record.row_limit), (None, None));
    assert_eq!(record.findings, Vec::<String>::new());
    assert_eq!(record.error, None);
    assert!(!record.index_warning);
    assert_eq!(record.query_fingerprint, QueryFingerprint::of_sql(CHECK_SQL));
    assert_eq!(
        record.index_metadata_json(),
        json!([
            pkey(),
            {
                "index_name": "payments_updated_at_idx", "columns": ["updated_at", "id"], "is_unique": false,
                "access_method": "btree", "is_partial": false, "is_expression": false, "is_valid": true,
                "is_ready": true, "is_usable": true,
            },
        ])
    );
    Ok(())
}

#[test]
fn an_indexed_table_is_never_counted() -> TestResult {
    // Another session holds the table exclusively: a count would wait for it and fail on the
    // lock timeout, while the catalog lookup does not touch the table.
    let (database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX payments_updated_at_idx ON public.payments (updated_at)")?;
    let mut holder = database.client()?;
    let mut lock = holder.transaction()?;
    lock.batch_execute("LOCK TABLE public.payments IN ACCESS EXCLUSIVE MODE")?;

    let mut transaction = client.build_transaction().read_only(true).start()?;
    transaction.batch_execute("SET LOCAL lock_timeout = '2s'")?;
    let record = datadiff_preflight::preflight(&mut transaction, &PAYMENTS, QueryFingerprint::of_sql(CHECK_SQL));
    // A count would have failed on the lock and aborted the transaction.
    let still_usable = transaction.query_one("SELECT 1", &[]);
    transaction.rollback()?;
    lock.rollback()?;

    assert!(still_usable.is_ok(), "the preflight ran a query that waited for the table lock");
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.error, None);
    assert_eq!(record.table_rows, None);
    Ok(())
}

#[test]
fn without_an_index_100000_rows_block() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX a_status_updated_at_idx ON public.payments (status, updated_at)")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", ""));
    assert_eq!(record.has_leading_index, Some(false));
    assert_eq!((record.table_rows, record.row_limit), (Some(100_000), Some(100_000)));
    assert!(!record.index_warning);
    assert_eq!(record.error, None);
    let names: Vec<&str> = record.index_metadata.iter().map(|index| index.index_name.as_str()).collect();
    // By name, not by creation order.
    assert_eq!(names, ["a_status_updated_at_idx", "payments_pkey"]);
    assert_eq!(record.index_metadata[0].columns, ["status", "updated_at"]);
    Ok(())
}

#[test]
fn a_partial_index_is_unusable() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX partial_idx ON public.payments (updated_at) WHERE status = 'paid'")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", "; ignored as unusable: partial_idx"));
    assert_eq!(
        record.index_metadata_json()[0],
        json!({
            "index_name": "partial_idx", "columns": ["updated_at"], "is_unique": false, "access_method": "btree",
            "is_partial": true, "is_expression": false, "is_valid": true, "is_ready": true, "is_usable": false,
        })
    );
    Ok(())
}

#[test]
fn a_mixed_expression_index_lists_its_column_parts_and_is_unusable() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX mixed_idx ON public.payments (updated_at, lower(status))")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", "; ignored as unusable: mixed_idx"));
    assert_eq!(
        record.index_metadata_json()[0],
        json!({
            "index_name": "mixed_idx", "columns": ["updated_at"], "is_unique": false, "access_method": "btree",
            "is_partial": false, "is_expression": true, "is_valid": true, "is_ready": true, "is_usable": false,
        })
    );
    Ok(())
}

#[test]
fn a_pure_expression_index_is_not_listed() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute(
        "CREATE INDEX expression_idx ON public.payments ((updated_at AT TIME ZONE 'UTC'));
         CREATE INDEX lower_status_idx ON public.payments (lower(status))",
    )?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", ""));
    assert_eq!(record.index_metadata_json(), json!([pkey()]));
    Ok(())
}

#[test]
fn a_hash_index_is_unusable() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX hash_idx ON public.payments USING hash (updated_at)")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", "; ignored as unusable: hash_idx"));
    assert_eq!(record.index_metadata[0].access_method, "hash");
    assert_eq!(record.index_metadata_json()[0]["is_usable"], json!(false));
    Ok(())
}

#[test]
fn an_invalid_index_is_unusable() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    // A unique index built concurrently over duplicates fails and stays behind, invalid.
    client
        .batch_execute("UPDATE public.payments SET updated_at = timestamptz '2026-01-01 00:00:00+00' WHERE id <= 2")?;
    let failed = client.batch_execute("CREATE UNIQUE INDEX CONCURRENTLY invalid_idx ON public.payments (updated_at)");
    assert!(failed.is_err(), "the concurrent unique build must fail on duplicates");
    let catalog = client.query_one(
        "SELECT indisvalid, indisready FROM pg_index WHERE indexrelid = 'public.invalid_idx'::regclass",
        &[],
    )?;
    let (valid, ready): (bool, bool) = (catalog.try_get(0)?, catalog.try_get(1)?);
    assert!(!valid);

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.findings, blocked_findings("updated_at", "; ignored as unusable: invalid_idx"));
    let invalid = &record.index_metadata[0];
    assert_eq!(invalid.index_name, "invalid_idx");
    assert_eq!((invalid.is_unique, invalid.is_valid, invalid.is_ready), (true, valid, ready));
    assert_eq!(record.index_metadata_json()[0]["is_usable"], json!(false));
    Ok(())
}

#[test]
fn include_columns_follow_the_key_columns() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 100_000)?;
    client.batch_execute("CREATE INDEX covering_idx ON public.payments (updated_at) INCLUDE (status, id)")?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.index_metadata[0].columns, ["updated_at", "status", "id"]);
    Ok(())
}

#[test]
fn the_leading_column_matches_case_insensitively() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        r#"CREATE TABLE public.events (id bigint, "UpdatedAt" timestamptz);
           INSERT INTO public.events SELECT i, now() FROM generate_series(1, 100000) AS i;
           CREATE INDEX events_updated_idx ON public.events ("UpdatedAt")"#,
    )?;

    let table = SourceTable { schema: "public", table: "events", timestamp_column: "updatedat" };
    let record = run(&mut client, &table)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.has_leading_index, Some(true));
    assert_eq!(record.index_metadata[0].columns, ["UpdatedAt"]);
    Ok(())
}

#[test]
fn names_match_exactly_and_are_quoted() -> TestResult {
    // "Payments" has the index; "Sales Data"."order""items" has none and must be counted
    // through correctly quoted identifiers.
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        r#"CREATE TABLE public."Payments" (id bigint, updated_at timestamptz);
           CREATE INDEX upper_idx ON public."Payments" (updated_at);
           CREATE SCHEMA "Sales Data";
           CREATE TABLE "Sales Data"."order""items" (id bigint, updated_at timestamptz);
           INSERT INTO "Sales Data"."order""items" SELECT i, now() FROM generate_series(1, 100000) AS i;
           CREATE TABLE public.payments (id bigint, updated_at timestamptz);
           INSERT INTO public.payments SELECT i, now() FROM generate_series(1, 100000) AS i"#,
    )?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Blocked, "the index of \"Payments\" is not payments'");
    assert_eq!(record.index_metadata_json(), json!([]));

    let odd = SourceTable { schema: "Sales Data", table: "order\"items", timestamp_column: "updated_at" };
    let record = run(&mut client, &odd)?;
    assert_eq!(record.status, PreflightStatus::Blocked);
    assert_eq!(record.table_rows, Some(100_000));
    assert_eq!(record.error, None);
    Ok(())
}

#[test]
fn an_index_on_a_partitioned_parent_qualifies() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.payments (id bigint, updated_at timestamptz) PARTITION BY RANGE (id);
         CREATE TABLE public.payments_low PARTITION OF public.payments FOR VALUES FROM (MINVALUE) TO (50000);
         CREATE TABLE public.payments_high PARTITION OF public.payments FOR VALUES FROM (50000) TO (MAXVALUE);
         INSERT INTO public.payments SELECT i, now() FROM generate_series(1, 100000) AS i;
         CREATE INDEX payments_parent_updated_at_idx ON public.payments (updated_at)",
    )?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.has_leading_index, Some(true));
    assert_eq!((record.table_rows, record.row_limit), (None, None));
    let names: Vec<&str> = record.index_metadata.iter().map(|index| index.index_name.as_str()).collect();
    assert_eq!(names, ["payments_parent_updated_at_idx"]);
    Ok(())
}
