//! Check definitions in the backend: the import's sync (config note §1.7) and every read the
//! runner and the CLI make of them.
//!
//! A definition row is immutable. An import compares each incoming definition's
//! `config_hash` with the current revision of its `full_check_name`: equal → unchanged;
//! different → the current revision is superseded (`is_current = false`, `superseded_at`)
//! and a new revision is inserted (revision = highest of the name + 1, a new random
//! `check_id`); absent → inserted as revision max + 1 too (a re-added table continues the
//! numbering). Current revisions of in-scope taps that the import no longer contains are
//! deactivated. Rows are never deleted. All of it happens in one transaction under
//! [`AdvisoryLock::DefinitionSync`], so concurrent imports — by datadiff or by PipelineWise —
//! apply one after the other and leave exactly one current revision per name.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use datadiff_diff_core::{
    attempt::CheckId,
    definition::{CheckDefinition, StoredDefinition},
};
use datadiff_watermark::WatermarkState;
use uuid::Uuid;

use crate::error::Error;
use crate::lock::AdvisoryLock;
use crate::rows::{self, DEFINITION_COLUMNS, WATERMARK_COLUMNS, get};
use crate::store::Store;

/// Which taps an import selected (`--taps a,b`, or every tap).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TapSelection {
    /// `*`: every tap of the project.
    #[default]
    All,
    /// Only these tap ids. A selected tap missing from the YAML is still in scope: its
    /// definitions are deactivated.
    Only(BTreeSet<String>),
}

impl TapSelection {
    /// `--taps`: the names given (trimmed); no name, or only `*` and blanks, is every tap.
    pub fn named<S: AsRef<str>>(names: &[S]) -> TapSelection {
        let taps: BTreeSet<String> = names
            .iter()
            .map(|name| name.as_ref().trim().to_owned())
            .filter(|name| !name.is_empty() && name != "*")
            .collect();
        if taps.is_empty() { TapSelection::All } else { TapSelection::Only(taps) }
    }

    /// Whether `tap_id` is selected.
    pub fn contains(&self, tap_id: &str) -> bool {
        match self {
            TapSelection::All => true,
            TapSelection::Only(taps) => taps.contains(tap_id),
        }
    }
}

/// The scope of an import: the selected taps minus the taps whose import failed, within the
/// project's targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncScope {
    /// The selected taps.
    pub selection: TapSelection,
    /// Taps left alone: their incoming definitions are dropped and their stored ones kept
    /// (upstream passes the taps whose discovery failed).
    pub excluded: BTreeSet<String>,
    /// The importing project's targets: only current definitions of these targets may be
    /// deactivated, so a backend shared by several projects keeps the others' definitions.
    /// `None` is upstream's rule: the backend belongs to one project, and every current
    /// definition in the tap scope that the import lacks is deactivated.
    pub targets: Option<BTreeSet<String>>,
}

impl SyncScope {
    /// Every tap, none excluded.
    pub fn all() -> SyncScope {
        SyncScope::default()
    }

    /// Only the named taps.
    pub fn taps<I: IntoIterator<Item = S>, S: Into<String>>(taps: I) -> SyncScope {
        SyncScope { selection: TapSelection::Only(taps.into_iter().map(Into::into).collect()), ..SyncScope::default() }
    }

    /// The same scope with these taps excluded.
    pub fn excluding<I: IntoIterator<Item = S>, S: Into<String>>(mut self, taps: I) -> SyncScope {
        self.excluded.extend(taps.into_iter().map(Into::into));
        self
    }

    /// The same scope limited to the definitions of these targets: the targets a project
    /// defines own the definitions whose `target_id` they are.
    pub fn within_targets<I: IntoIterator<Item = S>, S: Into<String>>(mut self, targets: I) -> SyncScope {
        self.targets = Some(targets.into_iter().map(Into::into).collect());
        self
    }

    /// Whether stored definitions of `tap_id` may be deactivated by this import (whatever
    /// their target).
    pub fn includes(&self, tap_id: &str) -> bool {
        if self.excluded.contains(tap_id) {
            return false;
        }
        self.selection.contains(tap_id)
    }

