//! One attempt of the aggregate checks, planned from a definition and both tables' catalog
//! columns: every decision PipelineWise's engine makes that does not need a database (config
//! note §2.5), so that the runner only reads catalogs, runs the SQL it is handed and stores the
//! [`Outcome`] it gets back.
//!
//! The runner's flow with it:
//!
//! 1. Read both tables' `information_schema.columns` into [`TableColumns`];
//!    [`AggregatePlan::new`] resolves columns, gates the timestamp type, pairs columns,
//!    computes `schema_compatibility` and the checksum descriptors. An error here ends the
//!    attempt: [`Outcome::failed`] with its text (and a placeholder preflight).
//! 2. Without [`has_metric_checks`](AggregatePlan::has_metric_checks) (and without `row_diff`)
//!    the preflight is metadata-only over [`ColumnPlan::logical_names`] and the attempt ends
//!    with [`AggregatePlan::outcome`]`(vec![])`.
//! 3. Otherwise the source preflight fingerprints [`fingerprint_sql`](AggregatePlan::fingerprint_sql);
//!    a preflight that does not pass ends with [`AggregatePlan::preflight_stopped`].
//! 4. No metric left (only a rejected checksum): [`AggregatePlan::outcome`]`(vec![])`, ERROR.
//! 5. A NULL window start: run both [`minimum_sql`](AggregatePlan::minimum_sql) queries and
//!    [`AggregatePlan::historical_start`] decides: persist the start, or end with its outcome.
//! 6. Run [`metric_sql`](AggregatePlan::metric_sql) on each side with the window bounds,
//!    decode each row into [`Value`]s in [`metrics`](AggregatePlan::metrics) order, and end
//!    with [`AggregatePlan::outcome`]`(`[`compare`](AggregatePlan::compare)`(...)?)` (plus a
//!    `row_diff` result when that extension ran).

pub use crate::checksum::{CHECKSUM_OFFSET, ChecksumColumn, ChecksumKind, ChecksumPlan, UnsupportedComparison};
pub use crate::column::{
    CatalogColumn, ColumnError, ColumnPair, ColumnPlan, ColumnSelection, TIMESTAMP_TYPES, TableColumns,
};
pub use crate::family::{TypeFamily, lookup_name};
pub use crate::query::{
    IdentifierError, MetricQuery, MinimumQuery, Placeholders, QueryError, SOFT_DELETE_COLUMN, qualified_table,
    quote_ident, quoted_ident,
};

use chrono::{DateTime, Utc};

use crate::historical::{HistoricalStart, resolve_historical_start};
use crate::mysql::MySqlPlaceholders;
use crate::outcome::Outcome;

use crate::run::PreflightStatus;
use crate::verdict::{CheckResult, ResultType, in_declared_order};
use crate::{
    Side,
    check::CheckType,
    definition::{CheckDefinition, SourceType},
    value::Value,
};

/// Why an attempt cannot be planned or its aggregate rows read. Column and identifier texts are
/// PipelineWise's (they become the attempt's `error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A column is missing, ambiguous, or the timestamp column has the wrong type.
    #[error(transparent)]
    Column(#[from] ColumnError),
    /// A name cannot be quoted.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// An aggregate row does not hold one value per metric.
    #[error("the {side} aggregate row has {found} values, {expected} expected")]
    RowShape {
        /// The side whose row is wrong.
        side: Side,
        /// One per metric.
        expected: usize,
        /// What the row held.
        found: usize,
    },
}

