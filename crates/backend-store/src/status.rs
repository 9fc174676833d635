//! What is applied to a backend, and the schema gate.

use std::fmt;
use std::path::Path;

use postgres::GenericClient;

use crate::error::Error;
use crate::migrate::{EXTENSIONS, ExtensionMigration, MigrateOptions, Revision, Step, latest_extension_version, plan};

/// Where `public.alembic_version` says the upstream schema is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UpstreamState {
    /// No version table, or an empty one: no upstream tables.
    Base,
    /// At this revision.
    At(Revision),
    /// A revision this datadiff does not know (a newer PipelineWise, or several rows).
    Unknown(String),
}

impl fmt::Display for UpstreamState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamState::Base => f.write_str("base"),
            UpstreamState::At(revision) => f.write_str(revision.as_str()),
            UpstreamState::Unknown(text) => f.write_str(text),
        }
    }
}

/// A row of `public.datadiff_schema_migrations`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AppliedExtension {
    /// Its version.
    pub version: i32,
    /// Its recorded name.
    pub name: String,
    /// The checksum recorded when it was applied.
    pub checksum: String,
}

/// The migration state of a backend: the upstream revision and the applied extensions.
///
/// Read by [`crate::Store::status`] (and `migrate --status`), checked by the schema gate
/// [`SchemaStatus::gate`], and the input of [`crate::plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The upstream (Alembic) state.
    pub upstream: UpstreamState,
    /// Whether `public.datadiff_schema_migrations` exists.
    pub extension_table: bool,
    /// Its rows, by version.
    pub extensions: Vec<AppliedExtension>,
}

impl SchemaStatus {
    /// Reads the state through any session that may read `alembic_version` and
    /// `datadiff_schema_migrations` (both roles may).
    pub fn read(client: &mut impl GenericClient) -> Result<SchemaStatus, Error> {
        let row = client
            .query_one(
                "SELECT to_regclass('public.alembic_version') IS NOT NULL, \
                        to_regclass('public.datadiff_schema_migrations') IS NOT NULL",
                &[],
            )
            .map_err(Error::query("looking for the version tables"))?;
        let version_table: bool = row.try_get(0).map_err(Error::query("looking for the version tables"))?;
        let extension_table: bool = row.try_get(1).map_err(Error::query("looking for the version tables"))?;

        let upstream = if version_table {
            let rows = client
                .query("SELECT version_num::text FROM public.alembic_version ORDER BY version_num", &[])
                .map_err(Error::query("reading alembic_version"))?;
            let versions = rows
                .iter()
                .map(|row| row.try_get::<_, String>(0))
                .collect::<Result<Vec<_>, _>>()
                .map_err(Error::query("reading alembic_version"))?;
            match versions.as_slice() {
                [] => UpstreamState::Base,
                [one] => one.parse().map_or_else(|_| UpstreamState::Unknown(one.clone()), UpstreamState::At),
                several => UpstreamState::Unknown(several.join(",")),
            }
        } else {
            UpstreamState::Base
        };

        let mut extensions = Vec::new();
        if extension_table {
            let rows = client
                .query(
                    "SELECT version, name, checksum::text FROM public.datadiff_schema_migrations ORDER BY version",
                    &[],
                )
                .map_err(Error::query("reading datadiff_schema_migrations"))?;
            for row in rows {
                extensions.push(AppliedExtension {
                    version: row.try_get(0).map_err(Error::query("reading datadiff_schema_migrations"))?,
                    name: row.try_get(1).map_err(Error::query("reading datadiff_schema_migrations"))?,
                    checksum: row.try_get(2).map_err(Error::query("reading datadiff_schema_migrations"))?,
                });
            }
        }
        Ok(SchemaStatus { upstream, extension_table, extensions })
    }

    /// The newest applied extension version (0 when none).
    pub fn extension_version(&self) -> i32 {
        self.extensions.last().map_or(0, |extension| extension.version)
    }

    /// The steps a plain `migrate` (to the latest schema) would apply, or why it would refuse.
    pub fn pending(&self) -> Result<Vec<Step>, Error> {
        plan(self, EXTENSIONS, &MigrateOptions::latest())
    }

    /// Whether this is exactly the schema this datadiff needs: upstream 004 and every
    /// embedded extension migration, unchanged.
    pub fn is_current(&self) -> bool {
        self.upstream == UpstreamState::At(Revision::HEAD) && matches!(self.pending(), Ok(steps) if steps.is_empty())
    }

