//! Which current definitions a tick works on: `--all`, a target, a tap of a target, and
//! optionally one check by name or id (runs note §6).

use datadiff_backend_store::DefinitionFilter;

/// The definitions a tick selects: current revisions only, narrowed by target, tap and check.
///
/// `run_data_diff_checks --all` is [`Selection::all`]; `--target T --tap P` is
/// [`Selection::tap`]; `--check NAME|ID` adds [`Selection::check`], which matches a
/// revision's `check_id` text or its `full_check_name` exactly (`target/tap/schema/table`),
/// as upstream does. A tap without its target is not expressible: upstream refuses `--tap`
/// without `--target`.
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
        Selection { target: Some(target.into()), tap: Some(tap.into()), check: None }
    }

    /// Narrows to one check: its `check_id` text or its `full_check_name` (`--check`).
    pub fn check(mut self, name_or_id: impl Into<String>) -> Selection {
        self.check = Some(name_or_id.into());
        self
    }

    /// The backend filter reading these definitions (current revisions only).
    pub fn filter(&self) -> DefinitionFilter {
        DefinitionFilter {
            target: self.target.clone(),
            tap: self.tap.clone(),
            check: self.check.clone(),
            include_versioned: false,
        }
    }
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
    }
}
