//! Definition sync (config note §1.7) and the reads of definitions, on real PostgreSQL.

use std::process::{Command, Stdio};

use chrono::{DateTime, Utc};
use datadiff_backend_store::{AdvisoryLock, DefinitionFilter, Error, Store, SyncReport, SyncScope};
use datadiff_diff_core::{
    attempt::StartKind,
    definition::{CheckType, Extensions, RowDiffSettings},
};

use crate::support::{Repo, at, repo, table, wait_for_lock_waiters};

/// `(full_check_name, revision, is_current, created_at, superseded_at)` of every row.
type Revision = (String, i32, bool, DateTime<Utc>, Option<DateTime<Utc>>);

fn revisions(repo: &Repo) -> Vec<Revision> {
    repo.sql()
        .query(
            "SELECT full_check_name, revision, is_current, created_at, superseded_at FROM public.dd_check_definitions \
             ORDER BY full_check_name, revision",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
        .collect()
}

/// A sync's counts: created, unchanged, superseded, deactivated, historical scans pending.
type Counts = (u64, u64, u64, u64, u64);

trait CountsOf {
    fn counts(&self) -> Counts;
}

impl CountsOf for SyncReport {
    fn counts(&self) -> Counts {
        assert_eq!(self.deactivated_definitions.len() as u64, self.deactivated, "every deactivation is named");
        (self.created, self.unchanged, self.superseded, self.deactivated, self.historical_scans_pending)
    }
}

fn report(created: u64, unchanged: u64, superseded: u64, deactivated: u64) -> Counts {
    (created, unchanged, superseded, deactivated, 0)
}

const A: &str = "postgres/tap/public/a";
const B: &str = "postgres/tap/public/b";

#[test]
fn created_unchanged_superseded_deactivated_and_re_added() {
    let repo = repo();
    let store = &repo.store;
    let a = table("tap", "a");
    let b = table("tap", "b");
    let all = SyncScope::all();

    assert_eq!(store.sync_definitions(&[a.clone(), b.clone()], &all, at(1, 0)).unwrap().counts(), report(2, 0, 0, 0));
    assert_eq!(revisions(&repo), vec![(A.into(), 1, true, at(1, 0), None), (B.into(), 1, true, at(1, 0), None)]);
    // The stored row: every column as upstream writes it, the canonical JSON and its hash.
    let row = repo
        .sql()
        .query_one(
            "SELECT config_hash::text, canonical_config = $1::text::jsonb, checks, target_id, tap_id, source_type, \
             target_type, source_database, target_database, source_schema, source_table, target_schema, target_table, \
             source_key_column, target_key_column, source_timestamp_column, target_timestamp_column, frequency, \
             window_start_seconds, window_end_seconds, statement_timeout_seconds \
             FROM public.dd_check_definitions WHERE full_check_name = $2",
            &[&a.canonical_json(), &A],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), a.config_hash());
    assert!(row.get::<_, bool>(1), "canonical_config holds the canonical JSON");
    assert_eq!(row.get::<_, serde_json::Value>(2), serde_json::json!(["row_count"]));
    let texts: Vec<String> = (3..18).map(|i| row.get(i)).collect();
    assert_eq!(
        texts,
        [
            "postgres",
            "tap",
            "tap-postgres",
            "target-postgres",
            "source",
            "warehouse",
            "public",
            "a",
            "tap_public",
            "a",
            "id",
            "id",
            "updated_at",
            "updated_at",
            "0 * * * *"
        ]
    );
    assert_eq!((row.get::<_, i64>(18), row.get::<_, i64>(19), row.get::<_, i64>(20)), (3600, 0, 60));

    // The same YAML again: nothing written.
    assert_eq!(store.sync_definitions(&[a.clone(), b.clone()], &all, at(2, 0)).unwrap().counts(), report(0, 2, 0, 0));
    assert_eq!(revisions(&repo).len(), 2);

    // A changed definition supersedes its current revision with a new check_id.
    let first_id =
        store.definitions(&DefinitionFilter { check: Some(A.into()), ..Default::default() }).unwrap()[0].check_id;
    let mut changed = a.clone();
    changed.frequency = "30 * * * *".into();
    assert_eq!(
        store.sync_definitions(&[changed.clone(), b.clone()], &all, at(3, 0)).unwrap().counts(),
        report(1, 1, 1, 0)
    );
    let current = store.definitions(&DefinitionFilter { check: Some(A.into()), ..Default::default() }).unwrap();
    assert_eq!(current.len(), 1);
    assert_eq!((current[0].revision, current[0].definition.frequency.as_str()), (2, "30 * * * *"));
    assert_ne!(current[0].check_id, first_id);

    // A table removed from the YAML is deactivated; rows are never deleted.
    assert_eq!(store.sync_definitions(std::slice::from_ref(&b), &all, at(4, 0)).unwrap().counts(), report(0, 1, 0, 1));
    // Re-added: revision max + 1, a new check_id; the now missing b is deactivated.
    assert_eq!(store.sync_definitions(&[changed], &all, at(5, 0)).unwrap().counts(), report(1, 0, 0, 1));
    assert_eq!(
        revisions(&repo),
        vec![
            (A.into(), 1, false, at(1, 0), Some(at(3, 0))),
            (A.into(), 2, false, at(3, 0), Some(at(4, 0))),
            (A.into(), 3, true, at(5, 0), None),
            (B.into(), 1, false, at(1, 0), Some(at(5, 0))),
        ]
    );
    let ids = repo.count("SELECT DISTINCT check_id FROM public.dd_check_definitions");
    assert_eq!(ids, 4, "every revision has its own check_id");
}

