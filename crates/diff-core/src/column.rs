//! Column resolution and column pairs (config note §2.1): which catalog column each configured
//! name means on each side, the timestamp type gate, the ordered (source, target) pairs that
//! `schema_compatibility`, `row_checksum` and `row_diff` compare, and the
//! `schema_compatibility` result built from them.
//!
//! Facts in, decisions out: the runner reads one table's rows of `information_schema.columns`
//! into [`CatalogColumn`]s; everything here is a function of them.

use serde_json::{Map, Value as Json};

use crate::definition::CheckDefinition;
use crate::family::{TypeFamily, is_integer_name, lookup_name};
use crate::verdict::{CheckResult, ResultStatus, ResultType};

/// One column of a table as `information_schema.columns` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogColumn {
    /// `column_name`, exactly.
    pub name: String,
    /// `data_type`, as the catalog spells it (`timestamp with time zone`, `USER-DEFINED`).
    pub data_type: String,
    /// `udt_name` (`int8`, `_int4`, `geometry`); MySQL's `COLUMN_TYPE` on that route.
    pub udt_name: Option<String>,
    /// `numeric_precision`.
    pub numeric_precision: Option<i32>,
    /// `numeric_scale`.
    pub numeric_scale: Option<i32>,
    /// `datetime_precision`.
    pub datetime_precision: Option<i32>,
    /// `is_nullable = 'YES'`.
    pub nullable: bool,
}

impl CatalogColumn {
    /// The column's type family.
    pub fn family(&self) -> TypeFamily {
        TypeFamily::classify(&self.data_type, self.udt_name.as_deref())
    }

    /// The type as messages name it: `data_type`, with the declared precision and scale of an
    /// exact numeric (`numeric(12,2)`; `?` for a scale without a precision).
    pub fn type_text(&self) -> String {
        if self.family() == TypeFamily::ExactNumeric
            && !is_integer_name(&self.lookup_name())
            && let Some(scale) = self.numeric_scale
        {
            let precision = self.numeric_precision.map_or_else(|| "?".to_owned(), |precision| precision.to_string());
            return format!("{}({precision},{scale})", self.data_type);
        }
        self.data_type.clone()
    }

    /// The name its family is looked up by (see [`lookup_name`]).
    pub fn lookup_name(&self) -> String {
        lookup_name(&self.data_type, self.udt_name.as_deref())
    }

    /// Whether window bounds must be bound to this column as naive UTC wall time: its type
    /// names `timestamp without time zone` (or MySQL `datetime`, Snowflake `timestamp_ntz`).
    pub fn is_naive_timestamp(&self) -> bool {
        let data_type = self.data_type.to_lowercase();
        ["timestamp without time zone", "datetime", "timestamp_ntz"].iter().any(|naive| data_type.contains(naive))
    }
}

/// Type names the timestamp column may have (a lower-cased `data_type` must start with one).
/// A `date` timestamp column is therefore rejected.
pub const TIMESTAMP_TYPES: [&str; 7] = [
    "timestamp with time zone",
    "timestamp without time zone",
    "timestamp",
    "datetime",
    "timestamp_ltz",
    "timestamp_ntz",
    "timestamp_tz",
];

