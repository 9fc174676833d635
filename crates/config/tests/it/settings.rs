//! backend_db, alert handlers, datadiff.yml, YAML 1.1 behaviour through the loader, and
//! non-ASCII names hashed as Python does.

use datadiff_diff_core::definition::SslMode;

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, tap};

fn files<'a>(config: &'a str, tap_text: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut files = vec![("config.yml", config), ("target_postgres.yml", TARGET), ("tap_payments.yml", tap_text)];
    files.extend_from_slice(extra);
    files
}

#[test]
fn backend_defaults_and_required_fields() {
    let text = tap("", "", VALID);
    let loaded = load_ok(&project(&files(CONFIG, &text, &[])));
    let backend = loaded.backend.unwrap_or_else(|| panic!("backend"));
    assert_eq!((backend.port, backend.connect_timeout, backend.sslmode), (5432, 10, None));
    assert_eq!((backend.user.as_str(), backend.ddl_user.as_str()), ("app", "owner"));

    let config = "backend_db:\n  host: h\n  user: u\n  dbname: d\n  ddl_password: ''\n";
    let found = problems(&project(&files(config, &text, &[])));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].path.as_str(), found[0].line), ("backend_db", Some(2)));
    assert_eq!(found[0].message, "backend_db is missing required fields: password, ddl_user, ddl_password");
}

#[test]
fn backend_sslmode_and_timeouts() {
    let text = tap("", "", VALID);
    let config = format!("{CONFIG}  sslmode: require\n  connect_timeout: 3\n  port: '6543'\n");
    let backend = load_ok(&project(&files(&config, &text, &[]))).backend.unwrap_or_else(|| panic!("backend"));
    assert_eq!((backend.sslmode, backend.connect_timeout, backend.port), (Some(SslMode::Require), 3, 6543));
    let config = format!("{CONFIG}  sslmode: sometimes\n");
    let found = problems(&project(&files(&config, &text, &[])));
    assert_eq!(found[0].path, "backend_db.sslmode");
    assert!(found[0].message.contains("verify-full"));
    // libpq's `allow`, which the backend store speaks (plaintext, TLS when refused), is accepted.
    let config = format!("{CONFIG}  sslmode: allow\n");
    let backend = load_ok(&project(&files(&config, &text, &[]))).backend.unwrap_or_else(|| panic!("backend"));
    assert_eq!(backend.sslmode, Some(SslMode::Allow));
}

#[test]
fn sslrootcert_system_names_the_trust_store_not_a_file() {
    let text = tap("", "", VALID);
    let extensions = [("datadiff.yml", "backend_db: {sslrootcert: system}\n")];
    let backend = load_ok(&project(&files(CONFIG, &text, &extensions))).backend.unwrap_or_else(|| panic!("backend"));
    assert_eq!(backend.sslrootcert, Some(std::path::PathBuf::from("system")));
}

#[test]
fn without_backend_definitions_are_validated_returned_and_flagged() {
    let text = tap("", "", VALID);
    let loaded = load_ok(&project(&files("alert_handlers: {}\n", &text, &[])));
    assert!(loaded.definitions_ignored());
    assert_eq!(loaded.definitions.len(), 1);
    assert_eq!(
        loaded.warnings,
        ["Ignoring 1 data_diff definition(s): config.yml does not define backend_db. Replication is unaffected."]
    );
    // Validation still runs in full.
    let bad = tap("", "", &VALID.replace("'0 * * * *'", "'1h'"));
    assert_eq!(problems(&project(&files("{}\n", &bad, &[])))[0].path, "schemas[0].tables[0].data_diff.frequency");
}

#[test]
fn pipelinewise_keys_datadiff_does_not_use_are_accepted() {
    let text = tap("", "", VALID)
        .replace("name: Payments\n", "name: Payments\nowner: a@b.c\nbatch_size_rows: 1000\nstream_buffer_size: 0\n");
    let config = format!("{CONFIG}notifications: {{}}\n");
    assert_eq!(load_ok(&project(&files(&config, &text, &[]))).definitions.len(), 1);
}

