//! `row_diff` from a MySQL or MariaDB source (`tap-mysql`) against its PostgreSQL replica:
//! the same three steps as [`crate::row_diff`] (plan, stream, result), with the source side
//! read by [`RowStream::mysql`] instead of `COPY`.
//!
//! * **Plan** ([`MySqlRowDiffPlan::new`]): the source types come from the attempt's
//!   `information_schema.COLUMNS` read (`DATA_TYPE`, `COLUMN_TYPE`), the replica's from
//!   `pg_catalog`; each pair gets a source encoder and a *canonical* replica decoder
//!   ([`datadiff_access::stream::plan_mysql_pair`]: never the PostgreSQL-to-PostgreSQL
//!   "as sent" forms, whose bytes depend on both sides being PostgreSQL), so both sides
//!   encode equal values to equal bytes. A pair without a faithful comparison (`json`,
//!   `set`, `year`, a `jsonb` replica, a date against a boolean…) makes the `row_diff`
//!   result ERROR naming the column, in the PostgreSQL planner's words.
//! * **Stream**: the source runs `SELECT key, ts, compare… FROM db.table WHERE ts >= ? AND
//!   ts < ? ORDER BY key` on a MySQL session of its own (UTC, the engine's statement
//!   timeout, read-only transaction), the bounds bound as naive UTC — the values the
//!   aggregate query binds; a text key is ordered by its UTF-8 bytes (MySQL collations are
//!   case-insensitive by default), as the replica's `COLLATE "C"` orders it. The replica
//!   streams binary `COPY` exactly as for a PostgreSQL source. Both run concurrently; the
//!   merge, its deadline (statement timeout plus grace: a `KILL QUERY` for MySQL, a cancel
//!   for PostgreSQL) and the evidence are those of [`crate::row_diff`].
//! * **Strategy**: always a full stream of the window; `strategy: segments` (or `auto`) is
//!   streamed too, with a log line saying why — segment hashing needs PostgreSQL's hash
//!   functions on both sides.
//! * **Fingerprint**: with `row_diff` the only data check, the source preflight fingerprints
//!   the source `SELECT` with `%s` for the two bounds (PyMySQL's placeholder, the form
//!   upstream fingerprints its MySQL queries in).

use chrono::{DateTime, Utc};
use datadiff_access::stream::{
    self, Coercions, Decoder, KeyDecoder, MySqlColumnType, MySqlRowQuery, RowQuery, RowStream, StreamOptions,
};
use datadiff_access::{Error, TableName};
use datadiff_diff_core::{
    Side,
    definition::CheckDefinition,
    merge::{Key, MergeError, Summary},
    plan::{AggregatePlan, ColumnPair, quoted_ident},
    segment::{Strategy, StrategyUsed},
};

use crate::connections::Route;
use crate::progress::StreamProgress;
use crate::row_diff::{
    RowDiffOutcome, RowDiffPlan, SideCatalog, endpoint, merge_streams, missing, outcome, prefixed, stream_failure,
    timestamp_literal,
};

/// A planned `row_diff` of either route.
#[derive(Debug, Clone)]
pub(crate) enum AnyRowDiffPlan {
    /// PostgreSQL on both sides.
    Postgres(RowDiffPlan),
    /// A MySQL or MariaDB source.
    MySql(MySqlRowDiffPlan),
}

impl AnyRowDiffPlan {
    /// The text the source preflight fingerprints when `row_diff` is the only data check.
    pub(crate) fn fingerprint_sql(&self) -> String {
        match self {
            AnyRowDiffPlan::Postgres(plan) => plan.fingerprint_sql(),
            AnyRowDiffPlan::MySql(plan) => plan.source.sql_with_placeholders("%s"),
        }
    }

