//! `datadiff.yml`: datadiff's opt-in extensions, in a file PipelineWise never reads
//! (SPEC §10). Every key and name is checked: a typo is an error, never a silently ignored
//! setting.
//!
//! ```yaml
//! backend_db: {sslrootcert: certs/ca.pem, sslcert: certs/dd.crt, sslkey: certs/dd.key}
//! tls:                                      # scheduled checks' connections (see `tls.rs`)
//!   taps: {payments: {sslmode: verify-full, sslrootcert: certs/ca.pem}}
//! alert_handlers:
//!   webhook: {url: "https://hooks.example.com/dd"}
//!   log: {path: "datadiff-alerts.jsonl"}
//! checks:                                   # keyed by full_check_name
//!   postgres/payments/public/transfers:
//!     row_diff: {max_examples: 20}          # 1..100, default 20
//!     exclude_soft_deleted: true
//!   postgres/payments/public/customers:
//!     row_diff: {empty_string_as_null: true} # '' and NULL compare equal (default false)
//!     # row_diff: {strategy: segments}        # auto (default), stream or segments
//!   postgres/app/public/CustomerOrders:     # a replica another loader (dlt) named
//!     replica_table: dlt_app.customer_orders
//!     column_map: {OrderId: order_id, UpdatedAt: updated_at}
//!     reverify: 7d                          # re-attempt PASS slots verified longer ago
//!     reverify_per_tick: 2                  # at most this many per tick (1..24, default 2)
//!     horizon: subscription:app_sub         # or column:_sdc_batched_at: no slot beyond what
//!                                           # the replica has applied is attempted
//! ```
//!
//! `replica_table` and `column_map` rename the definition's target table and columns
//! ([`ReplicaNaming::apply`]) for every check type; `column_map` keys are source column names
//! as the source spells them (case-sensitive), so a key that matches one of the definition's
//! columns only case-insensitively is an error here, and a key the source table lacks is one at
//! run time (and in `doctor`).

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use datadiff_diff_core::attempt::{HorizonSource, MAX_CATCH_UP, Reverify};
use datadiff_diff_core::definition::{
    CheckDefinition, Duration, Extensions, ReplicaNaming, ReplicaTable, RowDiffSettings, SettingValue,
};

use crate::alerts::AlertSettings;
use crate::document::{Document, join};
use crate::tls::{self, TlsEntry};
use crate::yaml::Node;

/// One `checks` entry of `datadiff.yml`.
pub(crate) struct CheckExtension {
    pub(crate) full_check_name: String,
    pub(crate) extensions: Extensions,
    /// `reverify` and `reverify_per_tick`: a run-time setting, not part of the definition
    /// (changing it keeps the revision and its coverage).
    pub(crate) reverify: Option<Reverify>,
    /// `horizon`: a run-time setting too (turning it on or off keeps the revision).
    pub(crate) horizon: Option<HorizonSource>,
    pub(crate) path: String,
    pub(crate) line: usize,
}

/// Why a `checks` entry may name no definition without being a typo: what failed to load is
/// already reported in its own file, and reporting each entry again would bury that cause.
pub(crate) struct Unresolved<'a> {
    /// `full_check_name`s whose definitions failed validation.
    pub(crate) names: &'a [String],
    /// Tap ids whose tables were not read (unknown target, duplicate id).
    pub(crate) unread_taps: &'a [String],
    /// Tap ids that were read.
    pub(crate) read_taps: &'a [&'a str],
    /// Whether some tap file could not be read as far as its id (a parse error): any tap
    /// not read may be that one.
    pub(crate) unreadable_tap: bool,
}

impl Unresolved<'_> {
    /// Whether an unknown `full_check_name` is explained by a problem reported elsewhere.
    fn explains(&self, full_check_name: &str) -> bool {
        if self.names.iter().any(|name| name == full_check_name) {
            return true;
        }
        // target/tap/schema/table
        let Some(tap) = full_check_name.split('/').nth(1) else { return self.unreadable_tap };
        self.unread_taps.iter().any(|id| id == tap) || (self.unreadable_tap && !self.read_taps.contains(&tap))
    }
}

