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
//!    without compare columns, a missing column, a key that is not integer, uuid or text on
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
//!    attempt's `datadiff_run_differences` rows: the key as `{"<key column>": "<key>"}` and,
//!    for a changed row, the names of the differing columns. Never a value.
//!
//! A duplicate key on either side, rows out of key order, a NULL key or a stream failure
//! (statement timeout, lost connection) make the result ERROR with one line naming the
//! side and the key where there is one; a server error contributes its primary message only
//! (its DETAIL can quote row values).
//!
//! # Decisions where the sources are silent
//!
//! * **Evidence keys** use the source's configured key name, as results use logical names.
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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, Utc};
use datadiff_backend_store::Difference;
use datadiff_diff_core::{
    Side,
    attempt::{CheckResult, ResultStatus, ResultType, RowDiffCounts},
    definition::CheckDefinition,
    merge::{Key, MergeError, Summary, merge},
    plan::{AggregatePlan, ColumnPair, quoted_ident},
};
use serde_json::{Map, Value as Json};

use crate::connections::Route;
use crate::progress::StreamProgress;
use datadiff_access::Error;
use datadiff_access::SideConfig;
use datadiff_access::TableName;
use datadiff_access::segment::{self, Position, SegmentOutcome, SegmentQuery};
use datadiff_access::stream::{
    self, ColumnType, Decoder, Endpoint, KeyDecoder, RowQuery, RowStream, StreamOptions, StreamStopper,
};
use datadiff_access::{ANSWER_GRACE, SideSession, one_line};
use datadiff_diff_core::segment::{AUTO_STREAM_ROWS, Link, SearchSettings, Strategy, StrategyUsed};

