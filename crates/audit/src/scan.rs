//! The scan (step 6): both snapshots as the sides of the comparison pipeline
//! ([`datadiff_access::compare`]), and what the audit hears along the way — its log lines,
//! its progress events, its deadline watch and its row limit.
//!
//! The snapshot sessions both hash (with the segment strategy) and stream (binary `COPY` on
//! the same sessions), so everything the scan reads is read in the two snapshots.

use std::thread::Scope;

use datadiff_access::compare::{CompareSide, Found, HashFacts, Hooks, RowSet};
use datadiff_access::segment::{self, HashSide, KeysNotUsable, Phase, SegmentQuery, SideHashing};
use datadiff_access::stream::{Decoder, KeyDecoder, RowQuery, RowStream, StreamOptions, StreamStopper};
use datadiff_access::{Dsn, Error as AccessError, Session, TableName};
use datadiff_diff_core::Side;
use datadiff_diff_core::merge::{Key, Summary};
use datadiff_diff_core::segment::{ChildDigest, Overview, Segment, Split, StrategyUsed};
use datadiff_diff_core::sketch::{SketchCell, SketchShape};

use crate::refusal::Refusal;
use crate::watch::{BOTH, BusyGuard, Watch};
use crate::{AuditProgress, PROGRESS_EVERY};

/// One snapshot session as a side of the comparison.
pub(crate) struct SnapshotSide<'a> {
    session: &'a mut Session,
    side: Side,
    dsn: &'a Dsn,
    table: TableName,
    /// The key columns and their decoders, in key order.
    keys: Vec<(String, KeyDecoder)>,
    columns: Vec<(String, Decoder)>,
    /// The rows compared, when not all of the table's (the replica's live rows).
    live: Option<String>,
    /// The side's segment queries, when the rows can be hashed.
    segments: Option<SegmentQuery>,
}

/// What identifies a snapshot side's rows: its table, key and compared columns.
pub(crate) struct SideRows {
    pub(crate) table: TableName,
    pub(crate) keys: Vec<(String, KeyDecoder)>,
    pub(crate) columns: Vec<(String, Decoder)>,
    pub(crate) live: Option<String>,
}

impl<'a> SnapshotSide<'a> {
    /// `session` as `side`, connected from `dsn`, comparing `rows`, hashing them as
    /// `hashing` says when they can be hashed.
    pub(crate) fn new(
        session: &'a mut Session,
        side: Side,
        dsn: &'a Dsn,
        rows: SideRows,
        hashing: Option<&SideHashing>,
    ) -> SnapshotSide<'a> {
        let role = session.role().to_owned();
        let SideRows { table, keys, columns, live } = rows;
        let key_columns: Vec<String> = keys.iter().map(|(name, _)| name.clone()).collect();
        let segments = hashing.map(|hashing| {
            SegmentQuery::with_keys(role, &table, &key_columns, hashing.position, &hashing.fields, live.as_deref())
        });
        SnapshotSide { session, side, dsn, table, keys, columns, live, segments }
    }

    fn segments(&self) -> Result<&SegmentQuery, AccessError> {
        self.segments.as_ref().ok_or_else(|| AccessError::NotHashable { role: self.session.role().to_owned() })
    }
}

impl HashSide for SnapshotSide<'_> {
    type Error = AccessError;

    fn overview(&mut self, check_duplicates: bool) -> Result<Result<Option<Overview>, KeysNotUsable>, AccessError> {
        let query = self.segments()?.clone();
        query.overview(self.session.client(), check_duplicates)
    }

    fn level(&mut self, splits: &[Split]) -> Result<Vec<ChildDigest>, AccessError> {
        let query = self.segments()?.clone();
        query.level(self.session.client(), splits)
    }

    fn split_points(&mut self, span: Segment, count: u64) -> Result<Vec<i64>, AccessError> {
        let query = self.segments()?.clone();
        query.split_points(self.session.client(), span, count)
    }

    fn segment_query(&self) -> Option<&SegmentQuery> {
        self.segments.as_ref()
    }

    fn sketches(&self) -> bool {
        self.segments.is_some()
    }

    fn sketch(&mut self, shape: SketchShape) -> Result<Vec<SketchCell>, AccessError> {
        let query = self.segments()?.clone();
        query.sketch(self.session.client(), shape)
    }
}

