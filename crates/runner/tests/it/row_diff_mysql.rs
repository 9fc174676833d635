//! `row_diff` from a MariaDB source (`tap-mysql`) against its PostgreSQL replica: every type
//! tap-mysql replicates compared equal when the data is, planted differences named by key
//! and column, an unsupported pair as a clear ERROR naming the column, and text keys in
//! mixed case and accents matched in one bytewise order — asserted on the backend's rows.

use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::definition::{CheckDefinition, CheckType, Extensions, RowDiffSettings, SourceType};
use datadiff_runner::SummaryStatus;
use datadiff_testkit::{MariaDbDatabase, shared_mariadb};
use mysql::prelude::Queryable;
use serde_json::json;

use crate::context::{Context, counts, result};
use crate::row_diff::{difference, differences};

/// Every type family tap-mysql replicates, in MariaDB types. Rows 1–4 are in the window
/// `[12:00, 13:00)`; row 5 is after it.
const MARIADB_SQL: &str = "
SET time_zone = '+00:00';
CREATE TABLE `Every` (
    `Id` bigint NOT NULL PRIMARY KEY,
    `UpdatedAt` datetime(6) NULL,
    `Tiny` tinyint NULL,
    `Small` smallint unsigned NULL,
    `Medium` mediumint NULL,
    `Regular` int unsigned NULL,
    `Big` bigint unsigned NULL,
    `Signed` bigint NULL,
    `Amount` decimal(12, 2) NULL,
    `Label` varchar(40) NULL,
    `Body` text NULL,
    `Code` char(4) NULL,
    `Stamp` timestamp(3) NULL DEFAULT NULL,
    `Day` date NULL,
    `Clock` time(6) NULL,
    `Flag` tinyint(1) NULL,
    `Bin` binary(4) NULL,
    `Varbin` varbinary(8) NULL,
    `Lob` blob NULL,
    `Ratio` double NULL,
    `Approx` float NULL
) CHARACTER SET utf8mb4;
INSERT INTO `Every` VALUES
    (1, '2026-07-22 12:00:00', -128, 65535, -8388608, 4294967295, 18446744073709551615,
        -9223372036854775808, -0.05, 'open', 'línea ✓', 'ab', '2026-07-22 11:00:00.125', '2026-07-21',
        '23:59:59.999999', 1, X'01', X'00ff', X'deadbeef', 0.1, 0.1),
    (2, '2026-07-22 12:15:00.123456', 127, 0, 8388607, 0, 0,
        9223372036854775807, 9999999999.99, '', '', '', '1970-01-01 00:00:01', '1000-01-01',
        '00:00:00', 0, X'00000000', X'', X'', -1.5e300, -3.25),
    (3, '2026-07-22 12:30:00', 0, 1, 0, 1, 9223372036854775808,
        0, 0.00, 'Ünïcode 🙂', 'x', 'zz  ', '2038-01-19 03:14:07.999', '9999-12-31',
        '12:34:56.5', 1, X'ff000000', X'0a0b00', X'00', 0, 16777217),
    (4, '2026-07-22 12:59:59.999999', NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (5, '2026-07-22 13:00:00', 1, 1, 1, 1, 1, 1, 1.00, 'after', 'after', 'a', NULL, NULL, NULL, 1,
        NULL, NULL, NULL, 1, 1);";

/// The replica as target-postgres writes it: integers as `bigint` (the unsigned `bigint` as
/// `numeric`, which holds its maximum), decimals and floats as `numeric`, strings as
/// `character varying`, date-times and dates as naive `timestamp`, `time`, `boolean`,
/// binary strings as `bytea`.
const REPLICA_SQL: &str = r#"
CREATE SCHEMA shop;
CREATE TABLE shop.every (
    id bigint,
    updatedat timestamp without time zone,
    tiny bigint,
    small bigint,
    medium bigint,
    regular bigint,
    big numeric,
    signed bigint,
    amount numeric,
    label character varying,
    body character varying,
    code character varying,
    stamp timestamp without time zone,
    day timestamp without time zone,
    clock time without time zone,
    flag boolean,
    bin bytea,
    varbin bytea,
    lob bytea,
    ratio numeric,
    approx numeric,
    _sdc_deleted_at character varying
);
INSERT INTO shop.every VALUES
    (1, '2026-07-22 12:00:00', -128, 65535, -8388608, 4294967295, 18446744073709551615,
        -9223372036854775808, -0.05, 'open', 'línea ✓', 'ab', '2026-07-22 11:00:00.125', '2026-07-21',
        '23:59:59.999999', true, '\x01000000', '\x00ff', '\xdeadbeef', 0.1, 0.1, NULL),
    (2, '2026-07-22 12:15:00.123456', 127, 0, 8388607, 0, 0,
        9223372036854775807, 9999999999.990, '', '', '', '1970-01-01 00:00:01', '1000-01-01',
        '00:00:00', false, '\x00000000', '\x', '\x', -1.5e300, -3.25, NULL),
    (3, '2026-07-22 12:30:00', 0, 1, 0, 1, 9223372036854775808,
        0, 0, 'Ünïcode 🙂', 'x', 'zz', '2038-01-19 03:14:07.999', '9999-12-31',
        '12:34:56.5', true, '\xff000000', '\x0a0b00', '\x00', 0, 16777216, NULL),
    (4, '2026-07-22 12:59:59.999999', NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (5, '2026-07-22 13:00:00', 1, 1, 1, 1, 1, 1, 1, 'after', 'after', 'a', NULL, NULL, NULL, true,
        NULL, NULL, NULL, 1, 1, NULL);
"#;

const COMPARED: [&str; 19] = [
    "Tiny", "Small", "Medium", "Regular", "Big", "Signed", "Amount", "Label", "Body", "Code", "Stamp", "Day", "Clock",
    "Flag", "Bin", "Varbin", "Lob", "Ratio", "Approx",
];

const READER_PASSWORD: &str = "mysql-rd-reader-pw";

/// A context whose tap `payments` is a fresh MariaDB database read by a SELECT-only user.
struct MySqlRowDiff {
    context: Context,
    source: MariaDbDatabase<'static>,
}

impl MySqlRowDiff {
    fn new(mariadb_sql: &str, replica_sql: &str) -> MySqlRowDiff {
        let source = shared_mariadb().fresh_database().unwrap();
        source.client().unwrap().query_drop(mariadb_sql).unwrap();
        let reader = format!("rd_{}", source.name());
        source.create_user(&reader, READER_PASSWORD, &["SELECT"]).unwrap();
        let mut context = Context::new("", replica_sql);
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
        MySqlRowDiff { context, source }
    }

    /// `row_count` and `row_diff` over `table` → `shop.<lowercase table>`, key `key`, the
    /// compare columns `compared` (lower-cased on the replica).
    fn definition(&self, table: &str, key: &str, compared: &[&str]) -> CheckDefinition {
        let database = self.source.name().to_owned();
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", &database, table),
            source_type: SourceType::TapMysql,
            source_database: database.clone(),
            source_schema: database,
            source_table: table.into(),
            target_schema: "shop".into(),
            target_table: table.to_lowercase(),
            source_key_column: key.into(),
            target_key_column: key.to_lowercase(),
            source_compare_columns: compared.iter().map(|name| name.to_string()).collect(),
            target_compare_columns: compared.iter().map(|name| name.to_lowercase()).collect(),
            checks: vec![CheckType::RowCount],
            extensions: Extensions {
                row_diff: Some(RowDiffSettings::default()),
                exclude_soft_deleted: false,
                ..Extensions::default()
            },
            ..self.context.definition()
        }
    }

    fn replica(&self, sql: &str) {
        self.context.replica.client().unwrap().batch_execute(sql).unwrap();
    }
}

#[test]
fn every_replicated_mariadb_type_compares_equal_to_its_replica() {
    let mysql = MySqlRowDiff::new(MARIADB_SQL, REPLICA_SQL);
    let context = &mysql.context;
    let summary = context.run(&mysql.definition("Every", "Id", &COMPARED));
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!((row_diff.status.as_str(), row_diff.error.as_deref()), ("PASS", None), "{rows:?}");
    assert_eq!(row_diff.source_value, json!({"rows": "4"}));
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "4", "missing": "0", "extra": "0", "changed": "0"}));
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    assert!(differences(context, run_id).is_empty());
}

