//! The schema gate every non-migrating command passes.

use std::path::Path;

use datadiff_backend_store::{Error, MigrateOptions, Revision, Store, Target, UpstreamState};

use crate::support::backend;

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
        "backend schema is at base, datadiff needs 004 (+ extensions 1): run datadiff import_config --dir /srv/pipelinewise"
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
        "backend schema is at 003, datadiff needs 004 (+ extensions 1): run datadiff import_config --dir /srv/pipelinewise"
    );
    assert_eq!(backend.alembic_versions(), vec!["003"]);

    store.migrate(&MigrateOptions::latest()).unwrap();
    let status = store.gate(Path::new(PROJECT)).unwrap();
    assert_eq!(status.upstream, UpstreamState::At(Revision::R004));
    assert_eq!(status.extension_version(), 1);
    assert_eq!(status.to_string(), "004 (+ extensions 1)");
}

#[test]
fn a_pipelinewise_backend_without_our_extensions_is_refused() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    backend
        .superuser()
        .batch_execute("DROP TABLE public.datadiff_run_differences; DROP TABLE public.datadiff_schema_migrations")
        .unwrap();
    assert_eq!(
        gate_message(&store),
        "backend schema is at 004 (+ extensions 0), datadiff needs 004 (+ extensions 1): run datadiff import_config \
         --dir /srv/pipelinewise"
    );
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
    assert_eq!(pending, ["002 -> 003", "003 -> 004", "extension 1 (run_differences)"]);
}
