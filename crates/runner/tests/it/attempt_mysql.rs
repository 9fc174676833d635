//! Attempts of the `tap-mysql → target-postgres` route against a real MariaDB source (the
//! shared throwaway server, read by a SELECT-only user) and its PipelineWise-shaped
//! PostgreSQL replica: every check type, a planted difference, the preflight from
//! `information_schema.STATISTICS`, a historical start, and `row_diff` beside them, all
//! asserted on the backend's rows.

use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::definition::{CheckDefinition, CheckType, Extensions, RowDiffSettings, SourceType};
use datadiff_runner::{SummaryStatus, execute};
use datadiff_testkit::{MariaDbDatabase, shared_mariadb};
use mysql::prelude::Queryable;
use serde_json::json;

use crate::context::{Context, Verdict, at, counts, result, scheduled, sha256_hex, verdicts};

/// The MariaDB source: the PostgreSQL fixture's rows in MySQL types — `datetime(6)`,
/// `decimal(12,2)`, `varchar`, `tinyint(1)`, `varbinary` — and an index leading with the
/// timestamp. Rows 2–6 are in `[12:00, 13:00)`; 1 is just before, 7 at the end, 8 has none.
pub(crate) const MARIADB_SQL: &str = "
CREATE TABLE `Transfers` (
    `Id` bigint NOT NULL PRIMARY KEY,
    `UpdatedAt` datetime(6) NULL,
    `Amount` decimal(12, 2) NULL,
    `Status` varchar(20) NULL,
    `Active` tinyint(1) NULL,
    `Raw` varbinary(8) NULL,
    KEY `Transfers_UpdatedAt_idx` (`UpdatedAt`)
) CHARACTER SET utf8mb4;
INSERT INTO `Transfers` VALUES
    (1, '2026-07-22 11:59:59.999999', 10.00, 'open', 1, X'01'),
    (2, '2026-07-22 12:00:00', 12.34, 'paid', 0, X'00ff'),
    (3, '2026-07-22 12:15:00', 0.10, 'páid ✓', NULL, NULL),
    (4, '2026-07-22 12:30:00', 99.99, NULL, 1, X''),
    (5, '2026-07-22 12:45:00', 1.50, 'void', 0, X'0a0b'),
    (6, '2026-07-22 12:59:59.999999', 7.00, 'open', 1, X'ff'),
    (7, '2026-07-22 13:00:00', 8.00, 'open', 1, NULL),
    (8, NULL, 1.00, 'open', 1, NULL);";

/// The replica as target-postgres writes a tap-mysql table: lower-cased names, `timestamptz`,
/// `numeric(18,4)`, `character varying`, `boolean`, `bytea`, the `_sdc_*` columns.
pub(crate) const REPLICA_SQL: &str = r#"
CREATE SCHEMA shop;
CREATE TABLE shop.transfers (
    id bigint,
    updatedat timestamp with time zone,
    amount numeric(18,4),
    status character varying,
    active boolean,
    raw bytea,
    _sdc_extracted_at timestamp without time zone,
    _sdc_batched_at timestamp without time zone,
    _sdc_deleted_at character varying
);
INSERT INTO shop.transfers (id, updatedat, amount, status, active, raw) VALUES
    (1, '2026-07-22 11:59:59.999999+00', 10.0000, 'open', true, '\x01'),
    (2, '2026-07-22 12:00:00+00', 12.3400, 'paid', false, '\x00ff'),
    (3, '2026-07-22 12:15:00+00', 0.1000, 'páid ✓', NULL, NULL),
    (4, '2026-07-22 12:30:00+00', 99.9900, NULL, true, '\x'),
    (5, '2026-07-22 12:45:00+00', 1.5000, 'void', false, '\x0a0b'),
    (6, '2026-07-22 12:59:59.999999+00', 7.0000, 'open', true, '\xff'),
    (7, '2026-07-22 13:00:00+00', 8.0000, 'open', true, NULL),
    (8, NULL, 1.0000, 'open', true, NULL);
"#;

const READER_PASSWORD: &str = "mysql-reader-pw";

/// A context whose tap `payments` is a fresh MariaDB database (a SELECT-only reader) and
/// whose target is the replica above.
struct MySqlContext {
    context: Context,
    source: MariaDbDatabase<'static>,
}

impl MySqlContext {
    fn new() -> MySqlContext {
        let source = shared_mariadb().fresh_database().unwrap();
        source.client().unwrap().query_drop(MARIADB_SQL).unwrap();
        let reader = format!("reader_{}", source.name());
        source.create_user(&reader, READER_PASSWORD, &["SELECT"]).unwrap();
        let mut context = Context::new("", REPLICA_SQL);
        let server = shared_mariadb();
        let tap = DbConn {
            host: Some(server.host().to_owned()),
            port: Some(server.port()),
            user: Some(reader),
            password: Some(Secret::new(READER_PASSWORD)),
            dbname: Some(source.name().to_owned()),
            ..DbConn::default()
        };
        context.connections = context.connections.clone().with_tap("payments", tap);
        MySqlContext { context, source }
    }