/// How often the watcher looks for an interruption while the streams run.
const INTERRUPT_POLL: Duration = Duration::from_millis(50);

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
    key_column: String,
    key: KeyDecoder,
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
        RowQuery::for_table(&self.table, &self.key_column, self.key, self.columns.clone(), Some(&self.filter(bounds)))
    }

    /// The window's filter over `[start, end)`, bounds written as literals of the column's type.
    fn window_filter(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> String {
        self.filter([&timestamp_literal(start, self.naive_timestamp), &timestamp_literal(end, self.naive_timestamp)])
    }

    /// The query over `[start, end)`, bounds written as literals of the column's type.
    fn window_query(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> RowQuery {
        let start = timestamp_literal(start, self.naive_timestamp);
        let end = timestamp_literal(end, self.naive_timestamp);
        self.query([&start, &end])
    }
}

/// What `row_diff` compares in one attempt: both sides' streaming queries and the names its
/// evidence uses.
#[derive(Debug, Clone)]
pub(crate) struct RowDiffPlan {
    source: SidePlan,
    target: SidePlan,
    /// The logical key name (the evidence's JSON key).
    key_name: String,
    /// The logical names of the compared fields, in stream order.
    field_names: Vec<String>,
    /// How the rows are read (see [`datadiff_access::segment`]).
    strategy: Strategy,
    /// Each side's segment hash fields of the compared columns, or why the pairs cannot be
    /// hashed ([`segment::hash_pair`]).
    hashes: Result<(Vec<String>, Vec<String>), String>,
}

impl RowDiffPlan {
    /// Plans `row_diff` for `definition` from the attempt's aggregate plan (resolved columns,
    /// the soft-delete column) and both tables' catalog types. The error is the `row_diff`
    /// result's one-line reason.
    pub(crate) fn new(
        definition: &CheckDefinition,
        plan: &AggregatePlan,
        source_catalog: &SideCatalog,
        target_catalog: &SideCatalog,
    ) -> Result<RowDiffPlan, String> {
        let (source_types, target_types) = (&source_catalog.columns, &target_catalog.columns);
        let columns = plan.columns();
        let source_table = TableName::new(&definition.source_schema, &definition.source_table);
        let target_table = TableName::new(&definition.target_schema, &definition.target_table);
        if columns.compare_pairs().is_empty() {
            return Err(format!("row_diff requires at least one compare_columns entry for {source_table}"));
        }
        let catalog = |types: &[ColumnType], table: &TableName, name: &str| {
            types.iter().find(|column| column.name == name).cloned().ok_or_else(|| missing(name, table))
        };
        let resolve = |pair: &ColumnPair| -> Result<(ColumnType, ColumnType), String> {
            let source = pair.source.as_ref().ok_or_else(|| missing(&pair.logical_name, &source_table))?;
            let target = pair
                .target
                .as_ref()
                .ok_or_else(|| missing(target_name(definition, &pair.logical_name), &target_table))?;
            Ok((
                catalog(source_types, &source_table, &source.name)?,
                catalog(target_types, &target_table, &target.name)?,
            ))
        };
        let pairs = columns.pairs();
        let empty_string_as_null =
            definition.extensions.row_diff.is_some_and(|settings| settings.empty_string_as_null());
        let coercions = stream::Coercions::NONE.empty_string_as_null(empty_string_as_null);
        let (source_key, target_key) = resolve(&pairs[0])?;
        let (source_key_decoder, target_key_decoder) =
            stream::plan_key(&source_key, &target_key, "target").map_err(|error| prefixed(&error))?;
        let mut source_columns = Vec::with_capacity(pairs.len() - 1);
        let mut target_columns = Vec::with_capacity(pairs.len() - 1);
        let mut field_names = Vec::with_capacity(pairs.len() - 1);
        let mut hashes = Ok((Vec::new(), Vec::new()));
        for pair in &pairs[1..] {
            let (source, target) = resolve(pair)?;
            let (source_decoder, target_decoder) =
                stream::plan_pair_with(&source, &target, "target", coercions).map_err(|error| prefixed(&error))?;
            if let Ok((source_fields, target_fields)) = &mut hashes {
                match segment::hash_pair((&source, source_decoder), (&target, target_decoder)) {
                    Some((source_field, target_field)) => {
                        source_fields.push(source_field);
                        target_fields.push(target_field);
                    }
                    None => {
                        hashes =
                            Err(format!("column {} is compared across types in a way SQL cannot hash", source.name))
                    }
                }
            }
            source_columns.push((source.name, source_decoder));
            target_columns.push((target.name, target_decoder));
            field_names.push(pair.logical_name.clone());
        }
        Ok(RowDiffPlan {
            source: SidePlan {
                table: source_table,
                encrypted: source_catalog.encrypted,
                key_column: source_key.name,
                key: source_key_decoder,
                timestamp_column: columns.source_timestamp().name.clone(),
                naive_timestamp: columns.source_timestamp().is_naive_timestamp(),
                columns: source_columns,
                soft_delete_column: None,
            },
            target: SidePlan {
                table: target_table,
                encrypted: target_catalog.encrypted,
                key_column: target_key.name,
                key: target_key_decoder,
                timestamp_column: columns.target_timestamp().name.clone(),
                naive_timestamp: columns.target_timestamp().is_naive_timestamp(),
                columns: target_columns,
                soft_delete_column: plan.soft_delete_column().map(str::to_owned),
            },
            key_name: pairs[0].logical_name.clone(),
            field_names,
            hashes,
            strategy: definition.extensions.row_diff.map(|settings| settings.strategy()).unwrap_or_default(),
        })
    }

    /// This plan reading its rows with `strategy` instead of the definition's.
    pub(crate) fn with_strategy(self, strategy: Strategy) -> RowDiffPlan {
        RowDiffPlan { strategy, ..self }
    }

    /// The text the source preflight fingerprints when `row_diff` is the only data check:
    /// the source streaming `SELECT` with `%s` for the window bounds.
    pub(crate) fn fingerprint_sql(&self) -> String {
        self.source.query(["%s", "%s"]).select_sql().to_owned()
    }

    /// A side's streaming `SELECT` with `$1` and `$2` for the window bounds (for a server
    /// to plan it, see [`row_diff_select`]).
    fn parameterised_select(&self, side: Side) -> String {
        let plan = match side {
            Side::Source => &self.source,
            Side::Target => &self.target,
        };
        plan.query(["$1", "$2"]).select_sql().to_owned()
    }

    /// The source streaming `SELECT` over `[start, end)` (for its row estimate).
    pub(crate) fn source_select_sql(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> String {
        self.source.window_query(start, end).select_sql().to_owned()
    }

    /// Both streaming queries over `[start, end)`: source, target.
    fn queries(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> (RowQuery, RowQuery) {
        (self.source.window_query(start, end), self.target.window_query(start, end))
    }

    /// Compares both sides of the window `[start, end)`: with the segment strategy, hashes
    /// first (see [`RowDiffPlan::segments`]), then streams what is left through the merge.
    /// A watcher thread asks `interrupted` every [`INTERRUPT_POLL`] and stops both streams
    /// when it says so (a stream may be waiting for its server, not for the merge).
    /// `counted_rows` (the source window's exact count, when the attempt has one) lets `auto`
    /// stream small windows outright; an estimate never does (a stale one would make `auto`
    /// choose differently from run to run).
    pub(crate) fn run(
        &self,
        route: &Route,
        [start, end]: [DateTime<Utc>; 2],
        max_examples: usize,
        counted_rows: Option<u64>,
        interrupted: &(dyn Fn() -> bool + Sync),
        progress: Option<StreamProgress<'_>>,
    ) -> Result<RowDiffOutcome, String> {
        let source_endpoint = endpoint(&route.source, route, self.source.encrypted)?;
        let target_endpoint = endpoint(&route.target, route, self.target.encrypted)?;
        let mut summary: Summary<Key> = Summary::new(max_examples, self.field_names.clone());
        let hashing = Instant::now();
        let mut progress = progress;
        let (scan, strategy) = self.segments(route, [start, end], counted_rows, interrupted, &mut progress)?;
        let (source_query, target_query) = match scan {
            Scan::Everything => self.queries(start, end),
            Scan::Nothing { matched } => {
                summary.matched = matched;
                let seconds = hashing.elapsed().as_secs_f64();
                return Ok(self.outcome(summary, seconds, seconds, strategy));
            }
            Scan::Leaves { matched, source_filter, target_filter } => {
                summary.matched = matched;
                let source = RowQuery::for_table(
                    &self.source.table,
                    &self.source.key_column,
                    self.source.key,
                    self.source.columns.clone(),
                    Some(&source_filter),
                );
                let target = RowQuery::for_table(
                    &self.target.table,
                    &self.target.key_column,
                    self.target.key,
                    self.target.columns.clone(),
                    Some(&target_filter),
                );
                (source, target)
            }
        };
        let hashed = hashing.elapsed();
        let (source_time, target_time) = merge_streams(
            route,
            |scope| {
                (
                    RowStream::connect(scope, source_endpoint, source_query, StreamOptions::default()),
                    RowStream::connect(scope, target_endpoint, target_query, StreamOptions::default()),
                )
            },
            progress,
            &mut summary,
            interrupted,
            &|error| self.merge_failure(error, route),
        )?;
        // Durations added, then converted once: seconds with at most nine decimals, as stored.
        Ok(self.outcome(summary, (hashed + source_time).as_secs_f64(), (hashed + target_time).as_secs_f64(), strategy))
    }

    /// The outcome of a comparison summarised in `summary`.
    fn outcome(
        &self,
        summary: Summary<Key>,
        source_seconds: f64,
        target_seconds: f64,
        strategy: StrategyUsed,
    ) -> RowDiffOutcome {
        outcome(&self.key_name, summary, source_seconds, target_seconds, strategy)
    }

    /// Both sides' segment queries over their filters, when the key has a position and every
    /// column pair a hash expression ([`segment::hash_pair`]); otherwise why not.
    fn segment_queries(
        &self,
        source_filter: &str,
        target_filter: &str,
    ) -> Result<(SegmentQuery, SegmentQuery), String> {
        let (Some(source_position), Some(target_position)) =
            (Position::of(self.source.key), Position::of(self.target.key))
        else {
            return Err(format!(
                "the key {} has no integer position (only integer and uuid keys are segmented)",
                self.source.key_column
            ));
        };
        let (source_fields, target_fields) = self.hashes.as_ref().map_err(String::clone)?;
        let query = |role, side: &SidePlan, position, fields: &[String], filter| {
            SegmentQuery::new(role, &side.table, &side.key_column, position, fields, Some(filter))
        };
        Ok((
            query("source", &self.source, source_position, source_fields, source_filter),
            query("target", &self.target, target_position, target_fields, target_filter),
        ))
    }

    /// Chooses the strategy and, for segments, hashes both sides of `[start, end)` by key
    /// segment on sessions of their own (see [`datadiff_access::segment`]): what is left to
    /// stream, and the choice with its reason (logged at info, `-v`, and stored with the
    /// result). A table the hashes cannot decide is streamed whole, and the reason says why.
    fn segments(
        &self,
        route: &Route,
        [start, end]: [DateTime<Utc>; 2],
        counted_rows: Option<u64>,
        interrupted: &(dyn Fn() -> bool + Sync),
        progress: &mut Option<StreamProgress<'_>>,
    ) -> Result<(Scan, StrategyUsed), String> {
        let stream_because = |why: String| {
            let used = StrategyUsed::stream(why);
            tracing::info!(strategy = "stream", reason = %used.reason, "row_diff streams every row of the window");
            Ok((Scan::Everything, used))
        };
        if self.strategy == Strategy::Stream {
            return stream_because("stream requested".to_owned());
        }
        if let Some(rows) = counted_rows.filter(|rows| self.strategy == Strategy::Auto && *rows <= AUTO_STREAM_ROWS) {
            return stream_because(format!("auto: {rows} rows (at most {AUTO_STREAM_ROWS} stream outright)"));
        }
        let (source_filter, target_filter) =
            (self.source.window_filter(start, end), self.target.window_filter(start, end));
        let (source_query, target_query) = match self.segment_queries(&source_filter, &target_filter) {
            Ok(queries) => queries,
            Err(why) => return stream_because(why),
        };
        // Servers on this machine stream: no sessions to open for the hashes.
        if self.strategy == Strategy::Auto
            && segment::local_only(&route.source.config)
            && segment::local_only(&route.target.config)
        {
            return stream_because(StrategyUsed::auto(Link::Local, Link::Local).reason);
        }
        let (source, target) = segment::concurrently(
            || SideSession::open(&route.source, route.statement_timeout),
            || SideSession::open(&route.target, route.statement_timeout),
        );
        let (mut source, mut target) = (source?, target?);
        let facts =
            |side: &mut SideSession, config: &SideConfig, query: &SegmentQuery, table: &TableName, key: &str| {
                let (config, table, key, role) =
                    (config.config.clone(), table.clone(), key.to_owned(), side.side().to_string());
                let auto = self.strategy == Strategy::Auto;
                side.with_client(
                    "segment preparation",
                    move |client| -> Result<(bool, Option<Link>, bool), datadiff_access::Error> {
                        let supported = segment::server_supports_segments(client, &role)?;
                        let link = if auto && supported { Some(segment::link(client, &config, &role)?) } else { None };
                        let unique = segment::has_unique_key(client, &role, &table, &key)?;
                        Ok((supported, link, unique))
                    },
                )?
                .map_err(|error| format!("row_diff: {}", crate::error::chain(&error)))
                .map(|facts| (facts, query.clone()))
            };
        let (source_facts, target_facts) = segment::concurrently(
            || facts(&mut source, &route.source, &source_query, &self.source.table, &self.source.key_column),
            || facts(&mut target, &route.target, &target_query, &self.target.table, &self.target.key_column),
        );
        let (((source_supported, source_link, source_unique), _), ((target_supported, target_link, target_unique), _)) =
            (source_facts?, target_facts?);
        // Given up without a wait when either did not answer (the attempt's one deadline).
        let close = SideSession::close_both;
        if !(source_supported && target_supported) {
            close(source, target);
            return stream_because("a server is older than PostgreSQL 14 (no hash_record_extended)".to_owned());
        }
        let mut used = StrategyUsed::segments("segments requested");
        if let (Some(source_link), Some(target_link)) = (source_link, target_link) {
            used = StrategyUsed::auto(source_link, target_link);
            if used.strategy == Strategy::Stream {
                close(source, target);
                return stream_because(used.reason);
            }
        }
        if interrupted() {
            close(source, target);
            return Err("row_diff: interrupted".to_owned());
        }
        let mut phase = |phase: segment::Phase| match phase {
            segment::Phase::Overview => tracing::info!("row_diff hashes the window on both sides"),
            segment::Phase::Level { level, splits } => {
                tracing::info!(level, segments = splits, "row_diff hashes the segments that differ")
            }
        };
        if let Some(progress) = progress.as_mut() {
            progress.hashing(true);
        }
        // An interruption cancels the hashing statements (as it stops streams).
        let cancellers = [source.canceller(), target.canceller()];
        let (done, finished) = crossbeam_channel::bounded::<()>(0);
        let outcome = std::thread::scope(|scope| {
            scope.spawn(move || {
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = finished.recv_timeout(INTERRUPT_POLL) {
                    if interrupted() {
                        cancellers.iter().for_each(|canceller| canceller.cancel());
                        return;
                    }
                }
            });
            let outcome = segment::search(
                (&mut source, &source_query, !source_unique),
                (&mut target, &target_query, !target_unique),
                SearchSettings::default(),
                &mut phase,
            );
            drop(done);
            outcome
        });
        let outcome = match outcome {
            Err(_) if interrupted() => Err("row_diff: interrupted".to_owned()),
            other => other.map_err(|reason| format!("row_diff: {reason}")),
        };
        close(source, target);
        if let (Some(progress), Ok(SegmentOutcome::Searched { matched, .. })) = (progress.as_mut(), &outcome) {
            progress.proven(*matched);
        }
        if let Some(progress) = progress.as_mut() {
            progress.hashing(false);
        }
        Ok(match outcome? {
            SegmentOutcome::StreamAll(why) => return stream_because(format!("the hashes cannot decide: {why}")),
            SegmentOutcome::Searched { matched, leaves, levels } => {
                tracing::info!(
                    strategy = "segments",
                    reason = %used.reason,
                    matched,
                    segments = leaves.len(),
                    levels,
                    "row_diff hashed key segments"
                );
                if leaves.is_empty() {
                    (Scan::Nothing { matched }, used)
                } else {
                    let scan = Scan::Leaves {
                        matched,
                        source_filter: format!("{source_filter} AND {}", source_query.leaves_filter(&leaves)),
                        target_filter: format!("{target_filter} AND {}", target_query.leaves_filter(&leaves)),
                    };
                    (scan, used)
                }
            }
        })
    }

    /// The one-line reason of a merge that stopped.
    fn merge_failure(&self, error: MergeError<Box<Error>>, route: &Route) -> String {
        let table = |side: Side| match side {
            Side::Source => &self.source.table,
            Side::Target => &self.target.table,
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
}

/// Streams both sides through the merge into `summary`: `open` starts the two streams
/// (source, target) on the scope's threads, the merge runs on this one, and a watcher thread
/// stops both streams at their client-side deadline ([`answer_deadline`]: the reason then
/// names the sides that had not answered in full) or when `interrupted` says so. Returns each
/// side's time to its last row. The source's rows count on `progress`.
pub(crate) fn merge_streams<Open>(
    route: &Route,
    open: Open,
    progress: Option<StreamProgress<'_>>,
    summary: &mut Summary<Key>,
    interrupted: &(dyn Fn() -> bool + Sync),
    merge_failure: &dyn Fn(MergeError<Box<Error>>) -> String,
) -> Result<(Duration, Duration), String>
where
    Open: for<'scope, 'env> FnOnce(&'scope std::thread::Scope<'scope, 'env>) -> (RowStream<'scope>, RowStream<'scope>),
{
    let started = Instant::now();
    let expired = std::sync::OnceLock::<Vec<Side>>::new();
    std::thread::scope(|scope| -> Result<(Duration, Duration), String> {
        let (source_rows, target_rows) = open(scope);
        let mut source = Timed::new(source_rows, progress);
        let mut target = Timed::new(target_rows, None);
        let stoppers = [source.rows.stopper(), target.rows.stopper()];
        let awaited = [Arc::clone(&source.awaited), Arc::clone(&target.awaited)];
        let (done, finished) = crossbeam_channel::bounded::<()>(0);
        let deadline = started + answer_deadline(route);
        let expired_sides = &expired;
        scope.spawn(move || {
            // Ends when the merge is over (the sender is dropped) or after stopping both.
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = finished.recv_timeout(INTERRUPT_POLL) {
                let late = Instant::now() >= deadline;
                if late {
                    // The side that did not answer is the one the merge waits for; the other
                    // may only be held back by the merge (its reader blocked on a full queue).
                    let reading = |(_, stopper): &(Side, &StreamStopper)| !stopper.reader_completed();
                    let sides = [Side::Source, Side::Target];
                    let mut waiting: Vec<Side> = sides
                        .into_iter()
                        .zip(&stoppers)
                        .zip(&awaited)
                        .filter(|(pair, awaited)| reading(pair) && awaited.load(Ordering::Acquire))
                        .map(|((side, _), _)| side)
                        .collect();
                    if waiting.is_empty() {
                        waiting = sides.into_iter().zip(&stoppers).filter(reading).map(|(side, _)| side).collect();
                    }
                    let _ = expired_sides.set(waiting);
                }
                if late || interrupted() {
                    stoppers.iter().for_each(StreamStopper::stop);
                    return;
                }
            }
        });
        for change in merge(source.by_ref(), target.by_ref()) {
            let change = change.map_err(|error| match expired.get() {
                Some(sides) => no_answer(sides, route),
                None if interrupted() => "row_diff: interrupted".to_owned(),
                None => merge_failure(error),
            })?;
            summary.record(&change);
        }
        drop(done);
        let elapsed = |timed: &Timed<'_, '_>| timed.ended.unwrap_or(started).duration_since(started);
        Ok((elapsed(&source), elapsed(&target)))
    })
}

/// The outcome of a comparison summarised in `summary`: the counts, and the examples as
/// differences keyed by the logical `key_name`.
pub(crate) fn outcome(
    key_name: &str,
    summary: Summary<Key>,
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
    let differences = summary
        .examples
        .into_iter()
        .map(|example| {
            let mut key = Map::new();
            key.insert(key_name.to_owned(), Json::String(example.key.to_string()));
            Difference {
                check_type: ResultType::RowDiff,
                kind: example.kind,
                key: Json::Object(key),
                fields: example.fields,
            }
        })
        .collect();
    RowDiffOutcome { counts, differences, source_seconds, target_seconds, strategy }
}

/// What `row_diff` streams after the segment strategy had its say.
enum Scan {
    /// Every row of the window.
    Everything,
    /// Nothing: the hashes proved all `matched` rows equal.
    Nothing { matched: u64 },
    /// Only the rows the filters keep; `matched` others were proven equal.
    Leaves { matched: u64, source_filter: String, target_filter: String },
}

/// How long a stream may take to answer in full: the statement timeout (which the server
/// enforces on the whole `COPY`, transfer included) plus the sessions' grace.
fn answer_deadline(route: &Route) -> Duration {
    route.statement_timeout.max(Duration::from_secs(1)) + ANSWER_GRACE
}

/// The reason of streams stopped at their deadline, naming the sides still waiting.
fn no_answer(sides: &[Side], route: &Route) -> String {
    let databases = match sides {
        [side] => format!("the {side} database"),
        _ => "the source and target databases".to_owned(),
    };
    let timeout = route.statement_timeout.max(Duration::from_secs(1)).as_secs();
    format!(
        "row_diff: no answer from {databases} within {} s (statement_timeout {timeout} s + {} s grace); \
         a cancel request was sent and the connection abandoned",
        timeout + ANSWER_GRACE.as_secs(),
        ANSWER_GRACE.as_secs(),
    )
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
pub(crate) fn error_result(reason: String) -> CheckResult {
    CheckResult {
        check_type: ResultType::RowDiff,
        status: ResultStatus::Error,
        source_value: Json::Null,
        target_value: Json::Null,
        source_query_seconds: None,
        target_query_seconds: None,
        error: Some(reason),
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
) -> Result<(String, String), String> {
    let source_catalog = catalog(source, &definition.source_schema, &definition.source_table)?;
    let target_catalog = catalog(target, &definition.target_schema, &definition.target_table)?;
    let planned = RowDiffPlan::new(definition, plan, &source_catalog, &target_catalog)?;
    Ok((planned.parameterised_select(Side::Source), planned.parameterised_select(Side::Target)))
}

/// The `pg_catalog` types of a side's table (the decoders need type OIDs and typmods, which
/// `information_schema` does not give), and whether the session is encrypted.
pub(crate) fn catalog(side: &mut SideSession, schema: &str, table: &str) -> Result<SideCatalog, String> {
    let which = side.side();
    let table = TableName::new(schema, table);
    let read = side.with_client("catalog read", move |client| {
        let role = which.to_string();
        let columns = match stream::read_columns_with(client, &role, &table) {
            Ok(columns) => columns,
            // The information_schema read found the table: a table missing now is a race.
            Err(Error::TableNotFound { .. }) => Vec::new(),
            Err(Error::Query { source, .. }) => return Err(format!("{role} catalog read failed: {}", one_line(&source))),
            Err(other) => return Err(format!("{role} catalog read failed: {other}")),
        };
        let encrypted = client
            .query_one(
                "SELECT coalesce((SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()), false)",
                &[],
            )
            .and_then(|row| row.try_get::<_, bool>(0))
            .map_err(|error| format!("{role} catalog read failed: {}", one_line(&error)))?;
        Ok(SideCatalog { columns, encrypted })
    });
    read?
}

/// A row stream that notes when it ended and counts its rows on a progress meter when given
/// one, its rare error boxed: the merge moves every row through a few layers, and a `Result`
/// as small as the row saves about a tenth of its time.
struct Timed<'scope, 'meter> {
    rows: RowStream<'scope>,
    ended: Option<Instant>,
    progress: Option<StreamProgress<'meter>>,
    /// Set while the merge waits for this side's next row (read by the deadline watcher).
    awaited: Arc<AtomicBool>,
}

impl<'scope, 'meter> Timed<'scope, 'meter> {
    fn new(rows: RowStream<'scope>, progress: Option<StreamProgress<'meter>>) -> Timed<'scope, 'meter> {
        Timed { rows, ended: None, progress, awaited: Arc::new(AtomicBool::new(false)) }
    }
}

impl Iterator for Timed<'_, '_> {
    type Item = Result<stream::EncodedRow, Box<Error>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.awaited.store(true, Ordering::Release);
        let next = self.rows.next_boxed();
        self.awaited.store(false, Ordering::Release);
        match (&next, &mut self.progress) {
            (Some(_), Some(progress)) => progress.row(),
            (None, progress) => {
                if self.ended.is_none() {
                    self.ended = Some(Instant::now());
                }
                // The stream is over: its count is final.
                *progress = None;
            }
            _ => {}
        }
        next
    }
}

/// A side's own streaming connection: the attempt session's settings, the same connect
/// deadline and statement timeout, and TLS exactly when the session is encrypted, as the
/// sessions negotiate it, with the side's TLS ([`datadiff_access::ClientTls`]: verification
/// and client certificate as configured). A server that declined TLS to the session declines it to the stream too, so an
/// unencrypted side streams without TLS.
pub(crate) fn endpoint(side: &SideConfig, route: &Route, encrypted: bool) -> Result<Endpoint, String> {
    let tls = match encrypted {
        false => None,
        true => Some(
            side.tls
                .ssl_connector()
                .map_err(|error| format!("row_diff: TLS setup for the {} stream failed: {error}", side.side))?,
        ),
    };
    Ok(Endpoint::new(side.side.to_string(), &side.config, tls)
        .with_connect_timeout(side.connect_timeout)
        .with_statement_timeout(route.statement_timeout))
}

/// The one-line reason of a failed stream: side and step, a server error's primary message
/// (a MySQL error's one line).
pub(crate) fn stream_failure(error: &Error, side: Side, route: &Route) -> String {
    match error {
        Error::MySql { message, .. } => format!("row_diff: {message}"),
        Error::Query { role, action, source } => format!("row_diff: {role} {action} failed: {}", one_line(source)),
        Error::Connect { role, source } => {
            format!("row_diff: cannot connect to the {role} database {}: {}", address(side, route), one_line(source))
        }
        Error::StreamConnect { role, source } => {
            format!("row_diff: cannot connect to the {role} database {}: {source}", address(side, route))
        }
        other => prefixed(other),
    }
}

/// The address of a side as its errors name it (a MySQL source's own).
fn address(side: Side, route: &Route) -> String {
    match (side, &route.mysql_source) {
        (Side::Source, Some(mysql)) => mysql.address(),
        (Side::Source, None) => route.source.address.clone(),
        (Side::Target, _) => route.target.address.clone(),
    }
}

pub(crate) fn prefixed(error: &dyn std::error::Error) -> String {
    format!("row_diff: {}", crate::error::chain(error))
}

/// `Column '<name>' does not exist in <schema>.<table>`, as the other checks say it.
pub(crate) fn missing(name: &str, table: &TableName) -> String {
    format!("Column '{name}' does not exist in {table}")
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
            key_column: "code".into(),
            key: KeyDecoder::Text,
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