impl CompareSide for SnapshotSide<'_> {
    fn side(&self) -> Side {
        self.side
    }

    fn is_local(&self) -> bool {
        segment::local_only(self.dsn.config())
    }

    fn prepare(&mut self, probe_link: bool) -> Result<HashFacts, AccessError> {
        let role = self.session.role().to_owned();
        let client = self.session.client();
        if !segment::server_supports_segments(client, &role)? {
            let why = format!("the {role} server is older than PostgreSQL 14 (no hash_record_extended)");
            return Ok(HashFacts { unsupported: Some(why), link: None, unique_key: false });
        }
        let link = match probe_link {
            true => Some(segment::link(client, self.dsn.config(), &role)?),
            false => None,
        };
        let unique_key = match self.keys.as_slice() {
            [(key, _)] => segment::has_unique_key(client, &role, &self.table, key)?,
            keys => {
                let columns: Vec<String> = keys.iter().map(|(name, _)| name.clone()).collect();
                segment::has_unique_key_columns(client, &role, &self.table, &columns)?
            }
        };
        Ok(HashFacts { unsupported: None, link, unique_key })
    }

    fn stream<'scope, 'env>(
        &'scope mut self,
        scope: &'scope Scope<'scope, 'env>,
        rows: RowSet<'_>,
    ) -> RowStream<'scope> {
        let filter = match (rows, &self.segments) {
            (RowSet::Leaves(leaves), Some(segments)) => {
                let leaves = segments.leaves_filter(leaves);
                Some(match &self.live {
                    Some(live) => format!("({live}) AND {leaves}"),
                    None => leaves,
                })
            }
            _ => self.live.clone(),
        };
        let query = RowQuery::for_table_keys(&self.table, self.keys.clone(), self.columns.clone(), filter.as_deref());
        RowStream::spawn(scope, self.session, query, StreamOptions::default())
    }
}

/// The audit's ears on the scan: its log lines, its progress, the deadline watch of the step
/// it waits on, and the row limit.
pub(crate) struct ScanHooks<'a> {
    pub(crate) watch: &'a Watch,
    pub(crate) progress: &'a mut dyn FnMut(AuditProgress),
    /// `--max-rows`, as given and as a count.
    pub(crate) max_rows: (i64, u64),
    busy: Option<BusyGuard<'a>>,
    merged: u64,
}

impl<'a> ScanHooks<'a> {
    pub(crate) fn new(watch: &'a Watch, progress: &'a mut dyn FnMut(AuditProgress), max_rows: i64) -> ScanHooks<'a> {
        let rows = u64::try_from(max_rows).unwrap_or(0);
        ScanHooks { watch, progress, max_rows: (max_rows, rows), busy: None, merged: 0 }
    }
}

impl Hooks for ScanHooks<'_> {
    type Stop = Refusal;
    type Meter = ();

    fn streaming(&mut self, strategy: &StrategyUsed) {
        self.busy = None;
        tracing::info!(strategy = "stream", reason = %strategy.reason, "the scan streams every row");
    }

    fn preparing(&mut self) {
        self.busy = Some(self.watch.busy("probing the links", &BOTH));
    }

    fn hashing(&mut self, phase: Phase) {
        let level = match phase {
            Phase::Overview => {
                self.busy = None;
                self.busy = Some(self.watch.busy("hashing segments", &BOTH));
                0
            }
            Phase::Level { level, .. } => level,
            Phase::Sketch { .. } => 1,
            Phase::Settle { positions } => {
                (self.progress)(AuditProgress::Settling { positions: positions as u64 });
                return;
            }
        };
        (self.progress)(AuditProgress::Hashing { level });
    }

    fn searched(&mut self, strategy: &StrategyUsed, found: Option<&Found>) {
        self.busy = None;
        if let Some(found) = found {
            tracing::info!(
                strategy = "segments",
                reason = %strategy.reason,
                matched = found.matched,
                segments = found.segments,
                levels = found.levels,
                "hashed key segments"
            );
        }
    }

    fn streams_started(&mut self, [source, replica]: &[StreamStopper; 2]) {
        self.busy = None;
        self.busy = Some(self.watch.scanning(source.clone(), replica.clone()));
    }

    fn recorded(&mut self, summary: &Summary<Key>) -> Result<(), Refusal> {
        within_row_limit(summary, self.max_rows)?;
        self.merged += 1;
        if self.merged.is_multiple_of(PROGRESS_EVERY) {
            (self.progress)(AuditProgress::Scanned {
                source_rows: summary.source_rows(),
                replica_rows: summary.target_rows(),
            });
        }
        Ok(())
    }

    fn streams_ended(&mut self) {
        self.busy = None;
    }
}

/// Refuses once either side's merged rows pass the audit's `max_rows` (`(as given, as u64)`),
/// naming the side.
pub(crate) fn within_row_limit(summary: &Summary<Key>, (limit, max_rows): (i64, u64)) -> Result<(), Refusal> {
    for (role, rows) in [("source", summary.source_rows()), ("replica", summary.target_rows())] {
        if rows > max_rows {
            return Err(Refusal::RowLimitDuringScan { role: role.to_owned(), max_rows: limit });
        }
    }
    Ok(())
}
