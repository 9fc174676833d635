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
//!
//! **Several projects, one backend.** A project owns the current definitions whose target is
//! one of its targets (`full_check_name` starts with the target id). Its import deactivates
//! only those — a table whose `data_diff` block is gone, a tap removed from its YAML — and
//! leaves every other target's definitions alone ([`SyncScope::within_targets`]); each
//! deactivation is reported with the reason ([`Deactivation`]). Upstream's import deactivates
//! every current definition it lacks, whatever its target: it assumes one project per backend.
//! Definitions PipelineWise imported carry the same target ids, so they are owned the same way.

use chrono::{DateTime, Utc};
use datadiff_backend_store::{
    Deactivated, DefinitionFilter, MigrateOptions, Store, SyncReport, SyncScope, TapSelection,
};
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

/// A definition [`import_definitions`] deactivated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deactivation {
    /// Its `full_check_name`.
    pub full_check_name: String,
    /// Why, in words naming the tap and what the YAML no longer says (`tap 'payments' no
    /// longer declares data_diff for this table`).
    pub reason: String,
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
    /// Every definition the sync deactivated, in name order, with the reason.
    pub deactivations: Vec<Deactivation>,
}

/// Why the import of `project` (with `selection`) deactivated `definition`.
fn deactivation_reason(definition: &Deactivated, project: &Project, selection: &TapSelection) -> String {
    let tap = &definition.tap_id;
    match project.tap(tap) {
        Some(found) if found.target_id != definition.target_id => format!(
            "tap '{tap}' now replicates to target '{}', not '{}' (its checks there are new definitions)",
            found.target_id, definition.target_id
        ),
        Some(_) => format!("tap '{tap}' no longer declares data_diff for this table"),
        None if matches!(selection, TapSelection::Only(_)) => {
            format!("tap '{tap}' is named by --taps but not defined in the project YAML")
        }
        None => format!(
            "tap '{tap}' of target '{}' is no longer in the project YAML (no tap_*.yml has id '{tap}')",
            definition.target_id
        ),
    }
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
        deactivations: Vec::new(),
    };
    if let Some(store) = store {
        let migration = store.migrate(&MigrateOptions::latest()).map_err(backend("migrating the backend"))?;
        report.migration_steps = migration.steps.iter().map(ToString::to_string).collect();
        let scope = SyncScope { selection: selection.clone(), ..SyncScope::all() }
            .within_targets(project.targets.iter().map(|target| target.id.clone()));
        let sync = store.sync_definitions(&definitions, &scope, now).map_err(backend("importing the definitions"))?;
        report.deactivations = sync
            .deactivated_definitions
            .iter()
            .map(|definition| Deactivation {
                full_check_name: definition.full_check_name.clone(),
                reason: deactivation_reason(definition, project, selection),
            })
            .collect();
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