/// Why a run cannot compare a table's columns. The texts are PipelineWise's: they become the
/// attempt's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnError {
    /// No column of the table is visible: it does not exist (or the role may read none of its
    /// columns). datadiff's text, not PipelineWise's (which names the key column instead).
    #[error("Table {schema}.{table} does not exist in the {side} database (or the role may read none of its columns)")]
    TableDoesNotExist {
        /// The side whose table is missing.
        side: crate::Side,
        /// The table's schema.
        schema: String,
        /// The table.
        table: String,
    },
    /// A `column_map` key names no column of the source table (keys are matched exactly,
    /// case-sensitively).
    #[error(
        "column_map names column '{name}', which the source table {schema}.{table} does not have (column_map keys are source column names, case-sensitive)"
    )]
    UnknownMappedColumn {
        /// The `column_map` key.
        name: String,
        /// The source table's schema.
        schema: String,
        /// The source table.
        table: String,
    },
    /// The key or timestamp column (or `_sdc_deleted_at` for `exclude_soft_deleted`) is not in
    /// the table.
    #[error("Column '{name}' does not exist in {schema}.{table}")]
    DoesNotExist {
        /// The configured name.
        name: String,
        /// The table's schema.
        schema: String,
        /// The table.
        table: String,
    },
    /// No column has the exact name and more than one matches it case-insensitively.
    #[error("Column '{name}' does not resolve uniquely in {schema}.{table}")]
    NotUnique {
        /// The configured name.
        name: String,
        /// The table's schema.
        schema: String,
        /// The table.
        table: String,
    },
    /// The timestamp column's type is not a timestamp type (see [`TIMESTAMP_TYPES`]).
    #[error("Data-diff timestamp column {schema}.{table}.{name} has unsupported type '{data_type}'")]
    UnsupportedTimestampType {
        /// The configured name.
        name: String,
        /// The table's schema.
        schema: String,
        /// The table.
        table: String,
        /// The catalog's `data_type`, as spelt there.
        data_type: String,
    },
}

/// The columns of one table, with the names the definition uses for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableColumns {
    schema: String,
    table: String,
    columns: Vec<CatalogColumn>,
}

impl TableColumns {
    /// The columns of `schema.table` (the definition's names; they are used in messages and in
    /// the generated SQL).
    pub fn new(schema: impl Into<String>, table: impl Into<String>, columns: Vec<CatalogColumn>) -> TableColumns {
        TableColumns { schema: schema.into(), table: table.into(), columns }
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Every column, as given.
    pub fn columns(&self) -> &[CatalogColumn] {
        &self.columns
    }

    /// Resolves a configured name: the column with exactly that name, else the only column
    /// whose name matches it case-insensitively (Unicode lower case, as Python's `str.lower`),
    /// else `None` when nothing matches. Two or more case-insensitive matches (and no exact
    /// one) are [`ColumnError::NotUnique`].
    pub fn find(&self, name: &str) -> Result<Option<&CatalogColumn>, ColumnError> {
        let lowered = name.to_lowercase();
        let exact = self.matching(|column| column.name == name);
        let found = match exact {
            Matches::None => self.matching(|column| column.name.to_lowercase() == lowered),
            exact => exact,
        };
        match found {
            Matches::None => Ok(None),
            Matches::One(column) => Ok(Some(column)),
            Matches::Many => Err(ColumnError::NotUnique {
                name: name.to_owned(),
                schema: self.schema.clone(),
                table: self.table.clone(),
            }),
        }
    }

    /// Resolves a name that must exist: as [`find`](TableColumns::find), with a missing column
    /// an error (`Column '<name>' does not exist in <schema>.<table>`).
    pub fn require(&self, name: &str) -> Result<&CatalogColumn, ColumnError> {
        self.find(name)?.ok_or_else(|| ColumnError::DoesNotExist {
            name: name.to_owned(),
            schema: self.schema.clone(),
            table: self.table.clone(),
        })
    }

    /// The timestamp type gate: `column` (resolved from the configured `name`) must have a
    /// timestamp type.
    pub fn gate_timestamp(&self, name: &str, column: &CatalogColumn) -> Result<(), ColumnError> {
        let data_type = column.data_type.to_lowercase();
        if TIMESTAMP_TYPES.iter().any(|supported| data_type.starts_with(supported)) {
            return Ok(());
        }
        Err(ColumnError::UnsupportedTimestampType {
            name: name.to_owned(),
            schema: self.schema.clone(),
            table: self.table.clone(),
            data_type: column.data_type.clone(),
        })
    }

    fn matching(&self, matches: impl Fn(&CatalogColumn) -> bool) -> Matches<'_> {
        let mut found = self.columns.iter().filter(|column| matches(column));
        match (found.next(), found.next()) {
            (None, _) => Matches::None,
            (Some(column), None) => Matches::One(column),
            (Some(_), Some(_)) => Matches::Many,
        }
    }
}

