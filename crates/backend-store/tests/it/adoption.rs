//! A backend PipelineWise migrated to 004 gets only the extension chain; a foreign one is refused.

use datadiff_backend_store::{Catalog, CatalogDifference, CatalogScope, Error, MigrateOptions, Step, Store};

use crate::support::{Backend, assert_same_catalog, backend, expected_extensions};

/// A backend as PipelineWise's Alembic leaves it at 004: our upstream chain is proven
/// identical to the hand-typed catalog, so we build it and remove the extension chain.
fn upstream_backend() -> (Backend<'static>, Store) {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    backend
        .superuser()
        .batch_execute(
            "DROP TABLE public.datadiff_run_parts; DROP TABLE public.datadiff_run_divisions; \
             DROP TABLE public.datadiff_run_differences; DROP TABLE public.datadiff_replica_horizons; \
             DROP TABLE public.datadiff_schema_migrations",
        )
        .unwrap();
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    (backend, store)
}

#[test]
fn a_pipelinewise_backend_at_004_gets_only_the_extension_chain() {
    let (backend, store) = upstream_backend();
    let report = store.migrate(&MigrateOptions::latest()).unwrap();
    assert_eq!(
        report.steps,
        vec![
            Step::Extension { version: 1, name: "run_differences" },
            Step::Extension { version: 2, name: "replica_horizons" },
            Step::Extension { version: 3, name: "run_parts" }
        ]
    );
    assert_eq!(backend.alembic_versions(), vec!["004"]);
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    assert_same_catalog(&expected_extensions(), &backend.catalog(CatalogScope::Extensions));
}

#[test]
fn a_missing_index_is_named_and_nothing_is_applied() {
    let (backend, store) = upstream_backend();
    backend.superuser().batch_execute("DROP INDEX public.ix_dd_run_attempts_schedule").unwrap();
    let error = store.migrate(&MigrateOptions::latest()).unwrap_err();
    assert!(error.is_schema());
    match &error {
        Error::CatalogMismatch { difference } => assert_eq!(
            difference,
            &CatalogDifference::Missing(
                "dd_run_attempts: index ix_dd_run_attempts_schedule = CREATE INDEX ix_dd_run_attempts_schedule ON \
                 public.dd_run_attempts USING btree (check_id, scheduled_for, status)"
                    .to_owned()
            )
        ),
        other => panic!("expected a catalog mismatch, got {other}"),
    }
    assert!(error.to_string().starts_with("backend schema differs from PipelineWise's revision 004: missing `"));
    assert!(!backend.has_relation("datadiff_schema_migrations"));
    assert!(!backend.has_relation("datadiff_run_differences"));
}

#[test]
fn an_extra_column_is_named() {
    let (backend, store) = upstream_backend();
    backend.superuser().batch_execute("ALTER TABLE public.dd_run_results ADD COLUMN note text").unwrap();
    match store.migrate(&MigrateOptions::latest()).unwrap_err() {
        Error::CatalogMismatch { difference } => {
            assert_eq!(difference, CatalogDifference::Unexpected("dd_run_results: column 09 note text NULL".to_owned()))
        }
        other => panic!("expected a catalog mismatch, got {other}"),
    }
    assert!(!backend.has_relation("datadiff_schema_migrations"));
}

#[test]
fn a_changed_constraint_shows_both_definitions() {
    let (backend, store) = upstream_backend();
    backend
        .superuser()
        .batch_execute(
            "ALTER TABLE public.dd_run_results DROP CONSTRAINT dd_run_results_status_check; \
             ALTER TABLE public.dd_run_results ADD CONSTRAINT dd_run_results_status_check \
                 CHECK (status IN ('PASS', 'FAIL'))",
        )
        .unwrap();
    match store.migrate(&MigrateOptions::latest()).unwrap_err() {
        Error::CatalogMismatch { difference: CatalogDifference::Changed { expected, found } } => {
            assert_eq!(
                expected,
                "dd_run_results: constraint dd_run_results_status_check = CHECK ((status = ANY (ARRAY['PASS'::text, \
                 'FAIL'::text, 'ERROR'::text])))"
            );
            assert_eq!(
                found,
                "dd_run_results: constraint dd_run_results_status_check = CHECK ((status = ANY (ARRAY['PASS'::text, \
                 'FAIL'::text])))"
            );
        }
        other => panic!("expected a changed constraint, got {other}"),
    }
}

#[test]
fn a_missing_grant_is_named() {
    let (backend, store) = upstream_backend();
    let role = datadiff_testkit::quote_ident(&backend.config.user);
    backend.superuser().batch_execute(&format!("REVOKE UPDATE ON public.dd_watermark_state FROM {role}")).unwrap();
    match store.migrate(&MigrateOptions::latest()).unwrap_err() {
        Error::CatalogMismatch { difference: CatalogDifference::Changed { expected, found } } => {
            assert_eq!(expected, "dd_watermark_state: privileges app = SELECT, INSERT, UPDATE");
            assert_eq!(found, "dd_watermark_state: privileges app = SELECT, INSERT");
        }
        other => panic!("expected a changed grant, got {other}"),
    }
}
