//! Check definitions: what one `data_diff` block of a PipelineWise project means once
//! validated and normalised, and its identity — the canonical JSON and `config_hash` that
//! PipelineWise computes for the same block, byte for byte.
//!
//! The canonical JSON holds every field below except `full_check_name`, serialised as
//! [`python_json`] does. Two fields are conditional:
//!
//! * `initial_full_scan` appears only when true (`"initial_full_scan":true`). PipelineWise's
//!   newest state defaults it to false and omits it then, so a definition that never set it
//!   keeps its older hash; readers take a missing key as false.
//! * `datadiff` (our extensions, SPEC §10) appears only when a check enables one. Without it a
//!   definition hashes exactly as PipelineWise's.
//!
//! The backend stores the canonical JSON (`canonical_config`) next to columns holding the same
//! fields; [`CheckDefinition::from_canonical_config`] reads a stored definition back from it.

pub use crate::canonical_json::{PythonSeparators, python_json, python_json_with};
pub use crate::check::{CheckType, UnknownCheckType};
pub use crate::duration::{Duration, DurationError, DurationLimit};
pub use crate::replica::{ReplicaNaming, ReplicaTable};
pub use crate::row_diff_settings::{RowDiffSettings, SettingError, SettingValue};
pub use crate::sslmode::{SslMode, UnknownSslMode};

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::schedule::{Schedule, ScheduleError, Window};

/// A tap type whose definitions PipelineWise imports: the Singer tap names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceType {
    /// `tap-postgres`.
    TapPostgres,
    /// `tap-mysql` (MySQL and MariaDB).
    TapMysql,
}

impl SourceType {
    /// The stored name, e.g. `"tap-postgres"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::TapPostgres => "tap-postgres",
            SourceType::TapMysql => "tap-mysql",
        }
    }
}

/// A target type whose definitions PipelineWise imports: the Singer target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetType {
    /// `target-postgres`: target identifiers are lower-cased.
    TargetPostgres,
    /// `target-snowflake`: target identifiers are upper-cased.
    TargetSnowflake,
}

impl TargetType {
    /// The stored name, e.g. `"target-postgres"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetType::TargetPostgres => "target-postgres",
            TargetType::TargetSnowflake => "target-snowflake",
        }
    }

    /// How the target spells an identifier: lower case for PostgreSQL, upper case otherwise
    /// (Unicode case mapping, as Python's `str.lower`/`str.upper`).
    pub fn case_map(self, name: &str) -> String {
        match self {
            TargetType::TargetPostgres => name.to_lowercase(),
            TargetType::TargetSnowflake => name.to_uppercase(),
        }
    }

    /// The target table name the Singer target creates for a source table, as PipelineWise
    /// derives it: split `"<schema>-<table>"` on `-`; two parts give the second, more give
    /// parts 3… joined with `_` (part 2 is dropped); `.` and `-` become `_`; then
    /// [`case_map`](TargetType::case_map). `public` + `transfers-v2` → `v2` on PostgreSQL.
    pub fn target_table_name(self, source_schema: &str, source_table: &str) -> String {
        let stream = format!("{source_schema}-{source_table}");
        let parts: Vec<&str> = stream.split('-').collect();
        let name = if parts.len() == 2 { parts[1].to_owned() } else { parts[2..].join("_") };
        self.case_map(&name.replace(['.', '-'], "_"))
    }
}

/// A name that is not a known source or target type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown connector type '{name}'")]
pub struct UnknownConnectorType {
    /// The rejected name.
    pub name: String,
}

impl FromStr for SourceType {
    type Err = UnknownConnectorType;

    fn from_str(name: &str) -> Result<SourceType, UnknownConnectorType> {
        match name {
            "tap-postgres" => Ok(SourceType::TapPostgres),
            "tap-mysql" => Ok(SourceType::TapMysql),
            _ => Err(UnknownConnectorType { name: name.to_owned() }),
        }
    }
}

impl FromStr for TargetType {
    type Err = UnknownConnectorType;

    fn from_str(name: &str) -> Result<TargetType, UnknownConnectorType> {
        match name {
            "target-postgres" => Ok(TargetType::TargetPostgres),
            "target-snowflake" => Ok(TargetType::TargetSnowflake),
            _ => Err(UnknownConnectorType { name: name.to_owned() }),
        }
    }
}