/// The plan of one attempt's aggregate checks (see the module docs for how the runner uses it).
///
/// ```
/// use datadiff_diff_core::{plan::{AggregatePlan, CatalogColumn, TableColumns}, definition::CheckDefinition, attempt::RunStatus, Side, merge::Value};
/// use serde_json::json;
///
/// let definition = CheckDefinition::from_canonical_config("postgres/tap/public/payments", &json!({
///     "target_id": "postgres", "tap_id": "tap", "source_type": "tap-postgres",
///     "target_type": "target-postgres", "source_database": "app", "target_database": "dwh",
///     "source_schema": "public", "source_table": "payments",
///     "target_schema": "public", "target_table": "payments",
///     "source_key_column": "id", "target_key_column": "id",
///     "source_timestamp_column": "updated_at", "target_timestamp_column": "updated_at",
///     "source_compare_columns": [], "target_compare_columns": [],
///     "checks": ["row_count", "max_key"], "frequency": "0 * * * *",
///     "window_start_seconds": 7200, "window_end_seconds": 3600, "statement_timeout_seconds": 300,
/// }))?;
/// let column = |name: &str, data_type: &str| CatalogColumn {
///     name: name.into(), data_type: data_type.into(), udt_name: None,
///     numeric_precision: None, numeric_scale: None, datetime_precision: None, nullable: false,
/// };
/// let table = TableColumns::new("public", "payments",
///     vec![column("id", "bigint"), column("updated_at", "timestamp with time zone")]);
///
/// let plan = AggregatePlan::new(&definition, &table, &table)?;
/// assert_eq!(
///     plan.metric_sql(Side::Source),
///     r#"SELECT COUNT(*) AS "row_count", MAX("id") AS "max_key" FROM "public"."payments" WHERE "updated_at" >= $1 AND "updated_at" < $2"#
/// );
/// // The runner runs that on both sides and hands back one value per metric.
/// let results = plan.compare(&[Value::Int(4), Value::Int(9)], &[Value::Int(3), Value::Int(9)], 0.2, 0.3)?;
/// let outcome = plan.outcome(results);
/// assert_eq!((outcome.status, outcome.error.as_deref()), (RunStatus::Fail, Some("row_count FAIL")));
/// assert_eq!(outcome.results[0].source_value, json!("4"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AggregatePlan {
    checks: Vec<CheckType>,
    columns: ColumnPlan,
    metadata: Vec<CheckResult>,
    metrics: Vec<CheckType>,
    has_metric_checks: bool,
    checksum: Option<ChecksumPlan>,
    soft_delete_column: Option<String>,
    source_sql: String,
    target_sql: String,
    fingerprint_sql: String,
    source_minimum_sql: String,
    target_minimum_sql: String,
}

