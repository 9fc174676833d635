//! Live progress of a tick for a display: how many attempts finished and how many source rows
//! `row_diff` has streamed against how many it expects.
//!
//! The aggregate checks are one statement per side and report nothing until they return;
//! `row_diff` streams, so its rows can be counted as they arrive. The expected count of a
//! window is the exact `row_count` source value when the attempt ran that check, otherwise
//! the planner's estimate for the source streaming query (`EXPLAIN`, no data read). When a
//! stream ends, its estimate is replaced by the rows it actually had, so the totals agree
//! once every stream is over.
//!
//! Counting costs one relaxed atomic add per [`FLUSH_EVERY`] rows, and nothing at all when
//! no meter is attached ([`ExecutionOptions::progress`](crate::ExecutionOptions)): the
//! estimate query only runs for a meter.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many rows a stream counts locally before it adds them to the meter.
pub const FLUSH_EVERY: u64 = 4096;

/// Shared counters a tick's attempts report into and a display reads ([`ProgressMeter::snapshot`]).
/// Cloning gives another handle on the same counters.
#[derive(Debug, Clone, Default)]
pub struct ProgressMeter {
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    attempts_finished: AtomicU64,
    rows_streamed: AtomicU64,
    rows_expected: AtomicU64,
    streams_running: AtomicU64,
    streams_hashing: AtomicU64,
    parts_total: AtomicU64,
    parts_done: AtomicU64,
}

/// What a [`ProgressMeter`] has counted so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProgressSnapshot {
    /// Attempts executed to their end (any status, SKIPPED included).
    pub attempts_finished: u64,
    /// Source rows the `row_diff` streams have compared so far.
    pub rows_streamed: u64,
    /// Source rows the `row_diff` streams started so far are expected to have in all: the
    /// exact count of the finished ones plus the expectation of the running ones. `0` when
    /// no stream has an expectation.
    pub rows_expected: u64,
    /// `row_diff` streams running now.
    pub streams_running: u64,
    /// Of those, the ones hashing key segments in the databases (the segment strategy)
    /// before they stream what differs; rows their hashes prove equal count as compared.
    /// A window divided into parts counts each part hashing.
    pub streams_hashing: u64,
    /// Parts of windows divided into key ranges (`run --row-diff-parts`, `--jobs`) so far:
    /// each a measurable unit even while the segment strategy hashes.
    pub parts_total: u64,
    /// Of those, the parts compared.
    pub parts_done: u64,
}

impl ProgressMeter {
    /// A meter with every counter at zero.
    pub fn new() -> ProgressMeter {
        ProgressMeter::default()
    }

    /// The counters now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        let counters = &self.counters;
        ProgressSnapshot {
            attempts_finished: counters.attempts_finished.load(Ordering::Relaxed),
            rows_streamed: counters.rows_streamed.load(Ordering::Relaxed),
            rows_expected: counters.rows_expected.load(Ordering::Relaxed),
            streams_running: counters.streams_running.load(Ordering::Relaxed),
            streams_hashing: counters.streams_hashing.load(Ordering::Relaxed),
            parts_total: counters.parts_total.load(Ordering::Relaxed),
            parts_done: counters.parts_done.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn attempt_finished(&self) {
        self.counters.attempts_finished.fetch_add(1, Ordering::Relaxed);
    }

    /// A `row_diff` stream starts, expecting `expected` source rows when known.
    pub(crate) fn start_stream(&self, expected: Option<u64>) -> StreamProgress<'_> {
        self.counters.streams_running.fetch_add(1, Ordering::Relaxed);
        let expected = expected.unwrap_or(0);
        self.counters.rows_expected.fetch_add(expected, Ordering::Relaxed);
        StreamProgress {
            meter: self,
            expected,
            counted: 0,
            pending: 0,
            hashing: false,
            parts_counted: AtomicU64::new(0),
        }
    }
}

/// One `row_diff` stream's count; ends (and corrects the expectation) when dropped.
#[derive(Debug)]
pub(crate) struct StreamProgress<'m> {
    meter: &'m ProgressMeter,
    expected: u64,
    counted: u64,
    pending: u64,
    hashing: bool,
    /// Rows the stream's parts counted (a window divided into key ranges).
    parts_counted: AtomicU64,
}

