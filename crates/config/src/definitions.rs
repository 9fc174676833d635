//! From a tap's tables to check definitions: the schema rules PipelineWise's `tap.json`
//! enforces on `data_diff` and `data_diff_defaults`, then its ten per-table rules in their
//! order and with their messages (config note §1.1, §1.5), then normalisation (§1.2).
//!
//! Where PipelineWise stops at the first error, datadiff reports every problem of every table,
//! each with its file, YAML path and line; rules that need a value an earlier rule rejected are
//! skipped for that table.

use datadiff_diff_core::{
    definition::{CheckDefinition, CheckType, Duration, Extensions, SourceType, TargetType},
    schedule::{Schedule, ScheduleError},
};

use crate::document::{Document, join};
use crate::yaml::Node;

/// Keys `data_diff` may hold.
pub(crate) const DATA_DIFF_KEYS: [&str; 10] = [
    "checks",
    "key_column",
    "timestamp_column",
    "compare_columns",
    "frequency",
    "window_start",
    "window_end",
    "statement_timeout",
    "schema_version",
    "initial_full_scan",
];

/// Keys `data_diff_defaults` may hold.
pub(crate) const DEFAULTS_KEYS: [&str; 5] =
    ["frequency", "window_start", "window_end", "statement_timeout", "initial_full_scan"];

/// The tap- and target-level facts a table's definition needs.
pub(crate) struct TapContext<'a> {
    pub(crate) tap_id: &'a str,
    pub(crate) tap_type: &'a str,
    pub(crate) target_id: &'a str,
    pub(crate) target_type: &'a str,
    pub(crate) source_database: Option<&'a str>,
    pub(crate) target_database: Option<&'a str>,
    /// `data_diff_defaults`, when a valid mapping.
    pub(crate) defaults: Option<&'a Node>,
}

/// A merged setting: its node and the path it came from (the table's or the tap's defaults).
struct Setting<'a> {
    node: &'a Node,
    path: String,
}

/// Checks `data_diff_defaults` against the schema (once per tap).
pub(crate) fn check_defaults(document: &mut Document, defaults: &Node) -> bool {
    let path = "data_diff_defaults";
    if document.mapping(defaults, path).is_none() {
        return false;
    }
    document.reject_unknown_keys(defaults, path, &DEFAULTS_KEYS);
    for key in ["frequency", "window_start", "window_end", "statement_timeout"] {
        if let Some(value) = defaults.get(key) {
            timing_string(document, value, &join(path, key));
        }
    }
    true
}

/// A timing value must be a string of at least two characters (`minLength: 2`). `path` ends
/// with the key; the example given is a crontab expression for `frequency`, a duration for
/// the others.
fn timing_string(document: &mut Document, value: &Node, path: &str) -> bool {
    let frequency = path == "frequency" || path.ends_with(".frequency");
    match value.as_str() {
        // An empty value is "missing" (rule 1) or an empty duration (rules 7, 9, 10).
        Some(text) if text.chars().count() >= 2 || text.is_empty() => true,
        Some(text) => {
            let message = if frequency {
                format!("'{text}' is too short (at least 2 characters: a crontab expression such as '0 */6 * * *')")
            } else {
                format!("'{text}' is too short (at least 2 characters, such as '1h')")
            };
            document.problem(path, Some(value.line), message);
            false
        }
        None => {
            let message = if frequency {
                format!(
                    "must be a string holding a crontab expression such as '0 */6 * * *', got {}",
                    value.type_name()
                )
            } else {
                format!("must be a string such as '1h', got {}", value.type_name())
            };
            document.problem(path, Some(value.line), message);
            false
        }
    }
}

