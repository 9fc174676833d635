//! The parity audit against real databases: verdicts, counts, examples and refusals.

use datadiff_access::{Environment, Error as AccessError};
use datadiff_audit::Error;
use datadiff_audit::{AuditOptions, AuditProgress, AuditReport, CdcMetadata, Reason, Refusal, Status, audit};
use datadiff_testkit::{SUPERUSER, shared_cluster};

use crate::support::{Pair, no_env, superuser_url, table};

const CUSTOMERS: &str = "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, full_name text, \
                         plan text, notes text, updated_at timestamptz);";

fn seed_rows(count: i64) -> String {
    format!(
        "INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'Name ' || g, \
         CASE WHEN g % 2 = 0 THEN 'pro' ELSE 'free' END, NULL, \
         timestamptz '2026-01-01 00:00:00+00' + g * interval '1 minute' FROM generate_series(1, {count}) g;"
    )
}

fn run(options: &AuditOptions) -> Result<AuditReport, Error> {
    audit(options, &no_env(), &mut |_| {})
}

fn refusal(result: Result<AuditReport, Error>) -> Refusal {
    match result {
        Err(Error::Refused(refusal)) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn identical_tables_pass_and_every_shared_column_is_compared() {
    let pair = Pair::new(
        &format!("{CUSTOMERS}{}", seed_rows(50)),
        &format!("{CUSTOMERS}{} ALTER TABLE public.customers ADD COLUMN _cdc_lsn bigint;", seed_rows(50)),
    );
    let report = run(&pair.options("public.customers")).unwrap();
    assert_eq!((report.status, report.reason), (Status::Pass, Reason::ParityVerified));
    assert_eq!((report.source_rows, report.replica_rows, report.matched), (50, 50, 50));
    assert_eq!((report.missing, report.extra, report.changed, report.difference_count), (0, 0, 0, 0));
    assert_eq!(report.columns, ["email", "full_name", "plan", "notes", "updated_at"]);
    assert!(report.examples.is_empty() && !report.examples_truncated);
    assert!(report.caveat.contains("not atomic"));
}

#[test]
fn each_difference_kind_is_counted_exactly_with_the_seed_kind_names() {
    let pair = Pair::new(
        &format!("{CUSTOMERS}{}", seed_rows(10)),
        &format!(
            "{CUSTOMERS}{} DELETE FROM public.customers WHERE id IN (3, 7); \
             INSERT INTO public.customers (id, email) VALUES (11, 'new@example.com'); \
             UPDATE public.customers SET plan = 'enterprise' WHERE id = 2; \
             UPDATE public.customers SET notes = '', email = 'x@example.com' WHERE id = 5; \
             UPDATE public.customers SET updated_at = updated_at + interval '1 microsecond' WHERE id = 9;",
            seed_rows(10)
        ),
    );
    let report = run(&pair.options("public.customers")).unwrap();
    assert_eq!((report.status, report.reason), (Status::Block, Reason::RowDifferences));
    assert_eq!((report.missing, report.extra, report.changed, report.matched), (2, 1, 3, 5));
    assert_eq!((report.source_rows, report.replica_rows, report.difference_count), (10, 9, 6));
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        serde_json::json!([
            {"id": 2, "kind": "CHANGED", "fields": ["plan"]},
            {"id": 3, "kind": "MISSING_IN_REPLICA"},
            {"id": 5, "kind": "CHANGED", "fields": ["email", "notes"]},
            {"id": 7, "kind": "MISSING_IN_REPLICA"},
            {"id": 9, "kind": "CHANGED", "fields": ["updated_at"]},
            {"id": 11, "kind": "EXTRA_IN_REPLICA"},
        ])
    );
    assert_eq!(json["examples_truncated"], false);
}

#[test]
fn examples_are_capped_and_truncation_is_reported() {
    let pair = Pair::new(
        &format!("{CUSTOMERS}{}", seed_rows(40)),
        &format!("{CUSTOMERS}{} UPDATE public.customers SET plan = 'x' WHERE id <= 30;", seed_rows(40)),
    );
    let mut options = pair.options("public.customers");
    options.max_examples = 5;
    let report = run(&options).unwrap();
    assert_eq!(report.changed, 30);
    assert_eq!(report.examples.len(), 5);
    assert!(report.examples_truncated);
    let ids: Vec<_> = report.examples.iter().map(|example| serde_json::to_value(&example.id).unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5].map(|id| serde_json::json!(id)));

    options.max_examples = 30;
    let report = run(&options).unwrap();
    assert_eq!(report.examples.len(), 30);
    assert!(!report.examples_truncated, "exactly max_examples differences is not truncated");
}