#[test]
fn extension_alert_handlers_belong_in_datadiff_yml() {
    let text = tap("", "", VALID);
    let config = format!("{CONFIG}alert_handlers:\n  webhook: {{url: 'https://x'}}\n");
    let found = problems(&project(&files(&config, &text, &[])));
    assert_eq!(found[0].path, "alert_handlers.webhook");
    assert!(found[0].message.contains("datadiff.yml"));
    let extensions = "alert_handlers:\n  webhook: {url: 'https://hooks.example.com/dd?token=abc'}\n";
    let project = load_ok(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)])));
    assert_eq!(
        project.alerts.webhook.map(|w| w.url.expose().to_owned()).as_deref(),
        Some("https://hooks.example.com/dd?token=abc")
    );
}

#[test]
fn datadiff_yml_rejects_unknown_keys_and_names() {
    let text = tap("", "", VALID);
    let extensions = "checks:\n  postgres/payments/public/transfers:\n    row_diff: {max_examples: 20, sample: 1}\n    exclude_soft_deleted: true\n  postgres/payments/public/nope:\n    exclude_soft_deleted: true\nbackend_db: {sslrootcert: ca.pem, sslcrl: c.pem}\n";
    let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)])));
    let paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "backend_db.sslcrl",
            "checks.postgres/payments/public/transfers.row_diff.sample",
            "checks.postgres/payments/public/nope"
        ],
        "{found:#?}"
    );
    assert!(found.iter().all(|p| p.file == "datadiff.yml"));
    assert!(found[2].message.starts_with("unknown check 'postgres/payments/public/nope'"));
    assert_eq!(found[1].message, "unknown key 'sample' (allowed: max_examples, empty_string_as_null, strategy)");
}

#[test]
fn every_invalid_row_diff_setting_is_reported_with_its_line() {
    let text = tap("", "", VALID);
    let extensions = "checks:\n  postgres/payments/public/transfers:\n    row_diff:\n      max_examples: 0\n      \
                      empty_string_as_null: 1\n      strategy: fast\n";
    let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)])));
    let reported: Vec<(&str, Option<usize>, &str)> =
        found.iter().map(|p| (p.path.as_str(), p.line, p.message.as_str())).collect();
    let path = "checks.postgres/payments/public/transfers.row_diff";
    assert_eq!(
        reported,
        [
            (&*format!("{path}.strategy"), Some(6), "strategy must be one of auto, stream, segments"),
            (&*format!("{path}.empty_string_as_null"), Some(5), "empty_string_as_null must be a boolean"),
            (&*format!("{path}.max_examples"), Some(4), "max_examples must be an integer from 1 to 100"),
        ],
        "{found:#?}"
    );
}

#[test]
fn row_diff_limits_and_compare_columns() {
    let text = tap("", "", VALID);
    for bad in ["0", "101", "'20'", "2.5"] {
        let extensions =
            format!("checks:\n  postgres/payments/public/transfers:\n    row_diff: {{max_examples: {bad}}}\n");
        let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)])));
        assert_eq!(found[0].path, "checks.postgres/payments/public/transfers.row_diff.max_examples", "{bad}");
    }
    let extensions = "checks:\n  postgres/payments/public/transfers:\n    row_diff: {}\n";
    let project_ok = load_ok(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)])));
    assert_eq!(project_ok.definitions[0].extensions.row_diff.map(|r| r.max_examples()), Some(20));

    let no_compare = tap(
        "",
        "",
        &VALID.replace("row_count, row_checksum", "row_count").replace("compare_columns: [amount, status]\n", ""),
    );
    let found = problems(&project(&files(CONFIG, &no_compare, &[("datadiff.yml", extensions)])));
    assert_eq!(found[0].message, "row_diff requires at least one compare_columns entry for public.transfers");
}