#[test]
fn a_partial_import_touches_only_its_selected_taps() {
    let repo = repo();
    let store = &repo.store;
    store.sync_definitions(&[table("a", "t"), table("b", "t")], &SyncScope::all(), at(1, 0)).unwrap();

    // --taps a with a's table gone: a's definition is deactivated, b's kept.
    assert_eq!(store.sync_definitions(&[], &SyncScope::taps(["a"]), at(2, 0)).unwrap().counts(), report(0, 0, 0, 1));
    let current: Vec<String> = store
        .definitions(&DefinitionFilter::default())
        .unwrap()
        .into_iter()
        .map(|stored| stored.definition.full_check_name)
        .collect();
    assert_eq!(current, ["postgres/b/public/t"]);

    // A selected tap missing from the YAML is in scope: its definitions are deactivated.
    assert_eq!(
        store.sync_definitions(&[table("a", "t")], &SyncScope::taps(["a", "b"]), at(3, 0)).unwrap().counts(),
        report(1, 0, 0, 1)
    );
    let current: Vec<(String, i32)> = store
        .definitions(&DefinitionFilter::default())
        .unwrap()
        .into_iter()
        .map(|stored| (stored.definition.full_check_name, stored.revision))
        .collect();
    assert_eq!(current, [("postgres/a/public/t".to_owned(), 2)]);
}

#[test]
fn a_full_import_preserves_failed_taps_and_deactivates_deleted_ones() {
    let repo = repo();
    let store = &repo.store;
    store
        .sync_definitions(&[table("ok", "t"), table("failed", "t"), table("deleted", "t")], &SyncScope::all(), at(1, 0))
        .unwrap();
    // The failed tap's discovery failed: its (changed) incoming definition is dropped and
    // its stored one kept; the deleted tap's definition is deactivated.
    let mut changed = table("failed", "t");
    changed.checks.push(CheckType::MaxKey);
    let scope = SyncScope::all().excluding(["failed"]);
    assert_eq!(
        store.sync_definitions(&[table("ok", "t"), changed], &scope, at(2, 0)).unwrap().counts(),
        report(0, 1, 0, 1)
    );
    assert_eq!(
        revisions(&repo),
        vec![
            ("postgres/deleted/public/t".into(), 1, false, at(1, 0), Some(at(2, 0))),
            ("postgres/failed/public/t".into(), 1, true, at(1, 0), None),
            ("postgres/ok/public/t".into(), 1, true, at(1, 0), None),
        ]
    );
}

/// `table(tap, name)` under another target.
fn table_of(target: &str, tap: &str, name: &str) -> datadiff_diff_core::definition::CheckDefinition {
    let mut definition = table(tap, name);
    definition.target_id = target.into();
    definition.full_check_name =
        datadiff_diff_core::definition::CheckDefinition::full_check_name_of(target, tap, "public", name);
    definition
}

