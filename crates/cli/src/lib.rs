//! The `datadiff` command line as a library: argument parsing, output and exit codes only.
//!
//! Decisions live in the library crates; this crate parses, calls, prints and maps outcomes
//! to exit codes (SPEC §8, §9). The root package's `datadiff` binary is a three-line `main`
//! calling [`main`].
//!
//! # Structure
//!
//! * [`main`] runs [`run`] with the process's arguments and a [`Console`] over the real
//!   stdout, stderr and environment; tests call [`run`] with [`Console::capture`].
//! * One module per command (`validate.rs`, `import.rs`, `list.rs`, `run.rs`, `rerun.rs`,
//!   `migrate.rs`, `doctor.rs`, `report.rs`, `audit.rs`, `demo.rs`), each a clap `Args` struct
//!   and a `run` function returning an [`Exit`]; the `Command` enum dispatches (the demo runs
//!   the other commands through it, in process). `project.rs` loads
//!   `--dir`/`--secret` and opens the backend behind the schema gate; `listing.rs` renders
//!   one list as a table, JSON or CSV; `summary.rs` holds the run and rerun tables;
//!   `timestamp.rs` the time forms and `--at`.
//! * Logs go to stderr through `tracing` (`-v`, `-vv`, `-vvv`, or `RUST_LOG`); `run`, `rerun`
//!   and `audit` log a start and an end line (UTC time, duration, counts) at every level
//!   (`logging.rs`). An error is one `error:` line naming what to fix; `-v` adds the cause
//!   chain. Nothing printed ever holds a
//!   password or a row value: DSNs are never echoed, and argument-parser messages (which quote
//!   rejected arguments) are scrubbed of passwords.
//!
//! ```no_run
//! use datadiff_cli::{Console, Exit, run};
//! use datadiff_access::Environment;
//!
//! let (console, captured) = Console::capture(Environment::default());
//! let exit = run(["datadiff", "--version"], console);
//! assert_eq!(exit, Exit::Success);
//! assert!(captured.stdout().starts_with("datadiff "));
//! ```
//!
//! # Commands
//!
//! PipelineWise's names first, short aliases in parentheses; `--dir DIR` (`-d`) and
//! `--secret FILE` (`-s`) on every project command, accepted anywhere on the line.
//!
//! | command | flags | prints | exit |
//! |---|---|---|---|
//! | `validate` | | one summary line; every problem as `file:line: path: message` | 0, 2 |
//! | `import_config` (`import`) | `--taps a,b`, `--at TIME` | upstream's `IMPORTING YAML CONFIGS FINISHED` block plus created / unchanged / superseded / deactivated | 0; 1 a selected tap missing from the YAML (its definitions deactivated); 2 |
//! | `list_data_diff_checks` (`list`) | `--target T` (`-t`), `--tap P` (`-p`, needs `--target`), `--include-versioned`, `--output-format table\|json` | one row per revision | 0, 2 |
//! | `run_data_diff_checks` (`run`) | `--all` \| `--target T --tap P`, `--check NAME\|ID`, `--force`, `--at TIME`, `--jobs N`, `--strategy auto\|stream\|segments`, `--output-format table\|json` | upstream's run table (only when there are summaries) | 0; 1 any FAIL/ERROR summary or an undelivered failure alert; 2 |
//! | `rerun_data_diff_check` (`rerun`) | `--run-id ID`, `--remediation-ref REF`, `--at TIME`, `--output-format table\|json` | upstream's rerun table | 0 (PASS, DEFERRED, SKIPPED after a lost lease); 1 FAIL/ERROR or a RUNNING slot; 2 unknown or non-failed run, empty reference |
//! | `migrate` | `--status` \| `--to base\|001…004 [--drop-extensions]` | the schema, or the steps applied | 0, 2 |
//! | `doctor` | `--output-format table\|json` | findings: scope, check, OK/WARN/FAIL/SKIP, detail | 0; 1 a FAIL finding; 2 |
//! | `report` | `watermarks [--max-lag DURATION]`, `daily`, `failures`, `remediations`, `differences --run-id ID`, `run --run-id ID` (one attempt's whole record; see `report.rs`), `metrics [--output FILE]` (Prometheus text format; see `report.rs`); `--output-format table\|json\|csv`, `--at TIME` | the report | 0; 1 `--max-lag` failed; 2 |
//! | `audit` | see `docs/cli.md` | the JSON report | 0 PASS, 1 BLOCK, 2 |
//! | `demo` | `--keep` | the story on a throwaway cluster: each command and its output, the watermark events; with `--keep`, how to connect | 0; 2 no server binaries (one line saying what to install) or a step that did not end as the story expects |
//!
//! `--version` prints the version and the backend schema it needs
//! (`backend schema: PipelineWise 004 (+ extensions 3)`).
//!
//! # Exit codes
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | an attempt FAILed or ERRORed (a source or target that cannot be reached is an ERROR attempt); a failure alert no destination accepted; `--max-lag` found a definition BLOCKED, not run or lagging; `import_config --taps` naming a tap missing from the YAML; a `doctor` FAIL; a `rerun` of a slot that has a RUNNING attempt; `audit` BLOCK |
//! | 2 | usage; configuration (every problem listed); a missing `backend_db` for `run`, `list`, `rerun`, `report`, `migrate`; backend connection, login or schema (`backend schema is at <v>, datadiff needs 004 (+ extensions <n>): run datadiff import_config --dir <project>`); `rerun` of an unknown or non-failed run or with an empty reference; `audit` refusals |
//!
//! A panic is a bug: no path reading a user, a file or a database unwraps.
//!
//! # Output
//!
//! Tables use upstream's columns and upstream's timestamp form (Python's `isoformat()`:
//! `2026-07-22T13:00:00+00:00`), a blank for an unknown value — never `None`. JSON uses RFC
//! 3339 with `Z` (`2026-07-22T13:00:00Z`) and `null`; every JSON document is an object, but
//! `list`'s, which is a bare list as PipelineWise prints it. CSV
//! (reports) has a header row of the JSON field names, the JSON values as fields (times RFC
//! 3339 with `Z`, lists as compact JSON, `null` empty), CRLF line ends, RFC 4180 quoting.
//! On a terminal (stdout), a table wider than the window wraps its text columns at blanks,
//! or prints each row as a record (`Header  value` lines) when even that does not fit; an id,
//! a name or a timestamp is never cut (`listing.rs`). `--wide`, and any pipe or file, get
//! the full table, one line per row.
//! On a terminal (stderr), `run_data_diff_checks` and `rerun_data_diff_check` show the
//! checks done and, once a `row_diff` streams, a bar of its source rows with rows/s and an
//! ETA (the expected rows are the window's exact `row_count` when the check ran, else the
//! planner's estimate, so an ETA can move); the audit draws rows/s and an ETA. No progress
//! is drawn otherwise: pipes, files and CI logs get none.
//!
//! ## JSON field names
//!
//! * **`run`**: `{"at", "summaries": [...]}`; **`rerun`**: `{"summaries": [one]}`. A summary:
//!   `full_check_name`, `check_id`, `revision`, `target_id`, `tap_id`, `status` (PASS, FAIL,
//!   ERROR, DEFERRED, SKIPPED), `slot_status`, `scheduled_for`, `window_start`,
//!   `window_end`, `run_id`, `attempt`, `trigger_type`, `rerun_of_run_id` (the root original
//!   run of a remediation), `remediation_reference`, `reason`, and `checks`: `[{check_type,
//!   status, error}]` (never a value: min/max keys and checksums stay in the backend).
//!   The run table shows `Check, Status, Slot status, UTC start, UTC end, Run ID, Reason`;
//!   the rerun table `Check, Status, Attempt, UTC start, UTC end, Original run ID,
//!   Remediation run ID, Remediation reference, Reason`.
//! * **`list`**: a bare list `[...]`, as PipelineWise prints it, each: `full_check_name`, `revision`, `is_current`,
//!   `frequency`, `window` (`{start_seconds, end_seconds}`), `checks`, `initial_full_scan`,
//!   `historical_scan_pending`, `verified_status` (CONTIGUOUS, BLOCKED, NOT_RUN),
//!   `verified_start`, `verified_end`, `check_id`, `target_id`, `tap_id`,
//!   `source_database`, `source_schema`, `source_table`, `target_database`,
//!   `target_schema`, `target_table`, `source_key_column`, `target_key_column`,
//!   `source_timestamp_column`, `target_timestamp_column`, `source_compare_columns`,
//!   `target_compare_columns`, `window_start_seconds`, `window_end_seconds`,
//!   `statement_timeout_seconds`, `extensions` (the `datadiff.yml` settings or `null`),
//!   `furthest_observed_end`, `blocking_run_id`, `last_evaluated_run_id`,
//!   `watermark_reason`, `config_hash`, `created_at`, `superseded_at`.
//! * **`report`**: `{"report", "rows": [...]}` (+ `"at"` for watermarks, `"run_id"` for
//!   differences, `"max_lag"` with `--max-lag`). Rows carry the columns of the reporting
//!   queries of PipelineWise's backend page: watermarks `full_check_name`, `revision`,
//!   `verified_status`, `verified_start`, `verified_end`, `furthest_observed_end`,
//!   `verification_lag_seconds` (a number, from `--at` or now), `blocking_run_id`,
//!   `reason`, `check_id`, `source_database`, `source_schema`, `source_table`,
//!   `target_database`, `target_schema`, `target_table`, `last_evaluated_run_id`,
//!   `watermark_updated_at`, `oldest_verification_age_seconds` and `oldest_verification` (the
//!   age and time of the least recent latest attempt among PASS slots: what
//!   `checks.<name>.reverify` keeps below its period); daily `check_date`, `full_check_name`,
//!   `successful_check_results`, `failed_check_results`, `run_level_errors` and the six
//!   table names; failures `full_check_name`, `revision`, `scheduled_for`, `window_start`,
//!   `window_end`, `run_id`, `attempt`, `trigger_type`, `failed_check`, `failure_status`,
//!   `blocks_watermark`, `finished_at`, `error`, `source_schema`, `source_table`;
//!   remediations `full_check_name`, `revision`, `failed_run_id`, `failed_status`,
//!   `window_start`, `window_end`, `failed_at`, `remediation_run_id`,
//!   `remediation_attempt`, `remediation_status`, `remediation_reference`,
//!   `remediation_finished_at`, `recovered`; differences `check_type`, `ordinal`, `kind`
//!   (MISSING_IN_TARGET, EXTRA_IN_TARGET, CHANGED), `key` (the key's JSON), `fields`.
//!   `report run` (one attempt): see `report.rs`; its `rows` are the results `check_type`,
//!   `status`, `source_value`, `target_value`, `source_query_seconds`,
//!   `target_query_seconds`, `error`.
//!   `max_lag`: `{max_lag_seconds, passed, offenders: [{check_id, full_check_name, problem
//!   (BLOCKED, NOT_RUN, LAGGING), lag_seconds}]}` — what a metrics scraper reads. With CSV
//!   the verdict goes to stderr.
//! * **`doctor`**: `{"passed", "findings": [{scope, check, status, detail}]}`.
//!
//! # Decisions where the sources are silent
//!
//! * **Exit 2, not upstream's 1**, for argument errors and for backend problems upstream
//!   raises as tracebacks (SPEC §8). `import_config`'s sync failure is a backend problem:
//!   exit 2 (upstream logs it and exits 1).
//! * **A RUNNING slot refuses `rerun` with exit 1** (upstream raises): the run is valid, only
//!   busy; retry later.
//! * **`doctor`** writes nothing (no attempt, preflight or definition) and never migrates;
//!   every problem is a FAIL finding (an unreachable backend included) so one run shows them
//!   all: exit 1 when any finding FAILs, 2 only when the project cannot be loaded.
//! * **`run` warns** `<name>: definition changed since import; run import_config` for each
//!   selected definition whose YAML hashes differently from its stored current revision
//!   (SPEC §2); it still runs the stored revision.
//! * **`import_config` without `backend_db`** prints the summary with `Initial data-diff
//!   scans pending: not configured` and no counts.
//! * **Alerts**: `run` sends index warnings (best effort: logged, never the exit code), prints
//!   the table, then failure alerts (an alert no destination accepted: one `error:` line,
//!   exit 1); `rerun` does the same around its remediation, as upstream.
//! * **`--jobs N`** opens a backend pool of at least N connections.
//! * **Lists that are empty** print `No data-diff checks found` / `No rows` (a table) or an
//!   empty array (JSON); `run` prints no table when nothing was selected, as upstream.
//! * **`list`'s window** reads `-1h .. 0s`, in the YAML's duration grammar.
//! * **`demo`** runs the other commands in this process (through the same `Command` dispatch)
//!   against a project directory it writes inside a throwaway cluster's directory, so one
//!   removal takes everything — also when the process dies (the testkit's watchdog). A
//!   throwaway cluster lives as long as its process, so `--keep` waits for Enter (or Ctrl-C)
//!   after printing the project directory and connection URLs; those URLs are the only place
//!   datadiff prints passwords (generated for the demo). Each step's exit code is checked
//!   against the story: a surprise stops the demo with exit 2.
//!
//! # What it does not do
//!
//! No scheduling loop (cron or an orchestrator runs `run_data_diff_checks`) and no PipelineWise
//! replication commands.