/// Python's `repr` of a str: single quotes unless the text holds one and no double quote.
pub(crate) fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::from(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Builds one table's definition, or records why it cannot. `table_path` is
/// `schemas[i].tables[j]`; `data_diff` is the table's block.
pub(crate) fn table_definition(
    document: &mut Document,
    context: &TapContext<'_>,
    schema: &Node,
    schema_path: &str,
    table: &Node,
    table_path: &str,
    data_diff: &Node,
) -> Option<CheckDefinition> {
    let dd_path = join(table_path, "data_diff");
    document.mapping(data_diff, &dd_path)?;
    let before = document.problems.len();

    // --- tap.json: the shape of the block ---------------------------------------------------
    document.reject_unknown_keys(data_diff, &dd_path, &DATA_DIFF_KEYS);
    let source_schema = required_name(document, schema, schema_path, "source_schema");
    let table_name = required_name(document, table, table_path, "table_name");
    let target_schema = required_name(document, schema, schema_path, "target_schema");
    let required = |document: &mut Document, key: &str| -> Option<String> {
        match data_diff.get(key) {
            None => {
                document.problem(&dd_path, Some(data_diff.line), format!("'{key}' is a required property"));
                None
            }
            Some(value) => match value.as_str() {
                Some(text) if !text.is_empty() => Some(text.to_owned()),
                Some(_) => {
                    document.problem(&join(&dd_path, key), Some(value.line), format!("{key} must not be empty"));
                    None
                }
                None => {
                    document.problem(
                        &join(&dd_path, key),
                        Some(value.line),
                        format!("{key} must be a string, got {}", value.type_name()),
                    );
                    None
                }
            },
        }
    };
    let checks = check_names(document, data_diff, &dd_path);
    let key_column = required(document, "key_column");
    let timestamp_column = required(document, "timestamp_column");
    let compare_columns = compare_columns(document, data_diff, &dd_path);
    for key in ["frequency", "window_start", "window_end", "statement_timeout"] {
        if let Some(value) = data_diff.get(key) {
            timing_string(document, value, &join(&dd_path, key));
        }
    }
    if let Some(version) = data_diff.get("schema_version")
        && (version.type_name() != "int" || version.scalar_text() != Some("1"))
    {
        document.problem(&join(&dd_path, "schema_version"), Some(version.line), "schema_version: only 1 is accepted");
    }
    // tap.json's "row_checksum requires compare_columns" is rule 4 below, with its message.

    // --- the merge: {**data_diff_defaults, **data_diff} --------------------------------------
    let setting = |key: &str| -> Option<Setting<'_>> {
        if let Some(node) = data_diff.get(key) {
            return Some(Setting { node, path: join(&dd_path, key) });
        }
        let node = context.defaults?.get(key)?;
        Some(Setting { node, path: join("data_diff_defaults", key) })
    };
    let frequency = setting("frequency");
    let window_start = setting("window_start");
    let window_end = setting("window_end");
    let statement_timeout = setting("statement_timeout");
    let initial_full_scan = setting("initial_full_scan");

    let (Some(source_schema), Some(table_name)) = (source_schema, table_name) else { return None };
    let full_check_name =
        CheckDefinition::full_check_name_of(context.target_id, context.tap_id, &source_schema, &table_name);
    let schema_table = format!("{source_schema}.{table_name}");

    // --- PipelineWise's rules, in order -------------------------------------------------------
    // 1. Timing after the merge (an empty value counts as missing).
    let truthy =
        |s: &Option<Setting<'_>>| s.as_ref().is_some_and(|s| !s.node.is_null() && s.node.scalar_text() != Some(""));
    let missing: Vec<String> = [("frequency", &frequency), ("window_start", &window_start)]
        .into_iter()
        .filter(|(_, s)| !truthy(s))
        .map(|(key, s)| document.missing_field(key, s.as_ref().map(|s| s.node)))
        .collect();
    if !missing.is_empty() {
        document.problem(
            &dd_path,
            Some(data_diff.line),
            format!(
                "Data-diff timing must be defined on the table or inherited from tap data_diff_defaults: {}",
                missing.join(", ")
            ),
        );
    }
    // 2. Route.
    let source_type = context.tap_type.parse::<SourceType>().ok();
    let target_type = context.target_type.parse::<TargetType>().ok();
    if source_type.is_none() || target_type.is_none() {
        document.problem(
            &dd_path,
            Some(data_diff.line),
            format!(
                "Data diff supports only MySQL/MariaDB or PostgreSQL sources with PostgreSQL or Snowflake targets; got {} -> {} for tap '{}'",
                context.tap_type, context.target_type, context.tap_id
            ),
        );
    }
    // 3. Check names.
    let mut check_types = None;
    if let Some(names) = &checks {
        let mut unknown: Vec<&str> =
            names.iter().map(String::as_str).filter(|n| n.parse::<CheckType>().is_err()).collect();
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            check_types = Some(names.iter().filter_map(|n| n.parse::<CheckType>().ok()).collect::<Vec<_>>());
        } else {
            let listed: Vec<String> = unknown.iter().map(|n| python_repr(n)).collect();
            let line = data_diff.get("checks").map(|n| n.line);
            document.problem(
                &join(&dd_path, "checks"),
                line,
                format!("Unsupported data-diff checks: [{}]", listed.join(", ")),
            );
        }
    }
    // 4. row_checksum needs compare columns.
    let compare = compare_columns.clone().unwrap_or_default();
    let no_compare_columns = compare_columns.as_ref().is_some_and(Vec::is_empty);
    if checks.as_ref().is_some_and(|c| c.iter().any(|n| n == "row_checksum")) && no_compare_columns {
        document.problem(
            &join(&dd_path, "checks"),
            data_diff.get("checks").map(|n| n.line),
            format!("row_checksum requires at least one compare_columns entry for {schema_table}"),
        );
    }
    // 5. Transformed columns cannot be compared.
    let transformed = transformed_columns(table);
    let mut conflicts: Vec<&str> = key_column
        .iter()
        .chain(timestamp_column.iter())
        .chain(compare.iter())
        .map(String::as_str)
        .filter(|c| transformed.iter().any(|t| t == c))
        .collect();
    conflicts.sort_unstable();
    conflicts.dedup();
    if !conflicts.is_empty() {
        document.problem(
            &dd_path,
            Some(data_diff.line),
            format!("Data-diff columns cannot be transformed for {schema_table}: {}", conflicts.join(", ")),
        );
    }
    // 6. Crontab. A valid expression that never fires is datadiff's own refusal. A
    // one-character string was already reported by the schema rule.
    let mut schedule = None;
    if let Some(setting) = frequency.as_ref().filter(|_| truthy(&frequency))
        && let Some(text) = setting.node.as_str().filter(|text| text.chars().count() >= 2)
    {
        match Schedule::parse(text) {
            Ok(parsed) => schedule = Some(parsed),
            Err(ScheduleError::NeverFires { .. }) => document.problem(
                &setting.path,
                Some(setting.node.line),
                format!(
                    "frequency '{text}' never fires (no date of the 400-year Gregorian calendar cycle matches it) in check '{full_check_name}'. Example: '0 */6 * * *' for every six hours"
                ),
            ),
            Err(error) => {
                let mut message = format!(
                    "frequency must be a crontab expression, got '{text}' in check '{full_check_name}'. Example: '0 */6 * * *' for every six hours"
                );
                if let ScheduleError::FieldCount { fields, .. } = error {
                    message.push_str(&format!(
                        " (it has {fields} fields: datadiff reads only 5 fields, minute hour day-of-month month day-of-week)"
                    ));
                }
                document.problem(&setting.path, Some(setting.node.line), message);
            }
        }
    }
    // 7. window_start.
    let window_start_seconds = window_start
        .as_ref()
        .filter(|_| truthy(&window_start))
        .and_then(|setting| duration(document, setting, Duration::parse_positive_window_offset));
    // 8. initial_full_scan is a boolean.
    let initial_full_scan = match &initial_full_scan {
        None => Some(false),
        Some(setting) => match setting.node.as_bool() {
            Some(flag) => Some(flag),
            None => {
                document.problem(
                    &setting.path,
                    Some(setting.node.line),
                    format!("initial_full_scan must be a boolean in check '{full_check_name}'"),
                );
                None
            }
        },
    };
    // 9. window_end (default 0s) is closer to the fire time than window_start.
    let window_end_seconds = match &window_end {
        None => Some(0),
        Some(setting) => duration(document, setting, Duration::parse_window_offset),
    };
    if let (Some(start), Some(end)) = (window_start_seconds, window_end_seconds)
        && end >= start
    {
        let (path, line) = match &window_end {
            Some(setting) => (setting.path.clone(), Some(setting.node.line)),
            None => (dd_path.clone(), Some(data_diff.line)),
        };
        document.problem(
                &path,
                line,
                format!(
                    "window_end must be closer to fire time than window_start (window_start={start}s, window_end={end}s) in check '{full_check_name}'"
                ),
            );
    }
    // 10. statement_timeout (default 5min), no sign stripped, at most PostgreSQL's limit.
    let statement_timeout_seconds = match &statement_timeout {
        None => Some(300),
        Some(setting) => duration(document, setting, Duration::parse_statement_timeout),
    };

    // The databases enter the definition; only worth saying for a route that can import.
    let source_database = context.source_database;
    let route_ok = source_type.is_some() && target_type.is_some();
    if route_ok && source_database.is_none() {
        document.problem(table_path, Some(table.line), format!("tap '{}' has no db_conn.dbname", context.tap_id));
    }
    if route_ok && context.target_database.is_none() {
        document.problem(table_path, Some(table.line), format!("target '{}' has no db_conn.dbname", context.target_id));
    }
    if document.problems.len() > before {
        return None;
    }
    if let (Some(schedule), Some(start), Some(end)) = (&schedule, window_start_seconds, window_end_seconds) {
        warn_about_gaps(document, &dd_path, data_diff.line, schedule, (start, end), &full_check_name);
    }
    let (Some(source_type), Some(target_type), Some(checks), Some(key), Some(timestamp)) =
        (source_type, target_type, check_types, key_column, timestamp_column)
    else {
        return None;
    };
    let (Some(target_schema), Some(source_database), Some(target_database)) =
        (target_schema, source_database, context.target_database)
    else {
        return None;
    };
    Some(CheckDefinition {
        full_check_name,
        target_id: context.target_id.to_owned(),
        tap_id: context.tap_id.to_owned(),
        source_type,
        target_type,
        source_database: source_database.to_owned(),
        target_database: target_database.to_owned(),
        target_schema: target_type.case_map(&target_schema),
        target_table: target_type.target_table_name(&source_schema, &table_name),
        source_schema,
        source_table: table_name,
        target_key_column: target_type.case_map(&key),
        source_key_column: key,
        target_timestamp_column: target_type.case_map(&timestamp),
        source_timestamp_column: timestamp,
        target_compare_columns: compare.iter().map(|c| target_type.case_map(c)).collect(),
        source_compare_columns: compare,
        checks,
        frequency: frequency.and_then(|s| s.node.as_str().map(str::to_owned)).unwrap_or_default(),
        window_start_seconds: window_start_seconds?,
        window_end_seconds: window_end_seconds?,
        statement_timeout_seconds: statement_timeout_seconds?,
        initial_full_scan: initial_full_scan?,
        extensions: Extensions::default(),
    })
}

