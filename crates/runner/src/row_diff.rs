//! The `row_diff` extension check (SPEC §10): both sides of an attempt's window streamed in
//! key order through the merge core, naming the rows that differ.
//!
//! An attempt with `row_diff` runs it after its aggregate checks, with the same window:
//!
//! 1. **Plan** ([`RowDiffPlan::new`]), from the attempt's resolved [`ColumnPlan`] pairs (the
//!    same pairs as `row_checksum`: key, timestamp, compare columns) and both tables'
//!    `pg_catalog` types. The key pair decides the merge order; every other pair gets a
//!    decoder per side so that compatible types meet in one canonical encoding (see
//!    [`datadiff_access::stream::decoder`] and the table in `docs/comparison.md`: an exact
//!    number against `double precision` equal only to its nearest double, a float source
//!    against a narrower target read as the source's float, `timestamptz` against a naive
//!    `timestamp` as UTC, `char(n)` right-trimmed, NULL distinct from empty). A definition
//!    without compare columns, a missing column, a key that is not integer, uuid, text, date or timestamp on
//!    both sides, or a pair that does not compare (json, arrays, unknown types, an unscaled
//!    numeric source against a float)
//!    makes the `row_diff` result ERROR, naming the column; the other checks still run.
//! 2. **Stream**: each side runs `COPY (SELECT key, timestamp, compare… FROM table WHERE
//!    ts >= <start> AND ts < <end> [AND "_sdc_deleted_at" IS NULL] ORDER BY key [COLLATE
//!    "C"]) TO STDOUT (FORMAT binary)` on a connection of its own ([`Endpoint`]: same
//!    settings, TLS and statement timeout as the attempt's sessions), decoded on its reader
//!    thread and handed over in bounded batches; the merge runs on the attempt's thread.
//!    Memory is flat whatever the window. `COPY` takes no bind parameters, so the window
//!    bounds are written as typed literals formatted from the instants (never from text a
//!    user gave): `timestamptz` with `+00`, or naive UTC wall time for a naive column —
//!    the same values the aggregate queries bind.
//! 3. **Result**: `row_diff` PASS when nothing is missing, extra or changed, else FAIL, with
//!    the counts as values ([`CheckResult::row_diff`]) and each side's stream time as its
//!    query seconds; the first `max_examples` differences, in key order, become the
//!    attempt's `datadiff_run_differences` rows: the key as `{"<key column>": "<key>"}` (a
//!    composite key as `{"order_id": "7", "line_no": "2"}`, every key column by name) and,
//!    for a changed row, the names of the differing columns. Never a value.
//!
//! A duplicate key on either side (a composite key's whole tuple), rows out of key order, a
//! NULL key (any part of a composite key) or a stream failure (statement timeout, lost
//! connection) make the result ERROR with one line naming the
//! side and the key where there is one; a server error contributes its primary message only
//! (its DETAIL can quote row values).
//!
//! # A MySQL or MariaDB source (`tap-mysql`)
//!
//! The same three steps, the source read by [`RowStream::mysql`] instead of `COPY`:
//!
//! * **Plan**: the source types come from the attempt's `information_schema.COLUMNS` read
//!   (`DATA_TYPE`, `COLUMN_TYPE`), the replica's from `pg_catalog`; each pair gets a source
//!   encoder and a *canonical* replica decoder ([`datadiff_access::stream::plan_mysql_pair`]:
//!   never the PostgreSQL-to-PostgreSQL "as sent" forms, whose bytes depend on both sides
//!   being PostgreSQL), so both sides encode equal values to equal bytes. A pair without a
//!   faithful comparison (`json`, `set`, `year`, a `jsonb` replica, a date against a
//!   boolean…) makes the `row_diff` result ERROR naming the column, in the PostgreSQL
//!   planner's words.
//! * **Stream**: the source runs `SELECT key, ts, compare… FROM db.table WHERE ts >= ? AND
//!   ts < ? ORDER BY key` on a MySQL session of its own (UTC, the engine's statement timeout,
//!   read-only transaction), the bounds bound as naive UTC — the values the aggregate query
//!   binds; a text key is ordered by its UTF-8 bytes (MySQL collations are case-insensitive by
//!   default), as the replica's `COLLATE "C"` orders it. The replica streams binary `COPY`
//!   exactly as for a PostgreSQL source; the merge, its deadline (a `KILL QUERY` for MySQL)
//!   and the evidence are the same.
//! * **Strategy**: always a full stream of the window (`MySQL and MariaDB sources are
//!   streamed`): segment hashing needs PostgreSQL's hash functions on both sides.
//! * **Fingerprint**: with `row_diff` the only data check, the source preflight fingerprints
//!   the source `SELECT` with `%s` for the two bounds (PyMySQL's placeholder, the form
//!   upstream fingerprints its MySQL queries in).
//!
//! Both routes run through the one comparison pipeline ([`datadiff_access::compare`]): the
//! strategy, the segment search, the streams, the merge and its deadline are written once;
//! this module describes each side to it ([`AttemptSide`], [`MySqlSource`]) and words the
//! outcome ([`RowDiffHooks`] and the failure texts).
//!
//! # Decisions where the sources are silent
//!
//! * **Evidence keys** use the source's configured key name, as results use logical names.
//! * **`key_columns`** (`datadiff.yml`) other than the definition's single `key_column` are
//!   `row_diff`'s key ([`own_key_columns`]): every column, in order, is resolved on each side
//!   (the source name as the definition's other names are, the replica's through `column_map`
//!   or the target's case mapping; a missing one is `Column '…' does not exist`), streamed
//!   first and ordered by in turn (`ORDER BY order_id, line_no`, text parts `COLLATE "C"`, a
//!   MySQL source's text parts as binary), merged as one tuple ([`Key::Composite`]), hashed by
//!   segment on the first column's positions with the other key columns hashed with the row
//!   ([`segment::plan_composite_hashing`]; a unique index whose columns are all key columns
//!   spares the duplicate check), and stored as one evidence field per key column under its
//!   logical (source) name. A key is never compared on one of its parts: a tuple repeated on
//!   a side is an ERROR naming every key column. The upstream aggregate checks keep
//!   `key_column`.
//! * **Field names** of a changed row are the logical (source) names of the timestamp and
//!   compare columns.
//! * **Text** is compared byte for byte after the canonical trimming of `char(n)`;
//!   PostgreSQL sends UTF-8 to every client, so equal strings are equal bytes.
//! * **Own connections.** Under `READ COMMITTED` each statement takes its own snapshot, so
//!   streaming on a second connection per side reads what the attempt's session would read;
//!   it makes the client side about three times cheaper per row (see [`Endpoint`]). The two
//!   streams always run concurrently (the merge needs both), whatever `--jobs` and sequential
//!   sides say for the aggregate queries.
//! * **With `row_diff` the only data check** (besides `schema_compatibility`), the source
//!   preflight fingerprints the source streaming `SELECT` with `%s` in place of the two
//!   window bounds, the form upstream fingerprints its own queries in.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Scope;
use std::time::Duration;

use chrono::{DateTime, Datelike, Utc};
use datadiff_backend_store::{Difference, Division};
use datadiff_diff_core::{
    Side,
    attempt::{CheckResult, ResultStatus, ResultType, RowDiffCounts},
    definition::CheckDefinition,
    merge::{Example, Key, MergeError, Summary},
    plan::{AggregatePlan, CatalogColumn, ColumnPair, TableColumns, quoted_ident},
    segment::{ChildDigest, Link, Overview, Segment, Split, Strategy, StrategyUsed},
    sketch::{SketchCell, SketchShape},
};
use serde_json::{Map, Value as Json};

