//! The application role's privilege gaps, read from the server's own privilege checks.

use datadiff_backend_store::{GrantGap, MigrateOptions, Store};

use crate::support::backend;

#[test]
fn migrated_grants_have_no_gap_and_a_missing_or_an_extra_privilege_is_named() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    assert_eq!(store.application_grant_gaps().unwrap(), Vec::new(), "migrations grant exactly what is needed");

    let app = &backend.config.user;
    let mut superuser = backend.superuser();
    superuser
        .batch_execute(&format!(
            "REVOKE INSERT ON public.dd_run_attempts FROM \"{app}\"; GRANT DELETE ON public.dd_run_results TO \"{app}\""
        ))
        .unwrap();
    let gaps = store.application_grant_gaps().unwrap();
    assert_eq!(
        gaps,
        vec![
            GrantGap::Missing { relation: "dd_run_attempts".into(), privileges: vec!["INSERT"] },
            GrantGap::Extra { relation: "dd_run_results".into(), privileges: vec!["DELETE"] },
        ]
    );
}