#[test]
fn an_import_within_its_projects_targets_leaves_other_targets_alone_and_names_what_it_deactivates() {
    let repo = repo();
    let store = &repo.store;
    // Two projects on one backend: `postgres` (taps a, b) and `lr` (tap a, the same tap id).
    store.sync_definitions(&[table("a", "t"), table("a", "u"), table("b", "t")], &SyncScope::all(), at(1, 0)).unwrap();
    let lr = SyncScope::all().within_targets(["lr"]);
    let imported = store.sync_definitions(&[table_of("lr", "a", "t")], &lr, at(2, 0)).unwrap();
    assert_eq!(imported.counts(), report(1, 0, 0, 0), "the other project's definitions stay current");
    assert_eq!(imported.other_targets.into_iter().collect::<Vec<_>>(), ["postgres"]);

    // The first project drops table u and tap b: exactly those two are deactivated, by name.
    let postgres = SyncScope::all().within_targets(["postgres"]);
    let imported = store.sync_definitions(&[table("a", "t")], &postgres, at(3, 0)).unwrap();
    assert_eq!(imported.counts(), report(0, 1, 0, 2));
    let named: Vec<(&str, &str, &str, i32)> = imported
        .deactivated_definitions
        .iter()
        .map(|d| (d.full_check_name.as_str(), d.target_id.as_str(), d.tap_id.as_str(), d.revision))
        .collect();
    assert_eq!(named, [("postgres/a/public/u", "postgres", "a", 1), ("postgres/b/public/t", "postgres", "b", 1)]);
    assert_eq!(imported.other_targets.into_iter().collect::<Vec<_>>(), ["lr"]);
    let current: Vec<String> = store
        .definitions(&DefinitionFilter::default())
        .unwrap()
        .into_iter()
        .map(|stored| stored.definition.full_check_name)
        .collect();
    assert_eq!(current, ["lr/a/public/t", "postgres/a/public/t"]);

    // Upstream's rule (no targets given): the backend is one project's, so an import of `lr`
    // alone deactivates every other current definition.
    let imported = store.sync_definitions(&[table_of("lr", "a", "t")], &SyncScope::all(), at(4, 0)).unwrap();
    assert_eq!(imported.counts(), report(0, 1, 0, 1));
    assert_eq!(imported.deactivated_definitions[0].full_check_name, "postgres/a/public/t");
}

#[test]
fn a_filter_on_a_projects_taps_reads_only_those_definitions() {
    let repo = repo();
    let store = &repo.store;
    store
        .sync_definitions(&[table("a", "t"), table("b", "t"), table_of("lr", "a", "t")], &SyncScope::all(), at(1, 0))
        .unwrap();
    let names = |taps: &[(&str, &str)]| -> Vec<String> {
        let filter = DefinitionFilter {
            taps: Some(taps.iter().map(|(target, tap)| ((*target).to_owned(), (*tap).to_owned())).collect()),
            ..DefinitionFilter::default()
        };
        store.definitions(&filter).unwrap().into_iter().map(|stored| stored.definition.full_check_name).collect()
    };
    // The pair counts, not the target or the tap alone.
    assert_eq!(names(&[("postgres", "a")]), ["postgres/a/public/t"]);
    assert_eq!(names(&[("lr", "a"), ("postgres", "b")]), ["lr/a/public/t", "postgres/b/public/t"]);
    assert!(names(&[("lr", "b")]).is_empty());
    assert!(names(&[]).is_empty(), "a project without taps selects nothing");
}

#[test]
fn two_definitions_with_one_name_are_refused_before_writing() {
    let repo = repo();
    let error = repo.store.sync_definitions(&[table("t", "x"), table("t", "x")], &SyncScope::all(), at(1, 0));
    assert!(matches!(error, Err(Error::DuplicateDefinition(name)) if name == "postgres/t/public/x"));
    assert_eq!(repo.count("SELECT * FROM public.dd_check_definitions"), 0);
}

#[test]
fn stored_definitions_read_back_equal_including_options_only_in_canonical_config() {
    let repo = repo();
    let mut full = table("t", "full");
    full.initial_full_scan = true;
    full.source_compare_columns = vec!["Status".into(), "amount".into()];
    full.target_compare_columns = vec!["status".into(), "amount".into()];
    full.extensions =
        Extensions { row_diff: RowDiffSettings::new(7), exclude_soft_deleted: true, ..Extensions::default() };
    let plain = table("t", "plain");
    let stored = repo.import(&[full.clone(), plain.clone()], at(1, 0));
    assert_eq!(stored[0].definition, full);
    assert_eq!(stored[1].definition, plain);
    assert_eq!(stored[0].config_hash, full.config_hash());
    let by_id = repo.store.definition(stored[0].check_id).unwrap().unwrap();
    assert_eq!(by_id, stored[0]);
    // A row PipelineWise wrote before the default changed (initial_full_scan omitted) reads
    // false, as upstream's readers do.
    repo.sql()
        .execute(
            "UPDATE public.dd_check_definitions SET canonical_config = canonical_config - 'initial_full_scan' \
             WHERE check_id = $1",
            &[&stored[0].check_id.get()],
        )
        .unwrap();
    assert!(!repo.store.definition(stored[0].check_id).unwrap().unwrap().definition.initial_full_scan);
}