use crate::connections::Route;
use crate::divided::{self, SharedWindow};
use crate::progress::{PartProgress, StreamProgress};
use crate::row_diff_error::RowDiffError;
use datadiff_access::compare::{
    self, Cancel, CompareError, CompareSide, Compared, Comparison, Found, HashFacts, Hooks, RowMeter, RowSet,
};
use datadiff_access::segment::{self, HashSide, KeysNotUsable, Phase, SegmentQuery, SideHashing, Unhashable};
use datadiff_access::split::{self, BoundsQuery, NotSplittable, Part, SplitKey};
use datadiff_access::stream::{
    self, ColumnType, Decoder, Endpoint, KeyDecoder, MySqlColumnType, MySqlRowQuery, RowQuery, RowStream, StreamOptions,
};
use datadiff_access::{ANSWER_GRACE, MySqlSideConfig, SideSession, one_line};
use datadiff_access::{Error, SideConfig, TableName};

/// What step 3 reads from one side's catalog for `row_diff`.
#[derive(Debug, Clone)]
pub(crate) struct SideCatalog {
    /// The table's columns with their `pg_catalog` types.
    pub(crate) columns: Vec<ColumnType>,
    /// Whether the attempt's session to that side is encrypted (its stream connection will
    /// be too).
    pub(crate) encrypted: bool,
}

/// One side's part of the plan.
#[derive(Debug, Clone)]
struct SidePlan {
    table: TableName,
    encrypted: bool,
    /// The key columns (resolved names) and their decoders, in key order: one for a single
    /// key, every part of a composite key.
    keys: Vec<(String, KeyDecoder)>,
    timestamp_column: String,
    naive_timestamp: bool,
    /// The timestamp then the compare columns: resolved names and decoders.
    columns: Vec<(String, Decoder)>,
    soft_delete_column: Option<String>,
}

impl SidePlan {
    /// The rows compared, with `bounds` as the two window bounds.
    fn filter(&self, bounds: [&str; 2]) -> String {
        let timestamp = quoted_ident(&self.timestamp_column);
        let mut filter = format!("{timestamp} >= {} AND {timestamp} < {}", bounds[0], bounds[1]);
        if let Some(column) = &self.soft_delete_column {
            filter.push_str(&format!(" AND {} IS NULL", quoted_ident(column)));
        }
        filter
    }

    /// The streaming query, with `bounds` as the two window bounds of its `WHERE`.
    fn query(&self, bounds: [&str; 2]) -> RowQuery {
        RowQuery::for_table_keys(&self.table, self.keys.clone(), self.columns.clone(), Some(&self.filter(bounds)))
    }