#[test]
fn planted_differences_are_named_by_key_and_column() {
    let mysql = MySqlRowDiff::new(MARIADB_SQL, REPLICA_SQL);
    // Row 2 missing, row 6 extra; row 1 changed in one column of every family, row 3 in
    // what the source can tell apart from the replica's values (a trailing NUL, one float
    // ulp, a fraction of a millisecond, the case of a letter).
    mysql.replica(
        r"DELETE FROM shop.every WHERE id = 2;
         INSERT INTO shop.every (id, updatedat, label) VALUES (6, '2026-07-22 12:40:00', 'extra');
         UPDATE shop.every SET tiny = -127, big = 18446744073709551614, amount = -0.04, label = 'Open',
                code = 'ab ', stamp = '2026-07-22 11:00:00.126', day = '2026-07-21 00:00:01',
                clock = '23:59:59.999998', flag = false, varbin = '\x00fe', ratio = 0.1000000000000001
          WHERE id = 1;
         UPDATE shop.every SET lob = '\x', bin = '\xff', approx = 16777218, body = 'X' WHERE id = 3;",
    );
    let context = &mysql.context;
    let summary = context.run(&mysql.definition("Every", "Id", &COMPARED));
    assert_eq!(summary.status, SummaryStatus::Fail, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "FAIL", "{rows:?}");
    assert_eq!(row_diff.source_value, json!({"rows": "4"}));
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "4", "missing": "1", "extra": "1", "changed": "2"}));
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(
                1,
                "CHANGED",
                json!({"Id": "1"}),
                &["Tiny", "Big", "Amount", "Label", "Stamp", "Day", "Clock", "Flag", "Varbin", "Ratio"]
            ),
            difference(2, "MISSING_IN_TARGET", json!({"Id": "2"}), &[]),
            difference(3, "CHANGED", json!({"Id": "3"}), &["Body", "Bin", "Lob", "Approx"]),
            difference(4, "EXTRA_IN_TARGET", json!({"Id": "6"}), &[]),
        ]
    );
}