    /// Every check over `Amount`, `Status`, `Active` and `Raw`, hourly, as tap-mysql imports
    /// it (the MySQL database is the source schema).
    fn definition(&self) -> CheckDefinition {
        let database = self.source.name().to_owned();
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", &database, "Transfers"),
            source_type: SourceType::TapMysql,
            source_database: database.clone(),
            source_schema: database,
            source_table: "Transfers".into(),
            target_schema: "shop".into(),
            target_table: "transfers".into(),
            source_compare_columns: vec!["Amount".into(), "Status".into(), "Active".into(), "Raw".into()],
            target_compare_columns: vec!["amount".into(), "status".into(), "active".into(), "raw".into()],
            ..self.context.definition()
        }
    }

    fn mariadb(&self, sql: &str) {
        self.source.client().unwrap().query_drop(sql).unwrap();
    }
}

fn metric(check: &str, status: &str, source: &str, target: &str) -> Verdict {
    (check.to_owned(), status.to_owned(), json!(source), json!(target))
}

#[test]
fn a_mariadb_source_passes_every_check_type_against_its_replica() {
    let mysql = MySqlContext::new();
    let context = &mysql.context;
    let summary = context.run(&mysql.definition());
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();

    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("PASS", None));
    assert_eq!((attempt.window_start, attempt.window_end), (Some(at(12, 0)), at(13, 0)));

    // The preflight read information_schema.STATISTICS: upstream's MySQL evidence keys.
    let preflight = context.preflight_row(run_id);
    assert_eq!(preflight.status, "PASS");
    assert_eq!((preflight.has_leading_index, preflight.table_rows, preflight.row_limit), (Some(true), None, None));
    let leading = preflight
        .index_metadata
        .as_array()
        .unwrap()
        .iter()
        .find(|index| index["index_name"] == json!("Transfers_UpdatedAt_idx"))
        .cloned()
        .unwrap_or_else(|| panic!("no timestamp index in {}", preflight.index_metadata));
    assert_eq!(
        leading,
        json!({"index_name": "Transfers_UpdatedAt_idx", "columns": ["UpdatedAt"], "is_unique": false,
               "access_method": "btree", "is_usable": true})
    );

    let rows = context.result_rows(run_id);
    assert_eq!(rows.len(), 8, "{rows:?}");
    assert_eq!(
        verdicts(&rows),
        vec![
            metric("distinct_key_count", "PASS", "5", "5"),
            metric("duplicate_key_count", "PASS", "0", "0"),
            metric("max_key", "PASS", "6", "6"),
            metric("min_key", "PASS", "2", "2"),
            metric("null_key_count", "PASS", "0", "0"),
            metric("row_count", "PASS", "5", "5"),
        ]
    );
    let checksum = result(&rows, "row_checksum");
    assert_eq!(checksum.status, "PASS", "{checksum:?}");
    assert_eq!(checksum.source_value, checksum.target_value);
    let digits = checksum.source_value.as_str().unwrap();
    assert!(digits.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()), "{digits}");
    assert_eq!(result(&rows, "schema_compatibility").status, "PASS");
    assert!(rows.iter().filter(|row| row.check_type != "schema_compatibility").all(|row| row.source_seconds.is_some()));
}

#[test]
fn the_preflight_fingerprints_upstreams_pymysql_text() {
    let mysql = MySqlContext::new();
    let definition = CheckDefinition { checks: vec![CheckType::RowCount, CheckType::MaxKey], ..mysql.definition() };
    let summary = mysql.context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let preflight = mysql.context.preflight_row(summary.run_id.unwrap());
    let text = format!(
        "SELECT COUNT(*) AS `row_count`, MAX(`Id`) AS `max_key` FROM `{}`.`Transfers` \
         WHERE `UpdatedAt` >= %s AND `UpdatedAt` < %s",
        mysql.source.name()
    );
    assert_eq!(preflight.fingerprint, sha256_hex(&mysql.context, &text));
}