#[test]
fn row_diff_empty_string_as_null_is_an_opt_in_boolean_that_makes_a_revision() {
    let text = tap("", "", VALID);
    let load = |row_diff: &str| {
        let extensions = format!("checks:\n  postgres/payments/public/transfers:\n    row_diff: {row_diff}\n");
        project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)]))
    };
    let plain = load_ok(&load("{max_examples: 5}")).definitions.remove(0);
    let off = load_ok(&load("{max_examples: 5, empty_string_as_null: false}")).definitions.remove(0);
    let on = load_ok(&load("{max_examples: 5, empty_string_as_null: true}")).definitions.remove(0);
    let settings =
        |definition: &datadiff_diff_core::definition::CheckDefinition| definition.extensions.row_diff.unwrap();
    assert!(!settings(&plain).empty_string_as_null(), "off by default");
    assert!(settings(&on).empty_string_as_null());
    assert_eq!(settings(&on).max_examples(), 5);
    // Off hashes as before; on is a new revision and reads back from its canonical JSON.
    assert_eq!(plain.config_hash(), off.config_hash());
    assert_ne!(plain.config_hash(), on.config_hash());
    assert!(on.canonical_json().contains(r#""row_diff":{"empty_string_as_null":true,"max_examples":5}"#));
    let back = datadiff_diff_core::definition::CheckDefinition::from_canonical_config(
        &on.full_check_name,
        &on.canonical_config(),
    )
    .unwrap();
    assert_eq!(back.extensions, on.extensions);

    for bad in ["yes_please", "'true'", "1"] {
        let found = problems(&load(&format!("{{empty_string_as_null: {bad}}}")));
        assert_eq!(found.len(), 1, "{bad}: {found:#?}");
        assert_eq!(found[0].path, "checks.postgres/payments/public/transfers.row_diff.empty_string_as_null");
        assert_eq!(found[0].message, "empty_string_as_null must be a boolean");
    }
}

#[test]
fn yaml_duplicate_keys_are_errors_and_merge_keys_work() {
    let text = tap("", "", &format!("{VALID}key_column: other\n"));
    let found = problems(&project(&files(CONFIG, &text, &[])));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, "schemas[0].tables[0].data_diff.key_column");
    assert!(found[0].message.starts_with("duplicate key 'key_column'"));

    // A data_diff block built from an anchor with a merge key, one value overridden.
    let merged = tap("", "", "<<: *base\nkey_column: other_id\n")
        .replace("schemas:\n", &format!("x-base: &base\n{}schemas:\n", crate::indent(VALID, 2)));
    let definition = load_ok(&project(&files(CONFIG, &merged, &[]))).definitions.remove(0);
    assert_eq!((definition.source_key_column.as_str(), definition.window_end_seconds), ("other_id", 3600));
}

#[test]
fn non_ascii_names_hash_as_python() {
    // The "non-ASCII names" vector of tests/vectors/hash_vectors.py, through the loader.
    let target = "id: postgres\ntype: target-postgres\ndb_conn: {dbname: lager}\n";
    let text = "\
id: zahlungen
type: tap-mysql
target: postgres
db_conn: {host: kasse.internal, dbname: kasse}
schemas:
  - source_schema: öffentlich
    target_schema: ZIEL_ß
    tables:
      - table_name: Überweisungen
        data_diff:
          checks: [schema_compatibility]
          key_column: Schlüssel
          timestamp_column: geändert_am
          compare_columns: [betrag€, notiz😀, \"tab\\there\", 'quote\"back\\slash', \"ctl\\x01\\x7f/\"]
          frequency: '@hourly'
          window_start: 1h
";
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", target), ("tap_zahlungen.yml", text)]);
    let definition = load_ok(&dir).definitions.remove(0);
    assert_eq!(definition.full_check_name, "postgres/zahlungen/öffentlich/Überweisungen");
    assert_eq!(definition.config_hash(), "eeccefc9aafd4f8d5b245aa0d14cb461f30744a6d60ff7746c22eb040790083c");
}

#[test]
fn row_diff_strategy_is_auto_by_default_and_reads_back_from_the_canonical_json() {
    use datadiff_diff_core::segment::Strategy;
    let text = tap("", "", VALID);
    let load = |row_diff: &str| {
        let extensions = format!("checks:\n  postgres/payments/public/transfers:\n    row_diff: {row_diff}\n");
        project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)]))
    };
    let plain = load_ok(&load("{}")).definitions.remove(0);
    let auto = load_ok(&load("{strategy: auto}")).definitions.remove(0);
    let segments = load_ok(&load("{strategy: segments}")).definitions.remove(0);
    let strategy = |definition: &datadiff_diff_core::definition::CheckDefinition| {
        definition.extensions.row_diff.unwrap().strategy()
    };
    assert_eq!((strategy(&plain), strategy(&segments)), (Strategy::Auto, Strategy::Segments));
    assert_eq!(plain.config_hash(), auto.config_hash(), "auto hashes as before");
    assert!(segments.canonical_json().contains(r#""row_diff":{"max_examples":20,"strategy":"segments"}"#));
    let back = datadiff_diff_core::definition::CheckDefinition::from_canonical_config(
        &segments.full_check_name,
        &segments.canonical_config(),
    )
    .unwrap();
    assert_eq!(back.extensions, segments.extensions);

    for bad in ["fastest", "1", "[stream]"] {
        let found = problems(&load(&format!("{{strategy: {bad}}}")));
        assert_eq!(found.len(), 1, "{bad}: {found:#?}");
        assert_eq!(found[0].path, "checks.postgres/payments/public/transfers.row_diff.strategy");
        assert_eq!(found[0].message, "strategy must be one of auto, stream, segments");
    }
}

#[test]
fn replica_table_and_column_map_rename_every_target_name_and_enter_the_hash() {
    let text = tap("", "", &VALID.replace("key_column: id", "key_column: OrderId"));
    let plain = load_ok(&project(&files(CONFIG, &text, &[]))).definitions.remove(0);
    assert_eq!(
        (plain.target_schema.as_str(), plain.target_table.as_str(), plain.target_key_column.as_str()),
        ("replicated", "transfers", "orderid"),
        "the default: PipelineWise's lower-casing"
    );
    let extensions = "checks:\n  postgres/payments/public/transfers:\n    replica_table: dlt_app.Customer_Orders\n    \
                      column_map: {OrderId: order_id, amount: amount_cents, Unlisted: unlisted}\n";
    let renamed = load_ok(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)]))).definitions.remove(0);
    assert_eq!(
        (renamed.target_schema.as_str(), renamed.target_table.as_str()),
        ("dlt_app", "Customer_Orders"),
        "used exactly as written"
    );
    assert_eq!(renamed.target_key_column, "order_id");
    assert_eq!(renamed.target_timestamp_column, "updated_at", "unmapped columns keep the default rule");
    assert_eq!(renamed.target_compare_columns, ["amount_cents", "status"]);
    assert_eq!(renamed.source_key_column, "OrderId", "source names are untouched");
    assert_eq!(renamed.extensions.replica.column_map.len(), 3, "entries for other columns are kept for the run");
    let json = renamed.canonical_json();
    assert!(
        json.contains(r#""datadiff":{"column_map":{"OrderId":"order_id","Unlisted":"unlisted","amount":"amount_cents"},"replica_table":"dlt_app.Customer_Orders"}"#),
        "{json}"
    );
    assert_ne!(renamed.config_hash(), plain.config_hash(), "a new revision, with a watermark of its own");
    assert_eq!(
        datadiff_diff_core::definition::CheckDefinition::from_canonical_config(
            &renamed.full_check_name,
            &renamed.canonical_config()
        ),
        Ok(renamed.clone()),
        "a stored definition reads its naming back"
    );
    // Another replica table is another identity.
    let moved = extensions.replace("dlt_app.Customer_Orders", "dlt_app.orders_v2");
    let moved = load_ok(&project(&files(CONFIG, &text, &[("datadiff.yml", &moved)]))).definitions.remove(0);
    assert_ne!(moved.config_hash(), renamed.config_hash());
}