    /// The window's filter over `[start, end)`, bounds written as literals of the column's type.
    fn window_filter(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> String {
        self.filter([&timestamp_literal(start, self.naive_timestamp), &timestamp_literal(end, self.naive_timestamp)])
    }

    /// The streaming `SELECT` with `$1` and `$2` for the window bounds (for a server to plan
    /// it, see [`row_diff_select`]).
    fn parameterised_select(&self) -> String {
        self.query(["$1", "$2"]).select_sql().to_owned()
    }

    /// The streaming query of the rows `filter` keeps.
    fn rows_query(&self, filter: &str) -> RowQuery {
        RowQuery::for_table_keys(&self.table, self.keys.clone(), self.columns.clone(), Some(filter))
    }

    /// The query over `[start, end)`, bounds written as literals of the column's type.
    fn window_query(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> RowQuery {
        let start = timestamp_literal(start, self.naive_timestamp);
        let end = timestamp_literal(end, self.naive_timestamp);
        self.query([&start, &end])
    }

    /// The key columns' resolved names, in key order.
    fn key_names(&self) -> Vec<String> {
        self.keys.iter().map(|(name, _)| name.clone()).collect()
    }
}

/// `row_diff`'s key when `key_columns` names another than the definition's key column alone
/// (a composite key, or one other column): `(source name, target name)` per column, in key
/// order. `None`: the definition's key column, resolved as the other checks resolve it.
pub(crate) fn own_key_columns(definition: &CheckDefinition) -> Option<Vec<(String, String)>> {
    let keys = &definition.extensions.key_columns;
    (!keys.is_empty() && keys != std::slice::from_ref(&definition.source_key_column))
        .then(|| definition.row_diff_key_columns())
}

/// How the source side is read.
#[derive(Debug, Clone)]
enum SourcePlan {
    /// A PostgreSQL source, streamed by `COPY`, and how both sides hash its rows (or why they
    /// cannot).
    Postgres { side: SidePlan, hashing: Result<(SideHashing, SideHashing), Unhashable> },
    /// A MySQL or MariaDB source, streamed by its ordered `SELECT`.
    MySql(MySqlRowQuery),
}

/// Where the source's column types come from when planning.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SourceCatalog<'a> {
    /// A PostgreSQL source: its `pg_catalog` types.
    Postgres(&'a SideCatalog),
    /// A MySQL or MariaDB source: the attempt's `information_schema.COLUMNS` read of its
    /// table (the aggregate plan's types; a composite key's other columns are found there).
    MySql(&'a TableColumns),
}

/// What `row_diff` compares in one attempt: both sides' streaming queries and the names its
/// evidence uses.
#[derive(Debug, Clone)]
pub(crate) struct RowDiffPlan {
    source: SourcePlan,
    target: SidePlan,
    /// The logical key names, in key order (the evidence's JSON keys): the definition's key
    /// column, or every column of `key_columns`.
    key_names: Vec<String>,
    /// The logical names of the compared fields, in stream order.
    field_names: Vec<String>,
    /// How the rows are read (see [`datadiff_access::segment`]).
    strategy: Strategy,
    /// How the window is divided into key ranges (one unit by default).
    split: RowDiffSplit,
}

impl RowDiffPlan {
    /// Plans `row_diff` for `definition` from the attempt's aggregate plan (resolved columns,
    /// the soft-delete column), the source's column types and the target's catalog. The
    /// error is the `row_diff` result's one-line reason.
    pub(crate) fn new(
        definition: &CheckDefinition,
        plan: &AggregatePlan,
        source_catalog: SourceCatalog<'_>,
        target_catalog: &SideCatalog,
    ) -> Result<RowDiffPlan, RowDiffError> {
        let columns = plan.columns();
        let source_table = TableName::new(&definition.source_schema, &definition.source_table);
        let target_table = TableName::new(&definition.target_schema, &definition.target_table);
        if columns.compare_pairs().is_empty() {
            return Err(RowDiffError::NoCompareColumns(source_table));
        }
        let catalog = |types: &[ColumnType], table: &TableName, name: &str| {
            types.iter().find(|column| column.name == name).cloned().ok_or_else(|| missing(name, table))
        };
        let target_of = |pair: &ColumnPair| -> Result<ColumnType, RowDiffError> {
            // A MySQL source's missing target column is named by its logical name.
            let name = match source_catalog {
                SourceCatalog::Postgres(_) => target_name(definition, &pair.logical_name),
                SourceCatalog::MySql(_) => &pair.logical_name,
            };
            let target = pair.target.as_ref().ok_or_else(|| missing(name, &target_table))?;
            catalog(&target_catalog.columns, &target_table, &target.name)
        };
        let source_of = |pair: &ColumnPair| -> Result<CatalogColumn, RowDiffError> {
            pair.source.clone().ok_or_else(|| missing(&pair.logical_name, &source_table))
        };
        let pairs = columns.pairs();
        let empty_string_as_null =
            definition.extensions.row_diff.is_some_and(|settings| settings.empty_string_as_null());
        let coercions = stream::Coercions::NONE.empty_string_as_null(empty_string_as_null);
        let mut target_columns = Vec::with_capacity(pairs.len() - 1);
        let field_names: Vec<String> = pairs[1..].iter().map(|pair| pair.logical_name.clone()).collect();
        let own_keys = own_key_columns(definition);
        let composite = own_keys.as_ref();
        let (source, target_keys) = match source_catalog {
            SourceCatalog::Postgres(source_catalog) => {
                let source_column =
                    |pair: &ColumnPair| catalog(&source_catalog.columns, &source_table, &source_of(pair)?.name);
                // The key columns: the resolved key pair, or each column of `key_columns`.
                let key_pairs = match composite {
                    None => vec![(source_column(&pairs[0])?, target_of(&pairs[0])?)],
                    Some(keys) => keys
                        .iter()
                        .map(|(source, target)| {
                            Ok((
                                find_column(&source_catalog.columns, &source_table, source)?,
                                find_column(&target_catalog.columns, &target_table, target)?,
                            ))
                        })
                        .collect::<Result<Vec<_>, RowDiffError>>()?,
                };
                let mut source_keys = Vec::with_capacity(key_pairs.len());
                let mut target_keys = Vec::with_capacity(key_pairs.len());
                for (source_key, target_key) in key_pairs {
                    let (source_decoder, target_decoder) =
                        stream::plan_key(&source_key, &target_key, "target").map_err(RowDiffError::Plan)?;
                    source_keys.push((source_key.name, source_decoder));
                    target_keys.push((target_key.name, target_decoder));
                }
                let mut planned = Vec::with_capacity(pairs.len() - 1);
                for pair in &pairs[1..] {
                    let (source, target) = (source_column(pair)?, target_of(pair)?);
                    let (source_decoder, target_decoder) =
                        stream::plan_pair_with(&source, &target, "target", coercions).map_err(RowDiffError::Plan)?;
                    planned.push(((source, source_decoder), (target, target_decoder)));
                }
                let column_pairs = planned.iter().map(|((source, source_decoder), (target, target_decoder))| {
                    ((source, *source_decoder), (target, *target_decoder))
                });
                let hashing = match (source_keys.as_slice(), target_keys.as_slice()) {
                    ([(source, source_decoder)], [(_, target_decoder)]) => {
                        segment::plan_hashing((source, *source_decoder, *target_decoder), column_pairs)
                    }
                    _ => {
                        let keys: Vec<(&str, KeyDecoder, KeyDecoder)> = source_keys
                            .iter()
                            .zip(&target_keys)
                            .map(|((name, source), (_, target))| (name.as_str(), *source, *target))
                            .collect();
                        let target_names: Vec<&str> = target_keys.iter().map(|(name, _)| name.as_str()).collect();
                        segment::plan_composite_hashing(&keys, &target_names, column_pairs)
                    }
                };
                let mut source_columns = Vec::with_capacity(planned.len());
                for ((source, source_decoder), (target, target_decoder)) in planned {
                    source_columns.push((source.name, source_decoder));
                    target_columns.push((target.name, target_decoder));
                }
                let side = SidePlan {
                    table: source_table,
                    encrypted: source_catalog.encrypted,
                    keys: source_keys,
                    timestamp_column: columns.source_timestamp().name.clone(),
                    naive_timestamp: columns.source_timestamp().is_naive_timestamp(),
                    columns: source_columns,
                    soft_delete_column: None,
                };
                (SourcePlan::Postgres { side, hashing }, target_keys)
            }
            SourceCatalog::MySql(source_columns) => {
                let key_pairs = match composite {
                    None => vec![(source_of(&pairs[0])?, target_of(&pairs[0])?)],
                    Some(keys) => keys
                        .iter()
                        .map(|(source, target)| {
                            let found = source_columns.find(source).ok().flatten().cloned();
                            Ok((
                                found.ok_or_else(|| missing(source, &source_table))?,
                                find_column(&target_catalog.columns, &target_table, target)?,
                            ))
                        })
                        .collect::<Result<Vec<_>, RowDiffError>>()?,
                };
                let mut source_keys = Vec::with_capacity(key_pairs.len());
                let mut target_keys = Vec::with_capacity(key_pairs.len());
                for (source_key, target_key) in key_pairs {
                    let source_key = MySqlColumnType::of(&source_key);
                    let (source_form, target_decoder) =
                        stream::plan_mysql_key(&source_key, &target_key, "target").map_err(RowDiffError::Plan)?;
                    source_keys.push((source_key.name, source_form));
                    target_keys.push((target_key.name, target_decoder));
                }
                let mut source_columns = Vec::with_capacity(pairs.len() - 1);
                for pair in &pairs[1..] {
                    let (source, target) = (MySqlColumnType::of(&source_of(pair)?), target_of(pair)?);
                    let (encoder, decoder) =
                        stream::plan_mysql_pair(&source, &target, "target", coercions).map_err(RowDiffError::Plan)?;
                    source_columns.push((source.name, encoder));
                    target_columns.push((target.name, decoder));
                }
                let query = MySqlRowQuery::for_table_keys(
                    &definition.source_schema,
                    &definition.source_table,
                    source_keys,
                    &columns.source_timestamp().name,
                    source_columns,
                )
                .map_err(RowDiffError::Identifier)?;
                (SourcePlan::MySql(query), target_keys)
            }
        };
        let key_names = match composite {
            None => vec![pairs[0].logical_name.clone()],
            Some(keys) => keys.iter().map(|(source, _)| source.clone()).collect(),
        };
        Ok(RowDiffPlan {
            source,
            target: SidePlan {
                table: target_table,
                encrypted: target_catalog.encrypted,
                keys: target_keys,
                timestamp_column: columns.target_timestamp().name.clone(),
                naive_timestamp: columns.target_timestamp().is_naive_timestamp(),
                columns: target_columns,
                soft_delete_column: plan.soft_delete_column().map(str::to_owned),
            },
            key_names,
            field_names,
            strategy: definition.extensions.row_diff.map(|settings| settings.strategy()).unwrap_or_default(),
            split: RowDiffSplit { parts: 1, jobs: 1 },
        })
    }

    /// This plan reading its rows with `strategy` instead of the definition's.
    pub(crate) fn with_strategy(self, strategy: Strategy) -> RowDiffPlan {
        RowDiffPlan { strategy, ..self }
    }

    /// This plan dividing its window as `split` says.
    pub(crate) fn with_split(self, split: RowDiffSplit) -> RowDiffPlan {
        RowDiffPlan { split, ..self }
    }

    /// The text the source preflight fingerprints when `row_diff` is the only data check:
    /// the source streaming `SELECT` with `%s` for the window bounds.
    pub(crate) fn fingerprint_sql(&self) -> String {
        match &self.source {
            SourcePlan::Postgres { side, .. } => side.query(["%s", "%s"]).select_sql().to_owned(),
            SourcePlan::MySql(query) => query.sql_with_placeholders("%s"),
        }
    }

    /// The source streaming `SELECT` over `[start, end)` (for its row estimate), for a
    /// PostgreSQL source.
    pub(crate) fn source_select_sql(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> Option<String> {
        match &self.source {
            SourcePlan::Postgres { side, .. } => Some(side.window_query(start, end).select_sql().to_owned()),
            SourcePlan::MySql(_) => None,
        }
    }

    /// Compares both sides of the window `[start, end)` through the comparison pipeline
    /// ([`datadiff_access::compare`]): the strategy, with segments the hashes, then the
    /// streams of what is left through the merge. The pipeline's watcher asks `interrupted`
    /// every 50 ms and stops both streams when it says so, or at their deadline
    /// ([`answer_deadline`]). `counted_rows` (the source window's exact count, when the
    /// attempt has one) lets `auto` stream small windows outright; an estimate never does (a
    /// stale one would make `auto` choose differently from run to run).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        route: &Route,
        window: [DateTime<Utc>; 2],
        max_examples: usize,
        counted_rows: Option<u64>,
        interrupted: &(dyn Fn() -> bool + Sync),
        progress: Option<StreamProgress<'_>>,
        shared: Option<&mut SharedWindow<'_>>,
    ) -> Result<RowDiffOutcome, RowDiffError> {
        let split = self.split;
        let mut comparison = self.comparison(route, max_examples, counted_rows, interrupted);
        match &self.source {
            SourcePlan::Postgres { side, hashing } => {
                comparison.unhashable = hashing.as_ref().err().map(ToString::to_string);
                let (source_hashing, target_hashing) = match hashing {
                    Ok((source, target)) => (Some(source), Some(target)),
                    Err(_) => (None, None),
                };
                // A divided window needs the backend's part queue (extension 3).
                let shared = match shared {
                    Some(shared) if split.part_count() > 1 => {
                        match shared.queue.store.has_run_parts().map_err(crate::divided::queue_error)? {
                            true => Some(shared),
                            false => {
                                tracing::info!(
                                    reason = "the backend has no part table (run datadiff migrate)",
                                    "row_diff compares the window as one unit"
                                );
                                None
                            }
                        }
                    }
                    _ => None,
                };
                if let Some(shared) = shared
                    && let Some((key, parts)) = self.split_points(route, side, window, split, counted_rows)?
                {
                    let hashing = (source_hashing, target_hashing);
                    return self.run_parts(route, (side, hashing), window, (key, parts), &comparison, progress, shared);
                }
                let mut source = AttemptSide::new(&route.source, route, side, window, source_hashing, None)?;
                let mut target = AttemptSide::new(&route.target, route, &self.target, window, target_hashing, None)?;
                let hooks = RowDiffHooks { progress, mysql_source: false, strategy: self.strategy };
                let compared = self.compare(route, &mut source, &mut target, &comparison, hooks)?;
                Ok(self.worded(compared))
            }
            SourcePlan::MySql(query) => {
                let config = route.mysql_source.clone().ok_or(RowDiffError::NoMySqlSettings)?;
                let mut source =
                    MySqlSource { config, statement_timeout: route.statement_timeout, query: query.clone(), window };
                if split.part_count() > 1 {
                    tracing::info!(reason = %NotSplittable::MySqlSource, "row_diff compares the window as one unit");
                }
                let mut target = AttemptSide::new(&route.target, route, &self.target, window, None, None)?;
                let hooks = RowDiffHooks { progress, mysql_source: true, strategy: self.strategy };
                let compared = self.compare(route, &mut source, &mut target, &comparison, hooks)?;
                Ok(self.worded(compared))
            }
        }
    }

    /// Runs the pipeline over `source` and `target`.
    fn compare<S: CompareSide<Error = RowDiffError>, H: Hooks<Stop = std::convert::Infallible>>(
        &self,
        route: &Route,
        source: &mut S,
        target: &mut AttemptSide,
        comparison: &Comparison<'_>,
        mut hooks: H,
    ) -> Result<Compared, RowDiffError> {
        compare::compare(source, target, comparison, &mut hooks).map_err(|error| match error {
            CompareError::Side(reason) => reason,
            CompareError::Merge(error) => self.merge_failure(error, route),
            CompareError::NoAnswer(sides) => no_answer(&sides, route),
            CompareError::Interrupted => RowDiffError::Interrupted,
            CompareError::Stopped(never) => match never {},
        })
    }

    /// The split points of the window when `split` asks for parts and the key can be split
    /// ([`SplitKey`]): the source's key quantiles over the window, read on a session of its
    /// own. `None`: the window is one unit (said in the log when the key is the reason).
    fn split_points(
        &self,
        route: &Route,
        side: &SidePlan,
        [start, end]: [DateTime<Utc>; 2],
        split: RowDiffSplit,
        counted_rows: Option<u64>,
    ) -> Result<Option<(SplitKey, Vec<Part>)>, RowDiffError> {
        let wanted = split.part_count();
        if wanted < 2 {
            return Ok(None);
        }
        let key = match SplitKey::of(side.keys[0].1, self.target.keys[0].1) {
            Ok(key) => key,
            Err(why) => {
                tracing::info!(reason = %why, "row_diff compares the window as one unit");
                return Ok(None);
            }
        };
        let mut session = SideSession::open(&route.source, route.statement_timeout)?;
        let (table, column, filter) = (side.table.clone(), side.keys[0].0.clone(), side.window_filter(start, end));
        let sample = split::sample_percent(counted_rows);
        let read = session.with_client("split points", move |client| {
            let query =
                BoundsQuery { table: &table, key: &column, split: key, filter: Some(&filter), parts: wanted, sample };
            split::read_bounds(client, "source", &query)
        });
        session.close();
        let bounds = read
            .map_err(|error| RowDiffError::SplitPoints(error.to_string()))?
            .map_err(|error| RowDiffError::SplitPoints(described("source", &error)))?;
        Ok((!bounds.is_empty()).then(|| (key, split::parts(bounds))))
    }

    /// The comparison settings of this plan for one window (or part of it).
    fn comparison<'i>(
        &self,
        route: &Route,
        max_examples: usize,
        counted_rows: Option<u64>,
        interrupted: &'i (dyn Fn() -> bool + Sync),
    ) -> Comparison<'i> {
        let mut comparison = Comparison::new(max_examples, self.field_names.clone());
        comparison.strategy = self.strategy;
        comparison.counted_rows = counted_rows;
        comparison.deadline = Some(answer_deadline(route));
        comparison.interrupted = Some(interrupted);
        comparison
    }

    /// The owner's divided window (see [`crate::divided`]): takes the attempt's owner lock,
    /// writes the division and its `parts` to the backend, works parts on up to `jobs`
    /// threads with whichever processes join, and combines the stored outcomes in key order
    /// into the window's outcome. The owner lock stays held in `shared` until the attempt
    /// is finished.
    #[allow(clippy::too_many_arguments)]
    fn run_parts(
        &self,
        route: &Route,
        (side, hashing): (&SidePlan, (Option<&SideHashing>, Option<&SideHashing>)),
        window: [DateTime<Utc>; 2],
        (key, parts): (SplitKey, Vec<Part>),
        comparison: &Comparison<'_>,
        progress: Option<StreamProgress<'_>>,
        shared: &mut SharedWindow<'_>,
    ) -> Result<RowDiffOutcome, RowDiffError> {
        let started = std::time::Instant::now();
        if !shared.own()? {
            return Err(RowDiffError::Parts("another process owns the attempt".to_owned()));
        }
        let (results, error) = shared.before.clone().unwrap_or((Json::Array(Vec::new()), None));
        let division = Division {
            run_id: shared.queue.run_id,
            split_key: key.as_str().to_owned(),
            strategy: self.strategy.as_str().to_owned(),
            results,
            error,
            created_by: shared.queue.label.clone(),
        };
        let ranges = divided::ranges(key, &parts);
        let queue = &shared.queue;
        queue.store.divide(&division, &ranges, queue.clock.now()).map_err(divided::queue_error)?;
        tracing::info!(parts = parts.len(), jobs = self.split.jobs, "row_diff divides the window into key ranges");
        if let Some(progress) = &progress {
            progress.divided(parts.len());
        }
        self.work_parts(route, (side, hashing), window, key, parts.len(), comparison, progress, queue)?;
        let stored = queue.store.run_parts(queue.run_id).map_err(divided::queue_error)?;
        match divided::combined(&stored, comparison.max_examples, &comparison.field_names) {
            Some(combined) => Ok(combined?.outcome(started.elapsed().as_secs_f64())),
            None if (comparison.interrupted.is_some_and(|interrupted| interrupted())) => Err(RowDiffError::Interrupted),
            None => Err(RowDiffError::Stream("a part of the window was not compared".to_owned())),
        }
    }

    /// A joiner's share of a divided window another process started (see
    /// [`crate::divided`]): works the stored `parts` on up to `jobs` threads; once every part
    /// is finished and the owner lock is free (the owner is gone), takes it and returns the
    /// window's outcome for this process to finish the attempt with. `None`: the owner
    /// finishes it (or the attempt ended).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn join(
        &self,
        route: &Route,
        window: [DateTime<Utc>; 2],
        max_examples: usize,
        counted_rows: Option<u64>,
        (key, parts): (SplitKey, Vec<Part>),
        interrupted: &(dyn Fn() -> bool + Sync),
        shared: &mut SharedWindow<'_>,
    ) -> Result<Option<RowDiffOutcome>, RowDiffError> {
        let started = std::time::Instant::now();
        let SourcePlan::Postgres { side, hashing } = &self.source else {
            return Err(RowDiffError::NotPostgres("source"));
        };
        let hashing = match hashing {
            Ok((source, target)) => (Some(source), Some(target)),
            Err(_) => (None, None),
        };
        let mut comparison = self.comparison(route, max_examples, counted_rows, interrupted);
        comparison.unhashable = self.unhashable();
        tracing::info!(
            parts = parts.len(),
            jobs = self.split.jobs,
            "row_diff joins a window divided by another process"
        );
        self.work_parts(route, (side, hashing), window, key, parts.len(), &comparison, None, &shared.queue)?;
        let stored = shared.queue.store.run_parts(shared.queue.run_id).map_err(divided::queue_error)?;
        let Some(combined) = divided::combined(&stored, max_examples, &comparison.field_names) else {
            return Ok(None);
        };
        if !shared.own()? || !shared.queue.running()? {
            return Ok(None);
        }
        tracing::info!("row_diff finishes a divided window whose owner is gone");
        Ok(Some(combined?.outcome(started.elapsed().as_secs_f64())))
    }

