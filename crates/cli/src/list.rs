//! `datadiff list_data_diff_checks`: the imported definitions with their watermarks.

use anyhow::Context;
use clap::Args;
use datadiff_backend_store::{CheckListing, DefinitionFilter};
use serde_json::json;

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, OutputFormat, column, field};
use crate::project::{ProjectArgs, open_gated};

/// List the imported data-diff checks (current revisions; --include-versioned adds superseded
/// and deactivated ones) with their verified watermark.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// Only this target's checks.
    #[arg(long, short = 't', value_name = "TARGET")]
    target: Option<String>,
    /// Only this tap's checks (needs --target).
    #[arg(long, short = 'p', value_name = "TAP", requires = "target")]
    tap: Option<String>,
    /// Superseded and deactivated revisions too.
    #[arg(long)]
    include_versioned: bool,
    /// How the list is printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl ListArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// The columns of the list: the table shows what an operator scans for, JSON carries the
/// whole definition and watermark — every key of PipelineWise's list rows (the definition's
/// columns, `canonical_config`, the watermark's `verified_start`, `verified_end`,
/// `furthest_observed_end`, `verified_status`, `blocking_run_id`, `verified_at` (the state's
/// `updated_at`), `last_evaluated_run_id` and `coverage_reason`, `null` before the first
/// evaluation, and `historical_scan_pending`), with times in RFC 3339, plus datadiff's own
/// (`window`, `extensions`, `watermark_reason`, the same text as `coverage_reason`).
const COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Revision", "revision"),
    column("Current", "is_current"),
    column("Frequency", "frequency"),
    column("Window", "window"),
    column("Checks", "checks"),
    column("Full scan", "initial_full_scan"),
    column("Initial scan pending", "historical_scan_pending"),
    column("Verified status", "verified_status"),
    column("Verified start", "verified_start"),
    column("Verified end", "verified_end"),
    column("Check ID", "check_id"),
    field("target_id"),
    field("tap_id"),
    field("source_type"),
    field("target_type"),
    field("source_database"),
    field("source_schema"),
    field("source_table"),
    field("target_database"),
    field("target_schema"),
    field("target_table"),
    field("source_key_column"),
    field("target_key_column"),
    field("source_timestamp_column"),
    field("target_timestamp_column"),
    field("source_compare_columns"),
    field("target_compare_columns"),
    field("window_start_seconds"),
    field("window_end_seconds"),
    field("statement_timeout_seconds"),
    field("extensions"),
    field("furthest_observed_end"),
    field("blocking_run_id"),
    field("last_evaluated_run_id"),
    field("watermark_reason"),
    field("coverage_reason"),
    field("verified_at"),
    field("config_hash"),
    field("canonical_config"),
    field("created_at"),
    field("superseded_at"),
];

