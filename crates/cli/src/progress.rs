//! Progress on stderr, only when it is a terminal: the audit's scan (rows/s and ETA) and a
//! tick's attempts and `row_diff` rows.

use datadiff_audit::AuditProgress;
use datadiff_runner::{ProgressMeter, ProgressSnapshot};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar fed by [`AuditProgress`] events; invisible when stderr is not a terminal.
pub(crate) struct ScanProgress {
    bar: Option<ProgressBar>,
}

impl ScanProgress {
    /// A bar on the process's stderr when `terminal`, else nothing.
    pub(crate) fn new(terminal: bool) -> ScanProgress {
        if !terminal {
            return ScanProgress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {msg}{wide_bar} {human_pos}/{human_len} rows  {per_sec:0}  ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        ScanProgress { bar: Some(bar) }
    }

    /// Updates the bar.
    pub(crate) fn update(&self, progress: AuditProgress) {
        let Some(bar) = &self.bar else { return };
        match progress {
            AuditProgress::Inventory { source_rows, replica_rows } => bar.set_length(source_rows.max(replica_rows)),
            AuditProgress::Hashing { level } => bar.set_message(format!("hashing segments, level {level}  ")),
            AuditProgress::Settling { positions } => {
                bar.set_message(format!("proving the rest equal around {positions} differing positions  "))
            }
            AuditProgress::Parts { done, total } => bar.set_message(format!("{done}/{total} parts  ")),
            AuditProgress::Scanned { source_rows, replica_rows } => {
                bar.set_message("");
                bar.set_position(source_rows.max(replica_rows));
            }
            _ => {}
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The progress of a tick or a remediation on stderr when it is a terminal: a spinner with
/// the attempts done while only aggregate checks run, a bar of source rows with rows/s and an
/// ETA once a `row_diff` stream reports (its expected rows: the exact `row_count`, else the
/// planner's estimate). Reads the runner's [`ProgressMeter`] a few times a second from a
/// thread of its own; nothing at all when stderr is not a terminal.
pub(crate) struct TickProgress {
    display: Option<(ProgressBar, std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

/// How often the display reads the meter.
const REFRESH: std::time::Duration = std::time::Duration::from_millis(200);

impl TickProgress {
    /// Starts drawing `meter` when `terminal`; `what` names the work ("running data-diff checks").
    pub(crate) fn start(terminal: bool, what: &'static str, meter: ProgressMeter) -> TickProgress {
        if !terminal {
            return TickProgress { display: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let waiting = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix} · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let rows = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows  {per_sec:0}  ETA {eta} · {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(waiting);
        bar.set_prefix(what);
        bar.set_message(attempts_done(0));
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let drawn = bar.clone();
        let poller = std::thread::spawn(move || {
            let mut counting_rows = false;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(REFRESH) {
                let (bar, message) = frame(meter.snapshot());
                if let Some((length, position)) = bar {
                    if !counting_rows {
                        counting_rows = true;
                        drawn.set_style(rows.clone());
                    }
                    drawn.set_length(length);
                    drawn.set_position(position);
                }
                drawn.set_message(message);
            }
        });
        TickProgress { display: Some((bar, stop, poller)) }
    }

    /// Stops and removes the display.
    pub(crate) fn finish(self) {
        if let Some((bar, stop, poller)) = self.display {
            drop(stop);
            let _ = poller.join();
            bar.finish_and_clear();
        }
    }
}

/// What the display shows for `now`: the rows bar's length and position once a `row_diff`
/// stream reports (an estimate below the rows already streamed grows to them), and the
/// attempts done.
fn frame(now: ProgressSnapshot) -> (Option<(u64, u64)>, String) {
    let counting = now.rows_expected > 0 || now.rows_streamed > 0;
    let bar = counting.then(|| (now.rows_expected.max(now.rows_streamed), now.rows_streamed));
    let mut message = match now.streams_hashing {
        0 => attempts_done(now.attempts_finished),
        _ => format!("hashing segments · {}", attempts_done(now.attempts_finished)),
    };
    // A window divided into key ranges: its parts are a unit the segment strategy's hashing
    // moves too (rows proven equal by a part's hashes count when the part's search ends).
    if now.parts_total > 0 {
        message = format!("{}/{} parts · {message}", now.parts_done, now.parts_total);
    }
    (bar, message)
}

fn attempts_done(count: u64) -> String {
    match count {
        1 => "1 check done".to_owned(),
        n => format!("{n} checks done"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rows_bar_appears_once_a_stream_reports_and_never_ends_before_its_position() {
        let idle = ProgressSnapshot { attempts_finished: 1, ..ProgressSnapshot::default() };
        assert_eq!(frame(idle), (None, "1 check done".to_owned()));
        let estimated = ProgressSnapshot { rows_expected: 500, streams_running: 1, ..ProgressSnapshot::default() };
        assert_eq!(frame(estimated), (Some((500, 0)), "0 checks done".to_owned()));
        let underestimated = ProgressSnapshot {
            attempts_finished: 3,
            rows_expected: 100,
            rows_streamed: 150,
            streams_running: 1,
            ..ProgressSnapshot::default()
        };
        assert_eq!(frame(underestimated), (Some((150, 150)), "3 checks done".to_owned()));
        let unestimated = ProgressSnapshot { rows_streamed: 7, streams_running: 1, ..ProgressSnapshot::default() };
        assert_eq!(frame(unestimated).0, Some((7, 7)));
        let hashing = ProgressSnapshot { streams_running: 1, streams_hashing: 1, ..ProgressSnapshot::default() };
        assert_eq!(frame(hashing).1, "hashing segments · 0 checks done");
        let divided = ProgressSnapshot {
            streams_running: 1,
            streams_hashing: 2,
            parts_total: 8,
            parts_done: 3,
            rows_expected: 1000,
            rows_streamed: 375,
            ..ProgressSnapshot::default()
        };
        assert_eq!(frame(divided), (Some((1000, 375)), "3/8 parts · hashing segments · 0 checks done".to_owned()));
    }
}
