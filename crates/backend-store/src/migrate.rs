//! Migrations: PipelineWise's Alembic chain `001`–`004` re-created in datadiff's own SQL, and
//! datadiff's forward-only extension chain.
//!
//! # Two chains
//!
//! * **Upstream** ([`Revision`]): each revision's up and down SQL reproduces what
//!   PipelineWise's Alembic revision does — same tables, columns, types, constraint and
//!   index names, comments and grants — step by step: 001 creates the original watermark
//!   column names, 002 renames columns and then the constraints named after them, 003 makes
//!   historical starts nullable, 004 adds the index-warning table. Progress is recorded in
//!   `public.alembic_version` exactly as Alembic records it (`INSERT` of `'001'`, then
//!   `UPDATE`s; `DELETE` at base). So PipelineWise's own Alembic can later upgrade or
//!   downgrade a backend datadiff created, and the reverse.
//! * **Extensions** ([`ExtensionMigration`]): datadiff's own tables (`datadiff_*`), recorded
//!   in `public.datadiff_schema_migrations` with a SHA-256 checksum of each migration's SQL,
//!   never in `alembic_version`. They apply only on top of upstream 004. An applied one whose
//!   checksum differs from the embedded one is refused. They are forward-only: going below
//!   004 needs `drop_extensions`, which first runs each one's teardown (newest first) and
//!   drops the record table.
//!
//! # One transaction, one lock
//!
//! [`migrate`] runs, as the DDL role, in one transaction: it takes
//! `pg_advisory_xact_lock(hashtext('datadiff.migrate'))`, reads what is applied, computes
//! the [`plan`], applies every step and its version record, and commits — so concurrent
//! migrators serialize and the loser finds nothing left to do, and a failing step (the
//! 003 → 002 guard, say) leaves the backend exactly as it was. This is sqlx's model, and
//! Alembic's own `env.py` also runs all pending revisions in one transaction.
//!
//! # Adoption
//!
//! Before the first extension migration is applied — which is what happens to a backend
//! PipelineWise created and migrated to 004 — and whenever datadiff's own upstream steps
//! end at 004, the catalog of the `dd_*` tables and `alembic_version` is compared with
//! PipelineWise's expected revision-004 catalog ([`crate::Catalog::expected_upstream`]).
//! A difference refuses the whole migration and names the first difference.

use std::fmt;
use std::str::FromStr;

use postgres::error::SqlState;
use postgres::{Client, Transaction};
use sha2::{Digest, Sha256};

use crate::catalog::{Catalog, CatalogScope};
use crate::error::Error;
use crate::status::{AppliedExtension, SchemaStatus, UpstreamState};

/// The advisory-lock key text: the lock is `pg_advisory_xact_lock(hashtext(MIGRATION_LOCK))`.
pub const MIGRATION_LOCK: &str = "datadiff.migrate";

/// The placeholder in the embedded SQL replaced by the application role, quoted.
const APP_ROLE_PLACEHOLDER: &str = "{{app_role}}";

/// The 003 → 002 guard's message starts with this (PipelineWise's wording).
const DOWNGRADE_GUARD_PREFIX: &str = "Cannot downgrade data-diff to revision 002";

/// A PipelineWise Alembic revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// `001`: the initial data-diff schema.
    R001,
    /// `002`: watermark columns renamed to the verified-interval names.
    R002,
    /// `003`: unresolved historical windows (NULL starts, DEFERRED).
    R003,
    /// `004`: delivered index-warning state.
    R004,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 4] = [Revision::R001, Revision::R002, Revision::R003, Revision::R004];

    /// The newest revision, the one datadiff needs.
    pub const HEAD: Revision = Revision::R004;

    /// The revision id as stored in `alembic_version`.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::R001 => "001",
            Revision::R002 => "002",
            Revision::R003 => "003",
            Revision::R004 => "004",
        }
    }

    /// The revision this one revises (`None` for 001, which starts from base).
    pub fn previous(self) -> Option<Revision> {
        match self {
            Revision::R001 => None,
            Revision::R002 => Some(Revision::R001),
            Revision::R003 => Some(Revision::R002),
            Revision::R004 => Some(Revision::R003),
        }
    }

    fn up_sql(self) -> &'static str {
        match self {
            Revision::R001 => include_str!("../migrations/upstream/001_up.sql"),
            Revision::R002 => include_str!("../migrations/upstream/002_up.sql"),
            Revision::R003 => include_str!("../migrations/upstream/003_up.sql"),
            Revision::R004 => include_str!("../migrations/upstream/004_up.sql"),
        }
    }

    fn down_sql(self) -> &'static str {
        match self {
            Revision::R001 => include_str!("../migrations/upstream/001_down.sql"),
            Revision::R002 => include_str!("../migrations/upstream/002_down.sql"),
            Revision::R003 => include_str!("../migrations/upstream/003_down.sql"),
            Revision::R004 => include_str!("../migrations/upstream/004_down.sql"),
        }
    }
}