#[test]
fn filters_select_by_target_tap_and_exact_name_or_id_and_versioned_revisions_on_request() {
    let repo = repo();
    let mut other_target = table("b", "t");
    other_target.target_id = "other".into();
    other_target.full_check_name = "other/b/public/t".into();
    let stored = repo.import(&[table("a", "t"), table("a", "u"), other_target], at(1, 0));
    let names = |filter: DefinitionFilter| -> Vec<(String, i32)> {
        repo.store
            .definitions(&filter)
            .unwrap()
            .into_iter()
            .map(|stored| (stored.definition.full_check_name, stored.revision))
            .collect()
    };
    assert_eq!(
        names(DefinitionFilter { target: Some("postgres".into()), ..Default::default() }),
        [("postgres/a/public/t".to_owned(), 1), ("postgres/a/public/u".to_owned(), 1)]
    );
    assert_eq!(
        names(DefinitionFilter { target: Some("other".into()), tap: Some("b".into()), ..Default::default() }),
        [("other/b/public/t".to_owned(), 1)]
    );
    // Ordered by target, tap, name.
    let order: Vec<&str> = stored.iter().map(|stored| stored.definition.full_check_name.as_str()).collect();
    assert_eq!(order, ["other/b/public/t", "postgres/a/public/t", "postgres/a/public/u"]);
    let by_id = DefinitionFilter { check: Some(stored[2].check_id.to_string()), ..Default::default() };
    assert_eq!(names(by_id), [("postgres/a/public/u".to_owned(), 1)]);
    assert!(names(DefinitionFilter { check: Some("postgres/a/public".into()), ..Default::default() }).is_empty());

    let mut changed = table("a", "t");
    changed.window_end_seconds = 60;
    repo.store.sync_definitions(&[changed], &SyncScope::taps(["a"]), at(2, 0)).unwrap();
    let versioned =
        DefinitionFilter { check: Some("postgres/a/public/t".into()), include_versioned: true, ..Default::default() };
    assert_eq!(names(versioned), [("postgres/a/public/t".to_owned(), 1), ("postgres/a/public/t".to_owned(), 2)]);
}

#[test]
fn pending_historical_scans_count_current_full_scan_definitions_without_a_counting_run() {
    let repo = repo();
    let store = &repo.store;
    let mut full = table("t", "full");
    full.initial_full_scan = true;
    let mut schema_only = table("t", "schema");
    schema_only.initial_full_scan = true;
    schema_only.checks = vec![CheckType::SchemaCompatibility];
    let mut row_diff_only = schema_only.clone();
    row_diff_only.full_check_name = "postgres/t/public/rowdiff".into();
    row_diff_only.source_table = "rowdiff".into();
    row_diff_only.extensions.row_diff = Some(RowDiffSettings::default());
    let definitions = [full.clone(), schema_only, row_diff_only, table("t", "rolling")];
    let pending = store.sync_definitions(&definitions, &SyncScope::all(), at(1, 0)).unwrap();
    assert_eq!(pending.historical_scans_pending, 2, "full and the row_diff-only definition");

    let listing = store.list_checks(&DefinitionFilter::default()).unwrap();
    let flags: Vec<(&str, bool)> = listing
        .iter()
        .map(|listing| (listing.definition.definition.source_table.as_str(), listing.historical_scan_pending))
        .collect();
    assert_eq!(flags, [("full", true), ("rolling", false), ("rowdiff", true), ("schema", false)]);

    // A DEFERRED first run leaves the scan pending; any other counting attempt ends it.
    let full_stored = listing[0].definition.clone();
    let outcome = store.start_attempt(&full_stored, at(1, 0), StartKind::Scheduled { force: false }, at(1, 5)).unwrap();
    let datadiff_backend_store::StartOutcome::Started(first) = outcome else { panic!("must start") };
    repo.sql()
        .execute(
            "UPDATE public.dd_run_attempts SET status = 'DEFERRED', finished_at = $2 WHERE run_id = $1",
            &[&first.run_id.get(), &at(1, 6)],
        )
        .unwrap();
    let again = store.sync_definitions(&definitions, &SyncScope::all(), at(2, 0)).unwrap();
    assert_eq!(again.historical_scans_pending, 2);
    store.start_attempt(&full_stored, at(2, 0), StartKind::Scheduled { force: false }, at(2, 5)).unwrap();
    let after = store.sync_definitions(&definitions, &SyncScope::all(), at(3, 0)).unwrap();
    assert_eq!(after.historical_scans_pending, 1, "a RUNNING attempt counts as a previous run");
    assert!(!store.list_checks(&DefinitionFilter::default()).unwrap()[0].historical_scan_pending);
}

