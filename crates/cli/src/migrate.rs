//! `datadiff migrate`: show or change the backend schema (SPEC §3).
//!
//! Without a flag it migrates to the schema this datadiff needs (PipelineWise 004 plus every
//! extension migration), as `import_config` does first. `--status` prints where the schema is
//! and what a migration would apply, changing nothing. `--to N` migrates up or down to an
//! upstream revision (`base`, `001`–`004`); below 004 the extension tables must go first,
//! which `--drop-extensions` allows (their `row_diff` evidence is lost: back up first).

use anyhow::Context;
use clap::Args;
use datadiff_backend_store::{EXTENSIONS, MigrateOptions, Target};

use crate::console::Console;
use crate::exit::Exit;
use crate::project::{ProjectArgs, backend_settings, open_backend};

/// Show or migrate the backend database schema (PipelineWise's Alembic chain 001-004 and
/// datadiff's extension migrations).
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// Print the applied schema and what a migration would do; change nothing.
    #[arg(long, conflicts_with_all = ["to", "drop_extensions"])]
    status: bool,
    /// Migrate to this upstream revision: base, 001, 002, 003 or 004 [default: 004 and every
    /// extension].
    #[arg(long, value_name = "N", value_parser = parse_target)]
    to: Option<Target>,
    /// Allow removing datadiff's extension tables (and their row_diff evidence) to go below 004.
    #[arg(long, requires = "to")]
    drop_extensions: bool,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl MigrateArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

fn parse_target(text: &str) -> Result<Target, String> {
    text.parse::<Target>().map_err(|_| "use base, 001, 002, 003 or 004".to_owned())
}

/// Prints the status, or migrates and prints the steps applied.
pub(crate) fn run(args: &MigrateArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load_with_backend(console)?;
    let settings = backend_settings(&project)?;
    let mut lines = Vec::new();
    if args.status {
        let store = open_backend(&project, 1)?;
        let status = store.status()?;
        lines.push(format!("backend: {}:{}/{}", settings.host, settings.port, settings.dbname));
        lines.push(format!("schema: {status}"));
        let applied: Vec<String> =
            status.extensions.iter().map(|extension| format!("{} ({})", extension.version, extension.name)).collect();
        lines.push(format!(
            "extensions applied: {}",
            if applied.is_empty() { "none".to_owned() } else { applied.join(", ") }
        ));
        lines.push(format!("datadiff needs: 004 (+ extensions {})", EXTENSIONS.len()));
        match status.pending() {
            Ok(steps) if steps.is_empty() => lines.push("pending: nothing, the schema is current".to_owned()),
            Ok(steps) => {
                let steps: Vec<String> = steps.iter().map(ToString::to_string).collect();
                lines.push(format!("pending: {}", steps.join(", ")));
            }
            Err(error) => lines.push(format!("pending: refused: {error}")),
        }
    } else {
        let options = match args.to {
            Some(target) => MigrateOptions::to(target, args.drop_extensions),
            None => MigrateOptions::latest(),
        };
        let store = open_backend(&project, 1)?;
        let report = store.migrate(&options)?;
        if report.steps.is_empty() {
            lines.push(format!("backend schema is already at {}: nothing to do", report.after));
        }
        for step in &report.steps {
            lines.push(format!("applied {step}"));
        }
        if !report.steps.is_empty() {
            lines.push(format!("backend schema is now at {}", report.after));
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    Ok(Exit::Success)
}