/// Warns when the window `(window_start, window_end)` seconds is shorter than the longest
/// time between two fires of `schedule`: the windows of consecutive slots then leave a gap no
/// run compares, so the watermark can never pass it (PipelineWise accepts such a definition,
/// so it is no error).
fn warn_about_gaps(
    document: &mut Document,
    dd_path: &str,
    line: usize,
    schedule: &Schedule,
    (start, end): (i64, i64),
    full_check_name: &str,
) {
    let length = start - end;
    let Some(gap) = schedule.longest_gap().filter(|gap| gap.seconds() > length) else { return };
    let units = |seconds: i64| Duration::from_seconds(seconds).units();
    document.warning(
        dd_path,
        Some(line),
        format!(
            "the window (window_start {} - window_end {} = {}) is shorter than the {} between fire times of frequency '{}' (for example {} to {}) in check '{full_check_name}': coverage will never be contiguous, the watermark will stop at the first gap; make the window at least {} long",
            units(start),
            units(end),
            units(length),
            units(gap.seconds()),
            schedule.as_str(),
            gap.from.format("%Y-%m-%dT%H:%M:%SZ"),
            gap.to.format("%Y-%m-%dT%H:%M:%SZ"),
            units(gap.seconds()),
        ),
    );
}

/// A duration setting parsed with `parse`; problems at the setting's own path and line.
fn duration(
    document: &mut Document,
    setting: &Setting<'_>,
    parse: impl Fn(&str) -> Result<Duration, datadiff_diff_core::definition::DurationError>,
) -> Option<i64> {
    // A non-string or a one-character string was already reported by the schema rule.
    let text = setting.node.as_str().filter(|text| text.is_empty() || text.chars().count() >= 2)?;
    match parse(text) {
        Ok(duration) => Some(duration.seconds()),
        Err(error) => {
            document.problem(&setting.path, Some(setting.node.line), error.to_string());
            None
        }
    }
}

