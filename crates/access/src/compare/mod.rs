//! The comparison pipeline: one way to compare two sides, whoever asks (the parity audit, a
//! scheduled `row_diff`) and whatever the databases (PostgreSQL, a MySQL/MariaDB source, rows
//! held in memory).
//!
//! [`compare`] runs, in order:
//!
//! 1. **Strategy.** Every row is streamed when a side's database cannot hash at all
//!    ([`CompareSide::never_hashes`]), when `stream` is asked for, when `auto` knows the rows
//!    are few ([`AUTO_STREAM_ROWS`], from an exact count only: an estimate would make `auto`
//!    choose differently from run to run), when the key or a column pair cannot be hashed
//!    ([`Comparison::unhashable`]), or when `auto` finds both servers on this machine. Otherwise
//!    both sides get ready to hash ([`CompareSide::prepare`]: the server's support, the key's
//!    uniqueness and, for `auto`, a link probe) and `auto` decides on the measured links
//!    ([`StrategyUsed::auto`]).
//! 2. **Segment search** ([`segment::search`], both sides' statements at once): what is
//!    proven equal, and the few key segments left to stream; a search the hashes cannot decide
//!    (a NULL or duplicate key) streams everything. An interruption cancels the hashing
//!    statements ([`CompareSide::canceller`]).
//! 3. **Streams**: each side streams its rows — all of them, or only the leaves' —
//!    ([`CompareSide::stream`], a reader thread per side), and the merge core
//!    ([`datadiff_diff_core::merge`]) pulls them into one [`Summary`] on the caller's thread.
//!    A watcher stops both streams at the [`Comparison::deadline`] (naming the sides that had
//!    not answered in full) or on an interruption.
//! 4. **Outcome** ([`Compared`]): the summary, the strategy used with its reason, and the
//!    times.
//!
//! What differs between callers — their log lines, progress, a refusal during the scan — goes
//! through [`Hooks`]; what differs between databases through [`CompareSide`]. Both are generic
//! parameters: the merge loop is compiled for each pair of sides, so no row passes through a
//! dynamic call, and the merge stays a pull iterator over the two streams.
//!
//! ```
//! use datadiff_access::compare::{Comparison, MemorySide, Quiet, compare};
//! use datadiff_access::stream::EncodedRow;
//! use datadiff_diff_core::{Side, merge::Key, segment::Strategy};
//!
//! let row = |key: i64, note: &str| EncodedRow::from_fields(Key::Int(key), [Some(note.as_bytes())]);
//! let mut source = MemorySide::new(Side::Source, vec![row(1, "a"), row(2, "b"), row(3, "c")]);
//! let mut target = MemorySide::new(Side::Target, vec![row(1, "a"), row(2, "x")]);
//! let mut comparison = Comparison::new(20, vec!["note".to_owned()]);
//! comparison.strategy = Strategy::Segments;
//! let compared = compare(&mut source, &mut target, &comparison, &mut Quiet)?;
//! assert_eq!((compared.summary.matched, compared.summary.changed, compared.summary.missing), (1, 1, 1));
//! assert_eq!(compared.strategy.reason, "segments requested");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod memory;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::Scope;
use std::time::{Duration, Instant};

use datadiff_diff_core::Side;
use datadiff_diff_core::merge::{Key, MergeError, Summary, merge};
use datadiff_diff_core::segment::{AUTO_STREAM_ROWS, Link, SearchSettings, Segment, Strategy, StrategyUsed};

use crate::error::Error;
use crate::segment::{self, HashSide, Phase, SegmentOutcome};
use crate::stream::{EncodedRow, RowStream, StreamStopper};

pub use memory::{MemoryError, MemorySide};

/// How often the watchers look at the deadline and for an interruption.
const WATCH_POLL: Duration = Duration::from_millis(50);

/// Which of a side's rows to stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowSet<'a> {
    /// Every compared row.
    All,
    /// Only the rows whose keys lie in these segments (ascending, disjoint), which the
    /// segment search left to stream.
    Leaves(&'a [Segment]),
}