    /// Why the rows cannot be hashed, when they cannot.
    fn unhashable(&self) -> Option<String> {
        match &self.source {
            SourcePlan::Postgres { hashing: Err(why), .. } => Some(why.to_string()),
            _ => None,
        }
    }

    /// Claims and compares parts of the window on up to `jobs` threads, each thread on a
    /// backend session of its own and each part on connections of its own, until no part is
    /// left (see [`divided::work`]).
    #[allow(clippy::too_many_arguments)]
    fn work_parts(
        &self,
        route: &Route,
        (side, (source_hashing, target_hashing)): (&SidePlan, (Option<&SideHashing>, Option<&SideHashing>)),
        window: [DateTime<Utc>; 2],
        key: SplitKey,
        part_count: usize,
        comparison: &Comparison<'_>,
        progress: Option<StreamProgress<'_>>,
        shared: &divided::Queue<'_>,
    ) -> Result<(), RowDiffError> {
        let jobs = self.split.jobs.clamp(1, part_count.max(1));
        let failed = AtomicBool::new(false);
        let never = || false;
        let interrupted = comparison.interrupted.unwrap_or(&never);
        let compare_part = |part: &Part| -> Result<divided::PartOutcome, RowDiffError> {
            let started = std::time::Instant::now();
            let hooks = PartHooks { part: part.index, progress: progress.as_ref().map(StreamProgress::part) };
            let mut source = AttemptSide::new(&route.source, route, side, window, source_hashing, Some((part, key)))?;
            let mut target =
                AttemptSide::new(&route.target, route, &self.target, window, target_hashing, Some((part, key)))?;
            let compared = self.compare(route, &mut source, &mut target, comparison, hooks)?;
            Ok(divided::PartOutcome {
                summary: keyed(&self.key_names, compared.summary),
                strategy: compared.strategy,
                seconds: started.elapsed().as_secs_f64(),
            })
        };
        let first_error: Mutex<Option<RowDiffError>> = Mutex::new(None);
        std::thread::scope(|threads| {
            for _ in 0..jobs {
                let (failed, first_error, compare_part) = (&failed, &first_error, &compare_part);
                let dispatch = tracing::dispatcher::get_default(Clone::clone);
                threads.spawn(move || {
                    tracing::dispatcher::with_default(&dispatch, || {
                        if let Err(error) = divided::work(shared, key, failed, interrupted, compare_part) {
                            failed.store(true, Ordering::Relaxed);
                            if let Ok(mut first) = first_error.lock() {
                                first.get_or_insert(error);
                            }
                        }
                    });
                });
            }
        });
        drop(progress);
        match first_error.into_inner().ok().flatten() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The outcome of one whole comparison.
    fn worded(&self, compared: Compared) -> RowDiffOutcome {
        let [source_streamed, target_streamed] = compared.streamed;
        let hashed = compared.before_streams;
        // Durations added, then converted once: seconds with at most nine decimals, as stored.
        let (source_seconds, target_seconds) =
            ((hashed + source_streamed).as_secs_f64(), (hashed + target_streamed).as_secs_f64());
        outcome(&self.key_names, compared.summary, source_seconds, target_seconds, compared.strategy)
    }

    /// The one-line reason of a merge that stopped.
    fn merge_failure(&self, error: MergeError<Box<Error>>, route: &Route) -> RowDiffError {
        let table = |side: Side| match (side, &self.source) {
            (Side::Source, SourcePlan::Postgres { side, .. }) => side.table.to_string(),
            (Side::Source, SourcePlan::MySql(query)) => format!("{}.{}", query.database(), query.table()),
            (Side::Target, _) => self.target.table.to_string(),
        };
        match error {
            MergeError::Read { side, source } => stream_failure(&source, side, route),
            MergeError::DuplicateKey { side, key } => RowDiffError::Stream(match self.key_names.as_slice() {
                [_] => format!("duplicate key {key} in {} on the {side}: the key column must be unique", table(side)),
                names => format!(
                    "duplicate key ({}) = {key} in {} on the {side}: the key columns must be unique together",
                    names.join(", "),
                    table(side)
                ),
            }),
            MergeError::OutOfOrder { side, previous, key } => RowDiffError::Stream(format!(
                "{} on the {side} is not in key order: {key} arrived after {previous}",
                table(side)
            )),
            other => RowDiffError::Stream(other.to_string()),
        }
    }
}

/// A PostgreSQL side of an attempt as a side of the comparison: it streams on a connection of
/// its own ([`endpoint`]), and hashes on a session opened for it ([`SideSession`], with the
/// attempt's deadlines) and closed when the search is over.
pub(crate) struct AttemptSide {
    side: Side,
    config: SideConfig,
    statement_timeout: Duration,
    endpoint: Endpoint,
    plan: SidePlan,
    /// The window's filter: the rows compared.
    window_filter: String,
    /// The side's segment queries over the window, when the rows can be hashed.
    segments: Option<SegmentQuery>,
    /// The session the hashes run on, between [`CompareSide::prepare`] and
    /// [`CompareSide::finish_hashing`].
    session: Option<SideSession>,
}

impl AttemptSide {
    fn new(
        config: &SideConfig,
        route: &Route,
        plan: &SidePlan,
        [start, end]: [DateTime<Utc>; 2],
        hashing: Option<&SideHashing>,
        part: Option<(&Part, SplitKey)>,
    ) -> Result<AttemptSide, RowDiffError> {
        let endpoint = endpoint(config, route, plan.encrypted)?;
        // A part's key range joins the window's filter: both strategies restrict by it.
        let window_filter = match part {
            Some((part, key)) => {
                format!("{} AND {}", plan.window_filter(start, end), part.filter(&plan.keys[0].0, key))
            }
            None => plan.window_filter(start, end),
        };
        let role = config.side.to_string();
        let segments = hashing.map(|hashing| {
            SegmentQuery::with_keys(
                role,
                &plan.table,
                &plan.key_names(),
                hashing.position,
                &hashing.fields,
                Some(&window_filter),
            )
        });
        Ok(AttemptSide {
            side: config.side,
            config: config.clone(),
            statement_timeout: route.statement_timeout,
            endpoint,
            plan: plan.clone(),
            window_filter,
            segments,
            session: None,
        })
    }

