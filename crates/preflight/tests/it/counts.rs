//! The bounded count of unindexed tables and the bands it falls into.

use datadiff_diff_core::attempt::PreflightStatus;
use datadiff_preflight::SourceTable;

use crate::{PAYMENTS, TestResult, allow_finding, blocked_findings, count_all, fresh, insert_payments, payments, run};

#[test]
fn a_small_unindexed_table_passes_with_its_exact_count() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 1_234)?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.findings, allow_finding("1,234"));
    assert_eq!(record.has_leading_index, Some(false));
    assert_eq!((record.table_rows, record.row_limit), (Some(1_234), Some(100_000)));
    assert_eq!(record.table_rows, Some(count_all(&mut client, "public.payments")?));
    assert!(!record.index_warning);
    assert_eq!(record.error, None);
    Ok(())
}

#[test]
fn an_empty_table_passes() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 0)?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.findings, allow_finding("0"));
    assert_eq!(record.table_rows, Some(0));
    Ok(())
}

#[test]
fn the_bands_hold_at_their_exact_boundaries() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 0)?;
    let bands: [(i64, PreflightStatus, bool, Option<&str>); 5] = [
        (49_999, PreflightStatus::Pass, false, Some("49,999")),
        (50_000, PreflightStatus::Pass, true, Some("50,000")),
        (99_999, PreflightStatus::Pass, true, Some("99,999")),
        (100_000, PreflightStatus::Blocked, false, None),
        (100_001, PreflightStatus::Blocked, false, None),
    ];
    let mut inserted = 0;
    for (rows, status, warning, grouped) in bands {
        insert_payments(&mut client, inserted + 1, rows, false)?;
        inserted = rows;
        assert_eq!(count_all(&mut client, "public.payments")?, rows);

        let record = run(&mut client, &PAYMENTS)?;
        assert_eq!(record.status, status, "{rows} rows");
        assert_eq!(record.index_warning, warning, "{rows} rows");
        assert_eq!(record.table_rows, Some(rows.min(100_000)), "{rows} rows");
        assert_eq!(record.row_limit, Some(100_000));
        assert_eq!(record.has_leading_index, Some(false));
        let findings = match grouped {
            Some(grouped) => allow_finding(grouped),
            None => blocked_findings("updated_at", ""),
        };
        assert_eq!(record.findings, findings, "{rows} rows");
    }
    Ok(())
}

#[test]
fn null_timestamps_are_counted() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 30_000)?;
    insert_payments(&mut client, 30_001, 60_000, true)?;
    let nulls = client.query_one("SELECT count(*) FROM public.payments WHERE updated_at IS NULL", &[])?;
    assert_eq!(nulls.try_get::<_, i64>(0)?, 30_000);

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert!(record.index_warning, "60,000 rows including NULL timestamps fall in the warning band");
    assert_eq!(record.table_rows, Some(60_000));
    assert_eq!(record.findings, allow_finding("60,000"));
    Ok(())
}

#[test]
fn a_partitioned_table_counts_every_partition_and_null_timestamps() -> TestResult {
    // Upstream's end-to-end case: a parent partitioned on the timestamp, NULLs in the default
    // partition, through the bands, then an index created on the parent.
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.payments (id bigint, updated_at timestamptz, status text) PARTITION BY RANGE (updated_at);
         CREATE TABLE public.payments_2026 PARTITION OF public.payments
             FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2027-01-01 00:00:00+00');
         CREATE TABLE public.payments_other PARTITION OF public.payments DEFAULT",
    )?;
    let bands: [(i64, PreflightStatus, bool); 5] = [
        (49_999, PreflightStatus::Pass, false),
        (50_000, PreflightStatus::Pass, true),
        (99_999, PreflightStatus::Pass, true),
        (100_000, PreflightStatus::Blocked, false),
        (100_001, PreflightStatus::Blocked, false),
    ];
    let mut inserted = 0;
    for (rows, status, warning) in bands {
        // Every third row has a NULL timestamp.
        client.execute(
            "INSERT INTO public.payments (id, updated_at) \
             SELECT i, CASE WHEN i % 3 = 0 THEN NULL ELSE timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second' END \
             FROM generate_series($1::bigint, $2::bigint) AS i",
            &[&(inserted + 1), &rows],
        )?;
        inserted = rows;
        assert_eq!(count_all(&mut client, "public.payments")?, rows);
        assert!(count_all(&mut client, "ONLY public.payments_other")? > 0);

        let record = run(&mut client, &PAYMENTS)?;
        assert_eq!((record.status, record.index_warning), (status, warning), "{rows} rows");
        assert_eq!((record.table_rows, record.row_limit), (Some(rows.min(100_000)), Some(100_000)), "{rows} rows");
    }

    client.batch_execute("CREATE INDEX payments_updated_at_idx ON public.payments (updated_at)")?;
    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.has_leading_index, Some(true));
    assert_eq!((record.table_rows, record.row_limit), (None, None));
    assert_eq!(record.findings, Vec::<String>::new());
    Ok(())
}

#[test]
fn inherited_rows_are_counted() -> TestResult {
    let (_database, mut client) = fresh()?;
    client.batch_execute(
        "CREATE TABLE public.ledger (id bigint, updated_at timestamptz);
         CREATE TABLE public.ledger_archive () INHERITS (public.ledger);
         INSERT INTO public.ledger SELECT i, now() FROM generate_series(1, 10) AS i;
         INSERT INTO public.ledger_archive SELECT i, now() FROM generate_series(11, 60010) AS i",
    )?;
    assert_eq!(count_all(&mut client, "ONLY public.ledger")?, 10);

    let table = SourceTable { schema: "public", table: "ledger", timestamp_column: "updated_at" };
    let record = run(&mut client, &table)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.table_rows, Some(60_010));
    assert!(record.index_warning);
    Ok(())
}
