//! `datadiff run_data_diff_checks`: one scheduler tick (SPEC §4, runs note §6).
//!
//! Order of work, as upstream: the tick (stale sweep, retries, due slots), the run table
//! (only when there are summaries), then alerts. Exit 1 when any summary is FAIL or ERROR
//! (including checks that failed before an attempt existed), 0 when everything passed, was
//! skipped or deferred. SIGTERM/SIGINT record every in-flight attempt ERROR, then the
//! process dies by the signal.

use std::num::NonZeroUsize;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use datadiff_alerts::{Dispatcher, WarningReport, WarningResult};
use datadiff_config::Project;
use datadiff_runner::{Clock, Connections, ProgressMeter, Selection, TickContext, changed_since_import, tick};
use serde_json::json;

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::OutputFormat;
use crate::logging::{Invocation, Tally, log_checks};
use crate::progress::TickProgress;
use crate::project::{ProjectArgs, open_gated, unwrap_backend};
use crate::{summary, timestamp};

/// Run the due data-diff checks: every current definition (--all) or one tap's
/// (--target T --tap P), optionally one check. Exits 1 when a check fails or errors.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// Every current definition (clears --target and --tap).
    #[arg(long)]
    all: bool,
    /// The target of the tap to run.
    #[arg(long, short = 't', value_name = "TARGET")]
    target: Option<String>,
    /// The tap to run (needs --target).
    #[arg(long, short = 'p', value_name = "TAP", requires = "target")]
    tap: Option<String>,
    /// Only this check: its full name (target/tap/schema/table) or its check_id.
    #[arg(long, value_name = "NAME|ID")]
    check: Option<String>,
    /// Start due slots even when already attempted (a MANUAL attempt reusing the newest
    /// attempt's window); retries are never forced.
    #[arg(long)]
    force: bool,
    /// Run as if now were this time: slots, retries, the stale sweep and every recorded time
    /// follow it (RFC 3339 with Z or an offset).
    #[arg(long, value_name = "TIME", value_parser = timestamp::parse_recording_at)]
    at: Option<DateTime<Utc>>,
    /// Work on N checks at a time (never two attempts of one check). With fewer checks to
    /// run than N, the jobs left over take parts of each row_diff window: N / checks
    /// threads per window, each comparing a key range on connections of its own.
    #[arg(long, value_name = "N", default_value = "1")]
    jobs: NonZeroUsize,
    /// Divide every row_diff window into N key ranges (1 to 4096), compared on the threads
    /// --jobs leaves over; the results and evidence are those of the undivided window.
    /// Default: as many ranges as threads (one range, the whole window, with --jobs 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=4096))]
    row_diff_parts: Option<u16>,
    /// How every row_diff of this run reads its rows, instead of each check's
    /// `row_diff: {strategy: …}`: `stream`, `segments` (hash key segments in both databases,
    /// stream only those that differ) or `auto`. The answer is the same.
    #[arg(long, value_name = "STRATEGY", value_parser = crate::audit::strategy)]
    strategy: Option<datadiff_diff_core::segment::Strategy>,
    /// How the run table is printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl RunArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }

    /// `--all`, or `--target T --tap P`; `--check` narrows either.
    fn selection(&self) -> anyhow::Result<Selection> {
        let selection = match (self.all, &self.target, &self.tap) {
            (true, _, _) => Selection::all(),
            (false, Some(target), Some(tap)) => Selection::tap(target, tap),
            (false, _, _) => anyhow::bail!("choose the checks to run: --all, or --target TARGET --tap TAP"),
        };
        Ok(match &self.check {
            Some(check) => selection.check(check),
            None => selection,
        })
    }
}