#[test]
fn a_pair_without_a_faithful_comparison_is_an_error_naming_the_column() {
    let mysql = MySqlRowDiff::new(
        "CREATE TABLE `Docs` (`Id` int NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Doc` json NULL);
         INSERT INTO `Docs` VALUES (1, '2026-07-22 12:00:00', '{\"a\": 1}');",
        "CREATE SCHEMA shop;
         CREATE TABLE shop.docs (id bigint, updatedat timestamp, doc jsonb);
         INSERT INTO shop.docs VALUES (1, '2026-07-22 12:00:00', '{\"a\": 1}');",
    );
    let context = &mysql.context;
    let summary = context.run(&mysql.definition("Docs", "Id", &["Doc"]));
    assert_eq!(summary.status, SummaryStatus::Error, "{summary:?}");
    let rows = context.result_rows(summary.run_id.unwrap());
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "ERROR");
    // MariaDB stores json as longtext; the replica's jsonb has no faithful text comparison.
    assert_eq!(
        row_diff.error.as_deref(),
        Some(
            "row_diff: column doc has type jsonb on the target database, which datadiff cannot compare \
             (longtext on the source, jsonb on the target)"
        )
    );
    assert_eq!(result(&rows, "row_count").status, "PASS");
}

#[test]
fn an_incompatible_pair_is_an_error_naming_the_column() {
    let mysql = MySqlRowDiff::new(
        "CREATE TABLE `Days` (`Id` int NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Day` date NULL);
         INSERT INTO `Days` VALUES (1, '2026-07-22 12:00:00', '2026-07-22');",
        "CREATE SCHEMA shop;
         CREATE TABLE shop.days (id bigint, updatedat timestamp, day boolean);
         INSERT INTO shop.days VALUES (1, '2026-07-22 12:00:00', true);",
    );
    let summary = mysql.context.run(&mysql.definition("Days", "Id", &["Day"]));
    let rows = mysql.context.result_rows(summary.run_id.unwrap());
    assert_eq!(
        result(&rows, "row_diff").error.as_deref(),
        Some("row_diff: column Day cannot be compared: date on the source, boolean on the target")
    );
}

