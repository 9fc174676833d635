//! The demo's world: one throwaway cluster holding a source, a PipelineWise-style replica and
//! a backend, their roles, and a project directory pointing at them.
//!
//! Everything lives in the cluster's temporary directory — the project directory too — so
//! that one removal takes it all: dropping the [`Sandbox`] stops the server and removes the
//! directory, and the testkit's watchdog does the same when the process dies without dropping
//! it (Ctrl-C while `--keep` waits, `SIGKILL`).

use std::fmt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use datadiff_testkit::{Cluster, SUPERUSER, quote_ident, quote_literal};

/// The source database.
pub(crate) const SOURCE_DATABASE: &str = "payments";
/// The replica database.
pub(crate) const REPLICA_DATABASE: &str = "warehouse";
/// The backend database.
pub(crate) const BACKEND_DATABASE: &str = "datadiff_backend";
/// The check the project defines (`target/tap/schema/table`).
pub(crate) const CHECK: &str = "warehouse/payments/public/Transfers";
/// The source transfer whose replica copy drifted (its `Amount` differs).
pub(crate) const DRIFTED_ID: i64 = 75;
/// The source transfer that was deleted and is soft-deleted in the replica.
pub(crate) const SOFT_DELETED_ID: i64 = 105;
/// Transfers generated (one every two minutes from 08:00 UTC).
pub(crate) const TRANSFERS: i64 = 180;

/// A login role and its demo-generated throwaway password.
pub(crate) struct Login {
    pub(crate) name: &'static str,
    pub(crate) password: String,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Login").field("name", &self.name).field("password", &"<redacted>").finish()
    }
}

impl Login {
    /// A role with a fresh random password (32 hex digits).
    pub(crate) fn generate(name: &'static str) -> Login {
        Login { name, password: uuid::Uuid::new_v4().simple().to_string() }
    }
}

/// The running demo world.
#[derive(Debug)]
pub(crate) struct Sandbox {
    cluster: Cluster,
    server_version: String,
    project: PathBuf,
    /// Owns the backend schema and runs the migrations (`backend_db.ddl_user`).
    pub(crate) ddl: Login,
    /// Reads and writes backend rows (`backend_db.user`): SELECT, INSERT, UPDATE only.
    pub(crate) app: Login,
    /// Reads the source and the replica, read-only (the tap's and the target's `db_conn`).
    pub(crate) reader: Login,
}

impl Sandbox {
    /// Starts the cluster. Its error is the testkit's, which says what to install when the
    /// server binaries are missing.
    pub(crate) fn start() -> Result<Sandbox, datadiff_testkit::Error> {
        let cluster = Cluster::start()?;
        let project = cluster.dir().join("project");
        Ok(Sandbox {
            cluster,
            server_version: String::new(),
            project,
            ddl: Login::generate("datadiff_ddl"),
            app: Login::generate("datadiff_app"),
            reader: Login::generate("demo_reader"),
        })
    }

    /// The cluster's temporary directory: data, log, socket and the project directory.
    pub(crate) fn dir(&self) -> &Path {
        self.cluster.dir()
    }

    /// The project directory.
    pub(crate) fn project(&self) -> &Path {
        &self.project
    }

    /// The server's host.
    pub(crate) fn host(&self) -> &str {
        self.cluster.host()
    }

    /// The server's port.
    pub(crate) fn port(&self) -> u16 {
        self.cluster.port()
    }

    /// The server's version (`SHOW server_version`), once the databases exist.
    pub(crate) fn server_version(&self) -> &str {
        &self.server_version
    }

    /// A libpq URL for `login` to `dbname` (holds the password: for `--keep` only).
    pub(crate) fn url(&self, login: &Login, dbname: &str) -> String {
        self.cluster.url(login.name, &login.password, dbname)
    }

    /// The superuser's URL to `dbname` (holds the password: for `--keep` only).
    pub(crate) fn superuser_url(&self, dbname: &str) -> String {
        self.cluster.url(SUPERUSER, self.cluster.superuser_password(), dbname)
    }

