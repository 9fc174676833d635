//! Logs on stderr: `RUST_LOG` when set, else `-v` (info), `-vv` (debug), `-vvv` (trace),
//! warnings otherwise — plus, at every level, the invocation lines of the recording commands.
//!
//! # Invocation lines
//!
//! `run_data_diff_checks`, `rerun_data_diff_check` and `audit` log one line when their work
//! starts and one when it ends, without `-v` (an [`Invocation`]; target
//! `datadiff::invocation`, which `RUST_LOG` can silence or keep like any other). Each line
//! starts with the UTC time (RFC 3339, `Z`) and the level; the end line holds the duration and
//! the counts:
//!
//! ```text
//! 2026-07-22T13:05:00.412311Z  INFO run_data_diff_checks started at=2026-07-22T13:05:00Z jobs=1
//! 2026-07-22T13:05:01.048207Z  INFO run_data_diff_checks finished duration_seconds=0.636 checks=2 PASS=1 FAIL=1 ERROR=0 SKIPPED=0 DEFERRED=0 exit=1
//! ```
//!
//! `checks` counts the lines of the run table (attempts, skips, checks that failed before an
//! attempt), each status its own count, named as the run table names it; the audit's end
//! line has `checks=1` and `PASS`/`BLOCK`. The start line comes
//! once the command can work (the backend opened and its schema checked; for the audit, the
//! inventory passed), so an error that stops it before, such as a missing `backend_db`,
//! stays one `error:` line; a command that fails after its start logs its end line as
//! `… ended by an error duration_seconds=…` before the `error:` line. With `-v`, each check
//! adds one line: its name, status, run id and the seconds its queries took on each side
//! (the aggregate query and the `row_diff` stream, as `dd_run_results` records them). The
//! demo runs these commands in-process and keeps its own story: it has no invocation lines.

use std::time::Instant;

use clap::Args;
use datadiff_diff_core::attempt::ResultType;
use datadiff_runner::{RunSummary, SummaryStatus};
use tracing_subscriber::EnvFilter;

use crate::console::SharedWriter;
use crate::exit::Exit;

/// The target of the invocation lines.
const INVOCATION: &str = "datadiff::invocation";

/// The `-v` flag, accepted before and after a command name.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Verbosity {
    /// More logging on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

impl Verbosity {
    /// How many times `-v` was given.
    pub(crate) fn count(self) -> u8 {
        self.verbose
    }
}

/// A subscriber writing plain-text events to `stderr`; with `invocation_lines`, the
/// invocation lines show at the default level too.
///
/// Only `tracing` events are shown: records of the `log` crate are deliberately not bridged
/// (no `LogTracer`). ureq logs full request URLs at trace level through `log`, and VictorOps
/// and webhook URLs carry keys; bridging them would print secrets under `RUST_LOG=trace`.
pub(crate) fn subscriber(
    verbose: u8,
    rust_log: Option<&str>,
    stderr: SharedWriter,
    ansi: bool,
    invocation_lines: bool,
) -> impl tracing::Subscriber + Send + Sync {
    let default = match verbose {
        0 if invocation_lines => "warn,datadiff::invocation=info",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter =
        rust_log.and_then(|directives| EnvFilter::try_new(directives).ok()).unwrap_or_else(|| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || stderr.clone())
        .with_ansi(ansi)
        .with_target(false)
        .finish()
}

/// How a recording command's checks ended: the end line's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    checks: usize,
    pass: usize,
    fail: usize,
    error: usize,
    skipped: usize,
    deferred: usize,
}

impl Tally {
    /// The counts of a run's (or a rerun's) summaries.
    pub(crate) fn of(summaries: &[RunSummary]) -> Tally {
        let mut tally = Tally { checks: summaries.len(), ..Tally::default() };
        for summary in summaries {
            let count = match summary.status {
                SummaryStatus::Pass => &mut tally.pass,
                SummaryStatus::Fail => &mut tally.fail,
                SummaryStatus::Error => &mut tally.error,
                SummaryStatus::Skipped => &mut tally.skipped,
                SummaryStatus::Deferred => &mut tally.deferred,
            };
            *count += 1;
        }
        tally
    }
}

/// One recording command's start and end lines (see the module docs). Dropped without
/// [`Invocation::finish`] (an error ended the command), it logs `ended by an error`.
#[derive(Debug)]
pub(crate) struct Invocation {
    command: &'static str,
    started: Instant,
    finished: bool,
}

impl Invocation {
    /// Logs the start line of `command`, with `details` (`name=value` pairs, or empty).
    pub(crate) fn start(command: &'static str, details: &str) -> Invocation {
        let separator = if details.is_empty() { "" } else { " " };
        tracing::info!(target: INVOCATION, "{command} started{separator}{details}");
        Invocation { command, started: Instant::now(), finished: false }
    }

    fn seconds(&self) -> String {
        format!("{:.3}", self.started.elapsed().as_secs_f64())
    }