#[test]
fn empty_tables_block_without_allow_empty_and_pass_with_it() {
    let pair = Pair::same(CUSTOMERS);
    let mut options = pair.options("public.customers");
    let report = run(&options).unwrap();
    assert_eq!((report.status, report.reason), (Status::Block, Reason::EmptyDataset));
    options.allow_empty = true;
    let report = run(&options).unwrap();
    assert_eq!((report.status, report.reason), (Status::Pass, Reason::ParityVerified));
}

#[test]
fn preconditions_refuse_before_connecting() {
    // Nothing listens on port 1: a connection attempt would be a connection error.
    let mut options = AuditOptions::new("host=127.0.0.1 port=1 user=u", "host=127.0.0.1 port=1 user=u", table("s.t"));
    assert_eq!(refusal(run(&options)), Refusal::NotCutoverReady);
    let message = Refusal::NotCutoverReady.to_string();
    assert!(
        message.contains("Pause source writes, drain CDC, confirm cutover_ready")
            && message.contains("--cutover-ready")
    );

    options.cutover_ready = true;
    for max_rows in [0, -5, 50_000_001] {
        options.max_rows = max_rows;
        let refused = refusal(run(&options));
        assert_eq!(refused, Refusal::MaxRowsOutOfRange { max_rows });
        assert!(refused.to_string().contains("--max-rows"), "{refused}");
    }
    options.max_rows = 50_000_000;
    for max_examples in [0, 101] {
        options.max_examples = max_examples;
        let refused = refusal(run(&options));
        assert_eq!(refused, Refusal::MaxExamplesOutOfRange { max_examples });
        assert!(refused.to_string().contains("--max-examples"), "{refused}");
    }
    options.max_examples = 100;
    options.key = "a,b,a".to_owned();
    let refused = refusal(run(&options));
    assert_eq!(refused, Refusal::KeyColumnTwice { column: "a".to_owned() });
    assert!(refused.to_string().contains("--key names the column a twice"), "{refused}");
    options.key = "a,".to_owned();
    assert_eq!(refusal(run(&options)), Refusal::InvalidColumnList { flag: "--key" });

    // With valid options the same DSNs do try to connect.
    options.key = "id".to_owned();
    assert!(matches!(run(&options), Err(Error::Access(AccessError::Connect { .. }))));
}

#[test]
fn too_many_rows_in_the_inventory_refuses() {
    let pair = Pair::same(&format!("{CUSTOMERS}{}", seed_rows(3)));
    let mut options = pair.options("public.customers");
    options.max_rows = 2;
    let refused = refusal(run(&options));
    assert_eq!(refused, Refusal::Inventory { source_rows: 3, replica_rows: 3, invalid_metadata: 0, max_rows: 2 });
    assert!(refused.to_string().contains("source=3 replica=3 invalid_metadata=0"), "{refused}");
    options.max_rows = 3;
    assert_eq!(run(&options).unwrap().status, Status::Pass);
}