    /// Creates the roles, the three databases and their tables and rows: the replica as
    /// PipelineWise's `target-postgres` loads it, with one drifted row and one soft delete.
    pub(crate) fn create_databases(&mut self) -> anyhow::Result<()> {
        let mut postgres = self.cluster.connect("postgres")?;
        self.server_version =
            postgres.query_one("SHOW server_version", &[]).context("reading the server version")?.get(0);
        for login in [&self.ddl, &self.app, &self.reader] {
            postgres
                .batch_execute(&format!(
                    "CREATE ROLE {} LOGIN PASSWORD {}",
                    quote_ident(login.name),
                    quote_literal(&login.password)
                ))
                .with_context(|| format!("creating role {}", login.name))?;
        }
        let reader = quote_ident(self.reader.name);
        let backend = quote_ident(BACKEND_DATABASE);
        // One statement at a time: CREATE DATABASE refuses to run inside a transaction block.
        for statement in [
            format!("ALTER ROLE {reader} SET default_transaction_read_only = on"),
            format!("CREATE DATABASE {}", quote_ident(SOURCE_DATABASE)),
            format!("CREATE DATABASE {}", quote_ident(REPLICA_DATABASE)),
            // As the operator guide sets a backend up: the DDL role owns it, the application
            // role may only connect (its table grants come from the migrations).
            format!("CREATE DATABASE {backend} OWNER {}", quote_ident(self.ddl.name)),
            format!("REVOKE ALL ON DATABASE {backend} FROM PUBLIC"),
            format!("GRANT CONNECT ON DATABASE {backend} TO {}", quote_ident(self.app.name)),
        ] {
            postgres.batch_execute(&statement).context("creating the databases")?;
        }

        // The source: an application table with mixed-case names, indexed on its timestamp.
        self.cluster
            .connect(SOURCE_DATABASE)?
            .batch_execute(&format!(
                r#"CREATE TABLE public."Transfers" (
                       id bigint PRIMARY KEY,
                       "Amount" numeric(12,2) NOT NULL,
                       "Status" text NOT NULL,
                       "UpdatedAt" timestamptz NOT NULL
                   );
                   CREATE INDEX "Transfers_UpdatedAt_idx" ON public."Transfers" ("UpdatedAt");
                   INSERT INTO public."Transfers" (id, "Amount", "Status", "UpdatedAt") {rows};
                   DELETE FROM public."Transfers" WHERE id = {SOFT_DELETED_ID};
                   GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader};"#,
                rows = generated_rows(),
            ))
            .context("creating the source table")?;

        // The replica, as target-postgres creates and loads it: lower-cased names, the
        // `_sdc_*` metadata columns (`_sdc_deleted_at` as varchar), deletes kept as soft
        // deletes. And one silent error: a transfer whose amount did not arrive intact.
        self.cluster
            .connect(REPLICA_DATABASE)?
            .batch_execute(&format!(
                "CREATE SCHEMA payments;
                 CREATE TABLE payments.transfers (
                     id bigint PRIMARY KEY,
                     amount numeric(12,2),
                     status character varying,
                     updatedat timestamp with time zone,
                     _sdc_extracted_at timestamp without time zone,
                     _sdc_batched_at timestamp without time zone,
                     _sdc_deleted_at character varying
                 );
                 INSERT INTO payments.transfers (id, amount, status, updatedat) {rows};
                 UPDATE payments.transfers
                    SET _sdc_extracted_at = (updatedat AT TIME ZONE 'UTC') + interval '1 minute',
                        _sdc_batched_at = (updatedat AT TIME ZONE 'UTC') + interval '2 minutes';
                 UPDATE payments.transfers
                    SET _sdc_deleted_at = to_char((updatedat + interval '1 minute') AT TIME ZONE 'UTC',
                                                  'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')
                  WHERE id = {SOFT_DELETED_ID};
                 UPDATE payments.transfers SET amount = amount + 0.01 WHERE id = {DRIFTED_ID};
                 GRANT USAGE ON SCHEMA payments TO {reader};
                 GRANT SELECT ON ALL TABLES IN SCHEMA payments TO {reader};",
                rows = generated_rows(),
            ))
            .context("creating the replica table")?;
        Ok(())
    }

    /// Writes the project directory (owned like the cluster directory, so that the testkit's
    /// watchdog, which may run as another user, can remove it).
    pub(crate) fn write_project(&self) -> anyhow::Result<()> {
        std::fs::create_dir(&self.project)
            .with_context(|| format!("creating the project directory {}", self.project.display()))?;
        let owner = std::fs::metadata(self.cluster.dir()).context("reading the cluster directory's owner")?;
        std::os::unix::fs::chown(&self.project, Some(owner.uid()), Some(owner.gid()))
            .with_context(|| format!("chown {}", self.project.display()))?;
        let logins = Logins { app: &self.app, ddl: &self.ddl, reader: &self.reader };
        for (name, text) in project_files(self.host(), self.port(), &logins) {
            let path = self.project.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            // The files hold the throwaway passwords.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("chmod {}", path.display()))?;
        }
        Ok(())
    }

    /// A superuser session on the replica database (to load the MariaDB source's table).
    pub(crate) fn replica_client(&self) -> anyhow::Result<postgres::Client> {
        Ok(self.cluster.connect(REPLICA_DATABASE)?)
    }

    /// Repairs the drifted replica row as a resync would: the source's amount again.
    pub(crate) fn repair_replica(&self) -> anyhow::Result<()> {
        let mut replica = self.cluster.connect(REPLICA_DATABASE)?;
        let updated = replica
            .execute(
                "UPDATE payments.transfers SET amount = amount - 0.01, \
                        _sdc_batched_at = _sdc_batched_at + interval '3 hours' \
                  WHERE id = $1",
                &[&DRIFTED_ID],
            )
            .context("repairing the replica row")?;
        anyhow::ensure!(updated == 1, "the drifted replica row is missing");
        Ok(())
    }

    /// The demo's backend, opened as its application role (as `run` opens it).
    fn store(&self) -> anyhow::Result<datadiff_backend_store::Store> {
        let config = datadiff_backend_store::BackendConfig {
            host: self.cluster.host().to_owned(),
            port: self.cluster.port(),
            user: self.app.name.to_owned(),
            password: self.app.password.clone(),
            dbname: BACKEND_DATABASE.to_owned(),
            ddl_user: self.ddl.name.to_owned(),
            ddl_password: self.ddl.password.clone(),
            ..datadiff_backend_store::BackendConfig::default()
        };
        datadiff_runner::open_backend(config).map_err(crate::project::unwrap_backend)
    }

    /// Every watermark event, oldest first.
    pub(crate) fn watermark_events(&self) -> anyhow::Result<Vec<WatermarkEvent>> {
        let events = self.store()?.watermark_events()?;
        Ok(events
            .into_iter()
            .map(|event| WatermarkEvent {
                event_type: event.event_type,
                verified_status: event.verified_status,
                verified_end: event.verified_end,
            })
            .collect())
    }

    /// The run id of the slot the failure report names (the unresolved failed slot's
    /// effective attempt; the oldest, should there be several).
    pub(crate) fn unresolved_failure(&self) -> anyhow::Result<String> {
        let failures = self.store()?.failure_report()?;
        failures
            .iter()
            .min_by_key(|failure| failure.scheduled_for)
            .map(|failure| failure.run_id.to_string())
            .ok_or_else(|| anyhow::anyhow!("no slot failed: the drift went unnoticed"))
    }
}

