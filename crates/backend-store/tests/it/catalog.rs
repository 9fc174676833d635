//! A fresh migrate produces exactly the hand-typed catalogs.

use datadiff_backend_store::{Catalog, CatalogScope, EXTENSIONS, MigrateOptions, Revision, Step, Store};
use sha2::{Digest, Sha256};

use crate::support::{assert_same_catalog, backend, backend_with_app_role, expected_extensions, single_role_backend};

#[test]
fn a_fresh_migrate_matches_pipelinewise_004_and_the_extension_catalog_exactly() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    let report = store.migrate(&MigrateOptions::latest()).unwrap();
    assert_eq!(
        report.steps,
        vec![
            Step::Upgrade(Revision::R001),
            Step::Upgrade(Revision::R002),
            Step::Upgrade(Revision::R003),
            Step::Upgrade(Revision::R004),
            Step::Extension { version: 1, name: "run_differences" },
            Step::Extension { version: 2, name: "replica_horizons" },
            Step::Extension { version: 3, name: "run_parts" },
        ]
    );

    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    assert_same_catalog(&expected_extensions(), &backend.catalog(CatalogScope::Extensions));
    assert_eq!(backend.alembic_versions(), vec!["004"]);

    // The record holds the SHA-256 of each migration file as shipped.
    let checksum =
        |file: &str| -> String { Sha256::digest(file.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect() };
    assert_eq!(
        backend.extension_rows(),
        vec![
            (
                1,
                "run_differences".to_owned(),
                checksum(include_str!("../../migrations/extensions/0001_run_differences.sql"))
            ),
            (
                2,
                "replica_horizons".to_owned(),
                checksum(include_str!("../../migrations/extensions/0002_replica_horizons.sql"))
            ),
            (3, "run_parts".to_owned(), checksum(include_str!("../../migrations/extensions/0003_run_parts.sql"))),
        ]
    );
    assert_eq!(EXTENSIONS.len(), 3);

    // Nothing is pending, and migrating again changes nothing.
    assert!(store.status().unwrap().is_current());
    let again = store.migrate(&MigrateOptions::latest()).unwrap();
    assert!(again.steps.is_empty());
    assert_eq!(backend.alembic_versions(), vec!["004"]);
}

#[test]
fn one_role_for_both_purposes_gets_the_same_schema() {
    let backend = single_role_backend();
    Store::open(backend.config.clone()).unwrap().migrate(&MigrateOptions::latest()).unwrap();
    let role = &backend.config.user;
    assert_same_catalog(&Catalog::expected_upstream().for_roles(role, role), &backend.catalog(CatalogScope::Upstream));
    assert_same_catalog(&expected_extensions().for_roles(role, role), &backend.catalog(CatalogScope::Extensions));
}

#[test]
fn an_application_role_name_with_quotes_and_capitals_is_granted_exactly() {
    let backend = backend_with_app_role("App \"Quoted\" Role");
    assert!(backend.config.user.contains('"'));
    Store::open(backend.config.clone()).unwrap().migrate(&MigrateOptions::latest()).unwrap();
    assert_same_catalog(&Catalog::expected_upstream(), &backend.catalog(CatalogScope::Upstream));
    let mut client = backend.superuser();
    let can_insert: bool = client
        .query_one(
            "SELECT has_table_privilege($1::text::name, 'public.dd_run_attempts', 'INSERT')",
            &[&backend.config.user],
        )
        .unwrap()
        .get(0);
    assert!(can_insert);
}
