//! One failing input per validation rule: the problem's file, YAML path, line and message.

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, single_problem, tap};

const DD: &str = "schemas[0].tables[0].data_diff";

fn with(replace: &str, by: &str) -> String {
    assert!(VALID.contains(replace), "{replace}");
    VALID.replace(replace, by)
}

#[test]
fn the_valid_block_loads() {
    let dir =
        project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &tap("", "", VALID))]);
    let project = load_ok(&dir);
    assert_eq!(project.definitions.len(), 1);
    assert_eq!(project.definitions[0].full_check_name, "postgres/payments/public/transfers");
}

// --- tap.json: the shape of data_diff and data_diff_defaults --------------------------------

#[test]
fn unknown_keys_in_data_diff_are_errors_including_name() {
    let problem = single_problem("", "", &format!("{VALID}name: transfers_check\n"));
    assert_eq!(problem.file, "tap_payments.yml");
    assert_eq!(problem.path, format!("{DD}.name"));
    assert_eq!(problem.line, Some(19));
    assert!(problem.message.starts_with("unknown key 'name'"), "{}", problem.message);
}

#[test]
fn required_keys_of_data_diff() {
    let problem = single_problem("", "", &with("key_column: id\n", ""));
    assert_eq!(problem.path, DD);
    assert_eq!(problem.message, "'key_column' is a required property");
    let problem = single_problem("", "", &with("timestamp_column: updated_at\n", ""));
    assert_eq!(problem.message, "'timestamp_column' is a required property");
}

#[test]
fn checks_must_be_a_non_empty_unique_list() {
    let problem = single_problem("", "", &with("checks: [row_count, row_checksum]", "checks: []"));
    assert_eq!(
        (problem.path.as_str(), problem.message.as_str()),
        (format!("{DD}.checks").as_str(), "must not be empty")
    );
    let problem = single_problem("", "", &with("checks: [row_count, row_checksum]", "checks: [row_count, row_count]"));
    assert_eq!(problem.path, format!("{DD}.checks[1]"));
    assert!(problem.message.contains("listed twice"));
    let problem = single_problem("", "", &with("checks: [row_count, row_checksum]", "checks: row_count"));
    assert_eq!(problem.message, "must be a list, got str");
}

#[test]
fn compare_columns_must_be_unique_non_empty_strings() {
    let problem = single_problem("", "", &with("compare_columns: [amount, status]", "compare_columns: [amount, '']"));
    assert_eq!(problem.path, format!("{DD}.compare_columns[1]"));
    assert_eq!(problem.message, "must be a non-empty string");
}

#[test]
fn timing_values_are_strings_of_two_characters_or_more() {
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: 0"));
    assert_eq!(problem.path, format!("{DD}.window_end"));
    assert_eq!(problem.message, "must be a string such as '1h', got int");
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: '5'"));
    assert!(problem.message.contains("too short"));
}

#[test]
fn schema_version_accepts_only_1() {
    let problem = single_problem("", "", &format!("{VALID}schema_version: 2\n"));
    assert_eq!(problem.path, format!("{DD}.schema_version"));
    assert!(problem.message.contains("only 1 is accepted"));
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", &format!("{VALID}schema_version: 1\n"))),
    ]);
    assert_eq!(load_ok(&dir).definitions.len(), 1);
}

#[test]
fn unknown_keys_in_defaults_are_errors() {
    let problem = single_problem("frequency: '0 * * * *'\nchecks: [row_count]\n", "", VALID);
    assert_eq!(problem.path, "data_diff_defaults.checks");
    assert_eq!(problem.line, Some(8));
    assert!(problem.message.starts_with("unknown key 'checks'"));
}

// --- PipelineWise's ten rules, in order ------------------------------------------------------

#[test]
fn rule_1_timing_must_be_defined_or_inherited() {
    let block = with("frequency: '0 * * * *'\n", "").replace("window_start: -2h\n", "");
    let problem = single_problem("", "", &block);
    assert_eq!(problem.path, DD);
    assert_eq!(
        problem.message,
        "Data-diff timing must be defined on the table or inherited from tap data_diff_defaults: frequency, window_start"
    );
    // Only the missing key is listed; an empty string counts as missing.
    let problem =
        single_problem("", "", &with("window_start: -2h", "window_start: ''").replace("window_end: -1h\n", ""));
    assert!(problem.message.ends_with("data_diff_defaults: window_start"), "{}", problem.message);
}

#[test]
fn rule_1_timing_inherited_from_defaults_is_enough() {
    let block =
        with("frequency: '0 * * * *'\n", "").replace("window_start: -2h\n", "").replace("window_end: -1h\n", "");
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("frequency: '30 2 * * *'\nwindow_start: -1d\n", "", &block)),
    ]);
    let definition = load_ok(&dir).definitions.remove(0);
    assert_eq!(
        (definition.frequency.as_str(), definition.window_start_seconds, definition.window_end_seconds),
        ("30 2 * * *", 86_400, 0)
    );
}

