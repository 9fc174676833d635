//! The scan in parts (`--jobs N`, [`crate::AuditOptions::jobs`]): the table divided into
//! consecutive key sub-ranges ([`datadiff_access::split`]), each compared on its own by one of
//! N pairs of sessions, and the parts' summaries combined in key order into the summary one
//! scan gives — the same counts, the same first examples, the same report.
//!
//! Every part reads the audit's two snapshots: each extra session imports its side's
//! snapshot (`pg_export_snapshot()` on the audit's own session, `SET TRANSACTION SNAPSHOT`
//! on the part's), so the parts together read exactly the rows one scan would. The part
//! sessions are opened when the scan starts and closed when it ends; a part that fails (a
//! duplicate key, a lost connection) fails the audit with the failure of the first failing
//! part in key order, as one scan would have met it first.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use datadiff_access::compare::{CompareError, Compared, Comparison, Found, Hooks, compare};
use datadiff_access::segment::SideHashing;
use datadiff_access::split::{self, Part, SplitKey};
use datadiff_access::{ANSWER_GRACE, Dsn, Error as AccessError, Session, SessionSettings};
use datadiff_diff_core::Side;
use datadiff_diff_core::merge::{Key, Summary};
use datadiff_diff_core::segment::StrategyUsed;

use crate::refusal::Refusal;
use crate::scan::{SideRows, SnapshotSide, within_row_limit};
use crate::{AuditProgress, PROGRESS_EVERY};

/// How often the scan's thread reports the parts' progress.
const REPORT_EVERY: Duration = Duration::from_millis(200);

/// One side of the scan in parts: its DSN, its rows, how it hashes them and the first key
/// column the parts divide.
pub(crate) struct PartSide<'a> {
    pub(crate) dsn: &'a Dsn,
    pub(crate) rows: SideRows,
    pub(crate) hashing: Option<&'a SideHashing>,
    pub(crate) snapshot: String,
}

/// What a part scan needs besides its sides.
pub(crate) struct PartScan<'a> {
    pub(crate) settings: SessionSettings,
    pub(crate) comparison: Comparison<'a>,
    pub(crate) split: SplitKey,
    pub(crate) parts: Vec<Part>,
    pub(crate) jobs: usize,
    pub(crate) max_rows: i64,
}

/// Exports the snapshot of `session`'s open transaction, for the part sessions to import.
pub(crate) fn export_snapshot(session: &mut Session) -> Result<String, AccessError> {
    let role = session.role().to_owned();
    let id: String = session
        .client()
        .query_one("SELECT pg_catalog.pg_export_snapshot()", &[])
        .map_err(AccessError::query(&role, "exporting the snapshot for the parts"))?
        .get(0);
    Ok(id)
}

/// A session of `dsn` in the snapshot `snapshot` (an id [`export_snapshot`] returned).
fn session_in(dsn: &Dsn, settings: SessionSettings, snapshot: &str) -> Result<Session, AccessError> {
    let mut session = Session::connect(dsn, settings)?;
    // Snapshot ids are hex digits and dashes; anything else is never written into SQL.
    let safe = !snapshot.is_empty() && snapshot.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    let statement = match safe {
        true => format!("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{snapshot}'"),
        false => "SELECT 'not a snapshot id'::int".to_owned(),
    };
    let role = session.role().to_owned();
    session.client().batch_execute(&statement).map_err(AccessError::query(&role, "importing the audit's snapshot"))?;
    Ok(session)
}

/// Why a part scan stopped.
pub(crate) type PartError = CompareError<AccessError, Refusal>;

