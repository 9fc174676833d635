//! Upgrades, downgrades, the 003 -> 002 guard, extension checksums and the migration lock.

use std::process::{Command, Stdio};
use std::time::Duration;

use datadiff_backend_store::{Catalog, CatalogScope, Error, MigrateOptions, Revision, Step, Store, Target};

use crate::support::{Backend, assert_same_catalog, backend, expected_extensions, insert_attempt, insert_definition};

const GUARD_MESSAGE: &str = "Cannot downgrade data-diff to revision 002: unresolved historical bounds or DEFERRED \
                             attempts are not representable. Retain revision 003 or restore the backend from a \
                             pre-upgrade backup; do not discard audit history.";

fn to(target: Target, drop_extensions: bool) -> MigrateOptions {
    MigrateOptions::to(target, drop_extensions)
}

fn columns(backend: &Backend<'_>, table: &str) -> Vec<(String, bool)> {
    backend
        .superuser()
        .query(
            "SELECT attname::text, attnotnull FROM pg_attribute WHERE attrelid = $1::text::regclass \
              AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            &[&format!("public.{table}")],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

fn constraint_names(backend: &Backend<'_>, table: &str) -> Vec<String> {
    backend
        .superuser()
        .query(
            "SELECT conname::text FROM pg_constraint WHERE conrelid = $1::text::regclass ORDER BY 1",
            &[&format!("public.{table}")],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

fn table_comment(backend: &Backend<'_>, table: &str) -> Option<String> {
    backend
        .superuser()
        .query_one("SELECT obj_description($1::text::regclass, 'pg_class')", &[&format!("public.{table}")])
        .unwrap()
        .get(0)
}

fn status_check(backend: &Backend<'_>) -> String {
    backend
        .superuser()
        .query_one(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'dd_run_attempts_status_check'",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn each_upstream_revision_leaves_the_schema_that_revision_had() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();

    // 001: the original watermark names and comments.
    let report = store.migrate(&to(Target::Revision(Revision::R001), false)).unwrap();
    assert_eq!(report.steps, vec![Step::Upgrade(Revision::R001)]);
    assert_eq!(backend.alembic_versions(), vec!["001"]);
    let state: Vec<String> = columns(&backend, "dd_watermark_state").into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        state,
        [
            "check_id",
            "coverage_start",
            "verified_through",
            "max_observed_end",
            "coverage_status",
            "blocking_run_id",
            "evaluated_run_id",
            "event_type",
            "state_version",
            "updated_at",
            "reason"
        ]
    );
    let events: Vec<String> = columns(&backend, "dd_watermark_events").into_iter().map(|(name, _)| name).collect();
    assert!(events.contains(&"previous_verified_through".to_owned()));
    assert!(
        constraint_names(&backend, "dd_watermark_state").contains(&"dd_watermark_state_coverage_status_check".into())
    );
    assert!(
        constraint_names(&backend, "dd_watermark_state").contains(&"dd_watermark_state_evaluated_run_id_fkey".into())
    );
    assert!(
        constraint_names(&backend, "dd_watermark_events").contains(&"dd_watermark_events_coverage_status_check".into())
    );
    assert_eq!(
        table_comment(&backend, "dd_watermark_state").as_deref(),
        Some("Mutable current verified-through watermark for each check definition")
    );
    assert!(columns(&backend, "dd_run_attempts").contains(&("window_start".into(), true)));
    assert!(!backend.has_relation("dd_index_warning_state"));

    // 002: renamed columns and constraints, new comments.
    store.migrate(&to(Target::Revision(Revision::R002), false)).unwrap();
    assert_eq!(backend.alembic_versions(), vec!["002"]);
    let state: Vec<String> = columns(&backend, "dd_watermark_state").into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        &state[1..7],
        [
            "verified_start",
            "verified_end",
            "furthest_observed_end",
            "verified_status",
            "blocking_run_id",
            "last_evaluated_run_id"
        ]
    );
    assert!(
        constraint_names(&backend, "dd_watermark_state")
            .contains(&"dd_watermark_state_last_evaluated_run_id_fkey".into())
    );
    assert!(
        constraint_names(&backend, "dd_watermark_events").contains(&"dd_watermark_events_verified_status_check".into())
    );
    assert_eq!(
        table_comment(&backend, "dd_watermark_events").as_deref(),
        Some("Append-only history of verified intervals and furthest observed window transitions")
    );
    assert!(!status_check(&backend).contains("DEFERRED"));

    // 003: nullable starts and bounds, DEFERRED.
    store.migrate(&to(Target::Revision(Revision::R003), false)).unwrap();
    assert_eq!(backend.alembic_versions(), vec!["003"]);
    assert!(columns(&backend, "dd_run_attempts").contains(&("window_start".into(), false)));
    assert!(columns(&backend, "dd_watermark_events").contains(&("verified_end".into(), false)));
    assert!(status_check(&backend).contains("'DEFERRED'::text"));
    assert!(!backend.has_relation("dd_index_warning_state"));
    assert!(!backend.has_relation("datadiff_schema_migrations"));

    // 004 is the latest: the extension chain comes with it.
    let report = store.migrate(&to(Target::Revision(Revision::R004), false)).unwrap();
    assert_eq!(
        report.steps,
        vec![
            Step::Upgrade(Revision::R004),
            Step::Extension { version: 1, name: "run_differences" },
            Step::Extension { version: 2, name: "replica_horizons" },
            Step::Extension { version: 3, name: "run_parts" }
        ]
    );
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    assert_same_catalog(&expected_extensions(), &backend.catalog(CatalogScope::Extensions));
}

#[test]
fn up_then_down_to_base_then_up_again_rebuilds_the_same_schema() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();

    let report = store.migrate(&to(Target::Base, true)).unwrap();
    assert_eq!(
        report.steps,
        vec![
            Step::DropExtensions,
            Step::Downgrade(Revision::R004),
            Step::Downgrade(Revision::R003),
            Step::Downgrade(Revision::R002),
            Step::Downgrade(Revision::R001),
        ]
    );
    // Only the (empty) version table is left, as Alembic leaves it.
    assert!(backend.alembic_versions().is_empty());
    assert!(backend.catalog(CatalogScope::Extensions).lines().is_empty());
    let upstream = backend.catalog(CatalogScope::Upstream);
    assert!(upstream.lines().iter().all(|line| line.starts_with("alembic_version: ") || line.starts_with("public: ")));

    store.migrate(&MigrateOptions::latest()).unwrap();
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    assert_same_catalog(&expected_extensions(), &backend.catalog(CatalogScope::Extensions));
    assert_eq!(backend.alembic_versions(), vec!["004"]);
}

#[test]
fn down_to_002_keeps_resolved_history_and_up_again_restores_003_and_004() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    let check = "00000000-0000-0000-0000-0000000000a1";
    let mut app = store.connection().unwrap();
    insert_definition(&mut *app, check);
    insert_attempt(
        &mut *app,
        "00000000-0000-0000-0000-0000000000b1",
        check,
        "2026-01-01 10:00Z",
        "'2026-01-01 09:00Z'",
        "PASS",
    );
    drop(app);

    let report = store.migrate(&to(Target::Revision(Revision::R002), true)).unwrap();
    assert_eq!(
        report.steps,
        vec![Step::DropExtensions, Step::Downgrade(Revision::R004), Step::Downgrade(Revision::R003)]
    );
    assert_eq!(backend.alembic_versions(), vec!["002"]);
    assert!(columns(&backend, "dd_run_attempts").contains(&("window_start".into(), true)));
    let attempts: i64 =
        backend.superuser().query_one("SELECT count(*) FROM public.dd_run_attempts", &[]).unwrap().get(0);
    assert_eq!(attempts, 1);

    store.migrate(&MigrateOptions::latest()).unwrap();
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
}

/// Migrates to 004, adds rows revision 002 cannot hold, and checks the downgrade to 002 is
/// refused with upstream's message and leaves everything as it was.
fn assert_downgrade_refused(add_rows: impl FnOnce(&mut postgres::Client)) {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    let check = "00000000-0000-0000-0000-0000000000c1";
    let mut superuser = backend.superuser();
    insert_definition(&mut superuser, check);
    add_rows(&mut superuser);
    let before_upstream = backend.catalog(CatalogScope::Upstream);
    let count = |backend: &Backend<'_>| -> i64 {
        backend
            .superuser()
            .query_one(
                "SELECT (SELECT count(*) FROM public.dd_run_attempts) + (SELECT count(*) FROM public.dd_watermark_state) \
                      + (SELECT count(*) FROM public.dd_watermark_events) + (SELECT count(*) FROM public.dd_run_slot_state)",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let rows_before = count(&backend);

    let error = store.migrate(&to(Target::Revision(Revision::R002), true)).unwrap_err();
    match &error {
        Error::DowngradeRefused { message } => assert_eq!(message, GUARD_MESSAGE),
        other => panic!("expected the downgrade guard, got {other}"),
    }
    assert!(error.to_string().starts_with("backend refused the downgrade from 003 to 002: Cannot downgrade"));

    // The whole migration rolled back: extension tables, 004's table, the version and data.
    assert_eq!(backend.alembic_versions(), vec!["004"]);
    assert_eq!(backend.extension_rows().len(), 3);
    assert!(backend.has_relation("datadiff_run_differences"));
    assert_same_catalog(&before_upstream, &backend.catalog(CatalogScope::Upstream));
    assert_eq!(count(&backend), rows_before);
}

#[test]
fn a_deferred_attempt_blocks_the_downgrade_to_002_and_changes_nothing() {
    assert_downgrade_refused(|client| {
        insert_attempt(
            client,
            "00000000-0000-0000-0000-0000000000d1",
            "00000000-0000-0000-0000-0000000000c1",
            "2026-01-01 10:00Z",
            "'2026-01-01 09:00Z'",
            "DEFERRED",
        );
    });
}

#[test]
fn a_null_window_start_blocks_the_downgrade_to_002() {
    assert_downgrade_refused(|client| {
        insert_attempt(
            client,
            "00000000-0000-0000-0000-0000000000d2",
            "00000000-0000-0000-0000-0000000000c1",
            "2026-01-01 10:00Z",
            "NULL",
            "ERROR",
        );
    });
}

#[test]
fn null_verified_bounds_block_the_downgrade_to_002() {
    assert_downgrade_refused(|client| {
        let run = "00000000-0000-0000-0000-0000000000d3";
        insert_attempt(
            client,
            run,
            "00000000-0000-0000-0000-0000000000c1",
            "2026-01-01 10:00Z",
            "'2026-01-01 09:00Z'",
            "ERROR",
        );
        client
            .execute(
                &format!(
                    "INSERT INTO public.dd_watermark_events (watermark_event_id, check_id, evaluated_run_id, event_type, \
                     verified_start, previous_verified_end, verified_end, furthest_observed_end, verified_status, \
                     blocking_run_id, recorded_at, reason) VALUES (gen_random_uuid(), \
                     '00000000-0000-0000-0000-0000000000c1', '{run}', 'INITIALIZE', NULL, NULL, NULL, \
                     '2026-01-01 10:00Z', 'BLOCKED', '{run}', now(), 'unresolved')"
                ),
                &[],
            )
            .unwrap();
    });
}

#[test]
fn going_below_004_without_drop_extensions_is_refused_and_changes_nothing() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    let error = store.migrate(&to(Target::Revision(Revision::R003), false)).unwrap_err();
    assert!(matches!(error, Error::ExtensionsBlockDowngrade { target: Target::Revision(Revision::R003) }), "{error}");
    assert_eq!(backend.alembic_versions(), vec!["004"]);
    assert!(backend.has_relation("datadiff_run_differences"));
    assert!(backend.has_relation("dd_index_warning_state"));
}

#[test]
fn an_applied_extension_that_differs_from_the_embedded_one_is_refused() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    backend
        .superuser()
        .batch_execute("UPDATE public.datadiff_schema_migrations SET checksum = repeat('0', 64) WHERE version = 1")
        .unwrap();

    let error = store.migrate(&MigrateOptions::latest()).unwrap_err();
    assert!(
        matches!(&error, Error::ExtensionChecksumMismatch { version: 1, name } if name == "run_differences"),
        "{error}"
    );
    assert!(error.to_string().starts_with("backend extension migration 1 (run_differences) was changed"));
    let error = store.gate(std::path::Path::new("/p")).unwrap_err();
    assert!(matches!(error, Error::ExtensionChecksumMismatch { version: 1, .. }), "{error}");
    // Refused, so the record is as it was.
    assert_eq!(backend.extension_rows()[0].2, "0".repeat(64));
}

