//! Audits of PipelineWise and Debezium replicas: deleted markers on the replica table itself,
//! lower-cased and mapped replica columns, and the report's identity of what was read.

use datadiff_audit::{AuditReport, ColumnMatchError, Error, Reason, Refusal, Status, audit};
use datadiff_testkit::shared_cluster;

use crate::support::{Pair, no_env};

const SOURCE: &str = "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, plan text); \
                      INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'free' \
                      FROM generate_series(1, 5) g;";

/// The source's five rows plus two deleted ones (keys 6 and 7, one of them a key the source
/// never had, one a row deleted at the source), with `marker` holding `live` on rows 1–5
/// and `deleted` on rows 6–7.
fn replica_with_marker(marker: &str, marker_type: &str, live: &str, deleted: &str) -> String {
    format!(
        "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, plan text, {marker} {marker_type}); \
         INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'free', {live} FROM generate_series(1, 5) g; \
         INSERT INTO public.customers SELECT g, 'gone' || g, 'pro', {deleted} FROM generate_series(6, 7) g;"
    )
}

fn run(pair: &Pair, deleted_column: &str) -> Result<AuditReport, Error> {
    let mut options = pair.options("public.customers");
    options.deleted_column = Some(deleted_column.to_owned());
    audit(&options, &no_env(), &mut |_| {})
}

/// PASS with the deleted rows counted as tombstones; then a live row changed on the replica
/// is a FAIL naming its key; a deleted row changed is not.
fn assert_tombstones_leave_the_comparison(marker: &str, marker_type: &str, live: &str, deleted: &str) {
    let pair = Pair::new(SOURCE, &replica_with_marker(marker, marker_type, live, deleted));
    let report = run(&pair, marker).unwrap();
    assert_eq!((report.status, report.reason), (Status::Pass, Reason::ParityVerified), "{marker_type}");
    assert_eq!((report.source_rows, report.replica_rows, report.tombstones), (5, 5, 2), "{marker_type}");
    assert_eq!(report.columns, ["email", "plan"], "the marker is not compared ({marker_type})");
    assert_eq!(report.replica.deleted_column.as_deref(), Some(marker));

    pair.replica
        .client()
        .unwrap()
        .batch_execute("UPDATE public.customers SET plan = 'pro' WHERE id = 4; UPDATE public.customers SET email = 'x' WHERE id = 7")
        .unwrap();
    let report = run(&pair, marker).unwrap();
    assert_eq!((report.status, report.reason), (Status::Block, Reason::RowDifferences), "{marker_type}");
    assert_eq!((report.changed, report.extra, report.missing, report.tombstones), (1, 0, 0, 2), "{marker_type}");
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["examples"], serde_json::json!([{"id": 4, "kind": "CHANGED", "fields": ["plan"]}]));
}

#[test]
fn a_boolean_deleted_column_on_the_replica_table_marks_tombstones() {
    // NULL is a live row in this form.
    assert_tombstones_leave_the_comparison("is_deleted", "boolean", "CASE WHEN g = 1 THEN NULL ELSE false END", "true");
}

#[test]
fn debezium_text_deleted_flags_mark_tombstones() {
    assert_tombstones_leave_the_comparison("__deleted", "text", "'false'", "'true'");
}

#[test]
fn a_non_null_sdc_deleted_at_marks_tombstones_whatever_its_type() {
    assert_tombstones_leave_the_comparison(
        "_sdc_deleted_at",
        "timestamptz",
        "NULL",
        "timestamptz '2026-07-22 12:00:00+00' + g * interval '1 hour'",
    );
    // pipelinewise-target-postgres creates it as character varying holding the timestamp.
    assert_tombstones_leave_the_comparison(
        "_sdc_deleted_at",
        "character varying",
        "NULL",
        "'2026-07-22T12:00:00+00:00'",
    );
}