    /// The hashing session and this side's segment queries.
    fn hashing(&mut self) -> Result<(&mut SideSession, SegmentQuery), RowDiffError> {
        let side = self.side;
        match (&mut self.session, &self.segments) {
            (Some(session), Some(segments)) => Ok((session, segments.clone())),
            _ => Err(RowDiffError::NotHashable(side)),
        }
    }
}

impl HashSide for AttemptSide {
    type Error = RowDiffError;

    fn overview(&mut self, check_duplicates: bool) -> Result<Result<Option<Overview>, KeysNotUsable>, RowDiffError> {
        let (session, query) = self.hashing()?;
        let role = query.role().to_owned();
        session
            .with_client("segment overview", move |client| query.overview(client, check_duplicates))
            .map_err(|error| RowDiffError::Segment(error.to_string()))?
            .map_err(|error| RowDiffError::Segment(described(&role, &error)))
    }

    fn level(&mut self, splits: &[Split]) -> Result<Vec<ChildDigest>, RowDiffError> {
        let (session, query) = self.hashing()?;
        let (role, splits) = (query.role().to_owned(), splits.to_vec());
        session
            .with_client("segment hashes", move |client| query.level(client, &splits))
            .map_err(|error| RowDiffError::Segment(error.to_string()))?
            .map_err(|error| RowDiffError::Segment(described(&role, &error)))
    }