    /// The embedded extension migrations not applied yet (in order); empty on a current
    /// schema. On a backend PipelineWise migrated (004, no `datadiff_*` tables) that is
    /// every one of them.
    pub fn missing_extensions(&self) -> &'static [ExtensionMigration] {
        EXTENSIONS.get(self.extensions.len()..).unwrap_or_default()
    }

    /// The schema gate every non-migrating command passes first: upstream 004 with datadiff's
    /// extension migrations applied, or none of them yet (a backend PipelineWise migrated:
    /// every command works there without DDL; see [`crate::Store::gate_for_attempts`] for
    /// the one case that needs them). Refuses an older or unknown version with `backend
    /// schema is at <v>, datadiff needs 004 (+ extensions <n>): run datadiff import_config
    /// --dir <project>`, and a changed or unknown extension migration with its own error
    /// (import_config would refuse it too).
    pub fn gate(&self, project: &Path) -> Result<(), Error> {
        match self.pending() {
            Ok(steps)
                if self.upstream == UpstreamState::At(Revision::HEAD)
                    && steps.iter().all(|step| matches!(step, Step::Extension { .. })) =>
            {
                Ok(())
            }
            Err(
                error @ (Error::ExtensionChecksumMismatch { .. }
                | Error::UnknownExtension { .. }
                | Error::ExtensionGap { .. }),
            ) => Err(error),
            _ => Err(Error::SchemaNotCurrent {
                found: self.to_string(),
                needs: latest_extension_version(),
                project: project.to_path_buf(),
            }),
        }
    }
}

impl fmt::Display for SchemaStatus {
    /// `base`, `003`, `004 (+ extensions 3)`, or an unknown revision as stored.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.upstream {
            UpstreamState::At(Revision::R004) => write!(f, "004 (+ extensions {})", self.extension_version()),
            ref other => write!(f, "{other}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn current() -> SchemaStatus {
        SchemaStatus {
            upstream: UpstreamState::At(Revision::R004),
            extension_table: true,
            extensions: EXTENSIONS
                .iter()
                .map(|migration| AppliedExtension {
                    version: migration.version,
                    name: migration.name.to_owned(),
                    checksum: migration.checksum(),
                })
                .collect(),
        }
    }

    fn gate_message(status: &SchemaStatus) -> String {
        status.gate(&PathBuf::from("/srv/pipelinewise")).unwrap_err().to_string()
    }

    #[test]
    fn the_current_schema_passes_the_gate() {
        assert!(current().is_current());
        assert!(current().gate(Path::new("/p")).is_ok());
        assert_eq!(current().to_string(), "004 (+ extensions 3)");
    }

    #[test]
    fn an_empty_backend_is_at_base() {
        let status = SchemaStatus { upstream: UpstreamState::Base, extension_table: false, extensions: vec![] };
        assert_eq!(
            gate_message(&status),
            "backend schema is at base, datadiff needs 004 (+ extensions 3): run datadiff import_config --dir /srv/pipelinewise"
        );
        assert!(status.gate(Path::new("/p")).unwrap_err().is_schema());
    }

    #[test]
    fn an_older_upstream_revision_is_refused() {
        let status =
            SchemaStatus { upstream: UpstreamState::At(Revision::R003), extension_table: false, extensions: vec![] };
        assert_eq!(
            gate_message(&status),
            "backend schema is at 003, datadiff needs 004 (+ extensions 3): run datadiff import_config --dir /srv/pipelinewise"
        );
    }

    #[test]
    fn an_upstream_backend_without_extensions_passes_the_gate_and_names_what_it_lacks() {
        let status = SchemaStatus { extension_table: false, extensions: vec![], ..current() };
        assert!(status.gate(Path::new("/p")).is_ok());
        assert!(!status.is_current(), "migrate would still apply the extensions");
        assert_eq!(status.to_string(), "004 (+ extensions 0)");
        let missing: Vec<(i32, &str)> = status.missing_extensions().iter().map(|m| (m.version, m.name)).collect();
        assert_eq!(missing, [(1, "run_differences"), (2, "replica_horizons"), (3, "run_parts")]);
        assert!(current().missing_extensions().is_empty());
    }

    #[test]
    fn an_unknown_revision_is_refused_with_the_gate_message() {
        let status =
            SchemaStatus { upstream: UpstreamState::Unknown("005".into()), extension_table: false, extensions: vec![] };
        assert!(gate_message(&status).starts_with("backend schema is at 005, datadiff needs 004 (+ extensions 3)"));
    }

    #[test]
    fn a_changed_extension_is_refused_by_its_checksum() {
        let mut status = current();
        status.extensions[0].checksum = "0".repeat(64);
        assert!(!status.is_current());
        let error = status.gate(Path::new("/p")).unwrap_err();
        assert!(matches!(error, Error::ExtensionChecksumMismatch { version: 1, .. }), "{error}");
    }
}
