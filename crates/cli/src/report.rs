//! `datadiff report`: the four reporting queries of PipelineWise's backend page, a run's
//! `row_diff` evidence, one attempt's whole record (`report run`), the `--max-lag`
//! monitoring verdict (SPEC §8), and `report metrics`, the same state in the Prometheus text
//! exposition format.
//!
//! # `report run --run-id ID`
//!
//! One attempt as the backend keeps it: its check and revision, window, slot, trigger,
//! attempt number, status and error, times, the remediation link, the preflight record
//! (status, bounded row count, leading index, fingerprint, findings), then every
//! `dd_run_results` row with both values as stored (counts, min/max keys, checksums: what
//! PipelineWise stores; never a row; the table shows a `schema_compatibility` value as
//! `<n> columns`, JSON and CSV in full), both query times and its error, and the `row_diff`
//! totals (`matched` is worked out: the source rows neither missing nor changed) with the
//! command that lists the differing rows. JSON: `{"report": "run", run_id, check_id,
//! full_check_name, revision, scheduled_for, window_start, window_end, trigger_type, attempt,
//! status, error, started_at, finished_at, rerun_of_run_id, remediation_reference,
//! preflight: {…} | null, row_diff: {source_rows, target_rows, missing, extra, changed,
//! matched} | null, rows: [{check_type, status, source_value, target_value,
//! source_query_seconds, target_query_seconds, error}]}`; CSV: the result rows. An unknown
//! run id is one `error:` line and exit 2, as for `report differences`.
//!
//! # `report metrics`
//!
//! One gauge family per fact, one sample per current definition, labelled `target`, `tap`,
//! `schema` and `table` (the source schema and table: the parts of `full_check_name`):
//!
//! | metric | value |
//! |---|---|
//! | `datadiff_report_timestamp_seconds` | when the report was taken (`--at` or now), unix seconds, no labels |
//! | `datadiff_verified_end_timestamp_seconds` | the verified end (absent before the first evaluated attempt) |
//! | `datadiff_verification_lag_seconds` | `--at` (or now) minus the verified end (absent likewise) |
//! | `datadiff_verified_status{status}` | 1 for the watermark's status, 0 for the others of CONTIGUOUS, BLOCKED, NOT_RUN |
//! | `datadiff_last_attempt_status{status}` | 1 for the newest attempt's status, 0 for the others of RUNNING, PASS, FAIL, ERROR, DEFERRED (all 0 before the first) |
//! | `datadiff_last_attempt_timestamp_seconds` | when the newest attempt finished (started, while it runs) |
//! | `datadiff_last_attempt_age_seconds` | `--at` (or now) minus that |
//! | `datadiff_open_failures` | slots whose state is FAIL or ERROR (what `report failures` lists) |
//!
//! Label values are escaped as the format requires (`\\`, `\"`, `\n`). With `--output FILE`
//! the text goes to a temporary file beside FILE (`.FILE.<pid>.tmp`, which node_exporter's
//! textfile collector ignores: it reads `*.prom`), is synced and renamed over FILE, so a
//! scrape never sees half a file; when the backend cannot be read the old file stays and
//! `datadiff_report_timestamp_seconds` shows its age. Without `--output`, stdout. FILE is
//! checked before the backend is read: a symbolic link is followed, anything but a regular
//! file or a new path (a device such as `/dev/full`, a FIFO, a socket, a directory) is
//! refused, exit 2 naming it (`output_file.rs` has the rules).
//! `--output-format` does not apply (JSON or CSV is a usage error).

use std::path::PathBuf;

use anyhow::Context;
use chrono::{DateTime, TimeDelta, Utc};
use clap::{Args, Subcommand};
use datadiff_backend_store::{LagProblem, LagVerdict, RunEvidence, Store};
use datadiff_diff_core::attempt::{CheckResult, ResultType, RunId};
use serde_json::{Value as Json, json};

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, MIN_WRAPPED_WIDTH, ReportFormat, column, field, wrap};
use crate::output_file::OutputFile;
use crate::project::{ProjectArgs, open_gated};
use crate::timestamp;

/// Print a report from the backend: watermarks, daily results, unresolved failures,
/// remediations, a run's row differences, one run's whole record, or Prometheus metrics.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// How the report is printed.
    #[arg(long, global = true, value_enum, default_value_t = ReportFormat::Table)]
    output_format: ReportFormat,
    /// Report as of this time instead of now: the watermark lag is measured from it (RFC 3339
    /// with Z or an offset).
    #[arg(long, global = true, value_name = "TIME", value_parser = timestamp::parse_at)]
    at: Option<DateTime<Utc>>,
    #[command(subcommand)]
    report: ReportKind,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// The reports.