impl AggregatePlan {
    /// Plans the attempt of `definition` over the source and target tables' columns (built with
    /// the definition's schema and table names).
    ///
    /// Columns are resolved as [`ColumnPlan::resolve`] says. `schema_compatibility`, when
    /// declared, is computed now. When `row_checksum` is declared and a pair cannot be
    /// checksummed, its ERROR result is recorded and it leaves the metrics; the others still
    /// run. With `exclude_soft_deleted`, the target must have `_sdc_deleted_at` (resolved like
    /// any column) and its queries leave out rows where it is set. A table without a visible
    /// column is [`ColumnError::TableDoesNotExist`]; a `column_map` key the source table
    /// lacks is [`ColumnError::UnknownMappedColumn`].
    pub fn new(
        definition: &CheckDefinition,
        source: &TableColumns,
        target: &TableColumns,
    ) -> Result<AggregatePlan, PlanError> {
        let columns = ColumnPlan::resolve(&ColumnSelection::of(definition), source, target)?;
        if let Some(name) = definition.extensions.replica.unknown_source_columns(source).first() {
            return Err(ColumnError::UnknownMappedColumn {
                name: (*name).to_owned(),
                schema: source.schema().to_owned(),
                table: source.table().to_owned(),
            }
            .into());
        }
        let soft_delete_column = match definition.extensions.exclude_soft_deleted {
            true => Some(target.require(SOFT_DELETE_COLUMN)?.name.clone()),
            false => None,
        };
        let checks = definition.checks.clone();
        let mut metadata = Vec::new();
        if checks.contains(&CheckType::SchemaCompatibility) {
            metadata.push(columns.schema_compatibility());
        }
        let mut metrics: Vec<CheckType> = checks.iter().copied().filter(|check| check.reads_data()).collect();
        let has_metric_checks = !metrics.is_empty();
        let mut checksum = None;
        if metrics.contains(&CheckType::RowChecksum) {
            match ChecksumPlan::build(columns.pairs()) {
                Ok(plan) => checksum = Some(plan),
                Err(reason) => {
                    metrics.retain(|check| *check != CheckType::RowChecksum);
                    metadata.push(CheckResult::rejected_checksum(&reason));
                }
            }
        }
        let metadata = in_declared_order(&checks, metadata);

        // A plan without metrics still has well-formed SQL: a row count, fingerprinted (as
        // PipelineWise does for a rejected checksum-only definition) but never executed.
        let row_count = [CheckType::RowCount];
        let queried: &[CheckType] = if metrics.is_empty() { &row_count } else { &metrics };
        let metric_query = |side: Side| {
            let (table, key, timestamp, soft_delete) = match side {
                Side::Source => (source, columns.source_key(), columns.source_timestamp(), None),
                Side::Target => {
                    (target, columns.target_key(), columns.target_timestamp(), soft_delete_column.as_deref())
                }
            };
            MetricQuery {
                schema: table.schema(),
                table: table.table(),
                key_column: &key.name,
                timestamp_column: &timestamp.name,
                metrics: queried,
                checksum: checksum.as_ref(),
                side,
                soft_delete_column: soft_delete,
            }
        };
        let minimum_query = |table: &TableColumns, timestamp: &str, soft_delete: Option<&str>| {
            MinimumQuery {
                schema: table.schema(),
                table: table.table(),
                timestamp_column: timestamp,
                soft_delete_column: soft_delete,
            }
            .sql(Placeholders::Numbered)
        };
        let (source_sql, fingerprint_sql, source_minimum_sql) = match definition.source_type {
            // A MySQL or MariaDB source runs upstream's MySQL forms (`?` parameters), and the
            // preflight fingerprints the `%s` text PipelineWise hands PyMySQL.
            SourceType::TapMysql => (
                metric_query(Side::Source).mysql_sql(MySqlPlaceholders::Question)?,
                metric_query(Side::Source).mysql_sql(MySqlPlaceholders::Pyformat)?,
                crate::mysql::minimum_sql(
                    source.schema(),
                    source.table(),
                    &columns.source_timestamp().name,
                    MySqlPlaceholders::Question,
                )
                .map_err(QueryError::from)?,
            ),
            SourceType::TapPostgres => (
                metric_query(Side::Source).sql(Placeholders::Numbered)?,
                metric_query(Side::Source).sql(Placeholders::Pyformat)?,
                minimum_query(source, &columns.source_timestamp().name, None).map_err(QueryError::from)?,
            ),
        };
        let target_sql = metric_query(Side::Target).sql(Placeholders::Numbered)?;
        let target_minimum_sql = minimum_query(target, &columns.target_timestamp().name, soft_delete_column.as_deref())
            .map_err(QueryError::from)?;
        Ok(AggregatePlan {
            checks,
            columns,
            metadata,
            metrics,
            has_metric_checks,
            checksum,
            soft_delete_column,
            source_sql,
            target_sql,
            fingerprint_sql,
            source_minimum_sql,
            target_minimum_sql,
        })
    }

    /// The resolved columns and their pairs.
    pub fn columns(&self) -> &ColumnPlan {
        &self.columns
    }

    /// Whether any check other than `schema_compatibility` is declared (even one that was then
    /// rejected): the attempt needs a source preflight.
    pub fn has_metric_checks(&self) -> bool {
        self.has_metric_checks
    }

    /// The results known before any data is read (`schema_compatibility`, a rejected
    /// `row_checksum`), in declared order.
    pub fn metadata_results(&self) -> &[CheckResult] {
        &self.metadata
    }

    /// The metric checks the aggregate queries compute, in declared order: the columns of each
    /// side's row, in this order. Empty when there is nothing to query.
    pub fn metrics(&self) -> &[CheckType] {
        &self.metrics
    }

    /// The checksum descriptors, when `row_checksum` runs.
    pub fn checksum(&self) -> Option<&ChecksumPlan> {
        self.checksum.as_ref()
    }

    /// The target's resolved `_sdc_deleted_at`, when `exclude_soft_deleted` is on.
    pub fn soft_delete_column(&self) -> Option<&str> {
        self.soft_delete_column.as_deref()
    }

