//! The `datadiff` command line as a library: argument parsing, output and exit codes only.
//!
//! Decisions live in the library crates; this crate parses, calls, prints and maps outcomes
//! to exit codes: 0 success, 1 a failed check (the audit blocked the cutover), 2 usage,
//! configuration, connection and schema problems and refusals (SPEC §8, §9). The root
//! package's `datadiff` binary is a three-line `main` calling [`main`].
//!
//! # Structure
//!
//! * [`main`] runs [`run`] with the process's arguments and a [`Console`] over the real
//!   stdout, stderr and environment; tests call [`run`] with [`Console::capture`].
//! * One module per command (`audit.rs`), each a clap `Args` struct and a `run` function
//!   returning an [`Exit`]; the `Command` enum dispatches.
//! * Logs go to stderr through `tracing` (`-v`, `-vv`, `-vvv`, or `RUST_LOG`). An error is one
//!   line naming what to fix; `-v` adds the cause chain. Nothing printed ever holds a
//!   password or a row value: DSNs are never echoed, and argument-parser messages (which quote
//!   rejected arguments) are scrubbed of passwords.
//!
//! ```no_run
//! use datadiff_cli::{Console, Exit, run};
//! use datadiff_runner::Environment;
//!
//! let (console, captured) = Console::capture(Environment::default());
//! let exit = run(["datadiff", "--version"], console);
//! assert_eq!(exit, Exit::Success);
//! assert!(captured.stdout().starts_with("datadiff "));
//! ```
//!
//! Commands: `validate`, `import_config` (`import`), `list_data_diff_checks` (`list`),
//! `run_data_diff_checks` (`run`), `rerun_data_diff_check` (`rerun`), `migrate`, `doctor`,
//! `report` and `audit`.

mod audit;
mod console;
mod doctor;
mod exit;
mod import;
mod list;
mod listing;
mod logging;
mod migrate;
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
#[command(name = "datadiff", version)]
struct Cli {
    #[command(flatten)]
    verbosity: logging::Verbosity,
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
        };
        self.verbosity.count().saturating_add(after)
    }
}

/// The commands: PipelineWise's names first, short aliases after.
#[derive(Debug, Subcommand)]
enum Command {
    /// Validate the project's data-diff configuration (no database is contacted).
    #[command(name = "validate")]
    Validate(validate::ValidateArgs),
    /// Import the project's data-diff definitions into the backend (migrating it first).
    #[command(name = "import_config", visible_alias = "import")]
    ImportConfig(import::ImportArgs),
    /// List the imported data-diff checks and their watermarks.
    #[command(name = "list_data_diff_checks", visible_alias = "list")]
    ListDataDiffChecks(list::ListArgs),
    /// Run the due data-diff checks (one scheduler tick).
    #[command(name = "run_data_diff_checks", visible_alias = "run")]
    RunDataDiffChecks(run::RunArgs),
    /// Remediate a failed or errored run.
    #[command(name = "rerun_data_diff_check", visible_alias = "rerun")]
    RerunDataDiffCheck(rerun::RerunArgs),
    /// Show or migrate the backend schema.
    #[command(name = "migrate")]
    Migrate(migrate::MigrateArgs),
    /// Check connections, schema, grants, columns and preflight verdicts (writes nothing).
    #[command(name = "doctor")]
    Doctor(doctor::DoctorArgs),
    /// Print a report from the backend.
    #[command(name = "report")]
    Report(report::ReportArgs),
    /// Verify a whole replica table against its source before a cutover (no backend).
    #[command(name = "audit")]
    Audit(audit::AuditArgs),
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
            // clap renders help, version and usage errors; usage errors quote arguments.
            let text = secret::redact(&error.render().to_string());
            if error.use_stderr() {
                console.stderr().line(text.trim_end());
                return Exit::Error;
            }
            let _ = write!(console.stdout(), "{text}");
            return Exit::Success;
        }
    };
    let rust_log = console.environment().get("RUST_LOG").map(str::to_owned);
    let verbose = cli.verbose();
    let subscriber = logging::subscriber(verbose, rust_log.as_deref(), console.stderr(), console.stderr_is_terminal());
    tracing::subscriber::with_default(subscriber, || {
        let result = match &cli.command {
            Command::Validate(args) => validate::run(args, &mut console),
            Command::ImportConfig(args) => import::run(args, &mut console),
            Command::ListDataDiffChecks(args) => list::run(args, &mut console),
            Command::RunDataDiffChecks(args) => run::run(args, &mut console),
            Command::RerunDataDiffCheck(args) => rerun::run(args, &mut console),
            Command::Migrate(args) => migrate::run(args, &mut console),
            Command::Doctor(args) => doctor::run(args, &mut console),
            Command::Report(args) => report::run(args, &mut console),
            Command::Audit(args) => audit::run(args, &mut console),
        };
        match result {
            Ok(exit) => exit,
            Err(error) => {
                report_error(&console, &error, verbose > 0);
                Exit::Error
            }
        }
    })
}

/// One line naming what to fix; with `verbose`, the cause chain below it.
fn report_error(console: &Console, error: &anyhow::Error, verbose: bool) {
    let stderr = console.stderr();
    let refused = error.downcast_ref::<datadiff_runner::Error>().is_some_and(datadiff_runner::Error::is_refusal);
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