/// Keys that a case- and accent-insensitive collation orders (and equates) differently from
/// their bytes.
const KEYS: [&str; 12] = ["a", "A", "b", "B", "é", "É", "e", "z", "Z", "ä", "a b", "ab"];

#[test]
fn text_keys_in_mixed_case_and_accents_meet_in_bytewise_order() {
    let mut mariadb = String::from(
        "CREATE TABLE `Words` (`Word` varchar(20) NOT NULL, `UpdatedAt` datetime NULL, `Note` varchar(20) NULL,
           KEY `Words_Word` (`Word`)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;",
    );
    let mut replica = String::from(
        "CREATE SCHEMA shop;
         CREATE TABLE shop.words (word character varying, updatedat timestamp, note character varying);",
    );
    for (index, key) in KEYS.iter().enumerate() {
        mariadb.push_str(&format!("INSERT INTO `Words` VALUES ('{key}', '2026-07-22 12:00:00', 'n{index}');"));
        replica.push_str(&format!("INSERT INTO shop.words VALUES ('{key}', '2026-07-22 12:00:00', 'n{index}');"));
    }
    // One changed row, one missing, one extra, each a key a collation would confuse.
    replica.push_str(
        "UPDATE shop.words SET note = 'changed' WHERE word = 'É';
         DELETE FROM shop.words WHERE word = 'a';
         INSERT INTO shop.words VALUES ('Ä', '2026-07-22 12:00:00', 'extra');",
    );
    let mysql = MySqlRowDiff::new(&mariadb, &replica);
    let context = &mysql.context;
    let summary = context.run(&mysql.definition("Words", "Word", &["Note"]));
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "FAIL", "{rows:?}");
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "12", "missing": "1", "extra": "1", "changed": "1"}));
    // Bytewise: "a" (61) after "Z" (5a); "Ä" (c3 84) before "É" (c3 89) before "ä" (c3 a4).
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(1, "MISSING_IN_TARGET", json!({"Word": "a"}), &[]),
            difference(2, "EXTRA_IN_TARGET", json!({"Word": "Ä"}), &[]),
            difference(3, "CHANGED", json!({"Word": "É"}), &["Note"]),
        ]
    );
}

