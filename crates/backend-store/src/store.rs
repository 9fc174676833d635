//! The opened backend: the application pool plus what it takes to migrate and gate.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use datadiff_diff_core::attempt::RunId;
use postgres::Client;

use crate::config::BackendConfig;
use crate::connection::{Role, connect};
use crate::error::Error;
use crate::migrate::{MigrateOptions, MigrationReport, migrate};
use crate::pool::ConnectionManager;
use crate::status::SchemaStatus;

/// A pooled application-role connection (derefs to [`postgres::Client`]).
pub type PooledConnection = r2d2::PooledConnection<ConnectionManager>;

/// Pool sizing for [`Store::open_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// The most application connections open at once (default 4; give `--jobs N` at
    /// least N).
    pub max_size: u32,
    /// How long [`Store::connection`] waits for a free connection (default: the connect
    /// timeout plus 5 s, or 30 s when the connect timeout is zero).
    pub checkout_timeout: Option<Duration>,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions { max_size: 4, checkout_timeout: None }
    }
}

/// An opened backend database.
///
/// [`Store::open`] validates the settings and logs in once as the application role, so a
/// wrong password or an unreachable host is reported at once, with its cause. Application
/// sessions then come from an r2d2 pool; migrations get their own single connection as
/// the DDL role.
#[derive(Debug, Clone)]
pub struct Store {
    config: Arc<BackendConfig>,
    pool: r2d2::Pool<ConnectionManager>,
    /// How long the pool waits for a connection.
    checkout_timeout: Duration,
}

/// The statement time [`Store::operation_deadline`] allows when `backend_db` sets no
/// `statement_timeout`.
pub const DEFAULT_OPERATION_TIME: Duration = Duration::from_secs(60);

impl Store {
    /// Opens the backend with the default pool size.
    pub fn open(config: BackendConfig) -> Result<Store, Error> {
        Store::open_with(config, PoolOptions::default())
    }

    /// Opens the backend with the given pool options.
    pub fn open_with(config: BackendConfig, options: PoolOptions) -> Result<Store, Error> {
        config.validate()?;
        let first = connect(&config, Role::Application)?;
        let checkout_timeout = options.checkout_timeout.unwrap_or(if config.connect_timeout.is_zero() {
            Duration::from_secs(30)
        } else {
            config.connect_timeout + Duration::from_secs(5)
        });
        let config = Arc::new(config);
        let pool = r2d2::Pool::builder()
            .max_size(options.max_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(checkout_timeout)
            .build_unchecked(ConnectionManager::new(Arc::clone(&config), first));
        Ok(Store { config, pool, checkout_timeout })
    }

    /// How long [`Store::bounded`] waits for one backend operation: the pool's checkout
    /// timeout (a new connection may have to be made), plus the application sessions'
    /// `statement_timeout` ([`DEFAULT_OPERATION_TIME`] when none is set), plus
    /// [`datadiff_connect::ANSWER_GRACE`].
    pub fn operation_deadline(&self) -> Duration {
        self.checkout_timeout
            + self.config.statement_timeout.unwrap_or(DEFAULT_OPERATION_TIME)
            + datadiff_connect::ANSWER_GRACE
    }

    /// Runs `operation` on a helper thread (with a clone of this store: the same pool) and
    /// waits at most [`Store::operation_deadline`] for it.
    ///
    /// The driver has no timeout of its own, so a backend that stops answering — its server
    /// process frozen, a host paused, a network that drops packets without a reset — would
    /// block the caller for ever. Past the deadline the helper is abandoned with its
    /// connection (it ends when the backend answers or the socket closes, or with the
    /// process) and the result is [`Error::NoAnswer`], which
    /// [`Error::is_backend_lost`] counts as the backend gone.
    pub fn bounded<T: Send + 'static>(
        &self,
        action: &'static str,
        operation: impl FnOnce(&Store) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let deadline = self.operation_deadline();
        let store = self.clone();
        match datadiff_connect::within_deadline("datadiff-backend", deadline, move || operation(&store)) {
            Ok(result) => result,
            // No helper thread could be started: nothing was sent to the backend.
            Err(datadiff_connect::DeadlineError::Thread(_)) => Err(Error::NoAnswer { action, seconds: 0 }),
            Err(_) => {
                tracing::warn!(action, seconds = deadline.as_secs(), "the backend did not answer");
                Err(Error::NoAnswer { action, seconds: deadline.as_secs() })
            }
        }
    }

