//! The `datadiff` command line as a library: argument parsing, output and exit codes only.
//!
//! Decisions live in the library crates; this crate parses, calls, prints and maps outcomes
//! to exit codes: 0 success, 1 a failed check or an undeliverable alert, 2 usage,
//! configuration, connection and schema problems (SPEC §8). The root package's `datadiff`
//! binary is a three-line `main` calling [`main`].
//!
//! The PipelineWise-compatible commands arrive with their issues; today the binary answers
//! `--help` and `--version`.

use std::process::ExitCode;

use clap::Parser;

/// Prove, continuously and with evidence, that a PostgreSQL replica matches its source.
#[derive(Debug, Parser)]
#[command(name = "datadiff", version, about)]
struct Cli {}

/// Runs the command line with the process arguments and returns the exit code.
pub fn main() -> ExitCode {
    match Cli::try_parse() {
        Ok(Cli {}) => ExitCode::SUCCESS,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            // clap renders help, version and usage errors itself.
            let _ = error.print();
            ExitCode::from(code)
        }
    }
}