impl FromStr for Revision {
    type Err = Error;

    fn from_str(text: &str) -> Result<Revision, Error> {
        Revision::ALL
            .into_iter()
            .find(|revision| revision.as_str() == text)
            .ok_or_else(|| Error::UnknownRevision(text.to_owned()))
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One of datadiff's extension migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtensionMigration {
    /// Its version, from 1, consecutive.
    pub version: i32,
    /// A short name, recorded with it.
    pub name: &'static str,
    /// The SQL that applies it (its checksum is taken over this text).
    pub sql: &'static str,
    /// The SQL that removes what it created (used only by `drop_extensions`).
    pub teardown: &'static str,
}

impl ExtensionMigration {
    /// The lowercase hex SHA-256 of its SQL, with CRLF line ends read as LF so that a
    /// checkout's line-ending conversion does not change it.
    pub fn checksum(&self) -> String {
        let normalized = self.sql.replace("\r\n", "\n");
        Sha256::digest(normalized.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// datadiff's extension chain, oldest first.
pub const EXTENSIONS: &[ExtensionMigration] = &[
    ExtensionMigration {
        version: 1,
        name: "run_differences",
        sql: include_str!("../migrations/extensions/0001_run_differences.sql"),
        teardown: include_str!("../migrations/extensions/0001_run_differences.teardown.sql"),
    },
    ExtensionMigration {
        version: 2,
        name: "replica_horizons",
        sql: include_str!("../migrations/extensions/0002_replica_horizons.sql"),
        teardown: include_str!("../migrations/extensions/0002_replica_horizons.teardown.sql"),
    },
    ExtensionMigration {
        version: 3,
        name: "run_parts",
        sql: include_str!("../migrations/extensions/0003_run_parts.sql"),
        teardown: include_str!("../migrations/extensions/0003_run_parts.teardown.sql"),
    },
];

/// The newest extension version this datadiff embeds (the `n` of "004 (+ extensions n)").
pub fn latest_extension_version() -> i32 {
    EXTENSIONS.last().map_or(0, |migration| migration.version)
}

/// Where to migrate to (`migrate --to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Target {
    /// Upstream 004 and every extension migration (the default; also `--to 004`).
    #[default]
    Latest,
    /// No upstream tables (`--to base`).
    Base,
    /// An upstream revision; 004 means [`Target::Latest`].
    Revision(Revision),
}

impl Target {
    /// The upstream revision the target ends at (`None` for base).
    pub fn revision(self) -> Option<Revision> {
        match self {
            Target::Latest => Some(Revision::HEAD),
            Target::Base => None,
            Target::Revision(revision) => Some(revision),
        }
    }

    /// Whether the extension chain lives at this target (only at 004).
    pub fn keeps_extensions(self) -> bool {
        self.revision() == Some(Revision::HEAD)
    }
}

impl FromStr for Target {
    type Err = Error;

    /// `base`, `001`–`004`, or `head`.
    fn from_str(text: &str) -> Result<Target, Error> {
        match text {
            "base" => Ok(Target::Base),
            "head" => Ok(Target::Latest),
            other => other.parse().map(Target::Revision).map_err(|_| Error::InvalidTarget(other.to_owned())),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Latest => f.write_str("head"),
            Target::Base => f.write_str("base"),
            Target::Revision(revision) => f.write_str(revision.as_str()),
        }
    }
}

/// What to migrate to, and whether extension tables may be dropped on the way down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MigrateOptions {
    /// The target (default: latest).
    pub target: Target,
    /// Allow removing the extension tables — and their `row_diff` evidence — to go below 004.
    pub drop_extensions: bool,
}

impl MigrateOptions {
    /// Migrate to the latest schema (what `import_config` does).
    pub fn latest() -> MigrateOptions {
        MigrateOptions::default()
    }