    /// Streams both sides of `[start, end)` through the merge (see the route's `run`).
    pub(crate) fn run(
        &self,
        route: &Route,
        [start, end]: [DateTime<Utc>; 2],
        max_examples: usize,
        counted_rows: Option<u64>,
        interrupted: &(dyn Fn() -> bool + Sync),
        progress: Option<StreamProgress<'_>>,
    ) -> Result<RowDiffOutcome, String> {
        match self {
            AnyRowDiffPlan::Postgres(plan) => {
                plan.run(route, [start, end], max_examples, counted_rows, interrupted, progress)
            }
            AnyRowDiffPlan::MySql(plan) => plan.run(route, start, end, max_examples, interrupted, progress),
        }
    }
}

/// What `row_diff` compares for a MySQL source: the source query, the replica's side and
/// the names its evidence uses.
#[derive(Debug, Clone)]
pub(crate) struct MySqlRowDiffPlan {
    source: MySqlRowQuery,
    target_table: TableName,
    target_encrypted: bool,
    target_key_column: String,
    target_key: KeyDecoder,
    target_timestamp_column: String,
    target_naive_timestamp: bool,
    target_columns: Vec<(String, Decoder)>,
    soft_delete_column: Option<String>,
    key_name: String,
    field_names: Vec<String>,
    strategy: Strategy,
}

impl MySqlRowDiffPlan {
    /// Plans `row_diff` for a MySQL source from the attempt's aggregate plan (its resolved
    /// columns carry the MySQL types) and the replica's catalog. The error is the `row_diff`
    /// result's one-line reason.
    pub(crate) fn new(
        definition: &CheckDefinition,
        plan: &AggregatePlan,
        target_catalog: &SideCatalog,
    ) -> Result<MySqlRowDiffPlan, String> {
        let columns = plan.columns();
        let source_table = TableName::new(&definition.source_schema, &definition.source_table);
        let target_table = TableName::new(&definition.target_schema, &definition.target_table);
        if columns.compare_pairs().is_empty() {
            return Err(format!("row_diff requires at least one compare_columns entry for {source_table}"));
        }
        let resolve = |pair: &ColumnPair| -> Result<(MySqlColumnType, stream::ColumnType), String> {
            let source = pair.source.as_ref().ok_or_else(|| missing(&pair.logical_name, &source_table))?;
            let target = pair.target.as_ref().ok_or_else(|| missing(&pair.logical_name, &target_table))?;
            let target = target_catalog
                .columns
                .iter()
                .find(|column| column.name == target.name)
                .cloned()
                .ok_or_else(|| missing(&target.name, &target_table))?;
            Ok((MySqlColumnType::of(source), target))
        };
        let pairs = columns.pairs();
        let empty_string_as_null =
            definition.extensions.row_diff.is_some_and(|settings| settings.empty_string_as_null());
        let coercions = Coercions::NONE.empty_string_as_null(empty_string_as_null);
        let (source_key, target_key) = resolve(&pairs[0])?;
        let (source_key_form, target_key_decoder) =
            stream::plan_mysql_key(&source_key, &target_key, "target").map_err(|error| prefixed(&error))?;
        let mut source_columns = Vec::with_capacity(pairs.len() - 1);
        let mut target_columns = Vec::with_capacity(pairs.len() - 1);
        let mut field_names = Vec::with_capacity(pairs.len() - 1);
        for pair in &pairs[1..] {
            let (source, target) = resolve(pair)?;
            let (encoder, decoder) =
                stream::plan_mysql_pair(&source, &target, "target", coercions).map_err(|error| prefixed(&error))?;
            source_columns.push((source.name, encoder));
            target_columns.push((target.name, decoder));
            field_names.push(pair.logical_name.clone());
        }
        let source = MySqlRowQuery::for_table(
            &definition.source_schema,
            &definition.source_table,
            &source_key.name,
            source_key_form,
            &columns.source_timestamp().name,
            source_columns,
        )
        .map_err(|error| format!("row_diff: {error}"))?;
        Ok(MySqlRowDiffPlan {
            source,
            target_table,
            target_encrypted: target_catalog.encrypted,
            target_key_column: target_key.name,
            target_key: target_key_decoder,
            target_timestamp_column: columns.target_timestamp().name.clone(),
            target_naive_timestamp: columns.target_timestamp().is_naive_timestamp(),
            target_columns,
            soft_delete_column: plan.soft_delete_column().map(str::to_owned),
            key_name: pairs[0].logical_name.clone(),
            field_names,
            strategy: definition.extensions.row_diff.map(|settings| settings.strategy()).unwrap_or_default(),
        })
    }