impl<'m> StreamProgress<'m> {
    /// The stream is divided into `parts` parts.
    pub(crate) fn divided(&self, parts: usize) {
        self.meter.counters.parts_total.fetch_add(parts as u64, Ordering::Relaxed);
    }

    /// The meter of one of the stream's parts, counting into this stream (its rows, its
    /// hashing); the part counts as done when it is dropped.
    pub(crate) fn part(&self) -> PartProgress<'_> {
        PartProgress { meter: self.meter, counted: &self.parts_counted, pending: 0, hashing: false }
    }

    /// One more source row.
    #[inline]
    pub(crate) fn row(&mut self) {
        self.pending += 1;
        if self.pending == FLUSH_EVERY {
            self.flush();
        }
    }

    /// The stream hashes key segments (`true`) or has stopped hashing (`false`).
    pub(crate) fn hashing(&mut self, on: bool) {
        if on != self.hashing {
            self.hashing = on;
            match on {
                true => self.meter.counters.streams_hashing.fetch_add(1, Ordering::Relaxed),
                false => self.meter.counters.streams_hashing.fetch_sub(1, Ordering::Relaxed),
            };
        }
    }

    /// `rows` source rows proven equal by their hashes: compared without streaming.
    pub(crate) fn proven(&mut self, rows: u64) {
        self.pending += rows;
        self.flush();
    }

    fn flush(&mut self) {
        self.meter.counters.rows_streamed.fetch_add(self.pending, Ordering::Relaxed);
        self.counted += self.pending;
        self.pending = 0;
    }
}

impl Drop for StreamProgress<'_> {
    fn drop(&mut self) {
        self.hashing(false);
        self.flush();
        self.counted += self.parts_counted.load(Ordering::Relaxed);
        let counters = &self.meter.counters;
        // The expectation becomes what the stream really had.
        counters.rows_expected.fetch_add(self.counted, Ordering::Relaxed);
        counters.rows_expected.fetch_sub(self.expected, Ordering::Relaxed);
        counters.streams_running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One part's count in its window's stream ([`StreamProgress::part`]); the part is done when
/// dropped.
#[derive(Debug)]
pub(crate) struct PartProgress<'s> {
    meter: &'s ProgressMeter,
    counted: &'s AtomicU64,
    pending: u64,
    hashing: bool,
}

impl PartProgress<'_> {
    /// One more source row.
    #[inline]
    pub(crate) fn row(&mut self) {
        self.pending += 1;
        if self.pending == FLUSH_EVERY {
            self.flush();
        }
    }

    /// The part hashes key segments (`true`) or has stopped hashing (`false`).
    pub(crate) fn hashing(&mut self, on: bool) {
        if on != self.hashing {
            self.hashing = on;
            match on {
                true => self.meter.counters.streams_hashing.fetch_add(1, Ordering::Relaxed),
                false => self.meter.counters.streams_hashing.fetch_sub(1, Ordering::Relaxed),
            };
        }
    }

    /// `rows` source rows proven equal by their hashes.
    pub(crate) fn proven(&mut self, rows: u64) {
        self.pending += rows;
        self.flush();
    }

    fn flush(&mut self) {
        self.meter.counters.rows_streamed.fetch_add(self.pending, Ordering::Relaxed);
        self.counted.fetch_add(self.pending, Ordering::Relaxed);
        self.pending = 0;
    }
}

impl Drop for PartProgress<'_> {
    fn drop(&mut self) {
        self.hashing(false);
        self.flush();
        self.meter.counters.parts_done.fetch_add(1, Ordering::Relaxed);
    }
}