    fn split_points(&mut self, span: Segment, count: u64) -> Result<Vec<i64>, RowDiffError> {
        let (session, query) = self.hashing()?;
        let role = query.role().to_owned();
        session
            .with_client("sampling split points", move |client| query.split_points(client, span, count))
            .map_err(|error| RowDiffError::Segment(error.to_string()))?
            .map_err(|error| RowDiffError::Segment(described(&role, &error)))
    }

    fn segment_query(&self) -> Option<&SegmentQuery> {
        self.segments.as_ref()
    }

    fn sketches(&self) -> bool {
        self.segments.is_some()
    }

    fn sketch(&mut self, shape: SketchShape) -> Result<Vec<SketchCell>, RowDiffError> {
        let (session, query) = self.hashing()?;
        let role = query.role().to_owned();
        session
            .with_client("segment sketch", move |client| query.sketch(client, shape))
            .map_err(|error| RowDiffError::Segment(error.to_string()))?
            .map_err(|error| RowDiffError::Segment(described(&role, &error)))
    }
}

impl CompareSide for AttemptSide {
    fn side(&self) -> Side {
        self.side
    }

    fn is_local(&self) -> bool {
        segment::local_only(&self.config.config)
    }

    fn prepare(&mut self, probe_link: bool) -> Result<HashFacts, RowDiffError> {
        let mut session = SideSession::open(&self.config, self.statement_timeout)?;
        let (config, table, keys, role) =
            (self.config.config.clone(), self.plan.table.clone(), self.plan.key_names(), self.side.to_string());
        let facts = session.with_client(
            "segment preparation",
            move |client| -> Result<(bool, Option<Link>, bool), datadiff_access::Error> {
                let supported = segment::server_supports_segments(client, &role)?;
                let link = if probe_link && supported { Some(segment::link(client, &config, &role)?) } else { None };
                let unique = match keys.as_slice() {
                    [key] => segment::has_unique_key(client, &role, &table, key)?,
                    keys => segment::has_unique_key_columns(client, &role, &table, keys)?,
                };
                Ok((supported, link, unique))
            },
        );
        self.session = Some(session);
        let (supported, link, unique_key) =
            facts?.map_err(|error| RowDiffError::Segment(crate::error::chain(&error)))?;
        let unsupported =
            (!supported).then(|| "a server is older than PostgreSQL 14 (no hash_record_extended)".to_owned());
        Ok(HashFacts { unsupported, link, unique_key })
    }

    fn canceller(&self) -> Option<Cancel> {
        let canceller = self.session.as_ref()?.canceller();
        Some(Box::new(move || canceller.cancel()))
    }

    fn is_abandoned(&self) -> bool {
        self.session.as_ref().is_some_and(SideSession::is_abandoned)
    }

    fn finish_hashing(&mut self, abandon: bool) {
        match (self.session.take(), abandon) {
            (Some(session), true) => session.abandon(),
            (Some(session), false) => session.close(),
            (None, _) => {}
        }
    }

    fn stream<'scope, 'env>(
        &'scope mut self,
        scope: &'scope Scope<'scope, 'env>,
        rows: RowSet<'_>,
    ) -> RowStream<'scope> {
        let filter = match (rows, &self.segments) {
            (RowSet::Leaves(leaves), Some(segments)) => {
                format!("{} AND {}", self.window_filter, segments.leaves_filter(leaves))
            }
            _ => self.window_filter.clone(),
        };
        let query = self.plan.rows_query(&filter);
        RowStream::connect(scope, self.endpoint.clone(), query, StreamOptions::default())
    }
}

/// A MySQL or MariaDB source as a side of the comparison: it streams its window's ordered
/// `SELECT` on a session of its own, and never hashes.
struct MySqlSource {
    config: MySqlSideConfig,
    statement_timeout: Duration,
    query: MySqlRowQuery,
    window: [DateTime<Utc>; 2],
}

/// Why a MySQL or MariaDB source is always streamed.
const MYSQL_STREAMS: &str = "MySQL and MariaDB sources are streamed";

impl HashSide for MySqlSource {
    type Error = RowDiffError;

    fn overview(&mut self, _check_duplicates: bool) -> Result<Result<Option<Overview>, KeysNotUsable>, RowDiffError> {
        Err(RowDiffError::MySqlStreams)
    }

    fn level(&mut self, _splits: &[Split]) -> Result<Vec<ChildDigest>, RowDiffError> {
        Err(RowDiffError::MySqlStreams)
    }
}

impl CompareSide for MySqlSource {
    fn side(&self) -> Side {
        self.config.side
    }

    fn never_hashes(&self) -> Option<&str> {
        Some(MYSQL_STREAMS)
    }

    fn is_local(&self) -> bool {
        false
    }

    fn prepare(&mut self, _probe_link: bool) -> Result<HashFacts, RowDiffError> {
        Err(RowDiffError::MySqlStreams)
    }

    fn stream<'scope, 'env>(
        &'scope mut self,
        scope: &'scope Scope<'scope, 'env>,
        _rows: RowSet<'_>,
    ) -> RowStream<'scope> {
        let [start, end] = self.window;
        let (config, query) = (self.config.clone(), self.query.clone());
        RowStream::mysql(scope, config, self.statement_timeout, query, (start, end), StreamOptions::default())
    }
}

/// What `row_diff` says along the way: its log lines and the attempt's progress meter.
struct RowDiffHooks<'m> {
    progress: Option<StreamProgress<'m>>,
    /// A MySQL or MariaDB source (always streamed).
    mysql_source: bool,
    /// The strategy asked for.
    strategy: Strategy,
}

impl RowMeter for StreamProgress<'_> {
    #[inline]
    fn row(&mut self) {
        StreamProgress::row(self);
    }
}

impl<'m> Hooks for RowDiffHooks<'m> {
    type Stop = std::convert::Infallible;
    type Meter = StreamProgress<'m>;

    fn streaming(&mut self, strategy: &StrategyUsed) {
        match self.mysql_source {
            true if self.strategy != Strategy::Stream => tracing::info!(
                strategy = "stream",
                reason = "segment hashing needs PostgreSQL on both sides",
                "row_diff streams every row of the window"
            ),
            true => {}
            false => {
                tracing::info!(strategy = "stream", reason = %strategy.reason, "row_diff streams every row of the window")
            }
        }
    }