mod audit;
mod console;
#[cfg(feature = "demo")]
mod demo;
mod doctor;
mod exit;
mod import;
mod list;
mod listing;
mod logging;
mod migrate;
mod output_file;
mod progress;
mod project;
mod report;
mod rerun;
mod run;
mod secret;
mod summary;
mod timestamp;
mod validate;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use console::{Captured, Console};
pub use exit::Exit;

/// Prove, continuously and with evidence, that a PostgreSQL replica matches its source.
#[derive(Debug, Parser)]
#[command(name = "datadiff", version, after_help = exit::help::PROGRAM)]
struct Cli {
    #[command(flatten)]
    verbosity: logging::Verbosity,
    /// Print tables at full width, one line per row, even on a terminal (as in a pipe). On a
    /// terminal a table wider than the window otherwise wraps its text columns at blanks or,
    /// when even that is too wide, prints each row as a record; ids, names and timestamps are
    /// never cut.
    #[arg(long, global = true)]
    wide: bool,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// `-v` counted before and after the command name. (Not a clap `global` argument: clap
    /// does not add up a counted global flag given to a subcommand.)
    fn verbose(&self) -> u8 {
        let after = match &self.command {
            Command::Validate(args) => args.verbosity(),
            Command::ImportConfig(args) => args.verbosity(),
            Command::ListDataDiffChecks(args) => args.verbosity(),
            Command::RunDataDiffChecks(args) => args.verbosity(),
            Command::RerunDataDiffCheck(args) => args.verbosity(),
            Command::Migrate(args) => args.verbosity(),
            Command::Doctor(args) => args.verbosity(),
            Command::Report(args) => args.verbosity(),
            Command::Audit(args) => args.verbosity(),
            #[cfg(feature = "demo")]
            Command::Demo(args) => args.verbosity(),
        };
        self.verbosity.count().saturating_add(after)
    }
}