#[test]
fn without_the_deleted_column_soft_deleted_rows_are_extra() {
    let pair = Pair::new(SOURCE, &replica_with_marker("_sdc_deleted_at", "timestamptz", "NULL", "now()"));
    let report = audit(&pair.options("public.customers"), &no_env(), &mut |_| {}).unwrap();
    assert_eq!((report.status, report.extra, report.tombstones), (Status::Block, 2, 0));
}

#[test]
fn a_missing_deleted_column_names_it() {
    let pair = Pair::same(SOURCE);
    let error = run(&pair, "_sdc_deleted_at").unwrap_err();
    assert_eq!(
        error.to_string(),
        "column _sdc_deleted_at does not exist in public.customers on the replica database",
        "{error:?}"
    );
}

#[test]
fn the_seed_form_reads_a_text_flag_and_refuses_a_timestamp_marker() {
    let replica = "CREATE SCHEMA cdc; \
                   CREATE TABLE cdc.customers (id bigint PRIMARY KEY, email text, plan text, _cdc_lsn bigint, \
                       __deleted text, _sdc_deleted_at timestamptz); \
                   INSERT INTO cdc.customers SELECT g, 'c' || g || '@example.com', 'free', g, \
                       CASE WHEN g <= 5 THEN 'false' ELSE 'true' END, NULL FROM generate_series(1, 7) g; \
                   CREATE VIEW cdc.customers_live AS SELECT id, email, plan FROM cdc.customers WHERE __deleted = 'false';";
    let pair = Pair::new(SOURCE, replica);
    let mut options = pair.options("public.customers");
    options.replica_table = Some("cdc.customers_live".parse().unwrap());
    options.metadata = Some(datadiff_audit::CdcMetadata {
        table: "cdc.customers".parse().unwrap(),
        lsn_column: "_cdc_lsn".to_owned(),
        deleted_column: "__deleted".to_owned(),
    });
    let report = audit(&options, &no_env(), &mut |_| {}).unwrap();
    assert_eq!((report.status, report.replica_rows, report.tombstones), (Status::Pass, 5, 2));
    assert_eq!(report.replica.metadata_table.as_deref(), Some("cdc.customers"));

    // Text other than 'true'/'false' is invalid metadata, as a NULL flag is.
    pair.replica.client().unwrap().batch_execute("UPDATE cdc.customers SET __deleted = 'yes' WHERE id = 2").unwrap();
    match audit(&options, &no_env(), &mut |_| {}) {
        Err(Error::Refused(Refusal::Inventory { invalid_metadata: 1, .. })) => {}
        other => panic!("expected an invalid-metadata refusal, got {other:?}"),
    }

    if let Some(metadata) = &mut options.metadata {
        metadata.deleted_column = "_sdc_deleted_at".to_owned();
    }
    match audit(&options, &no_env(), &mut |_| {}) {
        Err(Error::Refused(refusal @ Refusal::DeletedFlagType { .. })) => {
            let text = refusal.to_string();
            assert!(text.contains("_sdc_deleted_at") && text.contains("timestamp with time zone"), "{text}");
        }
        other => panic!("expected a deleted-flag type refusal, got {other:?}"),
    }
}

const MIXED_CASE_SOURCE: &str = "CREATE TABLE public.\"Customers\" (\"CustomerId\" bigint PRIMARY KEY, \
                                 \"FullName\" text, \"Plan\" text, email text); \
                                 INSERT INTO public.\"Customers\" SELECT g, 'Name ' || g, 'free', 'c' || g \
                                 FROM generate_series(1, 4) g;";

/// The replica as pipelinewise-target-postgres writes it: names lower-cased, `_sdc_*`
/// columns, a soft-deleted row.
const PIPELINEWISE_REPLICA: &str = "CREATE SCHEMA replicated_payments; \
     CREATE TABLE replicated_payments.customers (customerid bigint PRIMARY KEY, fullname character varying, \
         plan character varying, email character varying, _sdc_extracted_at timestamp, \
         _sdc_batched_at timestamp, _sdc_deleted_at character varying); \
     INSERT INTO replicated_payments.customers SELECT g, 'Name ' || g, 'free', 'c' || g, now(), now(), NULL \
         FROM generate_series(1, 4) g; \
     INSERT INTO replicated_payments.customers VALUES (5, 'Gone', 'free', 'c5', now(), now(), '2026-07-22T12:00:00+00:00');";

