//! Logs on stderr: `RUST_LOG` when set, else `-v` (info), `-vv` (debug), `-vvv` (trace),
//! warnings otherwise.

use clap::Args;
use tracing_subscriber::EnvFilter;

use crate::console::SharedWriter;

/// The `-v` flag, accepted before and after a command name.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Verbosity {
    /// More logging on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

impl Verbosity {
    /// How many times `-v` was given.
    pub(crate) fn count(self) -> u8 {
        self.verbose
    }
}

/// A subscriber writing plain-text events to `stderr`.
///
/// Only `tracing` events are shown: records of the `log` crate are deliberately not bridged
/// (no `LogTracer`). ureq logs full request URLs at trace level through `log`, and VictorOps
/// and webhook URLs carry keys; bridging them would print secrets under `RUST_LOG=trace`.
pub(crate) fn subscriber(
    verbose: u8,
    rust_log: Option<&str>,
    stderr: SharedWriter,
    ansi: bool,
) -> impl tracing::Subscriber + Send + Sync {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter =
        rust_log.and_then(|directives| EnvFilter::try_new(directives).ok()).unwrap_or_else(|| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || stderr.clone())
        .with_ansi(ansi)
        .with_target(false)
        .finish()
}