fn metadata_pair(source_rows: i64) -> Pair {
    // The Debezium shape: cdc.customers keeps tombstones and metadata; the scan reads the
    // live rows from cdc.customers_live.
    let replica = format!(
        "CREATE SCHEMA cdc; \
         CREATE TABLE cdc.customers (id bigint PRIMARY KEY, email text, _cdc_lsn numeric, _cdc_deleted boolean); \
         INSERT INTO cdc.customers SELECT g, 'e' || g, g * 10, false FROM generate_series(1, {source_rows}) g; \
         INSERT INTO cdc.customers VALUES (1000, 'gone', 5, true); \
         CREATE VIEW cdc.customers_live AS SELECT id, email FROM cdc.customers WHERE NOT _cdc_deleted;"
    );
    let source = format!(
        "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text); \
         INSERT INTO public.customers SELECT g, 'e' || g FROM generate_series(1, {source_rows}) g;"
    );
    Pair::new(&source, &replica)
}

fn metadata_options(pair: &Pair) -> AuditOptions {
    let mut options = pair.options("public.customers");
    options.replica_table = Some(table("cdc.customers_live"));
    options.metadata = Some(CdcMetadata {
        table: table("cdc.customers"),
        lsn_column: "_cdc_lsn".to_owned(),
        deleted_column: "_cdc_deleted".to_owned(),
    });
    options
}

#[test]
fn replica_rows_are_counted_from_live_metadata_rows() {
    let pair = metadata_pair(4);
    let mut options = metadata_options(&pair);
    // 4 live rows and a tombstone: the tombstone does not count against max_rows.
    options.max_rows = 4;
    let mut inventory = None;
    let report = audit(&options, &no_env(), &mut |progress| {
        if let AuditProgress::Inventory { .. } = progress {
            inventory = Some(progress);
        }
    })
    .unwrap();
    assert_eq!(inventory, Some(AuditProgress::Inventory { source_rows: 4, replica_rows: 4 }));
    assert_eq!((report.status, report.matched, report.columns.clone()), (Status::Pass, 4, vec!["email".to_owned()]));
}

#[test]
fn invalid_cdc_metadata_refuses_before_the_scan() {
    let pair = metadata_pair(3);
    pair.replica.client().unwrap().batch_execute("UPDATE cdc.customers SET _cdc_lsn = NULL WHERE id = 2; UPDATE cdc.customers SET _cdc_lsn = -1 WHERE id = 3").unwrap();
    let refused = refusal(run(&metadata_options(&pair)));
    assert_eq!(
        refused,
        Refusal::Inventory { source_rows: 3, replica_rows: 3, invalid_metadata: 2, max_rows: 5_000_000 }
    );
    let pair = metadata_pair(3);
    pair.replica.client().unwrap().batch_execute("UPDATE cdc.customers SET _cdc_deleted = NULL WHERE id = 1").unwrap();
    let refused = refusal(run(&metadata_options(&pair)));
    assert!(matches!(refused, Refusal::Inventory { invalid_metadata: 1, .. }), "{refused:?}");
}

#[test]
fn invalid_cdc_metadata_written_after_the_inventory_is_caught_inside_the_snapshot() {
    let pair = metadata_pair(3);
    let mut writer = pair.replica.client().unwrap();
    let result = audit(&metadata_options(&pair), &no_env(), &mut |progress| {
        if let AuditProgress::Inventory { .. } = progress {
            // CDC writes a bad row between the inventory and the scan.
            writer.batch_execute("INSERT INTO cdc.customers VALUES (50, 'late', NULL, false)").unwrap();
        }
    });
    assert_eq!(refusal(result), Refusal::InvalidMetadataInSnapshot { table: "cdc.customers".to_owned() });
}

