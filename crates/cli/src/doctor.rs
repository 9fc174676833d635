//! `datadiff doctor`: check that a project can run, without writing anything (SPEC §8).
//!
//! The checks are the runner's ([`datadiff_runner::doctor`], whose docs list them); this
//! module prints their findings as a table or JSON.
//!
//! Exit codes (the sources are silent; decided here): 0 when no finding FAILs (warnings
//! allowed), 1 when any does — a doctor reports what is wrong rather than stopping at it, so
//! an unreachable backend or source is a FAIL finding, not exit 2 — and 2 only when the
//! project itself cannot be loaded or the arguments are wrong.

use anyhow::Context;
use clap::Args;
use serde_json::json;

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, OutputFormat, column};
use crate::project::ProjectArgs;

/// Check the backend, every source and target connection, every definition's columns and
/// the source preflight verdicts — writing nothing. Exits 1 when a check fails.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// How the findings are printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl DoctorArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

const COLUMNS: &[Column] =
    &[column("Scope", "scope"), column("Check", "check"), column("Status", "status"), column("Detail", "detail")];

/// Runs every check and prints the findings.
pub(crate) fn run(args: &DoctorArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load(console)?;
    let report = datadiff_runner::doctor::check(&project, console.environment());

    let mut listing = Listing::new(COLUMNS);
    for finding in &report.findings {
        listing.push(vec![
            Cell::string(&finding.scope),
            Cell::string(finding.check),
            Cell::string(finding.verdict.as_str()),
            Cell::string(&finding.detail),
        ]);
    }
    let passed = report.passed();
    let text = match args.output_format {
        OutputFormat::Json => format!("{:#}\n", json!({"passed": passed, "findings": listing.json_rows()})),
        OutputFormat::Table => listing.table_within(console.stdout_width()),
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    Ok(if passed { Exit::Success } else { Exit::Failure })
}