    /// Whether a stored definition of `target_id` and `tap_id` may be deactivated by this
    /// import: its tap is in scope and its target is the project's.
    pub fn owns(&self, target_id: &str, tap_id: &str) -> bool {
        self.includes(tap_id) && self.targets.as_ref().is_none_or(|targets| targets.contains(target_id))
    }
}

/// A current definition an import deactivated: in the tap scope and the project's targets,
/// and no longer among the incoming definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deactivated {
    /// Its `full_check_name`.
    pub full_check_name: String,
    /// Its target.
    pub target_id: String,
    /// Its tap.
    pub tap_id: String,
    /// The revision that is no longer current.
    pub revision: i32,
}

/// What an import changed (upstream's statistics, and the definitions it deactivated).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncReport {
    /// New revisions inserted (new names, changed definitions and re-added ones).
    pub created: u64,
    /// Incoming definitions whose current revision has the same hash.
    pub unchanged: u64,
    /// Current revisions replaced by a changed definition.
    pub superseded: u64,
    /// Current revisions of in-scope taps no longer in the import.
    pub deactivated: u64,
    /// Those revisions, by name.
    pub deactivated_definitions: Vec<Deactivated>,
    /// Current definitions the scope left alone because their target is not the project's
    /// ([`SyncScope::targets`]): other projects' definitions on a shared backend.
    pub other_targets: BTreeSet<String>,
    /// Current revisions among the incoming ones whose first run will compare all history
    /// and has not happened yet (`Initial data-diff scans pending`).
    pub historical_scans_pending: u64,
}

/// Which definitions a read returns. The default: every current revision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DefinitionFilter {
    /// Only this target (`--target`).
    pub target: Option<String>,
    /// Only this tap (`--tap`).
    pub tap: Option<String>,
    /// Only the revision whose `check_id` text or whose `full_check_name` equals this exactly
    /// (`--check NAME|ID`).
    pub check: Option<String>,
    /// Superseded and deactivated revisions too (`--include-versioned`).
    pub include_versioned: bool,
    /// Only definitions whose `(target_id, tap_id)` is one of these: a project's taps, so
    /// that a run on a shared backend leaves other projects' definitions alone. `None`: any.
    pub taps: Option<BTreeSet<(String, String)>>,
}

impl DefinitionFilter {
    /// The `(target_id, tap_id)` restriction as the two arrays the SQL predicates bind
    /// (`None` when there is none).
    pub(crate) fn tap_arrays(&self) -> (Option<Vec<&str>>, Option<Vec<&str>>) {
        match &self.taps {
            None => (None, None),
            Some(taps) => (
                Some(taps.iter().map(|(target, _)| target.as_str()).collect()),
                Some(taps.iter().map(|(_, tap)| tap.as_str()).collect()),
            ),
        }
    }
}

/// The predicate of [`DefinitionFilter::taps`] over alias `d`, binding two arrays: `${t}`
/// the targets, `${p}` their taps, pairwise.
pub(crate) fn taps_predicate(targets: usize, taps: usize) -> String {
    format!(
        "(${targets}::text[] IS NULL OR EXISTS (SELECT 1 FROM unnest(${targets}::text[], ${taps}::text[]) \
         AS pair(target_id, tap_id) WHERE pair.target_id = d.target_id AND pair.tap_id = d.tap_id))"
    )
}

/// A row of `list_data_diff_checks`: a revision, whether its historical first run is still
/// pending, and its watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckListing {
    /// The revision.
    pub definition: StoredDefinition,
    /// A current revision that starts with a full scan (`initial_full_scan` and a data
    /// check) and has no attempt yet that is neither a remediation nor DEFERRED. Always
    /// false for superseded revisions, which never run again on schedule.
    pub historical_scan_pending: bool,
    /// Its `dd_watermark_state` row, `None` before its first evaluated attempt.
    pub watermark: Option<WatermarkState>,
}