#[test]
fn the_row_limit_is_enforced_during_the_scan_on_either_side() {
    // Replica side: the live view holds a row the metadata table does not count.
    let pair = metadata_pair(2);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "CREATE OR REPLACE VIEW cdc.customers_live AS \
             SELECT id, email FROM cdc.customers WHERE NOT _cdc_deleted UNION ALL SELECT 3, 'e3'",
        )
        .unwrap();
    let mut options = metadata_options(&pair);
    options.max_rows = 2;
    let refused = refusal(run(&options));
    assert_eq!(refused, Refusal::RowLimitDuringScan { role: "replica".to_owned(), max_rows: 2 });
    assert!(refused.to_string().contains("row limit reached during comparison"));

    // Source side: rows inserted after the inventory are seen by the scan's snapshot.
    let pair = Pair::same(&format!("{CUSTOMERS}{}", seed_rows(3)));
    let mut options = pair.options("public.customers");
    options.max_rows = 3;
    let mut writer = pair.source.client().unwrap();
    let result = audit(&options, &no_env(), &mut |progress| {
        if let AuditProgress::Inventory { .. } = progress {
            writer.batch_execute("INSERT INTO public.customers (id) VALUES (4), (5)").unwrap();
        }
    });
    assert_eq!(refusal(result), Refusal::RowLimitDuringScan { role: "source".to_owned(), max_rows: 3 });
}

#[test]
fn one_database_behind_both_dsns_is_refused_over_tcp_and_unix_sockets() {
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    database.client().unwrap().batch_execute(&format!("{CUSTOMERS}{}", seed_rows(2))).unwrap();
    let tcp = superuser_url(&database);
    let socket = format!(
        "host={} port={} user={SUPERUSER} dbname={}",
        cluster.socket_dir().display(),
        cluster.port(),
        database.name()
    );
    for (source, replica) in [(&tcp, &tcp), (&socket, &tcp), (&socket, &socket)] {
        let mut options = AuditOptions::new(source.clone(), replica.clone(), table("public.customers"));
        options.cutover_ready = true;
        let refused = refusal(run(&options));
        assert!(
            matches!(&refused, Refusal::SameDatabase { database: name, .. } if name == database.name()),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("must be separate databases"));
    }
}

#[test]
fn a_database_shadowing_current_database_is_still_recognised_as_one() {
    // A `public.current_database()` that answers differently in every session, first in the
    // database's search_path, would make one database look like two.
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    let name = datadiff_testkit::quote_ident(database.name());
    database
        .client()
        .unwrap()
        .batch_execute(&format!(
            "{CUSTOMERS}{} CREATE FUNCTION public.current_database() RETURNS name LANGUAGE sql \
             AS $$ SELECT pg_catalog.pg_backend_pid()::text::name $$; \
             ALTER DATABASE {name} SET search_path = public, pg_catalog;",
            seed_rows(2)
        ))
        .unwrap();
    let dsn = superuser_url(&database);
    let mut options = AuditOptions::new(dsn.clone(), dsn, table("public.customers"));
    options.cutover_ready = true;
    let refused = refusal(run(&options));
    assert!(
        matches!(&refused, Refusal::SameDatabase { database: found, .. } if found == database.name()),
        "{refused:?}"
    );
}

#[test]
fn a_duplicate_key_is_an_error_naming_the_key() {
    let pair = Pair::new(
        "CREATE TABLE public.t (id int PRIMARY KEY, v text); INSERT INTO public.t VALUES (1, 'a'), (2, 'b'), (3, 'c');",
        "CREATE TABLE public.t (id int, v text); INSERT INTO public.t VALUES (1, 'a'), (2, 'b'), (2, 'b'), (3, 'c');",
    );
    let error = run(&pair.options("public.t")).unwrap_err();
    assert!(
        matches!(&error, Error::Access(AccessError::DuplicateKey { key, role, .. }) if key == "2" && role == "replica"),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "duplicate key 2 in public.t on the replica database: the key column must be unique");
}