#[derive(Debug, Subcommand)]
enum ReportKind {
    /// The verified watermark of every current definition, with its lag.
    #[command(after_help = crate::exit::help::REPORT)]
    Watermarks(WatermarksArgs),
    /// PASS and FAIL/ERROR result counts per table per UTC day (every revision and trigger).
    #[command(after_help = crate::exit::help::REPORT)]
    Daily(PlainArgs),
    /// Unresolved failed or errored slots of current definitions.
    #[command(after_help = crate::exit::help::REPORT)]
    Failures(PlainArgs),
    /// Failed runs and their remediation attempts.
    #[command(after_help = crate::exit::help::REPORT)]
    Remediations(PlainArgs),
    /// The row differences (keys and column names) a run's row_diff recorded.
    #[command(after_help = crate::exit::help::REPORT)]
    Differences(DifferencesArgs),
    /// One attempt's whole record: window, trigger, status, error, preflight, every check's
    /// values and query times, and the row_diff totals.
    #[command(after_help = crate::exit::help::REPORT)]
    Run(RunReportArgs),
    /// Watermarks, latest attempts and open failures as Prometheus metrics (text format).
    #[command(after_help = crate::exit::help::REPORT)]
    Metrics(MetricsArgs),
}

/// `report metrics`.
#[derive(Debug, Args)]
struct MetricsArgs {
    /// Write to this file atomically (a temporary file beside it, renamed over it) instead of
    /// stdout: e.g. /var/lib/node_exporter/textfile_collector/datadiff.prom. A symbolic link
    /// is followed; a device, FIFO, socket or directory is refused (exit 2).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Hidden here: `report`'s `--output-format` does not apply to the Prometheus text format
    /// (given, it is refused), so the metrics' help does not offer it. It takes the global
    /// argument's place in this subcommand (clap propagates a global argument only where its
    /// id is not taken), and its value still reaches `report`'s.
    #[arg(id = "output_format", long = "output-format", value_enum, hide = true)]
    _output_format: Option<ReportFormat>,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// `report watermarks`.
#[derive(Debug, Args)]
struct WatermarksArgs {
    /// Exit 1 when any current definition is BLOCKED, has not run, or lags more than this
    /// (a duration such as 2h or 1d6h): for monitoring.
    #[arg(long, value_name = "DURATION", value_parser = parse_max_lag)]
    max_lag: Option<TimeDelta>,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// A report without options of its own.
#[derive(Debug, Args)]
struct PlainArgs {
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// `report differences`.
#[derive(Debug, Args)]
struct DifferencesArgs {
    /// The run (its run_id, as the run table prints it).
    #[arg(long, value_name = "ID", value_parser = crate::rerun::parse_run_id)]
    run_id: RunId,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// `report run`.
#[derive(Debug, Args)]
struct RunReportArgs {
    /// The run (its run_id, as the run table prints it).
    #[arg(long, value_name = "ID", value_parser = crate::rerun::parse_run_id)]
    run_id: RunId,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl ReportArgs {
    /// `-v` given after the command name or the report's name.
    pub(crate) fn verbosity(&self) -> u8 {
        let inner = match &self.report {
            ReportKind::Watermarks(args) => args.verbosity.count(),
            ReportKind::Daily(args) | ReportKind::Failures(args) | ReportKind::Remediations(args) => {
                args.verbosity.count()
            }
            ReportKind::Differences(args) => args.verbosity.count(),
            ReportKind::Run(args) => args.verbosity.count(),
            ReportKind::Metrics(args) => args.verbosity.count(),
        };
        self.verbosity.count().saturating_add(inner)
    }
}

fn parse_max_lag(text: &str) -> Result<TimeDelta, String> {
    let duration = datadiff_diff_core::definition::Duration::parse(text).map_err(|error| error.to_string())?;
    TimeDelta::try_seconds(duration.seconds()).ok_or_else(|| format!("Duration '{text}' is too large"))
}

/// Reads the report and prints it.
pub(crate) fn run(args: &ReportArgs, console: &mut Console) -> anyhow::Result<Exit> {
    if let (ReportKind::Metrics(_), ReportFormat::Json | ReportFormat::Csv) = (&args.report, args.output_format) {
        anyhow::bail!("report metrics prints the Prometheus text format: --output-format does not apply to it");
    }
    // The output file is checked before any work: a device, FIFO or directory is refused.
    let output = match &args.report {
        ReportKind::Metrics(MetricsArgs { output: Some(path), .. }) => {
            Some(OutputFile::check("--output", "the metrics", path)?)
        }
        _ => None,
    };
    let project = args.project.load_with_backend(console)?;
    let store = open_gated(&project, 1)?;
    let now = args.at.unwrap_or_else(Utc::now);
    let (name, listing, mut extra, verdict) = match &args.report {
        ReportKind::Metrics(_) => {
            let text = datadiff_backend_store::metrics_exposition(&store.metrics_report(now)?, now);
            match &output {
                Some(file) => file.write(text.as_bytes())?,
                None => console.stdout().write_all(text.as_bytes()).context("writing to stdout")?,
            }
            return Ok(Exit::Success);
        }
        ReportKind::Watermarks(watermarks) => {
            let rows = store.watermark_report(now)?;
            let verdict = watermarks.max_lag.map(|max_lag| LagVerdict::judge(&rows, max_lag));
            ("watermarks", watermark_listing(&rows), json!({"at": timestamp::rfc3339(now)}), verdict)
        }
        ReportKind::Daily(_) => ("daily", daily_listing(&store)?, json!({}), None),
        ReportKind::Failures(_) => ("failures", failure_listing(&store)?, json!({}), None),
        ReportKind::Remediations(_) => ("remediations", remediation_listing(&store)?, json!({}), None),
        ReportKind::Run(report) => {
            let evidence = store.run_evidence(report.run_id)?;
            let listing = result_listing(&evidence.results);
            if args.output_format == ReportFormat::Table {
                let text = run_text(&evidence, &listing, console.stdout_width());
                console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
                return Ok(Exit::Success);
            }
            ("run", listing, run_json(&evidence), None)
        }
        ReportKind::Differences(differences) => {
            let listing = difference_listing(&store, differences.run_id)?;
            let found = row_diff_counts(&store, differences.run_id)?;
            let shown = listing.len();
            let mut extra = json!({"run_id": differences.run_id.to_string(), "shown": shown});
            if let Json::Object(extra) = &mut extra {
                extra.insert("found".to_owned(), found.map_or(Json::Null, |found| found.to_json()));
                extra.insert(
                    "truncated".to_owned(),
                    Json::Bool(found.is_some_and(|found| found.total() > shown as u64)),
                );
            }
            if args.output_format == ReportFormat::Table {
                let mut text = if listing.is_empty() {
                    "No rows\n".to_owned()
                } else {
                    listing.table_within(console.stdout_width())
                };
                text.push_str(&match found {
                    Some(found) => format!(
                        "{} differences found ({} missing, {} extra, {} changed); {shown} shown (max_examples)\n",
                        found.total(),
                        found.missing,
                        found.extra,
                        found.changed
                    ),
                    None => "The run has no row_diff result.\n".to_owned(),
                });
                console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
                return Ok(Exit::Success);
            }
            ("differences", listing, extra, None)
        }
    };
    let text = match args.output_format {
        ReportFormat::Json => {
            let mut document = json!({"report": name});
            if let (Json::Object(document), Json::Object(extra)) = (&mut document, &mut extra) {
                document.append(extra);
                document.insert("rows".to_owned(), Json::Array(listing.json_rows()));
                if let Some(verdict) = &verdict {
                    document.insert("max_lag".to_owned(), verdict_json(verdict));
                }
            }
            format!("{document:#}\n")
        }
        ReportFormat::Csv => listing.csv(),
        ReportFormat::Table => {
            let mut text =
                if listing.is_empty() { "No rows\n".to_owned() } else { listing.table_within(console.stdout_width()) };
            if let Some(verdict) = &verdict {
                text.push('\n');
                text.push_str(&verdict_text(verdict));
            }
            text
        }
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    if let (Some(verdict), ReportFormat::Csv) = (&verdict, args.output_format) {
        // CSV holds only rows: the verdict goes to stderr so scripts still see why.
        console.stderr().line(verdict_text(verdict).trim_end());
    }
    Ok(match verdict {
        Some(verdict) if !verdict.passed() => Exit::Failure,
        _ => Exit::Success,
    })
}

const WATERMARK_COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Revision", "revision"),
    column("Status", "verified_status"),
    column("Verified start", "verified_start"),
    column("Verified end", "verified_end"),
    column("Furthest observed end", "furthest_observed_end"),
    column("Lag", "verification_lag_seconds"),
    column("Blocking run ID", "blocking_run_id"),
    column("Reason", "reason"),
    field("check_id"),
    field("source_database"),
    field("source_schema"),
    field("source_table"),
    field("target_database"),
    field("target_schema"),
    field("target_table"),
    field("last_evaluated_run_id"),
    field("watermark_updated_at"),
    column("Oldest verification", "oldest_verification_age_seconds"),
    field("oldest_verification"),
];

fn watermark_listing(rows: &[datadiff_backend_store::WatermarkReportRow]) -> Listing {
    let mut listing = Listing::new(WATERMARK_COLUMNS);
    for row in rows {
        listing.push(vec![
            Cell::string(&row.full_check_name),
            Cell::int(Some(i64::from(row.revision))),
            Cell::string(row.verified_status.as_str()),
            Cell::time(row.verified_start),
            Cell::time(row.verified_end),
            Cell::time(row.furthest_observed_end),
            match row.verification_lag {
                Some(lag) => Cell::with_text(lag_text(lag), json!(seconds(lag))),
                None => Cell::int(None),
            },
            Cell::text(row.blocking_run_id.map(|id| id.to_string())),
            Cell::text(row.reason.clone()),
            Cell::string(row.check_id.to_string()),
            Cell::string(&row.source_database),
            Cell::string(&row.source_schema),
            Cell::string(&row.source_table),
            Cell::string(&row.target_database),
            Cell::string(&row.target_schema),
            Cell::string(&row.target_table),
            Cell::text(row.last_evaluated_run_id.map(|id| id.to_string())),
            Cell::time(row.watermark_updated_at),
            match row.oldest_verification_age {
                Some(age) => Cell::with_text(lag_text(age), json!(seconds(age))),
                None => Cell::int(None),
            },
            Cell::time(row.oldest_verification),
        ]);
    }
    listing
}

const DAILY_COLUMNS: &[Column] = &[
    column("Date", "check_date"),
    column("Check", "full_check_name"),
    column("Successful results", "successful_check_results"),
    column("Failed results", "failed_check_results"),
    column("Run-level errors", "run_level_errors"),
    field("source_database"),
    field("source_schema"),
    field("source_table"),
    field("target_database"),
    field("target_schema"),
    field("target_table"),
];

fn daily_listing(store: &Store) -> anyhow::Result<Listing> {
    let mut listing = Listing::new(DAILY_COLUMNS);
    for row in store.daily_report()? {
        listing.push(vec![
            Cell::string(row.check_date.format("%Y-%m-%d").to_string()),
            Cell::string(&row.full_check_name),
            Cell::int(Some(row.successful_check_results)),
            Cell::int(Some(row.failed_check_results)),
            Cell::int(Some(row.run_level_errors)),
            Cell::string(&row.source_database),
            Cell::string(&row.source_schema),
            Cell::string(&row.source_table),
            Cell::string(&row.target_database),
            Cell::string(&row.target_schema),
            Cell::string(&row.target_table),
        ]);
    }
    Ok(listing)
}

const FAILURE_COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Revision", "revision"),
    column("Slot", "scheduled_for"),
    column("UTC start", "window_start"),
    column("UTC end", "window_end"),
    column("Run ID", "run_id"),
    column("Attempt", "attempt"),
    column("Trigger", "trigger_type"),
    column("Failed check", "failed_check"),
    column("Status", "failure_status"),
    column("Blocks watermark", "blocks_watermark"),
    column("Finished", "finished_at"),
    column("Error", "error"),
    field("source_schema"),
    field("source_table"),
];

fn failure_listing(store: &Store) -> anyhow::Result<Listing> {
    let mut listing = Listing::new(FAILURE_COLUMNS);
    for row in store.failure_report()? {
        listing.push(vec![
            Cell::string(&row.full_check_name),
            Cell::int(Some(i64::from(row.revision))),
            Cell::time(Some(row.scheduled_for)),
            Cell::time(row.window_start),
            Cell::time(Some(row.window_end)),
            Cell::string(row.run_id.to_string()),
            Cell::int(Some(i64::from(row.attempt))),
            Cell::string(row.trigger_type.as_str()),
            Cell::string(&row.failed_check),
            Cell::string(row.failure_status.as_str()),
            Cell::flag(row.blocks_watermark),
            Cell::time(row.finished_at),
            Cell::text(row.error.clone()),
            Cell::string(&row.source_schema),
            Cell::string(&row.source_table),
        ]);
    }
    Ok(listing)
}

const REMEDIATION_COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Revision", "revision"),
    column("Failed run ID", "failed_run_id"),
    column("Failed status", "failed_status"),
    column("UTC start", "window_start"),
    column("UTC end", "window_end"),
    column("Failed at", "failed_at"),
    column("Remediation run ID", "remediation_run_id"),
    column("Attempt", "remediation_attempt"),
    column("Remediation status", "remediation_status"),
    column("Remediation reference", "remediation_reference"),
    column("Remediation finished", "remediation_finished_at"),
    column("Recovered", "recovered"),
];

fn remediation_listing(store: &Store) -> anyhow::Result<Listing> {
    let mut listing = Listing::new(REMEDIATION_COLUMNS);
    for row in store.remediation_report()? {
        listing.push(vec![
            Cell::string(&row.full_check_name),
            Cell::int(Some(i64::from(row.revision))),
            Cell::string(row.failed_run_id.to_string()),
            Cell::string(row.failed_status.as_str()),
            Cell::time(row.window_start),
            Cell::time(Some(row.window_end)),
            Cell::time(row.failed_at),
            Cell::text(row.remediation_run_id.map(|id| id.to_string())),
            Cell::int(row.remediation_attempt.map(i64::from)),
            Cell::text(row.remediation_status.map(|status| status.as_str())),
            Cell::text(row.remediation_reference.clone()),
            Cell::time(row.remediation_finished_at),
            Cell::flag(row.recovered),
        ]);
    }
    Ok(listing)
}

const DIFFERENCE_COLUMNS: &[Column] = &[
    column("Check type", "check_type"),
    column("#", "ordinal"),
    column("Kind", "kind"),
    column("Key", "key"),
    column("Fields", "fields"),
];

/// The counts a run's `row_diff` result recorded (its target value), when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FoundDifferences {
    missing: u64,
    extra: u64,
    changed: u64,
}

impl FoundDifferences {
    fn total(self) -> u64 {
        self.missing + self.extra + self.changed
    }

