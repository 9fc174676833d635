//! `datadiff import_config`: the data-diff part of PipelineWise's import (SPEC §2).
//!
//! Validates the whole project, migrates the backend to the schema this datadiff needs, then
//! reconciles the definitions of the selected taps (created / unchanged / superseded /
//! deactivated) in one transaction. Nothing is written outside the backend and no discovery
//! runs. A tap named in `--taps` but missing from the YAML has its stored definitions
//! deactivated and makes the command exit 1, as upstream. Without `backend_db` the
//! definitions are validated, ignored with a warning, and the command exits 0 (`Initial
//! data-diff scans pending: not configured`).

use std::time::Instant;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use datadiff_backend_store::TapSelection;
use datadiff_runner::{ImportReport, import_definitions, missing_taps};

use crate::console::Console;
use crate::exit::Exit;
use crate::project::{ProjectArgs, open_backend, unwrap_backend};

/// Import the project's data-diff definitions into the backend database (migrating it first).
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// Only these taps (comma-separated ids); the other taps' definitions are left alone.
    /// A listed tap missing from the YAML has its definitions deactivated (exit 1).
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    taps: Option<Vec<String>>,
    /// Record the import at this time instead of now (RFC 3339 with Z or an offset).
    #[arg(long, value_name = "TIME", value_parser = crate::timestamp::parse_recording_at)]
    at: Option<DateTime<Utc>>,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl ImportArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// Validates, migrates and syncs (the runner's [`import_definitions`]), then prints upstream's
/// summary block.
pub(crate) fn run(args: &ImportArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let started = Instant::now();
    let project = args.project.load(console)?;
    let selection = match &args.taps {
        Some(taps) => TapSelection::named(taps),
        None => TapSelection::All,
    };
    for tap in missing_taps(&selection, &project) {
        console.stderr().line(&format!("error: Tap not found in project YAML: {tap}"));
    }
    let store = match &project.backend {
        None => None,
        Some(_) => Some(open_backend(&project, 1)?),
    };
    let now = args.at.unwrap_or_else(Utc::now);
    let report = import_definitions(&project, store.as_ref(), &selection, now).map_err(unwrap_backend)?;
    for step in &report.migration_steps {
        tracing::info!(%step, "backend migration applied");
    }
    let summary = summary(&report, started.elapsed());
    console.stdout().write_all(summary.as_bytes()).context("writing to stdout")?;
    Ok(if report.missing_taps.is_empty() { Exit::Success } else { Exit::Failure })
}

/// Upstream's `IMPORTING YAML CONFIGS FINISHED` block, with the lines that apply to the
/// data-diff part plus the sync's counts.
fn summary(report: &ImportReport, runtime: std::time::Duration) -> String {
    let rule = "-------------------------------------------------------";
    let mut lines = vec![
        rule.to_owned(),
        "IMPORTING YAML CONFIGS FINISHED".to_owned(),
        rule.to_owned(),
        format!("    Total targets to import        : {}", report.targets),
        format!("    Total taps to import           : {}", report.taps),
    ];
    if !report.missing_taps.is_empty() {
        lines.push(format!("    Taps not found in project YAML : {}", report.missing_taps.join(", ")));
    }
    match &report.sync {
        Some(sync) => {
            lines.push(format!("    Data-diff definitions created  : {}", sync.created));
            lines.push(format!("    Data-diff definitions unchanged: {}", sync.unchanged));
            lines.push(format!("    Data-diff definitions superseded: {}", sync.superseded));
            lines.push(format!("    Data-diff definitions deactivated: {}", sync.deactivated));
            for deactivation in &report.deactivations {
                lines.push(format!("      - {}: {}", deactivation.full_check_name, deactivation.reason));
            }
            if !sync.other_targets.is_empty() {
                let targets: Vec<&str> = sync.other_targets.iter().map(String::as_str).collect();
                lines.push(format!("    Left alone (targets of other projects): {}", targets.join(", ")));
            }
            lines.push(format!("    Initial data-diff scans pending: {}", sync.historical_scans_pending));
        }
        None => lines.push("    Initial data-diff scans pending: not configured".to_owned()),
    }
    lines.push(format!("    Runtime                        : {}", python_timedelta(runtime)));
    lines.push(rule.to_owned());
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// A duration as Python prints a `timedelta`: `0:00:01.234567`.
fn python_timedelta(duration: std::time::Duration) -> String {
    let seconds = duration.as_secs();
    let micros = duration.subsec_micros();
    let clock = format!("{}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    if micros == 0 { clock } else { format!("{clock}.{micros:06}") }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn runtime_is_printed_as_python_prints_a_timedelta() {
        assert_eq!(python_timedelta(Duration::from_micros(1_234_567)), "0:00:01.234567");
        assert_eq!(python_timedelta(Duration::from_secs(3_725)), "1:02:05");
    }

    #[test]
    fn the_summary_says_not_configured_without_a_backend() {
        let report = |sync, missing_taps| ImportReport {
            targets: 1,
            taps: 2,
            missing_taps,
            migration_steps: Vec::new(),
            sync,
            deactivations: Vec::new(),
        };
        let text = summary(&report(None, Vec::new()), Duration::from_secs(1));
        assert!(text.contains("IMPORTING YAML CONFIGS FINISHED"));
        assert!(text.contains("Total targets to import        : 1"));
        assert!(text.contains("Total taps to import           : 2"));
        assert!(text.contains("Initial data-diff scans pending: not configured"));
        assert!(!text.contains("created"));
        let sync = datadiff_backend_store::SyncReport {
            created: 3,
            unchanged: 1,
            superseded: 1,
            deactivated: 2,
            historical_scans_pending: 1,
            ..Default::default()
        };
        let text = summary(&report(Some(sync), vec!["gone".to_owned()]), Duration::from_secs(1));
        for line in [
            "Data-diff definitions created  : 3",
            "Data-diff definitions unchanged: 1",
            "Data-diff definitions superseded: 1",
            "Data-diff definitions deactivated: 2",
            "Initial data-diff scans pending: 1",
            "Taps not found in project YAML : gone",
        ] {
            assert!(text.contains(line), "{line} missing from {text}");
        }
    }
}
