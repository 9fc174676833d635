//! `datadiff report`: the four reporting queries of PipelineWise's backend page, a run's
//! `row_diff` evidence, and the `--max-lag` monitoring verdict (SPEC §8).

use anyhow::Context;
use chrono::{DateTime, TimeDelta, Utc};
use clap::{Args, Subcommand};
use datadiff_backend_store::{LagProblem, LagVerdict, Store};
use datadiff_diff_core::RunId;
use serde_json::{Value as Json, json};

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, ReportFormat, column, field};
use crate::project::{ProjectArgs, open_gated};
use crate::timestamp;

/// Print a report from the backend: watermarks, daily results, unresolved failures,
/// remediations, or a run's row differences.
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
    Watermarks(WatermarksArgs),
    /// PASS and FAIL/ERROR result counts per table per UTC day (every revision and trigger).
    Daily(PlainArgs),
    /// Unresolved failed or errored slots of current definitions.
    Failures(PlainArgs),
    /// Failed runs and their remediation attempts.
    Remediations(PlainArgs),
    /// The row differences (keys and column names) a run's row_diff recorded.
    Differences(DifferencesArgs),
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

impl ReportArgs {
    /// `-v` given after the command name or the report's name.
    pub(crate) fn verbosity(&self) -> u8 {
        let inner = match &self.report {
            ReportKind::Watermarks(args) => args.verbosity.count(),
            ReportKind::Daily(args) | ReportKind::Failures(args) | ReportKind::Remediations(args) => {
                args.verbosity.count()
            }
            ReportKind::Differences(args) => args.verbosity.count(),
        };
        self.verbosity.count().saturating_add(inner)
    }
}

fn parse_max_lag(text: &str) -> Result<TimeDelta, String> {
    let duration = datadiff_diff_core::Duration::parse(text).map_err(|error| error.to_string())?;
    TimeDelta::try_seconds(duration.seconds()).ok_or_else(|| format!("Duration '{text}' is too large"))
}

/// Reads the report and prints it.
pub(crate) fn run(args: &ReportArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load(console)?;
    let store = open_gated(&project, 1)?;
    let now = args.at.unwrap_or_else(Utc::now);
    let (name, listing, mut extra, verdict) = match &args.report {
        ReportKind::Watermarks(watermarks) => {
            let rows = store.watermark_report(now)?;
            let verdict = watermarks.max_lag.map(|max_lag| LagVerdict::judge(&rows, max_lag));
            ("watermarks", watermark_listing(&rows), json!({"at": timestamp::rfc3339(now)}), verdict)
        }
        ReportKind::Daily(_) => ("daily", daily_listing(&store)?, json!({}), None),
        ReportKind::Failures(_) => ("failures", failure_listing(&store)?, json!({}), None),
        ReportKind::Remediations(_) => ("remediations", remediation_listing(&store)?, json!({}), None),
        ReportKind::Differences(differences) => (
            "differences",
            difference_listing(&store, differences.run_id)?,
            json!({"run_id": differences.run_id.to_string()}),
            None,
        ),
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
            let mut text = if listing.is_empty() { "No rows\n".to_owned() } else { listing.table() };
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
    fn max_lag_takes_the_yaml_duration_grammar() {
        assert_eq!(parse_max_lag("1d6h"), Ok(TimeDelta::hours(30)));
        assert!(parse_max_lag("1hour").unwrap_err().contains("Supported units"));
        assert!(parse_max_lag("0s").is_err());
    }
}