/// One row of `dd_watermark_events`, as the demo prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatermarkEvent {
    pub(crate) event_type: String,
    pub(crate) verified_status: String,
    pub(crate) verified_end: Option<chrono::DateTime<chrono::Utc>>,
}

/// One transfer every two minutes from 08:00 UTC on 2026-07-22, amounts and statuses derived
/// from the id (the same rows on both sides).
fn generated_rows() -> String {
    format!(
        "SELECT g, round(((g * 731) % 50000 + 100) / 100.0, 2), (ARRAY['pending', 'paid', 'refunded'])[g % 3 + 1], \
                timestamptz '2026-07-22 08:00:00+00' + g * interval '2 minutes' \
           FROM generate_series(0, {}) g",
        TRANSFERS - 1
    )
}

/// The roles the project's files name.
struct Logins<'a> {
    app: &'a Login,
    ddl: &'a Login,
    reader: &'a Login,
}

/// The project's files: PipelineWise's `config.yml`, a target and a tap, and datadiff's
/// `datadiff.yml`.
fn project_files(host: &str, port: u16, sandbox: &Logins<'_>) -> [(&'static str, String); 4] {
    let config = format!(
        "# PipelineWise's main config: datadiff reads only backend_db and alert_handlers.\n\
         backend_db:\n  host: {host}\n  port: {port}\n  dbname: {BACKEND_DATABASE}\n  \
         user: {app}\n  password: \"{app_password}\"\n  \
         ddl_user: {ddl}\n  ddl_password: \"{ddl_password}\"\n  sslmode: disable\n",
        app = sandbox.app.name,
        app_password = sandbox.app.password,
        ddl = sandbox.ddl.name,
        ddl_password = sandbox.ddl.password,
    );
    let target = format!(
        "id: warehouse\nname: Warehouse\ntype: target-postgres\ndb_conn:\n  host: {host}\n  port: {port}\n  \
         user: {reader}\n  password: \"{password}\"\n  dbname: {REPLICA_DATABASE}\n",
        reader = sandbox.reader.name,
        password = sandbox.reader.password,
    );
    let tap = format!(
        "id: payments\nname: Payments\ntype: tap-postgres\nowner: demo@example.com\ntarget: warehouse\n\
         db_conn:\n  host: {host}\n  port: {port}\n  user: {reader}\n  password: \"{password}\"\n  \
         dbname: {SOURCE_DATABASE}\n\
         data_diff_defaults:\n  frequency: \"0 * * * *\"   # hourly, UTC\n  \
         window_start: \"-1h\"          # each slot checks the hour before it fired\n  window_end: \"0s\"\n\
         schemas:\n  - source_schema: public\n    target_schema: payments\n    tables:\n      \
         - table_name: Transfers\n        replication_method: INCREMENTAL\n        replication_key: UpdatedAt\n        \
         data_diff:\n          checks: [schema_compatibility, row_count, distinct_key_count, null_key_count,\n                   \
         duplicate_key_count, min_key, max_key, row_checksum]\n          key_column: id\n          \
         timestamp_column: UpdatedAt\n          compare_columns: [Amount, Status]\n",
        reader = sandbox.reader.name,
        password = sandbox.reader.password,
    );
    let datadiff = format!(
        "# datadiff's extensions (PipelineWise never reads this file).\n\
         alert_handlers:\n  log: {{path: alerts.jsonl}}      # failure alerts as JSON lines\n\
         checks:\n  {CHECK}:\n    exclude_soft_deleted: true   # leave out rows PipelineWise soft-deleted\n    \
         row_diff: {{max_examples: 20}}  # name the rows that differ, by key and column\n"
    );
    [("config.yml", config), ("target_warehouse.yml", target), ("tap_payments.yml", tap), ("datadiff.yml", datadiff)]
}