/// Attempts that count as a previous run (upstream's `has_previous_run`): neither a
/// remediation nor DEFERRED. `{d}` is the definition's alias.
const HAS_COUNTING_RUN: &str = "EXISTS (SELECT 1 FROM public.dd_run_attempts counted \
     WHERE counted.check_id = d.check_id AND counted.trigger_type <> 'REMEDIATION' AND counted.status <> 'DEFERRED')";

/// The filter's predicate over alias `d`, binding `$1`–`$6` (`$5` and `$6`:
/// [`taps_predicate`]).
fn filter_predicate() -> String {
    format!(
        "($1::text IS NULL OR d.target_id = $1) AND ($2::text IS NULL OR d.tap_id = $2) \
         AND ($3::text IS NULL OR d.check_id::text = $3 OR d.full_check_name = $3) AND (d.is_current OR $4) AND {}",
        taps_predicate(5, 6)
    )
}

fn qualified(columns: &str, alias: &str) -> String {
    columns.split(", ").map(|column| format!("{alias}.{column}")).collect::<Vec<_>>().join(", ")
}

impl Store {
    /// Imports `definitions` (config note §1.7): drops those of excluded taps, then, under
    /// [`AdvisoryLock::DefinitionSync`] and in one transaction with one `now` for every
    /// row, marks each unchanged, supersedes and inserts, or inserts it, and deactivates the
    /// current revisions of in-scope taps it no longer contains.
    ///
    /// The schema must already be migrated ([`Store::migrate`]; upstream's sync migrates
    /// first). Two incoming definitions with one name are refused before anything is
    /// written.
    pub fn sync_definitions(
        &self,
        definitions: &[CheckDefinition],
        scope: &SyncScope,
        now: DateTime<Utc>,
    ) -> Result<SyncReport, Error> {
        let mut incoming: BTreeMap<&str, &CheckDefinition> = BTreeMap::new();
        for definition in definitions.iter().filter(|definition| !scope.excluded.contains(&definition.tap_id)) {
            if incoming.insert(&definition.full_check_name, definition).is_some() {
                return Err(Error::DuplicateDefinition(definition.full_check_name.clone()));
            }
        }

        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("starting the definition sync"))?;
        AdvisoryLock::DefinitionSync.acquire(&mut tx)?;
        let current_rows = tx
            .query(
                "SELECT check_id, full_check_name, target_id, tap_id, revision, config_hash \
                 FROM public.dd_check_definitions WHERE is_current FOR UPDATE",
                &[],
            )
            .map_err(Error::query("reading the current definitions"))?;
        struct Current {
            check_id: Uuid,
            target_id: String,
            tap_id: String,
            revision: i32,
            config_hash: String,
        }
        // By name, so the deactivated definitions are reported in name order.
        let mut current: BTreeMap<String, Current> = BTreeMap::new();
        for row in &current_rows {
            let name: String = get(row, "full_check_name")?;
            let config_hash: String = get(row, "config_hash")?;
            current.insert(
                name,
                Current {
                    check_id: get(row, "check_id")?,
                    target_id: get(row, "target_id")?,
                    tap_id: get(row, "tap_id")?,
                    revision: get(row, "revision")?,
                    config_hash: config_hash.trim_end().to_owned(),
                },
            );
        }

        let supersede = tx
            .prepare(
                "UPDATE public.dd_check_definitions SET is_current = FALSE, superseded_at = $2 \
                 WHERE check_id = $1 AND is_current",
            )
            .map_err(Error::query("preparing the definition sync"))?;
        // The revision continues over every row of the name, current or not, so a re-added
        // table never reuses a number.
        let insert = tx
            .prepare(
                "INSERT INTO public.dd_check_definitions (check_id, full_check_name, revision, config_hash, \
                 canonical_config, target_id, tap_id, source_type, target_type, source_database, target_database, \
                 source_schema, source_table, target_schema, target_table, source_key_column, target_key_column, \
                 source_timestamp_column, target_timestamp_column, checks, frequency, window_start_seconds, \
                 window_end_seconds, statement_timeout_seconds, is_current, created_at, superseded_at) \
                 SELECT $1, $2, COALESCE(MAX(revision), 0) + 1, $3, $4::text::jsonb, $5, $6, $7, $8, $9, $10, $11, \
                 $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, TRUE, $24, NULL \
                 FROM public.dd_check_definitions WHERE full_check_name = $2",
            )
            .map_err(Error::query("preparing the definition sync"))?;