#[test]
fn compatible_types_compare_by_canonical_value() {
    let pair = Pair::new(
        "CREATE TABLE public.t (id uuid PRIMARY KEY, amount numeric(12,2), seen timestamptz, code char(6), \
                                n integer, ratio double precision, flag boolean, day date, blob bytea, ref uuid); \
         INSERT INTO public.t VALUES \
           ('00000000-0000-0000-0000-000000000001', 19.99, '2026-03-01 10:00:00+02', 'ab', 7, 0.1, true, '2026-03-01', '\\xdead', '10000000-0000-0000-0000-0000000000aa'), \
           ('00000000-0000-0000-0000-000000000002', 5.00, '2026-03-01 08:00:00+00', 'xyz', 8, 1e300, false, '1999-12-31', '', NULL), \
           ('00000000-0000-0000-0000-000000000003', 1.10, NULL, NULL, NULL, 'NaN', NULL, NULL, NULL, NULL);",
        "CREATE TABLE public.t (id uuid PRIMARY KEY, amount double precision, seen timestamp, code text, \
                                n bigint, ratio double precision, flag boolean, day date, blob bytea, ref text); \
         INSERT INTO public.t VALUES \
           ('00000000-0000-0000-0000-000000000001', 19.99, '2026-03-01 08:00:00', 'ab', 7, 0.1, true, '2026-03-01', '\\xdead', '10000000-0000-0000-0000-0000000000aa'), \
           ('00000000-0000-0000-0000-000000000002', 5, '2026-03-01 08:00:00', 'xyz', 8, 1e300, false, '1999-12-31', '', NULL), \
           ('00000000-0000-0000-0000-000000000003', 1.1000000001, NULL, '', NULL, 'NaN', NULL, NULL, NULL, NULL);",
    );
    let report = run(&pair.options("public.t")).unwrap();
    assert_eq!((report.matched, report.changed), (2, 1), "{}", report.to_json());
    // 19.99 and 5.00 are held as their nearest doubles; 1.1000000001 is not 1.10's nearest
    // double (a corruption, not a coercion); NULL vs '' is a difference.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        serde_json::json!([{"id": "00000000-0000-0000-0000-000000000003", "kind": "CHANGED", "fields": ["amount", "code"]}])
    );
}

// The same tables as the runner's row_diff test of these values.
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
fn a_narrower_replica_of_a_float_source_blocks_where_it_lost_digits() {
    let pair = Pair::new(FLOAT_SOURCE_SQL, NARROW_REPLICA_SQL);
    let report = run(&pair.options("public.readings")).unwrap();
    assert_eq!((report.status, report.reason), (Status::Block, Reason::RowDifferences), "{}", report.to_json());
    assert_eq!((report.matched, report.changed, report.missing, report.extra), (1, 5, 0, 0));
    // 4/3/0/3 for 3.7/3.2/-0.4/2.5 in an integer, 1.00 for 1.004 in numeric(12,2),
    // 16777216 for 16777217 and 0.1's nearest real in a real, 0.13 for the real 0.125.
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        serde_json::json!([
            {"id": 1, "kind": "CHANGED", "fields": ["whole", "price", "big", "ratio"]},
            {"id": 2, "kind": "CHANGED", "fields": ["whole"]},
            {"id": 3, "kind": "CHANGED", "fields": ["whole"]},
            {"id": 4, "kind": "CHANGED", "fields": ["whole"]},
            {"id": 5, "kind": "CHANGED", "fields": ["big"]},
        ])
    );
}

#[test]
fn text_keys_are_merged_in_bytewise_order_whatever_the_column_collation() {
    // Under ICU's root collation "a" < "b" < "B" < "Z"; bytewise "B" < "Z" < "a" < "b".
    let sql = "CREATE TABLE public.t (k text COLLATE \"und-x-icu\" PRIMARY KEY, v int);";
    let pair = Pair::new(
        &format!("{sql} INSERT INTO public.t VALUES ('a', 1), ('b', 2), ('B', 3), ('Z', 4), ('é', 5);"),
        &format!("{sql} INSERT INTO public.t VALUES ('a', 1), ('b', 2), ('B', 30), ('é', 5), ('zz', 6);"),
    );
    let mut options = pair.options("public.t");
    options.key = "k".to_owned();
    let report = run(&options).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        serde_json::json!([
            {"id": "B", "kind": "CHANGED", "fields": ["v"]},
            {"id": "Z", "kind": "MISSING_IN_REPLICA"},
            {"id": "zz", "kind": "EXTRA_IN_REPLICA"},
        ])
    );
    assert_eq!(report.matched, 3);
}