/// Runs the parts on `jobs` pairs of sessions and combines them; `progress` hears the rows
/// scanned (all parts together) and the parts done.
pub(crate) fn scan(
    scan: PartScan<'_>,
    source: PartSide<'_>,
    replica: PartSide<'_>,
    progress: &mut dyn FnMut(AuditProgress),
) -> Result<Compared, PartError> {
    let total = scan.parts.len();
    let jobs = scan.jobs.clamp(1, total);
    let mut sessions = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let source_session = session_in(source.dsn, scan.settings, &source.snapshot).map_err(CompareError::Side)?;
        let replica_session = session_in(replica.dsn, scan.settings, &replica.snapshot).map_err(CompareError::Side)?;
        sessions.push((source_session, replica_session));
    }
    let counters = Counters::default();
    let next = AtomicUsize::new(0);
    let (done, finished) = std::sync::mpsc::channel::<(usize, Result<Compared, PartError>)>();
    let mut outcomes: Vec<Option<Result<Compared, PartError>>> = (0..total).map(|_| None).collect();
    let mut comparison = scan.comparison.clone();
    // Each part watches its own streams (the audit's watch follows one step at a time).
    comparison.deadline = Some(scan.settings.statement_timeout.unwrap_or(Duration::from_secs(900)) + ANSWER_GRACE);
    std::thread::scope(|threads| {
        for (source_session, replica_session) in sessions.iter_mut() {
            let done = done.clone();
            let (next, counters, comparison, parts) = (&next, &counters, &comparison, &scan.parts);
            let (source, replica) = (&source, &replica);
            let dispatch = tracing::dispatcher::get_default(Clone::clone);
            threads.spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(part) = parts.get(index) else { return };
                        let outcome = scan_part(
                            part,
                            (source_session, source),
                            (replica_session, replica),
                            scan.split,
                            comparison,
                            &mut PartHooks::new(counters, scan.max_rows, index),
                        );
                        let failed = outcome.is_err();
                        let _ = done.send((index, outcome));
                        if failed {
                            // The first failing part decides; the others need not start.
                            next.store(parts.len(), Ordering::Relaxed);
                        }
                    }
                });
            });
        }
        drop(done);
        let mut finished_parts = 0;
        loop {
            match finished.recv_timeout(REPORT_EVERY) {
                Ok((index, outcome)) => {
                    outcomes[index] = Some(outcome);
                    finished_parts += 1;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
            // The rows, then the parts (a display shows the parts beside the rows).
            progress(AuditProgress::Scanned {
                source_rows: counters.source.load(Ordering::Relaxed),
                replica_rows: counters.replica.load(Ordering::Relaxed),
            });
            progress(AuditProgress::Parts { done: finished_parts, total: total as u64 });
        }
    });
    for (mut source_session, mut replica_session) in sessions {
        let _ = source_session.finish();
        let _ = replica_session.finish();
    }
    let mut summaries = Vec::with_capacity(total);
    let mut strategies = Vec::with_capacity(total);
    let mut before_streams = Duration::ZERO;
    let mut streamed = [Duration::ZERO; 2];
    for outcome in outcomes {
        // A part never started: an earlier-finishing part failed, and its error is met below
        // unless a part before it failed too.
        let Some(outcome) = outcome else { continue };
        let compared = outcome?;
        before_streams = before_streams.max(compared.before_streams);
        streamed = [streamed[0].max(compared.streamed[0]), streamed[1].max(compared.streamed[1])];
        strategies.push(compared.strategy);
        summaries.push(compared.summary);
    }
    if summaries.len() != total {
        return Err(CompareError::Side(AccessError::Merge { message: "a part of the scan did not run".to_owned() }));
    }
    let summary = split::combine(summaries, scan.comparison.max_examples, scan.comparison.field_names.clone());
    let max_rows = u64::try_from(scan.max_rows).unwrap_or(0);
    if summary.source_rows() > max_rows {
        return Err(CompareError::Stopped(Refusal::RowLimitDuringScan {
            role: "source".to_owned(),
            max_rows: scan.max_rows,
        }));
    }
    if summary.target_rows() > max_rows {
        return Err(CompareError::Stopped(Refusal::RowLimitDuringScan {
            role: "replica".to_owned(),
            max_rows: scan.max_rows,
        }));
    }
    let strategy =
        split::combined_strategy(&strategies).unwrap_or_else(|| StrategyUsed::stream("every part was empty"));
    Ok(Compared { summary, strategy, before_streams, streamed })
}

/// One part on one pair of sessions.
fn scan_part(
    part: &Part,
    (source_session, source): (&mut Session, &PartSide<'_>),
    (replica_session, replica): (&mut Session, &PartSide<'_>),
    split: SplitKey,
    comparison: &Comparison<'_>,
    hooks: &mut PartHooks<'_>,
) -> Result<Compared, PartError> {
    let restricted = |rows: &SideRows| {
        let key = &rows.keys[0].0;
        let part = part.filter(key, split);
        SideRows {
            table: rows.table.clone(),
            keys: rows.keys.clone(),
            columns: rows.columns.clone(),
            live: Some(match &rows.live {
                Some(live) => format!("({live}) AND {part}"),
                None => part,
            }),
        }
    };
    let mut source_side =
        SnapshotSide::new(source_session, Side::Source, source.dsn, restricted(&source.rows), source.hashing);
    let mut replica_side =
        SnapshotSide::new(replica_session, Side::Target, replica.dsn, restricted(&replica.rows), replica.hashing);
    let compared = compare(&mut source_side, &mut replica_side, comparison, hooks)?;
    // The rows counted since the last report.
    hooks.report(compared.summary.source_rows(), compared.summary.target_rows());
    Ok(compared)
}

/// Rows scanned by all parts together.
#[derive(Default)]
struct Counters {
    source: AtomicU64,
    replica: AtomicU64,
}

/// One part's ears: its rows into the shared counters, its log lines, the row limit.
struct PartHooks<'a> {
    counters: &'a Counters,
    max_rows: (i64, u64),
    index: usize,
    /// Rows already added to the counters (source, replica).
    reported: (u64, u64),
    merged: u64,
}

impl<'a> PartHooks<'a> {
    fn new(counters: &'a Counters, max_rows: i64, index: usize) -> PartHooks<'a> {
        let rows = u64::try_from(max_rows).unwrap_or(0);
        PartHooks { counters, max_rows: (max_rows, rows), index, reported: (0, 0), merged: 0 }
    }

    fn report(&mut self, source_rows: u64, replica_rows: u64) {
        self.counters.source.fetch_add(source_rows.saturating_sub(self.reported.0), Ordering::Relaxed);
        self.counters.replica.fetch_add(replica_rows.saturating_sub(self.reported.1), Ordering::Relaxed);
        self.reported = (self.reported.0.max(source_rows), self.reported.1.max(replica_rows));
    }
}

impl Hooks for PartHooks<'_> {
    type Stop = Refusal;
    type Meter = ();

    fn searched(&mut self, strategy: &StrategyUsed, found: Option<&Found>) {
        if let Some(found) = found {
            tracing::debug!(
                part = self.index,
                strategy = "segments",
                reason = %strategy.reason,
                matched = found.matched,
                segments = found.segments,
                levels = found.levels,
                "hashed the key segments of a part"
            );
            self.report(found.matched, found.matched);
        }
    }

    fn recorded(&mut self, summary: &Summary<Key>) -> Result<(), Refusal> {
        within_row_limit(summary, self.max_rows)?;
        self.merged += 1;
        if self.merged.is_multiple_of(PROGRESS_EVERY) {
            self.report(summary.source_rows(), summary.target_rows());
        }
        Ok(())
    }
}
