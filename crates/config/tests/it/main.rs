//! Integration tests of `datadiff-config`: whole project directories on disk.

mod fixture;
mod fuzz;
mod mysql_conn;
mod rules;
mod secrets;
mod settings;
mod tls;
mod unrunnable;

use std::collections::BTreeMap;

use datadiff_config::{LoadOptions, Problem, Project, Secret};
use tempfile::TempDir;

/// The environment the tests render with.
pub(crate) fn env() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("SLACK_TOKEN".to_owned(), "xoxb-test".to_owned()),
        ("BACKEND_PASSWORD".to_owned(), "backend-pw".to_owned()),
    ])
}

/// A project directory holding `files`.
pub(crate) fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
    }
    dir
}

pub(crate) fn options(secret: Option<&str>) -> LoadOptions {
    LoadOptions { secret: secret.map(Secret::new), env: Some(env()) }
}

/// Loads a project that must be valid.
pub(crate) fn load_ok(dir: &TempDir) -> Project {
    match datadiff_config::load_with(dir.path(), &options(None)) {
        Ok(project) => project,
        Err(error) => panic!("{error}: {:#?}", error.problems()),
    }
}

/// Loads a project that must be invalid, returning its problems.
pub(crate) fn problems_with(dir: &TempDir, secret: Option<&str>) -> Vec<Problem> {
    match datadiff_config::load_with(dir.path(), &options(secret)) {
        Ok(project) => panic!("expected problems, loaded {} definitions", project.definitions.len()),
        Err(error) => {
            assert!(!error.problems().is_empty(), "{error}");
            error.problems().to_vec()
        }
    }
}

pub(crate) fn problems(dir: &TempDir) -> Vec<Problem> {
    problems_with(dir, None)
}

pub(crate) const CONFIG: &str = "\
backend_db:
  host: localhost
  user: app
  password: app-pw
  dbname: datadiff
  ddl_user: owner
  ddl_password: owner-pw
";

pub(crate) const TARGET: &str = "\
id: postgres
name: Warehouse
type: target-postgres
db_conn: {host: replica, dbname: warehouse}
";

/// A tap file with one table whose `data_diff` block is `data_diff` (indented by the caller
/// as a block under `data_diff:`), `defaults` (a block under `data_diff_defaults:`, or empty)
/// and extra table keys.
pub(crate) fn tap(defaults: &str, table_extra: &str, data_diff: &str) -> String {
    let defaults =
        if defaults.is_empty() { String::new() } else { format!("data_diff_defaults:\n{}", indent(defaults, 2)) };
    format!(
        "id: payments\nname: Payments\ntype: tap-postgres\ntarget: postgres\ndb_conn: {{host: primary, dbname: payments}}\n{defaults}schemas:\n  - source_schema: public\n    target_schema: replicated\n    tables:\n      - table_name: transfers\n{}        data_diff:\n{}",
        indent(table_extra, 8),
        indent(data_diff, 10)
    )
}

pub(crate) fn indent(text: &str, by: usize) -> String {
    text.lines().map(|line| format!("{}{line}\n", " ".repeat(by))).collect()
}

/// A valid table block.
pub(crate) const VALID: &str = "\
checks: [row_count, row_checksum]
key_column: id
timestamp_column: updated_at
compare_columns: [amount, status]
frequency: '0 * * * *'
window_start: -2h
window_end: -1h
";

/// The one problem of a project whose tap is built from these parts.
pub(crate) fn single_problem(defaults: &str, table_extra: &str, data_diff: &str) -> Problem {
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap(defaults, table_extra, data_diff)),
    ]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap_or_else(|| panic!("one problem"))
}