/// How many columns a name matches.
enum Matches<'a> {
    None,
    One(&'a CatalogColumn),
    Many,
}

/// The configured column names of a definition, per side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSelection {
    /// The source key column.
    pub source_key: String,
    /// The target key column.
    pub target_key: String,
    /// The source timestamp column.
    pub source_timestamp: String,
    /// The target timestamp column.
    pub target_timestamp: String,
    /// The source compare columns, in order.
    pub source_compare: Vec<String>,
    /// The target compare columns, in the same order (paired by position).
    pub target_compare: Vec<String>,
}

impl ColumnSelection {
    /// The names a definition configures.
    pub fn of(definition: &CheckDefinition) -> ColumnSelection {
        ColumnSelection {
            source_key: definition.source_key_column.clone(),
            target_key: definition.target_key_column.clone(),
            source_timestamp: definition.source_timestamp_column.clone(),
            target_timestamp: definition.target_timestamp_column.clone(),
            source_compare: definition.source_compare_columns.clone(),
            target_compare: definition.target_compare_columns.clone(),
        }
    }

    fn requested<'a>(key: &'a str, timestamp: &'a str, compare: &'a [String]) -> Vec<&'a str> {
        let mut seen: Vec<String> = Vec::new();
        let mut names = Vec::new();
        for name in [key, timestamp].into_iter().chain(compare.iter().map(String::as_str)) {
            let lowered = name.to_lowercase();
            if !seen.contains(&lowered) {
                seen.push(lowered);
                names.push(name);
            }
        }
        names
    }
}

/// One compared column: its logical name (the source's configured name) and the column it
/// resolved to on each side, `None` where it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnPair {
    /// The logical name: the source's configured name.
    pub logical_name: String,
    /// The source column, `None` when missing.
    pub source: Option<CatalogColumn>,
    /// The target column, `None` when missing.
    pub target: Option<CatalogColumn>,
}

impl ColumnPair {
    /// The source column's family ([`TypeFamily::Missing`] when missing).
    pub fn source_family(&self) -> TypeFamily {
        self.source.as_ref().map_or(TypeFamily::Missing, CatalogColumn::family)
    }

    /// The target column's family ([`TypeFamily::Missing`] when missing).
    pub fn target_family(&self) -> TypeFamily {
        self.target.as_ref().map_or(TypeFamily::Missing, CatalogColumn::family)
    }

    /// `None` when the families are compatible, else the finding
    /// `<logical>: source <family> is not compatible with target <family>`.
    pub fn finding(&self) -> Option<String> {
        let (source, target) = (self.source_family(), self.target_family());
        (!TypeFamily::compatible(source, target))
            .then(|| format!("{}: source {source} is not compatible with target {target}", self.logical_name))
    }
}

/// `schema_compatibility` evidence for one column (the keys PipelineWise writes; JSONB keeps
/// no key order). `nullable` is the catalog's `is_nullable` text, `"YES"` or `"NO"`; a missing
/// column has `resolved_name`, `data_type`, the numbers and `nullable` null and the family
/// `missing`.
fn evidence(logical_name: &str, column: Option<&CatalogColumn>) -> Json {
    let number = |value: Option<i32>| value.map_or(Json::Null, Json::from);
    let mut map = Map::new();
    map.insert("logical_name".into(), Json::from(logical_name));
    map.insert("resolved_name".into(), column.map_or(Json::Null, |c| Json::from(c.name.as_str())));
    map.insert("data_type".into(), column.map_or(Json::Null, |c| Json::from(c.data_type.as_str())));
    map.insert("type_family".into(), Json::from(column.map_or(TypeFamily::Missing, CatalogColumn::family).as_str()));
    map.insert("numeric_precision".into(), number(column.and_then(|c| c.numeric_precision)));
    map.insert("numeric_scale".into(), number(column.and_then(|c| c.numeric_scale)));
    map.insert("datetime_precision".into(), number(column.and_then(|c| c.datetime_precision)));
    map.insert("nullable".into(), column.map_or(Json::Null, |c| Json::from(if c.nullable { "YES" } else { "NO" })));
    Json::Object(map)
}