/// What a side found when it got ready to hash ([`CompareSide::prepare`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HashFacts {
    /// Why the side's server cannot hash, in the caller's words (an old server); `None` when
    /// it can.
    pub unsupported: Option<String>,
    /// The side's link, when a probe was asked for and the server can hash.
    pub link: Option<Link>,
    /// Whether the key has a unique index: then the overview need not look for duplicates.
    pub unique_key: bool,
}

/// Cancels a side's running hashing statement from another thread (best effort).
pub type Cancel = Box<dyn Fn() + Send + Sync>;

/// One side of a comparison, as the pipeline sees it: what it streams for a set of rows,
/// whether and how it hashes them by key segment ([`HashSide`], asked only after
/// [`CompareSide::prepare`]), how its link is judged, and how it is cancelled.
///
/// The sides of one comparison share an error type: the caller words both sides' failures.
pub trait CompareSide: HashSide + Send {
    /// Which side it is.
    fn side(&self) -> Side;

    /// `Some(why)` when this side's database cannot hash segments at all (a MySQL source):
    /// every comparison with it streams, whatever the strategy, and says why.
    fn never_hashes(&self) -> Option<&str> {
        None
    }

    /// Whether every server this side may connect to is on this machine (`auto` streams
    /// then, without asking the servers anything).
    fn is_local(&self) -> bool;

    /// Gets ready to hash (opening what it needs) and reads what the strategy needs: the
    /// server's support, the key's uniqueness and, with `probe_link`, the link's speed.
    fn prepare(&mut self, probe_link: bool) -> Result<HashFacts, Self::Error>;

    /// A handle cancelling the side's running hashing statement, once prepared.
    fn canceller(&self) -> Option<Cancel> {
        None
    }

    /// Whether a hashing statement got no answer within its deadline (the side gave up its
    /// connection): then neither side waits on a server again ([`CompareSide::finish_hashing`]).
    fn is_abandoned(&self) -> bool {
        false
    }

    /// Ends the hashing: closes what [`CompareSide::prepare`] opened — or, with `abandon`,
    /// gives it up without waiting for the server. Called on both sides at once.
    fn finish_hashing(&mut self, abandon: bool) {
        let _ = abandon;
    }

    /// Starts streaming `rows`, in key order, on a reader thread of `scope`.
    fn stream<'scope, 'env>(
        &'scope mut self,
        scope: &'scope Scope<'scope, 'env>,
        rows: RowSet<'_>,
    ) -> RowStream<'scope>;
}

/// Counts the source's rows as the merge reads them (a progress display): called once per
/// row, so it must be cheap; dropped when the source's stream ends.
pub trait RowMeter {
    /// One more source row.
    fn row(&mut self);
}

/// No meter.
impl RowMeter for () {
    #[inline]
    fn row(&mut self) {}
}

/// What a decided segment search found ([`Hooks::searched`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Rows proven equal by their hashes (on each side).
    pub matched: u64,
    /// Key segments left to stream.
    pub segments: usize,
    /// Levels hashed after the overview.
    pub levels: u32,
}

/// What the caller hears along the way, and says in its own words: log lines, progress, a
/// refusal during the scan. Every method has a default that does nothing.
pub trait Hooks {
    /// What [`Hooks::recorded`] may stop the comparison with.
    type Stop;
    /// The source rows' meter ([`Hooks::source_meter`]; `()` for none).
    type Meter: RowMeter;

    /// Every row is streamed, for `strategy`'s reason.
    fn streaming(&mut self, strategy: &StrategyUsed) {
        let _ = strategy;
    }

    /// Both sides get ready to hash ([`CompareSide::prepare`]).
    fn preparing(&mut self) {}

    /// The segment search takes its next step.
    fn hashing(&mut self, phase: Phase) {
        let _ = phase;
    }

    /// The segment search is over: `found` when it decided, `None` when it could not (then
    /// everything is streamed) or failed.
    fn searched(&mut self, strategy: &StrategyUsed, found: Option<&Found>) {
        let _ = (strategy, found);
    }

    /// The meter of the source's rows, taken when the streams start.
    fn source_meter(&mut self) -> Option<Self::Meter> {
        None
    }

