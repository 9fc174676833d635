//! Which current definitions a tick works on: `--all`, a target, a tap of a target, and
//! optionally one check by name or id (runs note §6), within the project's taps.

use std::collections::BTreeSet;

use datadiff_backend_store::{DefinitionFilter, Store};
use datadiff_config::Project;

use crate::error::Error;

/// The definitions a tick selects: current revisions only, narrowed by target, tap and check.
///
/// `run_data_diff_checks --all` is [`Selection::all`]; `--target T --tap P` is
/// [`Selection::tap`]; `--check NAME|ID` adds [`Selection::check`], which matches a
/// revision's `check_id` text or its `full_check_name` exactly (`target/tap/schema/table`),
/// as upstream does. A tap without its target is not expressible: upstream refuses `--tap`
/// without `--target`.
///
/// [`Selection::within`] keeps a tick to one project's definitions: those whose target and
/// tap the project's YAML defines. Upstream has no such bound (one project per backend); with
/// it, several projects share a backend and a tick of one never attempts, errors or blocks
/// another's definitions.
///
/// ```
/// use datadiff_runner::Selection;
///
/// let selection = Selection::tap("postgres", "payments").check("postgres/payments/public/transfers");
/// assert_eq!(selection.target.as_deref(), Some("postgres"));
/// assert_eq!(Selection::all(), Selection::default());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    /// Only this target.
    pub target: Option<String>,
    /// Only this tap (of [`Selection::target`]).
    pub tap: Option<String>,
    /// Only the current revision whose `check_id` or `full_check_name` is exactly this.
    pub check: Option<String>,
    /// Only definitions whose `(target, tap)` is one of these: the project's taps
    /// ([`Selection::within`]). `None`: every definition in the backend.
    pub taps: Option<BTreeSet<(String, String)>>,
}

impl Selection {
    /// Every current definition (`--all`).
    pub fn all() -> Selection {
        Selection::default()
    }

    /// The current definitions of one target.
    pub fn target(target: impl Into<String>) -> Selection {
        Selection { target: Some(target.into()), ..Selection::default() }
    }

    /// The current definitions of one tap of one target (`--target T --tap P`).
    pub fn tap(target: impl Into<String>, tap: impl Into<String>) -> Selection {
        Selection { target: Some(target.into()), tap: Some(tap.into()), ..Selection::default() }
    }

    /// Narrows to the definitions of `project`: those whose target and tap its YAML defines
    /// (a tap's definitions under its own target).
    pub fn within(mut self, project: &Project) -> Selection {
        self.taps = Some(project_taps(project));
        self
    }

    /// Narrows to one check: its `check_id` text or its `full_check_name` (`--check`).
    pub fn check(mut self, name_or_id: impl Into<String>) -> Selection {
        self.check = Some(name_or_id.into());
        self
    }

    /// What this selection names that does not exist — a target or a tap of it the project
    /// does not define, or a `--check` no current definition matches — as the one-line
    /// message (`unknown target 'warehouse' (the project defines: postgres)`); `None` when
    /// every name exists. A misspelt crontab line must fail, not pass by checking nothing.
    pub fn unknown_name(&self, project: &Project, store: &Store) -> Result<Option<String>, Error> {
        if let Some(target) = &self.target
            && project.target(target).is_none()
        {
            let known: Vec<&str> = project.targets.iter().map(|target| target.id.as_str()).collect();
            return Ok(Some(format!("unknown target '{target}' (the project defines: {})", known.join(", "))));
        }
        if let (Some(target), Some(tap)) = (&self.target, &self.tap)
            && project.tap(tap).is_none_or(|found| &found.target_id != target)
        {
            let known: Vec<&str> =
                project.taps.iter().filter(|tap| &tap.target_id == target).map(|tap| tap.id.as_str()).collect();
            return Ok(Some(format!(
                "unknown tap '{tap}' of target '{target}' (the project defines: {})",
                known.join(", ")
            )));
        }
        if let Some(check) = &self.check {
            let found = store
                .definitions(&self.filter())
                .map_err(|source| Error::Backend { action: "reading the selected definitions".to_owned(), source })?;
            if found.is_empty() {
                return Ok(Some(format!(
                    "unknown check '{check}': no current definition in the selection has that full_check_name or check_id"
                )));
            }
        }
        Ok(None)
    }

    /// The backend filter reading these definitions (current revisions only).
    pub fn filter(&self) -> DefinitionFilter {
        DefinitionFilter {
            target: self.target.clone(),
            tap: self.tap.clone(),
            check: self.check.clone(),
            include_versioned: false,
            taps: self.taps.clone(),
        }
    }
}

/// The `(target id, tap id)` of every tap `project` defines.
pub fn project_taps(project: &Project) -> BTreeSet<(String, String)> {
    project.taps.iter().map(|tap| (tap.target_id.clone(), tap.id.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_map_onto_current_revision_filters() {
        assert_eq!(Selection::all().filter(), DefinitionFilter::default());
        let filter = Selection::tap("postgres", "payments").check("3b7c").filter();
        assert_eq!(filter.target.as_deref(), Some("postgres"));
        assert_eq!(filter.tap.as_deref(), Some("payments"));
        assert_eq!(filter.check.as_deref(), Some("3b7c"));
        assert!(!filter.include_versioned);
        let filter = Selection::target("postgres").filter();
        assert_eq!((filter.target.as_deref(), filter.tap), (Some("postgres"), None));
        assert_eq!(filter.taps, None, "without a project, every definition of the backend");
    }
}