#[test]
fn an_unknown_revision_in_alembic_version_is_refused() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    backend.superuser().batch_execute("UPDATE public.alembic_version SET version_num = '005'").unwrap();
    let error = store.migrate(&MigrateOptions::latest()).unwrap_err();
    assert!(matches!(&error, Error::UnknownRevision(version) if version == "005"), "{error}");
}

#[test]
fn two_concurrent_migrator_processes_serialize_on_the_migration_lock() {
    let backend = backend();
    let config = &backend.config;
    // Hold the lock so both processes are certainly inside migrate at the same time.
    let mut holder = backend.superuser();
    holder.execute("SELECT pg_advisory_lock(hashtext('datadiff.migrate'))", &[]).unwrap();

    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_datadiff-store-migrate"))
            .env("DATADIFF_BACKEND_HOST", &config.host)
            .env("DATADIFF_BACKEND_PORT", config.port.to_string())
            .env("DATADIFF_BACKEND_USER", &config.user)
            .env("DATADIFF_BACKEND_PASSWORD", &config.password)
            .env("DATADIFF_BACKEND_DBNAME", &config.dbname)
            .env("DATADIFF_BACKEND_DDL_USER", &config.ddl_user)
            .env("DATADIFF_BACKEND_DDL_PASSWORD", &config.ddl_password)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = spawn();
    let mut second = spawn();

    // Wait (bounded) until both wait for the lock; fail early if either exits first.
    let mut waiting = 0;
    for _ in 0..1200 {
        waiting = holder
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .unwrap()
            .get::<_, i64>(0);
        if waiting == 2 {
            break;
        }
        assert!(first.try_wait().unwrap().is_none() && second.try_wait().unwrap().is_none(), "a migrator exited early");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(waiting, 2, "both migrators must wait on the migration lock");
    holder.execute("SELECT pg_advisory_unlock(hashtext('datadiff.migrate'))", &[]).unwrap();

    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    for output in [&first, &second] {
        assert!(output.status.success(), "migrator failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let mut applied: Vec<String> =
        [&first, &second].iter().map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned()).collect();
    applied.sort();
    // One applied all six steps, the other found nothing left to do.
    assert_eq!(applied, vec!["steps: 0", "steps: 7"]);
    assert_eq!(backend.alembic_versions(), vec!["004"]);
    assert_eq!(backend.extension_rows().len(), 3);
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
}