    /// Logs the end line of a run or rerun: the duration, the counts and the exit code.
    pub(crate) fn finish(mut self, tally: Tally, exit: Exit) {
        self.finished = true;
        let Tally { checks, pass, fail, error, skipped, deferred } = tally;
        tracing::info!(
            target: INVOCATION,
            "{} finished duration_seconds={} checks={checks} PASS={pass} FAIL={fail} ERROR={error} \
             SKIPPED={skipped} DEFERRED={deferred} exit={}",
            self.command,
            self.seconds(),
            exit.code()
        );
    }

    /// Logs the end line of an audit: the duration, its verdict as counts and the exit code.
    pub(crate) fn finish_audit(mut self, passed: bool, exit: Exit) {
        self.finished = true;
        let (pass, block) = if passed { (1, 0) } else { (0, 1) };
        tracing::info!(
            target: INVOCATION,
            "{} finished duration_seconds={} checks=1 PASS={pass} BLOCK={block} exit={}",
            self.command,
            self.seconds(),
            exit.code()
        );
    }
}

impl Drop for Invocation {
    fn drop(&mut self) {
        if !self.finished {
            tracing::info!(target: INVOCATION, "{} ended by an error duration_seconds={}", self.command, self.seconds());
        }
    }
}

/// With `-v`: one line per check of `summaries`, with the seconds its queries took.
pub(crate) fn log_checks(summaries: &[RunSummary]) {
    for summary in summaries {
        let (source, target) = query_seconds(summary);
        let seconds = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |value| format!("{value:.3}"));
        tracing::info!(
            "check {} {} run_id={} source_query_seconds={} target_query_seconds={}",
            summary.check.full_check_name,
            summary.status.as_str(),
            summary.run_id.map_or_else(|| "-".to_owned(), |id| id.to_string()),
            seconds(source),
            seconds(target),
        );
    }
}

/// The seconds a check's queries took on each side: the aggregate query (every metric result
/// records the same time) plus the `row_diff` stream; `None` for a side without any.
fn query_seconds(summary: &RunSummary) -> (Option<f64>, Option<f64>) {
    let side = |pick: fn(&datadiff_diff_core::attempt::CheckResult) -> Option<f64>| {
        let valid = |value: Option<f64>| value.filter(|value| value.is_finite() && *value >= 0.0);
        let metrics = summary
            .results
            .iter()
            .filter(|result| result.check_type != ResultType::RowDiff)
            .filter_map(|result| valid(pick(result)))
            .reduce(f64::max);
        let row_diff = summary.result(ResultType::RowDiff).and_then(|result| valid(pick(result)));
        match (metrics, row_diff) {
            (None, None) => None,
            (metrics, row_diff) => Some(metrics.unwrap_or(0.0) + row_diff.unwrap_or(0.0)),
        }
    };
    (side(|result| result.source_query_seconds), side(|result| result.target_query_seconds))
}

#[cfg(test)]
mod tests {
    use datadiff_diff_core::{
        attempt::{CheckResult, RowDiffCounts},
        definition::CheckType,
        merge::Value,
    };
    use datadiff_runner::CheckIdentity;

    use super::*;

    fn summary(status: SummaryStatus, results: Vec<CheckResult>) -> RunSummary {
        let check = CheckIdentity {
            check_id: datadiff_diff_core::attempt::CheckId::new(uuid::Uuid::from_u128(1)),
            revision: 1,
            is_current: true,
            full_check_name: "postgres/payments/public/transfers".into(),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: datadiff_diff_core::definition::SourceType::TapPostgres,
            source_database: "payments".into(),
            source_schema: "public".into(),
            source_table: "transfers".into(),
            source_timestamp_column: "updated_at".into(),
            target_database: "warehouse".into(),
            target_schema: "payments".into(),
            target_table: "transfers".into(),
            target_timestamp_column: "updated_at".into(),
        };
        let mut summary = RunSummary::failed_without_run(check, "");
        summary.status = status;
        summary.results = results;
        summary
    }

    #[test]
    fn a_tally_counts_every_status() {
        let summaries = [
            summary(SummaryStatus::Pass, Vec::new()),
            summary(SummaryStatus::Fail, Vec::new()),
            summary(SummaryStatus::Fail, Vec::new()),
            summary(SummaryStatus::Skipped, Vec::new()),
        ];
        assert_eq!(Tally::of(&summaries), Tally { checks: 4, pass: 1, fail: 2, skipped: 1, ..Tally::default() });
    }

    #[test]
    fn query_seconds_add_the_row_diff_stream_to_the_aggregate_query() {
        let metric = |check| CheckResult::metric(check, &Value::Int(1), &Value::Int(1), 0.5, 0.25);
        let row_diff = CheckResult::row_diff(RowDiffCounts::default(), Some(2.0), None, None);
        let checks = vec![metric(CheckType::RowCount), metric(CheckType::MinKey), row_diff];
        assert_eq!(query_seconds(&summary(SummaryStatus::Pass, checks)), (Some(2.5), Some(0.25)));
        let untimed = CheckResult::row_diff(RowDiffCounts::default(), None, None, None);
        assert_eq!(query_seconds(&summary(SummaryStatus::Pass, vec![untimed])), (None, None));
    }
}