#[test]
fn bad_replica_naming_is_an_error_at_its_key_path() {
    let text = tap("", "", &VALID.replace("key_column: id", "key_column: OrderId"));
    let check = "checks.postgres/payments/public/transfers";
    for (settings, path, message) in [
        (
            "replica_table: orders",
            "replica_table",
            "replica_table must be 'schema.table' (two non-empty names split at the first '.'), got 'orders'",
        ),
        ("replica_table: [a, b]", "replica_table", "replica_table must be a string 'schema.table', got list"),
        ("column_map: [OrderId]", "column_map", "must be a mapping, got list"),
        (
            "column_map: {OrderId: 7}",
            "column_map.OrderId",
            "must be the replica's column name (a non-empty string), got int",
        ),
        (
            "column_map: {OrderId: ''}",
            "column_map.OrderId",
            "must be the replica's column name (a non-empty string), got str",
        ),
        (
            "column_map: {OrderId: id, amount: id}",
            "column_map.amount",
            "'amount' and 'OrderId' both map to the replica column 'id'",
        ),
        (
            "column_map: {orderid: order_id}",
            "column_map.orderid",
            "column_map key 'orderid' differs only in case from key_column 'OrderId': keys are source column names, case-sensitive; write the source's spelling in both places",
        ),
    ] {
        let extensions = format!("checks:\n  postgres/payments/public/transfers:\n    {settings}\n");
        let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)])));
        assert_eq!(found.len(), 1, "{settings}: {found:#?}");
        assert_eq!((found[0].file.as_str(), found[0].path.as_str()), ("datadiff.yml", &*format!("{check}.{path}")));
        assert_eq!(found[0].message, message, "{settings}");
    }
}