    /// Both streams started (source, target): their stoppers, for a caller's own watch.
    fn streams_started(&mut self, stoppers: &[StreamStopper; 2]) {
        let _ = stoppers;
    }

    /// One more change was recorded in `summary`; an error stops the comparison.
    fn recorded(&mut self, summary: &Summary<Key>) -> Result<(), Self::Stop> {
        let _ = summary;
        Ok(())
    }

    /// Both streams are over (to their end or stopped).
    fn streams_ended(&mut self) {}
}

/// Hooks that hear nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Hooks for Quiet {
    type Stop = std::convert::Infallible;
    type Meter = ();
}

/// What to compare and how: everything the caller decided before any database is asked.
#[derive(Clone)]
pub struct Comparison<'a> {
    /// How the rows are read.
    pub strategy: Strategy,
    /// The source's exact row count, when the caller has one (`auto` streams few rows
    /// outright).
    pub counted_rows: Option<u64>,
    /// Why the rows cannot be hashed (the key, a column pair: [`segment::plan_hashing`]), when
    /// they cannot.
    pub unhashable: Option<String>,
    /// The segment search's tuning.
    pub settings: SearchSettings,
    /// Examples the summary keeps.
    pub max_examples: usize,
    /// The compared fields' names, for the examples.
    pub field_names: Vec<String>,
    /// How long each stream may take to answer in full; `None`: the caller watches.
    pub deadline: Option<Duration>,
    /// Asked every 50 ms while hashing and streaming: `true` stops the comparison.
    pub interrupted: Option<&'a (dyn Fn() -> bool + Sync)>,
}

impl std::fmt::Debug for Comparison<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comparison")
            .field("strategy", &self.strategy)
            .field("counted_rows", &self.counted_rows)
            .field("unhashable", &self.unhashable)
            .field("settings", &self.settings)
            .field("max_examples", &self.max_examples)
            .field("field_names", &self.field_names)
            .field("deadline", &self.deadline)
            .field("interruptible", &self.interrupted.is_some())
            .finish()
    }
}

impl<'a> Comparison<'a> {
    /// A comparison keeping `max_examples` examples of the fields `field_names`: `auto`, no
    /// count, hashable, the default search settings, no deadline, never interrupted.
    pub fn new(max_examples: usize, field_names: Vec<String>) -> Comparison<'a> {
        Comparison {
            strategy: Strategy::Auto,
            counted_rows: None,
            unhashable: None,
            settings: SearchSettings::default(),
            max_examples,
            field_names,
            deadline: None,
            interrupted: None,
        }
    }

    fn is_interrupted(&self) -> bool {
        self.interrupted.is_some_and(|interrupted| interrupted())
    }
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// The counts and the first examples.
    pub summary: Summary<Key>,
    /// How the rows were read, and why.
    pub strategy: StrategyUsed,
    /// From the start to the streams' start (the hashing, if any); to the end when nothing
    /// was left to stream.
    pub before_streams: Duration,
    /// Each side's time from the streams' start to its last row (source, target); zero when
    /// nothing was streamed.
    pub streamed: [Duration; 2],
}

/// Why a comparison stopped without an outcome.
#[derive(Debug)]
pub enum CompareError<E, S> {
    /// A side failed before the streams (getting ready to hash, or hashing).
    Side(E),
    /// The merge stopped: a stream failed, or a side's keys were not strictly increasing.
    Merge(MergeError<Box<Error>>),
    /// The streams of these sides did not answer in full within the deadline.
    NoAnswer(Vec<Side>),
    /// The caller interrupted it.
    Interrupted,
    /// A hook stopped it ([`Hooks::recorded`]).
    Stopped(S),
}

impl<E: std::fmt::Display, S: std::fmt::Display> std::fmt::Display for CompareError<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompareError::Side(error) => error.fmt(f),
            CompareError::Merge(error) => error.fmt(f),
            CompareError::NoAnswer(sides) => {
                let sides: Vec<String> = sides.iter().map(ToString::to_string).collect();
                write!(f, "no answer from the {} within the deadline", sides.join(" and "))
            }
            CompareError::Interrupted => f.write_str("interrupted"),
            CompareError::Stopped(stop) => stop.fmt(f),
        }
    }
}