    fn hashing(&mut self, phase: Phase) {
        match phase {
            Phase::Overview => {
                if let Some(progress) = self.progress.as_mut() {
                    progress.hashing(true);
                }
                tracing::info!("row_diff hashes the window on both sides")
            }
            Phase::Level { level, splits } => {
                tracing::info!(level, segments = splits, "row_diff hashes the segments that differ")
            }
            Phase::Sketch { cells } => {
                tracing::info!(cells, "row_diff sketches the window on both sides")
            }
            Phase::Settle { positions } => {
                tracing::info!(positions, "row_diff proves the rest equal around the sketch's positions")
            }
        }
    }

    fn searched(&mut self, strategy: &StrategyUsed, found: Option<&Found>) {
        if let Some(progress) = self.progress.as_mut() {
            if let Some(found) = found {
                progress.proven(found.matched);
            }
            progress.hashing(false);
        }
        if let Some(found) = found {
            tracing::info!(
                strategy = "segments",
                reason = %strategy.reason,
                matched = found.matched,
                segments = found.segments,
                levels = found.levels,
                "row_diff hashed key segments"
            );
        }
    }

    fn source_meter(&mut self) -> Option<StreamProgress<'m>> {
        self.progress.take()
    }
}

/// How a scheduled `row_diff` window is divided into key ranges (see
/// [`datadiff_access::split`]): `parts` ranges (`0`: as many as `jobs`) compared on up to
/// `jobs` threads of the attempt, each with its own connections. One part (the default) is
/// one unit: the window compared as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowDiffSplit {
    /// Key ranges per window; `0`: as many as [`RowDiffSplit::jobs`].
    pub parts: usize,
    /// Threads working on one window's parts at once (at least 1).
    pub jobs: usize,
}

impl Default for RowDiffSplit {
    fn default() -> RowDiffSplit {
        RowDiffSplit { parts: 0, jobs: 1 }
    }
}

impl RowDiffSplit {
    /// The parts a window is divided into.
    pub fn part_count(self) -> usize {
        match self.parts {
            0 => self.jobs.max(1),
            parts => parts.min(split::MAX_PARTS),
        }
    }
}

/// What one part of a divided window says along the way: its rows and hashing on the
/// window's meter, its log lines.
struct PartHooks<'p> {
    part: usize,
    progress: Option<PartProgress<'p>>,
}

impl RowMeter for PartProgress<'_> {
    #[inline]
    fn row(&mut self) {
        PartProgress::row(self);
    }
}

impl<'p> Hooks for PartHooks<'p> {
    type Stop = std::convert::Infallible;
    type Meter = PartProgress<'p>;

    fn hashing(&mut self, phase: Phase) {
        if let (Phase::Overview, Some(progress)) = (phase, self.progress.as_mut()) {
            progress.hashing(true);
        }
    }

    fn searched(&mut self, strategy: &StrategyUsed, found: Option<&Found>) {
        if let Some(progress) = self.progress.as_mut() {
            if let Some(found) = found {
                progress.proven(found.matched);
            }
            progress.hashing(false);
        }
        if let Some(found) = found {
            tracing::debug!(
                part = self.part,
                reason = %strategy.reason,
                matched = found.matched,
                segments = found.segments,
                "row_diff hashed the key segments of a part"
            );
        }
    }

    fn source_meter(&mut self) -> Option<PartProgress<'p>> {
        self.progress.take()
    }
}

/// `<role> <step> failed: <primary message>` for a side session's failure text.
fn described(role: &str, error: &Error) -> String {
    match error {
        Error::Query { action, source, .. } => format!("{role} {action} failed: {}", one_line(source)),
        other => crate::error::chain(other),
    }
}

/// The outcome of a comparison summarised in `summary`: the counts, and the examples as
/// differences keyed by the logical `key_names` (one per key column, in key order: each
/// part of a composite key under its column's name).
pub(crate) fn outcome(
    key_names: &[String],
    summary: Summary<Key>,
    source_seconds: f64,
    target_seconds: f64,
    strategy: StrategyUsed,
) -> RowDiffOutcome {
    outcome_of(keyed(key_names, summary), source_seconds, target_seconds, strategy)
}

/// `summary` with each example's key as its evidence key: `{"<key column>": "<key>"}` by the
/// logical `key_names` (one per key column, in key order).
pub(crate) fn keyed(key_names: &[String], summary: Summary<Key>) -> Summary<Json> {
    let mut keyed = Summary::new(summary.examples.len(), summary.field_names().to_vec());
    (keyed.matched, keyed.missing, keyed.extra, keyed.changed) =
        (summary.matched, summary.missing, summary.extra, summary.changed);
    keyed.examples = summary
        .examples
        .into_iter()
        .map(|example| {
            let mut key = Map::new();
            match key_names {
                [name] => {
                    key.insert(name.clone(), Json::String(example.key.to_string()));
                }
                names => {
                    for (name, part) in names.iter().zip(example.key.parts()) {
                        key.insert(name.clone(), Json::String(part.to_string()));
                    }
                }
            }
            Example { kind: example.kind, key: Json::Object(key), fields: example.fields }
        })
        .collect();
    keyed
}

/// The outcome of a comparison summarised in `summary` (keys already evidence keys).
pub(crate) fn outcome_of(
    summary: Summary<Json>,
    source_seconds: f64,
    target_seconds: f64,
    strategy: StrategyUsed,
) -> RowDiffOutcome {
    let counts = RowDiffCounts::from_summary(&summary);
    tracing::info!(
        source_rows = counts.source_rows,
        target_rows = counts.target_rows,
        missing = counts.missing,
        extra = counts.extra,
        changed = counts.changed,
        source_seconds,
        target_seconds,
        "row_diff compared the window"
    );
    let differences = crate::divided::differences(&summary);
    RowDiffOutcome { counts, differences, source_seconds, target_seconds, strategy }
}

/// How long a stream may take to answer in full: the statement timeout (which the server
/// enforces on the whole `COPY`, transfer included) plus the sessions' grace.
fn answer_deadline(route: &Route) -> Duration {
    route.statement_timeout.max(Duration::from_secs(1)) + ANSWER_GRACE
}

/// The reason of streams stopped at their deadline, naming the sides still waiting.
fn no_answer(sides: &[Side], route: &Route) -> RowDiffError {
    let databases = match sides {
        [side] => format!("the {side} database"),
        _ => "the source and target databases".to_owned(),
    };
    let timeout = route.statement_timeout.max(Duration::from_secs(1)).as_secs();
    let grace = ANSWER_GRACE.as_secs();
    RowDiffError::NoAnswer { databases, waited: timeout + grace, timeout, grace }
}

/// What a completed `row_diff` found.
#[derive(Debug, Clone)]
pub(crate) struct RowDiffOutcome {
    /// The exact counts.
    pub(crate) counts: RowDiffCounts,
    /// The first differences, in key order.
    pub(crate) differences: Vec<Difference>,
    /// How long the source stream took to its last row.
    pub(crate) source_seconds: f64,
    /// How long the target stream took to its last row.
    pub(crate) target_seconds: f64,
    /// How the rows were read, and why.
    pub(crate) strategy: StrategyUsed,
}

impl RowDiffOutcome {
    /// The `row_diff` result.
    pub(crate) fn result(&self) -> CheckResult {
        CheckResult::row_diff(self.counts, Some(self.source_seconds), Some(self.target_seconds), Some(&self.strategy))
    }
}

/// The ERROR `row_diff` result carrying `reason`.
pub(crate) fn error_result(reason: &RowDiffError) -> CheckResult {
    CheckResult {
        check_type: ResultType::RowDiff,
        status: ResultStatus::Error,
        source_value: Json::Null,
        target_value: Json::Null,
        source_query_seconds: None,
        target_query_seconds: None,
        error: Some(reason.to_string()),
    }
}