fn pipelinewise_options(pair: &Pair) -> datadiff_audit::AuditOptions {
    let mut options = pair.options("public.Customers");
    options.replica_table = Some("replicated_payments.customers".parse().unwrap());
    options.key = "CustomerId".to_owned();
    options.deleted_column = Some("_sdc_deleted_at".to_owned());
    options
}

#[test]
fn lower_cased_replica_columns_are_matched() {
    let pair = Pair::new(MIXED_CASE_SOURCE, PIPELINEWISE_REPLICA);
    let options = pipelinewise_options(&pair);
    let report = audit(&options, &no_env(), &mut |_| {}).unwrap();
    assert_eq!((report.status, report.matched, report.tombstones), (Status::Pass, 4, 1));
    assert_eq!(report.columns, ["FullName", "Plan", "email"]);
    assert_eq!(report.replica.columns, ["fullname", "plan", "email"]);
    assert_eq!((report.key.as_str(), report.replica.key.as_str()), ("CustomerId", "customerid"));

    pair.replica
        .client()
        .unwrap()
        .batch_execute("UPDATE replicated_payments.customers SET fullname = 'Other' WHERE customerid = 3")
        .unwrap();
    let report = audit(&options, &no_env(), &mut |_| {}).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["examples"], serde_json::json!([{"id": 3, "kind": "CHANGED", "fields": ["FullName"]}]));

    // A column in neither form says what was tried.
    let mut options = options;
    options.columns = Some(vec!["FullName".to_owned(), "Missing".to_owned()]);
    pair.source
        .client()
        .unwrap()
        .batch_execute("ALTER TABLE public.\"Customers\" ADD COLUMN \"Missing\" text")
        .unwrap();
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(matches!(error, Error::Columns(ColumnMatchError::NotFound { .. })), "{error:?}");
    assert!(error.to_string().contains("tried Missing and missing"), "{error}");
}

#[test]
fn a_column_map_names_the_replica_column() {
    let replica = "CREATE TABLE public.customers (id bigint PRIMARY KEY, email_address text, plan text); \
                   INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'free' FROM generate_series(1, 5) g;";
    let pair = Pair::new(SOURCE, replica);
    let mut options = pair.options("public.customers");
    // Without a map the column has no replica match: the audit refuses rather than leave it
    // out, and naming it is an error too.
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(matches!(error, Error::Columns(ColumnMatchError::Unmatched { .. })), "{error:?}");
    options.columns = Some(vec!["email".to_owned(), "plan".to_owned()]);
    assert!(matches!(audit(&options, &no_env(), &mut |_| {}), Err(Error::Columns(ColumnMatchError::NotFound { .. }))));

    options.columns = None;
    options.column_map = vec![("email".to_owned(), "email_address".to_owned())];
    let report = audit(&options, &no_env(), &mut |_| {}).unwrap();
    assert_eq!((report.status, report.matched), (Status::Pass, 5));
    assert_eq!(report.columns, ["email", "plan"]);
    assert_eq!(report.replica.columns, ["email_address", "plan"]);

    pair.replica
        .client()
        .unwrap()
        .batch_execute("UPDATE public.customers SET email_address = 'x' WHERE id = 2")
        .unwrap();
    let report = audit(&options, &no_env(), &mut |_| {}).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["examples"], serde_json::json!([{"id": 2, "kind": "CHANGED", "fields": ["email"]}]));

    options.column_map = vec![("email".to_owned(), "mail".to_owned())];
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert_eq!(
        error.to_string(),
        "--column-map email=mail: public.customers has no column mail on the replica database"
    );
}