        let mut report = SyncReport::default();
        for (name, definition) in &incoming {
            let hash = definition.config_hash();
            if let Some(existing) = current.get(*name) {
                if existing.config_hash == hash {
                    report.unchanged += 1;
                    continue;
                }
                tx.execute(&supersede, &[&existing.check_id, &now])
                    .map_err(Error::query("superseding a definition"))?;
                report.superseded += 1;
            }
            let checks = serde_json::Value::Array(
                definition.checks.iter().map(|check| serde_json::Value::from(check.as_str())).collect(),
            );
            tx.execute(
                &insert,
                &[
                    &Uuid::new_v4(),
                    &definition.full_check_name,
                    &hash,
                    &definition.canonical_json(),
                    &definition.target_id,
                    &definition.tap_id,
                    &definition.source_type.as_str(),
                    &definition.target_type.as_str(),
                    &definition.source_database,
                    &definition.target_database,
                    &definition.source_schema,
                    &definition.source_table,
                    &definition.target_schema,
                    &definition.target_table,
                    &definition.source_key_column,
                    &definition.target_key_column,
                    &definition.source_timestamp_column,
                    &definition.target_timestamp_column,
                    &checks,
                    &definition.frequency,
                    &definition.window_start_seconds,
                    &definition.window_end_seconds,
                    &definition.statement_timeout_seconds,
                    &now,
                ],
            )
            .map_err(Error::query("inserting a definition revision"))?;
            report.created += 1;
        }

        for (name, existing) in &current {
            if incoming.contains_key(name.as_str()) {
                continue;
            }
            if scope.owns(&existing.target_id, &existing.tap_id) {
                tx.execute(&supersede, &[&existing.check_id, &now])
                    .map_err(Error::query("deactivating a definition"))?;
                report.deactivated += 1;
                report.deactivated_definitions.push(Deactivated {
                    full_check_name: name.clone(),
                    target_id: existing.target_id.clone(),
                    tap_id: existing.tap_id.clone(),
                    revision: existing.revision,
                });
            } else if scope.includes(&existing.tap_id) {
                report.other_targets.insert(existing.target_id.clone());
            }
        }