/// Both sides' `row_diff` streaming `SELECT`s for `definition`, planned exactly as an attempt
/// plans them (from both catalogs, over `plan`'s resolved columns), with `$1` and `$2` for
/// the window bounds: source, target. For `doctor`, which asks each server to plan them. The
/// error is the `row_diff` result's one-line reason.
pub fn row_diff_select(
    definition: &CheckDefinition,
    plan: &AggregatePlan,
    source: &mut SideSession,
    target: &mut SideSession,
) -> Result<(String, String), RowDiffError> {
    let source_catalog = catalog(source, &definition.source_schema, &definition.source_table)?;
    let target_catalog = catalog(target, &definition.target_schema, &definition.target_table)?;
    let planned = RowDiffPlan::new(definition, plan, SourceCatalog::Postgres(&source_catalog), &target_catalog)?;
    let source = match &planned.source {
        SourcePlan::Postgres { side, .. } => side.parameterised_select(),
        SourcePlan::MySql(_) => return Err(RowDiffError::NotPostgres("source")),
    };
    Ok((source, planned.target.parameterised_select()))
}

/// The `pg_catalog` types of a side's table (the decoders need type OIDs and typmods, which
/// `information_schema` does not give), and whether the session is encrypted.
pub(crate) fn catalog(side: &mut SideSession, schema: &str, table: &str) -> Result<SideCatalog, RowDiffError> {
    let which = side.side();
    let table = TableName::new(schema, table);
    let read = side.with_client("catalog read", move |client| {
        let role = which.to_string();
        let columns = match stream::read_columns_with(client, &role, &table) {
            Ok(columns) => columns,
            // The information_schema read found the table: a table missing now is a race.
            Err(Error::TableNotFound { .. }) => Vec::new(),
            Err(Error::Query { source, .. }) => {
                return Err(RowDiffError::Catalog { side: which, reason: one_line(&source) });
            }
            Err(other) => return Err(RowDiffError::Catalog { side: which, reason: other.to_string() }),
        };
        let encrypted = client
            .query_one(
                "SELECT coalesce((SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()), false)",
                &[],
            )
            .and_then(|row| row.try_get::<_, bool>(0))
            .map_err(|error| RowDiffError::Catalog { side: which, reason: one_line(&error) })?;
        Ok(SideCatalog { columns, encrypted })
    });
    read?
}

/// A side's own streaming connection: the attempt session's settings, the same connect
/// deadline and statement timeout, and TLS exactly when the session is encrypted, as the
/// sessions negotiate it, with the side's TLS ([`datadiff_access::ClientTls`]: verification
/// and client certificate as configured). A server that declined TLS to the session declines it to the stream too, so an
/// unencrypted side streams without TLS.
pub(crate) fn endpoint(side: &SideConfig, route: &Route, encrypted: bool) -> Result<Endpoint, RowDiffError> {
    let tls = match encrypted {
        false => None,
        true => Some(
            side.tls
                .ssl_connector()
                .map_err(|error| RowDiffError::StreamTls { side: side.side, reason: error.to_string() })?,
        ),
    };
    Ok(Endpoint::new(side.side.to_string(), &side.config, tls)
        .with_connect_timeout(side.connect_timeout)
        .with_statement_timeout(route.statement_timeout))
}

/// The one-line reason of a failed stream: side and step, a server error's primary message
/// (a MySQL error's one line).
pub(crate) fn stream_failure(error: &Error, side: Side, route: &Route) -> RowDiffError {
    RowDiffError::Stream(match error {
        Error::MySql { message, .. } => message.clone(),
        Error::Query { role, action, source } => format!("{role} {action} failed: {}", one_line(source)),
        Error::Connect { role, source } => {
            format!("cannot connect to the {role} database {}: {}", address(side, route), one_line(source))
        }
        Error::StreamConnect { role, source } => {
            format!("cannot connect to the {role} database {}: {source}", address(side, route))
        }
        other => crate::error::chain(other),
    })
}

/// The address of a side as its errors name it (a MySQL source's own).
fn address(side: Side, route: &Route) -> String {
    match (side, &route.mysql_source) {
        (Side::Source, Some(mysql)) => mysql.address(),
        (Side::Source, None) => route.source.address.clone(),
        (Side::Target, _) => route.target.address.clone(),
    }
}

/// The column of a side's catalog that `name` names: exactly, else the only column whose name
/// matches it case-insensitively (as the definition's other names are resolved), else
/// [`missing`].
fn find_column(columns: &[ColumnType], table: &TableName, name: &str) -> Result<ColumnType, RowDiffError> {
    if let Some(column) = columns.iter().find(|column| column.name == name) {
        return Ok(column.clone());
    }
    let lowered = name.to_lowercase();
    match columns.iter().filter(|column| column.name.to_lowercase() == lowered).collect::<Vec<_>>().as_slice() {
        [only] => Ok((*only).clone()),
        _ => Err(missing(name, table)),
    }
}

/// `Column '<name>' does not exist in <schema>.<table>`, as the other checks say it.
pub(crate) fn missing(name: &str, table: &TableName) -> RowDiffError {
    RowDiffError::MissingColumn { column: name.to_owned(), table: table.clone() }
}

/// The target's configured name for the compare column whose source name is `logical`.
fn target_name<'a>(definition: &'a CheckDefinition, logical: &'a str) -> &'a str {
    definition
        .source_compare_columns
        .iter()
        .zip(&definition.target_compare_columns)
        .find(|(source, _)| source.as_str() == logical)
        .map_or(logical, |(_, target)| target.as_str())
}

/// A window bound as an SQL literal of the timestamp column's type: `timestamptz` in UTC
/// with its offset, or a naive column's UTC wall time. Microsecond precision, as PostgreSQL
/// stores; years before 1 written with `BC`, as PostgreSQL reads them.
pub(crate) fn timestamp_literal(instant: DateTime<Utc>, naive: bool) -> String {
    let year = instant.year();
    let (year, era) = if year >= 1 { (year, "") } else { (1 - year, " BC") };
    let rest = instant.format("%m-%d %H:%M:%S%.6f");
    if naive {
        format!("'{year:04}-{rest}{era}'::timestamp")
    } else {
        format!("'{year:04}-{rest}+00{era}'::timestamptz")
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn window_bounds_are_literals_of_the_column_type() {
        let noon = Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap();
        assert_eq!(timestamp_literal(noon, false), "'2026-07-22 12:00:00.000000+00'::timestamptz");
        assert_eq!(timestamp_literal(noon, true), "'2026-07-22 12:00:00.000000'::timestamp");
        let micros = noon + chrono::Duration::microseconds(999_999);
        assert_eq!(timestamp_literal(micros, true), "'2026-07-22 12:00:00.999999'::timestamp");
        // Year 0 is 1 BC in PostgreSQL's calendar.
        let bc = Utc.with_ymd_and_hms(0, 3, 1, 0, 0, 0).unwrap();
        assert_eq!(timestamp_literal(bc, false), "'0001-03-01 00:00:00.000000+00 BC'::timestamptz");
    }

    #[test]
    fn the_streaming_query_orders_text_keys_bytewise_and_leaves_out_soft_deletes() {
        let side = SidePlan {
            table: TableName::new("payments_public", "transfers"),
            encrypted: false,
            keys: vec![("code".into(), KeyDecoder::Text)],
            timestamp_column: "updatedAt".into(),
            naive_timestamp: true,
            columns: vec![("updatedAt".into(), Decoder::Timestamp), ("amount".into(), Decoder::Numeric)],
            soft_delete_column: Some("_sdc_deleted_at".into()),
        };
        assert_eq!(
            side.query(["%s", "%s"]).select_sql(),
            "SELECT \"code\", \"updatedAt\", \"amount\" FROM \"payments_public\".\"transfers\" \
             WHERE \"updatedAt\" >= %s AND \"updatedAt\" < %s AND \"_sdc_deleted_at\" IS NULL \
             ORDER BY \"code\" COLLATE \"C\""
        );
    }
}