#[test]
fn key_columns_name_row_diffs_composite_key_through_the_column_map_and_enter_the_hash() {
    let text = tap("", "", &VALID.replace("key_column: id", "key_column: OrderId"));
    let plain = load_ok(&project(&files(CONFIG, &text, &[]))).definitions.remove(0);
    let load = |settings: &str| {
        let extensions =
            format!("checks:\n  postgres/payments/public/transfers:\n    row_diff: {{}}\n    {settings}\n");
        project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)]))
    };
    let composite =
        load_ok(&load("key_columns: [OrderId, LineNo]\n    column_map: {OrderId: order_id}")).definitions.remove(0);
    assert_eq!(composite.extensions.key_columns, ["OrderId", "LineNo"]);
    assert_eq!(
        composite.row_diff_key_columns(),
        [("OrderId".to_owned(), "order_id".to_owned()), ("LineNo".to_owned(), "lineno".to_owned())],
        "mapped names as written, the others lower-cased"
    );
    assert_eq!(composite.source_key_column, "OrderId", "key_column keeps its upstream meaning");
    let json = composite.canonical_json();
    assert!(json.contains(r#""key_columns":["OrderId","LineNo"]"#), "{json}");
    assert_eq!(
        datadiff_diff_core::definition::CheckDefinition::from_canonical_config(
            &composite.full_check_name,
            &composite.canonical_config()
        ),
        Ok(composite.clone()),
        "a stored definition reads its key columns back"
    );
    let single = load_ok(&load("key_columns: [OrderId]")).definitions.remove(0);
    assert_eq!(single.row_diff_key_columns(), [("OrderId".to_owned(), "orderid".to_owned())]);
    let without = load_ok(&load("")).definitions.remove(0);
    assert_eq!(without.row_diff_key_columns(), [("OrderId".to_owned(), "orderid".to_owned())]);
    assert_ne!(without.config_hash(), plain.config_hash(), "row_diff alone is already a revision");
    assert_ne!(composite.config_hash(), without.config_hash(), "key_columns is a new revision");
    assert_ne!(single.config_hash(), without.config_hash());
}

#[test]
fn bad_key_columns_are_an_error_at_their_key_path() {
    let check = "checks.postgres/payments/public/transfers";
    let text = tap("", "", VALID);
    for (settings, path, message) in [
        ("row_diff: {}\n    key_columns: []", "key_columns", "key_columns must name at least one column".to_owned()),
        (
            "row_diff: {}\n    key_columns: order_id",
            "key_columns",
            "key_columns must be a list of column names, got str".to_owned(),
        ),
        (
            "row_diff: {}\n    key_columns: [order_id, 7]",
            "key_columns[1]",
            "key_columns entries must be column names (strings), got int".to_owned(),
        ),
        (
            "row_diff: {}\n    key_columns: [order_id, line_no, order_id]",
            "key_columns[2]",
            "key_columns names 'order_id' twice".to_owned(),
        ),
        (
            "key_columns: [order_id, line_no]",
            "key_columns",
            "key_columns is row_diff's key: add row_diff to this check (the upstream checks use key_column)".to_owned(),
        ),
    ] {
        let extensions = format!("checks:\n  postgres/payments/public/transfers:\n    {settings}\n");
        let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", &extensions)])));
        assert_eq!(found.len(), 1, "{settings}: {found:#?}");
        assert_eq!((found[0].file.as_str(), found[0].path.as_str()), ("datadiff.yml", &*format!("{check}.{path}")));
        assert_eq!(found[0].message, message, "{settings}");
    }
    // A composite key's key_column is one part of it: its repeats are expected.
    let text =
        tap("", "", &VALID.replace("checks: [row_count, row_checksum]", "checks: [row_count, duplicate_key_count]"));
    let extensions =
        "checks:\n  postgres/payments/public/transfers:\n    row_diff: {}\n    key_columns: [id, line_no]\n";
    let found = problems(&project(&files(CONFIG, &text, &[("datadiff.yml", extensions)])));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, format!("{check}.key_columns"));
    assert!(
        found[0].message.starts_with(
            "duplicate_key_count cannot pass with a composite key: key_column 'id' is one part of (id, line_no)"
        ),
        "{}",
        found[0].message
    );
    let single = "checks:\n  postgres/payments/public/transfers:\n    row_diff: {}\n    key_columns: [id]\n";
    assert!(load_ok(&project(&files(CONFIG, &text, &[("datadiff.yml", single)]))).definitions.len() == 1);
}