/// The resolved columns of a definition: the key and timestamp on both sides (which must
/// exist and pass the timestamp gate) and the ordered pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnPlan {
    source_key: CatalogColumn,
    target_key: CatalogColumn,
    source_timestamp: CatalogColumn,
    target_timestamp: CatalogColumn,
    pairs: Vec<ColumnPair>,
}

impl ColumnPlan {
    /// Resolves a selection against both tables, in PipelineWise's order, so the same
    /// configuration fails with the same first error:
    ///
    /// 1. every requested source name (key, timestamp, compare columns; names repeated
    ///    case-insensitively only once), then every target name, may be missing but must not
    ///    be ambiguous;
    /// 2. the source key, source timestamp, target key and target timestamp must exist;
    /// 3. the source, then the target timestamp column must have a timestamp type.
    ///
    /// Pairs are (key, key), (timestamp, timestamp), then the compare columns zipped by
    /// position, skipping a pair whose source name equals (case-insensitively) the key, the
    /// timestamp or an earlier compare column. The logical name is the source name.
    ///
    /// Each name is resolved on its own, so a target list naming one column twice in different
    /// cases pairs both occurrences with that column (PipelineWise raises a `KeyError` there).
    pub fn resolve(
        selection: &ColumnSelection,
        source: &TableColumns,
        target: &TableColumns,
    ) -> Result<ColumnPlan, ColumnError> {
        for (side, table) in [(crate::Side::Source, source), (crate::Side::Target, target)] {
            if table.columns().is_empty() {
                return Err(ColumnError::TableDoesNotExist {
                    side,
                    schema: table.schema().to_owned(),
                    table: table.table().to_owned(),
                });
            }
        }
        let sides = [
            (source, &selection.source_key, &selection.source_timestamp, &selection.source_compare),
            (target, &selection.target_key, &selection.target_timestamp, &selection.target_compare),
        ];
        for (table, key, timestamp, compare) in sides {
            for name in ColumnSelection::requested(key, timestamp, compare) {
                table.find(name)?;
            }
        }
        let require = |table: &TableColumns, name: &str| table.require(name).cloned();
        let source_key = require(source, &selection.source_key)?;
        let source_timestamp = require(source, &selection.source_timestamp)?;
        let target_key = require(target, &selection.target_key)?;
        let target_timestamp = require(target, &selection.target_timestamp)?;
        source.gate_timestamp(&selection.source_timestamp, &source_timestamp)?;
        target.gate_timestamp(&selection.target_timestamp, &target_timestamp)?;

        let mut pairs = vec![
            ColumnPair {
                logical_name: selection.source_key.clone(),
                source: Some(source_key.clone()),
                target: Some(target_key.clone()),
            },
            ColumnPair {
                logical_name: selection.source_timestamp.clone(),
                source: Some(source_timestamp.clone()),
                target: Some(target_timestamp.clone()),
            },
        ];
        let mut seen = vec![selection.source_key.to_lowercase(), selection.source_timestamp.to_lowercase()];
        for (source_name, target_name) in selection.source_compare.iter().zip(&selection.target_compare) {
            let lowered = source_name.to_lowercase();
            if seen.contains(&lowered) {
                continue;
            }
            seen.push(lowered);
            pairs.push(ColumnPair {
                logical_name: source_name.clone(),
                source: source.find(source_name)?.cloned(),
                target: target.find(target_name)?.cloned(),
            });
        }
        Ok(ColumnPlan { source_key, target_key, source_timestamp, target_timestamp, pairs })
    }

    /// Every pair: key, timestamp, then the compare columns.
    pub fn pairs(&self) -> &[ColumnPair] {
        &self.pairs
    }

    /// The pairs after the key and the timestamp (what `row_diff` needs at least one of).
    pub fn compare_pairs(&self) -> &[ColumnPair] {
        &self.pairs[2..]
    }

    /// The logical names of every pair (the metadata-only preflight fingerprints them).
    pub fn logical_names(&self) -> Vec<String> {
        self.pairs.iter().map(|pair| pair.logical_name.clone()).collect()
    }