#[test]
fn varchar_keys_keep_their_trailing_blanks_and_only_char_keys_are_trimmed() {
    // Trailing blanks of a varchar key used to be trimmed: a replica 'k1' for a source
    // 'k1  ' passed, and a faithful 'a ' was reported missing and extra.
    let mariadb = "CREATE TABLE `Codes` (`Code` varchar(10) NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Note` varchar(10) NULL);
                   INSERT INTO `Codes` VALUES ('k1  ', '2026-07-22 12:00:00', 'one'), ('a ', '2026-07-22 12:00:00', 'two'),
                   ('b', '2026-07-22 12:00:00', 'three');
                   CREATE TABLE `Padded` (`Code` char(6) NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Note` varchar(10) NULL);
                   INSERT INTO `Padded` VALUES ('p1', '2026-07-22 12:00:00', 'one');";
    let replica = "CREATE SCHEMA shop;
                   CREATE TABLE shop.codes (code character varying, updatedat timestamp, note character varying);
                   INSERT INTO shop.codes VALUES ('k1', '2026-07-22 12:00:00', 'one'), ('a ', '2026-07-22 12:00:00', 'two'),
                   ('b', '2026-07-22 12:00:00', 'three');
                   CREATE TABLE shop.padded (code character varying, updatedat timestamp, note character varying);
                   INSERT INTO shop.padded VALUES ('p1    ', '2026-07-22 12:00:00', 'one');";
    let mysql = MySqlRowDiff::new(mariadb, replica);
    let context = &mysql.context;
    let run_id = context.run(&mysql.definition("Codes", "Code", &["Note"])).run_id.unwrap();
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(1, "EXTRA_IN_TARGET", json!({"Code": "k1"}), &[]),
            difference(2, "MISSING_IN_TARGET", json!({"Code": "k1  "}), &[]),
        ]
    );
    // A char(n) key pads: its blanks carry nothing, on either side.
    let summary = context.run(&mysql.definition("Padded", "Code", &["Note"]));
    assert_eq!(summary.status, datadiff_runner::SummaryStatus::Pass, "{summary:?}");
}

#[test]
fn a_row_diff_only_definition_fingerprints_its_mysql_select() {
    let mysql = MySqlRowDiff::new(
        "CREATE TABLE `Words` (`Word` varchar(20) NOT NULL, `UpdatedAt` datetime NULL, `Note` varchar(20) NULL,
           KEY `Words_UpdatedAt` (`UpdatedAt`));
         INSERT INTO `Words` VALUES ('a', '2026-07-22 12:00:00', 'x');",
        "CREATE SCHEMA shop;
         CREATE TABLE shop.words (word character varying, updatedat timestamp, note character varying);
         INSERT INTO shop.words VALUES ('a', '2026-07-22 12:00:00', 'x');",
    );
    let context = &mysql.context;
    let mut definition = mysql.definition("Words", "Word", &["Note"]);
    definition.checks = vec![CheckType::SchemaCompatibility];
    let summary = context.run(&definition);
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    let select = format!(
        "SELECT `Word`, `UpdatedAt`, `Note` FROM `{}`.`Words` WHERE `UpdatedAt` >= %s AND `UpdatedAt` < %s \
         ORDER BY CAST(CONVERT(`Word` USING utf8mb4) AS BINARY)",
        mysql.source.name()
    );
    let preflight = context.preflight_row(run_id);
    assert_eq!(preflight.status, "PASS");
    assert_eq!(preflight.fingerprint, crate::context::sha256_hex(context, &select));
    let rows = context.result_rows(run_id);
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "1", "missing": "0", "extra": "0", "changed": "0"})
    );
}

#[test]
fn zero_dates_compare_as_null_and_empty_strings_as_null_only_when_declared() {
    let mysql = MySqlRowDiff::new(
        "SET SESSION sql_mode = '';
         CREATE TABLE `Zeros` (`Id` int NOT NULL PRIMARY KEY, `UpdatedAt` datetime NOT NULL,
           `Day` date NOT NULL, `At` datetime NOT NULL, `Note` varchar(10) NULL);
         INSERT INTO `Zeros` VALUES (1, '2026-07-22 12:00:00', '0000-00-00', '0000-00-00 00:00:00', ''),
                                    (2, '2026-07-22 12:10:00', '2026-07-00', '2026-07-22 12:10:00', 'x');",
        "CREATE SCHEMA shop;
         CREATE TABLE shop.zeros (id bigint, updatedat timestamp, day timestamp, at timestamp, note varchar);
         INSERT INTO shop.zeros VALUES (1, '2026-07-22 12:00:00', NULL, NULL, NULL),
                                       (2, '2026-07-22 12:10:00', NULL, '2026-07-22 12:10:00', 'x');",
    );
    let context = &mysql.context;
    // Exact: the empty string against NULL is a change; the zero dates are NULL.
    let exact = mysql.definition("Zeros", "Id", &["Day", "At", "Note"]);
    let summary = context.run(&exact);
    let run_id = summary.run_id.unwrap();
    assert_eq!(result(&context.result_rows(run_id), "row_diff").status, "FAIL");
    assert_eq!(differences(context, run_id), vec![difference(1, "CHANGED", json!({"Id": "1"}), &["Note"])]);
    // Declared: target-postgres' empty string as NULL is expected.
    let coerced = CheckDefinition {
        extensions: Extensions {
            row_diff: Some(RowDiffSettings::default().with_empty_string_as_null(true)),
            exclude_soft_deleted: false,
            ..Extensions::default()
        },
        ..exact
    };
    let summary = context.run(&coerced);
    let rows = context.result_rows(summary.run_id.unwrap());
    assert_eq!(result(&rows, "row_diff").status, "PASS", "{rows:?}");
}

#[test]
fn an_unsigned_key_beyond_bigint_is_an_error_naming_the_key() {
    let mysql = MySqlRowDiff::new(
        "CREATE TABLE `Wide` (`Id` bigint unsigned NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Note` text);
         INSERT INTO `Wide` VALUES (18446744073709551615, '2026-07-22 12:00:00', 'x');",
        "CREATE SCHEMA shop;
         CREATE TABLE shop.wide (id bigint, updatedat timestamp, note varchar);",
    );
    let summary = mysql.context.run(&mysql.definition("Wide", "Id", &["Note"]));
    let rows = mysql.context.result_rows(summary.run_id.unwrap());
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "ERROR");
    assert_eq!(
        row_diff.error.as_deref(),
        Some("row_diff: cannot decode column Id of the source stream: an unsigned key beyond the bigint range")
    );
}