/// The commands: PipelineWise's names first, short aliases after.
#[derive(Debug, Subcommand)]
enum Command {
    /// Validate the project's data-diff configuration (no database is contacted).
    #[command(name = "validate", after_help = exit::help::VALIDATE)]
    Validate(validate::ValidateArgs),
    /// Import the project's data-diff definitions into the backend (migrating it first).
    #[command(name = "import_config", visible_alias = "import", after_help = exit::help::IMPORT)]
    ImportConfig(import::ImportArgs),
    /// List the imported data-diff checks and their watermarks.
    #[command(name = "list_data_diff_checks", visible_alias = "list", after_help = exit::help::PLAIN)]
    ListDataDiffChecks(list::ListArgs),
    /// Run the due data-diff checks (one scheduler tick).
    #[command(name = "run_data_diff_checks", visible_alias = "run", after_help = exit::help::RUN)]
    RunDataDiffChecks(run::RunArgs),
    /// Remediate a failed or errored run.
    #[command(name = "rerun_data_diff_check", visible_alias = "rerun", after_help = exit::help::RERUN)]
    RerunDataDiffCheck(rerun::RerunArgs),
    /// Show or migrate the backend schema.
    #[command(name = "migrate", after_help = exit::help::PLAIN)]
    Migrate(migrate::MigrateArgs),
    /// Check connections, schema, grants, columns and preflight verdicts (writes nothing).
    #[command(name = "doctor", after_help = exit::help::DOCTOR)]
    Doctor(doctor::DoctorArgs),
    /// Print a report from the backend.
    #[command(name = "report", after_help = exit::help::REPORT)]
    Report(report::ReportArgs),
    /// Verify a whole replica table against its source before a cutover (no backend).
    #[command(name = "audit", after_help = exit::help::AUDIT)]
    Audit(audit::AuditArgs),
    /// Show datadiff at work on a throwaway PostgreSQL cluster (needs the server binaries).
    #[cfg(feature = "demo")]
    #[command(name = "demo", after_help = exit::help::DEMO)]
    Demo(demo::DemoArgs),
}