/// What `datadiff.yml` adds.
#[derive(Default)]
pub(crate) struct ExtensionFile {
    pub(crate) sslrootcert: Option<PathBuf>,
    /// The backend's client certificate and key (absolute, existing files).
    pub(crate) sslcert: Option<PathBuf>,
    pub(crate) sslkey: Option<PathBuf>,
    /// `tls` entries, their ids not checked yet.
    pub(crate) tls: Vec<TlsEntry>,
    pub(crate) checks: Vec<CheckExtension>,
}

impl ExtensionFile {
    /// Reads the file's root; alert handlers go straight into `alerts`; certificate files are
    /// resolved against the project directory `dir`.
    pub(crate) fn read(document: &mut Document, root: &Node, alerts: &mut AlertSettings, dir: &Path) -> ExtensionFile {
        let mut file = ExtensionFile::default();
        if root.is_null() {
            return file;
        }
        if document.mapping(root, "").is_none() {
            return file;
        }
        document.reject_unknown_keys(root, "", &["backend_db", "alert_handlers", "checks", "tls"]);
        if let Some(backend) = root.get("backend_db")
            && document.mapping(backend, "backend_db").is_some()
        {
            document.reject_unknown_keys(backend, "backend_db", &["sslrootcert", "sslcert", "sslkey"]);
            file.sslrootcert = document.optional_str(backend, "backend_db", "sslrootcert").map(PathBuf::from);
            (file.sslcert, file.sslkey) = tls::client_certificate(document, backend, "backend_db", dir);
        }
        if let Some(node) = root.get("tls") {
            file.tls = tls::read(document, node, dir);
        }
        if let Some(handlers) = root.get("alert_handlers") {
            alerts.read_extensions(document, handlers);
        }
        if let Some(checks) = root.get("checks")
            && let Some(entries) = document.mapping(checks, "checks")
        {
            for (key, settings) in entries {
                let Some(name) = key.as_str() else {
                    document.problem("checks", Some(key.line), "check names must be strings (target/tap/schema/table)");
                    continue;
                };
                let path = join("checks", name);
                let reverify = read_reverify(document, settings, &path);
                let horizon = read_horizon(document, settings, &path);
                if let (Some(extensions), Some(reverify), Some(horizon)) =
                    (read_check(document, settings, &path), reverify, horizon)
                {
                    file.checks.push(CheckExtension {
                        full_check_name: name.to_owned(),
                        extensions,
                        reverify,
                        horizon,
                        path,
                        line: key.line,
                    });
                }
            }
        }
        file
    }

    /// The `reverify` settings of the entries that name a definition, by `full_check_name`.
    pub(crate) fn reverify(&self, definitions: &[CheckDefinition]) -> std::collections::BTreeMap<String, Reverify> {
        self.checks
            .iter()
            .filter(|entry| definitions.iter().any(|d| d.full_check_name == entry.full_check_name))
            .filter_map(|entry| Some((entry.full_check_name.clone(), entry.reverify?)))
            .collect()
    }

    /// The `horizon` settings of the entries that name a definition, by `full_check_name`.
    pub(crate) fn horizon(&self, definitions: &[CheckDefinition]) -> BTreeMap<String, HorizonSource> {
        self.checks
            .iter()
            .filter(|entry| definitions.iter().any(|d| d.full_check_name == entry.full_check_name))
            .filter_map(|entry| Some((entry.full_check_name.clone(), entry.horizon.clone()?)))
            .collect()
    }