#[test]
fn a_planted_difference_fails_the_checksum_of_its_window_only() {
    let mysql = MySqlContext::new();
    let context = &mysql.context;
    context.replica.client().unwrap().batch_execute("UPDATE shop.transfers SET raw = '\\x00fe' WHERE id = 2").unwrap();
    let definition = mysql.definition();
    let summary = context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Fail, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("FAIL", Some("row_checksum FAIL")));
    let rows = context.result_rows(run_id);
    let failed: Vec<&str> = rows.iter().filter(|row| row.status != "PASS").map(|row| row.check_type.as_str()).collect();
    assert_eq!(failed, ["row_checksum"]);
    let checksum = result(&rows, "row_checksum");
    assert_ne!(checksum.source_value, checksum.target_value);

    // The hour before holds only row 1, the same on both sides.
    let stored = context.import(&definition);
    let earlier =
        execute(&context.store, &context.connections, &stored, at(12, 0), scheduled(), &Context::options()).unwrap();
    assert_eq!(earlier.status, SummaryStatus::Pass, "{earlier:?}");
    let window = context.attempt_row(earlier.run_id.unwrap());
    assert_eq!((window.window_start, window.window_end), (Some(at(11, 0)), at(12, 0)));
    assert_eq!(result(&context.result_rows(earlier.run_id.unwrap()), "row_count").source_value, json!("1"));
}

#[test]
fn an_ignored_timestamp_index_does_not_count_and_the_table_is_counted() {
    let mysql = MySqlContext::new();
    mysql.mariadb("ALTER TABLE `Transfers` ALTER INDEX `Transfers_UpdatedAt_idx` IGNORED");
    let summary = mysql.context.run(&mysql.definition());
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let preflight = mysql.context.preflight_row(summary.run_id.unwrap());
    assert_eq!(preflight.status, "PASS");
    assert_eq!(
        (preflight.has_leading_index, preflight.table_rows, preflight.row_limit),
        (Some(false), Some(8), Some(100_000)),
        "every row counts, NULL timestamps included"
    );
    assert_eq!(
        preflight.findings,
        json!([
            "Allow the unindexed source table with 8 rows; a usable leading timestamp index is required at 100,000 rows"
        ])
    );
    let ignored = preflight
        .index_metadata
        .as_array()
        .unwrap()
        .iter()
        .find(|index| index["index_name"] == json!("Transfers_UpdatedAt_idx"))
        .cloned()
        .unwrap();
    assert_eq!(ignored["is_usable"], json!(false));
}

#[test]
fn a_historical_start_reads_the_minimum_on_mariadb() {
    let mysql = MySqlContext::new();
    let context = &mysql.context;
    // The replica is missing row 1: the later minimum (row 2's) is the start on both sides.
    context.replica.client().unwrap().batch_execute("DELETE FROM shop.transfers WHERE id = 1").unwrap();
    let definition = CheckDefinition { initial_full_scan: true, ..mysql.definition() };
    let summary = context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let attempt = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((attempt.window_start, attempt.window_end), (Some(at(12, 0)), at(13, 0)));
    assert_eq!(result(&context.result_rows(summary.run_id.unwrap()), "row_count").source_value, json!("5"));
}

#[test]
fn row_diff_from_a_mariadb_source_passes_beside_the_other_checks() {
    let mysql = MySqlContext::new();
    let definition = CheckDefinition {
        extensions: Extensions {
            row_diff: Some(RowDiffSettings::default()),
            exclude_soft_deleted: false,
            ..Extensions::default()
        },
        ..mysql.definition()
    };
    let summary = mysql.context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let rows = mysql.context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!((row_diff.status.as_str(), row_diff.error.as_deref()), ("PASS", None), "{row_diff:?}");
    assert_eq!(row_diff.source_value, json!({"rows": "5"}));
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "5", "missing": "0", "extra": "0", "changed": "0"}));
    assert_eq!(result(&rows, "row_checksum").status, "PASS");
}

#[test]
fn a_refused_mariadb_login_is_an_error_attempt_naming_the_source_without_its_password() {
    let mut mysql = MySqlContext::new();
    let server = shared_mariadb();
    let wrong = DbConn {
        host: Some(server.host().to_owned()),
        port: Some(server.port()),
        user: Some(format!("reader_{}", mysql.source.name())),
        password: Some(Secret::new("not-the-password-42")),
        dbname: Some(mysql.source.name().to_owned()),
        ..DbConn::default()
    };
    mysql.context.connections = mysql.context.connections.clone().with_tap("payments", wrong);
    let summary = mysql.context.run(&mysql.definition());
    assert_eq!(summary.status, SummaryStatus::Error, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let attempt = mysql.context.attempt_row(run_id);
    let error = attempt.error.unwrap_or_default();
    let address = format!("{}:{}/{}", server.host(), server.port(), mysql.source.name());
    assert!(error.starts_with(&format!("cannot connect to the source database {address}: ")), "{error}");
    assert!(error.contains("Access denied"), "{error}");
    assert!(!error.contains("not-the-password-42"), "{error}");
    // The placeholder preflight carries the same reason; no results.
    let preflight = mysql.context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.error.as_deref()), ("ERROR", Some(error.as_str())));
    assert!(mysql.context.result_rows(run_id).is_empty());
}