impl fmt::Display for SourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for TargetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// datadiff's per-check extension settings (from `datadiff.yml`, SPEC §10).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Extensions {
    /// The `row_diff` comparison, when enabled.
    pub row_diff: Option<RowDiffSettings>,
    /// Leave out target rows whose `_sdc_deleted_at` is set.
    pub exclude_soft_deleted: bool,
    /// The replica's own table and column names (`replica_table`, `column_map`), already
    /// applied to the definition's target names ([`ReplicaNaming::apply`]).
    pub replica: ReplicaNaming,
    /// `key_columns`: the source names of `row_diff`'s key, in order, when it is not the
    /// definition's single `key_column` (empty: the definition's key). The upstream aggregate
    /// checks keep `key_column`.
    pub key_columns: Vec<String>,
}

impl Extensions {
    /// Whether no extension is enabled (the definition then hashes exactly as upstream's).
    pub fn is_empty(&self) -> bool {
        self.row_diff.is_none() && !self.exclude_soft_deleted && self.replica.is_empty() && self.key_columns.is_empty()
    }

    /// The `"datadiff"` object of the canonical JSON: only what is enabled.
    fn canonical(&self) -> Value {
        let mut map = Map::new();
        if self.exclude_soft_deleted {
            map.insert("exclude_soft_deleted".to_owned(), Value::Bool(true));
        }
        if let Some(row_diff) = self.row_diff {
            map.insert("row_diff".to_owned(), row_diff.encode());
        }
        self.replica.canonical(&mut map);
        if !self.key_columns.is_empty() {
            let columns = self.key_columns.iter().cloned().map(Value::String);
            map.insert("key_columns".to_owned(), Value::Array(columns.collect()));
        }
        Value::Object(map)
    }
}

/// A `row_diff` setting as stored JSON holds it.
fn setting_value(value: &Value) -> SettingValue<'_> {
    match value {
        Value::Number(number) => SettingValue::Integer(number.as_u64()),
        Value::Bool(flag) => SettingValue::Bool(*flag),
        Value::String(text) => SettingValue::Text(text),
        _ => SettingValue::Other,
    }
}

/// A validated, normalised check definition: one table's `data_diff` block with the tap's
/// defaults merged in and target names derived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckDefinition {
    /// `"<target_id>/<tap_id>/<source_schema>/<table name as written>"`; unique per import.
    pub full_check_name: String,
    /// The target's `id`.
    pub target_id: String,
    /// The tap's `id`.
    pub tap_id: String,
    /// The tap's type.
    pub source_type: SourceType,
    /// The target's type.
    pub target_type: TargetType,
    /// The tap's `db_conn.dbname`.
    pub source_database: String,
    /// The target's `db_conn.dbname`.
    pub target_database: String,
    /// The source schema, as written.
    pub source_schema: String,
    /// The source table, as written.
    pub source_table: String,
    /// The tap's `target_schema` for this schema, case-mapped.
    pub target_schema: String,
    /// The derived target table name ([`TargetType::target_table_name`]).
    pub target_table: String,
    /// `key_column`, as written.
    pub source_key_column: String,
    /// `key_column`, case-mapped.
    pub target_key_column: String,
    /// `timestamp_column`, as written.
    pub source_timestamp_column: String,
    /// `timestamp_column`, case-mapped.
    pub target_timestamp_column: String,
    /// `compare_columns`, as written, in order.
    pub source_compare_columns: Vec<String>,
    /// `compare_columns`, case-mapped, in order.
    pub target_compare_columns: Vec<String>,
    /// The checks, in YAML order.
    pub checks: Vec<CheckType>,
    /// The cron expression, verbatim (see [`CheckDefinition::schedule`]).
    pub frequency: String,
    /// How far before the slot the window starts (> 0).
    pub window_start_seconds: i64,
    /// How far before the slot the window ends (>= 0, < `window_start_seconds`).
    pub window_end_seconds: i64,
    /// The statement timeout of each side's query (> 0).
    pub statement_timeout_seconds: i64,
    /// Whether the first run of this revision compares all history before its cutoff.
    pub initial_full_scan: bool,
    /// datadiff extensions; empty for a plain PipelineWise definition.
    pub extensions: Extensions,
}