#[test]
fn rule_2_unsupported_routes() {
    let text = tap("", "", VALID).replace("type: tap-postgres", "type: tap-s3-csv");
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, DD);
    assert_eq!(
        found[0].message,
        "Data diff supports only MySQL/MariaDB or PostgreSQL sources with PostgreSQL or Snowflake targets; got tap-s3-csv -> target-postgres for tap 'payments'"
    );
    let target = TARGET.replace("target-postgres", "target-bigquery");
    let dir =
        project(&[("config.yml", CONFIG), ("target_postgres.yml", &target), ("tap_payments.yml", &tap("", "", VALID))]);
    assert!(problems(&dir)[0].message.contains("got tap-postgres -> target-bigquery for tap 'payments'"));
}

#[test]
fn rule_2_snowflake_targets_import_upper_cased() {
    let target = TARGET.replace("target-postgres", "target-snowflake");
    let dir =
        project(&[("config.yml", CONFIG), ("target_postgres.yml", &target), ("tap_payments.yml", &tap("", "", VALID))]);
    let definition = load_ok(&dir).definitions.remove(0);
    assert_eq!((definition.target_schema.as_str(), definition.target_table.as_str()), ("REPLICATED", "TRANSFERS"));
    assert_eq!(definition.target_compare_columns, ["AMOUNT", "STATUS"]);
    assert!(definition.unsupported_route().is_some());
}

#[test]
fn rule_3_unsupported_check_names_as_a_python_list() {
    let problem =
        single_problem("", "", &with("checks: [row_count, row_checksum]", "checks: [row_count, row_diff, bogus]"));
    assert_eq!(problem.path, format!("{DD}.checks"));
    assert_eq!(problem.message, "Unsupported data-diff checks: ['bogus', 'row_diff']");
}

#[test]
fn rule_4_row_checksum_needs_compare_columns() {
    let problem = single_problem("", "", &with("compare_columns: [amount, status]\n", ""));
    assert_eq!(problem.path, format!("{DD}.checks"));
    assert_eq!(problem.message, "row_checksum requires at least one compare_columns entry for public.transfers");
}

#[test]
fn rule_5_transformed_columns_cannot_be_compared() {
    let extra = "transformations:\n  - {column: status, type: HASH}\n  - {column: id, type: SET-NULL}\n  - {column: other, type: HASH}\n";
    let problem = single_problem("", extra, VALID);
    assert_eq!(problem.path, DD);
    assert_eq!(problem.message, "Data-diff columns cannot be transformed for public.transfers: id, status");
    // Case-sensitive: a transformation of "Status" does not touch "status".
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "transformations:\n  - {column: Status, type: HASH}\n", VALID)),
    ]);
    assert_eq!(load_ok(&dir).definitions.len(), 1);
}

#[test]
fn rule_6_frequency_must_be_a_crontab() {
    for bad in ["1h", "15min", "every hour", "0 * * *"] {
        let problem = single_problem("", "", &with("frequency: '0 * * * *'", &format!("frequency: '{bad}'")));
        assert_eq!(problem.path, format!("{DD}.frequency"));
        assert_eq!(
            problem.message,
            format!(
                "frequency must be a crontab expression, got '{bad}' in check 'postgres/payments/public/transfers'. Example: '0 */6 * * *' for every six hours"
            )
        );
    }
}

#[test]
fn rule_6_six_fields_say_datadiff_reads_five_and_inherited_values_point_to_defaults() {
    let block = with("frequency: '0 * * * *'\n", "");
    let problem = single_problem("frequency: '0 0 * * * *'\n", "", &block);
    assert_eq!(problem.path, "data_diff_defaults.frequency");
    assert_eq!(problem.line, Some(7));
    assert!(problem.message.contains("datadiff reads only 5 fields"), "{}", problem.message);
}

#[test]
fn rule_7_window_start_durations() {
    let problem =
        single_problem("", "", &with("window_start: -2h", "window_start: -0s").replace("window_end: -1h\n", ""));
    assert_eq!(problem.path, format!("{DD}.window_start"));
    assert_eq!(problem.message, "Duration '0s' must be greater than zero");
    let problem = single_problem("", "", &with("window_start: -2h", "window_start: 2hours"));
    assert_eq!(problem.message, "Invalid duration '2hours'. Supported units are s, min, h, d and w");
    let problem = single_problem("", "", &with("window_start: -2h", "window_start: 1h1h"));
    assert_eq!(problem.message, "Duration unit 'h' is specified more than once in '1h1h'");
}

#[test]
fn rule_8_initial_full_scan_must_be_a_boolean() {
    let problem = single_problem("", "", &format!("{VALID}initial_full_scan: 'false'\n"));
    assert_eq!(problem.path, format!("{DD}.initial_full_scan"));
    assert_eq!(problem.message, "initial_full_scan must be a boolean in check 'postgres/payments/public/transfers'");
    // YAML 1.1 booleans are booleans.
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("initial_full_scan: on\n", "", VALID)),
    ]);
    assert!(load_ok(&dir).definitions[0].initial_full_scan);
}