#[test]
fn the_report_names_both_databases_tables_times_and_version() {
    let pair = Pair::new(MIXED_CASE_SOURCE, PIPELINEWISE_REPLICA);
    let before = chrono::Utc::now();
    let report = audit(&pipelinewise_options(&pair), &no_env(), &mut |_| {}).unwrap();
    let after = chrono::Utc::now();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();

    let system_identifier: String = shared_cluster()
        .connect("postgres")
        .unwrap()
        .query_one("SELECT system_identifier::text FROM pg_control_system()", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        json["source"],
        serde_json::json!({
            "columns": ["FullName", "Plan", "email"],
            "database": pair.source.name(),
            "key": "CustomerId",
            "system_identifier": system_identifier,
            "table": "public.Customers",
        })
    );
    assert_eq!(
        json["replica"],
        serde_json::json!({
            "columns": ["fullname", "plan", "email"],
            "database": pair.replica.name(),
            "deleted_column": "_sdc_deleted_at",
            "key": "customerid",
            "system_identifier": system_identifier,
            "table": "replicated_payments.customers",
        })
    );
    assert_eq!(json["key"], "CustomerId");
    assert_eq!(json["columns"], serde_json::json!(["FullName", "Plan", "email"]));
    assert_eq!(json["tombstones"], 1);
    assert_eq!(json["datadiff_version"], env!("CARGO_PKG_VERSION"));
    let time = |field: &str| {
        let text = json[field].as_str().unwrap_or_else(|| panic!("{field} missing: {json}"));
        assert!(text.ends_with('Z'), "{field} is UTC: {text}");
        chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc)
    };
    let (started, finished) = (time("started_at"), time("finished_at"));
    // Millisecond precision: compare at that precision.
    let millis = |instant: chrono::DateTime<chrono::Utc>| instant.timestamp_millis();
    assert!(millis(before) <= millis(started) && started <= finished && millis(finished) <= millis(after));
}

#[test]
fn tombstones_are_counted_in_the_scanned_snapshot() {
    let pair = Pair::new(SOURCE, &replica_with_marker("__deleted", "text", "'false'", "'true'"));
    let mut options = pair.options("public.customers");
    options.deleted_column = Some("__deleted".to_owned());
    let mut writer = pair.replica.client().unwrap();
    let report = audit(&options, &no_env(), &mut |progress| {
        if let datadiff_audit::AuditProgress::Inventory { .. } = progress {
            // A delete replicated between the inventory and the scan.
            writer.batch_execute("UPDATE public.customers SET __deleted = 'true' WHERE id = 5").unwrap();
        }
    })
    .unwrap();
    assert_eq!((report.replica_rows, report.tombstones, report.missing), (4, 3, 1));
    assert_eq!(report.status, Status::Block);
}

/// `--deleted-column` must name a marker the replica has on its own: the key or a column the
/// source has too (so one the audit would compare) is refused, naming it — never every row
/// marked deleted and the audit passed on nothing.
#[test]
fn a_deleted_column_that_is_the_key_or_a_source_column_is_refused() {
    let pair = Pair::new(SOURCE, &replica_with_marker("__deleted", "text", "'false'", "'true'"));
    for (marker, source_column) in [("id", "id"), ("email", "email"), ("plan", "plan")] {
        let error = run(&pair, marker).unwrap_err();
        assert!(
            matches!(&error, Error::Columns(ColumnMatchError::DeletedMarkerCompared { marker: m, source_column: s, .. })
                if m == marker && s == source_column),
            "{marker}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "--deleted-column {marker} is the replica column of the source column {source_column} of \
                 public.customers: a deleted marker must be a column only the replica has (__deleted, _sdc_deleted_at)"
            )
        );
    }
    // With --columns too.
    let mut options = pair.options("public.customers");
    options.deleted_column = Some("plan".to_owned());
    options.columns = Some(vec!["email".to_owned()]);
    assert!(matches!(audit(&options, &no_env(), &mut |_| {}), Err(Error::Columns(_))));
}