/// Why a stored canonical configuration cannot be read back as a definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefinitionError {
    /// The canonical configuration is not a JSON object.
    #[error("canonical configuration of '{full_check_name}' is not a JSON object")]
    NotAnObject {
        /// The definition's name.
        full_check_name: String,
    },
    /// A field is missing or has the wrong JSON type.
    #[error("canonical configuration of '{full_check_name}' has no valid '{field}' ({expected})")]
    Field {
        /// The definition's name.
        full_check_name: String,
        /// The field (a dotted path for extension settings).
        field: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A field holds a name outside its vocabulary (a check type, a connector type).
    #[error("canonical configuration of '{full_check_name}' has an unknown {field} '{value}'")]
    UnknownName {
        /// The definition's name.
        full_check_name: String,
        /// The field.
        field: String,
        /// The unknown name.
        value: String,
    },
}

/// A stored revision of a check definition: a `dd_check_definitions` row as the backend store
/// reads it back (pure data; the store persists it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDefinition {
    /// The revision's id (a fresh uuid4 per revision).
    pub check_id: crate::attempt::CheckId,
    /// Its number among the revisions of its `full_check_name`, from 1.
    pub revision: i32,
    /// The stored `config_hash` (SHA-256 of the canonical JSON, 64 hex characters).
    pub config_hash: String,
    /// Whether it is the name's current revision.
    pub is_current: bool,
    /// When it was imported.
    pub created_at: DateTime<Utc>,
    /// When it was superseded or deactivated.
    pub superseded_at: Option<DateTime<Utc>>,
    /// The definition, read back from `canonical_config`.
    pub definition: CheckDefinition,
}

impl CheckDefinition {
    /// `row_diff`'s key columns, in order, as `(source name, target name)` pairs: the
    /// definition's key column alone, or `key_columns` with each target name from the
    /// `column_map` or, when the map does not name it, the target's case mapping.
    pub fn row_diff_key_columns(&self) -> Vec<(String, String)> {
        if self.extensions.key_columns.is_empty() {
            return vec![(self.source_key_column.clone(), self.target_key_column.clone())];
        }
        self.extensions
            .key_columns
            .iter()
            .map(|source| {
                let target = self
                    .extensions
                    .replica
                    .column(source)
                    .map_or_else(|| self.target_type.case_map(source), str::to_owned);
                (source.clone(), target)
            })
            .collect()
    }

    /// `"<target_id>/<tap_id>/<source_schema>/<table>"`.
    pub fn full_check_name_of(target_id: &str, tap_id: &str, source_schema: &str, table: &str) -> String {
        format!("{target_id}/{tap_id}/{source_schema}/{table}")
    }

    /// The canonical configuration as a JSON value (every field except `full_check_name`).
    pub fn canonical_config(&self) -> Value {
        let mut map = Map::new();
        let mut put = |key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        put("target_id", json!(self.target_id));
        put("tap_id", json!(self.tap_id));
        put("source_type", json!(self.source_type.as_str()));
        put("target_type", json!(self.target_type.as_str()));
        put("source_database", json!(self.source_database));
        put("target_database", json!(self.target_database));
        put("source_schema", json!(self.source_schema));
        put("source_table", json!(self.source_table));
        put("target_schema", json!(self.target_schema));
        put("target_table", json!(self.target_table));
        put("source_key_column", json!(self.source_key_column));
        put("target_key_column", json!(self.target_key_column));
        put("source_timestamp_column", json!(self.source_timestamp_column));
        put("target_timestamp_column", json!(self.target_timestamp_column));
        put("source_compare_columns", json!(self.source_compare_columns));
        put("target_compare_columns", json!(self.target_compare_columns));
        put("checks", json!(self.checks.iter().map(|check| check.as_str()).collect::<Vec<_>>()));
        put("frequency", json!(self.frequency));
        put("window_start_seconds", json!(self.window_start_seconds));
        put("window_end_seconds", json!(self.window_end_seconds));
        put("statement_timeout_seconds", json!(self.statement_timeout_seconds));
        if self.initial_full_scan {
            put("initial_full_scan", Value::Bool(true));
        }
        if !self.extensions.is_empty() {
            put("datadiff", self.extensions.canonical());
        }
        Value::Object(map)
    }

    /// The canonical JSON text: Python's `json.dumps(sort_keys=True, separators=(",", ":"))` of
    /// [`canonical_config`](CheckDefinition::canonical_config).
    pub fn canonical_json(&self) -> String {
        python_json(&self.canonical_config())
    }

