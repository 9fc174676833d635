//! A PipelineWise project directory turned into validated datadiff check definitions,
//! connection settings, backend and alert settings.
//!
//! # Overview
//!
//! * [`load`] / [`load_with`]: read `config.yml`, `tap_*.yml|yaml`, `target_*.yml|yaml` and
//!   the optional `datadiff.yml` of a directory (not recursive) into a [`Project`], or return
//!   every [`Problem`] of the directory at once ([`Error::Invalid`]), each with its file, YAML
//!   path and line.
//! * [`Project`]: the [`CheckDefinition`](datadiff_diff_core::definition::CheckDefinition)s sorted by
//!   `full_check_name` (canonical JSON and `config_hash` byte-identical to PipelineWise's),
//!   [`Tap`]s and [`Target`]s with their [`DbConn`], the [`BackendSettings`] and the
//!   [`AlertSettings`].
//! * [`Secret`]: passwords and tokens; `Debug` and `Display` print `***`.
//!
//! Each file is rendered with Jinja (`{{ env_var['NAME'] }}`; an unset variable renders as an
//! empty string and is named in [`Project::warnings`], and in every "missing required field"
//! problem its empty value causes: `password (env_var DATADIFF_APP_PASSWORD is unset)`), decrypted when it is a whole-file
//! ansible vault, then parsed as YAML 1.1 the way PyYAML reads it (see `yaml.rs`: booleans
//! `yes/no/on/off`, merge keys, `!vault |` values; duplicate keys are an error). Keys of
//! PipelineWise's that datadiff does not use are accepted; unknown keys inside `data_diff`,
//! `data_diff_defaults`, `backend_db` and anywhere in `datadiff.yml` are errors.
//!
//! Validation follows PipelineWise's rules, order and messages (config note §1.5), and runs in
//! full without `backend_db`: the definitions are then returned and
//! [`Project::ignored_definitions_warning`] says they are ignored.
//!
//! # Example
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("datadiff-config-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("config.yml"), "backend_db:\n  host: localhost\n  user: dd\n  password: pw\n  dbname: dd\n  ddl_user: dd_owner\n  ddl_password: pw2\n")?;
//! std::fs::write(dir.join("target_postgres.yml"), "id: postgres\nname: Warehouse\ntype: target-postgres\ndb_conn: {host: replica, dbname: warehouse}\n")?;
//! std::fs::write(dir.join("tap_payments.yml"), r#"
//! id: payments
//! type: tap-postgres
//! target: postgres
//! db_conn: {host: primary, dbname: payments, password: "{{ env_var['PAYMENTS_PASSWORD'] }}"}
//! data_diff_defaults: {frequency: "0 * * * *", window_start: "-2h", window_end: "-1h"}
//! schemas:
//!   - source_schema: public
//!     target_schema: replicated_payments
//!     tables:
//!       - table_name: transfers
//!         data_diff: {checks: [row_count], key_column: id, timestamp_column: updated_at}
//! "#)?;
//! let options = datadiff_config::LoadOptions {
//!     env: Some([("PAYMENTS_PASSWORD".to_owned(), "s3cret".to_owned())].into()),
//!     ..Default::default()
//! };
//! let project = datadiff_config::load_with(&dir, &options)?;
//! let definition = &project.definitions[0];
//! assert_eq!(definition.full_check_name, "postgres/payments/public/transfers");
//! assert_eq!((definition.window_start_seconds, definition.window_end_seconds), (7200, 3600));
//! assert_eq!(definition.config_hash().len(), 64);
//! let password = project.tap("payments").and_then(|t| t.db_conn.as_ref()).and_then(|c| c.password.clone());
//! assert_eq!(format!("{password:?}"), "Some(Secret(***))");
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```
//!
//! # What it does not do
//!
//! No database access (the backend store and the runner connect with these settings), no
//! PipelineWise discovery or replication config, and no writing: it only reads the directory.
//! It does not run PipelineWise's full JSON-schema validation of replication settings, only
//! of the blocks datadiff reads.
//!
//! # Decisions where upstream is silent
//!
//! * Files are rendered, then decrypted when whole-file vaults (SPEC §2 order), then parsed.
//! * Connection values (`host`, `port`, `user`, `password`…) are taken as written whatever
//!   their YAML type (`password: 0755` is the text `0755`; PyYAML would hand on the integer
//!   493). Names that enter a definition (`dbname`, schema, table and column names) must be
//!   strings.
//! * `config.yml` is required; a tap referencing an unknown target is an error.
//! * What could never run is an error PipelineWise does not raise, at the key's file, path and
//!   line: a `statement_timeout` above PostgreSQL's limit or a window offset above 365,000
//!   days (`datadiff-diff-core`'s `duration` module says why), a `frequency` that never fires
//!   or has an empty list item (its `schedule` module).
//! * A window shorter than the longest time between two fires of its `frequency` is a
//!   [`Project::warnings`] entry, not an error (PipelineWise accepts it): the windows of
//!   consecutive slots leave gaps, so coverage is never contiguous.
//! * One cause is reported once: a `datadiff.yml` `checks` entry naming no definition is not
//!   reported when the definition failed validation, when its tap's tables were never read
//!   (unknown target, duplicate tap id), or when some tap file could not be read to its id (a
//!   parse error) and the entry's tap is not one that was read. A file cut short by the
//!   alias-expansion limit is reported once and not read further.

mod alerts;
mod backend;
mod certificate;
mod connection;
mod definitions;
mod document;
mod error;
mod extension;
mod project;
mod secret;
mod template;
mod tls;
mod vault;
mod yaml;

pub use alerts::{AlertSettings, LogSettings, SlackSettings, VictorOpsSettings, WebhookSettings};
pub use backend::BackendSettings;
pub use connection::{DRIVER_KEYS, DbConn, Endpoint, LIBPQ_KEYS, LibpqKeys, Pem};
pub use error::{Error, Problem};
pub use project::{LoadOptions, Project, Tap, Target, load, load_with};
pub use secret::Secret;
pub use tls::{ConnectionTls, SideTls};
pub use vault::{SecretFileError, VaultError, decrypt as decrypt_vault, read_secret_file};