/// A required non-empty string of a schema or table entry (`source_schema`, `table_name`).
fn required_name(document: &mut Document, node: &Node, path: &str, key: &str) -> Option<String> {
    match node.get(key) {
        Some(value) => match value.as_str() {
            Some(text) if !text.is_empty() => Some(text.to_owned()),
            _ => {
                document.problem(&join(path, key), Some(value.line), format!("{key} must be a non-empty string"));
                None
            }
        },
        None => {
            document.problem(path, Some(node.line), format!("'{key}' is a required property"));
            None
        }
    }
}

/// `checks`: required, a non-empty list of unique strings (names are checked by rule 3).
fn check_names(document: &mut Document, data_diff: &Node, dd_path: &str) -> Option<Vec<String>> {
    let Some(node) = data_diff.get("checks") else {
        document.problem(dd_path, Some(data_diff.line), "'checks' is a required property");
        return None;
    };
    string_list(document, node, &join(dd_path, "checks"))
}

/// `compare_columns`: optional, a non-empty list of unique non-empty strings.
fn compare_columns(document: &mut Document, data_diff: &Node, dd_path: &str) -> Option<Vec<String>> {
    match data_diff.get("compare_columns") {
        None => Some(Vec::new()),
        Some(node) => string_list(document, node, &join(dd_path, "compare_columns")),
    }
}