    /// SHA-256 of the canonical JSON's UTF-8 bytes, lowercase hex (64 characters).
    pub fn config_hash(&self) -> String {
        let digest = Sha256::digest(self.canonical_json().as_bytes());
        digest.iter().fold(String::with_capacity(64), |mut hex, byte| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{byte:02x}");
            hex
        })
    }

    /// Reads a stored definition back from its `canonical_config` (as JSONB hands it back,
    /// whatever its formatting). A missing `initial_full_scan` reads false (so rows written
    /// when PipelineWise defaulted it to true and omitted it read false, as upstream's readers
    /// do); a missing `datadiff` reads as no extensions.
    pub fn from_canonical_config(full_check_name: &str, canonical: &Value) -> Result<CheckDefinition, DefinitionError> {
        let Some(map) = canonical.as_object() else {
            return Err(DefinitionError::NotAnObject { full_check_name: full_check_name.to_owned() });
        };
        let field_error = |field: &str, expected: &'static str| DefinitionError::Field {
            full_check_name: full_check_name.to_owned(),
            field: field.to_owned(),
            expected,
        };
        let unknown = |field: &str, value: &str| DefinitionError::UnknownName {
            full_check_name: full_check_name.to_owned(),
            field: field.to_owned(),
            value: value.to_owned(),
        };
        let text = |field: &str| -> Result<String, DefinitionError> {
            map.get(field).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| field_error(field, "a string"))
        };
        let integer = |field: &str| -> Result<i64, DefinitionError> {
            map.get(field).and_then(Value::as_i64).ok_or_else(|| field_error(field, "an integer"))
        };
        let texts = |field: &str| -> Result<Vec<String>, DefinitionError> {
            let items =
                map.get(field).and_then(Value::as_array).ok_or_else(|| field_error(field, "a list of strings"))?;
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned).ok_or_else(|| field_error(field, "a list of strings")))
                .collect()
        };
        let source_type = text("source_type")?;
        let target_type = text("target_type")?;
        let checks = texts("checks")?
            .iter()
            .map(|name| name.parse::<CheckType>().map_err(|_| unknown("check type", name)))
            .collect::<Result<Vec<_>, _>>()?;
        let initial_full_scan = match map.get("initial_full_scan") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(flag)) => *flag,
            Some(_) => return Err(field_error("initial_full_scan", "a boolean")),
        };
        let extensions = match map.get("datadiff") {
            None | Some(Value::Null) => Extensions::default(),
            Some(Value::Object(settings)) => {
                let exclude_soft_deleted = match settings.get("exclude_soft_deleted") {
                    None => false,
                    Some(Value::Bool(flag)) => *flag,
                    Some(_) => return Err(field_error("datadiff.exclude_soft_deleted", "a boolean")),
                };
                let row_diff = match settings.get("row_diff") {
                    None | Some(Value::Null) => None,
                    Some(row_diff) => {
                        Some(RowDiffSettings::decode(|key| row_diff.get(key).map(setting_value)).map_err(|errors| {
                            let first = errors[0];
                            DefinitionError::Field {
                                full_check_name: full_check_name.to_owned(),
                                field: format!("datadiff.row_diff.{}", first.key),
                                expected: first.expected_stored,
                            }
                        })?)
                    }
                };
                let replica =
                    ReplicaNaming::decode(settings).map_err(|(field, expected)| field_error(field, expected))?;
                let key_columns = match settings.get("key_columns") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(columns)) => columns
                        .iter()
                        .map(|column| match column {
                            Value::String(name) if !name.is_empty() => Ok(name.clone()),
                            _ => Err(field_error("datadiff.key_columns", "an array of non-empty strings")),
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => return Err(field_error("datadiff.key_columns", "an array of non-empty strings")),
                };
                Extensions { row_diff, exclude_soft_deleted, replica, key_columns }
            }
            Some(_) => return Err(field_error("datadiff", "an object")),
        };
        Ok(CheckDefinition {
            full_check_name: full_check_name.to_owned(),
            target_id: text("target_id")?,
            tap_id: text("tap_id")?,
            source_type: source_type.parse().map_err(|_| unknown("source_type", &source_type))?,
            target_type: target_type.parse().map_err(|_| unknown("target_type", &target_type))?,
            source_database: text("source_database")?,
            target_database: text("target_database")?,
            source_schema: text("source_schema")?,
            source_table: text("source_table")?,
            target_schema: text("target_schema")?,
            target_table: text("target_table")?,
            source_key_column: text("source_key_column")?,
            target_key_column: text("target_key_column")?,
            source_timestamp_column: text("source_timestamp_column")?,
            target_timestamp_column: text("target_timestamp_column")?,
            source_compare_columns: texts("source_compare_columns")?,
            target_compare_columns: texts("target_compare_columns")?,
            checks,
            frequency: text("frequency")?,
            window_start_seconds: integer("window_start_seconds")?,
            window_end_seconds: integer("window_end_seconds")?,
            statement_timeout_seconds: integer("statement_timeout_seconds")?,
            initial_full_scan,
            extensions,
        })
    }

    /// The parsed `frequency`.
    pub fn schedule(&self) -> Result<Schedule, ScheduleError> {
        Schedule::parse(&self.frequency)
    }

    /// The rolling window of `slot`: `[slot - window_start, slot - window_end)`. `None` only
    /// when an instant falls outside chrono's range or before PostgreSQL's first timestamp
    /// ([`Window::from_offsets`]).
    pub fn window(&self, slot: DateTime<Utc>) -> Option<Window> {
        Window::from_offsets(
            slot,
            Duration::from_seconds(self.window_start_seconds),
            Duration::from_seconds(self.window_end_seconds),
        )
    }

    /// Whether any configured check reads table data: an upstream check other than
    /// `schema_compatibility`, or the `row_diff` extension.
    pub fn has_data_check(&self) -> bool {
        self.checks.iter().any(|check| check.reads_data()) || self.extensions.row_diff.is_some()
    }

    /// Whether the first run of this revision starts with a historical (NULL-start) window:
    /// `initial_full_scan` and at least one data check.
    pub fn starts_with_full_scan(&self) -> bool {
        self.initial_full_scan && self.has_data_check()
    }

    /// `None` when datadiff executes this route (PostgreSQL or MySQL/MariaDB → PostgreSQL);
    /// otherwise (a Snowflake target) the reason a run reports it SKIPPED: `route not
    /// supported by datadiff yet: <src> -> <tgt>`.
    pub fn unsupported_route(&self) -> Option<String> {
        match (self.source_type, self.target_type) {
            (SourceType::TapPostgres | SourceType::TapMysql, TargetType::TargetPostgres) => None,
            (source, target) => Some(format!("route not supported by datadiff yet: {source} -> {target}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config note's vector (§1.6): a Snowflake target.
    fn snowflake() -> CheckDefinition {
        CheckDefinition {
            full_check_name: "snowflake/payments/public/transfers-v2".into(),
            target_id: "snowflake".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetSnowflake,
            source_database: "payments".into(),
            target_database: "analytics".into(),
            source_schema: "public".into(),
            source_table: "transfers-v2".into(),
            target_schema: TargetType::TargetSnowflake.case_map("replicated_payments"),
            target_table: TargetType::TargetSnowflake.target_table_name("public", "transfers-v2"),
            source_key_column: "transfer_id".into(),
            target_key_column: TargetType::TargetSnowflake.case_map("transfer_id"),
            source_timestamp_column: "updated_at".into(),
            target_timestamp_column: TargetType::TargetSnowflake.case_map("updated_at"),
            source_compare_columns: vec!["status".into(), "amount".into()],
            target_compare_columns: vec!["STATUS".into(), "AMOUNT".into()],
            checks: CheckType::ALL.to_vec(),
            frequency: "0 * * * *".into(),
            window_start_seconds: 108_000,
            window_end_seconds: 21_600,
            statement_timeout_seconds: 120,
            initial_full_scan: false,
            extensions: Extensions::default(),
        }
    }

    /// A PostgreSQL-target definition; expected values from `hash_vectors.py`.
    fn postgres() -> CheckDefinition {
        let target = TargetType::TargetPostgres;
        CheckDefinition {
            full_check_name: "postgres/payments/public/transfers-v2".into(),
            target_id: "postgres".into(),
            target_type: target,
            target_database: "warehouse".into(),
            target_schema: target.case_map("Replicated_Payments"),
            target_table: target.target_table_name("public", "transfers-v2"),
            target_key_column: target.case_map("transfer_id"),
            target_timestamp_column: target.case_map("updated_at"),
            source_compare_columns: vec!["Status".into(), "amount".into()],
            target_compare_columns: vec![target.case_map("Status"), target.case_map("amount")],
            checks: vec![CheckType::RowCount, CheckType::RowChecksum],
            frequency: "0 */6 * * *".into(),
            window_start_seconds: 54_000,
            window_end_seconds: 0,
            statement_timeout_seconds: 300,
            ..snowflake()
        }
    }

    const SNOWFLAKE_JSON: &str = r#"{"checks":["schema_compatibility","row_count","distinct_key_count","null_key_count","duplicate_key_count","min_key","max_key","row_checksum"],"frequency":"0 * * * *","source_compare_columns":["status","amount"],"source_database":"payments","source_key_column":"transfer_id","source_schema":"public","source_table":"transfers-v2","source_timestamp_column":"updated_at","source_type":"tap-postgres","statement_timeout_seconds":120,"tap_id":"payments","target_compare_columns":["STATUS","AMOUNT"],"target_database":"analytics","target_id":"snowflake","target_key_column":"TRANSFER_ID","target_schema":"REPLICATED_PAYMENTS","target_table":"V2","target_timestamp_column":"UPDATED_AT","target_type":"target-snowflake","window_end_seconds":21600,"window_start_seconds":108000}"#;

    const POSTGRES_JSON: &str = r#"{"checks":["row_count","row_checksum"],"frequency":"0 */6 * * *","source_compare_columns":["Status","amount"],"source_database":"payments","source_key_column":"transfer_id","source_schema":"public","source_table":"transfers-v2","source_timestamp_column":"updated_at","source_type":"tap-postgres","statement_timeout_seconds":300,"tap_id":"payments","target_compare_columns":["status","amount"],"target_database":"warehouse","target_id":"postgres","target_key_column":"transfer_id","target_schema":"replicated_payments","target_table":"v2","target_timestamp_column":"updated_at","target_type":"target-postgres","window_end_seconds":0,"window_start_seconds":54000}"#;

    #[test]
    fn the_config_note_vectors_reproduce() {
        let plain = snowflake();
        assert_eq!(plain.canonical_json(), SNOWFLAKE_JSON);
        assert_eq!(plain.config_hash(), "2207043167b819f57e855ca783323bcfce4aaa99bf3845d4b161654c70c36bc9");
        let full_scan = CheckDefinition { initial_full_scan: true, ..snowflake() };
        assert!(
            full_scan.canonical_json().contains(r#""frequency":"0 * * * *","initial_full_scan":true,"source_compare"#)
        );
        assert_eq!(full_scan.config_hash(), "ce9f9583b602b4dac72ac4a5edb240f25204684bdd40006ad6fb3cb494c81036");
    }

    #[test]
    fn the_older_era_false_vector_is_only_readable() {
        // PipelineWise 03621a24 wrote "initial_full_scan":false (hash 64f954eb…); that JSON reads
        // back as false, and the newest rule writes it without the key.
        let older = SNOWFLAKE_JSON
            .replace(r#""frequency":"0 * * * *","#, r#""frequency":"0 * * * *","initial_full_scan":false,"#);
        let value: Value = serde_json::from_str(&older).unwrap_or_default();
        let read = CheckDefinition::from_canonical_config("snowflake/payments/public/transfers-v2", &value);
        assert_eq!(read.as_ref().map(|d| d.initial_full_scan), Ok(false));
        assert_eq!(
            read.map(|d| d.config_hash()),
            Ok("2207043167b819f57e855ca783323bcfce4aaa99bf3845d4b161654c70c36bc9".into())
        );
    }

    #[test]
    fn postgres_target_vectors_reproduce() {
        assert_eq!(postgres().canonical_json(), POSTGRES_JSON);
        assert_eq!(postgres().config_hash(), "01a8a3c5c515f685aed464500c9f2d0eb27c023c331cfdc4357d195954349a71");
        let full_scan = CheckDefinition { initial_full_scan: true, ..postgres() };
        assert_eq!(full_scan.config_hash(), "283c96149760c442ada55316848ebd72ebdd15a4997b4d12e78c0f77ed2d4db0");
    }

    #[test]
    fn extensions_enter_only_under_one_datadiff_key() {
        let both = CheckDefinition {
            extensions: Extensions {
                row_diff: Some(RowDiffSettings::default()),
                exclude_soft_deleted: true,
                ..Extensions::default()
            },
            ..postgres()
        };
        assert!(both.canonical_json().starts_with(r#"{"checks":["row_count","row_checksum"],"datadiff":{"exclude_soft_deleted":true,"row_diff":{"max_examples":20}},"frequency""#));
        assert_eq!(both.config_hash(), "899e52f95c23bcf324597815b3f5883012315e0a39b25ce6c29d647d8d9e04f5");
        let row_diff_only = CheckDefinition {
            extensions: Extensions {
                row_diff: RowDiffSettings::new(5),
                exclude_soft_deleted: false,
                ..Extensions::default()
            },
            ..postgres()
        };
        assert_eq!(row_diff_only.config_hash(), "17bbd2035bb28501ccfa3359b6b1e59383c50ec1f4a89015e8b85acb724f4b61");
    }

    #[test]
    fn non_ascii_names_hash_as_python() {
        let target = TargetType::TargetPostgres;
        let compare: Vec<String> =
            ["betrag€", "notiz😀", "tab\there", "quote\"back\\slash", "ctl\u{1}\u{7f}/"].map(String::from).to_vec();
        let definition = CheckDefinition {
            full_check_name: "postgres/zahlungen/öffentlich/Überweisungen".into(),
            target_id: "postgres".into(),
            tap_id: "zahlungen".into(),
            source_type: SourceType::TapMysql,
            target_type: target,
            source_database: "kasse".into(),
            target_database: "lager".into(),
            source_schema: "öffentlich".into(),
            source_table: "Überweisungen".into(),
            target_schema: target.case_map("ZIEL_ß"),
            target_table: target.target_table_name("öffentlich", "Überweisungen"),
            source_key_column: "Schlüssel".into(),
            target_key_column: target.case_map("Schlüssel"),
            source_timestamp_column: "geändert_am".into(),
            target_timestamp_column: target.case_map("geändert_am"),
            target_compare_columns: compare.iter().map(|c| target.case_map(c)).collect(),
            source_compare_columns: compare,
            checks: vec![CheckType::SchemaCompatibility],
            frequency: "@hourly".into(),
            window_start_seconds: 3_600,
            window_end_seconds: 0,
            statement_timeout_seconds: 300,
            initial_full_scan: false,
            extensions: Extensions::default(),
        };
        assert!(definition.canonical_json().contains(r#""source_compare_columns":["betrag\u20ac","notiz\ud83d\ude00","tab\there","quote\"back\\slash","ctl\u0001\u007f/"]"#));
        assert_eq!(definition.config_hash(), "eeccefc9aafd4f8d5b245aa0d14cb461f30744a6d60ff7746c22eb040790083c");
    }

    #[test]
    fn target_table_names_follow_the_stream_name_rule() {
        let pg = TargetType::TargetPostgres;
        assert_eq!(pg.target_table_name("public", "transfers-v2"), "v2");
        assert_eq!(TargetType::TargetSnowflake.target_table_name("public", "transfers-v2"), "V2");
        assert_eq!(pg.target_table_name("my-schema", "t"), "t");
        assert_eq!(pg.target_table_name("public", "Orders"), "orders");
        assert_eq!(pg.target_table_name("public", "a-b-c"), "b_c");
        assert_eq!(pg.target_table_name("public", "a.b"), "a_b");
        // Python: "ß".upper() == "SS".
        assert_eq!(TargetType::TargetSnowflake.case_map("straße"), "STRASSE");
    }

    #[test]
    fn stored_definitions_read_back_identically() {
        for definition in [
            snowflake(),
            CheckDefinition { initial_full_scan: true, ..postgres() },
            CheckDefinition {
                extensions: Extensions {
                    row_diff: RowDiffSettings::new(100),
                    exclude_soft_deleted: true,
                    ..Extensions::default()
                },
                ..postgres()
            },
        ] {
            // JSONB hands keys back in its own order and with spaces.
            let jsonb_text = serde_json::to_string_pretty(&definition.canonical_config()).unwrap_or_default();
            let value: Value = serde_json::from_str(&jsonb_text).unwrap_or_default();
            assert_eq!(CheckDefinition::from_canonical_config(&definition.full_check_name, &value), Ok(definition));
        }
    }

    #[test]
    fn malformed_stored_configs_are_errors() {
        let name = "n";
        let mut value: Value = serde_json::from_str(POSTGRES_JSON).unwrap_or_default();
        assert_eq!(
            CheckDefinition::from_canonical_config(name, &json!([])),
            Err(DefinitionError::NotAnObject { full_check_name: name.into() })
        );
        value["checks"] = json!(["row_count", "row_diff"]);
        assert!(matches!(
            CheckDefinition::from_canonical_config(name, &value),
            Err(DefinitionError::UnknownName { ref value, .. }) if value == "row_diff"
        ));
        value["checks"] = json!(["row_count"]);
        value["window_start_seconds"] = json!("54000");
        assert!(matches!(
            CheckDefinition::from_canonical_config(name, &value),
            Err(DefinitionError::Field { ref field, .. }) if field == "window_start_seconds"
        ));
        value["window_start_seconds"] = json!(54000);
        value["datadiff"] = json!({"row_diff": {"max_examples": 0}});
        assert!(matches!(
            CheckDefinition::from_canonical_config(name, &value),
            Err(DefinitionError::Field { ref field, .. }) if field == "datadiff.row_diff.max_examples"
        ));
        for (row_diff, message) in [
            (json!({"max_examples": 101}), "no valid 'datadiff.row_diff.max_examples' (an integer in 1..=100)"),
            (json!({"empty_string_as_null": "no"}), "no valid 'datadiff.row_diff.empty_string_as_null' (a boolean)"),
            (json!({"strategy": "fast"}), "no valid 'datadiff.row_diff.strategy' (one of auto, stream, segments)"),
        ] {
            value["datadiff"] = json!({ "row_diff": row_diff });
            let error = CheckDefinition::from_canonical_config(name, &value).unwrap_err().to_string();
            assert!(error.ends_with(message), "{error}");
        }
        value["datadiff"] = json!({});
        value["target_type"] = json!("target-bigquery");
        assert!(matches!(
            CheckDefinition::from_canonical_config(name, &value),
            Err(DefinitionError::UnknownName { .. })
        ));
    }

    #[test]
    fn routes_slots_and_full_scans() {
        assert_eq!(postgres().unsupported_route(), None);
        assert_eq!(
            snowflake().unsupported_route().as_deref(),
            Some("route not supported by datadiff yet: tap-postgres -> target-snowflake")
        );
        let mysql = CheckDefinition { source_type: SourceType::TapMysql, ..postgres() };
        assert_eq!(mysql.unsupported_route(), None, "tap-mysql -> target-postgres runs");
        let mysql_snowflake = CheckDefinition { source_type: SourceType::TapMysql, ..snowflake() };
        assert_eq!(
            mysql_snowflake.unsupported_route().as_deref(),
            Some("route not supported by datadiff yet: tap-mysql -> target-snowflake")
        );

        let schema_only =
            CheckDefinition { checks: vec![CheckType::SchemaCompatibility], initial_full_scan: true, ..postgres() };
        assert!(!schema_only.starts_with_full_scan());
        let with_row_diff = CheckDefinition {
            extensions: Extensions {
                row_diff: Some(RowDiffSettings::default()),
                exclude_soft_deleted: false,
                ..Extensions::default()
            },
            ..schema_only.clone()
        };
        assert!(with_row_diff.starts_with_full_scan());
        assert!(CheckDefinition { initial_full_scan: true, ..postgres() }.starts_with_full_scan());
        assert!(!postgres().starts_with_full_scan());

        let slot =
            DateTime::parse_from_rfc3339("2026-07-22T12:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or_default();
        let window = postgres().window(slot).unwrap_or_else(|| panic!("in range"));
        assert_eq!(window.start.to_rfc3339(), "2026-07-21T21:00:00+00:00");
        assert_eq!(window.end, slot);
        assert_eq!(postgres().schedule().map(|s| s.current_slot(slot + chrono::TimeDelta::hours(5))), Ok(Ok(slot)));
    }

    #[test]
    fn row_diff_limits() {
        assert_eq!(RowDiffSettings::new(0), None);
        assert_eq!(RowDiffSettings::new(101), None);
        assert_eq!(RowDiffSettings::new(100).map(RowDiffSettings::max_examples), Some(100));
        assert_eq!(RowDiffSettings::default().max_examples(), 20);
    }
}
