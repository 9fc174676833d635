//! `import_config`'s data-diff part and the check that the stored revisions still match the
//! YAML (SPEC §2): the rules the command line only prints.
//!
//! * [`TapSelection`] is `--taps`: none, `*` or blank names select every tap; a named tap
//!   missing from the YAML is reported ([`ImportReport::missing_taps`]) and has its stored
//!   definitions deactivated by the sync, as upstream (the command exits 1).
//! * [`import_definitions`] migrates the backend to the schema this datadiff needs and
//!   reconciles the selected taps' definitions in one transaction; without `backend_db` it
//!   only counts (the definitions are validated and ignored).
//! * [`changed_since_import`] names the current definitions whose YAML now hashes otherwise
//!   (`run` warns: `definition changed since import; run import_config`).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use datadiff_backend_store::{DefinitionFilter, MigrateOptions, Store, SyncReport, SyncScope};
use datadiff_config::Project;

use crate::error::Error;

/// The taps an import works on (`--taps`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TapSelection {
    taps: Option<BTreeSet<String>>,
}

impl TapSelection {
    /// Every tap.
    pub fn all() -> TapSelection {
        TapSelection { taps: None }
    }

    /// The taps named (trimmed); no name, or only `*` and blanks, selects every tap.
    pub fn named<S: AsRef<str>>(names: &[S]) -> TapSelection {
        let taps: BTreeSet<String> = names
            .iter()
            .map(|name| name.as_ref().trim().to_owned())
            .filter(|name| !name.is_empty() && name != "*")
            .collect();
        TapSelection { taps: (!taps.is_empty()).then_some(taps) }
    }

    /// Whether `tap_id` is selected.
    pub fn contains(&self, tap_id: &str) -> bool {
        self.taps.as_ref().is_none_or(|taps| taps.contains(tap_id))
    }

    /// The named taps the project does not define, in name order.
    pub fn missing(&self, project: &Project) -> Vec<String> {
        self.taps.iter().flatten().filter(|tap| project.tap(tap).is_none()).cloned().collect()
    }

    /// The store's scope of the sync: the named taps (missing ones included: their stored
    /// definitions are deactivated), or all.
    pub fn scope(&self) -> SyncScope {
        match &self.taps {
            Some(taps) => SyncScope::taps(taps.iter().cloned()),
            None => SyncScope::all(),
        }
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
        missing_taps: selection.missing(project),
        migration_steps: Vec::new(),
        sync: None,
    };
    if let Some(store) = store {
        let migration = store.migrate(&MigrateOptions::latest()).map_err(backend("migrating the backend"))?;
        report.migration_steps = migration.steps.iter().map(ToString::to_string).collect();
        let sync = store
            .sync_definitions(&definitions, &selection.scope(), now)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_star_names_select_every_tap() {
        assert_eq!(TapSelection::named(&["", " * ", "  "]), TapSelection::all());
        assert_eq!(TapSelection::named::<&str>(&[]), TapSelection::all());
        let some = TapSelection::named(&[" payments ", "orders"]);
        assert!(some.contains("payments") && some.contains("orders") && !some.contains("billing"));
        assert!(TapSelection::all().contains("anything"));
    }
}