    /// Migrate to `target`, dropping extensions when `drop_extensions`.
    pub fn to(target: Target, drop_extensions: bool) -> MigrateOptions {
        MigrateOptions { target, drop_extensions }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// Apply this upstream revision (from its predecessor).
    Upgrade(Revision),
    /// Undo this upstream revision (back to its predecessor).
    Downgrade(Revision),
    /// Apply this extension migration.
    Extension {
        /// Its version.
        version: i32,
        /// Its name.
        name: &'static str,
    },
    /// Tear down every applied extension migration, newest first, and drop their record.
    DropExtensions,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = |revision: Option<Revision>| revision.map_or("base", Revision::as_str);
        match self {
            Step::Upgrade(revision) => write!(f, "{} -> {}", base(revision.previous()), revision),
            Step::Downgrade(revision) => write!(f, "{} -> {}", revision, base(revision.previous())),
            Step::Extension { version, name } => write!(f, "extension {version} ({name})"),
            Step::DropExtensions => f.write_str("drop extensions"),
        }
    }
}

/// The steps that take a backend in state `applied` to `options.target`, given the embedded
/// extension chain — or why it must not be migrated. Pure: no I/O.
///
/// Refusals, in order of checking: an unknown upstream revision; an applied extension that
/// is not embedded, was changed (checksum), or is out of order; `drop_extensions` with a
/// target that keeps them; a target below 004 while extension tables exist, without
/// `drop_extensions`.
pub fn plan(
    applied: &SchemaStatus,
    embedded: &[ExtensionMigration],
    options: &MigrateOptions,
) -> Result<Vec<Step>, Error> {
    let current = match &applied.upstream {
        UpstreamState::Base => None,
        UpstreamState::At(revision) => Some(*revision),
        UpstreamState::Unknown(text) => return Err(Error::UnknownRevision(text.clone())),
    };
    check_extensions(&applied.extensions, embedded)?;

    let target = options.target.revision();
    let keep_extensions = options.target.keeps_extensions();
    if options.drop_extensions && keep_extensions {
        return Err(Error::DropExtensionsNeedsLowerTarget);
    }

    let mut steps = Vec::new();
    let has_extensions = applied.extension_table || !applied.extensions.is_empty();
    if !keep_extensions && has_extensions {
        if !options.drop_extensions {
            return Err(Error::ExtensionsBlockDowngrade { target: options.target });
        }
        steps.push(Step::DropExtensions);
    }
    if target > current {
        steps.extend(Revision::ALL.into_iter().filter(|r| Some(*r) > current && Some(*r) <= target).map(Step::Upgrade));
    } else if target < current {
        steps.extend(
            Revision::ALL.into_iter().rev().filter(|r| Some(*r) <= current && Some(*r) > target).map(Step::Downgrade),
        );
    }
    if keep_extensions {
        steps.extend(
            embedded[applied.extensions.len()..]
                .iter()
                .map(|migration| Step::Extension { version: migration.version, name: migration.name }),
        );
    }
    Ok(steps)
}

/// Applied extensions must be exactly the embedded chain's first ones, unchanged.
fn check_extensions(applied: &[AppliedExtension], embedded: &[ExtensionMigration]) -> Result<(), Error> {
    for migration in applied {
        match embedded.iter().find(|candidate| candidate.version == migration.version) {
            None => {
                return Err(Error::UnknownExtension { version: migration.version, name: migration.name.clone() });
            }
            Some(known) if known.checksum() != migration.checksum.trim_end() => {
                return Err(Error::ExtensionChecksumMismatch {
                    version: migration.version,
                    name: migration.name.clone(),
                });
            }
            Some(_) => {}
        }
    }
    for (position, migration) in applied.iter().enumerate() {
        let expected = embedded[position].version;
        if migration.version != expected {
            return Err(Error::ExtensionGap { missing: expected });
        }
    }
    Ok(())
}

/// What [`migrate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// The state found once the lock was held.
    pub before: SchemaStatus,
    /// The steps applied, in order (empty when there was nothing to do).
    pub steps: Vec<Step>,
    /// The state committed.
    pub after: SchemaStatus,
}

/// Migrates the backend `client` is connected to (as the DDL role, which owns the schema)
/// to `options.target`, granting row access to `application_role`. All in one transaction
/// under the migration advisory lock: either every step is applied, or none.
pub fn migrate(
    client: &mut Client,
    application_role: &str,
    options: &MigrateOptions,
) -> Result<MigrationReport, Error> {
    let mut transaction = client.transaction().map_err(Error::query("starting the migration transaction"))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&MIGRATION_LOCK])
        .map_err(Error::query("taking the migration lock"))?;
    let before = SchemaStatus::read(&mut transaction)?;
    let steps = plan(&before, EXTENSIONS, options)?;
    if steps.is_empty() {
        transaction.commit().map_err(Error::query("committing the migration"))?;
        return Ok(MigrationReport { after: before.clone(), before, steps });
    }

    let role = datadiff_diff_core::plan::quoted_ident(application_role);
    let mut catalog_checked = false;
    for step in &steps {
        tracing::info!(%step, "applying backend migration step");
        match *step {
            Step::Upgrade(revision) => {
                if revision.previous().is_none() {
                    run(&mut transaction, step, include_str!("../migrations/upstream/version_table.sql"))?;
                }
                run(&mut transaction, step, &with_role(revision.up_sql(), &role))?;
                record_upstream(&mut transaction, step, revision.previous(), Some(revision))?;
            }
            Step::Downgrade(revision) => {
                run(&mut transaction, step, revision.down_sql())?;
                record_upstream(&mut transaction, step, Some(revision), revision.previous())?;
            }
            Step::Extension { version, name } => {
                if !catalog_checked {
                    check_upstream_catalog(&mut transaction, application_role)?;
                    catalog_checked = true;
                }
                let Some(migration) = EXTENSIONS.iter().find(|migration| migration.version == version) else {
                    return Err(Error::UnknownExtension { version, name: name.to_owned() });
                };
                if !extension_table_exists(&mut transaction)? {
                    run(
                        &mut transaction,
                        step,
                        &with_role(include_str!("../migrations/extensions/bookkeeping.sql"), &role),
                    )?;
                }
                run(&mut transaction, step, &with_role(migration.sql, &role))?;
                transaction
                    .execute(
                        "INSERT INTO public.datadiff_schema_migrations (version, name, checksum, applied_at) \
                         VALUES ($1, $2, $3, now())",
                        &[&migration.version, &migration.name, &migration.checksum()],
                    )
                    .map_err(|source| Error::MigrationStep { step: *step, source })?;
            }
            Step::DropExtensions => {
                for applied in before.extensions.iter().rev() {
                    if let Some(migration) = EXTENSIONS.iter().find(|migration| migration.version == applied.version) {
                        run(&mut transaction, step, migration.teardown)?;
                    }
                }
                run(&mut transaction, step, "DROP TABLE IF EXISTS public.datadiff_schema_migrations")?;
            }
        }
    }
    let upgraded = steps.iter().any(|step| matches!(step, Step::Upgrade(_)));
    if upgraded && !catalog_checked && options.target.revision() == Some(Revision::HEAD) {
        check_upstream_catalog(&mut transaction, application_role)?;
    }
    let after = SchemaStatus::read(&mut transaction)?;
    transaction.commit().map_err(Error::query("committing the migration"))?;
    Ok(MigrationReport { before, steps, after })
}