/// The planner's row estimate in the output of `EXPLAIN (FORMAT JSON)`: the top plan's
/// `Plan Rows`, `None` when the text is not such a plan.
pub(crate) fn plan_rows(explain_json: &str) -> Option<u64> {
    let plan: serde_json::Value = serde_json::from_str(explain_json).ok()?;
    let rows = plan.get(0)?.get("Plan")?.get("Plan Rows")?.as_f64()?;
    (rows.is_finite() && rows >= 0.0).then(|| rows.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_proven_by_hashes_count_as_compared_and_hashing_shows_while_it_lasts() {
        let meter = ProgressMeter::new();
        {
            let mut stream = meter.start_stream(Some(1_000));
            stream.hashing(true);
            stream.hashing(true);
            assert_eq!(meter.snapshot().streams_hashing, 1);
            stream.proven(990);
            stream.hashing(false);
            assert_eq!((meter.snapshot().streams_hashing, meter.snapshot().rows_streamed), (0, 990));
            stream.hashing(true);
            for _ in 0..10 {
                stream.row();
            }
        }
        let after = meter.snapshot();
        assert_eq!((after.streams_hashing, after.rows_streamed, after.rows_expected), (0, 1_000, 1_000));
    }

    #[test]
    fn a_divided_stream_counts_its_parts_rows_and_parts_once() {
        let meter = ProgressMeter::new();
        {
            let stream = meter.start_stream(Some(100));
            stream.divided(2);
            std::thread::scope(|threads| {
                threads.spawn(|| {
                    let mut part = stream.part();
                    part.hashing(true);
                    part.proven(30);
                    part.hashing(false);
                });
                threads.spawn(|| {
                    let mut part = stream.part();
                    for _ in 0..50 {
                        part.row();
                    }
                });
            });
            let running = meter.snapshot();
            assert_eq!((running.parts_total, running.parts_done, running.rows_streamed), (2, 2, 80));
            assert_eq!(running.rows_expected, 100, "the window's expectation stands while it runs");
        }
        let after = meter.snapshot();
        assert_eq!((after.rows_streamed, after.rows_expected, after.streams_running), (80, 80, 0));
        assert_eq!(after.streams_hashing, 0);
    }

    #[test]
    fn a_stream_counts_its_rows_and_corrects_the_expectation_when_it_ends() {
        let meter = ProgressMeter::new();
        {
            let mut stream = meter.start_stream(Some(10_000));
            assert_eq!(meter.snapshot().streams_running, 1);
            assert_eq!(meter.snapshot().rows_expected, 10_000);
            for _ in 0..FLUSH_EVERY + 3 {
                stream.row();
            }
            // Counted in whole flushes while running.
            assert_eq!(meter.snapshot().rows_streamed, FLUSH_EVERY);
        }
        let after = meter.snapshot();
        assert_eq!(after.rows_streamed, FLUSH_EVERY + 3);
        assert_eq!(after.rows_expected, FLUSH_EVERY + 3);
        assert_eq!(after.streams_running, 0);
    }

    #[test]
    fn streams_without_an_expectation_add_only_what_they_had() {
        let meter = ProgressMeter::new();
        let first = meter.start_stream(Some(50));
        {
            let mut second = meter.start_stream(None);
            assert_eq!(meter.snapshot().rows_expected, 50);
            second.row();
            second.row();
        }
        assert_eq!(meter.snapshot().rows_expected, 52);
        drop(first);
        assert_eq!(meter.snapshot(), ProgressSnapshot { rows_expected: 2, rows_streamed: 2, ..Default::default() });
        meter.attempt_finished();
        assert_eq!(meter.snapshot().attempts_finished, 1);
    }

    #[test]
    fn the_top_plan_rows_of_an_explain() {
        let explain = r#"[{"Plan": {"Node Type": "Index Scan", "Plan Rows": 1234, "Plans": [{"Plan Rows": 9}]}}]"#;
        assert_eq!(plan_rows(explain), Some(1234));
        assert_eq!(plan_rows(r#"[{"Plan": {"Plan Rows": 2.6}}]"#), Some(3));
        assert_eq!(plan_rows(r#"[{"Plan": {"Plan Rows": -1}}]"#), None);
        assert_eq!(plan_rows(r#"{"Plan": {"Plan Rows": 5}}"#), None);
        assert_eq!(plan_rows("not json"), None);
    }
}