    /// The aggregate query of `side`, with `$1` (window start, inclusive) and `$2` (window end,
    /// exclusive) — or, for a `tap-mysql` source, upstream's MySQL form with two `?`
    /// ([`MetricQuery::mysql_sql`]).
    pub fn metric_sql(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_sql,
            Side::Target => &self.target_sql,
        }
    }

    /// The text the source preflight fingerprints: the source query with PipelineWise's `%s`
    /// placeholders (for a MySQL source, its PyMySQL form with `%%`-doubled `DATE_FORMAT`
    /// specifiers), so fingerprints match PipelineWise's for the same definition.
    pub fn fingerprint_sql(&self) -> &str {
        &self.fingerprint_sql
    }

    /// `SELECT MIN(ts) … WHERE ts < $1` on `side` (`$1` = the cutoff; `?` on a MySQL source),
    /// for a historical run.
    pub fn minimum_sql(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_minimum_sql,
            Side::Target => &self.target_minimum_sql,
        }
    }

    /// The metric results of one aggregate row per side, each holding one canonical value per
    /// [`metrics`](AggregatePlan::metrics) entry, and each side's query time (repeated on every
    /// metric's result).
    pub fn compare(
        &self,
        source_row: &[Value],
        target_row: &[Value],
        source_query_seconds: f64,
        target_query_seconds: f64,
    ) -> Result<Vec<CheckResult>, PlanError> {
        for (side, row) in [(Side::Source, source_row), (Side::Target, target_row)] {
            if row.len() != self.metrics.len() {
                return Err(PlanError::RowShape { side, expected: self.metrics.len(), found: row.len() });
            }
        }
        Ok(self
            .metrics
            .iter()
            .zip(source_row.iter().zip(target_row))
            .map(|(&check, (source, target))| {
                CheckResult::metric(check, source, target, source_query_seconds, target_query_seconds)
            })
            .collect())
    }

    /// The outcome of an attempt whose checks ran: the metadata results and `results` (metric
    /// results, a `row_diff` result) in declared order, the status aggregated (ERROR beats
    /// FAIL), the failed results' texts as the error. With no `results` this ends a
    /// metadata-only attempt, or one whose only metric was a rejected checksum (ERROR).
    ///
    /// Every declared check must have a result (PipelineWise raises otherwise): a missing one
    /// makes the attempt ERROR `no result for the declared check '<check>'` rather than let it
    /// pass without that check.
    pub fn outcome(&self, results: Vec<CheckResult>) -> Outcome {
        let mut all = self.metadata.clone();
        all.extend(results);
        let has_result = |check: &CheckType| all.iter().any(|result| result.check_type == ResultType::Check(*check));
        if let Some(missing) = self.checks.iter().find(|check| !has_result(check)) {
            return Outcome::failed(format!("no result for the declared check '{missing}'"));
        }
        Outcome::from_results(in_declared_order(&self.checks, all))
    }

    /// The outcome of an attempt whose source preflight did not pass: ERROR, the metadata
    /// results kept (see [`Outcome::preflight_stopped`]).
    pub fn preflight_stopped(&self, status: PreflightStatus, error: Option<&str>, findings: &[String]) -> Outcome {
        Outcome::preflight_stopped(status, error, findings, self.metadata.clone())
    }

    /// The start of a historical run from each side's minimum before `cutoff` (see
    /// [`resolve_historical_start`]).
    pub fn historical_start(
        &self,
        source_minimum: Option<DateTime<Utc>>,
        target_minimum: Option<DateTime<Utc>>,
        cutoff: DateTime<Utc>,
    ) -> HistoricalStart {
        resolve_historical_start(source_minimum, target_minimum, cutoff, &self.metadata)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use crate::column::tests::column;
    use crate::run::RunStatus;
    use crate::verdict::ResultStatus;
    use crate::{
        definition::{Extensions, SourceType, TargetType},
        value::Numeric,
    };

    fn definition(checks: &[CheckType], compare: &[&str]) -> CheckDefinition {
        CheckDefinition {
            full_check_name: "postgres/payments/public/transfers".into(),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetPostgres,
            source_database: "src".into(),
            target_database: "dst".into(),
            source_schema: "public".into(),
            source_table: "transfers".into(),
            target_schema: "payments".into(),
            target_table: "transfers".into(),
            source_key_column: "id".into(),
            target_key_column: "id".into(),
            source_timestamp_column: "updated_at".into(),
            target_timestamp_column: "updated_at".into(),
            source_compare_columns: compare.iter().map(|name| name.to_string()).collect(),
            target_compare_columns: compare.iter().map(|name| name.to_lowercase()).collect(),
            checks: checks.to_vec(),
            frequency: "0 * * * *".into(),
            window_start_seconds: 7200,
            window_end_seconds: 3600,
            statement_timeout_seconds: 300,
            initial_full_scan: false,
            extensions: Extensions::default(),
        }
    }

    fn tables(extra_target: Vec<CatalogColumn>) -> (TableColumns, TableColumns) {
        let id = CatalogColumn { numeric_scale: Some(0), numeric_precision: Some(64), ..column("id", "bigint") };
        let amount = CatalogColumn { numeric_scale: Some(2), ..column("amount", "numeric") };
        let source = TableColumns::new(
            "public",
            "transfers",
            vec![
                id.clone(),
                column("updated_at", "timestamp with time zone"),
                column("status", "text"),
                amount.clone(),
                column("ratio", "double precision"),
            ],
        );
        let mut target_columns = vec![
            id,
            column("updated_at", "timestamp without time zone"),
            column("status", "character varying"),
            amount,
            column("ratio", "double precision"),
        ];
        target_columns.extend(extra_target);
        (source, TableColumns::new("payments", "transfers", target_columns))
    }

    #[test]
    fn a_mysql_source_gets_upstreams_mysql_forms_and_the_target_stays_postgres() {
        let checks = [CheckType::RowCount, CheckType::MaxKey, CheckType::RowChecksum];
        let mut mysql = definition(&checks, &["status"]);
        mysql.source_type = SourceType::TapMysql;
        let source = TableColumns::new(
            "shop",
            "transfers",
            vec![column("id", "bigint"), column("updated_at", "datetime"), column("status", "varchar")],
        );
        let (_, target) = tables(vec![]);
        let plan = AggregatePlan::new(&mysql, &source, &target).unwrap();
        let sql = plan.metric_sql(Side::Source);
        assert!(sql.starts_with("SELECT COUNT(*) AS `row_count`, MAX(`id`) AS `max_key`, SUM((CAST(CONV("), "{sql}");
        assert!(sql.contains("DATE_FORMAT(`updated_at`, '%Y-%m-%d %H:%i:%s.%f')"), "{sql}");
        assert!(sql.ends_with("FROM `shop`.`transfers` WHERE `updated_at` >= ? AND `updated_at` < ?"), "{sql}");
        let fingerprinted = plan.fingerprint_sql();
        assert!(fingerprinted.contains("'%%Y-%%m-%%d %%H:%%i:%%s.%%f'"), "{fingerprinted}");
        assert!(fingerprinted.ends_with("`updated_at` >= %s AND `updated_at` < %s"), "{fingerprinted}");
        assert_eq!(
            plan.minimum_sql(Side::Source),
            "SELECT MIN(`updated_at`) FROM `shop`.`transfers` WHERE `updated_at` < ?"
        );
        assert!(plan.metric_sql(Side::Target).contains("FROM \"payments\".\"transfers\""));
        assert!(plan.minimum_sql(Side::Target).contains("$1"));
    }

    #[test]
    fn one_select_per_side_with_every_metric_in_declared_order() {
        let checks = [CheckType::MaxKey, CheckType::SchemaCompatibility, CheckType::RowCount, CheckType::RowChecksum];
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&checks, &["status", "amount"]), &source, &target).unwrap();
        assert!(plan.has_metric_checks());
        assert_eq!(plan.metrics(), [CheckType::MaxKey, CheckType::RowCount, CheckType::RowChecksum]);
        let sql = plan.metric_sql(Side::Source);
        assert!(sql.starts_with("SELECT MAX(\"id\") AS \"max_key\", COUNT(*) AS \"row_count\", SUM("), "{sql}");
        assert!(sql.ends_with(
            "AS \"row_checksum\" FROM \"public\".\"transfers\" WHERE \"updated_at\" >= $1 AND \"updated_at\" < $2"
        ));
        assert!(plan.metric_sql(Side::Target).contains("FROM \"payments\".\"transfers\""));
        assert_eq!(plan.fingerprint_sql().matches("%s").count(), 2);
        assert_eq!(plan.fingerprint_sql().replace("%s", "$"), sql.replace("$1", "$").replace("$2", "$"));
        assert_eq!(
            plan.minimum_sql(Side::Target),
            "SELECT MIN(\"updated_at\") FROM \"payments\".\"transfers\" WHERE \"updated_at\" < $1"
        );
        let checksum = plan.checksum().unwrap();
        let names: Vec<_> = checksum.columns().iter().map(|c| c.logical_name.as_str()).collect();
        assert_eq!(names, ["id", "updated_at", "status", "amount"]);
        assert_eq!(plan.metadata_results().len(), 1);
        assert_eq!(plan.metadata_results()[0].status, ResultStatus::Pass);
    }

    #[test]
    fn a_rejected_checksum_leaves_the_query_and_errors_the_run() {
        let checks = [CheckType::RowChecksum, CheckType::RowCount];
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&checks, &["ratio"]), &source, &target).unwrap();
        assert_eq!(plan.metrics(), [CheckType::RowCount]);
        assert!(plan.checksum().is_none());
        assert!(!plan.metric_sql(Side::Source).contains("MD5"));
        let rows = plan.compare(&[Value::Int(3)], &[Value::Int(3)], 0.5, 0.75).unwrap();
        let outcome = plan.outcome(rows);
        assert_eq!(outcome.status, RunStatus::Error);
        assert_eq!(
            outcome.error.as_deref(),
            Some("row_checksum column 'ratio' has unsupported type family 'approximate_numeric'")
        );
        let names: Vec<_> = outcome.results.iter().map(|r| r.check_type.as_str()).collect();
        assert_eq!(names, ["row_checksum", "row_count"], "declared order");
        assert_eq!(outcome.results[1].source_value, json!("3"));
        assert_eq!(outcome.results[1].target_query_seconds, Some(0.75));
    }

    #[test]
    fn a_checksum_only_definition_fingerprints_a_row_count_it_never_runs() {
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&[CheckType::RowChecksum], &["ratio"]), &source, &target).unwrap();
        assert!(plan.has_metric_checks(), "it still needs a preflight");
        assert!(plan.metrics().is_empty());
        assert_eq!(
            plan.fingerprint_sql(),
            r#"SELECT COUNT(*) AS "row_count" FROM "public"."transfers" WHERE "updated_at" >= %s AND "updated_at" < %s"#
        );
        let outcome = plan.outcome(Vec::new());
        assert_eq!(outcome.status, RunStatus::Error);
        assert_eq!(outcome.results.len(), 1);
    }

    #[test]
    fn schema_only_definitions_read_no_data() {
        let (source, target) = tables(vec![]);
        let plan =
            AggregatePlan::new(&definition(&[CheckType::SchemaCompatibility], &["status", "note"]), &source, &target)
                .unwrap();
        assert!(!plan.has_metric_checks());
        assert_eq!(plan.columns().logical_names(), ["id", "updated_at", "status", "note"]);
        let outcome = plan.outcome(Vec::new());
        assert_eq!(outcome.status, RunStatus::Fail);
        assert_eq!(outcome.error.as_deref(), Some("note: source missing is not compatible with target missing"));
    }

    #[test]
    fn metric_results_compare_canonical_values_per_check() {
        let checks = [
            CheckType::RowCount,
            CheckType::NullKeyCount,
            CheckType::DuplicateKeyCount,
            CheckType::MinKey,
            CheckType::RowChecksum,
        ];
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&checks, &["status"]), &source, &target).unwrap();
        let sum = |text: &str| Value::Numeric(Numeric::parse(text).unwrap());
        let source_row = [Value::Int(4), Value::Int(0), Value::Int(0), Value::Int(1), sum("181442033815354")];
        let target_row = [Value::Int(4), Value::Int(0), Value::Int(1), Value::Int(1), sum("-5")];
        let outcome = plan.outcome(plan.compare(&source_row, &target_row, 1.0, 2.0).unwrap());
        let statuses: Vec<_> = outcome.results.iter().map(|r| r.status.as_str()).collect();
        assert_eq!(statuses, ["PASS", "PASS", "FAIL", "PASS", "FAIL"]);
        assert_eq!(outcome.status, RunStatus::Fail);
        assert_eq!(outcome.error.as_deref(), Some("duplicate_key_count FAIL; row_checksum FAIL"));
        assert_eq!(outcome.results[4].source_value, json!("181442033815354"));
        assert_eq!(
            plan.compare(&source_row[..2], &target_row, 1.0, 2.0),
            Err(PlanError::RowShape { side: Side::Source, expected: 5, found: 2 })
        );
    }

    #[test]
    fn final_results_require_every_declared_check() {
        let checks = [CheckType::RowCount, CheckType::MaxKey];
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&checks, &[]), &source, &target).unwrap();
        let outcome = plan.outcome(Vec::new());
        assert_eq!(outcome.status, RunStatus::Error, "never a PASS without the declared checks");
        assert_eq!(outcome.error.as_deref(), Some("no result for the declared check 'row_count'"));
        let only_count = CheckResult::metric(CheckType::RowCount, &Value::Int(1), &Value::Int(1), 0.0, 0.0);
        let outcome = plan.outcome(vec![only_count]);
        assert_eq!(outcome.error.as_deref(), Some("no result for the declared check 'max_key'"));
        assert!(outcome.results.is_empty());
    }

    #[test]
    fn soft_deleted_target_rows_are_left_out_on_the_target_only() {
        let mut with_soft_deletes = definition(&[CheckType::RowCount], &[]);
        with_soft_deletes.extensions.exclude_soft_deleted = true;
        let (source, target) = tables(vec![column("_SDC_DELETED_AT", "character varying")]);
        let plan = AggregatePlan::new(&with_soft_deletes, &source, &target).unwrap();
        assert_eq!(plan.soft_delete_column(), Some("_SDC_DELETED_AT"));
        assert!(plan.metric_sql(Side::Target).ends_with(" AND \"_SDC_DELETED_AT\" IS NULL"));
        assert!(plan.minimum_sql(Side::Target).ends_with(" AND \"_SDC_DELETED_AT\" IS NULL"));
        assert!(!plan.metric_sql(Side::Source).contains("IS NULL"));
        assert!(!plan.fingerprint_sql().contains("IS NULL"));

        let (source, target) = tables(vec![]);
        assert_eq!(
            AggregatePlan::new(&with_soft_deletes, &source, &target).unwrap_err().to_string(),
            "Column '_sdc_deleted_at' does not exist in payments.transfers"
        );
    }

    #[test]
    fn column_errors_carry_upstream_texts() {
        let (source, _) = tables(vec![]);
        let target =
            TableColumns::new("payments", "transfers", vec![column("id", "bigint"), column("updated_at", "date")]);
        let error = AggregatePlan::new(&definition(&[CheckType::RowCount], &[]), &source, &target).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Data-diff timestamp column payments.transfers.updated_at has unsupported type 'date'"
        );
        let empty = TableColumns::new("", "transfers", source.columns().to_vec());
        let error = AggregatePlan::new(&definition(&[CheckType::RowCount], &[]), &empty, &source).unwrap_err();
        assert_eq!(error.to_string(), "Database identifiers must be non-empty and cannot contain NUL");
    }

    #[test]
    fn preflight_and_historical_stops_keep_metadata_results() {
        let checks = [CheckType::SchemaCompatibility, CheckType::RowCount];
        let (source, target) = tables(vec![]);
        let plan = AggregatePlan::new(&definition(&checks, &["note"]), &source, &target).unwrap();
        let stopped = plan.preflight_stopped(PreflightStatus::Blocked, None, &["No usable source index".to_owned()]);
        assert_eq!((stopped.status, stopped.error.as_deref()), (RunStatus::Error, Some("No usable source index")));
        assert_eq!(stopped.results.len(), 1);
        let cutoff = chrono::DateTime::from_timestamp(1_784_725_200, 0).unwrap();
        match plan.historical_start(None, None, cutoff) {
            HistoricalStart::Stop(outcome) => {
                assert_eq!(outcome.status, RunStatus::Error, "a schema FAIL is not hidden by a deferral");
                assert_eq!(
                    outcome.error.as_deref(),
                    Some("note: source missing is not compatible with target missing")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