fn run(transaction: &mut Transaction<'_>, step: &Step, sql: &str) -> Result<(), Error> {
    transaction.batch_execute(sql).map_err(|source| {
        if let Some(db) = source.as_db_error()
            && *db.code() == SqlState::RAISE_EXCEPTION
            && db.message().starts_with(DOWNGRADE_GUARD_PREFIX)
        {
            return Error::DowngradeRefused { message: db.message().to_owned() };
        }
        Error::MigrationStep { step: *step, source }
    })
}

/// Records a move from `from` to `to` in `alembic_version`, as Alembic does.
fn record_upstream(
    transaction: &mut Transaction<'_>,
    step: &Step,
    from: Option<Revision>,
    to: Option<Revision>,
) -> Result<(), Error> {
    let result = match (from, to) {
        (None, Some(to)) => {
            transaction.execute("INSERT INTO public.alembic_version (version_num) VALUES ($1)", &[&to.as_str()])
        }
        (Some(from), None) => {
            transaction.execute("DELETE FROM public.alembic_version WHERE version_num = $1", &[&from.as_str()])
        }
        (Some(from), Some(to)) => transaction.execute(
            "UPDATE public.alembic_version SET version_num = $1 WHERE version_num = $2",
            &[&to.as_str(), &from.as_str()],
        ),
        (None, None) => return Ok(()),
    };
    result.map(|_| ()).map_err(|source| Error::MigrationStep { step: *step, source })
}

