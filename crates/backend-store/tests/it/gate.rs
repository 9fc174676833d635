//! The schema gate every non-migrating command passes.

use std::path::Path;

use datadiff_backend_store::{Error, MigrateOptions, Revision, Store, Target, UpstreamState};

use datadiff_diff_core::attempt::RunStatus;

use crate::support::{at, backend, repo, scheduled, table};

const PROJECT: &str = "/srv/pipelinewise";

fn gate_message(store: &Store) -> String {
    let error = store.gate(Path::new(PROJECT)).unwrap_err();
    assert!(matches!(error, Error::SchemaNotCurrent { .. }), "{error}");
    assert!(error.is_schema());
    error.to_string()
}

#[test]
fn an_empty_backend_is_refused_as_base() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    assert_eq!(
        gate_message(&store),
        "backend schema is at base, datadiff needs 004 (+ extensions 3): run datadiff import_config --dir /srv/pipelinewise"
    );
    // The gate never migrates.
    assert!(!backend.has_relation("alembic_version"));
}

#[test]
fn an_older_revision_is_refused_and_a_migrated_one_passes() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::to(Target::Revision(Revision::R003), false)).unwrap();
    assert_eq!(
        gate_message(&store),
        "backend schema is at 003, datadiff needs 004 (+ extensions 3): run datadiff import_config --dir /srv/pipelinewise"
    );
    assert_eq!(backend.alembic_versions(), vec!["003"]);

    store.migrate(&MigrateOptions::latest()).unwrap();
    let status = store.gate(Path::new(PROJECT)).unwrap();
    assert_eq!(status.upstream, UpstreamState::At(Revision::R004));
    assert_eq!(status.extension_version(), 3);
    assert_eq!(status.to_string(), "004 (+ extensions 3)");
}

/// Issue: a backend PipelineWise migrated (004, no `datadiff_*` tables) works without DDL;
/// only a current `row_diff` definition needs the extension migration, and then the gate
/// for attempts names it.
#[test]
fn a_pipelinewise_backend_without_our_extensions_passes_until_a_definition_needs_them() {
    let repo = repo();
    repo.sql()
        .batch_execute(
            "DROP TABLE public.datadiff_run_parts; DROP TABLE public.datadiff_run_divisions; \
             DROP TABLE public.datadiff_run_differences; DROP TABLE public.datadiff_replica_horizons; \
             DROP TABLE public.datadiff_schema_migrations",
        )
        .unwrap();
    let store = &repo.store;
    let status = store.gate(Path::new(PROJECT)).unwrap();
    assert_eq!(status.to_string(), "004 (+ extensions 0)");
    assert!(store.gate_for_attempts(Path::new(PROJECT)).is_ok(), "no definition needs an extension table");

    // Upstream's definitions (without extensions) and the reads work as they are.
    let plain = repo.import_one(&table("payments", "transfers"), at(0, 0));
    assert!(store.gate_for_attempts(Path::new(PROJECT)).is_ok());
    let attempt = repo.start(&plain, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(attempt.run_id, RunStatus::Pass, at(13, 6));
    assert_eq!(store.run_differences(attempt.run_id).unwrap(), Vec::new(), "no table, no evidence");

    // A current row_diff definition needs extension 1, and the gate for attempts says so.
    let mut row_diff = table("payments", "refunds");
    row_diff.extensions.row_diff = Some(datadiff_diff_core::definition::RowDiffSettings::default());
    let needing = repo.import_one(&row_diff, at(0, 0));
    assert!(store.gate_for_remediation(Path::new(PROJECT), attempt.run_id).is_err(), "current ones count");
    let error = store.gate_for_attempts(Path::new(PROJECT)).unwrap_err();
    assert!(error.is_schema(), "{error}");
    assert_eq!(
        error.to_string(),
        "postgres/payments/public/refunds uses row_diff, whose evidence needs the datadiff extension migration 1 \
         (run_differences) this backend lacks: run datadiff migrate --dir /srv/pipelinewise"
    );
    assert!(store.gate(Path::new(PROJECT)).is_ok(), "reads still pass");
    assert!(!repo.backend.has_relation("datadiff_schema_migrations"), "the gates never write DDL");

    // A remediation of a run of a superseded row_diff revision needs it too.
    let row_diff_run = repo.start(&needing, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(row_diff_run.run_id, RunStatus::Fail, at(13, 6));
    repo.import_one(&table("payments", "refunds"), at(1, 0));
    assert!(store.gate_for_attempts(Path::new(PROJECT)).is_ok(), "no current definition uses row_diff");
    assert!(store.gate_for_remediation(Path::new(PROJECT), attempt.run_id).is_ok());
    let error = store.gate_for_remediation(Path::new(PROJECT), row_diff_run.run_id).unwrap_err();
    assert!(error.to_string().starts_with("postgres/payments/public/refunds uses row_diff"), "{error}");

    // Migrated, it passes.
    store.migrate(&MigrateOptions::latest()).unwrap();
    assert!(store.gate_for_attempts(Path::new(PROJECT)).is_ok());
}

#[test]
fn status_reports_what_is_applied_and_pending() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::to(Target::Revision(Revision::R002), false)).unwrap();
    let status = store.status().unwrap();
    assert_eq!(status.upstream, UpstreamState::At(Revision::R002));
    assert!(!status.extension_table);
    assert!(!status.is_current());
    let pending: Vec<String> = status.pending().unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(
        pending,
        [
            "002 -> 003",
            "003 -> 004",
            "extension 1 (run_differences)",
            "extension 2 (replica_horizons)",
            "extension 3 (run_parts)"
        ]
    );
}