    fn to_json(self) -> Json {
        json!({"missing": self.missing, "extra": self.extra, "changed": self.changed, "total": self.total()})
    }
}

fn row_diff_counts(store: &Store, run_id: RunId) -> anyhow::Result<Option<FoundDifferences>> {
    let results = store.run_results(run_id)?;
    let Some(result) = results.iter().find(|result| result.check_type == ResultType::RowDiff) else {
        return Ok(None);
    };
    let count = |name: &str| result.target_value.get(name).and_then(Json::as_str).and_then(|text| text.parse().ok());
    Ok(match (count("missing"), count("extra"), count("changed")) {
        (Some(missing), Some(extra), Some(changed)) => Some(FoundDifferences { missing, extra, changed }),
        // An ERROR row_diff records no counts.
        _ => None,
    })
}

fn difference_listing(store: &Store, run_id: RunId) -> anyhow::Result<Listing> {
    let mut listing = Listing::new(DIFFERENCE_COLUMNS);
    for difference in store.run_differences(run_id)? {
        listing.push(vec![
            Cell::string(difference.check_type.as_str()),
            Cell::int(Some(i64::from(difference.ordinal))),
            Cell::string(difference.kind.as_str()),
            Cell::json(difference.key.clone()),
            Cell::names(&difference.fields),
        ]);
    }
    Ok(listing)
}

const RESULT_COLUMNS: &[Column] = &[
    column("Check type", "check_type"),
    column("Status", "status"),
    column("Source value", "source_value"),
    column("Target value", "target_value"),
    column("Source seconds", "source_query_seconds"),
    column("Target seconds", "target_query_seconds"),
    column("Error", "error"),
];

/// A run's results: one row per stored check result, both values as stored.
fn result_listing(results: &[CheckResult]) -> Listing {
    let seconds = |value: Option<f64>| match value {
        Some(value) => Cell::with_text(format!("{value:.3}"), json!(value)),
        None => Cell::text(None::<String>),
    };
    let mut listing = Listing::new(RESULT_COLUMNS);
    for result in results {
        listing.push(vec![
            Cell::string(result.check_type.as_str()),
            Cell::string(result.status.as_str()),
            value_cell(&result.source_value),
            value_cell(&result.target_value),
            seconds(result.source_query_seconds),
            seconds(result.target_query_seconds),
            Cell::text(result.error.clone()),
        ]);
    }
    listing
}

/// A result value: as JSON holds it, and in tables compact JSON — except a
/// `schema_compatibility` value (its `columns` array of type descriptions), which tables
/// show as `<n> columns` (JSON has them all).
fn value_cell(value: &Json) -> Cell {
    match value.get("columns").and_then(Json::as_array) {
        Some(columns) => Cell::with_text(format!("{} columns", columns.len()), value.clone()),
        None => Cell::json(value.clone()),
    }
}

/// The totals a `row_diff` result stored (its values' count strings), with the matched rows
/// worked out from them: the source rows that are neither missing nor changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RowDiffTotals {
    source_rows: u64,
    target_rows: u64,
    missing: u64,
    extra: u64,
    changed: u64,
}

impl RowDiffTotals {
    /// The totals of the `row_diff` result among `results`; `None` without one, or for an
    /// ERROR one (it stores no counts).
    fn of(results: &[CheckResult]) -> Option<RowDiffTotals> {
        let result = results.iter().find(|result| result.check_type == ResultType::RowDiff)?;
        let count =
            |value: &Json, name: &str| value.get(name).and_then(Json::as_str).and_then(|text| text.parse().ok());
        Some(RowDiffTotals {
            source_rows: count(&result.source_value, "rows")?,
            target_rows: count(&result.target_value, "rows")?,
            missing: count(&result.target_value, "missing")?,
            extra: count(&result.target_value, "extra")?,
            changed: count(&result.target_value, "changed")?,
        })
    }