/// Reads the listings and prints them.
pub(crate) fn run(args: &ListArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load_with_backend(console)?;
    let store = open_gated(&project, 1)?;
    let filter = DefinitionFilter {
        target: args.target.clone(),
        tap: args.tap.clone(),
        check: None,
        include_versioned: args.include_versioned,
        taps: None,
    };
    let listings = store.list_checks(&filter)?;
    let mut listing = Listing::new(COLUMNS);
    for check in &listings {
        listing.push(row(check));
    }
    let text = match args.output_format {
        // PipelineWise prints a bare list of the rows: scripts written against it keep working.
        OutputFormat::Json => format!("{:#}\n", serde_json::Value::Array(listing.json_rows())),
        OutputFormat::Table if listing.is_empty() => "No data-diff checks found\n".to_owned(),
        OutputFormat::Table => listing.table_within(console.stdout_width()),
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    Ok(Exit::Success)
}

fn row(check: &CheckListing) -> Vec<Cell> {
    let stored = &check.definition;
    let definition = &stored.definition;
    let watermark = check.watermark.as_ref();
    let coverage = watermark.map(|state| &state.coverage);
    let end = match definition.window_end_seconds {
        0 => "0s".to_owned(),
        seconds => format!("-{}", duration_text(seconds)),
    };
    let window = format!("-{} .. {end}", duration_text(definition.window_start_seconds));
    let checks: Vec<&str> = definition.checks.iter().map(|check| check.as_str()).collect();
    let extensions = definition.canonical_config().get("datadiff").cloned().unwrap_or(serde_json::Value::Null);
    vec![
        Cell::string(&definition.full_check_name),
        Cell::int(Some(i64::from(stored.revision))),
        Cell::flag(stored.is_current),
        Cell::string(&definition.frequency),
        Cell::with_text(
            window,
            json!({"start_seconds": definition.window_start_seconds, "end_seconds": definition.window_end_seconds}),
        ),
        Cell::names(&checks),
        Cell::flag(definition.initial_full_scan),
        Cell::flag(check.historical_scan_pending),
        // Upstream's JSON has `null` before the first evaluation; the table says NOT_RUN.
        Cell::with_text(
            coverage.map_or("NOT_RUN", |coverage| coverage.status.as_str()),
            serde_json::Value::from(coverage.map(|coverage| coverage.status.as_str())),
        ),
        Cell::time(coverage.and_then(|coverage| coverage.verified_start())),
        Cell::time(coverage.and_then(|coverage| coverage.verified_end())),
        Cell::string(stored.check_id.to_string()),
        Cell::string(&definition.target_id),
        Cell::string(&definition.tap_id),
        Cell::string(definition.source_type.as_str()),
        Cell::string(definition.target_type.as_str()),
        Cell::string(&definition.source_database),
        Cell::string(&definition.source_schema),
        Cell::string(&definition.source_table),
        Cell::string(&definition.target_database),
        Cell::string(&definition.target_schema),
        Cell::string(&definition.target_table),
        Cell::string(&definition.source_key_column),
        Cell::string(&definition.target_key_column),
        Cell::string(&definition.source_timestamp_column),
        Cell::string(&definition.target_timestamp_column),
        Cell::names(&definition.source_compare_columns),
        Cell::names(&definition.target_compare_columns),
        Cell::int(Some(definition.window_start_seconds)),
        Cell::int(Some(definition.window_end_seconds)),
        Cell::int(Some(definition.statement_timeout_seconds)),
        Cell::json(extensions),
        Cell::time(coverage.map(|coverage| coverage.furthest_observed_end)),
        Cell::text(coverage.and_then(|coverage| coverage.blocking_run_id).map(|id| id.to_string())),
        Cell::text(watermark.map(|state| state.last_evaluated_run_id.to_string())),
        Cell::text(coverage.map(|coverage| coverage.reason.clone())),
        Cell::text(coverage.map(|coverage| coverage.reason.clone())),
        Cell::time(watermark.map(|state| state.updated_at)),
        Cell::string(&stored.config_hash),
        Cell::json(definition.canonical_config()),
        Cell::time(Some(stored.created_at)),
        Cell::time(stored.superseded_at),
    ]
}

/// Seconds in the duration grammar of the YAML (`1d6h`, `15min`, `0s`).
pub(crate) fn duration_text(seconds: i64) -> String {
    if seconds <= 0 {
        return "0s".to_owned();
    }
    let mut rest = seconds;
    let mut text = String::new();
    for (unit, size) in [("w", 604_800), ("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)] {
        if rest >= size {
            text.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_back_in_the_yaml_grammar() {
        for (seconds, text) in [(0, "0s"), (3_600, "1h"), (108_000, "1d6h"), (90, "1min30s"), (1_209_600, "2w")] {
            assert_eq!(duration_text(seconds), text);
            if seconds > 0 {
                assert_eq!(datadiff_diff_core::definition::Duration::parse(text).map(|d| d.seconds()), Ok(seconds));
            }
        }
    }
}