    /// Applies the `checks` entries to the definitions they name.
    pub(crate) fn apply(
        &self,
        document: &mut Document,
        definitions: &mut [CheckDefinition],
        unresolved: &Unresolved<'_>,
    ) {
        for entry in &self.checks {
            let Some(definition) = definitions.iter_mut().find(|d| d.full_check_name == entry.full_check_name) else {
                // A definition, or a whole tap, that failed to load is reported in its tap file.
                if !unresolved.explains(&entry.full_check_name) {
                    document.problem(
                        &entry.path,
                        Some(entry.line),
                        format!(
                            "unknown check '{}': no data_diff definition has this full_check_name",
                            entry.full_check_name
                        ),
                    );
                }
                continue;
            };
            if entry.extensions.row_diff.is_some() && definition.source_compare_columns.is_empty() {
                document.problem(
                    &join(&entry.path, "row_diff"),
                    Some(entry.line),
                    format!(
                        "row_diff requires at least one compare_columns entry for {}.{}",
                        definition.source_schema, definition.source_table
                    ),
                );
                continue;
            }
            if !column_map_matches(document, &entry.path, entry.line, &entry.extensions.replica, definition) {
                continue;
            }
            if !key_columns_fit(document, entry, definition) {
                continue;
            }
            if let Some(HorizonSource::Subscription(name)) = &entry.horizon
                && definition.source_type != datadiff_diff_core::definition::SourceType::TapPostgres
            {
                document.problem(
                    &join(&entry.path, "horizon"),
                    Some(entry.line),
                    format!(
                        "horizon subscription:{name} needs a tap-postgres source (PostgreSQL native logical replication); this check's source is {}: use column:NAME",
                        definition.source_type
                    ),
                );
                continue;
            }
            entry.extensions.replica.apply(definition);
            definition.extensions = entry.extensions.clone();
        }
    }
}

/// Whether an entry's `key_columns` fit its definition: they are `row_diff`'s key, so they
/// need `row_diff`; and with more than one column the definition's `key_column` is only part
/// of the key, whose repeats are expected, so `duplicate_key_count` (zero on both sides)
/// cannot pass and is refused. The other key checks compare that column's aggregates on both
/// sides and stay the user's choice (see docs/configuration.md).
fn key_columns_fit(document: &mut Document, entry: &CheckExtension, definition: &CheckDefinition) -> bool {
    let columns = &entry.extensions.key_columns;
    if columns.is_empty() {
        return true;
    }
    let path = join(&entry.path, "key_columns");
    if entry.extensions.row_diff.is_none() {
        document.problem(
            &path,
            Some(entry.line),
            "key_columns is row_diff's key: add row_diff to this check (the upstream checks use key_column)",
        );
        return false;
    }
    if columns.len() > 1 && definition.checks.contains(&datadiff_diff_core::definition::CheckType::DuplicateKeyCount) {
        document.problem(
            &path,
            Some(entry.line),
            format!(
                "duplicate_key_count cannot pass with a composite key: key_column '{}' is one part of ({}), whose values repeat; remove duplicate_key_count from the definition's checks (row_diff reports a duplicate composite key as ERROR)",
                definition.source_key_column,
                columns.join(", ")
            ),
        );
        return false;
    }
    true
}

fn read_check(document: &mut Document, settings: &Node, path: &str) -> Option<Extensions> {
    document.mapping(settings, path)?;
    let before = document.problems.len();
    document.reject_unknown_keys(
        settings,
        path,
        &[
            "row_diff",
            "exclude_soft_deleted",
            "replica_table",
            "column_map",
            "key_columns",
            "reverify",
            "reverify_per_tick",
            "horizon",
        ],
    );
    let mut extensions = Extensions::default();
    if let Some(row_diff) = settings.get("row_diff") {
        let row_diff_path = join(path, "row_diff");
        if document.mapping(row_diff, &row_diff_path).is_some() {
            let keys: Vec<&str> = RowDiffSettings::keys().collect();
            document.reject_unknown_keys(row_diff, &row_diff_path, &keys);
            match RowDiffSettings::decode(|key| row_diff.get(key).map(setting_value)) {
                Ok(settings) => extensions.row_diff = Some(settings),
                // Reported last setting first (`strategy` before `max_examples`), as they
                // always were.
                Err(errors) => {
                    for error in errors.into_iter().rev() {
                        document.problem(
                            &join(&row_diff_path, error.key),
                            row_diff.get(error.key).map(|value| value.line),
                            format!("{} must be {}", error.key, error.expected),
                        );
                    }
                }
            }
        }
    }
    if let Some(flag) = settings.get("exclude_soft_deleted") {
        match flag.as_bool() {
            Some(value) => extensions.exclude_soft_deleted = value,
            None => document.problem(
                &join(path, "exclude_soft_deleted"),
                Some(flag.line),
                "exclude_soft_deleted must be a boolean",
            ),
        }
    }
    if let Some(table) = settings.get("replica_table") {
        let table_path = join(path, "replica_table");
        match table.as_str().map(ReplicaTable::parse) {
            Some(Some(table)) => extensions.replica.table = Some(table),
            Some(None) => document.problem(
                &table_path,
                Some(table.line),
                format!(
                    "replica_table must be 'schema.table' (two non-empty names split at the first '.'), got '{}'",
                    table.as_str().unwrap_or_default()
                ),
            ),
            None => document.problem(
                &table_path,
                Some(table.line),
                format!("replica_table must be a string 'schema.table', got {}", table.type_name()),
            ),
        }
    }
    if let Some(map) = settings.get("column_map") {
        extensions.replica.column_map = column_map(document, map, &join(path, "column_map"));
    }
    if let Some(node) = settings.get("key_columns") {
        extensions.key_columns = key_columns(document, node, &join(path, "key_columns"));
    }
    (document.problems.len() == before).then_some(extensions)
}

