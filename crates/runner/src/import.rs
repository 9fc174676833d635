//! `import_config`'s data-diff part and the check that the stored revisions still match the
//! YAML (SPEC §2): the rules the command line only prints.
//!
//! * The store's [`TapSelection`] is `--taps` ([`TapSelection::named`]: none, `*` or blank
//!   names select every tap); a named tap missing from the YAML ([`missing_taps`]) has its
//!   stored definitions deactivated by the sync, as upstream (the command exits 1).
//! * [`import_definitions`] migrates the backend to the schema this datadiff needs and
//!   reconciles the selected taps' definitions in one transaction; without `backend_db` it
//!   only counts (the definitions are validated and ignored).
//! * [`changed_since_import`] names the current definitions whose YAML now hashes otherwise
//!   (`run` warns: `definition changed since import; run import_config`).

use chrono::{DateTime, Utc};
use datadiff_backend_store::{DefinitionFilter, MigrateOptions, Store, SyncReport, SyncScope, TapSelection};
use datadiff_config::Project;

use crate::error::Error;

/// The selected taps the project does not define, in name order (their stored definitions
/// are deactivated by the import, which then exits 1).
pub fn missing_taps(selection: &TapSelection, project: &Project) -> Vec<String> {
    match selection {
        TapSelection::All => Vec::new(),
        TapSelection::Only(taps) => taps.iter().filter(|tap| project.tap(tap).is_none()).cloned().collect(),
    }
}

/// What [`import_definitions`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// Targets in the project.
    pub targets: usize,
    /// Selected taps the project defines.
    pub taps: usize,
    /// Selected taps the project does not define (the command exits 1).
    pub missing_taps: Vec<String>,
    /// The migration steps applied, oldest first.
    pub migration_steps: Vec<String>,
    /// The sync's counts; `None` without `backend_db`.
    pub sync: Option<SyncReport>,
}

/// Migrates `store` (when the project has a backend) and reconciles the selected taps'
/// definitions at `now`.
pub fn import_definitions(
    project: &Project,
    store: Option<&Store>,
    selection: &TapSelection,
    now: DateTime<Utc>,
) -> Result<ImportReport, Error> {
    let backend = |action: &str| {
        let action = action.to_owned();
        move |source| Error::Backend { action, source }
    };
    let definitions: Vec<_> =
        project.definitions.iter().filter(|definition| selection.contains(&definition.tap_id)).cloned().collect();
    let mut report = ImportReport {
        targets: project.targets.len(),
        taps: project.taps.iter().filter(|tap| selection.contains(&tap.id)).count(),
        missing_taps: missing_taps(selection, project),
        migration_steps: Vec::new(),
        sync: None,
    };
    if let Some(store) = store {
        let migration = store.migrate(&MigrateOptions::latest()).map_err(backend("migrating the backend"))?;
        report.migration_steps = migration.steps.iter().map(ToString::to_string).collect();
        let sync = store
            .sync_definitions(&definitions, &SyncScope { selection: selection.clone(), ..SyncScope::all() }, now)
            .map_err(backend("importing the definitions"))?;
        report.sync = Some(sync);
    }
    Ok(report)
}

/// The full check names of the current definitions in `filter` whose YAML in `project` now
/// hashes differently from the stored revision (in the store's order). A definition the YAML
/// no longer has is not listed: the import deactivates it.
pub fn changed_since_import(project: &Project, store: &Store, filter: &DefinitionFilter) -> Result<Vec<String>, Error> {
    let stored = store
        .definitions(filter)
        .map_err(|source| Error::Backend { action: "reading the imported definitions".to_owned(), source })?;
    Ok(stored
        .into_iter()
        .filter(|definition| {
            project
                .definition(&definition.definition.full_check_name)
                .is_some_and(|yaml| yaml.config_hash() != definition.config_hash.trim_end())
        })
        .map(|definition| definition.definition.full_check_name)
        .collect())
}
