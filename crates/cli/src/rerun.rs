//! `datadiff rerun_data_diff_check`: remediate a failed run (runs note §2.2).
//!
//! A REMEDIATION attempt of the run's exact definition revision and window, linked to the
//! root original run, with the operator's reference. As upstream, pending source-index
//! warnings go out before the table and a FAIL or ERROR remediation is alerted after it.
//! Exit codes: 0 PASS, DEFERRED, or SKIPPED after a lost lease (as upstream); 1 FAIL or
//! ERROR, a failure alert no destination accepted, or the slot has a RUNNING
//! attempt (upstream's `A data-diff attempt for this window is already running`: try again
//! later); 2 an unknown run, a run that is not FAIL or ERROR, an empty reference (upstream
//! raises a traceback or exits 1 there).

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use datadiff_alerts::Dispatcher;
use datadiff_diff_core::attempt::{RemediationRefusal, RunId};
use datadiff_runner::{Clock, Connections, ProgressMeter, TickContext, remediate};
use serde_json::json;

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::OutputFormat;
use crate::logging::{Invocation, Tally, log_checks};
use crate::progress::TickProgress;
use crate::project::{ProjectArgs, open_gated, unwrap_backend};
use crate::{summary, timestamp};

/// Remediate a FAIL or ERROR run: run its window again as a new REMEDIATION attempt linked to
/// it. Exits 1 when the remediation fails or errors.
#[derive(Debug, Args)]
pub(crate) struct RerunArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// The failed run (its Run ID in the run table).
    #[arg(long, value_name = "ID", value_parser = parse_run_id)]
    run_id: RunId,
    /// The repair or incident reference recorded with the remediation.
    #[arg(long, value_name = "REF")]
    remediation_ref: String,
    /// Record times as if now were this time (RFC 3339 with Z or an offset).
    #[arg(long, value_name = "TIME", value_parser = timestamp::parse_recording_at)]
    at: Option<DateTime<Utc>>,
    /// How the rerun table is printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl RerunArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// Parses a run id (a UUID, as the tables print it).
pub(crate) fn parse_run_id(text: &str) -> Result<RunId, String> {
    uuid::Uuid::parse_str(text.trim()).map(RunId::new).map_err(|_| "not a run id (a UUID)".to_owned())
}

/// Remediates and prints the rerun table.
pub(crate) fn run(args: &RerunArgs, console: &mut Console) -> anyhow::Result<Exit> {
    if args.remediation_ref.trim().is_empty() {
        anyhow::bail!(RemediationRefusal::MissingReference);
    }
    let project = args.project.load_with_backend(console)?;
    let store = open_gated(&project, 1)?;
    store.gate_for_remediation(&project.dir, args.run_id)?;
    let connections = Connections::from_project(&project);
    connections.check_services().map_err(anyhow::Error::msg)?;
    let invocation = Invocation::start("rerun_data_diff_check", &format!("run_id={}", args.run_id));
    let clock = match args.at {
        Some(at) => Clock::at(at),
        None => Clock::System,
    };
    let terminal = console.stderr_is_terminal();
    let meter = ProgressMeter::new();
    let mut context = TickContext::new(store, connections).with_clock(clock).with_signal_handling(true);
    if terminal {
        context = context.with_progress(meter.clone());
    }
    let progress = TickProgress::start(terminal, "re-running the data-diff check", meter);
    let remediated = remediate(&context, args.run_id, &args.remediation_ref);
    progress.finish();
    let report = match remediated {
        Ok(report) => report,
        Err(error) if slot_running(&error) => {
            invocation.finish(Tally::default(), Exit::Failure);
            console.stderr().line(&format!("error: {}: try again when it has finished", unwrap_backend(error)));
            return Ok(Exit::Failure);
        }
        Err(error) => return Err(unwrap_backend(error)),
    };

    // Pending source-index warnings go out after a remediation too (SPEC §7), best effort.
    let summaries = [report.summary];
    log_checks(&summaries);
    let dispatcher = Dispatcher::from_project(&project, console.environment());
    let now = context.clock().now(); // `--at`, or the time now
    crate::run::log_warnings(&dispatcher.send_index_warnings(context.store(), &summaries, now));
    let listing = summary::rerun_listing(&summaries);
    let text = match args.output_format {
        OutputFormat::Json => format!("{:#}\n", json!({"summaries": listing.json_rows()})),
        OutputFormat::Table => listing.table_within(console.stdout_width()),
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    // Then a FAIL or ERROR remediation is alerted, as upstream; one no destination accepted
    // is one `error:` line and exit 1.
    let alerts = dispatcher.send_failure_alerts(&summaries, now);
    let undelivered = alerts.undelivered_line();
    if let Some(line) = &undelivered {
        console.stderr().line(&format!("error: {line}"));
    }
    let failed = summaries.iter().any(|summary| summary.status.is_failure())
        || report.interrupted.is_some()
        || undelivered.is_some();
    let exit = if failed { Exit::Failure } else { Exit::Success };
    invocation.finish(Tally::of(&summaries), exit);
    Ok(exit)
}

/// The refusal of a slot that has a RUNNING attempt.
fn slot_running(error: &datadiff_runner::Error) -> bool {
    matches!(
        error,
        datadiff_runner::Error::Backend {
            source: datadiff_backend_store::Error::Remediation(RemediationRefusal::SlotRunning),
            ..
        }
    )
}