/// Runs one tick and prints its table.
pub(crate) fn run(args: &RunArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let selection = args.selection()?;
    let project = args.project.load_with_backend(console)?;
    // Only this project's definitions: a backend may be shared by several projects.
    let selection = selection.within(&project);
    let jobs = u32::try_from(args.jobs.get()).unwrap_or(u32::MAX);
    let store = open_gated(&project, jobs)?;
    store.gate_for_attempts(&project.dir)?;
    if let Some(problem) = selection.unknown_name(&project, &store).map_err(unwrap_backend)? {
        anyhow::bail!(problem);
    }
    warn_changed_definitions(&project, &store, &selection, console);
    warn_removed_taps(&project, &store, &selection, console);
    let connections = Connections::from_project(&project);
    connections.check_services().map_err(anyhow::Error::msg)?;

    // `--at` travels as the clock alone: the tick reads its `now` from it.
    let clock = match args.at {
        Some(at) => Clock::at(at),
        None => Clock::System,
    };
    let invocation = Invocation::start(
        "run_data_diff_checks",
        &format!("at={} jobs={}", timestamp::rfc3339(clock.now()), args.jobs),
    );
    let context = TickContext::new(store, connections)
        .with_selection(selection)
        .with_force(args.force)
        .with_reverify(project.reverify.clone())
        .with_horizon(project.horizon.clone())
        .with_jobs(args.jobs)
        .with_clock(clock)
        .with_row_diff_strategy(args.strategy)
        .with_row_diff_parts(args.row_diff_parts.map_or(0, usize::from))
        .with_signal_handling(true);
    let meter = ProgressMeter::new();
    let context = if console.stderr_is_terminal() { context.with_progress(meter.clone()) } else { context };
    let progress = TickProgress::start(console.stderr_is_terminal(), "running data-diff checks", meter);
    let report = tick(&context);
    progress.finish();
    let report = report.map_err(unwrap_backend)?;
    let now = report.now;
    log_checks(&report.summaries);

    // Upstream's order: index warnings (best effort), the table, failure alerts.
    let dispatcher = Dispatcher::from_project(&project, console.environment());
    log_warnings(&dispatcher.send_index_warnings(context.store(), &report.summaries, now));

    let listing = summary::run_listing(&report.summaries);
    let text = match args.output_format {
        OutputFormat::Json => {
            format!("{:#}\n", json!({"at": timestamp::rfc3339(now), "summaries": listing.json_rows()}))
        }
        OutputFormat::Table if listing.is_empty() => String::new(),
        OutputFormat::Table => listing.table_within(console.stdout_width()),
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    if listing.is_empty() {
        console.stderr().line("warning: no current data-diff check matches the selection");
    }
    let alerts = dispatcher.send_failure_alerts(&report.summaries, now);
    tracing::info!(delivered = alerts.delivered(), "failure alerts sent");
    let undelivered = alerts.undelivered_line();
    if let Some(line) = &undelivered {
        console.stderr().line(&format!("error: {line}"));
    }
    if let Some(reason) = &report.backend_lost {
        // SPEC §8: a backend problem is exit 2, whatever the checks said before it.
        invocation.finish(Tally::of(&report.summaries), Exit::Error);
        console.stderr().line(&format!("error: the backend went away; no further check was run: {reason}"));
        return Ok(Exit::Error);
    }
    let failed = report.has_failures() || report.interrupted.is_some() || undelivered.is_some();
    let exit = if failed { Exit::Failure } else { Exit::Success };
    invocation.finish(Tally::of(&report.summaries), exit);
    Ok(exit)
}

/// Index warnings are best effort (SPEC §7): what did not go out is logged, the exit code
/// stays.
pub(crate) fn log_warnings(report: &WarningReport) {
    for warning in &report.warnings {
        let name = &warning.full_check_name;
        match &warning.result {
            WarningResult::Delivered(_) => tracing::info!(check = %name, "source index warning delivered"),
            WarningResult::AlreadyDelivered => tracing::debug!(check = %name, "source index warning delivered before"),
            WarningResult::Muted => tracing::info!(check = %name, "source index warning muted (send_alert: false)"),
            WarningResult::NoDestination => {
                tracing::warn!(check = %name, "source index warning pending: no alert destination is configured");
            }
            WarningResult::NotAccepted(receipt) => {
                tracing::warn!(check = %name, problem = %receipt.failure_text(), "source index warning not delivered");
            }
            WarningResult::BackendFailed { error, .. } => {
                tracing::warn!(check = %name, error = %error, "source index warning not recorded");
            }
        }
    }
}

/// SPEC §2: `run` executes the stored current revision; a definition whose YAML now hashes
/// differently gets a warning (the import has not been run since it changed).
/// Warns about the current definitions of the project's targets (in the selection) whose tap
/// the YAML no longer defines: the run leaves them alone, and `import_config` deactivates them.
fn warn_removed_taps(
    project: &Project,
    store: &datadiff_backend_store::Store,
    selection: &Selection,
    console: &Console,
) {
    if selection.tap.is_some() || selection.check.is_some() {
        return;
    }
    let taps = datadiff_runner::project_taps(project);
    for target in &project.targets {
        if selection.target.as_ref().is_some_and(|selected| selected != &target.id) {
            continue;
        }
        let filter = datadiff_backend_store::DefinitionFilter { target: Some(target.id.clone()), ..Default::default() };
        match store.definitions(&filter) {
            Ok(definitions) => {
                for stored in definitions {
                    let definition = &stored.definition;
                    if !taps.contains(&(definition.target_id.clone(), definition.tap_id.clone())) {
                        console.stderr().line(&format!(
                            "warning: {}: not run: tap '{}' of target '{}' is not in the project YAML; \
                             run import_config to deactivate it",
                            definition.full_check_name, definition.tap_id, definition.target_id
                        ));
                    }
                }
            }
            Err(error) => tracing::debug!(error = %error, "could not read the target's definitions"),
        }
    }
}

fn warn_changed_definitions(
    project: &Project,
    store: &datadiff_backend_store::Store,
    selection: &Selection,
    console: &Console,
) {
    match changed_since_import(project, store, &selection.filter()) {
        Ok(names) => {
            for name in names {
                console.stderr().line(&format!("warning: {name}: definition changed since import; run import_config"));
            }
        }
        Err(error) => tracing::debug!(error = %error, "could not compare the YAML with the imported definitions"),
    }
}