    /// A store of its own with the same settings, on a new connection (a pool of one): for
    /// recording what happened after a connection of this store's pool stopped answering,
    /// without waiting on that connection — or on another idle one of the same pool that may
    /// be stuck the same way.
    pub fn reopen(&self) -> Result<Store, Error> {
        Store::open_with(
            (*self.config).clone(),
            PoolOptions { max_size: 1, checkout_timeout: Some(self.checkout_timeout) },
        )
    }

    /// The settings it was opened with.
    pub fn config(&self) -> &BackendConfig {
        &self.config
    }

    /// The application connection pool.
    pub fn pool(&self) -> &r2d2::Pool<ConnectionManager> {
        &self.pool
    }

    /// An application-role session from the pool (UTC, the configured `application_name`).
    pub fn connection(&self) -> Result<PooledConnection, Error> {
        self.pool.get().map_err(Error::Pool)
    }

    /// A new DDL-role session (not pooled).
    pub fn connect_ddl(&self) -> Result<Client, Error> {
        connect(&self.config, Role::Ddl)
    }

    /// What is applied (through an application session: it may read both version tables).
    pub fn status(&self) -> Result<SchemaStatus, Error> {
        SchemaStatus::read(&mut *self.connection()?)
    }

    /// The schema gate for every command that does not migrate: `Ok` with the status when
    /// the schema is exactly what this datadiff needs, otherwise
    /// [`Error::SchemaNotCurrent`] naming `project` in its `import_config` hint (or the
    /// extension error that explains the refusal).
    pub fn gate(&self, project: &Path) -> Result<SchemaStatus, Error> {
        let status = self.status()?;
        status.gate(project)?;
        Ok(status)
    }

    /// The gate for commands that record attempts (`run`, `rerun`): [`Store::gate`], and on a
    /// backend without datadiff's extension tables (one PipelineWise migrated) also
    /// [`Error::ExtensionNeeded`] when a current definition needs one — a `row_diff`
    /// definition, whose evidence goes to `datadiff_run_differences` — naming those
    /// definitions and the one migration to apply. Without such a definition nothing is
    /// refused and no DDL is written.
    pub fn gate_for_attempts(&self, project: &Path) -> Result<SchemaStatus, Error> {
        self.gate_needing_extensions(project, None)
    }

    /// [`Store::gate_for_attempts`] for a remediation of `run_id` (`rerun`): the run's own
    /// definition revision counts too, current or not.
    pub fn gate_for_remediation(&self, project: &Path, run_id: RunId) -> Result<SchemaStatus, Error> {
        self.gate_needing_extensions(project, Some(run_id))
    }

    fn gate_needing_extensions(&self, project: &Path, run_id: Option<RunId>) -> Result<SchemaStatus, Error> {
        let status = self.gate(project)?;
        let Some(migration) = status.missing_extensions().first() else { return Ok(status) };
        let run_id = run_id.map(RunId::get);
        let rows = self
            .connection()?
            .query(
                "SELECT full_check_name FROM public.dd_check_definitions \
                  WHERE (is_current OR check_id = (SELECT check_id FROM public.dd_run_attempts WHERE run_id = $1)) \
                    AND (canonical_config -> 'datadiff') ? 'row_diff' \
                  ORDER BY full_check_name",
                &[&run_id],
            )
            .map_err(Error::query("looking for definitions that need an extension table"))?;
        let mut names = rows
            .iter()
            .map(|row| row.try_get::<_, String>(0))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::query("looking for definitions that need an extension table"))?;
        names.dedup();
        if names.is_empty() {
            return Ok(status);
        }
        Err(Error::ExtensionNeeded {
            definitions: names.join(", "),
            version: migration.version,
            name: migration.name,
            project: project.to_path_buf(),
        })
    }

    /// Migrates as the DDL role (see [`migrate_backend`]).
    pub fn migrate(&self, options: &MigrateOptions) -> Result<MigrationReport, Error> {
        migrate_backend(&self.config, options)
    }
}

/// Migrates the backend `config` names without opening the application pool: validates the
/// settings, connects once as `ddl_user` and runs [`crate::migrate::migrate`] granting row
/// access to `user`.
pub fn migrate_backend(config: &BackendConfig, options: &MigrateOptions) -> Result<MigrationReport, Error> {
    config.validate()?;
    let mut client = connect(config, Role::Ddl)?;
    migrate(&mut client, &config.user, options)
}