impl<E, S> std::error::Error for CompareError<E, S>
where
    E: std::error::Error + 'static,
    S: std::error::Error + 'static,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CompareError::Side(error) => Some(error),
            CompareError::Merge(error) => Some(error),
            CompareError::Stopped(stop) => Some(stop),
            CompareError::NoAnswer(_) | CompareError::Interrupted => None,
        }
    }
}

/// Compares `source` and `target` as `comparison` says (see the module docs), telling
/// `hooks` along the way.
pub fn compare<S, T, H>(
    source: &mut S,
    target: &mut T,
    comparison: &Comparison<'_>,
    hooks: &mut H,
) -> Result<Compared, CompareError<S::Error, H::Stop>>
where
    S: CompareSide,
    T: CompareSide<Error = S::Error>,
    H: Hooks,
{
    let started = Instant::now();
    let mut summary = Summary::new(comparison.max_examples, comparison.field_names.clone());
    let (scan, strategy) = scan(source, target, comparison, hooks)?;
    let leaves = match scan {
        Scan::Everything => None,
        Scan::Nothing { matched } => {
            summary.matched = matched;
            let before_streams = started.elapsed();
            return Ok(Compared { summary, strategy, before_streams, streamed: [Duration::ZERO; 2] });
        }
        Scan::Leaves { matched, leaves } => {
            summary.matched = matched;
            Some(leaves)
        }
    };
    let before_streams = started.elapsed();
    let rows = match &leaves {
        None => RowSet::All,
        Some(leaves) => RowSet::Leaves(leaves),
    };
    let streamed = merge_streams(source, target, rows, comparison, hooks, &mut summary)?;
    Ok(Compared { summary, strategy, before_streams, streamed })
}

/// What is left to stream after the strategy and the hashes had their say.
enum Scan {
    /// Every row.
    Everything,
    /// Nothing: the hashes proved all `matched` rows equal.
    Nothing { matched: u64 },
    /// Only the rows of `leaves`; `matched` others were proven equal.
    Leaves { matched: u64, leaves: Vec<Segment> },
}

/// Every row is streamed, because of `why`.
fn everything<E, H: Hooks>(hooks: &mut H, why: String) -> Result<(Scan, StrategyUsed), CompareError<E, H::Stop>> {
    let used = StrategyUsed::stream(why);
    hooks.streaming(&used);
    Ok((Scan::Everything, used))
}

/// Ends both sides' hashing, at once; given up without a wait when either did not answer.
fn finish_hashing<S: CompareSide, T: CompareSide>(source: &mut S, target: &mut T) {
    let abandon = source.is_abandoned() || target.is_abandoned();
    segment::concurrently(|| source.finish_hashing(abandon), || target.finish_hashing(abandon));
}