#[test]
fn a_composite_key_streams_in_tuple_order_and_differences_name_every_key_column() {
    // `Code` under a case-insensitive collation, `Line` an integer: the tuple must arrive in
    // the replica's order, `Code` bytewise ("B" < "Z" < "a" < "É"), then `Line`.
    let mut mariadb = String::from(
        "CREATE TABLE `Links` (`Code` varchar(20) NOT NULL, `Line` int NOT NULL, `UpdatedAt` datetime NULL,
           `Note` varchar(20) NULL, PRIMARY KEY (`Code`, `Line`)) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;",
    );
    let mut replica = String::from(
        "CREATE SCHEMA shop;
         CREATE TABLE shop.links (code character varying, line bigint, updatedat timestamp, note character varying);",
    );
    for code in ["a", "B", "É", "Z"] {
        for line in 1..=2 {
            let row = format!("'{code}', {line}, '2026-07-22 12:00:00', 'n{line}'");
            mariadb.push_str(&format!("INSERT INTO `Links` VALUES ({row});"));
            replica.push_str(&format!("INSERT INTO shop.links VALUES ({row});"));
        }
    }
    let definition = |mysql: &MySqlRowDiff| {
        let mut definition = mysql.definition("Links", "Code", &["Note"]);
        definition.extensions.key_columns = vec!["Code".into(), "Line".into()];
        definition
    };
    let mysql = MySqlRowDiff::new(&mariadb, &replica);
    let run_id = mysql.context.run(&definition(&mysql)).run_id.unwrap();
    let rows = mysql.context.result_rows(run_id);
    assert_eq!(result(&rows, "row_diff").status, "PASS", "equal tables: {rows:?}");

    // A changed line, a missing one and an extra one (a lost delete), each beside an equal
    // line of the same code: only `Line` tells them apart.
    replica.push_str(
        "UPDATE shop.links SET note = 'changed' WHERE code = 'É' AND line = 2;
         DELETE FROM shop.links WHERE code = 'a' AND line = 1;
         INSERT INTO shop.links VALUES ('B', 3, '2026-07-22 12:00:00', 'extra');",
    );
    let mysql = MySqlRowDiff::new(&mariadb, &replica);
    let context = &mysql.context;
    let run_id = context.run(&definition(&mysql)).run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!(row_diff.status, "FAIL", "{rows:?}");
    assert_eq!(counts(&row_diff.target_value), json!({"rows": "8", "missing": "1", "extra": "1", "changed": "1"}));
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(1, "EXTRA_IN_TARGET", json!({"Code": "B", "Line": "3"}), &[]),
            difference(2, "MISSING_IN_TARGET", json!({"Code": "a", "Line": "1"}), &[]),
            difference(3, "CHANGED", json!({"Code": "É", "Line": "2"}), &["Note"]),
        ]
    );
}