    /// The source key column.
    pub fn source_key(&self) -> &CatalogColumn {
        &self.source_key
    }

    /// The target key column.
    pub fn target_key(&self) -> &CatalogColumn {
        &self.target_key
    }

    /// The source timestamp column.
    pub fn source_timestamp(&self) -> &CatalogColumn {
        &self.source_timestamp
    }

    /// The target timestamp column.
    pub fn target_timestamp(&self) -> &CatalogColumn {
        &self.target_timestamp
    }

    /// The `schema_compatibility` result: PASS when every pair's families are compatible, else
    /// FAIL (never ERROR) with the findings joined by `"; "` as its error; values
    /// `{"columns": [evidence, ...]}` per side; no query times.
    pub fn schema_compatibility(&self) -> CheckResult {
        let side = |column: fn(&ColumnPair) -> Option<&CatalogColumn>| {
            let columns = self.pairs.iter().map(|pair| evidence(&pair.logical_name, column(pair))).collect();
            let mut map = Map::new();
            map.insert("columns".into(), Json::Array(columns));
            Json::Object(map)
        };
        let findings: Vec<String> = self.pairs.iter().filter_map(ColumnPair::finding).collect();
        CheckResult {
            check_type: ResultType::Check(crate::check::CheckType::SchemaCompatibility),
            status: if findings.is_empty() { ResultStatus::Pass } else { ResultStatus::Fail },
            source_value: side(|pair| pair.source.as_ref()),
            target_value: side(|pair| pair.target.as_ref()),
            source_query_seconds: None,
            target_query_seconds: None,
            error: (!findings.is_empty()).then(|| findings.join("; ")),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// A present, non-nullable column of `data_type` with no numeric or datetime facts.
    pub(crate) fn column(name: &str, data_type: &str) -> CatalogColumn {
        CatalogColumn {
            name: name.to_owned(),
            data_type: data_type.to_owned(),
            udt_name: None,
            numeric_precision: None,
            numeric_scale: None,
            datetime_precision: None,
            nullable: false,
        }
    }

    pub(crate) fn selection(compare: &[&str]) -> ColumnSelection {
        ColumnSelection {
            source_key: "id".into(),
            target_key: "id".into(),
            source_timestamp: "updated_at".into(),
            target_timestamp: "updated_at".into(),
            source_compare: compare.iter().map(|name| name.to_string()).collect(),
            target_compare: compare.iter().map(|name| name.to_lowercase()).collect(),
        }
    }

    pub(crate) fn payments(columns: Vec<CatalogColumn>) -> TableColumns {
        TableColumns::new("public", "payments", columns)
    }

    #[test]
    fn exact_match_wins_over_case_insensitive_ones() {
        let table = payments(vec![column("Status", "text"), column("status", "integer"), column("STATUS", "text")]);
        assert_eq!(table.find("status").unwrap().unwrap().data_type, "integer");
        assert_eq!(table.find("Status").unwrap().unwrap().name, "Status");
    }

    #[test]
    fn a_unique_case_insensitive_match_resolves() {
        let table = payments(vec![column("UpdatedAt", "timestamp with time zone")]);
        assert_eq!(table.find("updatedat").unwrap().unwrap().name, "UpdatedAt");
        assert_eq!(table.find("UPDATEDAT").unwrap().unwrap().name, "UpdatedAt");
        assert_eq!(table.find("updated_at").unwrap(), None, "missing is allowed");
    }

    #[test]
    fn ambiguous_and_missing_names_have_upstream_texts() {
        let table = payments(vec![column("Status", "text"), column("STATUS", "text")]);
        let error = ColumnPlan::resolve(&selection(&["status"]), &table, &table).unwrap_err();
        // The key is missing too, but resolution of every requested name comes first.
        assert_eq!(error.to_string(), "Column 'status' does not resolve uniquely in public.payments");
        assert_eq!(table.require("id").unwrap_err().to_string(), "Column 'id' does not exist in public.payments");
    }

    #[test]
    fn key_and_timestamp_must_exist_in_upstream_order() {
        let full = payments(vec![column("id", "bigint"), column("updated_at", "timestamp with time zone")]);
        let no_key = payments(vec![column("updated_at", "timestamp with time zone")]);
        let no_timestamp = TableColumns::new("analytics", "payments", vec![column("id", "bigint")]);
        let error = |source: &TableColumns, target: &TableColumns| {
            ColumnPlan::resolve(&selection(&[]), source, target).unwrap_err().to_string()
        };
        assert_eq!(error(&no_key, &no_timestamp), "Column 'id' does not exist in public.payments");
        assert_eq!(error(&full, &no_timestamp), "Column 'updated_at' does not exist in analytics.payments");
    }

    #[test]
    fn timestamp_gate_names_the_configured_column_and_catalog_type() {
        let source = payments(vec![column("id", "bigint"), column("Updated_At", "date")]);
        let target = payments(vec![column("id", "bigint"), column("updated_at", "timestamp without time zone")]);
        let error = ColumnPlan::resolve(&selection(&[]), &source, &target).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Data-diff timestamp column public.payments.updated_at has unsupported type 'date'"
        );
        let text = payments(vec![column("id", "bigint"), column("updated_at", "TEXT")]);
        let error = ColumnPlan::resolve(&selection(&[]), &target, &text).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Data-diff timestamp column public.payments.updated_at has unsupported type 'TEXT'"
        );
    }