/// Step 1 and 2: the strategy and, for segments, the search.
fn scan<S, T, H>(
    source: &mut S,
    target: &mut T,
    comparison: &Comparison<'_>,
    hooks: &mut H,
) -> Result<(Scan, StrategyUsed), CompareError<S::Error, H::Stop>>
where
    S: CompareSide,
    T: CompareSide<Error = S::Error>,
    H: Hooks,
{
    if let Some(why) = source.never_hashes().or_else(|| target.never_hashes()) {
        return everything(hooks, why.to_owned());
    }
    let auto = comparison.strategy == Strategy::Auto;
    if comparison.strategy == Strategy::Stream {
        return everything(hooks, "stream requested".to_owned());
    }
    if let Some(rows) = comparison.counted_rows.filter(|rows| auto && *rows <= AUTO_STREAM_ROWS) {
        // Few rows stream outright: hashing could not save what probing costs.
        return everything(hooks, format!("auto: {rows} rows (at most {AUTO_STREAM_ROWS} stream outright)"));
    }
    if let Some(why) = &comparison.unhashable {
        return everything(hooks, why.clone());
    }
    // Servers on this machine stream: nothing to ask them.
    if auto && source.is_local() && target.is_local() {
        return everything(hooks, StrategyUsed::auto(Link::Local, Link::Local).reason);
    }
    hooks.preparing();
    let (source_facts, target_facts) = segment::concurrently(|| source.prepare(auto), || target.prepare(auto));
    let source_facts = source_facts.map_err(CompareError::Side)?;
    let target_facts = target_facts.map_err(CompareError::Side)?;
    if let Some(why) = source_facts.unsupported.or(target_facts.unsupported) {
        finish_hashing(source, target);
        return everything(hooks, why);
    }
    let mut used = StrategyUsed::segments("segments requested");
    if let (Some(source_link), Some(target_link)) = (source_facts.link, target_facts.link) {
        used = StrategyUsed::auto(source_link, target_link);
        if used.strategy == Strategy::Stream {
            finish_hashing(source, target);
            return everything(hooks, used.reason);
        }
    }
    if comparison.is_interrupted() {
        finish_hashing(source, target);
        return Err(CompareError::Interrupted);
    }
    let duplicates = (!source_facts.unique_key, !target_facts.unique_key);
    let outcome = match search(source, target, duplicates, comparison, hooks) {
        Err(_) if comparison.is_interrupted() => Err(CompareError::Interrupted),
        other => other.map_err(CompareError::Side),
    };
    finish_hashing(source, target);
    let (matched, leaves, levels) = match outcome {
        Ok(SegmentOutcome::Searched { matched, leaves, levels }) => (matched, leaves, levels),
        Ok(SegmentOutcome::StreamAll(why)) => {
            hooks.searched(&used, None);
            return everything(hooks, format!("the hashes cannot decide: {why}"));
        }
        Err(error) => {
            hooks.searched(&used, None);
            return Err(error);
        }
    };
    hooks.searched(&used, Some(&Found { matched, segments: leaves.len(), levels }));
    Ok(match leaves.is_empty() {
        true => (Scan::Nothing { matched }, used),
        false => (Scan::Leaves { matched, leaves }, used),
    })
}

/// The segment search over both sides; an interruption cancels their running statements.
fn search<S, T, H>(
    source: &mut S,
    target: &mut T,
    (source_duplicates, target_duplicates): (bool, bool),
    comparison: &Comparison<'_>,
    hooks: &mut H,
) -> Result<SegmentOutcome, S::Error>
where
    S: CompareSide,
    T: CompareSide<Error = S::Error>,
    H: Hooks,
{
    let mut phase = |phase: Phase| hooks.hashing(phase);
    let Some(interrupted) = comparison.interrupted else {
        return segment::search(
            (source, source_duplicates),
            (target, target_duplicates),
            comparison.settings,
            &mut phase,
        );
    };
    let cancellers: Vec<Cancel> = [source.canceller(), target.canceller()].into_iter().flatten().collect();
    let (done, finished) = crossbeam_channel::bounded::<()>(0);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = finished.recv_timeout(WATCH_POLL) {
                if interrupted() {
                    cancellers.iter().for_each(|cancel| cancel());
                    return;
                }
            }
        });
        let outcome =
            segment::search((source, source_duplicates), (target, target_duplicates), comparison.settings, &mut phase);
        drop(done);
        outcome
    })
}