    /// Source rows found equal on the target; `None` when the stored counts disagree.
    fn matched(self) -> Option<u64> {
        self.source_rows.checked_sub(self.missing)?.checked_sub(self.changed)
    }

    fn to_json(self) -> Json {
        json!({
            "source_rows": self.source_rows,
            "target_rows": self.target_rows,
            "missing": self.missing,
            "extra": self.extra,
            "changed": self.changed,
            "matched": self.matched(),
        })
    }

    fn text(self) -> String {
        let matched = self.matched().map_or_else(|| "?".to_owned(), |matched| matched.to_string());
        format!(
            "{} missing, {} extra, {} changed, {matched} matched (source {} rows, target {} rows)",
            self.missing, self.extra, self.changed, self.source_rows, self.target_rows
        )
    }
}

/// `report run` as JSON (without its `rows`, the results, which the caller adds).
fn run_json(evidence: &RunEvidence) -> Json {
    let attempt = &evidence.attempt;
    let preflight = evidence.preflight.as_ref().map_or(Json::Null, |preflight| {
        json!({
            "preflight_id": preflight.preflight_id.to_string(),
            "status": preflight.status.as_str(),
            "checked_at": timestamp::json(Some(preflight.checked_at)),
            "query_fingerprint": preflight.query_fingerprint,
            "table_rows": preflight.table_rows,
            "row_limit": preflight.row_limit,
            "has_leading_index": preflight.has_leading_index,
            "findings": preflight.findings,
            "error": preflight.error,
        })
    });
    json!({
        "run_id": attempt.run_id.to_string(),
        "check_id": attempt.check_id.to_string(),
        "full_check_name": evidence.full_check_name,
        "revision": evidence.revision,
        "scheduled_for": timestamp::json(Some(attempt.scheduled_for)),
        "window_start": timestamp::json(attempt.bounds.start),
        "window_end": timestamp::json(Some(attempt.bounds.end)),
        "trigger_type": attempt.trigger.as_str(),
        "attempt": attempt.attempt,
        "status": attempt.status.as_str(),
        "error": attempt.error,
        "started_at": timestamp::json(Some(attempt.started_at)),
        "finished_at": timestamp::json(attempt.finished_at),
        "rerun_of_run_id": attempt.rerun_of_run_id.map(|id| id.to_string()),
        "remediation_reference": attempt.remediation_reference,
        "preflight": preflight,
        "row_diff": RowDiffTotals::of(&evidence.results).map_or(Json::Null, RowDiffTotals::to_json),
    })
}

/// `report run` as text: the attempt as `name  value` lines (long values wrapped to `width`),
/// the results table, and the `row_diff` totals with the command that lists the rows.
fn run_text(evidence: &RunEvidence, results: &Listing, width: Option<usize>) -> String {
    const LABEL: usize = 18;
    let attempt = &evidence.attempt;
    let mut text = String::new();
    let mut field = |label: &str, value: String| {
        let lines = match width {
            Some(width) => wrap(&value.replace(['\n', '\r'], " "), width.saturating_sub(LABEL).max(MIN_WRAPPED_WIDTH)),
            None => vec![value.replace(['\n', '\r'], " ")],
        };
        for (at, line) in lines.iter().enumerate() {
            let label = if at == 0 { label } else { "" };
            text.push_str(format!("{label:<LABEL$}{line}").trim_end());
            text.push('\n');
        }
    };
    field("Run ID", attempt.run_id.to_string());
    field("Check", format!("{} (revision {})", evidence.full_check_name, evidence.revision));
    field(
        "Window",
        format!(
            "{} .. {} (end exclusive)",
            window_start(attempt.bounds.start),
            timestamp::table(Some(attempt.bounds.end))
        ),
    );
    field("Slot", timestamp::table(Some(attempt.scheduled_for)));
    field("Trigger", attempt.trigger.as_str().to_owned());
    field("Attempt", attempt.attempt.to_string());
    field("Status", attempt.status.as_str().to_owned());
    field("Error", attempt.error.clone().unwrap_or_default());
    field("Started", timestamp::table(Some(attempt.started_at)));
    field("Finished", timestamp::table(attempt.finished_at));
    if let Some(original) = attempt.rerun_of_run_id {
        field("Remediation of", original.to_string());
        field("Reference", attempt.remediation_reference.clone().unwrap_or_default());
    }
    match &evidence.preflight {
        None => field("Preflight", "none recorded".to_owned()),
        Some(preflight) => {
            let mut parts = vec![preflight.status.as_str().to_owned()];
            if let Some(rows) = preflight.table_rows {
                parts.push(match preflight.row_limit {
                    Some(limit) => format!("rows {rows} (counted up to {limit})"),
                    None => format!("rows {rows}"),
                });
            }
            if let Some(leading) = preflight.has_leading_index {
                parts.push(format!("leading index {}", if leading { "yes" } else { "no" }));
            }
            field("Preflight", parts.join(", "));
            field("Fingerprint", preflight.query_fingerprint.clone());
            if let Some(error) = &preflight.error {
                field("Preflight error", error.clone());
            }
            for finding in &preflight.findings {
                field("Finding", finding.clone());
            }
        }
    }
    text.push('\n');
    if results.is_empty() {
        text.push_str("No results\n");
    } else {
        text.push_str(&results.table_within(width));
    }
    if let Some(totals) = RowDiffTotals::of(&evidence.results) {
        text.push('\n');
        let mut lines = vec![format!("row_diff: {}", totals.text())];
        if totals.missing + totals.extra + totals.changed > 0 {
            lines.push(format!("The rows: {}", crate::summary::differences_command(attempt.run_id)));
        }
        for line in lines {
            for part in width.map_or_else(|| vec![line.clone()], |width| wrap(&line, width)) {
                text.push_str(&part);
                text.push('\n');
            }
        }
    }
    text
}

/// A window start in tables; `unresolved (initial scan)` while a historical first run has not
/// resolved it.
fn window_start(start: Option<DateTime<Utc>>) -> String {
    match start {
        Some(start) => timestamp::table(Some(start)),
        None => "unresolved (initial scan)".to_owned(),
    }
}

/// Whole and fractional seconds of a lag (JSON's `verification_lag_seconds`).
fn seconds(lag: TimeDelta) -> f64 {
    lag.num_microseconds().map_or(lag.num_seconds() as f64, |micros| micros as f64 / 1e6)
}

/// A lag as PostgreSQL prints an interval: `[-][N day(s) ]HH:MM:SS[.ffffff]`.
pub(crate) fn lag_text(lag: TimeDelta) -> String {
    let negative = lag < TimeDelta::zero();
    let lag = lag.abs();
    let total = lag.num_seconds();
    let micros = lag.subsec_nanos() / 1_000;
    let (days, rest) = (total / 86_400, total % 86_400);
    let mut text = String::new();
    if negative {
        text.push('-');
    }
    if days > 0 {
        text.push_str(&format!("{days} day{} ", if days == 1 { "" } else { "s" }));
    }
    text.push_str(&format!("{:02}:{:02}:{:02}", rest / 3_600, rest / 60 % 60, rest % 60));
    if micros > 0 {
        text.push_str(&format!(".{micros:06}"));
    }
    text
}

fn verdict_json(verdict: &LagVerdict) -> Json {
    let offenders: Vec<Json> = verdict
        .offenders
        .iter()
        .map(|offender| {
            let lag = match offender.problem {
                LagProblem::Lagging { lag } => json!(seconds(lag)),
                _ => Json::Null,
            };
            json!({
                "check_id": offender.check_id.to_string(),
                "full_check_name": offender.full_check_name,
                "problem": offender.problem.as_str(),
                "lag_seconds": lag,
            })
        })
        .collect();
    json!({
        "max_lag_seconds": seconds(verdict.max_lag),
        "passed": verdict.passed(),
        "offenders": offenders,
    })
}

fn verdict_text(verdict: &LagVerdict) -> String {
    let limit = lag_text(verdict.max_lag);
    if verdict.passed() {
        return format!("max lag {limit}: every current check is CONTIGUOUS within it\n");
    }
    let mut text = format!("max lag {limit}: {} check(s) fail\n", verdict.offenders.len());
    for offender in &verdict.offenders {
        let why = match offender.problem {
            LagProblem::Lagging { lag } => format!("LAGGING by {}", lag_text(lag)),
            other => other.as_str().to_owned(),
        };
        text.push_str(&format!("  {} {why}\n", offender.full_check_name));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lags_print_as_postgresql_intervals() {
        assert_eq!(lag_text(TimeDelta::minutes(47)), "00:47:00");
        assert_eq!(lag_text(TimeDelta::hours(26)), "1 day 02:00:00");
        assert_eq!(lag_text(TimeDelta::days(3)), "3 days 00:00:00");
        assert_eq!(lag_text(-TimeDelta::minutes(5)), "-00:05:00");
        assert_eq!(lag_text(TimeDelta::milliseconds(1_500)), "00:00:01.500000");
        assert_eq!(seconds(TimeDelta::milliseconds(1_500)), 1.5);
    }

    #[test]
    fn a_run_reads_as_name_value_lines_wrapped_to_the_terminal_then_its_results() {
        use chrono::TimeZone;
        use datadiff_backend_store::Attempt;
        use datadiff_diff_core::attempt::{Bounds, CheckId, RowDiffCounts, RunStatus, TriggerType};

        let at = |hour, minute| Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap();
        let counts = RowDiffCounts { source_rows: 10, target_rows: 9, missing: 2, extra: 1, changed: 3 };
        let error = "row_diff FAIL: 2 missing, 1 extra, 3 changed";
        let evidence = RunEvidence {
            attempt: Attempt {
                run_id: RunId::new(uuid::Uuid::from_u128(0x12)),
                check_id: CheckId::new(uuid::Uuid::from_u128(1)),
                scheduled_for: at(13, 0),
                bounds: Bounds { start: None, end: at(13, 0) },
                attempt: 2,
                trigger: TriggerType::Remediation,
                status: RunStatus::Fail,
                rerun_of_run_id: Some(RunId::new(uuid::Uuid::from_u128(0x11))),
                remediation_reference: Some("INC-9".into()),
                preflight_id: None,
                started_at: at(13, 30),
                finished_at: Some(at(13, 31)),
                error: Some(error.into()),
            },
            full_check_name: "pg/pay/public/t".into(),
            revision: 3,
            preflight: None,
            results: vec![CheckResult::row_diff(counts, Some(1.5), Some(0.25), None)],
        };
        let listing = result_listing(&evidence.results);
        let text = run_text(&evidence, &listing, None);
        for line in [
            "Run ID            00000000-0000-0000-0000-000000000012",
            "Check             pg/pay/public/t (revision 3)",
            "Window            unresolved (initial scan) .. 2026-07-22T13:00:00+00:00 (end exclusive)",
            "Trigger           REMEDIATION",
            "Attempt           2",
            "Error             row_diff FAIL: 2 missing, 1 extra, 3 changed",
            "Remediation of    00000000-0000-0000-0000-000000000011",
            "Reference         INC-9",
            "Preflight         none recorded",
            "row_diff: 2 missing, 1 extra, 3 changed, 5 matched (source 10 rows, target 9 rows)",
            "The rows: datadiff report differences --run-id 00000000-0000-0000-0000-000000000012",
        ] {
            assert!(text.lines().any(|candidate| candidate == line), "{line:?} missing from:\n{text}");
        }
        let row = text.lines().find(|line| line.starts_with("row_diff  ")).unwrap_or_default();
        assert!(row.contains("1.500") && row.contains("0.250") && row.ends_with(error), "{row}");

        // On a 40-column terminal the error wraps under its value column (22 characters).
        let narrow = run_text(&evidence, &listing, Some(40));
        let lines: Vec<&str> = narrow.lines().collect();
        let at_error = lines.iter().position(|line| line.starts_with("Error ")).unwrap();
        assert_eq!(lines[at_error], "Error             row_diff FAIL: 2");
        assert_eq!(lines[at_error + 1], format!("{}missing, 1 extra, 3", " ".repeat(18)));
        assert_eq!(lines[at_error + 2], format!("{}changed", " ".repeat(18)));
        // Only a value that is one word longer than the room (the run id) overflows: whole.
        assert!(
            lines[..at_error + 3].iter().all(|line| line.chars().count() <= 40 || !line[18..].contains(' ')),
            "{narrow}"
        );
        assert!(lines.contains(&"Run ID            00000000-0000-0000-0000-000000000012"), "{narrow}");

        // JSON: the totals with the matched rows, the attempt's fields.
        let json = run_json(&evidence);
        assert_eq!(
            json["row_diff"],
            json!({"source_rows": 10, "target_rows": 9, "missing": 2, "extra": 1, "changed": 3, "matched": 5})
        );
        assert_eq!((json["window_start"].clone(), json["preflight"].clone()), (Json::Null, Json::Null));
        assert_eq!(json["rerun_of_run_id"], "00000000-0000-0000-0000-000000000011");
    }

    #[test]
    fn max_lag_takes_the_yaml_duration_grammar() {
        assert_eq!(parse_max_lag("1d6h"), Ok(TimeDelta::hours(30)));
        assert!(parse_max_lag("1hour").unwrap_err().contains("Supported units"));
        assert!(parse_max_lag("0s").is_err());
    }
}