#[test]
fn rule_9_window_end_must_be_closer_to_the_fire_time() {
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: -2h"));
    assert_eq!(problem.path, format!("{DD}.window_end"));
    assert_eq!(
        problem.message,
        "window_end must be closer to fire time than window_start (window_start=7200s, window_end=7200s) in check 'postgres/payments/public/transfers'"
    );
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: 1x"));
    assert_eq!(problem.message, "Invalid duration '1x'. Supported units are s, min, h, d and w");
}

#[test]
fn rule_10_statement_timeout_is_not_sign_stripped() {
    let problem = single_problem("", "", &format!("{VALID}statement_timeout: -5min\n"));
    assert_eq!(problem.path, format!("{DD}.statement_timeout"));
    assert_eq!(problem.message, "Invalid duration '-5min'. Supported units are s, min, h, d and w");
    let problem = single_problem("statement_timeout: 0s\n", "", VALID);
    assert_eq!(problem.path, "data_diff_defaults.statement_timeout");
    assert_eq!(problem.message, "Duration '0s' must be greater than zero");
}

#[test]
fn every_problem_of_a_table_is_reported_in_upstream_order() {
    let block = "checks: [row_count, nope]\nkey_column: id\ntimestamp_column: ts\nfrequency: 'hourly'\nwindow_start: 0s\ninitial_full_scan: 'yes'\n";
    let dir =
        project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &tap("", "", block))]);
    let messages: Vec<String> = problems(&dir).into_iter().map(|p| p.message).collect();
    assert_eq!(messages.len(), 4, "{messages:#?}");
    assert!(messages[0].starts_with("Unsupported data-diff checks"));
    assert!(messages[1].starts_with("frequency must be a crontab"));
    assert!(messages[2].starts_with("Duration '0s'"));
    assert!(messages[3].starts_with("initial_full_scan must be a boolean"));
}

#[test]
fn duplicate_full_check_names_are_errors() {
    let text = tap("", "", VALID);
    let twice = format!("{text}      - table_name: transfers\n        data_diff:\n{}", crate::indent(VALID, 10));
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &twice)]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, "schemas[0].tables[1].data_diff");
    assert!(found[0].message.starts_with("Data-diff check names must be unique for each table"));
}

// --- cross-file rules ----------------------------------------------------------------------

#[test]
fn duplicate_tap_and_target_ids_and_unknown_targets() {
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("target_copy.yml", TARGET),
        ("tap_payments.yml", &tap("", "", VALID)),
        ("tap_payments_again.yaml", &tap("", "", VALID)),
        (
            "tap_orphan.yml",
            &tap("", "", VALID).replace("id: payments", "id: orphan").replace("target: postgres", "target: nowhere"),
        ),
    ]);
    let found = problems(&dir);
    let summary: Vec<(String, String)> = found.iter().map(|p| (p.file.clone(), p.message.clone())).collect();
    assert!(
        summary.contains(&(
            "target_postgres.yml".into(),
            "duplicate target id 'postgres' (also defined in target_copy.yml)".into()
        )),
        "{summary:#?}"
    );
    assert!(
        summary.contains(&(
            "tap_payments_again.yaml".into(),
            "duplicate tap id 'payments' (also defined in tap_payments.yml)".into()
        )),
        "{summary:#?}"
    );
    assert!(
        summary.contains(&("tap_orphan.yml".into(), "tap 'orphan' references unknown target 'nowhere'".into())),
        "{summary:#?}"
    );
    assert_eq!(found.len(), 3);
}

#[test]
fn problems_of_several_files_are_reported_together() {
    let dir = project(&[
        ("config.yml", "backend_db: {host: h}\n"),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", &with("frequency: '0 * * * *'", "frequency: nope"))),
        ("datadiff.yml", "checks: {}\nextra: 1\n"),
    ]);
    let files: Vec<String> = problems(&dir).into_iter().map(|p| p.file).collect();
    assert_eq!(files, ["config.yml", "tap_payments.yml", "datadiff.yml"]);
}

#[test]
fn definitions_need_both_database_names() {
    let text = tap("", "", VALID).replace("db_conn: {host: primary, dbname: payments}", "db_conn: {host: primary}");
    let target = TARGET.replace("dbname: warehouse", "port: 5432");
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", &target), ("tap_payments.yml", &text)]);
    let messages: Vec<String> = problems(&dir).into_iter().map(|p| format!("{}: {}", p.path, p.message)).collect();
    assert_eq!(
        messages,
        [
            "schemas[0].tables[0]: tap 'payments' has no db_conn.dbname",
            "schemas[0].tables[0]: target 'postgres' has no db_conn.dbname"
        ]
    );
}
