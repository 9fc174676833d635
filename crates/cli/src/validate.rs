//! `datadiff validate`: check a project directory without touching any database.

use anyhow::Context;
use clap::Args;

use crate::console::Console;
use crate::exit::Exit;
use crate::project::ProjectArgs;

/// Validate the project's data-diff configuration (no database is contacted). Every problem
/// of the directory is listed; exits 0 when there is none — also without backend_db, when the
/// definitions are ignored with a warning.
#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    #[command(flatten)]
    project: ProjectArgs,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl ValidateArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// Loads the project and prints what it holds.
pub(crate) fn run(args: &ValidateArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load(console)?;
    let line = format!(
        "{} is valid: {} data-diff definition(s), {} tap(s), {} target(s){}",
        project.dir.display(),
        project.definitions.len(),
        project.taps.len(),
        project.targets.len(),
        if project.definitions_ignored() { " (definitions ignored: no backend_db)" } else { "" },
    );
    writeln!(console.stdout(), "{line}").context("writing to stdout")?;
    Ok(Exit::Success)
}