/// Step 3: both sides stream `rows` through the merge into `summary`; a watcher stops both
/// streams at the deadline (naming the sides that had not answered in full) or on an
/// interruption. Each side's time to its last row.
fn merge_streams<S, T, H>(
    source: &mut S,
    target: &mut T,
    rows: RowSet<'_>,
    comparison: &Comparison<'_>,
    hooks: &mut H,
    summary: &mut Summary<Key>,
) -> Result<[Duration; 2], CompareError<S::Error, H::Stop>>
where
    S: CompareSide,
    T: CompareSide<Error = S::Error>,
    H: Hooks,
{
    let started = Instant::now();
    let expired = OnceLock::<Vec<Side>>::new();
    let meter = hooks.source_meter();
    let merged = std::thread::scope(|scope| -> Result<[Duration; 2], CompareError<S::Error, H::Stop>> {
        let mut source = Timed::new(source.stream(scope, rows), meter);
        let mut target = Timed::<H::Meter>::new(target.stream(scope, rows), None);
        let stoppers = [source.rows.stopper(), target.rows.stopper()];
        hooks.streams_started(&stoppers);
        let watching = comparison.deadline.is_some() || comparison.interrupted.is_some();
        let (done, finished) = crossbeam_channel::bounded::<()>(0);
        if watching {
            let awaited = [Arc::clone(&source.awaited), Arc::clone(&target.awaited)];
            let deadline = comparison.deadline.map(|deadline| started + deadline);
            let interrupted = comparison.interrupted;
            let expired = &expired;
            scope.spawn(move || {
                // Ends when the merge is over (the sender is dropped) or after stopping both.
                while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = finished.recv_timeout(WATCH_POLL) {
                    let late = deadline.is_some_and(|deadline| Instant::now() >= deadline);
                    if late {
                        let _ = expired.set(waiting_sides(&stoppers, &awaited));
                    }
                    if late || interrupted.is_some_and(|interrupted| interrupted()) {
                        stoppers.iter().for_each(StreamStopper::stop);
                        return;
                    }
                }
            });
        }
        for change in merge(source.by_ref(), target.by_ref()) {
            let change = change.map_err(|error| match expired.get() {
                Some(sides) => CompareError::NoAnswer(sides.clone()),
                None if comparison.is_interrupted() => CompareError::Interrupted,
                None => CompareError::Merge(error),
            })?;
            summary.record(&change);
            hooks.recorded(summary).map_err(CompareError::Stopped)?;
        }
        drop(done);
        let elapsed = |timed: &Timed<'_, H::Meter>| timed.ended.unwrap_or(started).duration_since(started);
        Ok([elapsed(&source), elapsed(&target)])
    });
    hooks.streams_ended();
    merged
}

/// The sides a stream deadline found still waiting: the ones whose reader has not read its
/// whole answer and that the merge waits for — the other may only be held back by the merge
/// (its reader blocked on a full queue) — or, when the merge waits for neither, every side
/// still reading.
fn waiting_sides(stoppers: &[StreamStopper; 2], awaited: &[Arc<AtomicBool>; 2]) -> Vec<Side> {
    let sides = [Side::Source, Side::Target];
    let reading = |index: usize| !stoppers[index].reader_completed();
    let waiting: Vec<Side> = (0..2)
        .filter(|&index| reading(index) && awaited[index].load(Ordering::Acquire))
        .map(|index| sides[index])
        .collect();
    match waiting.is_empty() {
        true => (0..2).filter(|&index| reading(index)).map(|index| sides[index]).collect(),
        false => waiting,
    }
}

/// A row stream that notes when it ended and counts its rows on a meter when given one, its
/// rare error boxed: the merge moves every row through a few layers, and a `Result` as small
/// as the row saves about a tenth of its time.
struct Timed<'scope, M> {
    rows: RowStream<'scope>,
    ended: Option<Instant>,
    meter: Option<M>,
    /// Set while the merge waits for this side's next row (read by the deadline watcher).
    awaited: Arc<AtomicBool>,
}

impl<'scope, M> Timed<'scope, M> {
    fn new(rows: RowStream<'scope>, meter: Option<M>) -> Timed<'scope, M> {
        Timed { rows, ended: None, meter, awaited: Arc::new(AtomicBool::new(false)) }
    }
}

impl<M: RowMeter> Iterator for Timed<'_, M> {
    type Item = Result<EncodedRow, Box<Error>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.awaited.store(true, Ordering::Release);
        let next = self.rows.next_boxed();
        self.awaited.store(false, Ordering::Release);
        match (&next, &mut self.meter) {
            (Some(_), Some(meter)) => meter.row(),
            (None, meter) => {
                if self.ended.is_none() {
                    self.ended = Some(Instant::now());
                }
                // The stream is over: its count is final.
                *meter = None;
            }
            _ => {}
        }
        next
    }
}

#[cfg(test)]
mod tests;