#[test]
fn explicit_columns_restrict_the_comparison_and_unknown_ones_are_named() {
    let pair = Pair::new(
        "CREATE TABLE public.t (id int PRIMARY KEY, a int, b int); INSERT INTO public.t VALUES (1, 1, 1);",
        "CREATE TABLE public.t (id int PRIMARY KEY, a int, b int); INSERT INTO public.t VALUES (1, 1, 2);",
    );
    let mut options = pair.options("public.t");
    options.columns = Some(vec!["a".to_owned()]);
    let report = run(&options).unwrap();
    assert_eq!((report.status, report.columns.clone()), (Status::Pass, vec!["a".to_owned()]));

    options.columns = Some(vec!["a".to_owned(), "nope".to_owned()]);
    let error = run(&options).unwrap_err();
    assert_eq!(error.to_string(), "column nope does not exist in public.t on the source database");

    options.columns = Some(vec!["id".to_owned()]);
    assert_eq!(refusal(run(&options)), Refusal::KeyInColumns { key: "id".to_owned() });
}

#[test]
fn incomparable_columns_are_errors_naming_the_column() {
    let pair = Pair::new(
        "CREATE TABLE public.t (id int PRIMARY KEY, doc jsonb, amount numeric);",
        "CREATE TABLE public.t (id int PRIMARY KEY, doc jsonb, amount double precision);",
    );
    let mut options = pair.options("public.t");
    options.columns = Some(vec!["doc".to_owned()]);
    let error = run(&options).unwrap_err();
    assert!(
        matches!(&error, Error::Access(AccessError::UnsupportedType { column, .. }) if column == "doc"),
        "{error:?}"
    );
    // A numeric without a declared scale against a double compares (its nearest double).
    options.columns = Some(vec!["amount".to_owned()]);
    options.allow_empty = true;
    assert_eq!(run(&options).unwrap().status, datadiff_audit::Status::Pass);
}

#[test]
fn a_missing_table_is_named_with_its_side() {
    let pair = Pair::same("CREATE TABLE public.t (id int PRIMARY KEY);");
    let mut options = pair.options("public.t");
    options.replica_table = Some(table("public.absent"));
    let error = run(&options).unwrap_err();
    assert_eq!(
        error.to_string(),
        "table public.absent does not exist on the replica database (or the role cannot see it)"
    );
}

#[test]
fn a_read_only_role_with_select_only_can_audit() {
    let cluster = shared_cluster();
    let role = format!("auditor_{}", std::process::id());
    let _ = cluster.create_role(&role, "auditor-pw");
    let grant = format!("{CUSTOMERS}{} GRANT SELECT ON public.customers TO {role};", seed_rows(5));
    let pair = Pair::same(&grant);
    let options = AuditOptions {
        source: pair.source.url(&role, "auditor-pw"),
        replica: pair.replica.url(&role, "auditor-pw"),
        ..pair.options("public.customers")
    };
    let report = run(&options).unwrap();
    assert_eq!((report.status, report.matched), (Status::Pass, 5));
}

#[test]
fn passwords_may_come_from_pgpassword() {
    let pair = Pair::same(&format!("{CUSTOMERS}{}", seed_rows(2)));
    let cluster = shared_cluster();
    let without_password = |database: &datadiff_testkit::Database<'_>| {
        format!("host=127.0.0.1 port={} user={SUPERUSER} dbname={}", cluster.port(), database.name())
    };
    let mut options = pair.options("public.customers");
    options.source = without_password(&pair.source);
    options.replica = without_password(&pair.replica);
    let environment = Environment::from_pairs([("PGPASSWORD", cluster.superuser_password())]);
    let report = audit(&options, &environment, &mut |_| {}).unwrap();
    assert_eq!(report.status, Status::Pass);
    // Without it, authentication fails: a connection error, not a refusal.
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(matches!(error, Error::Access(AccessError::Connect { .. })), "{error:?}");
}