    #[test]
    fn every_timestamp_type_passes_the_gate() {
        let table = payments(vec![]);
        for data_type in [
            "timestamp with time zone",
            "timestamp without time zone",
            "TIMESTAMP",
            "timestamp(6)",
            "datetime",
            "TIMESTAMP_LTZ",
            "TIMESTAMP_NTZ",
            "TIMESTAMP_TZ",
        ] {
            assert_eq!(table.gate_timestamp("ts", &column("ts", data_type)), Ok(()), "{data_type}");
        }
        for data_type in ["date", "time without time zone", "bigint", "text", "interval"] {
            assert!(table.gate_timestamp("ts", &column("ts", data_type)).is_err(), "{data_type}");
        }
    }

    #[test]
    fn naive_timestamp_types_are_recognised() {
        assert!(column("t", "timestamp without time zone").is_naive_timestamp());
        assert!(column("t", "DATETIME").is_naive_timestamp());
        assert!(column("t", "TIMESTAMP_NTZ").is_naive_timestamp());
        assert!(!column("t", "timestamp with time zone").is_naive_timestamp());
        assert!(!column("t", "TIMESTAMP_TZ").is_naive_timestamp());
    }

    #[test]
    fn pairs_skip_key_timestamp_and_repeated_names() {
        let source = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("Status", "text"),
            column("amount", "numeric"),
        ]);
        let target = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("status", "text"),
            column("amount", "numeric"),
        ]);
        let plan = ColumnPlan::resolve(
            &selection(&["ID", "Status", "Updated_At", "amount", "STATUS", "note"]),
            &source,
            &target,
        )
        .unwrap();
        let names: Vec<_> = plan.pairs().iter().map(|pair| pair.logical_name.as_str()).collect();
        assert_eq!(names, ["id", "updated_at", "Status", "amount", "note"]);
        let status = &plan.pairs()[2];
        assert_eq!(status.source.as_ref().unwrap().name, "Status");
        assert_eq!(status.target.as_ref().unwrap().name, "status");
        let note = &plan.pairs()[4];
        assert_eq!((note.source.as_ref(), note.target.as_ref()), (None, None));
        assert_eq!(plan.compare_pairs().len(), 3);
        assert_eq!(plan.logical_names(), ["id", "updated_at", "Status", "amount", "note"]);
        assert_eq!(plan.source_key().name, "id");
        assert_eq!(plan.target_timestamp().name, "updated_at");
    }

    #[test]
    fn schema_compatibility_passes_on_replication_families() {
        let numeric =
            CatalogColumn { numeric_precision: Some(12), numeric_scale: Some(2), ..column("amount", "numeric") };
        let double =
            CatalogColumn { numeric_precision: Some(53), nullable: true, ..column("amount", "double precision") };
        let source = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("day", "date"),
            numeric,
        ]);
        let target = payments(vec![
            column("id", "numeric"),
            column("updated_at", "timestamp without time zone"),
            column("day", "timestamp without time zone"),
            double,
        ]);
        let result =
            ColumnPlan::resolve(&selection(&["day", "amount"]), &source, &target).unwrap().schema_compatibility();
        assert_eq!(result.status, ResultStatus::Pass);
        assert_eq!(result.error, None);
        assert_eq!((result.source_query_seconds, result.target_query_seconds), (None, None));
        assert_eq!(result.source_value["columns"][3]["numeric_scale"], json!(2));
        assert_eq!(
            result.target_value["columns"][3],
            json!({
                "logical_name": "amount",
                "resolved_name": "amount",
                "data_type": "double precision",
                "type_family": "approximate_numeric",
                "numeric_precision": 53,
                "numeric_scale": null,
                "datetime_precision": null,
                "nullable": "YES",
            })
        );
    }

    #[test]
    fn schema_compatibility_uses_replication_type_families_across_routes() {
        // PostgreSQL source, Snowflake-style target: bigint↔NUMBER, date→TIMESTAMP_NTZ, text↔VARCHAR.
        let source = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("day", "date"),
            column("status", "text"),
        ]);
        let target = TableColumns::new(
            "PUBLIC",
            "PAYMENTS",
            vec![
                column("ID", "NUMBER"),
                column("UPDATED_AT", "TIMESTAMP_TZ"),
                column("DAY", "TIMESTAMP_NTZ"),
                column("STATUS", "VARCHAR"),
            ],
        );
        let mut upper = selection(&["day", "status"]);
        upper.target_key = "ID".into();
        upper.target_timestamp = "UPDATED_AT".into();
        upper.target_compare = vec!["DAY".into(), "STATUS".into()];
        let result = ColumnPlan::resolve(&upper, &source, &target).unwrap().schema_compatibility();
        assert_eq!((result.status, result.error), (ResultStatus::Pass, None));
        assert_eq!(result.target_value["columns"][2]["type_family"], json!("timestamp"));
        assert_eq!(result.target_value["columns"][2]["logical_name"], json!("day"), "logical name is the source's");

        // date↔DATE passes too; a target without the column fails with "target missing".
        let result = ColumnPlan::resolve(
            &upper,
            &source,
            &TableColumns::new(
                "PUBLIC",
                "PAYMENTS",
                vec![column("ID", "NUMBER"), column("UPDATED_AT", "TIMESTAMP_TZ"), column("DAY", "DATE")],
            ),
        )
        .unwrap()
        .schema_compatibility();
        assert_eq!(result.status, ResultStatus::Fail);
        assert_eq!(result.error.as_deref(), Some("status: source string is not compatible with target missing"));
    }

    #[test]
    fn schema_compatibility_fails_with_findings_and_reports_missing() {
        let source = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            CatalogColumn { udt_name: Some("text".into()), nullable: true, ..column("status", "text") },
            column("flag", "boolean"),
        ]);
        let target = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("flag", "text"),
        ]);
        let result =
            ColumnPlan::resolve(&selection(&["status", "flag"]), &source, &target).unwrap().schema_compatibility();
        assert_eq!(result.check_type.as_str(), "schema_compatibility");
        assert_eq!(result.status, ResultStatus::Fail);
        assert_eq!(
            result.error.as_deref(),
            Some(
                "status: source string is not compatible with target missing; flag: source boolean is not compatible with target string"
            )
        );
        assert_eq!(
            result.target_value["columns"][2],
            json!({
                "logical_name": "status",
                "resolved_name": null,
                "data_type": null,
                "type_family": "missing",
                "numeric_precision": null,
                "numeric_scale": null,
                "datetime_precision": null,
                "nullable": null,
            })
        );
        assert_eq!(result.source_value["columns"][2]["nullable"], json!("YES"));
        assert_eq!(result.source_value["columns"][0]["nullable"], json!("NO"));
        assert_eq!(result.source_value["columns"].as_array().unwrap().len(), 4);
    }
}