impl Command {
    /// Runs the command.
    fn execute(&self, console: &mut Console) -> anyhow::Result<Exit> {
        match self {
            Command::Validate(args) => validate::run(args, console),
            Command::ImportConfig(args) => import::run(args, console),
            Command::ListDataDiffChecks(args) => list::run(args, console),
            Command::RunDataDiffChecks(args) => run::run(args, console),
            Command::RerunDataDiffCheck(args) => rerun::run(args, console),
            Command::Migrate(args) => migrate::run(args, console),
            Command::Doctor(args) => doctor::run(args, console),
            Command::Report(args) => report::run(args, console),
            Command::Audit(args) => audit::run(args, console),
            #[cfg(feature = "demo")]
            Command::Demo(args) => demo::run(args, console),
        }
    }
}

/// `--version`: the program's version and the backend schema it needs.
fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{}\nbackend schema: PipelineWise 004 (+ extensions {})",
            env!("CARGO_PKG_VERSION"),
            datadiff_backend_store::migrate::latest_extension_version()
        )
    })
}

/// Runs the command line with the process arguments and returns the exit code.
pub fn main() -> ExitCode {
    run(std::env::args_os(), Console::process()).into()
}

/// Runs the command line with `args` (the program name first) on `console`.
pub fn run<I, T>(args: I, mut console: Console) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let parsed = Cli::command()
        .version(version())
        .try_get_matches_from(args)
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => {
            // clap renders help, version and usage errors; usage errors quote arguments, which
            // are cut short when long (a pasted file must not flood the terminal).
            let text = secret::redact(&error.render().to_string());
            if error.use_stderr() {
                console.stderr().line(shorten_quoted(&text).trim_end());
                return Exit::Error;
            }
            let _ = write!(console.stdout(), "{text}");
            return Exit::Success;
        }
    };
    if cli.wide {
        console.use_full_width();
    }
    let rust_log = console.environment().get("RUST_LOG").map(str::to_owned);
    let verbose = cli.verbose();
    // The demo narrates the commands it runs in-process: no invocation lines in its story.
    #[cfg(feature = "demo")]
    let invocation_lines = !matches!(cli.command, Command::Demo(_));
    #[cfg(not(feature = "demo"))]
    let invocation_lines = true;
    let subscriber = logging::subscriber(
        verbose,
        rust_log.as_deref(),
        console.stderr(),
        console.stderr_is_terminal(),
        invocation_lines,
    );
    tracing::subscriber::with_default(subscriber, || match cli.command.execute(&mut console) {
        Ok(exit) => exit,
        Err(error) => {
            report_error(&console, &error, verbose > 0);
            Exit::Error
        }
    })
}