        // Upstream's count, over the incoming names: current, `initial_full_scan`, a data
        // check (the `row_diff` extension counts, as it does for the first run's window),
        // and no attempt that counts as a previous run.
        let names: Vec<&str> = incoming.keys().copied().collect();
        let pending: i64 = tx
            .query_one(
                &format!(
                    "SELECT count(*) FROM public.dd_check_definitions d \
                     WHERE d.is_current AND d.full_check_name = ANY($1) \
                       AND COALESCE((d.canonical_config ->> 'initial_full_scan')::boolean, FALSE) \
                       AND (jsonb_array_length(d.checks - 'schema_compatibility') > 0 \
                            OR coalesce(jsonb_typeof(d.canonical_config #> '{{datadiff,row_diff}}') = 'object', FALSE)) \
                       AND NOT {HAS_COUNTING_RUN}"
                ),
                &[&names],
            )
            .and_then(|row| row.try_get(0))
            .map_err(Error::query("counting pending historical scans"))?;
        report.historical_scans_pending = u64::try_from(pending).unwrap_or(0);
        tx.commit().map_err(Error::query("committing the definition sync"))?;
        Ok(report)
    }

    /// The revisions `filter` selects, ordered by target, tap, name and revision.
    pub fn definitions(&self, filter: &DefinitionFilter) -> Result<Vec<StoredDefinition>, Error> {
        Ok(self.listings(filter, false)?.into_iter().map(|listing| listing.definition).collect())
    }

    /// One revision by id, current or not (remediation runs the exact revision of its run).
    pub fn definition(&self, check_id: CheckId) -> Result<Option<StoredDefinition>, Error> {
        let row = self
            .connection()?
            .query_opt(
                &format!("SELECT {DEFINITION_COLUMNS} FROM public.dd_check_definitions WHERE check_id = $1"),
                &[&check_id.get()],
            )
            .map_err(Error::query("reading a definition"))?;
        row.as_ref().map(rows::definition).transpose()
    }

    /// The rows of `list_data_diff_checks`: the selected revisions with their pending
    /// historical scan and watermark, in [`Store::definitions`]' order.
    pub fn list_checks(&self, filter: &DefinitionFilter) -> Result<Vec<CheckListing>, Error> {
        self.listings(filter, true)
    }

    /// A revision's `dd_watermark_state` row, if it has one.
    pub fn watermark_state(&self, check_id: CheckId) -> Result<Option<WatermarkState>, Error> {
        let row = self
            .connection()?
            .query_opt(
                &format!("SELECT {WATERMARK_COLUMNS} FROM public.dd_watermark_state WHERE check_id = $1"),
                &[&check_id.get()],
            )
            .map_err(Error::query("reading a watermark"))?;
        row.as_ref().map(rows::watermark_state).transpose()
    }

    fn listings(&self, filter: &DefinitionFilter, with_watermarks: bool) -> Result<Vec<CheckListing>, Error> {
        let mut client = self.connection()?;
        let (targets, taps) = filter.tap_arrays();
        let rows = client
            .query(
                &format!(
                    "SELECT {}, {HAS_COUNTING_RUN} AS has_counting_run FROM public.dd_check_definitions d \
                     WHERE {} ORDER BY d.target_id, d.tap_id, d.full_check_name, d.revision",
                    qualified(DEFINITION_COLUMNS, "d"),
                    filter_predicate()
                ),
                &[&filter.target, &filter.tap, &filter.check, &filter.include_versioned, &targets, &taps],
            )
            .map_err(Error::query("listing definitions"))?;
        let mut listings = Vec::with_capacity(rows.len());
        for row in &rows {
            let definition = rows::definition(row)?;
            let has_counting_run: bool = get(row, "has_counting_run")?;
            let historical_scan_pending =
                definition.is_current && definition.definition.starts_with_full_scan() && !has_counting_run;
            listings.push(CheckListing { definition, historical_scan_pending, watermark: None });
        }
        if with_watermarks && !listings.is_empty() {
            let ids: Vec<Uuid> = listings.iter().map(|listing| listing.definition.check_id.get()).collect();
            let rows = client
                .query(
                    &format!("SELECT {WATERMARK_COLUMNS} FROM public.dd_watermark_state WHERE check_id = ANY($1)"),
                    &[&ids],
                )
                .map_err(Error::query("reading watermarks"))?;
            let mut states: HashMap<Uuid, WatermarkState> = HashMap::with_capacity(rows.len());
            for row in &rows {
                let state = rows::watermark_state(row)?;
                states.insert(state.check_id.get(), state);
            }
            for listing in &mut listings {
                listing.watermark = states.remove(&listing.definition.check_id.get());
            }
        }
        Ok(listings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_star_tap_names_select_every_tap() {
        assert_eq!(TapSelection::named(&["", " * ", "  "]), TapSelection::All);
        assert_eq!(TapSelection::named::<&str>(&[]), TapSelection::All);
        let some = TapSelection::named(&[" payments ", "orders"]);
        assert!(some.contains("payments") && some.contains("orders") && !some.contains("billing"));
        assert!(TapSelection::All.contains("anything"));
    }

    #[test]
    fn scope_follows_upstreams_rules() {
        let all = SyncScope::all();
        assert!(all.includes("any"));
        let failed = SyncScope::all().excluding(["broken"]);
        assert!(failed.includes("fine") && !failed.includes("broken"));
        let selected = SyncScope::taps(["a", "missing"]);
        assert!(selected.includes("a") && selected.includes("missing"), "a selected tap absent from YAML is in scope");
        assert!(!selected.includes("b"), "other taps are untouched by a partial import");
        assert!(!SyncScope::taps(["a"]).excluding(["a"]).includes("a"));
    }

    #[test]
    fn qualified_columns_carry_the_alias() {
        assert_eq!(qualified("check_id, revision", "d"), "d.check_id, d.revision");
    }
}