/// `key_columns`: a non-empty list of distinct, non-empty source column names (one entry
/// means that one column). Problems are reported at `path`; the list is empty after one.
fn key_columns(document: &mut Document, node: &Node, path: &str) -> Vec<String> {
    let Some(items) = node.as_seq() else {
        document.problem(
            path,
            Some(node.line),
            format!("key_columns must be a list of column names, got {}", node.type_name()),
        );
        return Vec::new();
    };
    if items.is_empty() {
        document.problem(path, Some(node.line), "key_columns must name at least one column");
        return Vec::new();
    }
    let mut columns: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{index}]");
        match item.as_str() {
            Some("") => {
                document.problem(&item_path, Some(item.line), "key_columns entries must be non-empty column names");
                return Vec::new();
            }
            Some(name) if columns.iter().any(|seen| seen == name) => {
                document.problem(&item_path, Some(item.line), format!("key_columns names '{name}' twice"));
                return Vec::new();
            }
            Some(name) => columns.push(name.to_owned()),
            None => {
                document.problem(
                    &item_path,
                    Some(item.line),
                    format!("key_columns entries must be column names (strings), got {}", item.type_name()),
                );
                return Vec::new();
            }
        }
    }
    columns
}

/// `column_map`: a mapping of non-empty source column names to non-empty, distinct replica
/// column names.
fn column_map(document: &mut Document, node: &Node, path: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Some(entries) = document.mapping(node, path) else { return map };
    let mut replicas: Vec<(&str, &str)> = Vec::new();
    for (key, value) in entries {
        let Some(source) = key.as_str().filter(|name| !name.is_empty()) else {
            document.problem(path, Some(key.line), "column_map keys must be non-empty source column names");
            continue;
        };
        let entry_path = join(path, source);
        let Some(replica) = value.as_str().filter(|name| !name.is_empty()) else {
            document.problem(
                &entry_path,
                Some(value.line),
                format!("must be the replica's column name (a non-empty string), got {}", value.type_name()),
            );
            continue;
        };
        if let Some((other, _)) = replicas.iter().find(|(_, name)| *name == replica) {
            document.problem(
                &entry_path,
                Some(value.line),
                format!("'{source}' and '{other}' both map to the replica column '{replica}'"),
            );
            continue;
        }
        replicas.push((source, replica));
        map.insert(source.to_owned(), replica.to_owned());
    }
    map
}