    /// The replica's streaming query over `[start, end)`, bounds written as literals of its
    /// timestamp column's type (as for a PostgreSQL source).
    fn target_query(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> RowQuery {
        let timestamp = quoted_ident(&self.target_timestamp_column);
        let (start, end) = (
            timestamp_literal(start, self.target_naive_timestamp),
            timestamp_literal(end, self.target_naive_timestamp),
        );
        let mut filter = format!("{timestamp} >= {start} AND {timestamp} < {end}");
        if let Some(column) = &self.soft_delete_column {
            filter.push_str(&format!(" AND {} IS NULL", quoted_ident(column)));
        }
        RowQuery::for_table(
            &self.target_table,
            &self.target_key_column,
            self.target_key,
            self.target_columns.clone(),
            Some(&filter),
        )
    }

    /// Streams both sides of `[start, end)` through the merge; a watcher stops both streams
    /// at their deadline or on an interruption.
    fn run(
        &self,
        route: &Route,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        max_examples: usize,
        interrupted: &(dyn Fn() -> bool + Sync),
        progress: Option<StreamProgress<'_>>,
    ) -> Result<RowDiffOutcome, String> {
        let mysql =
            route.mysql_source.clone().ok_or_else(|| "row_diff: the source has no MySQL settings".to_owned())?;
        if self.strategy != Strategy::Stream {
            tracing::info!(
                strategy = "stream",
                reason = "segment hashing needs PostgreSQL on both sides",
                "row_diff streams every row of the window"
            );
        }
        let target_endpoint = endpoint(&route.target, route, self.target_encrypted)?;
        let target_query = self.target_query(start, end);
        let mut summary: Summary<Key> = Summary::new(max_examples, self.field_names.clone());
        let source = self.source.clone();
        let statement_timeout = route.statement_timeout;
        let (source_seconds, target_seconds) = merge_streams(
            route,
            |scope| {
                (
                    RowStream::mysql(scope, mysql, statement_timeout, source, (start, end), StreamOptions::default()),
                    RowStream::connect(scope, target_endpoint, target_query, StreamOptions::default()),
                )
            },
            progress,
            &mut summary,
            interrupted,
            &|error| self.merge_failure(error, route),
        )?;
        let strategy = StrategyUsed::stream("MySQL and MariaDB sources are streamed");
        Ok(outcome(&self.key_name, summary, source_seconds.as_secs_f64(), target_seconds.as_secs_f64(), strategy))
    }

    /// The one-line reason of a merge that stopped.
    fn merge_failure(&self, error: MergeError<Box<Error>>, route: &Route) -> String {
        let table = |side: Side| match side {
            Side::Source => format!("{}.{}", self.source_database(), self.source_table()),
            Side::Target => self.target_table.to_string(),
        };
        match error {
            MergeError::Read { side, source } => stream_failure(&source, side, route),
            MergeError::DuplicateKey { side, key } => {
                format!("row_diff: duplicate key {key} in {} on the {side}: the key column must be unique", table(side))
            }
            MergeError::OutOfOrder { side, previous, key } => {
                format!("row_diff: {} on the {side} is not in key order: {key} arrived after {previous}", table(side))
            }
            other => format!("row_diff: {other}"),
        }
    }

    fn source_database(&self) -> &str {
        self.source.database()
    }

    fn source_table(&self) -> &str {
        self.source.table()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn replica_bounds_are_literals_of_its_column_type() {
        let noon = Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap();
        assert_eq!(timestamp_literal(noon, true), "'2026-07-22 12:00:00.000000'::timestamp");
        assert_eq!(timestamp_literal(noon, false), "'2026-07-22 12:00:00.000000+00'::timestamptz");
    }
}