#[test]
fn the_sync_waits_for_upstreams_definition_sync_lock() {
    let repo = repo();
    let mut holder = repo.sql();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('pipelinewise.data_diff.definition_sync'))", &[]).unwrap();
    std::thread::scope(|scope| {
        let import = scope.spawn(|| repo.store.sync_definitions(&[table("t", "x")], &SyncScope::all(), at(1, 0)));
        wait_for_lock_waiters(&mut repo.sql(), &AdvisoryLock::DefinitionSync.key(), 1);
        assert_eq!(repo.count("SELECT * FROM public.dd_check_definitions"), 0);
        tx.commit().unwrap();
        assert_eq!(import.join().unwrap().unwrap().created, 1);
    });
}

fn spawn_sync(
    repo: &Repo,
    definitions: &[datadiff_diff_core::definition::CheckDefinition],
    now: &str,
) -> std::process::Child {
    let config = &repo.backend.config;
    let items: Vec<serde_json::Value> = definitions
        .iter()
        .map(|definition| {
            serde_json::json!({"name": definition.full_check_name, "canonical": definition.canonical_config()})
        })
        .collect();
    Command::new(env!("CARGO_BIN_EXE_datadiff-store-sync"))
        .env("DATADIFF_BACKEND_HOST", &config.host)
        .env("DATADIFF_BACKEND_PORT", config.port.to_string())
        .env("DATADIFF_BACKEND_USER", &config.user)
        .env("DATADIFF_BACKEND_PASSWORD", &config.password)
        .env("DATADIFF_BACKEND_DBNAME", &config.dbname)
        .env("DATADIFF_BACKEND_DDL_USER", &config.ddl_user)
        .env("DATADIFF_BACKEND_DDL_PASSWORD", &config.ddl_password)
        .env("DATADIFF_SYNC_DEFINITIONS", serde_json::Value::Array(items).to_string())
        .env("DATADIFF_SYNC_AT", now)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn concurrent_imports_in_separate_processes_leave_one_current_revision_per_name() {
    let repo = repo();
    // Four projects disagreeing about two tables: whatever order the imports apply in,
    // each one changes both tables.
    let variant = |frequency: &str| {
        ["x", "y"]
            .map(|name| {
                let mut definition = table("t", name);
                definition.frequency = frequency.into();
                definition
            })
            .to_vec()
    };
    let projects = ["0 * * * *", "15 * * * *", "30 * * * *", "45 * * * *"].map(variant);

    // Hold the sync lock until all four importers wait for it, so they really contend.
    let mut holder = repo.sql();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('pipelinewise.data_diff.definition_sync'))", &[]).unwrap();
    let children: Vec<_> = projects
        .iter()
        .enumerate()
        .map(|(i, definitions)| spawn_sync(&repo, definitions, &format!("2026-07-22T0{i}:00:00Z")))
        .collect();
    wait_for_lock_waiters(&mut repo.sql(), &AdvisoryLock::DefinitionSync.key(), 4);
    tx.commit().unwrap();

    let mut created = 0;
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let field = stdout.split_whitespace().find_map(|field| field.strip_prefix("created=")).unwrap();
        created += field.parse::<i64>().unwrap();
    }
    assert_eq!(repo.count("SELECT * FROM public.dd_check_definitions"), created);
    let per_name: Vec<(String, i64, i64, i32)> = repo
        .sql()
        .query(
            "SELECT full_check_name, count(*) FILTER (WHERE is_current), count(*), max(revision) \
             FROM public.dd_check_definitions GROUP BY full_check_name ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect();
    for (name, current, rows, highest) in &per_name {
        assert_eq!(*current, 1, "{name} has exactly one current revision");
        assert_eq!(i64::from(*highest), *rows, "{name}'s revisions are numbered without gaps or repeats");
    }
    assert_eq!(per_name.len(), 2);
    assert_eq!(created, 8, "each import created a revision of each table");
    // The current revisions are one import's: both tables agree on their frequency.
    let store = Store::open(repo.backend.config.clone()).unwrap();
    let frequencies: Vec<String> = store
        .definitions(&DefinitionFilter::default())
        .unwrap()
        .into_iter()
        .map(|stored| stored.definition.frequency)
        .collect();
    assert_eq!(frequencies[0], frequencies[1]);
}