/// Whether every `column_map` key that names one of the definition's columns names it with the
/// definition's own spelling: keys are case-sensitive, so `orderid` for a `key_column: OrderId`
/// would silently map nothing. Reports each such key at its path.
fn column_map_matches(
    document: &mut Document,
    path: &str,
    line: usize,
    naming: &ReplicaNaming,
    definition: &CheckDefinition,
) -> bool {
    let mut configured = vec![
        ("key_column", definition.source_key_column.as_str()),
        ("timestamp_column", definition.source_timestamp_column.as_str()),
    ];
    configured.extend(definition.source_compare_columns.iter().map(|name| ("compare_columns", name.as_str())));
    let mut matches = true;
    for key in naming.column_map.keys() {
        if configured.iter().any(|(_, name)| name == key) {
            continue;
        }
        if let Some((setting, name)) = configured.iter().find(|(_, name)| name.to_lowercase() == key.to_lowercase()) {
            document.problem(
                &join(&join(path, "column_map"), key),
                Some(line),
                format!(
                    "column_map key '{key}' differs only in case from {setting} '{name}': keys are source column names, case-sensitive; write the source's spelling in both places"
                ),
            );
            matches = false;
        }
    }
    matches
}

/// `reverify: DURATION` (positive, the definitions' duration grammar) and `reverify_per_tick:
/// N` (1..24, default [`Reverify::DEFAULT_PER_TICK`], only with `reverify`). `Some(None)`
/// without them, `None` after a problem.
fn read_reverify(document: &mut Document, settings: &Node, path: &str) -> Option<Option<Reverify>> {
    let before = document.problems.len();
    let period = settings.get("reverify").and_then(|node| {
        let parsed = node.scalar_text().filter(|_| node.type_name() == "str").map(Duration::parse);
        match parsed {
            Some(Ok(period)) if !period.is_zero() => Some(period),
            _ => {
                document.problem(
                    &join(path, "reverify"),
                    Some(node.line),
                    "reverify must be a positive duration such as 7d, 36h or 1w2d (units s, min, h, d, w)",
                );
                None
            }
        }
    });
    let per_tick = settings.get("reverify_per_tick").and_then(|node| {
        let parsed = node.scalar_text().filter(|_| node.type_name() == "int").and_then(|text| text.parse().ok());
        match parsed {
            Some(count) if (1..=MAX_CATCH_UP).contains(&count) => Some(count),
            _ => {
                document.problem(
                    &join(path, "reverify_per_tick"),
                    Some(node.line),
                    format!("reverify_per_tick must be an integer from 1 to {MAX_CATCH_UP}"),
                );
                None
            }
        }
    });
    if let (None, Some(node)) = (settings.get("reverify"), settings.get("reverify_per_tick")) {
        document.problem(&join(path, "reverify_per_tick"), Some(node.line), "reverify_per_tick needs reverify");
    }
    if document.problems.len() != before {
        return None;
    }
    Some(period.map(|period| Reverify { period, per_tick: per_tick.unwrap_or(Reverify::DEFAULT_PER_TICK) }))
}

/// `horizon: subscription:NAME | column:NAME` ([`HorizonSource::parse`]). `Some(None)`
/// without it, `None` after a problem.
fn read_horizon(document: &mut Document, settings: &Node, path: &str) -> Option<Option<HorizonSource>> {
    let Some(node) = settings.get("horizon") else { return Some(None) };
    let text = node.scalar_text().filter(|_| node.type_name() == "str");
    match text.map(HorizonSource::parse) {
        Some(Ok(horizon)) => Some(Some(horizon)),
        Some(Err(error)) => {
            document.problem(&join(path, "horizon"), Some(node.line), error.to_string());
            None
        }
        None => {
            document.problem(
                &join(path, "horizon"),
                Some(node.line),
                format!("horizon must be a string 'subscription:NAME' or 'column:NAME', got {}", node.type_name()),
            );
            None
        }
    }
}

/// A `row_diff` setting as the YAML holds it: an integer as PyYAML reads one (its text, so a
/// value beyond 64 bits is an invalid one), a boolean, a string; anything else is neither.
fn setting_value(node: &Node) -> SettingValue<'_> {
    match (node.type_name(), node.scalar_text()) {
        ("int", Some(text)) => SettingValue::Integer(text.parse().ok()),
        ("str", Some(text)) => SettingValue::Text(text),
        _ => node.as_bool().map_or(SettingValue::Other, SettingValue::Bool),
    }
}