fn extension_table_exists(transaction: &mut Transaction<'_>) -> Result<bool, Error> {
    transaction
        .query_one("SELECT to_regclass('public.datadiff_schema_migrations') IS NOT NULL", &[])
        .and_then(|row| row.try_get(0))
        .map_err(Error::query("looking for the extension migration table"))
}

/// Refuses (rolling everything back) unless the upstream part of the catalog is
/// PipelineWise's revision 004.
fn check_upstream_catalog(transaction: &mut Transaction<'_>, application_role: &str) -> Result<(), Error> {
    let ddl_role: String = transaction
        .query_one("SELECT current_user::text", &[])
        .and_then(|row| row.try_get(0))
        .map_err(Error::query("reading the migration role"))?;
    let actual = Catalog::read(transaction, CatalogScope::Upstream, application_role, &ddl_role)?;
    let expected = Catalog::expected_upstream().for_roles(application_role, &ddl_role);
    match expected.first_difference(&actual) {
        Some(difference) => Err(Error::CatalogMismatch { difference }),
        None => Ok(()),
    }
}

fn with_role(sql: &str, quoted_role: &str) -> String {
    sql.replace(APP_ROLE_PLACEHOLDER, quoted_role)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(upstream: UpstreamState, extensions: &[&ExtensionMigration]) -> SchemaStatus {
        SchemaStatus {
            upstream,
            extension_table: !extensions.is_empty(),
            extensions: extensions
                .iter()
                .map(|migration| AppliedExtension {
                    version: migration.version,
                    name: migration.name.to_owned(),
                    checksum: migration.checksum(),
                })
                .collect(),
        }
    }

    const ONE: ExtensionMigration =
        ExtensionMigration { version: 1, name: "one", sql: "CREATE TABLE a ();", teardown: "" };
    const TWO: ExtensionMigration =
        ExtensionMigration { version: 2, name: "two", sql: "CREATE TABLE b ();", teardown: "" };
    const CHAIN: &[ExtensionMigration] = &[ONE, TWO];

    fn at(revision: Revision) -> UpstreamState {
        UpstreamState::At(revision)
    }

    fn latest() -> MigrateOptions {
        MigrateOptions::latest()
    }

    #[test]
    fn an_empty_backend_gets_every_upstream_step_then_every_extension() {
        let steps = plan(&status(UpstreamState::Base, &[]), CHAIN, &latest()).unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Upgrade(Revision::R001),
                Step::Upgrade(Revision::R002),
                Step::Upgrade(Revision::R003),
                Step::Upgrade(Revision::R004),
                Step::Extension { version: 1, name: "one" },
                Step::Extension { version: 2, name: "two" },
            ]
        );
    }

    #[test]
    fn an_upstream_backend_at_004_gets_only_the_extension_chain() {
        let steps = plan(&status(at(Revision::R004), &[]), CHAIN, &latest()).unwrap();
        assert_eq!(
            steps,
            vec![Step::Extension { version: 1, name: "one" }, Step::Extension { version: 2, name: "two" }]
        );
        let steps = plan(&status(at(Revision::R004), &[&ONE]), CHAIN, &latest()).unwrap();
        assert_eq!(steps, vec![Step::Extension { version: 2, name: "two" }]);
    }

    #[test]
    fn a_current_backend_needs_nothing() {
        assert_eq!(plan(&status(at(Revision::R004), &[&ONE, &TWO]), CHAIN, &latest()).unwrap(), vec![]);
        let target_004 = MigrateOptions::to(Target::Revision(Revision::R004), false);
        assert_eq!(plan(&status(at(Revision::R004), &[&ONE, &TWO]), CHAIN, &target_004).unwrap(), vec![]);
    }

    #[test]
    fn an_older_upstream_backend_is_upgraded_from_where_it_is() {
        let steps = plan(&status(at(Revision::R002), &[]), CHAIN, &latest()).unwrap();
        assert_eq!(&steps[..2], &[Step::Upgrade(Revision::R003), Step::Upgrade(Revision::R004)]);
        assert_eq!(steps.len(), 4);
    }

    #[test]
    fn a_lower_target_without_extensions_goes_down_step_by_step() {
        let options = MigrateOptions::to(Target::Revision(Revision::R002), false);
        let steps = plan(&status(at(Revision::R004), &[]), CHAIN, &options).unwrap();
        assert_eq!(steps, vec![Step::Downgrade(Revision::R004), Step::Downgrade(Revision::R003)]);

        let options = MigrateOptions::to(Target::Base, false);
        let steps = plan(&status(at(Revision::R002), &[]), CHAIN, &options).unwrap();
        assert_eq!(steps, vec![Step::Downgrade(Revision::R002), Step::Downgrade(Revision::R001)]);
    }

    #[test]
    fn an_intermediate_target_goes_up_without_extensions() {
        let options = MigrateOptions::to(Target::Revision(Revision::R003), false);
        let steps = plan(&status(UpstreamState::Base, &[]), CHAIN, &options).unwrap();
        assert_eq!(
            steps,
            vec![Step::Upgrade(Revision::R001), Step::Upgrade(Revision::R002), Step::Upgrade(Revision::R003)]
        );
    }

    #[test]
    fn going_below_004_with_extensions_needs_drop_extensions_and_drops_them_first() {
        let options = MigrateOptions::to(Target::Revision(Revision::R003), false);
        let error = plan(&status(at(Revision::R004), &[&ONE]), CHAIN, &options).unwrap_err();
        assert!(matches!(error, Error::ExtensionsBlockDowngrade { target: Target::Revision(Revision::R003) }));
        assert!(error.to_string().contains("--drop-extensions"), "{error}");

        let options = MigrateOptions::to(Target::Revision(Revision::R003), true);
        let steps = plan(&status(at(Revision::R004), &[&ONE]), CHAIN, &options).unwrap();
        assert_eq!(steps, vec![Step::DropExtensions, Step::Downgrade(Revision::R004)]);

        // An empty record table counts as extensions present.
        let mut empty = status(at(Revision::R004), &[]);
        empty.extension_table = true;
        let options = MigrateOptions::to(Target::Base, false);
        assert!(matches!(plan(&empty, CHAIN, &options), Err(Error::ExtensionsBlockDowngrade { .. })));
    }

    #[test]
    fn drop_extensions_with_a_target_that_keeps_them_is_refused() {
        let options = MigrateOptions::to(Target::Latest, true);
        assert!(matches!(
            plan(&status(at(Revision::R004), &[&ONE]), CHAIN, &options),
            Err(Error::DropExtensionsNeedsLowerTarget)
        ));
    }

    #[test]
    fn an_edited_extension_is_refused_by_checksum() {
        let edited = ExtensionMigration { sql: "CREATE TABLE a (id int);", ..ONE };
        let applied = status(at(Revision::R004), &[&edited]);
        let error = plan(&applied, CHAIN, &latest()).unwrap_err();
        assert!(matches!(&error, Error::ExtensionChecksumMismatch { version: 1, name } if name == "one"));
        assert!(error.is_schema());
        // Also when going down: a changed history is never acted on.
        let options = MigrateOptions::to(Target::Base, true);
        assert!(matches!(plan(&applied, CHAIN, &options), Err(Error::ExtensionChecksumMismatch { .. })));
    }

    #[test]
    fn an_extension_from_a_newer_datadiff_is_refused() {
        let applied = status(at(Revision::R004), &[&ONE, &TWO]);
        let error = plan(&applied, &CHAIN[..1], &latest()).unwrap_err();
        assert!(matches!(&error, Error::UnknownExtension { version: 2, name } if name == "two"));
    }

    #[test]
    fn extensions_applied_out_of_order_are_refused() {
        let applied = status(at(Revision::R004), &[&TWO]);
        assert!(matches!(plan(&applied, CHAIN, &latest()), Err(Error::ExtensionGap { missing: 1 })));
    }

    #[test]
    fn an_unknown_upstream_revision_is_refused() {
        let applied = status(UpstreamState::Unknown("005".into()), &[]);
        let error = plan(&applied, CHAIN, &latest()).unwrap_err();
        assert!(matches!(&error, Error::UnknownRevision(text) if text == "005"));
    }

    #[test]
    fn crlf_line_ends_do_not_change_a_checksum() {
        let lf = ExtensionMigration { sql: "CREATE TABLE a ();\nSELECT 1;\n", ..ONE };
        let crlf = ExtensionMigration { sql: "CREATE TABLE a ();\r\nSELECT 1;\r\n", ..ONE };
        assert_eq!(lf.checksum(), crlf.checksum());
        assert_eq!(lf.checksum().len(), 64);
        assert_ne!(lf.checksum(), ONE.checksum());
    }

    #[test]
    fn sha256_of_the_sql_is_the_checksum() {
        // SHA-256("abc"), the FIPS 180-2 test vector.
        let abc = ExtensionMigration { sql: "abc", ..ONE };
        assert_eq!(abc.checksum(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn targets_parse_from_the_command_line_spelling() {
        assert_eq!("base".parse::<Target>().unwrap(), Target::Base);
        assert_eq!("head".parse::<Target>().unwrap(), Target::Latest);
        assert_eq!("003".parse::<Target>().unwrap(), Target::Revision(Revision::R003));
        assert!(Target::Revision(Revision::R004).keeps_extensions());
        assert!(!Target::Revision(Revision::R003).keeps_extensions());
        assert!(matches!("3".parse::<Target>(), Err(Error::InvalidTarget(text)) if text == "3"));
    }

    #[test]
    fn steps_read_like_alembic_moves() {
        assert_eq!(Step::Upgrade(Revision::R001).to_string(), "base -> 001");
        assert_eq!(Step::Downgrade(Revision::R003).to_string(), "003 -> 002");
        assert_eq!(
            Step::Extension { version: 1, name: "run_differences" }.to_string(),
            "extension 1 (run_differences)"
        );
    }

    #[test]
    fn the_role_placeholder_becomes_a_quoted_identifier() {
        let sql = "GRANT SELECT ON t TO {{app_role}};";
        assert_eq!(with_role(sql, &datadiff_diff_core::plan::quoted_ident("app")), "GRANT SELECT ON t TO \"app\";");
        assert_eq!(
            with_role(sql, &datadiff_diff_core::plan::quoted_ident("we\"ird")),
            "GRANT SELECT ON t TO \"we\"\"ird\";"
        );
        for revision in Revision::ALL {
            assert!(!with_role(revision.up_sql(), "\"x\"").contains("{{"), "{revision}");
        }
    }

    #[test]
    fn no_migration_drops_a_schema_or_deletes_rows_on_the_way_up() {
        let ups = Revision::ALL.iter().map(|revision| revision.up_sql()).chain(EXTENSIONS.iter().map(|m| m.sql));
        for sql in ups {
            let upper = sql.to_uppercase();
            assert!(!upper.contains("DROP SCHEMA"));
            assert!(!upper.contains("DELETE FROM"));
            assert!(!upper.contains("UPDATE PUBLIC"));
            assert!(!upper.contains("GRANT DELETE") && !upper.contains(", DELETE") && !upper.contains("TRUNCATE"));
        }
        for revision in Revision::ALL {
            assert!(!revision.down_sql().to_uppercase().contains("DROP SCHEMA"));
        }
    }

    #[test]
    fn the_004_downgrade_only_drops_the_warning_table() {
        let statements: Vec<&str> = Revision::R004
            .down_sql()
            .lines()
            .filter(|line| !line.trim_start().starts_with("--") && !line.trim().is_empty())
            .collect();
        assert_eq!(statements, vec!["DROP TABLE public.dd_index_warning_state;"]);
    }

    #[test]
    fn the_003_downgrade_guards_before_changing_anything() {
        let sql = Revision::R003.down_sql();
        let guard = sql.find("DO $guard$").unwrap();
        let first_alter = sql.find("ALTER TABLE").unwrap();
        assert!(guard < first_alter);
        assert!(sql.contains(
            "Cannot downgrade data-diff to revision 002: unresolved historical bounds or DEFERRED attempts are not representable. Retain revision 003 or restore the backend from a pre-upgrade backup; do not discard audit history."
        ));
    }
}
