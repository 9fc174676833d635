//! Failures while gathering become ERROR records that keep the evidence gathered so far.

use datadiff_diff_core::attempt::PreflightStatus;
use datadiff_preflight::{QueryFingerprint, preflight};
use serde_json::json;

use crate::{CHECK_SQL, PAYMENTS, TestResult, fresh, payments, run};

#[test]
fn a_failed_count_keeps_the_index_evidence() -> TestResult {
    // The count waits for a lock another session holds and gives up on the lock timeout, as
    // it would on the statement timeout.
    let (database, mut client) = fresh()?;
    payments(&mut client, 10)?;
    let mut holder = database.client()?;
    let mut lock = holder.transaction()?;
    lock.batch_execute("LOCK TABLE public.payments IN ACCESS EXCLUSIVE MODE")?;

    let mut transaction = client.build_transaction().read_only(true).start()?;
    transaction.batch_execute("SET LOCAL lock_timeout = '100ms'")?;
    let record = preflight(&mut transaction, &PAYMENTS, QueryFingerprint::of_sql(CHECK_SQL));
    transaction.rollback()?;
    lock.rollback()?;

    assert_eq!(record.status, PreflightStatus::Error);
    assert_eq!(
        record.error.as_deref(),
        Some("bounded source row count failed: canceling statement due to lock timeout")
    );
    assert_eq!(record.has_leading_index, Some(false));
    assert_eq!((record.table_rows, record.row_limit), (None, Some(100_000)));
    assert_eq!(record.findings, Vec::<String>::new());
    assert_eq!(record.index_metadata_json()[0]["index_name"], json!("payments_pkey"));
    assert!(!record.index_warning);
    assert_eq!(record.query_fingerprint, QueryFingerprint::of_sql(CHECK_SQL));
    Ok(())
}

#[test]
fn a_missing_table_is_an_error() -> TestResult {
    let (_database, mut client) = fresh()?;

    let record = run(&mut client, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Error);
    assert_eq!(
        record.error.as_deref(),
        Some(r#"bounded source row count failed: relation "public.payments" does not exist"#)
    );
    assert_eq!(record.index_metadata_json(), json!([]));
    assert_eq!(record.has_leading_index, Some(false));
    Ok(())
}

#[test]
fn a_failed_lookup_has_no_evidence() -> TestResult {
    let (_database, mut client) = fresh()?;
    payments(&mut client, 10)?;

    let mut transaction = client.build_transaction().read_only(true).start()?;
    assert!(transaction.batch_execute("SELECT 1 / 0").is_err());
    let record = preflight(&mut transaction, &PAYMENTS, QueryFingerprint::of_sql(CHECK_SQL));
    transaction.rollback()?;

    assert_eq!(record.status, PreflightStatus::Error);
    let error = record.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("source index lookup failed: current transaction is aborted"), "{error}");
    assert_eq!(record.has_leading_index, None);
    assert_eq!(record.index_metadata_json(), json!([]));
    assert_eq!((record.table_rows, record.row_limit), (None, Some(100_000)));
    Ok(())
}

#[test]
fn a_role_without_select_sees_the_indexes_but_cannot_count() -> TestResult {
    let (database, mut client) = fresh()?;
    payments(&mut client, 10)?;
    let role = format!("{}_reader", database.name());
    database.cluster().create_role(&role, "reader-password")?;
    client.batch_execute(&format!("GRANT CONNECT ON DATABASE \"{}\" TO \"{role}\"", database.name()))?;
    let mut reader = database.config_for(&role, "reader-password").connect(postgres::NoTls)?;

    let record = run(&mut reader, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Error);
    assert_eq!(record.error.as_deref(), Some("bounded source row count failed: permission denied for table payments"));
    assert_eq!(record.index_metadata.len(), 1);

    client.batch_execute(&format!("GRANT SELECT ON public.payments TO \"{role}\""))?;
    let record = run(&mut reader, &PAYMENTS)?;
    assert_eq!(record.status, PreflightStatus::Pass);
    assert_eq!(record.table_rows, Some(10));
    Ok(())
}