fn string_list(document: &mut Document, node: &Node, path: &str) -> Option<Vec<String>> {
    let Some(items) = node.as_seq() else {
        document.problem(path, Some(node.line), format!("must be a list, got {}", node.type_name()));
        return None;
    };
    if items.is_empty() {
        document.problem(path, Some(node.line), "must not be empty");
        return None;
    }
    let mut names = Vec::with_capacity(items.len());
    let mut valid = true;
    for (index, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(text) if !text.is_empty() => {
                if names.iter().any(|n: &String| n == text) {
                    document.problem(
                        &format!("{path}[{index}]"),
                        Some(item.line),
                        format!("'{text}' is listed twice (items must be unique)"),
                    );
                    valid = false;
                }
                names.push(text.to_owned());
            }
            _ => {
                document.problem(&format!("{path}[{index}]"), Some(item.line), "must be a non-empty string");
                valid = false;
            }
        }
    }
    valid.then_some(names)
}

/// The `column` of every entry of the table's `transformations`.
fn transformed_columns(table: &Node) -> Vec<String> {
    table
        .get("transformations")
        .and_then(Node::as_seq)
        .map(|items| {
            items.iter().filter_map(|t| t.get("column").and_then(Node::scalar_text).map(str::to_owned)).collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        assert_eq!(python_repr("row_diff"), "'row_diff'");
        assert_eq!(python_repr("it's"), "\"it's\"");
        assert_eq!(python_repr("a'\"b"), "'a\\'\"b'");
        assert_eq!(python_repr("tab\there"), "'tab\\there'");
        assert_eq!(python_repr("é"), "'é'");
    }
}