/// The argument a usage error quotes (`invalid value '…' for`, `unexpected argument '…'
/// found`) cut to its start with its length when longer than [`QUOTED_MAX`] characters:
/// `'xxxxxxxx… (100000 characters)'`.
fn shorten_quoted(text: &str) -> String {
    let mut out = text.to_owned();
    for (opening, closing) in [("invalid value '", "' for '"), ("unexpected argument '", "' found")] {
        let Some(start) = out.find(opening).map(|at| at + opening.len()) else { continue };
        let Some(length) = out[start..].find(closing) else { continue };
        let quoted = &out[start..start + length];
        let characters = quoted.chars().count();
        if characters > QUOTED_MAX {
            let kept: String = quoted.chars().take(QUOTED_KEPT).collect();
            out.replace_range(start..start + length, &format!("{kept}… ({characters} characters)"));
        }
    }
    out
}

/// The longest argument a usage error prints whole.
const QUOTED_MAX: usize = 200;
/// How much of a longer one it prints.
const QUOTED_KEPT: usize = 40;

/// One line naming what to fix; with `verbose`, the cause chain below it.
fn report_error(console: &Console, error: &anyhow::Error, verbose: bool) {
    let stderr = console.stderr();
    let refused = error.downcast_ref::<datadiff_audit::Error>().is_some_and(datadiff_audit::Error::is_refusal);
    let label = if refused { "refused" } else { "error" };
    let mut line = format!("{label}: {error}");
    if !verbose {
        if error.chain().nth(1).is_some()
            && let Some(root) = error.chain().last()
        {
            // The innermost cause usually says what happened (refused, timed out, auth).
            line.push_str(&format!(": {}", first_line(root)));
        }
        stderr.line(&secret::redact(&line));
        return;
    }
    stderr.line(&secret::redact(&line));
    for cause in error.chain().skip(1) {
        stderr.line(&secret::redact(&format!("  caused by: {}", first_line(cause))));
    }
}

/// The first line of an error's text: a server error's DETAIL and HINT lines may quote row
/// values (a constraint's key, an unparsable input) and are never printed.
fn first_line(error: &(dyn std::error::Error + 'static)) -> String {
    error.to_string().lines().next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().version(version()).debug_assert();
    }
}