#[test]
fn a_fact_table_keyed_by_date_and_datetime_meets_its_target_postgres_replica() {
    // `(Day date, Store int)` on MariaDB, `(day timestamp, store bigint)` as target-postgres
    // loads them; and a `datetime(6)` key against a `timestamp`. Keys in time order: a
    // microsecond apart, across years.
    let mut mariadb = String::from(
        "CREATE TABLE `Facts` (`Day` date NOT NULL, `Store` int NOT NULL, `UpdatedAt` datetime NULL,
           `Amount` decimal(10,2) NULL, PRIMARY KEY (`Day`, `Store`));
         CREATE TABLE `Ticks` (`At` datetime(6) NOT NULL PRIMARY KEY, `UpdatedAt` datetime NULL, `Note` varchar(20) NULL);",
    );
    let mut replica = String::from(
        "CREATE SCHEMA shop;
         CREATE TABLE shop.facts (day timestamp, store bigint, updatedat timestamp, amount numeric(10,2));
         CREATE TABLE shop.ticks (at timestamp, updatedat timestamp, note character varying);",
    );
    for (day, store, amount) in [("1999-12-31", 2, "1.00"), ("2026-07-21", 1, "2.00"), ("2026-07-21", 2, "3.00")] {
        let row = format!("'{day}', {store}, '2026-07-22 12:00:00', {amount}");
        mariadb.push_str(&format!("INSERT INTO `Facts` VALUES ({row});"));
        replica.push_str(&format!("INSERT INTO shop.facts VALUES ({row});"));
    }
    for at in ["2026-07-22 12:00:00", "2026-07-22 12:00:00.000001", "2001-01-01 00:00:00.5"] {
        let row = format!("'{at}', '2026-07-22 12:00:00', 'n'");
        mariadb.push_str(&format!("INSERT INTO `Ticks` VALUES ({row});"));
        replica.push_str(&format!("INSERT INTO shop.ticks VALUES ({row});"));
    }
    let facts = |mysql: &MySqlRowDiff| {
        let mut definition = mysql.definition("Facts", "Day", &["Amount"]);
        definition.extensions.key_columns = vec!["Day".into(), "Store".into()];
        definition
    };
    let mysql = MySqlRowDiff::new(&mariadb, &replica);
    for definition in [facts(&mysql), mysql.definition("Ticks", "At", &["Note"])] {
        let run_id = mysql.context.run(&definition).run_id.unwrap();
        let rows = mysql.context.result_rows(run_id);
        assert_eq!(result(&rows, "row_diff").status, "PASS", "equal tables: {rows:?}");
    }

    // A negated amount, a lost delete at another time of the same day, a missed row; a note
    // changed, an instant moved by a microsecond.
    replica.push_str(
        "UPDATE shop.facts SET amount = -amount WHERE day = '2026-07-21' AND store = 2;
         INSERT INTO shop.facts VALUES ('2026-07-21 00:00:01', 2, '2026-07-22 12:00:00', 3.00);
         DELETE FROM shop.facts WHERE day = '1999-12-31';
         UPDATE shop.ticks SET note = 'N' WHERE at = '2001-01-01 00:00:00.5';
         UPDATE shop.ticks SET at = '2026-07-22 12:00:00.000002' WHERE at = '2026-07-22 12:00:00.000001';",
    );
    let mysql = MySqlRowDiff::new(&mariadb, &replica);
    let context = &mysql.context;
    let run_id = context.run(&facts(&mysql)).run_id.unwrap();
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(1, "MISSING_IN_TARGET", json!({"Day": "1999-12-31T00:00:00Z", "Store": "2"}), &[]),
            difference(2, "CHANGED", json!({"Day": "2026-07-21T00:00:00Z", "Store": "2"}), &["Amount"]),
            difference(3, "EXTRA_IN_TARGET", json!({"Day": "2026-07-21T00:00:01Z", "Store": "2"}), &[]),
        ]
    );
    let run_id = context.run(&mysql.definition("Ticks", "At", &["Note"])).run_id.unwrap();
    assert_eq!(
        differences(context, run_id),
        vec![
            difference(1, "CHANGED", json!({"At": "2001-01-01T00:00:00.500000Z"}), &["Note"]),
            difference(2, "MISSING_IN_TARGET", json!({"At": "2026-07-22T12:00:00.000001Z"}), &[]),
            difference(3, "EXTRA_IN_TARGET", json!({"At": "2026-07-22T12:00:00.000002Z"}), &[]),
        ]
    );
}
