//! The project directory every PipelineWise-style command starts from (`--dir`, `--secret`),
//! and the backend it names.
//!
//! Loading prints every problem of the directory (file, line, YAML path, message) on stderr
//! before failing, and every warning (unset environment variables, definitions ignored
//! without `backend_db`) as `warning: ...` lines. Opening the backend reports a missing
//! `backend_db`, a connection failure or a schema that is not current as one error line each
//! (exit 2).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use datadiff_backend_store::{PoolOptions, Store};
use datadiff_config::{BackendSettings, LoadOptions, Project};

use crate::console::Console;

/// `--dir` and `--secret`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ProjectArgs {
    /// The PipelineWise project directory: config.yml, tap_*.yml, target_*.yml and the
    /// optional datadiff.yml (required).
    // Optional for clap: a global argument (accepted before and after `report`'s report name)
    // cannot be required; `load` reports it missing.
    #[arg(long, short = 'd', value_name = "DIR", global = true)]
    pub(crate) dir: Option<PathBuf>,
    /// The ansible-vault password file for `!vault` values and vault-encrypted files (an
    /// executable file is run and its output used).
    #[arg(long, short = 's', value_name = "FILE", global = true)]
    pub(crate) secret: Option<PathBuf>,
}

impl ProjectArgs {
    /// Loads and validates the project for a command that works on the backend: as
    /// [`ProjectArgs::load`], but without `backend_db` it fails with the one line that names
    /// the fix (the "Ignoring N definition(s)" warning, meant for `validate` and
    /// `import_config`, which go on without a backend, would only precede it).
    pub(crate) fn load_with_backend(&self, console: &Console) -> anyhow::Result<Project> {
        let project = self.load_quietly(console)?;
        backend_settings(&project)?;
        self.print_warnings(console, &project);
        Ok(project)
    }

    /// Loads and validates the project: prints its warnings, or every problem and fails.
    pub(crate) fn load(&self, console: &Console) -> anyhow::Result<Project> {
        let project = self.load_quietly(console)?;
        self.print_warnings(console, &project);
        Ok(project)
    }

    fn print_warnings(&self, console: &Console, project: &Project) {
        let stderr = console.stderr();
        for warning in &project.warnings {
            stderr.line(&format!("warning: {warning}"));
        }
    }

    /// Loads and validates the project, printing its problems (not its warnings).
    fn load_quietly(&self, console: &Console) -> anyhow::Result<Project> {
        let Some(dir) = &self.dir else {
            anyhow::bail!("--dir DIR is required: the PipelineWise project directory");
        };
        let secret = match &self.secret {
            Some(path) => Some(datadiff_config::read_secret_file(path).map_err(|error| {
                anyhow::Error::new(error).context(format!("cannot read the vault password from {}", path.display()))
            })?),
            None => None,
        };
        let options = LoadOptions { secret, env: None };
        let stderr = console.stderr();
        match datadiff_config::load_with(dir, &options) {
            Ok(project) => Ok(project),
            Err(error) => {
                for problem in error.problems() {
                    stderr.line(&problem.to_string());
                }
                Err(error.into())
            }
        }
    }
}

/// The project's `backend_db`, or the error `run`, `list`, `report`, `rerun` and `migrate`
/// give without it (exit 2; upstream raises a traceback there).
pub(crate) fn backend_settings(project: &Project) -> anyhow::Result<&BackendSettings> {
    project.backend.as_ref().ok_or_else(|| {
        anyhow!(
            "{} does not define backend_db: add backend_db (host, port, user, password, dbname, ddl_user, \
             ddl_password) to use data-diff checks",
            project.dir.join("config.yml").display()
        )
    })
}

/// Opens the backend named by the project (within its connect timeout) with a pool of
/// `pool_size` application sessions.
pub(crate) fn open_backend(project: &Project, pool_size: u32) -> anyhow::Result<Store> {
    let settings = backend_settings(project)?;
    // Opened once, through the runner, which bounds the whole login by the connect timeout;
    // `--jobs N` needs a pool of N sessions.
    let pool = PoolOptions { max_size: pool_size.max(PoolOptions::default().max_size), ..PoolOptions::default() };
    datadiff_runner::open_backend_with(datadiff_runner::backend_config(settings), pool).map_err(unwrap_backend)
}

/// Opens the backend and passes the schema gate (SPEC §3): every command but
/// `import_config` and `migrate` refuses an upstream version other than 004; a backend
/// without datadiff's extension tables passes (`run` and `rerun` then also ask
/// `Store::gate_for_attempts`).
pub(crate) fn open_gated(project: &Project, pool_size: u32) -> anyhow::Result<Store> {
    let store = open_backend(project, pool_size)?;
    store.gate(&project.dir)?;
    Ok(store)
}

/// The store's own error when the runner wraps it (its text names the role, user, host and
/// database: what to fix), else the runner's.
pub(crate) fn unwrap_backend(error: datadiff_runner::Error) -> anyhow::Error {
    match error {
        datadiff_runner::Error::Backend { source, .. } => anyhow::Error::new(source),
        other => anyhow::Error::new(other),
    }
}