/// [`project_files`] for the tests of other modules.
#[cfg(test)]
pub(crate) fn project_files_for_tests(
    host: &str,
    port: u16,
    app: &Login,
    ddl: &Login,
    reader: &Login,
) -> [(&'static str, String); 4] {
    project_files(host, port, &Logins { app, ddl, reader })
}

#[cfg(test)]
mod tests {
    use datadiff_diff_core::definition::CheckType;

    use super::*;

    #[test]
    fn the_project_validates_with_one_pipelinewise_style_check() {
        let (app, ddl, reader) = (Login::generate("app"), Login::generate("ddl"), Login::generate("reader"));
        let logins = Logins { app: &app, ddl: &ddl, reader: &reader };
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in project_files("127.0.0.1", 54321, &logins) {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let project = datadiff_config::load(dir.path(), None).unwrap();
        assert!(project.warnings.is_empty(), "{:?}", project.warnings);
        let [definition] = project.definitions.as_slice() else { panic!("one definition: {:?}", project.definitions) };
        assert_eq!(definition.full_check_name, CHECK);
        assert_eq!(definition.source_database, SOURCE_DATABASE);
        assert_eq!(definition.target_database, REPLICA_DATABASE);
        // target-postgres lower-cases the replica's names.
        assert_eq!(definition.target_table, "transfers");
        assert_eq!(definition.target_timestamp_column, "updatedat");
        assert_eq!(definition.target_compare_columns, ["amount", "status"]);
        assert_eq!(definition.checks.len(), 8);
        assert!(definition.checks.contains(&CheckType::RowChecksum));
        assert!(definition.extensions.exclude_soft_deleted);
        assert!(definition.extensions.row_diff.is_some(), "{:?}", definition.extensions);
        let backend = project.backend.as_ref().expect("backend_db");
        assert_eq!(backend.dbname, BACKEND_DATABASE);
    }

    #[test]
    fn a_login_never_shows_its_password_in_debug() {
        let login = Login::generate("someone");
        assert_eq!(login.password.len(), 32);
        let text = format!("{login:?}");
        assert!(text.contains("someone") && !text.contains(&login.password), "{text}");
    }
}
